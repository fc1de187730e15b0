//! `spillway mcp serve`: an MCP server of spillway's own, on stdio.
//!
//! Tools: `run` (a shell command: its stdout and stderr merged in the order
//! written, bounded by the policy, the exit status in the result, `isError`
//! when it is not 0), `run_code` (a JavaScript program that calls the
//! other tools with `await tools.<name>(args)`; see `spillway-code`),
//! `spill_read` and `spill_grep`. Stored objects are also resources
//! (`spillway://<id>`). Cancelling a `run_code` call stops its program and
//! the commands its nested calls run.
//!
//! Calls of tools and resource reads run on [`MAX_CONCURRENT_CALLS`]
//! worker threads, so a long command never delays a `ping` or another
//! call; everything else is answered at once. `notifications/cancelled`
//! kills a running command's process group (or drops a call not yet
//! started), and a cancelled request gets no response, as the protocol
//! asks. At the end of the input, the calls already received are finished
//! and answered.

use std::io::{self, BufRead, Write};
use std::sync::Arc;

use serde_json::{json, Value};
use spillway::Spiller;

use spillway_registry::events::SessionLog;
use spillway_registry::tools::Bash;
use spillway_registry::{Registry, ToolCall};

use crate::front::{self, Answer, Answers, CallRef};
use crate::rpc::{self, Out};
use crate::tools::ToolNames;

pub use crate::front::{MAX_CONCURRENT_CALLS, PROTOCOL_VERSIONS};

/// How [`serve_with`] serves.
#[derive(Debug)]
#[non_exhaustive]
pub struct ServeOptions {
    /// The spill stage; its templates should name the spill tools
    /// (`ToolNames::with_prefix("").templates()`).
    pub spiller: Spiller,
    /// The limits of each `run_code` program.
    pub limits: spillway_code::Limits,
    /// Where each call, its nested calls' dispatch events and its result
    /// are appended, in the registry's session-log format; none when
    /// `None`.
    pub session_log: Option<Arc<SessionLog>>,
    /// A signal number set by the caller's signal handler (0 for none):
    /// the server then stops reading, cancels every call (the commands
    /// they run are killed, with their process groups), and returns once
    /// they ended.
    pub forward: Option<spillway_process::Cancel>,
    /// Where notes for a person go (an unreachable server, a renamed
    /// tool, a line that is not JSON); dropped by default.
    pub diagnostics: crate::Diagnostics,
}

impl ServeOptions {
    /// Default limits, no session log.
    pub fn new(spiller: Spiller) -> Self {
        ServeOptions {
            spiller,
            limits: spillway_code::Limits::default(),
            session_log: None,
            forward: None,
            diagnostics: crate::Diagnostics::none(),
        }
    }
}

/// The registry behind `run_code` (and `spillway code`): `run_code` on the
/// JavaScript runtime with `limits`, and the tools its programs call:
/// `run`, `spill_read` and `spill_grep`.
///
/// # Errors
///
/// [`spillway::PolicyError`] when the policy does not fit the store.
pub fn code_registry(
    spiller: &Spiller,
    log: Arc<SessionLog>,
    limits: spillway_code::Limits,
) -> Result<Registry, spillway::PolicyError> {
    crate::code::registry(spiller, log, limits)
}

/// What every call is answered with.
struct Server {
    spiller: Spiller,
    names: ToolNames,
    registry: Registry,
    /// The tools a call may name: `run_code`, `run` and the spill tools.
    tools: Vec<String>,
    /// This session's name, in front of every call id it records.
    session: String,
    diagnostics: crate::Diagnostics,
}

/// Serves until `input` ends. `spiller`'s templates should name the spill
/// tools (`ToolNames::with_prefix("").templates()`).
///
/// # Errors
///
/// When `output` fails.
pub fn serve(
    spiller: &Spiller,
    input: Box<dyn BufRead + Send>,
    output: Box<dyn Write + Send>,
) -> io::Result<()> {
    serve_with(&ServeOptions::new(spiller.clone()), input, output)
}

/// [`serve`] with options: `run_code`'s limits, a session log, and the
/// signal that stops the server.
///
/// # Errors
///
/// When `output` fails.
pub fn serve_with(
    opts: &ServeOptions,
    input: Box<dyn BufRead + Send>,
    output: Box<dyn Write + Send>,
) -> io::Result<()> {
    let spiller = &opts.spiller;
    let out = Out::new(output);
    let names = ToolNames::with_prefix("");
    let log = opts
        .session_log
        .clone()
        .unwrap_or_else(|| Arc::new(SessionLog::discard()));
    let registry =
        crate::code::registry(spiller, log, opts.limits.clone()).map_err(io::Error::other)?;
    let tools = ["run_code", "run", &names.read, &names.grep]
        .map(str::to_owned)
        .to_vec();
    let server = Arc::new(Server {
        spiller: spiller.clone(),
        names,
        registry,
        tools,
        session: front::session_id(),
        diagnostics: opts.diagnostics.clone(),
    });
    let forward = opts.forward.clone();
    let mut next = front::client_lines(input, forward.clone());
    // At the input's end the calls received are finished and answered; at
    // a signal they are cancelled.
    let signalled = || {
        forward
            .as_ref()
            .is_some_and(spillway_process::Cancel::is_cancelled)
    };
    front::serve(server, &mut next, &out, &signalled)
}

impl Answers for Server {
    fn answer(&self, method: &str, params: &Value, call: CallRef<'_>) -> Answer {
        answer(self, method, params, call)
    }
}

fn answer(srv: &Server, method: &str, params: &Value, call: CallRef<'_>) -> Answer {
    if let Some(a) = front::common(method, params, &srv.spiller) {
        return a;
    }
    match method {
        "initialize" => Ok(front::initialize(
            params,
            "spillway",
            "run executes a shell command; long output comes back as a bounded head and tail with a notice, and spill_read and spill_grep read the rest. run_code runs a JavaScript program that calls these tools with await tools.<name>(args) and gets their complete output.",
            false,
        )),
        "tools/list" => {
            let mut list = vec![run_definition(), front::run_code_definition(&srv.registry, "")];
            list.extend(srv.names.definitions());
            Ok(json!({"tools": list}))
        }
        "tools/call" => {
            let (name, args) = rpc::call_parts(params);
            // Every tool, `run` and the spill tools too, is the registry's:
            // its pipeline, its session log, one implementation each.
            if !srv.tools.iter().any(|t| t == name) {
                return Err((rpc::INVALID_PARAMS, format!("unknown tool: {name}")));
            }
            let call_id = front::call_id(&srv.session, call);
            let tc = ToolCall::new(call_id, name, args);
            Ok(front::call_registry(
                &srv.registry,
                &tc,
                call,
                &srv.diagnostics,
                "mcp serve",
            ))
        }
        other => Err((rpc::METHOD_NOT_FOUND, format!("Method not found: {other}"))),
    }
}

fn run_definition() -> Value {
    json!({
        "name": "run",
        "title": "Run a shell command",
        "description": "Runs a command with sh -c. Its stdout and stderr come back merged, in the order written; long output comes back as its first and last lines with a notice saying exactly what was left out and how to read it (spill_read, spill_grep). The exit status is in the result, and a failing command is an error result.",
        "inputSchema": Bash::schema(),
        "annotations": {"destructiveHint": true, "openWorldHint": true}
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufReader, Read};
    use std::os::unix::net::UnixStream;
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    /// A server on a socket pair: what the test writes, and the lines the
    /// server answers, as they come.
    fn start() -> (
        UnixStream,
        mpsc::Receiver<Value>,
        std::thread::JoinHandle<()>,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = spillway::Store::open(dir.path().join("store")).unwrap();
        let policy = spillway::Policy::builder()
            .templates(ToolNames::with_prefix("").templates())
            .build()
            .unwrap();
        let spiller = Spiller::new(policy, store).unwrap();
        let (ours, theirs) = UnixStream::pair().unwrap();
        let (mut from_server, to_server_out) = UnixStream::pair().unwrap();
        let server = std::thread::spawn(move || {
            let _dir = dir;
            serve(
                &spiller,
                Box::new(BufReader::new(theirs)),
                Box::new(to_server_out),
            )
            .unwrap();
        });
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut all = String::new();
            let mut buf = [0u8; 4096];
            loop {
                let n = from_server.read(&mut buf).unwrap_or(0);
                if n == 0 {
                    return;
                }
                all.push_str(&String::from_utf8_lossy(&buf[..n]));
                while let Some(i) = all.find('\n') {
                    let line: String = all.drain(..=i).collect();
                    let _ = tx.send(serde_json::from_str(&line).unwrap());
                }
            }
        });
        (ours, rx, server)
    }

    fn send(to: &mut UnixStream, v: Value) {
        to.write_all(format!("{v}\n").as_bytes()).unwrap();
    }

    /// Every request is answered: a batch (2025-03-26) with one array,
    /// holding the answers of its requests and none for its notifications;
    /// messages that are not requests with -32600 under their id, or null.
    #[test]
    fn batches_are_answered_together_and_invalid_requests_with_32600() {
        let (mut to, answers, server) = start();
        let next = || answers.recv_timeout(Duration::from_secs(30)).unwrap();
        send(
            &mut to,
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                              "clientInfo": {"name": "t", "version": "1"}}}),
        );
        assert_eq!(next()["result"]["protocolVersion"], "2025-03-26");
        send(
            &mut to,
            json!([{"jsonrpc": "2.0", "id": 2, "method": "ping"}]),
        );
        assert_eq!(next(), json!([{"jsonrpc": "2.0", "id": 2, "result": {}}]));
        // A request a worker runs, a quick one and a notification together.
        send(
            &mut to,
            json!([
                {"jsonrpc": "2.0", "id": "a", "method": "tools/call",
                 "params": {"name": "run", "arguments": {"command": "echo batched"}}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": "b", "method": "ping"}
            ]),
        );
        let batch = next();
        let items = batch.as_array().unwrap();
        assert_eq!(items.len(), 2, "{batch}");
        let by_id = |id: &str| items.iter().find(|a| a["id"] == id).unwrap().clone();
        assert_eq!(by_id("b")["result"], json!({}));
        assert_eq!(
            by_id("a")["result"]["content"][0]["text"],
            "batched\n",
            "{batch}"
        );
        for (msg, id) in [
            (json!({"id": 3, "method": 5}), json!(3)),
            (json!(42), Value::Null),
            (json!("x"), Value::Null),
            (
                json!({"jsonrpc": "2.0", "id": [1], "method": "ping"}),
                Value::Null,
            ),
            (json!({"jsonrpc": "2.0", "id": 4}), json!(4)),
            (json!([]), Value::Null),
        ] {
            send(&mut to, msg.clone());
            let a = next();
            assert_eq!(a["error"]["code"], -32600, "{msg}: {a}");
            assert_eq!(a["id"], id, "{msg}: {a}");
        }
        // A batch of notifications alone gets nothing back: the next
        // answer is the ping's.
        send(
            &mut to,
            json!([{"jsonrpc": "2.0", "method": "notifications/initialized"}]),
        );
        send(
            &mut to,
            json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}),
        );
        assert_eq!(next()["id"], 9);
        drop(to);
        server.join().unwrap();
    }

    #[test]
    fn a_long_call_delays_no_ping_and_a_cancelled_one_is_killed_and_not_answered() {
        let (mut to, answers, server) = start();
        let t = Instant::now();
        send(
            &mut to,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "run", "arguments": {"command": "sleep 30; echo done"}}}),
        );
        send(
            &mut to,
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "run", "arguments": {"command": "echo quick"}}}),
        );
        send(
            &mut to,
            json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}),
        );
        let mut got = Vec::new();
        for _ in 0..2 {
            got.push(answers.recv_timeout(Duration::from_secs(20)).unwrap());
        }
        let ids: Vec<i64> = got.iter().map(|a| a["id"].as_i64().unwrap()).collect();
        assert!(ids.contains(&2) && ids.contains(&3), "{got:?}");
        assert!(t.elapsed() < Duration::from_secs(10));
        // Cancelled: the command's group is killed, and no answer comes.
        send(
            &mut to,
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": 1, "reason": "the user changed their mind"}}),
        );
        send(
            &mut to,
            json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}),
        );
        let a = answers.recv_timeout(Duration::from_secs(20)).unwrap();
        assert_eq!(a["id"], 4);
        drop(to);
        // The input ended: the server returns once the calls are done,
        // which the killed `sleep 30` no longer holds up.
        server.join().unwrap();
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "the cancelled command ran on"
        );
        assert!(answers.recv_timeout(Duration::from_secs(1)).is_err());
    }

    #[test]
    fn a_cancelled_program_stops_with_the_command_it_runs() {
        let (mut to, answers, server) = start();
        let t = Instant::now();
        // A program busy in a nested command, and one busy in a loop.
        send(
            &mut to,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "run_code", "arguments": {"code": "await tools.run({command: 'sleep 30'})"}}}),
        );
        send(
            &mut to,
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "run_code", "arguments": {"code": "while (true) {}"}}}),
        );
        std::thread::sleep(Duration::from_millis(500));
        for id in [1, 2] {
            send(
                &mut to,
                json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": id}}),
            );
        }
        send(
            &mut to,
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                   "params": {"name": "run_code", "arguments": {"code": "return 'next'"}}}),
        );
        let a = answers.recv_timeout(Duration::from_secs(20)).unwrap();
        assert_eq!(a["id"], 3);
        assert_eq!(a["result"]["content"][0]["text"], "next");
        drop(to);
        server.join().unwrap();
        // Both stopped well before their 30 s.
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
        assert!(answers.recv_timeout(Duration::from_secs(1)).is_err());
    }

    #[test]
    fn calls_beyond_the_limit_wait_their_turn_and_all_are_answered() {
        let (mut to, answers, server) = start();
        let n = MAX_CONCURRENT_CALLS + 4;
        for i in 0..n {
            send(
                &mut to,
                json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                       "params": {"name": "run", "arguments": {"command": format!("sleep 0.2; echo {i}")}}}),
            );
        }
        drop(to);
        server.join().unwrap();
        let mut ids: Vec<u64> = answers
            .try_iter()
            .map(|a| {
                let text = a["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .to_owned();
                let id = a["id"].as_u64().unwrap();
                assert_eq!(text, format!("{id}\n"));
                id
            })
            .collect();
        ids.sort_unstable();
        assert_eq!(ids, (0..n as u64).collect::<Vec<_>>());
    }
}
