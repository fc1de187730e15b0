//! Code Mode's side towards the upstream MCP servers: a client per server,
//! started on first use (and again after it died), its tools as registry
//! tools a program calls.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use spillway_process::Cancel;
use spillway_registry::{Block, Cx, Rendered, Tool, ToolError};

use crate::rpc;

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
    /// The server is gone (it exited, cannot be started, or was stopped).
    Gone(String),
    /// It answered with an error, or the request was cancelled.
    Error(String),
    /// No answer came within the call's deadline.
    Late(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Gone(m) | Failure::Error(m) | Failure::Late(m) => f.write_str(m),
        }
    }
}

/// How long one attempt to reach a server (start it, the `initialize`
/// handshake, and every page of its tool list) may take in all. A server
/// that misses it is stopped, named unavailable, and tried again at the
/// next listing.
const ATTEMPT: Duration = Duration::from_secs(30);

/// How long a listing waits for a server that failed before (or whose
/// earlier attempt still runs): a server that is down costs each listing
/// no more than this, and one that came back is seen at once.
const RETRY_WAIT: Duration = Duration::from_millis(500);

/// How many pages of `tools/list` a server may send; a server that sends
/// more, or a cursor it sent before, is looping.
const MAX_PAGES: usize = 1000;

/// The deadline of a wait that its cancellation alone ends (a program's
/// nested call, which the program cancels at its own deadline).
pub(crate) const UNBOUNDED: Duration = Duration::from_secs(24 * 3600);

/// How often a wait looks at its cancellation.
const TICK: Duration = Duration::from_millis(50);

/// What a wait on a server may take: until `until`, and not past the
/// moment `cancelled` says so.
#[derive(Clone, Copy)]
pub(crate) struct Wait<'a> {
    pub(crate) until: Instant,
    pub(crate) cancel: Option<&'a Cancel>,
}

impl Wait<'_> {
    fn cancelled(&self) -> bool {
        self.cancel.is_some_and(Cancel::is_cancelled)
    }
}

/// A line for the writer thread, and where to say it was written.
type Line = (Vec<u8>, Option<mpsc::SyncSender<io::Result<()>>>);

/// A live connection.
struct Conn {
    child: Mutex<Child>,
    /// The writer thread's queue: a server that stops reading blocks that
    /// thread, never a caller (who waits for its line with a deadline).
    to: Mutex<Option<mpsc::Sender<Line>>>,
    pending: Mutex<HashMap<u64, mpsc::Sender<Result<Value, Failure>>>>,
    next: AtomicU64,
    alive: AtomicBool,
}

impl Conn {
    /// Queues a line; `None` when the writer is gone.
    fn queue(&self, v: &Value, ack: Option<mpsc::SyncSender<io::Result<()>>>) -> Option<()> {
        lock(&self.to)
            .as_ref()?
            .send((v.to_string().into_bytes(), ack))
            .ok()
    }

    /// Sends a notification (or an answer), not waiting for it.
    fn notify(&self, v: &Value) {
        let _ = self.queue(v, None);
    }

    /// Whether the server process has exited: a server whose child keeps
    /// its output open is gone all the same.
    fn exited(&self) -> bool {
        lock(&self.child)
            .try_wait()
            .map_or(true, |status| status.is_some())
    }

    /// Stops the server and everything it started, at once.
    fn kill(&self) {
        self.alive.store(false, Ordering::SeqCst);
        lock(&self.to).take();
        let _ = spillway_process::stop::stop_group(&mut lock(&self.child), Duration::ZERO);
    }

    /// Sends a request and waits for its answer within `wait`. A server
    /// that does not take the request in time is stopped (a half-written
    /// line cannot be taken back); one that does not answer in time gets
    /// `notifications/cancelled`.
    fn request(&self, method: &str, params: Value, wait: Wait<'_>) -> Result<Value, Failure> {
        let id = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        let (tx, rx) = mpsc::channel();
        lock(&self.pending).insert(id, tx);
        if !self.alive.load(Ordering::SeqCst) {
            lock(&self.pending).remove(&id);
            return Err(Failure::Gone("the server exited".into()));
        }
        let (ack_tx, ack_rx) = mpsc::sync_channel(1);
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if self.queue(&msg, Some(ack_tx)).is_none() {
            lock(&self.pending).remove(&id);
            return Err(Failure::Gone("the server's input is closed".into()));
        }
        // The line reaches the server.
        loop {
            let now = Instant::now();
            match ack_rx.recv_timeout(TICK.min(wait.until.saturating_duration_since(now))) {
                Ok(Ok(())) => break,
                Ok(Err(e)) => {
                    lock(&self.pending).remove(&id);
                    return Err(Failure::Gone(format!("cannot write to the server: {e}")));
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    lock(&self.pending).remove(&id);
                    return Err(Failure::Gone("the server's input is closed".into()));
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            if self.exited() {
                lock(&self.pending).remove(&id);
                self.kill();
                return Err(Failure::Gone("the server exited".into()));
            }
            if wait.cancelled() || Instant::now() >= wait.until {
                lock(&self.pending).remove(&id);
                self.kill();
                return Err(Failure::Gone(if wait.cancelled() {
                    "cancelled while the server was not reading its input; it was stopped".into()
                } else {
                    "the server stopped reading its input; it was stopped".into()
                }));
            }
        }
        // Its answer comes back.
        loop {
            let now = Instant::now();
            match rx.recv_timeout(TICK.min(wait.until.saturating_duration_since(now))) {
                Ok(answer) => return answer,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(Failure::Gone("the server exited".into()))
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            if self.exited() {
                lock(&self.pending).remove(&id);
                self.kill();
                return Err(Failure::Gone("the server exited".into()));
            }
            let cancelled = wait.cancelled();
            if cancelled || Instant::now() >= wait.until {
                lock(&self.pending).remove(&id);
                self.notify(
                    &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                    "params": {"requestId": id, "reason": "the program ended"}}),
                );
                return Err(if cancelled {
                    Failure::Error("cancelled".into())
                } else {
                    Failure::Late("the server did not answer in time".into())
                });
            }
        }
    }
}

/// Where a server stands.
enum State {
    /// Not tried yet.
    Idle,
    /// An attempt runs on a thread of its own.
    Connecting,
    /// Reached, with the tools it listed.
    Ready {
        conn: Arc<Conn>,
        tools: Arc<Vec<Value>>,
    },
    /// The last attempt failed, for this reason.
    Failed(String),
}

/// A client of one upstream server.
pub(crate) struct Upstream {
    spec: ServerSpec,
    state: Mutex<State>,
    settled: Condvar,
    /// An attempt failed since the server was last listed: a listing waits
    /// only [`RETRY_WAIT`] for it.
    failed_before: AtomicBool,
    /// Set at shutdown: attempts stop, and none starts.
    stopping: Cancel,
    /// The server an attempt started and has not finished with, so that
    /// shutdown stops it too.
    starting: Mutex<Option<Arc<Conn>>>,
    /// Notifications to pass on to our client (progress, logging, a
    /// changed tool list).
    relay: Arc<dyn Fn(&Value) + Send + Sync>,
    /// Set when the server said its tool list changed.
    pub(crate) changed: Arc<AtomicBool>,
    grace: Duration,
    diagnostics: crate::Diagnostics,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Upstream {
    pub(crate) fn new(
        spec: ServerSpec,
        relay: Arc<dyn Fn(&Value) + Send + Sync>,
        grace: Duration,
        diagnostics: crate::Diagnostics,
    ) -> Self {
        Upstream {
            spec,
            state: Mutex::new(State::Idle),
            settled: Condvar::new(),
            failed_before: AtomicBool::new(false),
            stopping: Cancel::new(),
            starting: Mutex::new(None),
            relay,
            changed: Arc::new(AtomicBool::new(false)),
            grace,
            diagnostics,
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.spec.name
    }

    /// Starts listing the server on a thread of its own (with its own
    /// deadline, [`ATTEMPT`]) unless its tools are listed and current or an
    /// attempt already runs: when it is not reached yet, failed, died or
    /// said its list changed. Does not wait; [`tools`](Self::tools) does.
    /// A caller of several servers begins them all, then waits for each,
    /// so the waits overlap.
    pub(crate) fn begin(self: &Arc<Self>) {
        let mut state = lock(&self.state);
        match &*state {
            State::Ready { conn, .. }
                if conn.alive.load(Ordering::SeqCst) && !self.changed.load(Ordering::SeqCst) =>
            {
                return
            }
            State::Connecting => return,
            _ => {}
        }
        if self.stopping.is_cancelled() {
            *state = State::Failed(format!("the MCP server {:?} is stopping", self.spec.name));
            return;
        }
        let previous = std::mem::replace(&mut *state, State::Connecting);
        let reuse = match previous {
            State::Ready { conn, .. } if conn.alive.load(Ordering::SeqCst) => Some(conn),
            State::Ready { conn, .. } => {
                conn.kill();
                None
            }
            _ => None,
        };
        let me = self.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("mcp upstream {}", self.spec.name))
            .spawn(move || me.attempt(reuse));
        if let Err(e) = spawned {
            *state = State::Failed(format!("cannot start a thread for it: {e}"));
        }
    }

    /// The server's tools, as last listed, listed again first when
    /// [`begin`](Self::begin) says so: this waits for the listing within
    /// `wait` (and no more than [`RETRY_WAIT`] for a server that failed
    /// before), then says why the server is not available now. A server
    /// still starting then is looked at again at the next listing.
    pub(crate) fn tools(self: &Arc<Self>, wait: Wait<'_>) -> Result<Arc<Vec<Value>>, String> {
        self.begin();
        let mut state = lock(&self.state);
        let until = if self.failed_before.load(Ordering::SeqCst) {
            wait.until.min(Instant::now() + RETRY_WAIT)
        } else {
            wait.until
        };
        loop {
            match &*state {
                State::Ready { tools, .. } => return Ok(tools.clone()),
                State::Failed(why) => return Err(why.clone()),
                State::Idle | State::Connecting => {}
            }
            let now = Instant::now();
            if now >= until || wait.cancelled() {
                // The next listing waits no more than a retry's time for it.
                self.failed_before.store(true, Ordering::SeqCst);
                return Err(format!(
                    "the MCP server {:?} is still starting (no answer to its handshake or tool list yet)",
                    self.spec.name
                ));
            }
            state = self
                .settled
                .wait_timeout(state, TICK.min(until - now))
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
    }

    /// One attempt to reach the server and list its tools, on its own
    /// thread: the state becomes `Ready` or `Failed`, and waiters are told.
    fn attempt(&self, reuse: Option<Arc<Conn>>) {
        let wait = Wait {
            until: Instant::now() + ATTEMPT,
            cancel: Some(&self.stopping),
        };
        let name = &self.spec.name;
        let reached = match reuse {
            Some(c) => Ok(c),
            None => self.connect(wait),
        };
        let outcome = reached.and_then(|conn| {
            self.changed.store(false, Ordering::SeqCst);
            match list_all(&conn, wait) {
                Ok(tools) => Ok((conn, tools)),
                Err(e) => {
                    conn.kill();
                    Err(format!(
                        "the MCP server {name:?} did not list its tools: {e}"
                    ))
                }
            }
        });
        lock(&self.starting).take();
        let mut state = lock(&self.state);
        *state = match outcome {
            Ok((conn, tools)) if !self.stopping.is_cancelled() => {
                self.failed_before.store(false, Ordering::SeqCst);
                State::Ready {
                    conn,
                    tools: Arc::new(tools),
                }
            }
            Ok((conn, _)) => {
                conn.kill();
                State::Failed(format!("the MCP server {name:?} is stopping"))
            }
            Err(why) => {
                self.failed_before.store(true, Ordering::SeqCst);
                State::Failed(why)
            }
        };
        self.settled.notify_all();
    }

    /// Starts the server and makes the handshake within `wait`.
    fn connect(&self, wait: Wait<'_>) -> Result<Arc<Conn>, String> {
        let name = &self.spec.name;
        let c = self
            .start()
            .map_err(|e| format!("cannot start the MCP server {name:?}: {e}"))?;
        {
            // Under the lock shutdown takes it by: either shutdown sees the
            // server, or this sees shutdown.
            let mut starting = lock(&self.starting);
            if self.stopping.is_cancelled() {
                c.kill();
                return Err(format!("the MCP server {name:?} is stopping"));
            }
            *starting = Some(c.clone());
        }
        let init = c.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "spillway", "version": env!("CARGO_PKG_VERSION")}
            }),
            wait,
        );
        if let Err(e) = init {
            c.kill();
            return Err(format!("the MCP server {name:?} did not initialize: {e}"));
        }
        c.notify(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        Ok(c)
    }

    fn start(&self) -> io::Result<Arc<Conn>> {
        let mut child = Command::new(&self.spec.command)
            .args(&self.spec.args)
            .envs(&self.spec.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            // A group of its own: stopping the server stops what it started.
            .process_group(0)
            .spawn()?;
        let mut stdin = child.stdin.take().expect("piped stdin");
        let from = child.stdout.take().expect("piped stdout");
        let (to_tx, to_rx) = mpsc::channel::<Line>();
        let conn = Arc::new(Conn {
            child: Mutex::new(child),
            to: Mutex::new(Some(to_tx)),
            pending: Mutex::new(HashMap::new()),
            next: AtomicU64::new(0),
            alive: AtomicBool::new(true),
        });
        // The writer: ends when the connection closes its queue, or when a
        // write fails (the server is gone); dropping `stdin` closes the
        // server's input.
        let writer = std::thread::Builder::new()
            .name(format!("mcp upstream {} writer", self.spec.name))
            .spawn(move || {
                for (line, ack) in to_rx {
                    let written = stdin
                        .write_all(&line)
                        .and_then(|()| stdin.write_all(b"\n"))
                        .and_then(|()| stdin.flush());
                    let failed = written.is_err();
                    if let Some(ack) = ack {
                        let _ = ack.try_send(written);
                    }
                    if failed {
                        return;
                    }
                }
            });
        if let Err(e) = writer {
            conn.kill();
            return Err(e);
        }
        let (c, relay, changed, name, diagnostics) = (
            conn.clone(),
            self.relay.clone(),
            self.changed.clone(),
            self.spec.name.clone(),
            self.diagnostics.clone(),
        );
        let reader = std::thread::Builder::new()
            .name(format!("mcp upstream {} reader", self.spec.name))
            .spawn(move || {
                let mut input = BufReader::with_capacity(1 << 20, from);
                let mut line = Vec::new();
                let mut said = false;
                while let Some(raw) = rpc::next_line(&mut input, &mut line) {
                    let Ok(msg) = rpc::parse(raw) else {
                        // Said once: a server that floods its output with
                        // such lines does not flood stderr too.
                        if !std::mem::replace(&mut said, true) {
                            diagnostics.say(&format!(
                                "mcp proxy: the MCP server {name:?} sent a line that is not JSON; it and any later ones are skipped"
                            ));
                        }
                        continue;
                    };
                    handle(&c, &msg, &relay, &changed);
                }
                // The server closed its output: it is gone.
                c.alive.store(false, Ordering::SeqCst);
                for (_, tx) in lock(&c.pending).drain() {
                    let _ = tx.send(Err(Failure::Gone(format!(
                        "the MCP server {name:?} exited"
                    ))));
                }
            });
        if let Err(e) = reader {
            conn.kill();
            return Err(e);
        }
        Ok(conn)
    }

    /// A request to the server, within `wait`. The server must have been
    /// listed (a program calls only the tools it listed); a server that
    /// died since is started again within the same wait.
    pub(crate) fn request(
        self: &Arc<Self>,
        method: &str,
        params: Value,
        wait: Wait<'_>,
    ) -> Result<Value, Failure> {
        let conn = {
            let state = lock(&self.state);
            match &*state {
                State::Ready { conn, .. } if conn.alive.load(Ordering::SeqCst) => {
                    Some(conn.clone())
                }
                _ => None,
            }
        };
        let conn = match conn {
            Some(c) => c,
            None => {
                // Reached again (and listed) within the call's own wait.
                self.tools(wait).map_err(Failure::Gone)?;
                match &*lock(&self.state) {
                    State::Ready { conn, .. } => conn.clone(),
                    _ => {
                        return Err(Failure::Gone(format!(
                            "the MCP server {:?} is not available",
                            self.spec.name
                        )))
                    }
                }
            }
        };
        conn.request(method, params, wait)
    }

    /// Stops the server as the stdio transport prescribes (close its
    /// input, wait, SIGTERM, wait, SIGKILL), with everything it started,
    /// and any attempt to reach it.
    pub(crate) fn shutdown(&self) {
        self.stopping.raise(spillway_process::stop::SIGTERM);
        if let Some(c) = lock(&self.starting).take() {
            c.kill();
        }
        let conn = match std::mem::replace(&mut *lock(&self.state), State::Idle) {
            State::Ready { conn, .. } => Some(conn),
            _ => None,
        };
        if let Some(c) = conn {
            c.alive.store(false, Ordering::SeqCst);
            lock(&c.to).take();
            let _ = spillway_process::stop::stop_group(&mut lock(&c.child), self.grace);
        }
    }
}

/// What the reader does with one message from the server.
fn handle(c: &Conn, msg: &Value, relay: &Arc<dyn Fn(&Value) + Send + Sync>, changed: &AtomicBool) {
    match (msg.get("method").and_then(Value::as_str), msg.get("id")) {
        // A request of the server's: answered here.
        (Some(method), Some(id)) => c.notify(&match method {
            "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
            "roots/list" => json!({"jsonrpc": "2.0", "id": id, "result": {"roots": []}}),
            other => json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": rpc::METHOD_NOT_FOUND,
                "message": format!("{other} is not offered by spillway's Code Mode")}}),
        }),
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
                relay(msg);
            }
        }
        (None, Some(id)) => {
            let Some(id) = id.as_u64() else { return };
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

/// Every tool the server lists, page by page, within `wait`: a cursor
/// seen before, or more than [`MAX_PAGES`] pages, is an error.
fn list_all(c: &Conn, wait: Wait<'_>) -> Result<Vec<Value>, Failure> {
    let mut all = Vec::new();
    let mut cursor: Option<Value> = None;
    let mut seen = std::collections::HashSet::new();
    for _ in 0..MAX_PAGES {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let page = c.request("tools/list", params, wait)?;
        if let Some(list) = page.get("tools").and_then(Value::as_array) {
            all.extend(list.iter().cloned());
        }
        match page.get("nextCursor") {
            Some(next) if !next.is_null() => {
                if !seen.insert(next.to_string()) {
                    return Err(Failure::Error(format!(
                        "it sent the cursor {next} twice (its list would never end)"
                    )));
                }
                cursor = Some(next.clone());
            }
            _ => return Ok(all),
        }
    }
    Err(Failure::Error(format!(
        "it sent more than {MAX_PAGES} pages of tools"
    )))
}

/// An upstream tool as a registry tool.
pub(crate) struct UpstreamTool {
    pub(crate) upstream: Arc<Upstream>,
    pub(crate) progress: Arc<Progress>,
    /// The registry's name (and the client's, with `--present both`):
    /// `<server>.<tool>` with several servers.
    pub(crate) name: String,
    pub(crate) group: Option<String>,
    /// Its name in the registry's group (or at the top).
    pub(crate) member: String,
    /// Its name on the server, which may differ from `member` when the
    /// proxy renamed it (a name already taken).
    pub(crate) remote: String,
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
                    remote: member.clone(),
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
        let mut params = json!({"name": self.remote, "arguments": args});
        // Its progress names the server and the tool.
        let shown = format!("{}.{}", self.upstream.name(), self.remote);
        let token = self.progress.route(cx.call_id(), &shown);
        if let Some(t) = &token {
            params["_meta"] = json!({"progressToken": t});
        }
        // The call ends with its program (which cancels it at its own
        // deadline), or at its outer call's deadline.
        let wait = Wait {
            until: cx.deadline().unwrap_or_else(|| Instant::now() + UNBOUNDED),
            cancel: Some(cx.signal()),
        };
        let result = self.upstream.request("tools/call", params, wait);
        if let Some(t) = &token {
            self.progress.unroute(t);
        }
        let result = result.map_err(|e| match e {
            // The server is gone: the program that called it fails.
            Failure::Gone(m) => ToolError::Unavailable(m),
            Failure::Error(m) | Failure::Late(m) => ToolError::Failed(m),
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
