//! The proxy: an MCP client on one side (our stdin and stdout), an MCP
//! server as a child process on the other (its stdin and stdout; its stderr
//! is ours).
//!
//! Every message passes unchanged, in order, ids intact, except:
//!
//! * a `tools/call` result goes through [`bound_result`](crate::bound_result);
//! * `tools/list` results gain the spill tools (and `initialize` declares
//!   tools and resources when the server does not);
//! * calls of the spill tools, and `resources/read` of `spillway://` URIs,
//!   are answered here.
//!
//! A line that is not JSON from the client gets a parse error; from the
//! server it is reported on stderr and skipped. The proxy ends when either
//! side closes, and [`run`] returns the server's exit status.

use std::collections::{HashMap, HashSet};
use std::io::{self, BufRead, BufReader, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use serde_json::{json, Value};
use spillway::Spiller;

use crate::rpc::{self, Out};
use crate::tools::{self, ToolNames};

/// How the proxy runs.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ProxyOptions {
    /// The policy and store results are bounded by. Its templates should
    /// name the spill tools ([`ToolNames::templates`]).
    pub spiller: Spiller,
    /// The names the spill tools get.
    pub names: ToolNames,
}

impl ProxyOptions {
    /// Options for `spiller`, with tools named `{prefix}spill_read` and
    /// `{prefix}spill_grep`.
    pub fn new(spiller: Spiller, prefix: &str) -> Self {
        ProxyOptions {
            spiller,
            names: ToolNames::with_prefix(prefix),
        }
    }
}

/// What a request the server will answer was.
#[derive(Clone, Debug)]
enum Pending {
    Initialize,
    /// Whether it asked for the first page.
    ToolsList(bool),
    ToolsCall(String),
    ResourcesList,
    ResourceTemplatesList,
}

#[derive(Default)]
struct Shared {
    /// Requests sent to the server, by id (as JSON text).
    pending: Mutex<HashMap<String, Pending>>,
    /// Tools that declare an output schema.
    with_schema: Mutex<HashSet<String>>,
    /// The server declares no resources: the proxy answers for them.
    own_resources: AtomicBool,
    /// The server declares no tools: the proxy answers `tools/list`.
    own_tools: AtomicBool,
}

/// Runs the proxy: `server` is started with piped stdin and stdout, and
/// the client speaks on `client_in` and `client_out`. Returns when either
/// side closes, with the server's exit status (after closing its stdin and
/// waiting for it when the client closed first).
///
/// # Errors
///
/// When the server cannot be started, or the client's output fails.
pub fn run(
    opts: ProxyOptions,
    server: &mut Command,
    client_in: Box<dyn BufRead + Send>,
    client_out: Box<dyn Write + Send>,
) -> io::Result<ExitStatus> {
    let mut child: Child = server
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let to_server = Out::new(Box::new(child.stdin.take().expect("piped stdin")));
    let from_server = BufReader::with_capacity(1 << 20, child.stdout.take().expect("piped stdout"));
    let to_client = Out::new(client_out);
    let shared = Arc::new(Shared::default());
    let opts = Arc::new(opts);
    let (done_tx, done_rx) = mpsc::channel::<&'static str>();

    {
        let (shared, opts, to_client, done) = (
            shared.clone(),
            opts.clone(),
            to_client.clone(),
            done_tx.clone(),
        );
        std::thread::spawn(move || {
            server_side(&opts, &shared, from_server, &to_client);
            let _ = done.send("server");
        });
    }
    {
        let (shared, opts, to_client, to_server, done) = (
            shared.clone(),
            opts.clone(),
            to_client.clone(),
            to_server.clone(),
            done_tx,
        );
        std::thread::spawn(move || {
            client_side(&opts, &shared, client_in, &to_client, &to_server);
            let _ = done.send("client");
        });
    }
    let first = done_rx.recv().unwrap_or("server");
    if first == "client" {
        // The client closed: close the server's stdin, let it finish what it
        // was sending, and wait for it.
        drop(to_server);
        let _ = done_rx.recv();
    }
    child.wait()
}

/// Messages from the client.
fn client_side(
    opts: &ProxyOptions,
    shared: &Shared,
    mut input: Box<dyn BufRead + Send>,
    to_client: &Out,
    to_server: &Out,
) {
    let store = opts.spiller.store();
    let budget = opts.spiller.policy().max_inline_bytes();
    let mut line = Vec::new();
    while let Some(raw) = rpc::next_line(&mut input, &mut line) {
        let msg = match rpc::parse(raw) {
            Ok(m) => m,
            Err(e) => {
                let _ = to_client.error(&Value::Null, rpc::PARSE_ERROR, &e);
                continue;
            }
        };
        let method = msg.get("method").and_then(Value::as_str);
        let id = msg.get("id").filter(|v| !v.is_null()).cloned();
        if let (Some(method), Some(id)) = (method, &id) {
            let params = msg.get("params").cloned().unwrap_or(Value::Null);
            // Answered here.
            match method {
                "tools/call" => {
                    let (name, args) = rpc::call_parts(&params);
                    if let Some(result) = opts.names.call(store, budget, name, &args) {
                        let _ = to_client.result(id, result);
                        continue;
                    }
                }
                "resources/read" => {
                    let uri = params
                        .get("uri")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    if uri.starts_with(tools::SCHEME) {
                        match tools::read_resource(store, uri) {
                            Ok(r) => {
                                let _ = to_client.result(id, r);
                            }
                            Err(e) => {
                                let _ = to_client.error(
                                    id,
                                    rpc::INVALID_PARAMS,
                                    &format!("{uri}: {e}"),
                                );
                            }
                        }
                        continue;
                    }
                }
                "resources/list" if shared.own_resources.load(Ordering::SeqCst) => {
                    let _ = to_client.result(id, json!({"resources": []}));
                    continue;
                }
                "resources/templates/list" if shared.own_resources.load(Ordering::SeqCst) => {
                    let _ = to_client.result(
                        id,
                        json!({"resourceTemplates": [tools::resource_template()]}),
                    );
                    continue;
                }
                "tools/list" if shared.own_tools.load(Ordering::SeqCst) => {
                    let _ = to_client.result(id, json!({"tools": opts.names.definitions()}));
                    continue;
                }
                _ => {}
            }
            let pending = match method {
                "initialize" | "server/discover" => Some(Pending::Initialize),
                "tools/list" => Some(Pending::ToolsList(
                    params.get("cursor").is_none_or(Value::is_null),
                )),
                "tools/call" => Some(Pending::ToolsCall(
                    params
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                )),
                "resources/list" => Some(Pending::ResourcesList),
                "resources/templates/list" => Some(Pending::ResourceTemplatesList),
                _ => None,
            };
            if let Some(p) = pending {
                lock(&shared.pending).insert(id.to_string(), p);
            }
        } else if !msg.is_object() && !msg.is_array() {
            let _ = to_client.error(
                &Value::Null,
                rpc::INVALID_REQUEST,
                "Invalid Request: not a JSON-RPC message",
            );
            continue;
        }
        // Everything else, exactly as it came.
        if to_server.line(raw).is_err() {
            return;
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Messages from the server.
fn server_side(
    opts: &ProxyOptions,
    shared: &Shared,
    mut input: BufReader<std::process::ChildStdout>,
    to_client: &Out,
) {
    let mut line = Vec::new();
    while let Some(raw) = rpc::next_line(&mut input, &mut line) {
        let mut msg = match rpc::parse(raw) {
            Ok(m) => m,
            Err(e) => {
                eprintln!(
                    "spillway mcp proxy: skipped a line from the server that is not JSON ({e})"
                );
                continue;
            }
        };
        let is_response = msg.get("method").is_none() && msg.get("id").is_some();
        let pending = if is_response {
            msg.get("id")
                .and_then(|id| lock(&shared.pending).remove(&id.to_string()))
        } else {
            None
        };
        let changed = match (pending, msg.get_mut("result")) {
            (Some(p), Some(result)) => rewrite(opts, shared, &p, result),
            _ => false,
        };
        let sent = if changed {
            to_client.send(&msg)
        } else {
            to_client.line(raw)
        };
        if sent.is_err() {
            return;
        }
    }
}

/// Rewrites a result the client asked for; whether it changed.
fn rewrite(opts: &ProxyOptions, shared: &Shared, p: &Pending, result: &mut Value) -> bool {
    match p {
        Pending::Initialize => {
            let Some(caps) = result
                .get_mut("capabilities")
                .and_then(Value::as_object_mut)
            else {
                return false;
            };
            let mut changed = false;
            if !caps.contains_key("tools") {
                caps.insert("tools".into(), json!({}));
                shared.own_tools.store(true, Ordering::SeqCst);
                changed = true;
            }
            if !caps.contains_key("resources") {
                caps.insert("resources".into(), json!({}));
                shared.own_resources.store(true, Ordering::SeqCst);
                changed = true;
            }
            changed
        }
        Pending::ToolsList(first_page) => {
            let Some(list) = result.get_mut("tools").and_then(Value::as_array_mut) else {
                return false;
            };
            {
                let mut schema = lock(&shared.with_schema);
                for t in list.iter() {
                    if let Some(name) = t.get("name").and_then(Value::as_str) {
                        if t.get("outputSchema").is_some_and(|s| !s.is_null()) {
                            schema.insert(name.to_owned());
                        } else {
                            schema.remove(name);
                        }
                    }
                }
            }
            // The spill tools go on the first page only.
            if *first_page {
                list.extend(opts.names.definitions());
            }
            true
        }
        Pending::ToolsCall(name) => {
            let has_schema = lock(&shared.with_schema).contains(name);
            crate::bound_result(&opts.spiller, &opts.names, result, has_schema)
        }
        Pending::ResourcesList => false,
        Pending::ResourceTemplatesList => {
            if let Some(list) = result
                .get_mut("resourceTemplates")
                .and_then(Value::as_array_mut)
            {
                list.push(tools::resource_template());
                return true;
            }
            false
        }
    }
}
