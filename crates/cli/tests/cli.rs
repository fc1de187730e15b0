//! The `spillway` binary, run for real on real inputs.

#[path = "../../../tests/support/mod.rs"]
mod support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn spillway(store: &Path, args: &[&str], stdin: &[u8]) -> Output {
    support::run_spillway(store, args, stdin)
}

fn json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

fn count_files(dir: &Path) -> usize {
    walk(dir).len()
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.path().is_dir() {
            v.extend(walk(&e.path()));
        } else {
            v.push(e.path());
        }
    }
    v
}

fn lines_of(b: &[u8]) -> u64 {
    let nl = b.iter().filter(|&&c| c == b'\n').count() as u64;
    nl + u64::from(b.last().is_some_and(|&c| c != b'\n'))
}

/// Inputs of every kind the README promises to handle.
fn corpus(budget: usize) -> Vec<(&'static str, Vec<u8>)> {
    let mut emoji_cuts = Vec::new();
    for shift in 0..4 {
        let mut v = vec![b'.'; shift];
        while v.len() < 3 * budget {
            v.extend_from_slice("😀".as_bytes());
        }
        emoji_cuts.push(v);
    }
    let build_log = support::tool_output(11, 400_000);
    let traceback = "Traceback (most recent call last):\n  File \"x.py\", line 1\n".repeat(3000)
        + "ValueError: bad\n";
    let crlf = "line\r\n".repeat(20_000);
    let json_line = format!(
        "[{}]",
        (0..20_000)
            .map(|i| format!("{{\"k\":{i}}}"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let mut binary: Vec<u8> = (0..=255u8).cycle().take(100_000).collect();
    binary[5] = 0;
    let invalid = [b"ok ".to_vec(), vec![0xFF, 0xFE], b" end\n".to_vec()].concat();
    let invalid_big = [vec![b'a'; budget], vec![0xC3], vec![b'b'; budget]].concat();
    let mut cases: Vec<(&'static str, Vec<u8>)> = vec![
        ("build log with ANSI colour", build_log),
        ("traceback", traceback.into_bytes()),
        ("CRLF text", crlf.into_bytes()),
        ("minified JSON", json_line.into_bytes()),
        ("binary", binary),
        ("invalid UTF-8, small", invalid),
        ("invalid UTF-8, large", invalid_big),
        ("empty", Vec::new()),
        ("exactly the budget", vec![b'q'; budget]),
        ("one byte over", vec![b'q'; budget + 1]),
    ];
    for v in emoji_cuts {
        cases.push(("emoji at every cut position", v));
    }
    cases
}

#[test]
fn apply_json_obeys_every_rule_and_show_returns_the_exact_input() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let budget = 4096;
    for (name, input) in corpus(budget) {
        let out = spillway(
            &store,
            &[
                "apply",
                "--json",
                "--max-inline-bytes",
                "4KiB",
                "--render",
                "raw",
            ],
            &input,
        );
        let v = json(&out);
        let content = v["content"].as_str().unwrap().as_bytes();
        assert!(content.len() <= budget, "{name}: {} bytes", content.len());
        assert_eq!(
            v["total_bytes"].as_u64().unwrap(),
            input.len() as u64,
            "{name}"
        );
        assert_eq!(
            v["total_lines"].as_u64().unwrap(),
            lines_of(&input),
            "{name}"
        );
        let lossy = String::from_utf8_lossy(&input).into_owned();
        let head = v["head_bytes"].as_u64().unwrap() as usize;
        let tail = v["tail_bytes"].as_u64().unwrap() as usize;
        assert!(
            lossy.as_bytes().starts_with(&content[..head]),
            "{name}: head"
        );
        assert!(
            lossy.as_bytes().ends_with(&content[content.len() - tail..]),
            "{name}: tail"
        );
        let spilled = v["spilled"].as_bool().unwrap();
        let fits =
            input.len() <= budget && std::str::from_utf8(&input).is_ok() && !input.contains(&0);
        assert_eq!(spilled, !fits, "{name}");
        assert_eq!(
            v["invalid_utf8"].as_bool().unwrap(),
            std::str::from_utf8(&input).is_err(),
            "{name}"
        );
        if !spilled {
            assert_eq!(content, &input[..], "{name}: inline content is the input");
            assert!(v["spill"].is_null());
            continue;
        }
        let id = v["spill"]["id"].as_str().unwrap().to_string();
        assert!(v["store_error"].is_null());
        // `show` writes the exact input back.
        let shown = spillway(&store, &["show", &id], b"");
        assert!(shown.status.success());
        assert_eq!(shown.stdout, input, "{name}: show");
        // The notice's read command works pasted as it is (it names the
        // store), and reads exactly the omitted bytes, or the lines that
        // hold them.
        if let Some([a, b]) = v["omitted_range"]
            .as_array()
            .map(|r| [r[0].as_u64().unwrap(), r[1].as_u64().unwrap()])
        {
            if !v["binary"].as_bool().unwrap() {
                let content = v["content"].as_str().unwrap();
                let hint = content
                    .split("read it with: spillway ")
                    .nth(1)
                    .and_then(|rest| rest.split(']').next())
                    .unwrap_or_else(|| panic!("{name}: no read hint in {content:?}"));
                let args: Vec<&str> = hint.split(' ').collect();
                assert_eq!(
                    &args[..3],
                    ["--store", store.to_str().unwrap(), "show"],
                    "{name}"
                );
                assert!(id.starts_with(args[3]), "{name}: {hint}");
                let by_bytes = args[4] == "--bytes";
                if !by_bytes {
                    assert_eq!(args[4..], ["--lines", &format!("{a}:{b}")], "{name}");
                } else {
                    assert_eq!(a, b, "{name}: bytes only for a cut inside one line");
                }
                let part = support::spillway_cmd().args(&args).output().unwrap();
                assert!(
                    part.status.success(),
                    "{}",
                    String::from_utf8_lossy(&part.stderr)
                );
                if by_bytes {
                    assert_eq!(
                        part.stdout.len() as u64,
                        v["omitted_bytes"].as_u64().unwrap(),
                        "{name}"
                    );
                }
                let omitted = v["omitted_bytes"].as_u64().unwrap() as usize;
                assert!(
                    part.stdout.len() >= omitted,
                    "{name}: the lines cover what was omitted"
                );
            }
        }
        // A second apply stores nothing new.
        let files = count_files(&store);
        let again = json(&spillway(
            &store,
            &[
                "apply",
                "--json",
                "--max-inline-bytes",
                "4KiB",
                "--render",
                "raw",
            ],
            &input,
        ));
        assert_eq!(again["content"], v["content"], "{name}: same bytes out");
        assert_eq!(again["spill"]["dedup"], Value::Bool(true), "{name}");
        assert_eq!(count_files(&store), files, "{name}: nothing new stored");
    }
}

#[test]
fn apply_reads_files_and_dash_and_prints_the_text() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let file = dir.path().join("in.txt");
    std::fs::write(&file, b"hello\n").unwrap();
    let out = spillway(&store, &["apply", file.to_str().unwrap()], b"");
    assert_eq!(out.stdout, b"hello\n");
    let out = spillway(&store, &["apply", "-"], b"from stdin");
    assert_eq!(out.stdout, b"from stdin");
    assert!(!store.exists(), "nothing under budget touches the disk");
}

#[test]
fn bad_input_gets_one_line_errors_exit_2_for_arguments_and_1_for_failures() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let full = "ab".repeat(32);
    // (arguments, what the message says, exit status): 2 for a bad
    // argument, 1 for a command that failed.
    let cases: Vec<(Vec<&str>, &str, i32)> = vec![
        (
            vec!["show", "blake3:../../etc/passwd"],
            "invalid content id",
            2,
        ),
        (vec!["show", "BLAKE3:ABCDEF0123"], "invalid content id", 2),
        (vec!["show", "0123abcd"], "no stored object", 1),
        (vec!["show", &full], "no stored object", 1),
        (
            vec!["show", "0123abcd", "--lines", "0:1"],
            "numbered from 1",
            2,
        ),
        (
            vec!["show", "0123abcd", "--lines", "3:2"],
            "end comes before",
            2,
        ),
        (vec!["show"], "<ID>", 2),
        (vec!["run"], "<CMD>", 2),
        (vec!["apply", "--max-inline-bytes", "0"], "use at least", 2),
        (
            vec!["apply", "--max-inline-bytes", "65MiB"],
            "above the limit",
            2,
        ),
        (vec!["apply", "/no/such/file"], "open /no/such/file", 1),
        (vec!["apply", "--head-percent", "101"], "head_percent", 2),
        (
            vec!["apply", "--compress", "none", "--level", "3"],
            "compression is none",
            2,
        ),
        (vec!["apply", "--level", "99"], "zstd level", 2),
        (vec!["apply", "--level", "0"], "zstd level", 2),
        (vec!["apply", "--level=-1"], "zstd level", 2),
    ];
    for (args, want, code) in cases {
        let out = spillway(&store, &args, b"x");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(
            err.starts_with("spillway: ") && err.contains(want),
            "{args:?}: {err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
    // Sizes that do not parse are refused by the argument parser.
    for bad in ["-5", "1.5", "lots", "12 parsecs"] {
        let flag = format!("--max-inline-bytes={bad}");
        let out = spillway(&store, &["apply", &flag], b"x");
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("invalid value"),
            "{bad}"
        );
    }
}

#[test]
fn show_refuses_a_corrupt_object() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let input = support::tool_output(12, 200_000);
    let v = json(&spillway(
        &store,
        &["apply", "--json", "--compress", "none"],
        &input,
    ));
    let path = v["spill"]["path"].as_str().unwrap();
    let mut bytes = std::fs::read(path).unwrap();
    bytes[1000] ^= 0x20;
    std::fs::write(path, bytes).unwrap();
    let out = spillway(&store, &["show", v["spill"]["id"].as_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        out.stdout.is_empty(),
        "no bytes of a corrupt object reach stdout"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("corrupt"));
}

#[test]
fn the_store_is_private_whatever_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    for umask in ["000", "022", "777"] {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        let script = format!(
            "umask {umask}; exec \"$0\" --store \"$1\" apply --json --max-inline-bytes 1KiB",
        );
        let mut child = Command::new("sh")
            .args([
                "-c",
                &script,
                env!("CARGO_BIN_EXE_spillway"),
                store.to_str().unwrap(),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(&support::tool_output(13, 50_000))
            .unwrap();
        let v = json(&child.wait_with_output().unwrap());
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let object = Path::new(v["spill"]["path"].as_str().unwrap());
        assert_eq!(mode(object), 0o600, "umask {umask}: object");
        assert_eq!(mode(&store), 0o700, "umask {umask}: root");
        for sub in ["v1", "v1/objects", "v1/tmp"] {
            assert_eq!(mode(&store.join(sub)), 0o700, "umask {umask}: {sub}");
        }
        assert_eq!(
            mode(object.parent().unwrap()),
            0o700,
            "umask {umask}: shard"
        );
    }
}

/// `store_error_kind` names the failure beside the message, for a harness
/// to branch on.
#[test]
fn apply_json_names_the_kind_of_store_failure() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("a-file");
    std::fs::write(&root, b"not a directory").unwrap();
    let input = "line\n".repeat(20_000);
    let out = spillway(&root, &["apply", "--json"], input.as_bytes());
    assert!(out.status.success());
    let v = json(&out);
    assert!(v["store_error"].as_str().unwrap().contains("a-file"));
    assert_eq!(v["store_error_kind"], "not_regular_file");
    let ok = spillway(
        &dir.path().join("store"),
        &["apply", "--json"],
        input.as_bytes(),
    );
    let v = json(&ok);
    assert!(v["store_error_kind"].is_null());
    assert_eq!(v["spill"]["compression"], "zstd");
}

/// The smallest budget an error names works the first time, whatever the
/// store's path (the read hint names a store given with --store), for the
/// bytes and the tokens budgets alike.
#[test]
fn the_smallest_budget_an_error_names_works() {
    let base = tempfile::tempdir().unwrap();
    let short = base.path().join("s");
    let long = base.path().join("d".repeat(120)).join("e".repeat(120));
    for store in [short, long] {
        let input: String = (0..2000)
            .map(|i| format!("line {i} of output that will not fit\n"))
            .collect();
        for (flag, used) in [
            ("--max-inline-bytes", "bytes"),
            ("--max-inline-tokens", "tokens"),
        ] {
            let out = spillway(&store, &["apply", flag, "10"], input.as_bytes());
            assert_eq!(out.status.code(), Some(2));
            let err = String::from_utf8_lossy(&out.stderr);
            let needed: u64 = err
                .rsplit("use at least ")
                .next()
                .and_then(|t| t.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{err}"));
            let n = needed.to_string();
            let out = spillway(&store, &["apply", "--json", flag, &n], input.as_bytes());
            let v = json(&out);
            assert_eq!(v["spilled"], true, "{used}");
            if used == "bytes" {
                assert!(v["content"].as_str().unwrap().len() as u64 <= needed);
            }
            // One less is refused, with the same number.
            let less = (needed - 1).to_string();
            let out = spillway(&store, &["apply", flag, &less], input.as_bytes());
            assert_eq!(out.status.code(), Some(2));
            assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("use at least {n}")));
        }
    }
}

/// A regular file, named or as stdin, gives exactly the outcome of a pipe
/// of the same bytes (`--no-map` is still accepted, and changes nothing).
#[test]
fn a_named_or_redirected_file_gives_the_outcome_of_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let file = dir.path().join("build.log");
    let mut body = Vec::new();
    for i in 0..120_000 {
        body.extend_from_slice(format!("   Compiling crate-{i} v0.1.0\n").as_bytes());
        if i == 60_000 {
            body.extend_from_slice(b"error[E0425]: cannot find value `x` in this scope\n");
        }
    }
    std::fs::write(&file, &body).unwrap();
    let path = file.to_str().unwrap();
    let mapped = json(&spillway(&store, &["apply", "--json", path], b""));
    let read = json(&spillway(
        &store,
        &["apply", "--json", "--no-map", path],
        b"",
    ));
    let piped = json(&spillway(&store, &["apply", "--json"], &body));
    let redirected = support::spillway_cmd()
        .args(["--store", store.to_str().unwrap(), "apply", "--json"])
        .stdin(std::fs::File::open(&file).unwrap())
        .output()
        .unwrap();
    let redirected = json(&redirected);
    assert_eq!(mapped["total_bytes"], body.len() as u64);
    assert!(mapped["content"].as_str().unwrap().contains("error[E0425]"));
    for other in [&read, &piped, &redirected] {
        // The first store wrote the object; the others found it.
        let mut a = mapped.clone();
        let mut b = other.clone();
        a["spill"]["dedup"] = Value::Null;
        b["spill"]["dedup"] = Value::Null;
        assert_eq!(a, b);
    }
    assert_eq!(read["spill"]["dedup"], true);
}

/// Stdin redirected from a file that a reader before spillway read from
/// (`{ read -r line; spillway apply; } < FILE`): with or without `--no-map`, the input
/// starts at stdin's offset, and spillway leaves the offset at the end, as
/// any reader of stdin would.
#[test]
fn a_redirected_file_is_applied_from_stdins_offset_and_left_at_its_end() {
    use std::io::{Read, Seek};
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let file = dir.path().join("big.log");
    let body: Vec<u8> = (0..300_000)
        .flat_map(|i| format!("{i}\n").into_bytes())
        .collect();
    std::fs::write(&file, &body).unwrap();
    let first_line = body.iter().position(|&b| b == b'\n').unwrap() + 1;
    for flags in [&["apply", "--json"][..], &["apply", "--json", "--no-map"]] {
        let mut stdin = std::fs::File::open(&file).unwrap();
        let mut line = vec![0u8; first_line];
        stdin.read_exact(&mut line).unwrap();
        let shared = stdin.try_clone().unwrap();
        let out = support::spillway_cmd()
            .args(["--store", store.to_str().unwrap()])
            .args(flags)
            .stdin(shared)
            .output()
            .unwrap();
        let outcome = json(&out);
        assert_eq!(
            outcome["total_bytes"],
            (body.len() - first_line) as u64,
            "{flags:?}"
        );
        // The offset (shared with the child's stdin) is at the end.
        assert_eq!(
            stdin.stream_position().unwrap(),
            body.len() as u64,
            "{flags:?}"
        );
    }
}

/// A file truncated while `apply` works on it never kills spillway (a
/// mapping touched past a truncation raises SIGBUS): the truncation waits
/// for the lease, or the file was read as a stream.
#[test]
fn a_file_truncated_during_apply_never_kills_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let file = dir.path().join("big.log");
    let line = b"0123456789 abcdefghij klmnopqrst uvwxyz 0123456789 abcdefghij\n";
    let body: Vec<u8> = line.iter().copied().cycle().take(64 << 20).collect();
    for delay_ms in [0u64, 5, 30] {
        std::fs::write(&file, &body).unwrap();
        let child = support::spillway_cmd()
            .args(["--store", store.to_str().unwrap(), "apply", "--json"])
            .arg(&file)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        // Opening for writing waits while spillway holds its lease.
        let f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
        f.set_len(1000).unwrap();
        drop(f);
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "after {delay_ms} ms: {:?} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let total = v["total_bytes"].as_u64().unwrap();
        assert!(total <= body.len() as u64, "{total}");
    }
}
