//! `spillway mcp proxy --code-mode`: an MCP server to the client, a client
//! of one or several upstream MCP servers, and between them `run_code`, a
//! JavaScript program that calls the upstream tools
//! (`tools.<tool>(args)`, or `tools.<server>.<tool>(args)` with several).
//!
//! The client sees `run_code` (whose description carries the SDK
//! declaration of the upstream tools) and the spill tools; with
//! [`Presentation::Both`], the upstream tools too, bounded as the plain
//! proxy bounds them. A program's nested calls are upstream `tools/call`s
//! with their own request ids, concurrent when the program starts them
//! together; their progress and logging notifications are passed on. The
//! outer result is bounded once and recorded in the session log when
//! there is one. A server is started on first use, and again after it
//! died; the SDK is generated again after a server says its tool list
//! changed.

use std::collections::HashMap;
use std::io::{self, BufRead, Write};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, RwLock};
use std::time::Duration;

use serde_json::{json, Value};
use spillway::Spiller;
use spillway_code::{JsRuntime, Limits};
use spillway_registry::events::SessionLog;
use spillway_registry::run_code::RunCode;
use spillway_registry::tools::{SpillGrep, SpillRead};
use spillway_registry::{Presentation, Registry, ToolCall};

use crate::rpc::{self, Out};
use crate::server::{MAX_CONCURRENT_CALLS, PROTOCOL_VERSIONS};
use crate::tools::{self, ToolNames};
use crate::upstream::{Progress, ServerSpec, Upstream, UpstreamTool};

/// How the Code Mode proxy runs.
#[derive(Debug)]
#[non_exhaustive]
pub struct CodeProxyOptions {
    /// The policy and store results are bounded by; its templates should
    /// name the spill tools ([`ToolNames::templates`]).
    pub spiller: Spiller,
    /// The names the spill tools get.
    pub names: ToolNames,
    /// The upstream servers.
    pub servers: Vec<ServerSpec>,
    /// What the client is shown: `Ptc` (the default) or `Both`.
    pub present: Presentation,
    /// The limits of each program.
    pub limits: Limits,
    /// Where each `run_code` call, its dispatch events and its result are
    /// appended.
    pub session_log: Option<Arc<SessionLog>>,
    /// How long a server has to exit once its input is closed, and again
    /// after SIGTERM, before SIGKILL.
    pub grace: Duration,
    /// A signal number set by the caller's signal handler (0 for none):
    /// the proxy then stops answering, stops the servers as the stdio
    /// transport prescribes, and returns.
    pub forward: Option<Arc<AtomicUsize>>,
}

impl CodeProxyOptions {
    /// Options for `servers`, with the spill tools named
    /// `{prefix}spill_read` and `{prefix}spill_grep`.
    pub fn new(spiller: Spiller, prefix: &str, servers: Vec<ServerSpec>) -> Self {
        CodeProxyOptions {
            spiller,
            names: ToolNames::with_prefix(prefix),
            servers,
            present: Presentation::Ptc,
            limits: Limits::default(),
            session_log: None,
            grace: Duration::from_secs(2),
            forward: None,
        }
    }
}

struct Front {
    opts: CodeProxyOptions,
    upstreams: Vec<Arc<Upstream>>,
    /// The registry of the tool lists last fetched, and whether those lists
    /// changed since.
    registry: RwLock<Option<Registry>>,
    /// The servers whose tools could not be listed, and why: the model
    /// is told in `run_code`'s description, and they are tried again.
    unreachable: Mutex<Vec<String>>,
    /// The upstream tools, by the name the client calls them by.
    direct: Mutex<HashMap<String, Arc<UpstreamTool>>>,
    log: Arc<SessionLog>,
    progress: Arc<Progress>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Front {
    /// The registry, built again when a server's tool list changed.
    fn registry(&self) -> Registry {
        let stale = self
            .upstreams
            .iter()
            .any(|u| u.changed.load(Ordering::SeqCst));
        if !stale {
            if let Some(r) = self
                .registry
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
            {
                return r.clone();
            }
        }
        let grouped = self.upstreams.len() > 1;
        let mut direct = HashMap::new();
        let mut unreachable = Vec::new();
        let mut b = Registry::builder(self.opts.spiller.clone(), self.log.clone())
            .expect("the value policy is built from constants");
        for u in &self.upstreams {
            match u.tools() {
                Ok(list) => {
                    for t in UpstreamTool::from_list(u, &self.progress, &list, grouped) {
                        let t = Arc::new(t);
                        direct.insert(t.name.clone(), t.clone());
                        b.tool(Shared(t));
                    }
                }
                Err(e) => {
                    eprintln!("spillway: mcp proxy: {e}");
                    unreachable.push(e.to_string());
                }
            }
        }
        // Ours last: an upstream tool of the same name does not replace them.
        b.tool(SpillRead)
            .tool(SpillGrep)
            .tool(RunCode::new(JsRuntime::new(self.opts.limits.clone())));
        let r = b.build();
        *lock(&self.direct) = direct;
        *lock(&self.unreachable) = unreachable;
        *self.registry.write().unwrap_or_else(|e| e.into_inner()) = Some(r.clone());
        r
    }

    fn tools_list(&self) -> Value {
        let registry = self.registry();
        let mut list = Vec::new();
        if let Some(code) = registry
            .tools(Presentation::Ptc)
            .into_iter()
            .find(|t| t.name == "run_code")
        {
            let mut description = code.description.unwrap_or_default();
            for why in lock(&self.unreachable).iter() {
                description.push_str(&format!(
                    "\n\nNot available now: {why}; its tools are missing above."
                ));
            }
            list.push(json!({
                "name": "run_code",
                "title": "Run a JavaScript program that calls the tools",
                "description": description,
                "inputSchema": code.input_schema,
                "annotations": {"destructiveHint": true, "openWorldHint": true}
            }));
        }
        list.extend(self.opts.names.definitions());
        if self.opts.present == Presentation::Both {
            for t in lock(&self.direct).values() {
                let mut def = json!({"name": t.name, "inputSchema": t.input_schema});
                if let Some(d) = &t.description {
                    def["description"] = json!(d);
                }
                if let Some(s) = &t.output_schema {
                    def["outputSchema"] = s.clone();
                }
                list.push(def);
            }
        }
        json!({"tools": list})
    }

    fn answer(
        &self,
        method: &str,
        params: &Value,
        call: Option<(&Value, &Arc<AtomicUsize>)>,
    ) -> Result<Value, (i64, String)> {
        let store = self.opts.spiller.store();
        let budget = self.opts.spiller.policy().max_inline_bytes();
        match method {
            "initialize" => {
                let asked = params
                    .get("protocolVersion")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let version = if PROTOCOL_VERSIONS.contains(&asked) {
                    asked
                } else {
                    PROTOCOL_VERSIONS[PROTOCOL_VERSIONS.len() - 1]
                };
                Ok(json!({
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": true}, "resources": {}},
                    "serverInfo": {"name": "spillway-code-mode", "version": env!("CARGO_PKG_VERSION")},
                    "instructions": "run_code runs a JavaScript program that calls the tools its description declares, with await tools.<name>(args), and gets their complete results. Print what you need to see or return it: long output comes back bounded, the rest stored to read with the spill tools."
                }))
            }
            "ping" => Ok(json!({})),
            "tools/list" => Ok(self.tools_list()),
            "tools/call" => {
                let (name, args) = rpc::call_parts(params);
                let call_id = match call.map(|c| c.0) {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => String::new(),
                };
                let signal = call.map(|c| c.1.clone()).unwrap_or_default();
                if name == "run_code" {
                    let registry = self.registry();
                    // Nested calls' progress goes under the client's token.
                    let token = params.pointer("/_meta/progressToken").cloned();
                    if let Some(t) = token.clone() {
                        self.progress.begin(&call_id, t);
                    }
                    let tc = ToolCall::new(call_id.clone(), "run_code", args);
                    let called = registry.call_with_signal(&tc, signal);
                    if token.is_some() {
                        self.progress.end(&call_id);
                    }
                    let r = match called {
                        Ok(r) => r,
                        Err(not_durable) => {
                            eprintln!("spillway: mcp proxy: {not_durable}");
                            *not_durable.result
                        }
                    };
                    return Ok(json!({"content": r.content, "isError": r.is_error}));
                }
                if let Some(v) = self.opts.names.call(store, budget, name, &args) {
                    return Ok(v);
                }
                let direct = (self.opts.present == Presentation::Both)
                    .then(|| lock(&self.direct).get(name).cloned())
                    .flatten();
                match direct {
                    Some(t) => {
                        let mut upstream_params = json!({"name": t.member, "arguments": args});
                        // The client's `_meta` (its progress token) goes along.
                        if let Some(meta) = params.get("_meta") {
                            upstream_params["_meta"] = meta.clone();
                        }
                        let mut result = t
                            .upstream
                            .request("tools/call", upstream_params, Some(&signal))
                            .map_err(|e| (rpc::INVALID_PARAMS, e.to_string()))?;
                        crate::bound_result(
                            &self.opts.spiller,
                            &self.opts.names,
                            &mut result,
                            t.output_schema.is_some(),
                        );
                        Ok(result)
                    }
                    None => Err((rpc::INVALID_PARAMS, format!("unknown tool: {name}"))),
                }
            }
            "resources/list" => Ok(json!({"resources": []})),
            "resources/templates/list" => {
                Ok(json!({"resourceTemplates": [tools::resource_template()]}))
            }
            "resources/read" => {
                let uri = params
                    .get("uri")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                tools::read_resource(store, uri, budget)
                    .map_err(|e| (rpc::INVALID_PARAMS, format!("{uri}: {e}")))
            }
            other => Err((rpc::METHOD_NOT_FOUND, format!("Method not found: {other}"))),
        }
    }
}

/// A tool the registry and the front share.
struct Shared(Arc<UpstreamTool>);

impl spillway_registry::Tool for Shared {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn group(&self) -> Option<&str> {
        self.0.group()
    }
    fn member(&self) -> &str {
        self.0.member()
    }
    fn description(&self) -> Option<&str> {
        self.0.description()
    }
    fn input_schema(&self) -> Value {
        self.0.input_schema()
    }
    fn output_schema(&self) -> Option<Value> {
        self.0.output_schema()
    }
    fn execute(
        &self,
        cx: &mut spillway_registry::Cx<'_>,
        args: &Value,
    ) -> Result<spillway_registry::Rendered, spillway_registry::ToolError> {
        self.0.execute(cx, args)
    }
}

/// A call received and not answered yet: its cancellation signal, and
/// whether it was cancelled.
type Running = (Arc<AtomicUsize>, Arc<AtomicBool>);

/// A call on its way to a worker.
struct Job {
    id: Value,
    method: String,
    params: Value,
    signal: Arc<AtomicUsize>,
    cancelled: Arc<AtomicBool>,
}

/// Serves the client until its input ends, then stops the upstream
/// servers.
///
/// # Errors
///
/// When the client's output fails.
pub fn run(
    opts: CodeProxyOptions,
    input: Box<dyn BufRead + Send>,
    output: Box<dyn Write + Send>,
) -> io::Result<()> {
    // The client's lines come from a thread of their own, so that a signal
    // is seen while the client is silent.
    let (lines_tx, lines_rx) = mpsc::sync_channel::<Vec<u8>>(64);
    std::thread::spawn(move || {
        let mut input = input;
        let mut line = Vec::new();
        while let Some(raw) = rpc::next_line(&mut *input, &mut line) {
            if lines_tx.send(raw.to_vec()).is_err() {
                return;
            }
        }
    });
    let forward = opts.forward.clone();
    let out = Out::new(output);
    let relay_out = out.clone();
    let progress = Arc::new(Progress::default());
    let routes = progress.clone();
    let relay: Arc<dyn Fn(&Value) + Send + Sync> = Arc::new(move |msg: &Value| {
        // A nested call's progress goes under its outer call's token; any
        // other (a direct call's, with `--present both`) passes as it is.
        if msg.get("method").and_then(Value::as_str) == Some("notifications/progress") {
            if let Some(m) = routes.translate(msg) {
                let _ = relay_out.send(&m);
                return;
            }
        }
        let _ = relay_out.send(msg);
    });
    let upstreams: Vec<Arc<Upstream>> = opts
        .servers
        .iter()
        .map(|s| Arc::new(Upstream::new(s.clone(), relay.clone(), opts.grace)))
        .collect();
    let log = opts
        .session_log
        .clone()
        .unwrap_or_else(|| Arc::new(SessionLog::discard()));
    let front = Arc::new(Front {
        opts,
        upstreams,
        registry: RwLock::new(None),
        direct: Mutex::new(HashMap::new()),
        unreachable: Mutex::new(Vec::new()),
        log,
        progress,
    });
    let calls: Arc<Mutex<HashMap<String, Running>>> = Arc::default();
    let (jobs_tx, jobs_rx) = mpsc::channel::<Job>();
    let jobs_rx = Arc::new(Mutex::new(jobs_rx));
    let workers: Vec<_> = (0..MAX_CONCURRENT_CALLS)
        .map(|_| {
            let (jobs, calls, out, front) =
                (jobs_rx.clone(), calls.clone(), out.clone(), front.clone());
            std::thread::spawn(move || loop {
                let job = match lock(&jobs).recv() {
                    Ok(j) => j,
                    Err(_) => return,
                };
                let answer = (!job.cancelled.load(Ordering::SeqCst))
                    .then(|| front.answer(&job.method, &job.params, Some((&job.id, &job.signal))));
                lock(&calls).remove(&job.id.to_string());
                if job.cancelled.load(Ordering::SeqCst) {
                    continue;
                }
                let _ = match answer {
                    Some(Ok(result)) => out.result(&job.id, result),
                    Some(Err((code, message))) => out.error(&job.id, code, &message),
                    None => Ok(()),
                };
            })
        })
        .collect();
    let mut failed = Ok(());
    let signalled = || {
        forward
            .as_ref()
            .is_some_and(|f| f.load(Ordering::SeqCst) != 0)
    };
    loop {
        let raw = match lines_rx.recv_timeout(Duration::from_millis(100)) {
            Ok(raw) => raw,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if signalled() {
                    break;
                }
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        if signalled() {
            break;
        }
        let msg = match rpc::parse(&raw) {
            Ok(m) => m,
            Err(e) => {
                failed = out.error(&Value::Null, rpc::PARSE_ERROR, &e);
                if failed.is_err() {
                    break;
                }
                continue;
            }
        };
        let Some(method) = msg.get("method").and_then(Value::as_str) else {
            continue;
        };
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        let Some(id) = msg.get("id").filter(|v| !v.is_null()) else {
            if method == "notifications/cancelled" {
                if let Some(target) = params.get("requestId") {
                    if let Some((signal, cancelled)) = lock(&calls).get(&target.to_string()) {
                        cancelled.store(true, Ordering::SeqCst);
                        signal.store(9, Ordering::SeqCst);
                    }
                }
            }
            continue;
        };
        if matches!(method, "tools/call" | "tools/list" | "resources/read") {
            let (signal, cancelled) = (
                Arc::new(AtomicUsize::new(0)),
                Arc::new(AtomicBool::new(false)),
            );
            lock(&calls).insert(id.to_string(), (signal.clone(), cancelled.clone()));
            let job = Job {
                id: id.clone(),
                method: method.to_owned(),
                params,
                signal,
                cancelled,
            };
            if jobs_tx.send(job).is_err() {
                break;
            }
            continue;
        }
        failed = match front.answer(method, &params, None) {
            Ok(result) => out.result(id, result),
            Err((code, message)) => out.error(id, code, &message),
        };
        if failed.is_err() {
            break;
        }
    }
    drop(jobs_tx);
    if signalled() {
        // Stop what runs: programs end, their commands and calls are cancelled.
        for (signal, _) in lock(&calls).values() {
            signal.store(9, Ordering::SeqCst);
        }
    }
    for w in workers {
        let _ = w.join();
    }
    for u in &front.upstreams {
        u.shutdown();
    }
    failed
}

#[cfg(test)]
mod tests {
    use crate::upstream::ServerSpec;

    #[test]
    fn an_mcp_servers_file_gives_each_server_and_says_what_is_wrong() {
        let s = ServerSpec::from_config(
            r#"{"mcpServers": {"b": {"command": "npx", "args": ["-y", "pkg"], "env": {"K": "v"}}, "a": {"command": "srv"}}}"#,
        )
        .unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].name.as_str(), s[0].command.as_str()), ("a", "srv"));
        assert_eq!(s[1].args, ["-y", "pkg"]);
        assert_eq!(s[1].env.get("K").map(String::as_str), Some("v"));
        for (text, words) in [
            ("nope", "not JSON"),
            ("{}", "no \"mcpServers\""),
            (r#"{"mcpServers": {}}"#, "names no server"),
            (
                r#"{"mcpServers": {"x": {"url": "http://h"}}}"#,
                "mcpServers.x: needs a string \"command\"",
            ),
            (
                r#"{"mcpServers": {"x": {"command": "c", "args": [1]}}}"#,
                "mcpServers.x: \"args\" must be strings",
            ),
            (
                r#"{"mcpServers": {"x": {"command": "c", "env": {"K": 1}}}}"#,
                "\"env\" values must be strings",
            ),
        ] {
            let e = ServerSpec::from_config(text).unwrap_err();
            assert!(e.contains(words), "{text}: {e}");
        }
    }
}
