//! Memory stays bounded however long the input: 1 GiB (256 MiB in the CI
//! tier) through a pipe into `spillway apply` must not grow the heap. This
//! file holds one test, so the only child whose peak RSS
//! `getrusage(RUSAGE_CHILDREN)` reports is that one.

use std::io::{Read, Write};
use std::process::{Command, Stdio};

const GIB: usize = 1 << 30;
const LIMIT_KIB: i64 = 32 * 1024;

/// 1 GiB with `SPILLWAY_SLOW=full`; 256 MiB, eight times the limit, in the
/// CI tier.
fn input_bytes() -> usize {
    match std::env::var("SPILLWAY_SLOW").as_deref() {
        Ok("full") => GIB,
        _ => GIB / 4,
    }
}

#[test]
#[ignore = "slow tier: cargo test --workspace -- --ignored"]
fn streaming_one_gib_keeps_peak_rss_under_32_mib() {
    let total = input_bytes();
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_spillway"))
        .arg("--store")
        .arg(dir.path())
        .args(["apply", "--json", "--durability", "relaxed"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let line = "\x1b[32m   Compiling\x1b[0m crate v0.1.0 (résumé ✓)\n".as_bytes();
        let block: Vec<u8> = line.iter().copied().cycle().take(1 << 20).collect();
        for _ in 0..total / block.len() {
            stdin.write_all(&block).unwrap();
        }
    });
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    writer.join().unwrap();
    assert!(child.wait().unwrap().success());
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["total_bytes"].as_u64(), Some(total as u64));
    assert!(v["content"].as_str().unwrap().len() <= 32 * 1024);

    // SAFETY: getrusage fills the struct we pass and nothing else.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::getrusage(libc::RUSAGE_CHILDREN, &mut u), 0);
        u
    };
    let peak_kib = usage.ru_maxrss;
    assert!(peak_kib > 0, "no child usage recorded");
    assert!(
        peak_kib < LIMIT_KIB,
        "peak RSS {peak_kib} KiB is over {LIMIT_KIB} KiB"
    );
}
