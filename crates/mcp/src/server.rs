//! `spillway mcp serve`: an MCP server of spillway's own, on stdio.
//!
//! Tools: `run` (a shell command: its stdout and stderr merged in the order
//! written, bounded by the policy, the exit status in the result, `isError`
//! when it is not 0), `spill_read` and `spill_grep`. Stored objects are
//! also resources (`spillway://<id>`).
//!
//! Calls of tools and resource reads run on [`MAX_CONCURRENT_CALLS`]
//! worker threads, so a long command never delays a `ping` or another
//! call; everything else is answered at once. `notifications/cancelled`
//! kills a running command's process group (or drops a call not yet
//! started), and a cancelled request gets no response, as the protocol
//! asks. At the end of the input, the calls already received are finished
//! and answered.

use std::collections::HashMap;
use std::io::{self, BufRead, Write};
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use spillway::Spiller;
use spillway_process::{run_merged, RunOptions};

use crate::rpc::{self, Out};
use crate::tools::{self, ToolNames};

/// The protocol revisions this server answers with the `initialize`
/// handshake, oldest first.
pub const PROTOCOL_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// Room for `run`'s status lines after the preview.
const STATUS_ROOM: usize = 200;

/// The longest `timeout` a `run` call may ask for: one hour.
const MAX_TIMEOUT: f64 = 3600.0;

/// How many calls (tools, resource reads) run at once; more wait their
/// turn.
pub const MAX_CONCURRENT_CALLS: usize = 8;

/// SIGKILL, passed on to a cancelled command's process group.
const SIGKILL: usize = 9;

/// A call received and not yet answered.
struct Call {
    /// Set to a signal number to pass on to the command.
    signal: Arc<AtomicUsize>,
    cancelled: AtomicBool,
}

/// A call on its way to a worker.
struct Job {
    id: Value,
    method: String,
    params: Value,
    call: Arc<Call>,
}

/// Serves until `input` ends. `spiller`'s templates should name the spill
/// tools (`ToolNames::with_prefix("").templates()`).
///
/// # Errors
///
/// When `output` fails.
pub fn serve(
    spiller: &Spiller,
    input: &mut dyn BufRead,
    output: Box<dyn Write + Send>,
) -> io::Result<()> {
    let out = Out::new(output);
    let names = ToolNames::with_prefix("");
    // `run` adds a status line after the preview: its room comes out of the
    // budget when the budget can spare it.
    let run_spiller = spiller
        .with_budget(
            spiller
                .policy()
                .max_inline_bytes()
                .saturating_sub(STATUS_ROOM),
        )
        .unwrap_or_else(|_| spiller.clone());
    let calls: Arc<Mutex<HashMap<String, Arc<Call>>>> = Arc::default();
    let (jobs_tx, jobs_rx) = mpsc::channel::<Job>();
    let jobs_rx = Arc::new(Mutex::new(jobs_rx));
    let workers: Vec<_> = (0..MAX_CONCURRENT_CALLS)
        .map(|_| {
            let (jobs, calls, out) = (jobs_rx.clone(), calls.clone(), out.clone());
            let (spiller, run_spiller, names) =
                (spiller.clone(), run_spiller.clone(), names.clone());
            std::thread::spawn(move || loop {
                let job = match lock(&jobs).recv() {
                    Ok(j) => j,
                    Err(_) => return,
                };
                let answer = if job.call.cancelled.load(Ordering::SeqCst) {
                    None
                } else {
                    Some(answer(
                        &spiller,
                        &run_spiller,
                        &names,
                        &job.method,
                        &job.params,
                        Some(&job.call.signal),
                    ))
                };
                lock(&calls).remove(&job.id.to_string());
                if job.call.cancelled.load(Ordering::SeqCst) {
                    continue;
                }
                // The input's end stops the server; a failed write here
                // only loses an answer nobody reads.
                let _ = match answer {
                    Some(Ok(result)) => out.result(&job.id, result),
                    Some(Err((code, message))) => out.error(&job.id, code, &message),
                    None => Ok(()),
                };
            })
        })
        .collect();
    let mut line = Vec::new();
    let mut failed = Ok(());
    while let Some(raw) = rpc::next_line(input, &mut line) {
        let msg = match rpc::parse(raw) {
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
            // A response (to nothing: this server sends no requests).
            continue;
        };
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        let Some(id) = msg.get("id").filter(|v| !v.is_null()) else {
            // A notification: only a cancellation asks for something.
            if method == "notifications/cancelled" {
                if let Some(target) = params.get("requestId") {
                    if let Some(call) = lock(&calls).get(&target.to_string()) {
                        call.cancelled.store(true, Ordering::SeqCst);
                        call.signal.store(SIGKILL, Ordering::SeqCst);
                    }
                }
            }
            continue;
        };
        if matches!(method, "tools/call" | "resources/read") {
            let call = Arc::new(Call {
                signal: Arc::new(AtomicUsize::new(0)),
                cancelled: AtomicBool::new(false),
            });
            lock(&calls).insert(id.to_string(), call.clone());
            let job = Job {
                id: id.clone(),
                method: method.to_owned(),
                params,
                call,
            };
            if jobs_tx.send(job).is_err() {
                break;
            }
            continue;
        }
        failed = match answer(spiller, &run_spiller, &names, method, &params, None) {
            Ok(result) => out.result(id, result),
            Err((code, message)) => out.error(id, code, &message),
        };
        if failed.is_err() {
            break;
        }
    }
    // The calls received are finished and answered.
    drop(jobs_tx);
    for w in workers {
        let _ = w.join();
    }
    failed
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn answer(
    spiller: &Spiller,
    run_spiller: &Spiller,
    names: &ToolNames,
    method: &str,
    params: &Value,
    signal: Option<&Arc<AtomicUsize>>,
) -> Result<Value, (i64, String)> {
    let store = spiller.store();
    let budget = spiller.policy().max_inline_bytes();
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
                "capabilities": {"tools": {"listChanged": false}, "resources": {}},
                "serverInfo": {"name": "spillway", "version": env!("CARGO_PKG_VERSION")},
                "instructions": "run executes a shell command; long output comes back as a bounded head and tail with a notice, and spill_read and spill_grep read the rest."
            }))
        }
        "ping" => Ok(json!({})),
        "tools/list" => {
            let mut list = vec![run_definition()];
            list.extend(names.definitions());
            Ok(json!({"tools": list}))
        }
        "tools/call" => {
            let (name, args) = rpc::call_parts(params);
            if name == "run" {
                return Ok(run_tool(run_spiller, &args, signal));
            }
            names
                .call(store, budget, name, &args)
                .ok_or_else(|| (rpc::INVALID_PARAMS, format!("unknown tool: {name}")))
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

fn run_definition() -> Value {
    json!({
        "name": "run",
        "title": "Run a shell command",
        "description": "Runs a command with sh -c. Its stdout and stderr come back merged, in the order written; long output comes back as its first and last lines with a notice saying exactly what was left out and how to read it (spill_read, spill_grep). The exit status is in the result, and a failing command is an error result.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The shell command."},
                "cwd": {"type": "string", "description": "The working directory (default: the server's)."},
                "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_TIMEOUT, "description": "Seconds before the command (its whole process group) is killed."}
            },
            "required": ["command"]
        },
        "annotations": {"destructiveHint": true, "openWorldHint": true}
    })
}

/// Runs a `run` call; every failure is an error result.
fn run_tool(spiller: &Spiller, args: &Value, signal: Option<&Arc<AtomicUsize>>) -> Value {
    let Some(command) = args.get("command").and_then(Value::as_str) else {
        return tools::tool_result("run needs a string `command`".into(), true);
    };
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .stdin(std::process::Stdio::null());
    match args.get("cwd") {
        None | Some(Value::Null) => {}
        Some(Value::String(dir)) => {
            let dir = PathBuf::from(dir);
            if !dir.is_dir() {
                return tools::tool_result(
                    format!("run: cwd {}: not a directory", dir.display()),
                    true,
                );
            }
            cmd.current_dir(dir);
        }
        Some(_) => return tools::tool_result("run: `cwd` must be a string".into(), true),
    }
    let mut opts = RunOptions::default();
    opts.forward = signal.cloned();
    match args.get("timeout") {
        None | Some(Value::Null) => {}
        Some(v) => match v.as_f64() {
            Some(t) if t > 0.0 && t <= MAX_TIMEOUT => {
                opts.timeout = Some(Duration::from_secs_f64(t))
            }
            _ => {
                return tools::tool_result(
                    format!(
                    "run: `timeout` must be a number of seconds above 0 and at most {MAX_TIMEOUT}"
                ),
                    true,
                )
            }
        },
    }
    let mut stage = spiller.stage();
    let finished = run_merged(&mut cmd, &opts, &mut stage, &mut |_| {});
    let outcome = match stage.finish() {
        Ok(o) => o,
        Err(e) => e.into_outcome(),
    };
    let mut text = outcome.content;
    let (status, failed) = match finished {
        Ok(f) => {
            use std::os::unix::process::ExitStatusExt;
            let mut s = String::new();
            if f.timed_out {
                s.push_str(&format!(
                    "[killed after the {}s timeout]",
                    opts.timeout.map_or(0.0, |t| t.as_secs_f64())
                ));
            } else if let Some(code) = f.status.code() {
                if code != 0 {
                    s.push_str(&format!("[exit status {code}]"));
                }
            } else if let Some(sig) = f.status.signal() {
                s.push_str(&format!("[killed by signal {sig}]"));
            }
            if f.output_cut {
                s.push_str("[output after the command exited is not included: something it started kept the output open]");
            }
            (s, !f.status.success() || f.timed_out)
        }
        Err(e) => (format!("[{e}]"), true),
    };
    if !status.is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&status);
    }
    tools::tool_result(text, failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufReader, Read};
    use std::os::unix::net::UnixStream;
    use std::time::Instant;

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
            let mut input = BufReader::new(theirs);
            serve(&spiller, &mut input, Box::new(to_server_out)).unwrap();
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
