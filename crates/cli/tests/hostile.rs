//! The Code Mode proxy and `mcp serve` in front of hostile servers and
//! programs: every call answers within its limit plus half a second, and
//! no process that spillway started outlives it.
//!
//! The servers are `fixtures/hostile_server.py`, a small stdio server with
//! one misbehaviour a mode.

#[path = "../../../tests/support/mod.rs"]
mod support;

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::spillway_cmd;

/// How much later than its limit a call may answer.
const SLACK: Duration = Duration::from_millis(500);

fn server_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hostile_server.py")
}

/// Waits up to five seconds for every pid to be gone.
fn assert_gone(pids: &[u32], what: &str) {
    let left = support::still_alive_after(pids, Duration::from_secs(5));
    assert!(
        left.is_empty(),
        "{what}: processes {left:?} outlived spillway"
    );
}

/// A client of a spillway MCP server.
struct Client {
    child: Child,
    to: Option<ChildStdin>,
    from: mpsc::Receiver<Value>,
    next: u64,
    _dir: tempfile::TempDir,
    dir: PathBuf,
}

impl Client {
    /// `spillway mcp ARGS…`, initialized.
    fn start(args: &[&str]) -> Client {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        let mut child = spillway_cmd()
            .arg("--store")
            .arg(path.join("store"))
            .arg("mcp")
            .args(
                args.iter()
                    .map(|a| a.replace("{dir}", &path.to_string_lossy())),
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let to = child.stdin.take();
        let out = child.stdout.take().unwrap();
        let (tx, from) = mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines() {
                let Ok(line) = line else { return };
                let v: Value = serde_json::from_str(&line).unwrap_or(json!({"unparsed": line}));
                if tx.send(v).is_err() {
                    return;
                }
            }
        });
        let mut c = Client {
            child,
            to,
            from,
            next: 0,
            _dir: dir,
            dir: path,
        };
        let init = c.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}),
            Duration::from_secs(10),
        );
        assert!(init.get("result").is_some(), "{init}");
        c.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        c
    }

    fn send(&mut self, v: &Value) {
        let to = self.to.as_mut().unwrap();
        writeln!(to, "{v}").unwrap();
        to.flush().unwrap();
    }

    /// Sends a request and waits up to `within` for its answer (skipping
    /// notifications); the answer, or `{"late": …}`.
    fn request(&mut self, method: &str, params: Value, within: Duration) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.answer(id, within)
    }

    fn answer(&mut self, id: u64, within: Duration) -> Value {
        let until = Instant::now() + within;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.from.recv_timeout(left) {
                Ok(v) if v.get("id") == Some(&json!(id)) => return v,
                Ok(_) => {}
                Err(_) => return json!({"late": method_name(id)}),
            }
        }
    }

    /// A `run_code` call: its text and whether it is an error, and how
    /// long it took.
    fn run_code(&mut self, code: &str, within: Duration) -> (String, bool, Duration) {
        let t = Instant::now();
        let v = self.request(
            "tools/call",
            json!({"name": "run_code", "arguments": {"code": code}}),
            within,
        );
        let took = t.elapsed();
        let result = v.get("result").unwrap_or_else(|| panic!("no answer: {v}"));
        let text = result["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n");
        (text, result["isError"] == json!(true), took)
    }

    /// The pids in a server's pid file (itself and its grandchild).
    fn server_pids(&self, name: &str) -> Vec<u32> {
        std::fs::read_to_string(self.dir.join(name))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    /// SIGTERM to the proxy: it exits 128 + 15, and the server it started
    /// (the pids in `server.pid`: itself and its grandchild) is gone.
    fn terminate_with_server(self, what: &str) {
        let pids = self.server_pids("server.pid");
        assert!(!pids.is_empty(), "{what}: the server never started");
        assert_eq!(self.terminate(), Some(128 + 15), "{what}");
        assert_gone(&pids, what);
    }

    /// SIGTERM, then the exit status, within five seconds.
    fn terminate(mut self) -> Option<i32> {
        // SAFETY: kill sends a signal to our own child.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(5) {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        panic!("spillway did not exit within 5 s of SIGTERM");
    }
}

fn method_name(id: u64) -> String {
    format!("no answer to request {id} in time")
}

fn proxy(mode: &str, timeout: &str) -> Client {
    let script = server_script();
    Client::start(&[
        "proxy",
        "--code-mode",
        "--timeout",
        timeout,
        "--kill-grace",
        "1s",
        "--",
        "python3",
        &script.to_string_lossy(),
        mode,
        "{dir}/server.pid",
        "{dir}/ready",
    ])
}

/// Every kind of hostile upstream: `run_code` answers within its limit
/// plus half a second (a program that calls no tool answers with its
/// value), `tools/list` answers and names the server unavailable, and at
/// SIGTERM the proxy exits 143 with the server and its grandchild gone.
#[test]
fn every_hostile_upstream_is_answered_in_time_and_stopped() {
    let limit = Duration::from_secs(2);
    for mode in ["no-init", "no-list", "loop-cursor", "dies", "flood"] {
        let mut c = proxy(mode, "2s");
        let (text, is_error, took) = c.run_code("return 1 + 1", limit + Duration::from_secs(30));
        assert!(took <= limit + SLACK, "{mode}: run_code took {took:?}");
        assert!(!is_error, "{mode}: {text}");
        assert_eq!(text, "2", "{mode}");
        // Again: a server that failed is tried again, briefly.
        let (text, _, took) = c.run_code("return 'ok'", limit + Duration::from_secs(30));
        assert!(
            took <= limit + SLACK,
            "{mode}: the second run_code took {took:?}"
        );
        assert_eq!(text, "ok", "{mode}");
        let t = Instant::now();
        let list = c.request("tools/list", json!({}), limit + Duration::from_secs(30));
        assert!(
            t.elapsed() <= limit + SLACK,
            "{mode}: tools/list took {:?}",
            t.elapsed()
        );
        let description = list["result"]["tools"][0]["description"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if mode != "flood" {
            assert!(
                description.contains("Not available now"),
                "{mode}: {description}"
            );
        }
        c.terminate_with_server(mode);
    }
}

/// A server that stops reading its input: a call that writes a megabyte
/// to it fails within the limit, the server is stopped, and so is the
/// proxy at SIGTERM, with nothing left running.
#[test]
fn an_upstream_that_stops_reading_costs_a_call_its_limit_and_no_more() {
    let limit = Duration::from_secs(2);
    let mut c = proxy("no-read", "2s");
    let (text, is_error, took) = c.run_code(
        "return await tools.echo({s: 'x'.repeat(1e6)})",
        limit + Duration::from_secs(30),
    );
    assert!(took <= limit + SLACK, "run_code took {took:?}");
    assert!(is_error, "{text}");
    c.terminate_with_server("no-read");
}

/// A server that failed to start is tried again at the next listing: once
/// it can start, its tools are listed and a program calls them.
#[test]
fn a_server_that_failed_to_start_is_tried_again() {
    let mut c = proxy("until-file", "5s");
    let first = c.request("tools/list", json!({}), Duration::from_secs(10));
    let description = first["result"]["tools"][0]["description"].as_str().unwrap();
    assert!(description.contains("Not available now"), "{description}");
    let (text, _, _) = c.run_code(
        "return Object.keys(tools).includes('echo')",
        Duration::from_secs(10),
    );
    assert_eq!(text, "false");
    std::fs::write(c.dir.join("ready"), "").unwrap();
    let again = c.request("tools/list", json!({}), Duration::from_secs(10));
    let description = again["result"]["tools"][0]["description"].as_str().unwrap();
    assert!(!description.contains("Not available now"), "{description}");
    assert!(description.contains("echo"), "{description}");
    let (text, is_error, _) = c.run_code(
        "return await tools.echo({s: 'back'})",
        Duration::from_secs(10),
    );
    assert!(!is_error, "{text}");
    assert_eq!(text, "echo:back");
    c.terminate_with_server("until-file");
}

/// With `--present both`, an upstream tool named like one of spillway's
/// is listed once under a name with its server's in front, and a program
/// reaches both.
#[test]
fn tool_names_are_unique_when_an_upstream_tool_clashes() {
    let script = server_script();
    let mut c = Client::start(&[
        "proxy",
        "--code-mode",
        "--present",
        "both",
        "--",
        "python3",
        &script.to_string_lossy(),
        "clash",
        "{dir}/server.pid",
    ]);
    let list = c.request("tools/list", json!({}), Duration::from_secs(10));
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "{names:?}");
    for n in [
        "run_code",
        "spillway_spill_read",
        "echo",
        "python3_run_code",
        "python3_spill_read",
    ] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
    let (text, is_error, _) = c.run_code(
        "return await tools.python3_spill_read({s: 'theirs'})",
        Duration::from_secs(10),
    );
    assert!(!is_error, "{text}");
    assert_eq!(text, "spill_read:theirs");
    let direct = c.request(
        "tools/call",
        json!({"name": "python3_run_code", "arguments": {"s": "direct"}}),
        Duration::from_secs(10),
    );
    assert_eq!(
        direct["result"]["content"][0]["text"], "run_code:direct",
        "{direct}"
    );
    c.terminate_with_server("clash");
}

/// An upstream tool whose schema refers back to itself eight times over
/// (about 200 bytes, which once made a 74 MB declaration): `run_code`'s
/// description stays small, and the tool works.
#[test]
fn a_recursive_schema_cannot_blow_up_the_declaration() {
    let mut c = proxy("recursive", "10s");
    let t = Instant::now();
    let list = c.request("tools/list", json!({}), Duration::from_secs(30));
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    let description = list["result"]["tools"][0]["description"].as_str().unwrap();
    assert!(description.contains("echo(args: {"), "{description}");
    assert!(description.len() < 200_000, "{} bytes", description.len());
    let (text, is_error, _) = c.run_code(
        "return await tools.echo({s: 'ok'})",
        Duration::from_secs(30),
    );
    assert!(!is_error, "{text}");
    assert_eq!(text, "echo:ok");
    c.terminate_with_server("recursive");
}

/// SIGTERM to `mcp serve` stops the commands its calls run, top-level and
/// nested, and it exits 128 + 15.
#[test]
fn sigterm_to_mcp_serve_stops_every_command_it_runs() {
    let mut c = Client::start(&["serve"]);
    let marker = c.dir.join("pids");
    let m = marker.to_string_lossy().into_owned();
    c.next += 1;
    let run_id = c.next;
    c.send(&json!({"jsonrpc": "2.0", "id": run_id, "method": "tools/call",
        "params": {"name": "run", "arguments": {"command": format!("echo $$ >> '{m}'; exec sleep 32")}}}));
    c.next += 1;
    let code_id = c.next;
    let program = format!("await tools.run({{command: \"echo $$ >> '{m}'; exec sleep 31\"}})");
    c.send(
        &json!({"jsonrpc": "2.0", "id": code_id, "method": "tools/call",
        "params": {"name": "run_code", "arguments": {"code": program}}}),
    );
    let t = Instant::now();
    let pids = loop {
        let pids: Vec<u32> = std::fs::read_to_string(&marker)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        if pids.len() == 2 || t.elapsed() > Duration::from_secs(10) {
            break pids;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(pids.len(), 2, "both commands started");
    assert_eq!(c.terminate(), Some(128 + 15));
    assert_gone(&pids, "mcp serve");
}

/// Two `mcp serve` sessions appending to one session log, each calling
/// `run_code` with request id 1: every call id and nested call id in the
/// log is its own.
#[test]
fn sessions_sharing_a_log_record_distinct_call_ids() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("same.jsonl");
    let log_arg = log.to_string_lossy().into_owned();
    for _ in 0..2 {
        let mut c = Client::start(&["serve", "--session-log", &log_arg]);
        let (text, is_error, _) = c.run_code(
            "return await tools.run({command: 'echo hi'})",
            Duration::from_secs(30),
        );
        assert!(!is_error, "{text}");
        drop(c.to.take());
        c.child.wait().unwrap();
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let mut ids = Vec::new();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        match v["type"].as_str() {
            Some("tool/call") => ids.push(v["callId"].as_str().unwrap().to_owned()),
            Some("tool/code-dispatch-start") => {
                ids.push(v["subCallId"].as_str().unwrap().to_owned())
            }
            _ => {}
        }
    }
    assert_eq!(ids.len(), 4, "{text}");
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
}
