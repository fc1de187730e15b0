//! `spillway code`: a program from a file or stdin, its bounded result, the
//! exit status, the session log, and each limit ending the program in time
//! with the host's peak memory measured.

#[path = "../../../tests/support/mod.rs"]
mod support;

use std::io::{Read, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use support::{run_spillway, spillway_cmd};

fn code(store: &std::path::Path, args: &[&str], program: &str) -> (String, String, i32) {
    let mut all = vec!["code"];
    all.extend_from_slice(args);
    let out = run_spillway(store, &all, program.as_bytes());
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn a_program_from_stdin_or_a_file_calls_the_tools_and_prints_its_result() {
    let dir = tempfile::tempdir().unwrap();
    let (out, err, status) = code(
        dir.path(),
        &[],
        "const out = await tools.run({command: 'seq 1 3'});\nprint('got', out.trim().split('\\n').length, 'lines');\nreturn out.trim().split('\\n').map(Number);",
    );
    assert_eq!(
        (out.as_str(), status),
        ("got 3 lines\n[1,2,3]\n", 0),
        "{err}"
    );
    let file = dir.path().join("p.js");
    std::fs::write(&file, "return 'from a file'").unwrap();
    let out = spillway_cmd()
        .arg("--store")
        .arg(dir.path().join("s"))
        .arg("code")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "from a file\n");
    assert!(out.status.success());
    // A nested value is the whole output as text: a NUL stays a NUL (as
    // `find -print0` writes them), a byte that is not UTF-8 is U+FFFD.
    let (out, err, status) = code(
        dir.path(),
        &[],
        r#"const v = await tools.run({command: "printf 'a\\000b\\n'"}); const w = await tools.run({command: "printf 'c\\377d'"}); return [v.length, v.charCodeAt(1), v.split('\0'), w]"#,
    );
    assert_eq!(
        (out.as_str(), status),
        ("[4,0,[\"a\",\"b\\n\"],\"c\u{FFFD}d\"]\n", 0),
        "{err}"
    );
    // One newline after the result, whether or not the result ends with
    // one: the output less that newline is the result (an empty string
    // returned adds no part to the logs).
    for (result, printed) in [("'a'", "a\n"), ("'a\\n'", "a\n\n"), ("''", "")] {
        let (out, err, _) = code(dir.path(), &[], &format!("print('x'); return {result}"));
        assert_eq!(out, format!("x\n{printed}"), "{result}: {err}");
    }
}

#[test]
fn a_failed_program_exits_1_with_its_logs_and_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let (out, _, status) = code(dir.path(), &[], "print('so far');\nundefinedThing();");
    assert_eq!(status, 1);
    assert!(
        out.starts_with("so far\nCODE_RUN_FAILED: Uncaught ReferenceError: "),
        "{out}"
    );
    // A nested command that fails is an error the program can catch.
    let (out, _, status) = code(
        dir.path(),
        &[],
        "try { await tools.run({command: 'echo nope; exit 3'}); } catch (e) { return e.message; }",
    );
    assert_eq!((out.as_str(), status), ("nope\n[exit status 3]\n", 0));
}

#[test]
fn bad_flags_and_bad_programs_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (_, err, status) = code(dir.path(), &["--memory", "10"], "return 1");
    assert_eq!(status, 2);
    assert!(
        err.contains("memory limit must be 1 MiB to 16 GiB"),
        "{err}"
    );
    let (_, err, status) = code(dir.path(), &["--timeout", "0s"], "return 1");
    assert_eq!(status, 2, "{err}");
    // What it says is true: leaving --timeout out gives 30 s, not none.
    assert!(err.contains("leave --timeout out for 30s"), "{err}");
    assert!(!err.contains("for none"), "{err}");
    let out = run_spillway(dir.path(), &["code"], b"\xff\xfe");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not UTF-8"));
    let out = run_spillway(dir.path(), &["code", "/nonexistent/p.js"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/p.js"));
}

#[test]
fn the_result_is_bounded_by_the_policy_flags_and_the_rest_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let (out, _, status) = code(
        dir.path(),
        &["--max-inline-bytes", "2KiB"],
        "for (let i = 0; i < 100000; i++) print('line ' + i); return 'done';",
    );
    assert_eq!(status, 0);
    assert!(out.len() <= 2049, "{}", out.len());
    assert!(
        out.starts_with("line 0\n") && out.ends_with("done\n"),
        "{out}"
    );
    let id = out
        .split_whitespace()
        .find(|w| w.starts_with("blake3:"))
        .expect("the notice names the stored output");
    let id = id.trim_end_matches(|c: char| !c.is_ascii_hexdigit());
    let shown = run_spillway(dir.path(), &["show", id, "--lines", "100000:100001"], b"");
    assert_eq!(String::from_utf8_lossy(&shown.stdout), "line 99999\ndone");
}

#[test]
fn the_session_log_holds_the_call_its_dispatch_events_and_its_result() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("session.jsonl");
    let (_, _, status) = code(
        dir.path(),
        &["--session-log", log.to_str().unwrap()],
        "const [a, b] = await Promise.all([tools.run({command: 'echo A'}), tools.run({command: 'echo B'})]); return a + b;",
    );
    assert_eq!(status, 0);
    let text = std::fs::read_to_string(&log).unwrap();
    let types: Vec<String> = text
        .lines()
        .skip(1)
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["type"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(types.first().map(String::as_str), Some("tool/call"));
    assert_eq!(types.last().map(String::as_str), Some("tool/result"));
    assert_eq!(
        types
            .iter()
            .filter(|t| *t == "tool/code-dispatch-start")
            .count(),
        2
    );
    assert_eq!(
        types.iter().filter(|t| *t == "tool/code-dispatch").count(),
        2
    );
}

/// Runs `spillway code` on `program` and returns its output, exit status,
/// how long it took and its peak RSS in KiB (from `wait4`, this child's
/// alone).
// The child is reaped with wait4, which gives its own peak RSS.
#[allow(clippy::zombie_processes)]
fn measured(store: &std::path::Path, args: &[&str], program: &str) -> (String, i32, Duration, i64) {
    let started = Instant::now();
    let mut child = spillway_cmd()
        .arg("--store")
        .arg(store)
        .arg("code")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(program.as_bytes())
        .unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let mut status = 0;
    // SAFETY: wait4 fills the status and the usage we pass, for our child.
    let rss = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        let pid = child.id() as libc::pid_t;
        assert_eq!(libc::wait4(pid, &mut status, 0, &mut u), pid);
        u.ru_maxrss
    };
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    (out, code, started.elapsed(), rss)
}

#[test]
fn every_limit_ends_the_program_in_time_with_the_host_memory_bounded() {
    let dir = tempfile::tempdir().unwrap();
    // (program, the error's words)
    let cases = [
        ("while (true) {}", "wall-time limit of 2 s"),
        (
            "let i = 0; while (true) print('x' + i++);",
            "wall-time limit of 2 s",
        ),
        ("return 'x'.repeat(1e9);", "memory limit of 67108864 bytes"),
        (
            "const a = []; while (true) a.push(new Array(1000).fill(1));",
            "memory limit",
        ),
        (
            "function f(n) { return f(n + 1) + 1; } return f(0);",
            "stack limit",
        ),
        ("return 'y'.repeat(64 * 1024 * 1024);", "memory limit"),
        (
            "let v = []; for (let i = 0; i < 1e6; i++) v = [v]; return v;",
            "limit",
        ),
        // A flood of long lines, and calls with large arguments that are
        // never awaited behind one worker: what waits for the host is
        // bounded, not the program's whole output.
        (
            "const s = 'x'.repeat(12e6); for (;;) print(s)",
            "wall-time limit",
        ),
        (
            "const s = 'x'.repeat(24e6); for (;;) { try { print(s) } catch (e) {} }",
            "wall-time limit",
        ),
        (
            "const a = 'y'.repeat(1e7); for (let i = 0; i < 40; i++) tools.run({command: 'sleep 5', pad: a}).catch(() => 0); await new Promise((r) => setTimeout(r, 5000))",
            "wall-time limit",
        ),
    ];
    for (program, words) in cases {
        let (out, status, took, rss_kib) = measured(
            dir.path(),
            &["--timeout", "2s", "--memory", "64MiB"],
            program,
        );
        assert_eq!(status, 1, "{program}: {out}");
        assert!(
            out.contains("CODE_RUN_FAILED") && out.contains(words),
            "{program}: {out}"
        );
        assert!(out.len() <= 32 * 1024 + 1, "{program}: bounded");
        assert!(took < Duration::from_secs(3), "{program}: {took:?}");
        // The documented bound: twice the memory limit (the engine's heap,
        // and one copy of a value on its way out) and 64 MiB (what is in
        // flight to the host, the stage, the host's own).
        assert!(
            rss_kib < (2 * 64 + 64) * 1024,
            "{program}: peak RSS {rss_kib} KiB"
        );
        eprintln!("{program}: {took:?}, peak RSS {} MiB", rss_kib / 1024);
    }
    // And the next run works.
    let (out, status, _, _) = measured(dir.path(), &[], "return 1 + 1");
    assert_eq!((out.as_str(), status), ("2\n", 0));
}

/// Under the default limits, the natural program works on a nested value
/// of more than 32 MB: split it into lines, filter them, count.
#[test]
fn the_default_limits_hold_a_32_mb_value_split_into_lines() {
    let dir = tempfile::tempdir().unwrap();
    let (out, status, _, _) = measured(
        dir.path(),
        &[],
        "const v = await tools.run({command: 'seq 1 4500000'}); const lines = v.trim().split('\\n'); return [v.length, lines.length, lines.filter((l) => l.endsWith('7')).length]",
    );
    assert_eq!((out.as_str(), status), ("[34888896,4500000,450000]\n", 0));
}

/// The README's Code Mode section: each `$ command` of its `text` blocks,
/// run in one shell per block with this build's `spillway` first on the
/// PATH, prints exactly the lines under it.
#[test]
fn the_readme_code_mode_examples_run_as_written() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let start = readme
        .find("\n## Code Mode\n")
        .expect("a Code Mode section");
    let section = &readme[start + 1..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
    let bin_dir = std::path::Path::new(env!("CARGO_BIN_EXE_spillway"))
        .parent()
        .unwrap()
        .to_owned();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut blocks = 0;
    for block in section.split("```text\n").skip(1) {
        let block = &block[..block.find("```").unwrap()];
        let mut commands: Vec<(String, String)> = Vec::new();
        for line in block.lines() {
            if let Some(cmd) = line.strip_prefix("$ ") {
                commands.push((cmd.to_owned(), String::new()));
            } else if let Some((_, want)) = commands.last_mut() {
                want.push_str(line);
                want.push('\n');
            }
        }
        let mut script = String::new();
        for (i, (cmd, _)) in commands.iter().enumerate() {
            // The separator keeps `$?` for an `echo $?` that follows.
            script.push_str(&format!("s=$?; echo '@@{i}@@'; (exit $s)\n{cmd}\n"));
        }
        let dir = tempfile::tempdir().unwrap();
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&script)
            .env("PATH", &path)
            .env("SPILLWAY_STORE", dir.path())
            .env_remove("SPILLWAY_CONFIG")
            .env("XDG_CONFIG_HOME", "/nonexistent-spillway-test")
            .output()
            .unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        for (i, (cmd, want)) in commands.iter().enumerate() {
            let from = stdout.find(&format!("@@{i}@@\n")).unwrap() + format!("@@{i}@@\n").len();
            let to = stdout[from..]
                .find(&format!("@@{}@@\n", i + 1))
                .map_or(stdout.len(), |j| from + j);
            assert_eq!(&stdout[from..to], want, "README: $ {cmd}");
        }
        blocks += 1;
    }
    assert!(blocks >= 1, "the section has examples");
}

/// SIGTERM to `mcp proxy --code-mode` (how harnesses stop MCP servers):
/// the upstream server is stopped and the proxy exits 128 + 15.
#[test]
fn a_signal_stops_the_code_mode_proxy_and_its_servers() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("upstream.pid");
    let servers = dir.path().join("mcp.json");
    let inner = format!(
        "echo $$ > '{}'; exec '{}' --store '{}' mcp serve",
        pidfile.display(),
        env!("CARGO_BIN_EXE_spillway"),
        dir.path().join("inner").display()
    );
    std::fs::write(
        &servers,
        serde_json::json!({"mcpServers": {"shell": {"command": "sh", "args": ["-c", inner]}}})
            .to_string(),
    )
    .unwrap();
    let mut child = spillway_cmd()
        .arg("--store")
        .arg(dir.path().join("store"))
        .args(["mcp", "proxy", "--code-mode", "--servers"])
        .arg(&servers)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut to = child.stdin.take().unwrap();
    let mut from = std::io::BufReader::new(child.stdout.take().unwrap());
    for msg in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    ] {
        writeln!(to, "{msg}").unwrap();
        let mut line = String::new();
        from.read_line(&mut line).unwrap();
        assert!(line.contains("\"result\""), "{line}");
    }
    let upstream: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let started = Instant::now();
    // SAFETY: kill sends a signal to our child; nothing else is touched.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + 15));
    assert!(started.elapsed() < Duration::from_secs(10));
    // SAFETY: signal 0 only asks whether the process exists.
    let alive = unsafe { libc::kill(upstream, 0) } == 0;
    assert!(!alive, "the upstream server outlived the proxy");
    drop(to);
}

/// A nested command whose child leaves its process group (`setsid`) and
/// keeps the output open: the call still answers within half a second of
/// its limit, and the detached child is stopped with it.
#[test]
fn a_detached_child_holding_the_output_neither_delays_the_answer_nor_outlives_it() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("detached.pid");
    let program = format!(
        "print('start'); await tools.run({{command: \"setsid sh -c 'echo $$ > {}; exec sleep 30' & sleep 30\"}})",
        pidfile.display()
    );
    let (out, code, took, _) = measured(dir.path(), &["--timeout", "1s"], &program);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("wall-time limit"), "{out}");
    assert!(took < Duration::from_millis(1500), "took {took:?}");
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let left = support::still_alive_after(&[pid], Duration::from_secs(5));
    assert!(
        left.is_empty(),
        "the detached child {pid} outlived the call"
    );
}

/// Thousands of nested calls queued behind one worker when the program
/// ends: they are recorded as not run in one append, and the call answers
/// within half a second of its limit even with every event fsynced.
#[test]
fn calls_left_queued_at_the_limit_do_not_delay_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("session.jsonl");
    let (out, code, took, _) = measured(
        dir.path(),
        &[
            "--timeout",
            "2s",
            "--concurrency",
            "1",
            "--session-log",
            &log.to_string_lossy(),
        ],
        "for (;;) tools.run({command: 'sleep 10'}).catch(() => 0)",
    );
    assert_eq!(code, 1, "{out}");
    assert!(
        took < Duration::from_millis(2500) + Duration::from_millis(300),
        "took {took:?}"
    );
    // Every call started has its closing event.
    let text = std::fs::read_to_string(&log).unwrap();
    let count = |kind: &str| {
        text.lines()
            .filter(|l| l.contains(&format!("\"type\":\"{kind}\"")))
            .count()
    };
    let started = count("tool/code-dispatch-start");
    assert!(started > 1, "{started} calls started");
    assert_eq!(count("tool/code-dispatch"), started);
}
