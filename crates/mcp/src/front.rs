//! What spillway's two MCP servers (`mcp serve` and `mcp proxy
//! --code-mode`) share: the loop that reads the client, answers at once
//! what is quick and runs calls on a pool of workers, cancellation, and the
//! answers that are the same for both.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use spillway_process::stop::SIGKILL;
use spillway_process::Cancel;

use serde_json::{json, Value};
use spillway::Spiller;
use spillway_registry::{Registry, ToolCall};

use crate::rpc::{self, Out};
use crate::tools;

/// The protocol revisions the servers answer with the `initialize`
/// handshake, oldest first.
pub const PROTOCOL_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// How many calls (tools, lists, resource reads) run at once; more wait
/// their turn.
pub const MAX_CONCURRENT_CALLS: usize = 8;

/// A worker's call: the request's id, and its cancellation signal.
pub(crate) type CallRef<'a> = Option<(&'a Value, &'a Cancel)>;

/// An answer, or a JSON-RPC error's code and message.
pub(crate) type Answer = Result<Value, (i64, String)>;

/// A server: what it answers to each request.
pub(crate) trait Answers: Send + Sync + 'static {
    /// The answer to `method`; `call` is set for a request a worker runs.
    fn answer(&self, method: &str, params: &Value, call: CallRef<'_>) -> Answer;
}

/// A call received and not answered yet.
struct Call {
    /// Raised to stop what the call runs (its command gets the signal).
    signal: Cancel,
    cancelled: AtomicBool,
}

/// A call on its way to a worker.
struct Job {
    id: Value,
    method: String,
    params: Value,
    call: Arc<Call>,
    /// The batch the request came in, whose answers go back together.
    batch: Option<Arc<Batch>>,
}

/// A JSON-RPC batch being answered: its answers are sent as one array
/// when the last of its messages is done.
struct Batch {
    answers: Mutex<Vec<Value>>,
    left: AtomicUsize,
}

impl Batch {
    /// One message of the batch is done, with its answer if it has one.
    fn done(&self, out: &Out, answer: Option<Value>) -> std::io::Result<()> {
        if let Some(a) = answer {
            lock(&self.answers).push(a);
        }
        if self.left.fetch_sub(1, Ordering::SeqCst) == 1 {
            let all = std::mem::take(&mut *lock(&self.answers));
            if !all.is_empty() {
                return out.send(&Value::Array(all));
            }
        }
        Ok(())
    }
}

/// The answer to request `id` as a message.
fn response(id: &Value, answer: Answer) -> Value {
    match answer {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
        }
    }
}

/// Sends an answer, alone or as part of its batch.
fn reply(out: &Out, batch: Option<&Arc<Batch>>, answer: Option<Value>) -> std::io::Result<()> {
    match batch {
        Some(b) => b.done(out, answer),
        None => answer.map_or(Ok(()), |a| out.send(&a)),
    }
}

/// What one message from the client is.
enum Incoming<'a> {
    /// A request: answered.
    Request(&'a Value, &'a str, Value),
    /// A notification: never answered.
    Notification(&'a str, Value),
    /// A response (these servers send no requests), ignored.
    Response,
    /// Not a request: answered with `INVALID_REQUEST` under its id (or
    /// null), and why.
    Invalid(Value, &'static str),
}

/// Sorts a message as JSON-RPC 2.0 says: a request has a string
/// `method` and a string or number `id`; a notification has no `id`.
fn classify(msg: &Value) -> Incoming<'_> {
    let Some(obj) = msg.as_object() else {
        return Incoming::Invalid(Value::Null, "a message must be a JSON object");
    };
    let id = obj.get("id");
    let good_id = match id {
        None => None,
        Some(v @ (Value::String(_) | Value::Number(_))) => Some(v),
        Some(_) => {
            return Incoming::Invalid(Value::Null, "an id must be a string or a number");
        }
    };
    let params = obj.get("params").cloned().unwrap_or(Value::Null);
    match (obj.get("method"), good_id) {
        (Some(Value::String(m)), Some(id)) => Incoming::Request(id, m, params),
        (Some(Value::String(m)), None) => Incoming::Notification(m, params),
        (Some(_), id) => Incoming::Invalid(
            id.cloned().unwrap_or(Value::Null),
            "the method must be a string",
        ),
        (None, _) if obj.contains_key("result") || obj.contains_key("error") => Incoming::Response,
        (None, id) => Incoming::Invalid(
            id.cloned().unwrap_or(Value::Null),
            "a request needs a method",
        ),
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Serves the lines `next` gives (`None`: the input ended, or the server
/// must stop) until they end. Tool calls, tool lists and resource reads
/// run on [`MAX_CONCURRENT_CALLS`] workers, so a long call delays no
/// `ping` and no other call; the rest is answered at once.
/// `notifications/cancelled` stops a running call (a command it runs is
/// killed) or drops one not started, and a cancelled request gets no
/// answer. When `next` ends, the calls received are answered, unless
/// `stop()` says to stop: then they are cancelled.
///
/// # Errors
///
/// When `out` fails.
pub(crate) fn serve(
    server: Arc<dyn Answers>,
    next: &mut dyn FnMut() -> Option<Vec<u8>>,
    out: &Out,
    stop: &dyn Fn() -> bool,
) -> std::io::Result<()> {
    let calls: Arc<Mutex<HashMap<String, Arc<Call>>>> = Arc::default();
    let (jobs_tx, jobs_rx) = mpsc::channel::<Job>();
    let jobs_rx = Arc::new(Mutex::new(jobs_rx));
    let workers: Vec<_> = (0..MAX_CONCURRENT_CALLS)
        .map(|_| {
            let (jobs, calls, out, server) =
                (jobs_rx.clone(), calls.clone(), out.clone(), server.clone());
            std::thread::spawn(move || loop {
                let job = match lock(&jobs).recv() {
                    Ok(j) => j,
                    Err(_) => return,
                };
                let answer = (!job.call.cancelled.load(Ordering::SeqCst)).then(|| {
                    server.answer(&job.method, &job.params, Some((&job.id, &job.call.signal)))
                });
                lock(&calls).remove(&job.id.to_string());
                // A cancelled request gets no answer. The input's end stops
                // the server; a failed write here only loses an answer
                // nobody reads.
                let answer = answer
                    .filter(|_| !job.call.cancelled.load(Ordering::SeqCst))
                    .map(|a| response(&job.id, a));
                let _ = reply(&out, job.batch.as_ref(), answer);
            })
        })
        .collect();
    // One message: answered at once (`Some(Some(answer))`), needing no
    // answer (`Some(None)`), or queued for a worker, which answers it
    // (`None`).
    let handle = |msg: &Value, batch: Option<&Arc<Batch>>| -> Option<Option<Value>> {
        let (id, method, params) = match classify(msg) {
            Incoming::Request(id, method, params) => (id, method, params),
            Incoming::Notification(method, params) => {
                // Only a cancellation asks for something.
                if method == "notifications/cancelled" {
                    if let Some(target) = params.get("requestId") {
                        if let Some(call) = lock(&calls).get(&target.to_string()) {
                            call.cancelled.store(true, Ordering::SeqCst);
                            call.signal.raise(SIGKILL);
                        }
                    }
                }
                return Some(None);
            }
            Incoming::Response => return Some(None),
            Incoming::Invalid(id, why) => {
                return Some(Some(response(
                    &id,
                    Err((rpc::INVALID_REQUEST, format!("Invalid Request: {why}"))),
                )))
            }
        };
        if matches!(method, "tools/call" | "tools/list" | "resources/read") {
            let call = Arc::new(Call {
                signal: Cancel::new(),
                cancelled: AtomicBool::new(false),
            });
            lock(&calls).insert(id.to_string(), call.clone());
            let job = Job {
                id: id.clone(),
                method: method.to_owned(),
                params,
                call,
                batch: batch.cloned(),
            };
            // The workers outlive this loop: the send cannot fail.
            return match jobs_tx.send(job) {
                Ok(()) => None,
                Err(e) => Some(Some(response(
                    &e.0.id,
                    Err((rpc::INTERNAL_ERROR, "the server is stopping".into())),
                ))),
            };
        }
        Some(Some(response(id, server.answer(method, &params, None))))
    };
    let mut failed = Ok(());
    while let Some(raw) = next() {
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
        failed = match msg {
            // A batch (the 2025-03-26 revision): its answers go back as one
            // array once every request in it is answered.
            Value::Array(items) if !items.is_empty() => {
                let batch = Arc::new(Batch {
                    answers: Mutex::new(Vec::new()),
                    left: AtomicUsize::new(items.len()),
                });
                let mut r = Ok(());
                for item in &items {
                    // `None`: queued, and its worker tells the batch.
                    if let Some(answer) = handle(item, Some(&batch)) {
                        r = r.and(batch.done(out, answer));
                    }
                }
                r
            }
            Value::Array(_) => out.send(&response(
                &Value::Null,
                Err((
                    rpc::INVALID_REQUEST,
                    "Invalid Request: an empty batch".into(),
                )),
            )),
            msg => match handle(&msg, None) {
                Some(Some(answer)) => out.send(&answer),
                Some(None) | None => Ok(()),
            },
        };
        if failed.is_err() {
            break;
        }
    }
    drop(jobs_tx);
    if stop() {
        // Stopping: what runs is cancelled (a command it runs is killed).
        for call in lock(&calls).values() {
            call.signal.raise(SIGKILL);
        }
    }
    for w in workers {
        let _ = w.join();
    }
    failed
}

/// The client's lines, read on a thread of their own so that a signal is
/// seen while the client is silent: the returned function gives the next
/// line, or `None` at the end of the input or once `signal` is raised
/// (within 100 ms of it). Both servers read their client this way.
pub(crate) fn client_lines(
    input: Box<dyn std::io::BufRead + Send>,
    signal: Option<Cancel>,
) -> impl FnMut() -> Option<Vec<u8>> {
    let (lines_tx, lines_rx) = mpsc::sync_channel::<Vec<u8>>(64);
    // The thread ends at the input's end, or at the next line once nobody
    // takes the lines any more; a process that stops on a signal does not
    // wait for it.
    let _ = std::thread::Builder::new()
        .name("mcp client input".into())
        .spawn(move || {
            let mut input = input;
            let mut line = Vec::new();
            while let Some(raw) = rpc::next_line(&mut *input, &mut line) {
                if lines_tx.send(raw.to_vec()).is_err() {
                    return;
                }
            }
        });
    move || loop {
        if signal.as_ref().is_some_and(Cancel::is_cancelled) {
            return None;
        }
        match lines_rx.recv_timeout(std::time::Duration::from_millis(100)) {
            Ok(raw) => return Some(raw),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return None,
        }
    }
}

/// The `initialize` answer: the client's protocol revision when this
/// server speaks it, else the newest.
pub(crate) fn initialize(
    params: &Value,
    name: &str,
    instructions: &str,
    list_changed: bool,
) -> Value {
    let asked = params
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let version = if PROTOCOL_VERSIONS.contains(&asked) {
        asked
    } else {
        PROTOCOL_VERSIONS[PROTOCOL_VERSIONS.len() - 1]
    };
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": list_changed}, "resources": {}},
        "serverInfo": {"name": name, "version": env!("CARGO_PKG_VERSION")},
        "instructions": instructions
    })
}

/// The answers both servers give alike: `ping`, and the stored objects as
/// `spillway://` resources. `None` for another method.
pub(crate) fn common(method: &str, params: &Value, spiller: &Spiller) -> Option<Answer> {
    Some(match method {
        "ping" => Ok(json!({})),
        "resources/list" => Ok(json!({"resources": []})),
        "resources/templates/list" => {
            Ok(json!({"resourceTemplates": [tools::resource_template()]}))
        }
        "resources/read" => {
            let uri = params
                .get("uri")
                .and_then(Value::as_str)
                .unwrap_or_default();
            tools::read_resource(spiller.store(), uri, spiller.policy().max_inline_bytes())
                .map_err(|e| (rpc::INVALID_PARAMS, format!("{uri}: {e}")))
        }
        _ => return None,
    })
}

/// A name for one session of a server, unique on this machine for as long
/// as pids are: `mcp-<start in ms>-<pid>-<n>`. Call ids start with it, so
/// that sessions sharing a session log never record the same id.
pub(crate) fn session_id() -> String {
    static SESSIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let n = SESSIONS.fetch_add(1, Ordering::SeqCst);
    format!("mcp-{millis}-{}-{n}", std::process::id())
}

/// The id a call is recorded by: the session's id, a colon, and the
/// request's id as text.
pub(crate) fn call_id(session: &str, call: CallRef<'_>) -> String {
    match call.map(|c| c.0) {
        Some(Value::String(s)) => format!("{session}:{s}"),
        Some(other) => format!("{session}:{other}"),
        None => session.to_owned(),
    }
}

/// `tc` through `registry` (its pipeline, its session log), cancellable
/// through `call`'s signal, as a `tools/call` result. A session log that
/// cannot be written is said to `diagnostics`, as `who`'s; the result still
/// goes back.
pub(crate) fn call_registry(
    registry: &Registry,
    tc: &ToolCall,
    call: CallRef<'_>,
    diagnostics: &crate::Diagnostics,
    who: &str,
) -> Value {
    let signal = call.map(|c| c.1.clone()).unwrap_or_default();
    let r = match registry.call_with_signal(tc, signal) {
        Ok(r) => r,
        Err(not_durable) => {
            diagnostics.say(&format!("{who}: {not_durable}"));
            *not_durable.result
        }
    };
    json!({"content": r.content, "isError": r.is_error})
}

/// `run_code`'s tool definition from `registry`: its description ends
/// with the SDK declaration of the tools its programs call, then `more`.
pub(crate) fn run_code_definition(registry: &Registry, more: &str) -> Value {
    let spec = registry
        .tools(spillway_registry::Presentation::Ptc)
        .into_iter()
        .find(|t| t.name == "run_code");
    let (description, schema) = spec
        .map(|s| (s.description.unwrap_or_default(), s.input_schema))
        .unwrap_or_default();
    json!({
        "name": "run_code",
        "title": "Run a JavaScript program that calls the tools",
        "description": format!("{description}{more}"),
        "inputSchema": schema,
        "annotations": {"destructiveHint": true, "openWorldHint": true}
    })
}
