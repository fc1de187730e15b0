//! `show` streams: a 300 MiB object, and a decompression bomb under a foreign
//! id, are written out (or refused) in bounded memory. One test in this
//! file, so the children whose peak RSS `getrusage(RUSAGE_CHILDREN)` reports
//! are only this test's.

#[path = "../../../tests/support/mod.rs"]
mod support;

use std::io::Write;
use std::process::Stdio;

use spillway::{ContentId, Encoding, Store};

const MIB: usize = 1 << 20;
const LIMIT_KIB: i64 = 48 * 1024;

fn peak_child_rss_kib() -> i64 {
    // SAFETY: getrusage fills the struct we pass and nothing else.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::getrusage(libc::RUSAGE_CHILDREN, &mut u), 0);
        u
    };
    usage.ru_maxrss
}

#[test]
fn show_streams_large_objects_and_refuses_bombs_in_bounded_memory() {
    // Everything large is made in child processes or in small pieces: a
    // child's peak RSS counts what its parent held when it was spawned.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let mut apply = support::spillway_cmd()
        .arg("--store")
        .arg(&root)
        .args([
            "apply",
            "--json",
            "--durability",
            "relaxed",
            "--max-spill-bytes",
            "1GiB",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = apply.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let line = b"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n";
        let block: Vec<u8> = line.iter().copied().cycle().take(MIB).collect();
        for _ in 0..300 {
            stdin.write_all(&block).unwrap();
        }
    });
    let out = apply.wait_with_output().unwrap();
    writer.join().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = v["spill"]["id"].as_str().unwrap().to_owned();
    let store = Store::open(&root).unwrap();

    // The whole object, to a pipe we count.
    let mut child = support::spillway_cmd()
        .arg("--store")
        .arg(&root)
        .args(["show", &id])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let n = std::io::copy(child.stdout.as_mut().unwrap(), &mut std::io::sink()).unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(n, 300 * MIB as u64);

    // A bomb: 300 MiB of zeros in a few KiB of zstd, with a valid trailer,
    // under an id it does not hash to.
    // Level 3: a higher level's tables would stay in this process's memory,
    // which the next child's peak RSS would count.
    let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    let zeros = vec![0u8; MIB];
    for _ in 0..300 {
        enc.write_all(&zeros).unwrap();
    }
    let mut bomb = enc.finish().unwrap();
    bomb.extend_from_slice(&[0x5E, 0x2A, 0x4D, 0x18, 16, 0, 0, 0]);
    bomb.extend_from_slice(b"spillwy1");
    bomb.extend_from_slice(&(300 * MIB as u64).to_le_bytes());
    assert!(bomb.len() < 64 * 1024);
    let victim = ContentId::of(b"not the bomb's content");
    let path = support::object_file(&store, &victim, Encoding::Zstd);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, &bomb).unwrap();

    let out = support::spillway_cmd()
        .arg("--store")
        .arg(&root)
        .args(["show", &victim.to_string()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        out.stdout.is_empty(),
        "a byte of a corrupt object was written"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("corrupt"));

    let peak = peak_child_rss_kib();
    assert!(peak > 0, "no child usage recorded");
    assert!(
        peak < LIMIT_KIB,
        "peak RSS {peak} KiB is over {LIMIT_KIB} KiB"
    );
}
