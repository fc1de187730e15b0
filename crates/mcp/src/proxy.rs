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

use spillway_process::Cancel;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use spillway_process::stop;

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
    /// How long the server has to exit once its input is closed, and again
    /// after SIGTERM, before SIGKILL. Default: 2 s.
    pub grace: Duration,
    /// A signal number to pass on to the server, set by the caller's
    /// signal handler (0 for none): the proxy then stops the server (the
    /// signal, its input closed, the grace, SIGTERM, the grace, SIGKILL)
    /// and returns.
    pub forward: Option<spillway_process::Cancel>,
    /// Where notes for a person go (an unreachable server, a renamed
    /// tool, a line that is not JSON); dropped by default.
    pub diagnostics: crate::Diagnostics,
}

impl ProxyOptions {
    /// Options for `spiller`, with tools named `{prefix}spill_read` and
    /// `{prefix}spill_grep`.
    pub fn new(spiller: Spiller, prefix: &str) -> Self {
        ProxyOptions {
            spiller,
            names: ToolNames::with_prefix(prefix),
            grace: Duration::from_secs(2),
            forward: None,
            diagnostics: crate::Diagnostics::none(),
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
/// side closes or a signal is passed on ([`ProxyOptions::forward`]), once
/// the server has stopped as the stdio transport prescribes: its input
/// closed, [`ProxyOptions::grace`] to exit, then SIGTERM, the grace again,
/// then SIGKILL. The result is the server's exit status.
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
    // Until a side closes or a signal comes.
    let mut server_done = false;
    let signalled = loop {
        if let Some(sig) = opts.forward.as_ref().and_then(Cancel::take) {
            break Some(sig);
        }
        match done_rx.recv_timeout(Duration::from_millis(50)) {
            Ok(side) => {
                server_done = side == "server";
                break None;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break None,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    };
    if let Some(sig) = signalled {
        stop::signal(&child, sig);
    }
    // The stdio transport's shutdown: the server's input closed, then the
    // grace, SIGTERM, the grace again, SIGKILL. A server that exits on
    // end of input is never signalled.
    to_server.close();
    drop(to_server);
    let (status, sent) = stop::stop(&mut child, opts.grace)?;
    if let Some(sig) = sent {
        opts.diagnostics.say(&format!(
            "mcp proxy: the server did not exit within {:?} of {}; sent signal {sig}",
            opts.grace,
            if signalled.is_some() {
                "the signal passed on"
            } else {
                "its input closing"
            }
        ));
    }
    // What the server wrote before it exited reaches the client (unless
    // something it started holds its output open).
    let deadline = std::time::Instant::now() + opts.grace;
    while !server_done {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match done_rx.recv_timeout(left) {
            Ok(side) => server_done = side == "server",
            Err(_) => break,
        }
    }
    Ok(status)
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
                        match tools::read_resource(store, uri, budget) {
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
            note_pending(shared, &msg);
        } else if let Some(batch) = msg.as_array() {
            // A batch (protocol 2025-03-26): its requests are noted like
            // single ones, so their answers are bounded the same way. The
            // spill tools and spillway:// resources are answered outside a
            // batch only.
            for m in batch {
                note_pending(shared, m);
            }
        } else if !msg.is_object() {
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

/// Notes a request whose answer the proxy rewrites.
fn note_pending(shared: &Shared, msg: &Value) {
    let (Some(method), Some(id)) = (
        msg.get("method").and_then(Value::as_str),
        msg.get("id").filter(|v| !v.is_null()),
    ) else {
        return;
    };
    let params = msg.get("params").cloned().unwrap_or(Value::Null);
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
                opts.diagnostics.say(&format!(
                    "mcp proxy: skipped a line from the server that is not JSON ({e})"
                ));
                continue;
            }
        };
        let changed = match msg.as_array_mut() {
            // A batch of answers: each bounded as a single one is.
            Some(batch) => {
                let mut changed = false;
                for m in batch {
                    changed |= answer(opts, shared, m);
                }
                changed
            }
            None => answer(opts, shared, &mut msg),
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

/// Rewrites an answer from the server, when it is one the proxy bounds or
/// extends; whether it changed.
fn answer(opts: &ProxyOptions, shared: &Shared, msg: &mut Value) -> bool {
    let is_response = msg.get("method").is_none() && msg.get("id").is_some();
    if !is_response {
        return false;
    }
    let pending = msg
        .get("id")
        .and_then(|id| lock(&shared.pending).remove(&id.to_string()));
    if let Some(error) = msg.get_mut("error") {
        // An error's message and data reach the model too.
        return crate::bound::bound_error(&opts.spiller, &opts.names, error);
    }
    match (pending, msg.get_mut("result")) {
        (Some(p), Some(result)) => rewrite(opts, shared, &p, result),
        _ => false,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_is_bounded_like_single_messages() {
        let dir = tempfile::tempdir().unwrap();
        let names = ToolNames::with_prefix("");
        let policy = spillway::Policy::builder()
            .max_inline_bytes(4096)
            .templates(names.templates())
            .build()
            .unwrap();
        let store = spillway::Store::open(dir.path()).unwrap();
        let opts = ProxyOptions::new(Spiller::new(policy, store).unwrap(), "");
        let shared = Shared::default();
        let batch = json!([
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "big", "arguments": {}}},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "small", "arguments": {}}},
        ]);
        for m in batch.as_array().unwrap() {
            note_pending(&shared, m);
        }
        let big: String = (0..50_000).map(|i| format!("line {i}\n")).collect();
        let mut answers = json!([
            {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "ok"}]}},
            {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": big}]}},
            {"jsonrpc": "2.0", "id": 3, "error": {"code": -1, "message": "x".repeat(100_000)}},
        ]);
        let mut changed = false;
        for m in answers.as_array_mut().unwrap() {
            changed |= answer(&opts, &shared, m);
        }
        assert!(changed);
        assert_eq!(answers[0]["result"]["content"][0]["text"], "ok");
        let text = answers[1]["result"]["content"][0]["text"].as_str().unwrap();
        assert!(
            text.len() <= 4096 && text.ends_with("line 49999\n"),
            "{text}"
        );
        assert!(answers[2]["error"]["message"].as_str().unwrap().len() <= 4096);
    }
}
