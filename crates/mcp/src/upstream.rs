//! Code Mode's side towards the upstream MCP servers: a client per server,
//! started on first use (and again after it died), its tools as registry
//! tools a program calls.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use spillway_registry::{Block, Cx, Rendered, Tool, ToolError};

use crate::rpc::{self, Out};

/// One upstream server: how to start it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerSpec {
    /// Its name: `tools.<name>.<tool>` when there are several.
    pub name: String,
    /// The command.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables added to its environment.
    pub env: BTreeMap<String, String>,
}

impl ServerSpec {
    /// A server started as `command args…`.
    pub fn new(name: impl Into<String>, command: impl Into<String>, args: Vec<String>) -> Self {
        ServerSpec {
            name: name.into(),
            command: command.into(),
            args,
            env: BTreeMap::new(),
        }
    }

    /// The servers of an `mcpServers` file, as Claude Desktop, Claude Code
    /// and Cursor write it: `{"mcpServers": {"name": {"command", "args",
    /// "env"}}}`, in name order.
    ///
    /// # Errors
    ///
    /// What is wrong with the file, naming the entry.
    pub fn from_config(text: &str) -> Result<Vec<ServerSpec>, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let servers = v
            .get("mcpServers")
            .and_then(Value::as_object)
            .ok_or("no \"mcpServers\" object")?;
        let mut out = Vec::new();
        for (name, s) in servers {
            let bad = |what: &str| format!("mcpServers.{name}: {what}");
            let command = s.get("command").and_then(Value::as_str).ok_or_else(|| {
                bad("needs a string \"command\" (only stdio servers are supported)")
            })?;
            let args = match s.get("args") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|x| x.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| bad("\"args\" must be strings"))?,
                Some(_) => return Err(bad("\"args\" must be an array")),
            };
            let mut env = BTreeMap::new();
            match s.get("env") {
                None | Some(Value::Null) => {}
                Some(Value::Object(m)) => {
                    for (k, v) in m {
                        let v = v
                            .as_str()
                            .ok_or_else(|| bad("\"env\" values must be strings"))?;
                        env.insert(k.clone(), v.to_owned());
                    }
                }
                Some(_) => return Err(bad("\"env\" must be an object")),
            }
            out.push(ServerSpec {
                name: name.clone(),
                command: command.to_owned(),
                args,
                env,
            });
        }
        if out.is_empty() {
            return Err("\"mcpServers\" names no server".into());
        }
        Ok(out)
    }
}

/// Where the progress of nested calls goes: the outer `run_code` call's
/// progress token, when the client gave one. Each nested call gets a token
/// of its own; its notifications are passed on under the outer token, with
/// a progress that only grows, as the protocol asks.
#[derive(Default)]
pub(crate) struct Progress {
    /// The outer calls that asked for progress, by call id.
    outer: Mutex<HashMap<String, Arc<Outer>>>,
    /// Nested calls' tokens, to their outer call and their tool.
    routes: Mutex<HashMap<String, (Arc<Outer>, String)>>,
}

pub(crate) struct Outer {
    token: Value,
    seq: AtomicU64,
}

impl Progress {
    /// An outer call asks for progress under `token`.
    pub(crate) fn begin(&self, call_id: &str, token: Value) {
        lock(&self.outer).insert(
            call_id.to_owned(),
            Arc::new(Outer {
                token,
                seq: AtomicU64::new(0),
            }),
        );
    }

    /// The outer call ended.
    pub(crate) fn end(&self, call_id: &str) {
        lock(&self.outer).remove(call_id);
    }

    /// The token for the nested call `sub_call_id` of `tool`, when its
    /// outer call asked for progress.
    fn route(&self, sub_call_id: &str, tool: &str) -> Option<String> {
        let outer_id = sub_call_id.rsplit_once(":code:")?.0;
        let outer = lock(&self.outer).get(outer_id)?.clone();
        let token = format!("spillway:{sub_call_id}");
        lock(&self.routes).insert(token.clone(), (outer, tool.to_owned()));
        Some(token)
    }

    fn unroute(&self, token: &str) {
        lock(&self.routes).remove(token);
    }

    /// A nested call's progress notification as the client gets it, or
    /// `None` for a token nobody asked for.
    pub(crate) fn translate(&self, msg: &Value) -> Option<Value> {
        let params = msg.get("params")?;
        let token = params.get("progressToken")?.as_str()?;
        let (outer, tool) = lock(&self.routes).get(token).cloned()?;
        let n = outer.seq.fetch_add(1, Ordering::SeqCst) + 1;
        let detail = match (
            params.get("message").and_then(Value::as_str),
            params.get("progress"),
            params.get("total"),
        ) {
            (Some(m), _, _) => m.to_owned(),
            (None, Some(p), Some(t)) => format!("{p}/{t}"),
            (None, Some(p), None) => p.to_string(),
            _ => String::new(),
        };
        Some(json!({
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": outer.token, "progress": n, "message": format!("{tool}: {detail}")}
        }))
    }
}

/// Why a request to a server got no answer.
#[derive(Clone, Debug)]
pub(crate) enum Failure {
    /// The server is gone (it exited, or cannot be started).
    Gone(String),
    /// It answered with an error, or the request was cancelled.
    Error(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Gone(m) | Failure::Error(m) => f.write_str(m),
        }
    }
}

/// How long the handshake with a server may take.
const HANDSHAKE: Duration = Duration::from_secs(60);

/// A live connection.
struct Conn {
    child: Mutex<Child>,
    to: Out,
    pending: Mutex<HashMap<u64, mpsc::Sender<Result<Value, Failure>>>>,
    next: AtomicU64,
    alive: AtomicBool,
}

/// A client of one upstream server.
pub(crate) struct Upstream {
    spec: ServerSpec,
    conn: Mutex<Option<Arc<Conn>>>,
    /// Notifications to pass on to our client (progress, logging, a
    /// changed tool list).
    relay: Arc<dyn Fn(&Value) + Send + Sync>,
    /// Set when the server said its tool list changed.
    pub(crate) changed: Arc<AtomicBool>,
    grace: Duration,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Upstream {
    pub(crate) fn new(
        spec: ServerSpec,
        relay: Arc<dyn Fn(&Value) + Send + Sync>,
        grace: Duration,
    ) -> Self {
        Upstream {
            spec,
            conn: Mutex::new(None),
            relay,
            changed: Arc::new(AtomicBool::new(false)),
            grace,
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.spec.name
    }

    /// The live connection, started (with the handshake) when there is
    /// none or the last one died.
    fn conn(&self) -> Result<Arc<Conn>, Failure> {
        let mut slot = lock(&self.conn);
        if let Some(c) = slot.as_ref().filter(|c| c.alive.load(Ordering::SeqCst)) {
            return Ok(c.clone());
        }
        if let Some(old) = slot.take() {
            let _ = spillway_process::stop::stop(&mut lock(&old.child), Duration::ZERO);
        }
        let c = self.start().map_err(|e| {
            Failure::Gone(format!(
                "cannot start the MCP server {:?}: {e}",
                self.spec.name
            ))
        })?;
        let init = Self::send(
            &c,
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "spillway", "version": env!("CARGO_PKG_VERSION")}
            }),
            None,
            Some(HANDSHAKE),
        );
        if let Err(e) = init {
            let _ = spillway_process::stop::stop(&mut lock(&c.child), Duration::ZERO);
            return Err(Failure::Gone(format!(
                "the MCP server {:?} did not initialize: {e}",
                self.spec.name
            )));
        }
        let _ =
            c.to.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        *slot = Some(c.clone());
        Ok(c)
    }

    fn start(&self) -> io::Result<Arc<Conn>> {
        let mut child = Command::new(&self.spec.command)
            .args(&self.spec.args)
            .envs(&self.spec.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let to = Out::new(Box::new(child.stdin.take().expect("piped stdin")));
        let from = child.stdout.take().expect("piped stdout");
        let conn = Arc::new(Conn {
            child: Mutex::new(child),
            to,
            pending: Mutex::new(HashMap::new()),
            next: AtomicU64::new(0),
            alive: AtomicBool::new(true),
        });
        let (c, relay, changed, name) = (
            conn.clone(),
            self.relay.clone(),
            self.changed.clone(),
            self.spec.name.clone(),
        );
        std::thread::spawn(move || {
            let mut input = BufReader::with_capacity(1 << 20, from);
            let mut line = Vec::new();
            while let Some(raw) = rpc::next_line(&mut input, &mut line) {
                let Ok(msg) = rpc::parse(raw) else {
                    eprintln!("spillway: mcp proxy: {name} sent a line that is not JSON; skipped");
                    continue;
                };
                match (msg.get("method").and_then(Value::as_str), msg.get("id")) {
                    // A request of the server's: answered here.
                    (Some(method), Some(id)) => {
                        let _ = match method {
                            "ping" => c.to.result(id, json!({})),
                            "roots/list" => c.to.result(id, json!({"roots": []})),
                            other => c.to.error(
                                id,
                                rpc::METHOD_NOT_FOUND,
                                &format!("{other} is not offered by spillway's Code Mode"),
                            ),
                        };
                    }
                    (Some(method), None) => {
                        if method == "notifications/tools/list_changed" {
                            changed.store(true, Ordering::SeqCst);
                        }
                        if matches!(
                            method,
                            "notifications/tools/list_changed"
                                | "notifications/progress"
                                | "notifications/message"
                        ) {
                            relay(&msg);
                        }
                    }
                    (None, Some(id)) => {
                        let Some(id) = id.as_u64() else { continue };
                        if let Some(tx) = lock(&c.pending).remove(&id) {
                            let answer = match msg.get("error") {
                                Some(e) => Err(Failure::Error(
                                    e.get("message")
                                        .and_then(Value::as_str)
                                        .map_or_else(|| e.to_string(), str::to_owned),
                                )),
                                None => Ok(msg.get("result").cloned().unwrap_or(Value::Null)),
                            };
                            let _ = tx.send(answer);
                        }
                    }
                    (None, None) => {}
                }
            }
            // The server closed its output: it is gone.
            c.alive.store(false, Ordering::SeqCst);
            for (_, tx) in lock(&c.pending).drain() {
                let _ = tx.send(Err(Failure::Gone(format!(
                    "the MCP server {name:?} exited"
                ))));
            }
        });
        Ok(conn)
    }

    /// Sends a request and waits for its answer, until `cancel` is set or
    /// `timeout` passes.
    fn send(
        c: &Conn,
        method: &str,
        params: Value,
        cancel: Option<&AtomicUsize>,
        timeout: Option<Duration>,
    ) -> Result<Value, Failure> {
        let id = c.next.fetch_add(1, Ordering::SeqCst) + 1;
        let (tx, rx) = mpsc::channel();
        lock(&c.pending).insert(id, tx);
        if !c.alive.load(Ordering::SeqCst) {
            lock(&c.pending).remove(&id);
            return Err(Failure::Gone("the server exited".into()));
        }
        c.to.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .map_err(|e| Failure::Gone(format!("cannot write to the server: {e}")))?;
        let started = std::time::Instant::now();
        loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(answer) => return answer,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(Failure::Gone("the server exited".into()))
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            let cancelled = cancel.is_some_and(|s| s.load(Ordering::SeqCst) != 0);
            let late = timeout.is_some_and(|t| started.elapsed() >= t);
            if cancelled || late {
                lock(&c.pending).remove(&id);
                let _ = c.to.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                          "params": {"requestId": id, "reason": "the program ended"}}));
                return Err(Failure::Error(if cancelled {
                    "cancelled".into()
                } else {
                    "the server did not answer in time".into()
                }));
            }
        }
    }

    /// A request to the server, started if need be.
    pub(crate) fn request(
        &self,
        method: &str,
        params: Value,
        cancel: Option<&AtomicUsize>,
    ) -> Result<Value, Failure> {
        let c = self.conn()?;
        Self::send(&c, method, params, cancel, None)
    }

    /// Every tool the server lists, page by page.
    pub(crate) fn tools(&self) -> Result<Vec<Value>, Failure> {
        self.changed.store(false, Ordering::SeqCst);
        let mut all = Vec::new();
        let mut cursor: Option<Value> = None;
        loop {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let page = self.request("tools/list", params, None)?;
            if let Some(list) = page.get("tools").and_then(Value::as_array) {
                all.extend(list.iter().cloned());
            }
            match page.get("nextCursor") {
                Some(c) if !c.is_null() => cursor = Some(c.clone()),
                _ => return Ok(all),
            }
        }
    }

    /// Stops the server as the stdio transport prescribes.
    pub(crate) fn shutdown(&self) {
        if let Some(c) = lock(&self.conn).take() {
            c.to.close();
            let _ = spillway_process::stop::stop(&mut lock(&c.child), self.grace);
        }
    }
}

/// An upstream tool as a registry tool.
pub(crate) struct UpstreamTool {
    pub(crate) upstream: Arc<Upstream>,
    pub(crate) progress: Arc<Progress>,
    /// The registry's name (and the client's, with `--present both`):
    /// `<server>.<tool>` with several servers.
    pub(crate) name: String,
    pub(crate) group: Option<String>,
    pub(crate) member: String,
    pub(crate) description: Option<String>,
    pub(crate) input_schema: Value,
    pub(crate) output_schema: Option<Value>,
}

impl UpstreamTool {
    /// The tools of `upstream`'s list; grouped under its name when `group`.
    pub(crate) fn from_list(
        upstream: &Arc<Upstream>,
        progress: &Arc<Progress>,
        list: &[Value],
        group: bool,
    ) -> Vec<Self> {
        list.iter()
            .filter_map(|t| {
                let member = t.get("name")?.as_str()?.to_owned();
                Some(UpstreamTool {
                    upstream: upstream.clone(),
                    progress: progress.clone(),
                    name: if group {
                        format!("{}.{member}", upstream.name())
                    } else {
                        member.clone()
                    },
                    group: group.then(|| upstream.name().to_owned()),
                    member,
                    description: t
                        .get("description")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    input_schema: t
                        .get("inputSchema")
                        .cloned()
                        .unwrap_or_else(|| json!({"type": "object"})),
                    output_schema: t.get("outputSchema").cloned(),
                })
            })
            .collect()
    }
}

impl Tool for UpstreamTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn group(&self) -> Option<&str> {
        self.group.as_deref()
    }

    fn member(&self) -> &str {
        &self.member
    }

    fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    fn input_schema(&self) -> Value {
        self.input_schema.clone()
    }

    fn output_schema(&self) -> Option<Value> {
        self.output_schema.clone()
    }

    fn execute(&self, cx: &mut Cx<'_>, args: &Value) -> Result<Rendered, ToolError> {
        let mut params = json!({"name": self.member, "arguments": args});
        let token = self.progress.route(cx.call_id(), &self.member);
        if let Some(t) = &token {
            params["_meta"] = json!({"progressToken": t});
        }
        let result = self
            .upstream
            .request("tools/call", params, Some(cx.signal()));
        if let Some(t) = &token {
            self.progress.unroute(t);
        }
        let result = result.map_err(|e| match e {
            // The server is gone: the program that called it fails.
            Failure::Gone(m) => ToolError::Unavailable(m),
            Failure::Error(m) => ToolError::Failed(m),
        })?;
        let content = result.get("content").cloned().unwrap_or_else(|| json!([]));
        let texts: Option<Vec<&str>> = content.as_array().map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| {
                    (b.get("type")? == "text")
                        .then(|| b.get("text")?.as_str())
                        .flatten()
                })
                .collect()
        });
        let all_text = content
            .as_array()
            .is_some_and(|b| b.iter().all(|b| b.get("type").is_some_and(|t| t == "text")));
        if result.get("isError").and_then(Value::as_bool) == Some(true) {
            let text = match (&texts, all_text) {
                (Some(t), true) => t.join("\n"),
                _ => content.to_string(),
            };
            return Err(ToolError::Failed(text));
        }
        if let Some(sc) = result.get("structuredContent").filter(|v| !v.is_null()) {
            return Ok(Rendered::Json(sc.clone()));
        }
        match (texts, all_text) {
            (Some(t), true) => Ok(Rendered::Blocks(vec![Block::text(t.join("\n"))])),
            _ => Ok(Rendered::Json(content)),
        }
    }
}
