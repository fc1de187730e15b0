//! Reliability of the `spillway` binary: SIGKILL at many points,
//! concurrent writers and gc, privacy against another user.
//!
//! `SPILLWAY_CRASH_KILLS` sets how many processes the crash test kills
//! (default 200; raise it for a long local run).

#[path = "../../../tests/support/mod.rs"]
mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use spillway::{Compression, Durability, Selection, Store};

fn tmp_entries(store: &Store) -> usize {
    std::fs::read_dir(support::tmp_dir(store)).map_or(0, |d| d.count())
}

fn bin() -> Command {
    support::spillway_cmd()
}

fn spawn_apply(store: &Path, compression: &str) -> Child {
    bin()
        .arg("--store")
        .arg(store)
        .args([
            "apply",
            "--json",
            "--max-inline-bytes",
            "4KiB",
            "--compress",
            compression,
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn feed(child: &mut Child, data: Vec<u8>) -> std::thread::JoinHandle<()> {
    let mut stdin = child.stdin.take().unwrap();
    std::thread::spawn(move || {
        let _ = stdin.write_all(&data);
    })
}

/// SIGKILL at many points of `apply` and `run`: no object name ever holds
/// partial or wrong content, every object a finished run reported reads
/// back exactly, and verify removes what the dead writers left.
#[test]
#[ignore = "slow tier: cargo test --workspace -- --ignored"]
fn sigkill_at_any_point_never_leaves_a_partial_object() {
    let kills: usize = std::env::var("SPILLWAY_CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| support::slow_tier(60, 200));
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let sizes = [0usize, 1 << 10, 40 << 10, 1 << 20, 9 << 20];
    let mut finished: Vec<(String, Vec<u8>)> = Vec::new();
    let mut killed = 0;
    for i in 0..kills + kills / 4 {
        let mut content = format!("run {} of the crash test\n", i % 9).into_bytes();
        content.extend(support::tool_output(i as u64 % 9, sizes[i % sizes.len()]));
        let finish = i % 5 == 4;
        if i % 7 == 3 {
            // `run`, killed while its command streams.
            let mut child = bin()
                .arg("--store")
                .arg(&root)
                .args([
                    "run",
                    "--",
                    "sh",
                    "-c",
                    "yes 'crash test line' | head -c 20000000",
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            std::thread::sleep(Duration::from_millis((i as u64 * 13) % 60));
            let _ = child.kill();
            let _ = child.wait();
            killed += 1;
            continue;
        }
        let mut child = spawn_apply(&root, if i % 2 == 0 { "zstd" } else { "none" });
        let writer = feed(&mut child, content.clone());
        if finish {
            writer.join().unwrap();
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success());
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            if let Some(id) = v["spill"]["id"].as_str() {
                finished.push((id.to_string(), content));
            }
        } else {
            std::thread::sleep(Duration::from_millis((i as u64 * 7) % 40));
            let _ = child.kill();
            let _ = child.wait();
            let _ = writer.join();
            killed += 1;
        }
    }
    assert!(killed >= kills);
    let out = bin()
        .arg("--store")
        .arg(&root)
        .args(["verify", "--json", "--grace", "0s"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "verify found corruption: {report}"
    );
    assert!(report["corrupt"].as_array().unwrap().is_empty());
    let store = Store::open(&root).unwrap();
    for (id, content) in &finished {
        let id = id.parse().unwrap();
        assert_eq!(&store.read(&id, &Selection::All).unwrap(), content);
    }
    assert_eq!(
        tmp_entries(&store),
        0,
        "verify removes dead writers' temp files"
    );
    println!(
        "{killed} processes killed, {} finished runs verified, {} temp files removed",
        finished.len(),
        report["temp_removed"]
    );
}

/// 16 processes storing the same and different contents at once: all
/// succeed, each distinct content is stored once, everything verifies.
#[test]
fn sixteen_concurrent_writers_store_each_content_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let contents: Vec<Vec<u8>> = (0..16)
        .map(|i| support::tool_output(if i < 8 { 1000 } else { 1000 + i }, 2 << 20))
        .collect();
    let mut children: Vec<(Child, std::thread::JoinHandle<()>)> = contents
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut child = spawn_apply(&root, if i % 2 == 0 { "zstd" } else { "none" });
            let w = feed(&mut child, c.clone());
            (child, w)
        })
        .collect();
    let mut ids = Vec::new();
    for (child, w) in children.drain(..) {
        w.join().unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        ids.push(v["spill"]["id"].as_str().unwrap().to_string());
    }
    let distinct: std::collections::HashSet<&String> = ids.iter().collect();
    assert_eq!(distinct.len(), 9);
    let store = Store::open(&root).unwrap();
    let listed: std::collections::HashSet<String> = store
        .list()
        .unwrap()
        .iter()
        .map(|o| o.id.to_string())
        .collect();
    assert_eq!(listed.len(), 9, "each distinct content stored once");
    for (id, c) in ids.iter().zip(&contents) {
        assert_eq!(
            &store.read(&id.parse().unwrap(), &Selection::All).unwrap(),
            c
        );
    }
    assert!(store
        .verify_all(Duration::ZERO, &mut |_, _| {})
        .unwrap()
        .corrupt
        .is_empty());
}

/// Writers reusing stale objects while two gc loops try to remove them:
/// every object a writer reported survives.
#[test]
fn gc_loops_never_remove_what_concurrent_writers_report() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let store = Store::open(&root).unwrap();
    let contents: Vec<Vec<u8>> = (0..4)
        .map(|i| support::tool_output(2000 + i, 300_000))
        .collect();
    for round in 0..6 {
        for c in &contents {
            let s = store
                .put(
                    c,
                    Compression::Zstd { level: 1 }.write_options(Durability::Relaxed),
                )
                .unwrap();
            let f = std::fs::File::options().write(true).open(&s.path).unwrap();
            f.set_modified(std::time::SystemTime::now() - Duration::from_secs(7200))
                .unwrap();
        }
        let gcs: Vec<Child> = (0..2)
            .map(|_| {
                bin()
                    .arg("--store")
                    .arg(&root)
                    .args(["gc", "--max-age", "1h"])
                    .stdout(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let writers: Vec<(Child, std::thread::JoinHandle<()>)> = (0..16)
            .map(|i| {
                let mut child = spawn_apply(&root, "zstd");
                let w = feed(&mut child, contents[i % 4].clone());
                (child, w)
            })
            .collect();
        for (child, w) in writers {
            w.join().unwrap();
            let out = child.wait_with_output().unwrap();
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            let id = v["spill"]["id"].as_str().unwrap().parse().unwrap();
            assert!(
                store.read(&id, &Selection::All).is_ok(),
                "round {round}: a reported object is gone"
            );
        }
        for mut g in gcs {
            assert!(g.wait().unwrap().success());
        }
        for c in &contents {
            assert!(
                store
                    .read(&spillway::ContentId::of(c), &Selection::All)
                    .is_ok(),
                "round {round}: lost after gc"
            );
        }
    }
}
/// A fresh folder that another user can reach: under the temporary
/// directory when every folder above it lets others pass, else under the
/// first world-traversable one of `/tmp`, `/var/tmp` and `/dev/shm`. The
/// folder itself is opened to others (0711); nothing above it is changed,
/// so a checkout or `TMPDIR` in a private home stays private. `None` when
/// the machine has no such place.
fn reachable_by_others() -> Option<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    let passable = |dir: &Path| {
        dir.ancestors().all(|d| {
            std::fs::metadata(d).is_ok_and(|m| m.is_dir() && m.permissions().mode() & 0o001 != 0)
        })
    };
    let candidates = [
        std::env::temp_dir(),
        PathBuf::from("/tmp"),
        PathBuf::from("/var/tmp"),
        PathBuf::from("/dev/shm"),
    ];
    let base = candidates.into_iter().find(|d| passable(d))?;
    let dir = tempfile::Builder::new()
        .prefix("spillway-other-user")
        .tempdir_in(base)
        .ok()?;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).ok()?;
    Some(dir)
}

/// Another user cannot read a stored object, with the file tool or with
/// `spillway show`, wherever the checkout (and so the built binary) sits.
#[test]
fn another_user_cannot_read_a_stored_object() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let Some(dir) = reachable_by_others() else {
        panic!(
            "this test needs a folder another user can reach (a world-traversable \
             $TMPDIR, /tmp, /var/tmp or /dev/shm), and this machine has none"
        );
    };
    let root = dir.path().join("store");
    let store = Store::open(&root).unwrap();
    let s = store
        .put(
            b"private tool output\n",
            Compression::None.write_options(Durability::Relaxed),
        )
        .unwrap();
    // The store's own modes: private objects in private folders.
    assert_eq!(
        std::fs::metadata(&s.path).unwrap().permissions().mode() & 0o077,
        0
    );
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        // Without root there is no other user to become; the modes are the proof.
        return;
    }
    // The binary under test lives in the build's target folder, which the
    // other user may not reach (a checkout in a 0700 home): it runs a copy
    // of it in the reachable folder instead.
    let bin_copy = dir.path().join("spillway");
    std::fs::copy(env!("CARGO_BIN_EXE_spillway"), &bin_copy).unwrap();
    std::fs::set_permissions(&bin_copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    // The copy runs as the other user: what stops `show` is the store.
    let out = Command::new(&bin_copy)
        .arg("--version")
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    assert!(out.status.success(), "the other user cannot run the copy");
    let out = Command::new("cat")
        .arg(&s.path)
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    assert!(!out.status.success(), "another user read the object");
    assert!(String::from_utf8_lossy(&out.stderr).contains("Permission denied"));
    let out = Command::new(&bin_copy)
        .env_remove("SPILLWAY_STORE")
        .env_remove("SPILLWAY_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent-spillway-test")
        .stdin(Stdio::null())
        .arg("--store")
        .arg(&root)
        .args(["show", &s.id.to_string()])
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("ermission denied"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Starts `mcp proxy` in front of a server that neither exits at the end
/// of its input nor (with `ignore_term`) on SIGTERM, and waits for its pid.
// The caller waits for the child (`proxy_exit`).
#[allow(clippy::zombie_processes)]
fn stubborn_proxy(dir: &Path, ignore_term: bool) -> (Child, u32) {
    let pid_file = dir.join("server.pid");
    let trap = if ignore_term {
        "trap '' TERM; "
    } else {
        "trap 'echo term > \"$0.term\"; exit 143' TERM; "
    };
    let script = format!("{trap}echo $$ > \"$0\"; while :; do sleep 0.05; done");
    let child = bin()
        .arg("--store")
        .arg(dir.join("store"))
        .args([
            "mcp",
            "proxy",
            "--kill-grace",
            "1s",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .arg(&pid_file)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = std::time::Instant::now();
    loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return (child, pid);
        }
        if t.elapsed() > Duration::from_secs(20) {
            let mut child = child;
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "the server never started: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits up to 20 s for the proxy to exit; its stderr.
fn proxy_exit(mut child: Child) -> String {
    let t = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("the proxy did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    err
}

/// The client closing its end stops a server that ignores the end of its
/// input: SIGTERM after the grace, SIGKILL after another when it ignores
/// that too. Neither the proxy nor the server is left running.
#[test]
fn a_proxy_whose_client_goes_away_stops_its_server() {
    for ignore_term in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let (mut child, server) = stubborn_proxy(dir.path(), ignore_term);
        drop(child.stdin.take());
        let err = proxy_exit(child);
        assert!(
            !support::process_alive(server),
            "the server was left running"
        );
        let want = if ignore_term {
            "sent signal 9"
        } else {
            "sent signal 15"
        };
        assert!(err.contains(want), "{err}");
        let term_seen = dir.path().join("server.pid.term").exists();
        assert_eq!(term_seen, !ignore_term);
    }
}

/// SIGTERM to the proxy (how harnesses stop MCP servers) is passed on to
/// the server, and the proxy exits without leaving it orphaned.
#[test]
fn sigterm_to_a_proxy_reaches_its_server() {
    for ignore_term in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let (child, server) = stubborn_proxy(dir.path(), ignore_term);
        let killed = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        proxy_exit(child);
        assert!(!support::process_alive(server), "the server was orphaned");
        assert_eq!(
            dir.path().join("server.pid.term").exists(),
            !ignore_term,
            "the server saw the SIGTERM"
        );
    }
}

/// A 3 MiB output already stored, then a file size limit of 256 KiB (as a
/// full disk, with SIGXFSZ ignored): named, named with `--no-map` and piped,
/// raw and zstd, `apply` reports the stored object every time, never "not
/// saved".
#[test]
fn applying_stored_content_under_a_file_size_limit_is_a_hit_in_every_mode() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let input = dir.path().join("out.log");
    std::fs::write(&input, support::tool_output(9, 3 << 20)).unwrap();
    for compression in ["none", "zstd"] {
        let first = bin()
            .arg("--store")
            .arg(&store)
            .args(["apply", "--json", "--compress", compression])
            .arg(&input)
            .output()
            .unwrap();
        let first: Value = serde_json::from_slice(&first.stdout).unwrap();
        let id = first["spill"]["id"].as_str().unwrap().to_owned();
        for mode in ["named", "read", "piped"] {
            for run in 0..3 {
                let script = match mode {
                    "named" => {
                        r#"ulimit -f 256; trap '' XFSZ; exec "$0" --store "$1" apply --json --compress "$2" "$3""#
                    }
                    "read" => {
                        r#"ulimit -f 256; trap '' XFSZ; exec "$0" --store "$1" apply --json --no-map --compress "$2" "$3""#
                    }
                    _ => {
                        r#"ulimit -f 256; trap '' XFSZ; cat "$3" | "$0" --store "$1" apply --json --compress "$2""#
                    }
                };
                let out = Command::new("sh")
                    .arg("-c")
                    .arg(script)
                    .arg(env!("CARGO_BIN_EXE_spillway"))
                    .arg(&store)
                    .arg(compression)
                    .arg(&input)
                    .env_remove("SPILLWAY_STORE")
                    .env_remove("SPILLWAY_CONFIG")
                    .env("XDG_CONFIG_HOME", "/nonexistent-spillway-test")
                    .stdin(Stdio::null())
                    .output()
                    .unwrap();
                let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
                    panic!("{mode}: {e}: {}", String::from_utf8_lossy(&out.stderr))
                });
                let what = format!("{compression} {mode} run {run}");
                assert!(v["store_error"].is_null(), "{what}: {}", v["store_error"]);
                assert_eq!(v["spill"]["id"], id.as_str(), "{what}");
                assert_eq!(v["spill"]["dedup"], true, "{what}");
            }
        }
    }
}

/// Stops `pid` (SIGSTOP) or lets it go on (SIGCONT).
fn signal(pid: u32, sig: i32) {
    // SAFETY: kill takes a pid and a signal number and touches no memory.
    assert_eq!(unsafe { libc::kill(pid as i32, sig) }, 0);
}

/// Whether process `pid` has `path` open.
/// How far into `path` process `pid` has read, when it has the file open.
fn read_offset(pid: u32, path: &Path) -> Option<u64> {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    for e in fds.flatten() {
        if std::fs::read_link(e.path()).is_ok_and(|t| t == path) {
            let info = std::fs::read_to_string(format!(
                "/proc/{pid}/fdinfo/{}",
                e.file_name().to_string_lossy()
            ))
            .ok()?;
            return info
                .lines()
                .find_map(|l| l.strip_prefix("pos:"))
                .and_then(|p| p.trim().parse().ok());
        }
    }
    None
}

/// The kernel's lease-break-time lowered to 1 s while a test runs (as
/// root can), so that no read lease could shield a mapping for long;
/// restored after.
struct LeaseBreakTime(Option<String>);

impl LeaseBreakTime {
    const KNOB: &'static str = "/proc/sys/fs/lease-break-time";

    fn lower() -> LeaseBreakTime {
        let old = std::fs::read_to_string(Self::KNOB).ok();
        let lowered = old.is_some() && std::fs::write(Self::KNOB, "1").is_ok();
        LeaseBreakTime(old.filter(|_| lowered))
    }
}

impl Drop for LeaseBreakTime {
    fn drop(&mut self) {
        if let Some(old) = &self.0 {
            let _ = std::fs::write(Self::KNOB, old.trim());
        }
    }
}

/// A file truncated or rewritten while `apply` has it open and is stopped
/// (Ctrl-Z), past the lease-break-time: `apply` never dies of SIGBUS, and
/// the object it reports stored reads back whole, its bytes the ones it
/// hashed (never an object published from bytes that changed after).
#[test]
fn a_file_truncated_or_rewritten_mid_apply_never_crashes_and_stores_what_was_read() {
    let _knob = LeaseBreakTime::lower();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let path = dir.path().join("big.log");
    // Read whole (up to 64 MiB), and streamed.
    for (size, change) in [
        (48 << 20, "truncate"),
        (48 << 20, "rewrite"),
        (80 << 20, "truncate"),
        (80 << 20, "rewrite"),
    ] {
        std::fs::write(&path, support::tool_output(17, size)).unwrap();
        let child = bin()
            .arg("--store")
            .arg(&store)
            .args(["apply", "--json", "--compress", "zstd", "--level", "9"])
            .arg(&path)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        // Stopped once it has read past the budget (its file offset, from
        // /proc), so what it read is stored; stopped earlier, it would hold
        // less than a budget, store nothing, and prove nothing here. A run
        // that reads it all and closes it first is stopped after.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let mut seen = false;
        while std::time::Instant::now() < deadline {
            match read_offset(pid, &path) {
                Some(at) if at >= 1 << 20 => break,
                Some(_) => seen = true,
                None if seen => break,
                None => {}
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        signal(pid, libc::SIGSTOP);
        // Past the lease-break-time, from another thread: a writer that a
        // lease would hold waits for it at most that long.
        let target = path.clone();
        let changer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(1200));
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(&target)
                .unwrap();
            if change == "truncate" {
                f.set_len(1000).unwrap();
            } else {
                use std::os::unix::fs::FileExt;
                f.write_all_at(&vec![b'#'; size / 2], (size / 2) as u64)
                    .unwrap();
            }
        });
        changer.join().unwrap();
        signal(pid, libc::SIGCONT);
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{change}: {:?} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(v["store_error"].is_null(), "{change}: {}", v["store_error"]);
        let id = v["spill"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("{change}: {v}"));
        let back = bin()
            .arg("--store")
            .arg(&store)
            .args(["show", id])
            .output()
            .unwrap();
        assert!(
            back.status.success(),
            "{change}: {}",
            String::from_utf8_lossy(&back.stderr)
        );
        assert_eq!(
            back.stdout.len() as u64,
            v["spill"]["bytes"].as_u64().unwrap(),
            "{change}"
        );
    }
}
