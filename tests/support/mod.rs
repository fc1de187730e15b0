//! Helpers shared by the integration tests.
#![allow(dead_code)]
// Tests start threads of their own to drive the library; the rule that
// threads come from its thread budget is the library's.
#![allow(clippy::disallowed_methods)]

pub mod gen;
pub mod oracle;

#[allow(unused_imports)]
pub use gen::tool_output;

use std::path::{Path, PathBuf};

use spillway::{Compression, ContentId, Durability, Outcome, Policy, Render, Spiller, Store};

/// A fresh store in a temp dir (kept alive by the returned guard).
pub fn temp_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("store")).expect("open store");
    (dir, store)
}

/// The smallest budget a policy accepts with this store's paths.
pub fn min_budget(store: &Store) -> usize {
    spillway::Spiller::new(Policy::default(), store.clone())
        .expect("the default policy fits any store")
        .min_budget()
}

/// The directory of a local store.
pub fn store_dir(store: &Store) -> &Path {
    store.location().as_dir().expect("a local store")
}

/// An object's file in a local store, by the layout the store documents:
/// `v1/objects/<h0h1>/<h2…h63>[.zst]`.
pub fn object_file(store: &Store, id: &ContentId, encoding: spillway::Encoding) -> PathBuf {
    let hex = id.to_hex();
    let suffix = match encoding {
        spillway::Encoding::Zstd => ".zst",
        _ => "",
    };
    objects_dir(store)
        .join(&hex[..2])
        .join(format!("{}{suffix}", &hex[2..]))
}

/// The objects directory of a local store, `v1/objects`.
pub fn objects_dir(store: &Store) -> PathBuf {
    store_dir(store).join("v1").join("objects")
}

/// The temporary files' directory of a local store, `v1/tmp`.
pub fn tmp_dir(store: &Store) -> PathBuf {
    store_dir(store).join("v1").join("tmp")
}

pub fn policy(
    bytes: usize,
    lines: Option<u64>,
    head_percent: u8,
    compression: Compression,
) -> Policy {
    Policy::builder()
        .max_inline_bytes(bytes as u64)
        .max_inline_lines(lines)
        .head_percent(u64::from(head_percent))
        .compression(compression)
        .durability(Durability::Relaxed)
        .render(Render::Raw)
        .build()
        .expect("valid policy")
}

/// Feeds `input` to a stage in chunks of the given sizes (cycled).
pub fn apply_chunked(spiller: &Spiller, input: &[u8], sizes: &[usize]) -> Outcome {
    let mut stage = spiller.stage();
    let mut at = 0;
    let mut i = 0;
    while at < input.len() {
        let n = sizes[i % sizes.len()].max(1).min(input.len() - at);
        stage.feed(&input[at..at + n]);
        at += n;
        i += 1;
    }
    stage.finish().expect("finish")
}

/// [`apply_chunked`] through [`spillway::Stage::feed_buf`]: each piece is
/// copied into the buffer the stage gave back last, as a reader would
/// read into it.
pub fn apply_buffered(spiller: &Spiller, input: &[u8], sizes: &[usize]) -> Outcome {
    let mut stage = spiller.stage();
    let mut buf = Vec::new();
    let mut at = 0;
    let mut i = 0;
    while at < input.len() {
        let n = sizes[i % sizes.len()].max(1).min(input.len() - at);
        buf.clear();
        buf.extend_from_slice(&input[at..at + n]);
        buf = stage.feed_buf(buf);
        at += n;
        i += 1;
    }
    stage.finish().expect("finish")
}

/// The oracle's expectation for this input, with the store the stage used.
pub fn expected(input: &[u8], policy: &Policy, store: &Store) -> oracle::Expected {
    let stored = (input.len() as u64).min(policy.max_spill_bytes()) as usize;
    let id = ContentId::of(&input[..stored]);
    let path = object_file(store, &id, policy.compression().encoding());
    let id_text = id.to_string();
    let path_text = path.to_string_lossy().into_owned();
    oracle::expected(
        input,
        &oracle::Budget {
            bytes: policy.max_inline_bytes(),
            lines: policy.max_inline_lines(),
            head_percent: policy.head_percent(),
        },
        Ok(oracle::Where {
            id: &id_text,
            path: &path_text,
            stored_bytes: stored as u64,
        }),
    )
}

/// The parts of an outcome the oracle predicts.
pub fn observed(o: &Outcome) -> oracle::Expected {
    oracle::Expected {
        spilled: o.spilled,
        content: o.content.clone(),
        head_bytes: o.head_bytes,
        tail_bytes: o.tail_bytes,
        omitted_bytes: o.omitted_bytes,
        omitted_lines: o.omitted_lines,
        omitted_range: o.omitted_range,
        invalid_utf8: o.invalid_utf8,
        binary: o.binary,
    }
}

fn lines_of(b: &[u8]) -> u64 {
    let nl = b.iter().filter(|&&c| c == b'\n').count() as u64;
    nl + u64::from(b.last().is_some_and(|&c| c != b'\n'))
}

/// Checks every preview rule that can be checked from the outside.
pub fn check_rules(input: &[u8], policy: &Policy, o: &Outcome) {
    let cap = policy.max_inline_bytes();
    let content = o.content.as_bytes();
    assert!(
        content.len() <= cap,
        "content {} bytes > budget {cap}",
        content.len()
    );
    if let Some(l) = policy.max_inline_lines() {
        assert!(
            lines_of(content) <= l,
            "content has {} lines > cap {l}",
            lines_of(content)
        );
    }
    assert_eq!(o.total_bytes, input.len() as u64);
    assert_eq!(o.total_lines, lines_of(input));
    let lossy = String::from_utf8_lossy(input);
    let lossy = lossy.as_bytes();
    if !o.spilled {
        assert_eq!(content, input, "inline content must be the input unchanged");
        assert!(o.spill.is_none());
        return;
    }
    assert!(o.head_bytes + o.tail_bytes <= content.len());
    let head = &content[..o.head_bytes];
    let tail = &content[content.len() - o.tail_bytes..];
    assert!(lossy.starts_with(head), "head is not a prefix of the input");
    assert!(lossy.ends_with(tail), "tail is not a suffix of the input");
    if o.binary {
        assert_eq!((o.head_bytes, o.tail_bytes), (0, 0));
    }
    if !o.invalid_utf8 && !o.binary {
        assert_eq!(
            o.head_bytes as u64 + o.tail_bytes as u64 + o.omitted_bytes,
            o.total_bytes,
            "head, tail and omitted must add up to the input"
        );
    }
    if o.omitted_bytes > 0 && !o.binary {
        let [first, last] = o.omitted_range.expect("omitted range");
        assert_eq!(o.omitted_lines, last - first + 1);
        assert_eq!(
            first,
            1 + head.iter().filter(|&&c| c == b'\n').count() as u64
        );
        assert!(last <= o.total_lines);
        // The notice sits on its own line between head and tail.
        let middle = &o.content[o.head_bytes..o.content.len() - o.tail_bytes];
        assert!(
            middle.trim_matches('\n').starts_with("[spillway:"),
            "notice missing: {middle:?}"
        );
        assert!(middle.contains(&format!("lines {first}-{last}")));
        // A cut content is never longer than the input (when the input is
        // longer than the notice itself), unless only the line cap forced
        // the cut: then the tail still gets the room the bytes leave.
        let lines_forced = input.len() <= policy.max_inline_bytes()
            && policy
                .max_inline_lines()
                .is_some_and(|l| lines_of(input) > l);
        if !lines_forced {
            assert!(content.len() <= input.len().max(middle.len() + 1));
        }
        // Mid-line cuts only when not even one whole line fits.
        if !head.is_empty() && !head.ends_with(b"\n") {
            assert!(
                !head.contains(&b'\n'),
                "head cut mid-line though a whole line fit"
            );
            assert!(
                !(head.ends_with(b"\r") && lossy.get(head.len()) == Some(&b'\n')),
                "head splits CRLF"
            );
        }
        let tail_starts_line =
            lossy.len() == tail.len() || lossy[lossy.len() - tail.len() - 1] == b'\n';
        if !tail.is_empty() && !tail_starts_line {
            assert!(
                !tail[..tail.len() - 1].contains(&b'\n'),
                "tail cut mid-line though a whole line fit"
            );
            assert!(
                !(tail.starts_with(b"\n") && lossy[lossy.len() - tail.len() - 1] == b'\r'),
                "tail splits CRLF"
            );
        }
    }
    if let Some(s) = &o.spill {
        assert_eq!(s.bytes, (input.len() as u64).min(policy.max_spill_bytes()));
        assert_eq!(s.id, ContentId::of(&input[..s.bytes as usize]));
        assert_eq!(s.truncated, s.bytes < input.len() as u64);
    }
}

/// The `spillway` binary, isolated from the machine's own configuration.
pub fn spillway_cmd() -> std::process::Command {
    // `option_env!`: the fuzz targets include this module too, and only
    // integration tests have the binary (the fuzz targets never call this).
    let bin = option_env!("CARGO_BIN_EXE_spillway").unwrap_or("spillway");
    let mut c = std::process::Command::new(bin);
    c.env_remove("SPILLWAY_STORE")
        .env_remove("SPILLWAY_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent-spillway-test")
        .stdin(std::process::Stdio::null());
    c
}

/// Runs `spillway --store STORE ARGS…` with `input` on stdin (written from
/// another thread, so a large input cannot deadlock against the output).
pub fn run_spillway(store: &std::path::Path, args: &[&str], input: &[u8]) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = spillway_cmd()
        .arg("--store")
        .arg(store)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn spillway");
    let mut stdin = child.stdin.take().expect("stdin");
    let data = input.to_vec();
    let writer = std::thread::spawn(move || {
        // The binary may exit before reading everything (an error): fine.
        let _ = stdin.write_all(&data);
    });
    let out = child.wait_with_output().expect("wait");
    writer.join().expect("writer thread");
    out
}

/// The size a slow-tier test runs at: `ci` by default (what `.ci/run` runs
/// on every submission), `full` with `SPILLWAY_SLOW=full` (by hand, before
/// a release or after a change to what the test protects). Slow-tier tests
/// are `#[ignore]`d, so the README's test command leaves them out; run them
/// with `cargo test --workspace -- --ignored`.
pub fn slow_tier<T>(ci: T, full: T) -> T {
    match std::env::var("SPILLWAY_SLOW").as_deref() {
        Ok("full") => full,
        _ => ci,
    }
}

/// Whether a process with this pid is still alive (not a zombie).
pub fn process_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// Waits up to `within` for every pid to be gone; the ones still alive.
pub fn still_alive_after(pids: &[u32], within: std::time::Duration) -> Vec<u32> {
    let t = std::time::Instant::now();
    while pids.iter().any(|&p| process_alive(p)) && t.elapsed() < within {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    pids.iter().copied().filter(|&p| process_alive(p)).collect()
}
