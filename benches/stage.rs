//! Throughput of the stage and the store, each case beside the baselines
//! that define its physical limit, measured in the same run.
//!
//! Groups (each with `Throughput::Bytes`, at 1 KiB … 64 MiB):
//!
//! * `inline/<input>`: under budget, returned inline; baseline
//!   `copy+count+validate`.
//! * `spill/<input>`: over budget, stored raw or zstd, durable or not, and a
//!   dedup hit; baselines `blake3`, `hash+write`, `hash+write+fsync`, `zstd-N`.
//! * `read`: `show` of a whole object and of a line range in its middle.
//! * `render` lives with the renderer it measures, in the registry's crate
//!   (`cargo bench -p spillway-registry --bench render`).
//!
//! * `terminal/<input>`: the terminal render beside the raw one on the
//!   same spill (`stage-terminal` over `stage-raw-render`), the salient
//!   scan on top (`stage-terminal-salient`), and a token budget beside none
//!   (`stage-terminal-tokens` over `stage-terminal`), on plain text, on
//!   heavily coloured build output, on NUL and control bytes, and on a flood of error lines (three
//!   in four match a salient pattern).
//!
//! `python3 benches/ratios.py` prints each case over its baseline.
//!
//! Set `SPILLWAY_BENCH_SIZES` (e.g. `1MiB,64MiB`) to run fewer sizes.
// Tests damage stores on purpose and drive them from threads of their
// own; the rules of clippy.toml are the library's.
#![allow(clippy::disallowed_methods)]

use std::hint::black_box;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use spillway::{
    Compression, ContentId, Durability, LineRange, Policy, Render, Selection, Spiller, Store,
};

#[path = "../tests/support/gen.rs"]
mod gen;

const KIB: usize = 1024;
const MIB: usize = 1024 * 1024;

fn sizes() -> Vec<usize> {
    let all = [KIB, 16 * KIB, 64 * KIB, MIB, 16 * MIB, 64 * MIB];
    match std::env::var("SPILLWAY_BENCH_SIZES") {
        Ok(list) => list
            .split(',')
            .filter_map(|s| s.trim().parse::<spillway::ByteSize>().ok())
            .map(|b| b.get() as usize)
            .collect(),
        Err(_) => all.to_vec(),
    }
}

fn random_bytes(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 32) as u8
        })
        .collect()
}

fn inputs(len: usize) -> Vec<(&'static str, Vec<u8>)> {
    let mut log = gen::tool_output(42, len);
    log.truncate(len);
    vec![("log", log), ("random", random_bytes(len))]
}

fn spiller(
    store: &Store,
    inline: usize,
    compression: Compression,
    durability: Durability,
) -> Spiller {
    // The store path's cases measure the raw render (the terminal group
    // measures the render itself).
    let policy = Policy::builder()
        .max_inline_bytes(inline as u64)
        .compression(compression)
        .durability(durability)
        .render(Render::Raw)
        .build()
        .unwrap();
    Spiller::new(policy, store.clone()).unwrap()
}

/// Plain build and test log text: no escape, `\r` or backspace.
fn plain_log(len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 128);
    let mut i = 0u64;
    while out.len() < len {
        i += 1;
        let line = match i % 5 {
            0 => format!("test module_{i}::case_{} ... ok\n", i % 997),
            1 => format!("   Compiling crate-{i} v0.{}.0 (/src/crate-{i})\n", i % 50),
            2 => format!(
                "warning: unused variable `x{i}` --> src/lib.rs:{}:9\n",
                i % 400
            ),
            3 => format!(
                "2026-12-03T10:{:02}:{:02}Z INFO request {i} served in {} ms\n",
                i % 60,
                i % 59,
                i % 300
            ),
            _ => format!(
                "    Finished step {i} of the build in {}.{}s\n",
                i % 9,
                i % 10
            ),
        };
        out.extend_from_slice(line.as_bytes());
    }
    out.truncate(len);
    out
}

/// Heavily coloured build output: every line has SGR sequences, as cargo
/// and pytest print to a terminal.
fn coloured_log(len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 128);
    let mut i = 0u64;
    while out.len() < len {
        i += 1;
        let line = match i % 4 {
            0 => format!(
                "\x1b[1m\x1b[92m   Compiling\x1b[0m crate-{i} v0.{}.0\n",
                i % 50
            ),
            1 => format!("\x1b[1m\x1b[33mwarning\x1b[0m\x1b[1m: unused variable `x{i}`\x1b[0m\n"),
            2 => format!("  \x1b[1m\x1b[94m-->\x1b[0m src/lib.rs:{}:9\n", i % 400),
            _ => format!(
                "test_mod.py::test_{i} \x1b[32mPASSED\x1b[0m\x1b[32m [{:>3}%]\x1b[0m\n",
                i % 100
            ),
        };
        out.extend_from_slice(line.as_bytes());
    }
    out.truncate(len);
    out
}

/// A badly failing build: three lines in four match a salient pattern
/// (compiler errors, warnings, error-level log lines), with ids, paths and
/// numbers that differ from line to line.
fn flood_log(len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 128);
    let mut i = 0u64;
    while out.len() < len {
        i += 1;
        let line = match i % 4 {
            0 => format!("error[E0425]: cannot find value `v{i}` in this scope\n"),
            1 => format!("   --> src/module_{}/file_{i}.rs:{}:17\n", i % 37, i % 900),
            2 => format!(
                "warning: unused variable `x{i}` --> src/lib.rs:{}:9\n",
                i % 400
            ),
            _ => format!(
                "2026-12-03T10:{:02}:{:02}Z ERROR request {i} failed: connection reset by 10.0.{}.{}\n",
                i % 60,
                i % 59,
                i % 250,
                i % 200
            ),
        };
        out.extend_from_slice(line.as_bytes());
    }
    out.truncate(len);
    out
}

/// Binary output read as text: runs of NUL bytes, other C0 controls the
/// terminal ignores (BEL, VT, FF, SOH…) and a line end every 4 KiB or so,
/// as when a program prints a core file or a compressed stream's zeros.
fn control_log(len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 4096);
    let mut i = 0usize;
    while out.len() < len {
        i += 1;
        out.resize(out.len() + 1000 + (i * 37) % 2000, 0);
        for _ in 0..10 {
            out.extend_from_slice(b"\x01\x02\x03\x04\x05\x06\x07\x0b\x0c\x1c");
        }
        if i.is_multiple_of(2) {
            out.push(b'\n');
        }
    }
    out.truncate(len);
    out
}

fn terminal(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("store")).unwrap();
    let budget = 32 * KIB;
    let make = |render: Render, salient: bool, tokens: Option<u64>| {
        let mut b = Policy::builder();
        b.max_inline_bytes(budget as u64)
            .compression(Compression::None)
            .durability(Durability::Relaxed)
            .render(render)
            .max_inline_tokens(tokens);
        if !salient {
            b.salient(Vec::<String>::new());
        }
        Spiller::new(b.build().unwrap(), store.clone()).unwrap()
    };
    let raw = make(Render::Raw, false, None);
    let term = make(Render::Terminal, false, None);
    let salient = make(Render::Terminal, true, None);
    // About the default budget's worth of tokens: the shrink loop runs.
    let tokens = make(Render::Terminal, false, Some(6000));
    // Load the vocabulary outside the timed region.
    tokens.apply(&plain_log(64 * KIB)).unwrap();
    for len in sizes() {
        if len <= budget {
            continue;
        }
        let measure = measurement(len);
        let kinds = [
            ("plain", plain_log(len)),
            ("coloured", coloured_log(len)),
            ("flood", flood_log(len)),
            ("control", control_log(len)),
        ];
        for (kind, input) in kinds {
            let mut g = c.benchmark_group(format!("terminal/{kind}"));
            g.throughput(Throughput::Bytes(len as u64));
            g.measurement_time(measure)
                .sample_size(if len >= 16 * MIB { 10 } else { 30 });
            let cases: [(&str, &Spiller); 4] = [
                ("stage-raw-render", &raw),
                ("stage-terminal", &term),
                ("stage-terminal-salient", &salient),
                ("stage-terminal-tokens", &tokens),
            ];
            for (name, sp) in cases {
                let mut owned = input.clone();
                g.bench_function(BenchmarkId::new(name, len), |b| {
                    b.iter_custom(|iters| {
                        fresh(iters, &mut owned, &store, |i| {
                            let o = sp.apply(i).unwrap();
                            assert!(o.spilled);
                            black_box(o);
                        })
                    })
                });
            }
            g.finish();
        }
    }
}

/// Times `f` on a fresh variant of `input` per iteration (so nothing is a
/// dedup hit), removing what it stored outside the timed region. The
/// variant is the run number in eight ASCII digits over the first bytes:
/// text stays text (a NUL byte would make it binary, which is neither
/// rendered nor scanned).
fn fresh<F>(iters: u64, input: &mut [u8], store: &Store, mut f: F) -> Duration
where
    F: FnMut(&[u8]),
{
    let mut total = Duration::ZERO;
    for i in 0..iters {
        let n = input.len().min(8);
        let tag = format!("{:08}", i % 100_000_000);
        input[..n].copy_from_slice(&tag.as_bytes()[..n]);
        let t = Instant::now();
        f(input);
        total += t.elapsed();
        let _ = std::fs::remove_dir_all(objects_dir(store));
    }
    total
}

/// A local store's directory.
fn store_dir(store: &Store) -> &Path {
    store.location().as_dir().expect("a local store")
}

/// Its objects, `v1/objects` (removed between iterations, so that nothing
/// is a dedup hit).
fn objects_dir(store: &Store) -> std::path::PathBuf {
    store_dir(store).join("v1").join("objects")
}

/// How long to measure one case of this size.
fn measurement(len: usize) -> Duration {
    if len >= 16 * MIB {
        Duration::from_secs(8)
    } else {
        Duration::from_secs(3)
    }
}

fn inline(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let sp = spiller(&store, 64 * MIB, Compression::None, Durability::Relaxed);
    for len in sizes() {
        let measure = measurement(len);
        for (kind, input) in inputs(len) {
            if kind == "random" {
                continue; // random bytes are not UTF-8: never inline
            }
            let mut g = c.benchmark_group(format!("inline/{kind}"));
            g.throughput(Throughput::Bytes(len as u64));
            g.measurement_time(measure)
                .sample_size(if len >= 16 * MIB { 10 } else { 50 });
            g.bench_with_input(
                BenchmarkId::new("copy+count+validate", len),
                &input,
                |b, i| {
                    b.iter(|| {
                        let v = i.to_vec();
                        let lines = bytecount::count(&v, b'\n');
                        let s = String::from_utf8(v).unwrap();
                        black_box((lines, s))
                    })
                },
            );
            g.bench_with_input(BenchmarkId::new("stage", len), &input, |b, i| {
                b.iter(|| {
                    let o = sp.apply(black_box(i)).unwrap();
                    assert!(!o.spilled);
                    black_box(o)
                })
            });
            g.finish();
        }
    }
}

fn write_file(dir: &Path, bytes: &[u8], sync: bool) {
    let path = dir.join("baseline.tmp");
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(bytes).unwrap();
    if sync {
        f.sync_data().unwrap();
        std::fs::File::open(dir).unwrap().sync_all().unwrap();
    }
    drop(f);
    std::fs::remove_file(path).unwrap();
}

fn spill(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("store")).unwrap();
    store
        .put(b"", Compression::None.write_options(Durability::Relaxed))
        .unwrap();
    let base_dir = store_dir(&store).join("v1").join("tmp");
    let budget = 32 * KIB;
    let raw = spiller(&store, budget, Compression::None, Durability::Relaxed);
    let raw_durable = spiller(&store, budget, Compression::None, Durability::Durable);
    let z1 = spiller(
        &store,
        budget,
        Compression::Zstd { level: 1 },
        Durability::Relaxed,
    );
    let z3 = spiller(
        &store,
        budget,
        Compression::Zstd { level: 3 },
        Durability::Relaxed,
    );
    for len in sizes() {
        if len <= budget {
            continue;
        }
        let measure = measurement(len);
        for (kind, input) in inputs(len) {
            let mut g = c.benchmark_group(format!("spill/{kind}"));
            g.throughput(Throughput::Bytes(len as u64));
            g.measurement_time(measure)
                .sample_size(if len >= 16 * MIB { 10 } else { 30 });
            g.bench_with_input(BenchmarkId::new("blake3", len), &input, |b, i| {
                b.iter(|| black_box(blake3::hash(i)))
            });
            for (name, sync) in [("hash+write", false), ("hash+write+fsync", true)] {
                g.bench_with_input(BenchmarkId::new(name, len), &input, |b, i| {
                    b.iter(|| {
                        let h = blake3::hash(i);
                        write_file(&base_dir, i, sync);
                        black_box(h)
                    })
                });
            }
            for level in [1, 3] {
                g.bench_with_input(
                    BenchmarkId::new(format!("zstd-{level}"), len),
                    &input,
                    |b, i| {
                        b.iter(|| {
                            let mut e =
                                zstd::stream::write::Encoder::new(std::io::sink(), level).unwrap();
                            e.write_all(i).unwrap();
                            black_box(e.finish().unwrap())
                        })
                    },
                );
            }
            let cases: [(&str, &Spiller); 4] = [
                ("stage-raw", &raw),
                ("stage-raw-durable", &raw_durable),
                ("stage-zstd-1", &z1),
                ("stage-zstd-3", &z3),
            ];
            for (name, sp) in cases {
                let mut owned = input.clone();
                g.bench_function(BenchmarkId::new(name, len), |b| {
                    b.iter_custom(|iters| {
                        fresh(iters, &mut owned, &store, |i| {
                            let o = sp.apply(i).unwrap();
                            assert!(o.spill.is_some());
                            black_box(o);
                        })
                    })
                });
            }
            // A dedup hit: the object is already stored.
            raw.apply(&input).unwrap();
            g.bench_with_input(BenchmarkId::new("stage-dedup-hit", len), &input, |b, i| {
                b.iter(|| {
                    let o = raw.apply(i).unwrap();
                    assert!(o.spill.as_ref().unwrap().dedup);
                    black_box(o)
                })
            });
            let _ = std::fs::remove_dir_all(objects_dir(&store));
            g.finish();
        }
    }
}

fn read(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let len = 64 * MIB;
    if !sizes().contains(&len) {
        return;
    }
    let mut input = gen::tool_output(7, len);
    input.truncate(len);
    let mut g = c.benchmark_group("read");
    g.throughput(Throughput::Bytes(len as u64));
    g.measurement_time(Duration::from_secs(8)).sample_size(10);
    for compression in [Compression::None, Compression::Zstd { level: 1 }] {
        let s = store
            .put(&input, compression.write_options(Durability::Relaxed))
            .unwrap();
        let id: ContentId = s.id;
        let lines = bytecount::count(&input, b'\n') as u64;
        let middle = LineRange::new(lines / 2, Some(lines / 2 + 100)).unwrap();
        g.bench_function(
            BenchmarkId::new(format!("show-all-{}", compression.name()), len),
            |b| b.iter(|| black_box(store.read(&id, &Selection::All).unwrap())),
        );
        g.bench_function(
            BenchmarkId::new(format!("show-lines-{}", compression.name()), len),
            |b| b.iter(|| black_box(store.read(&id, &Selection::Lines(middle)).unwrap())),
        );
        std::fs::remove_file(&s.path).unwrap();
    }
    g.finish();
}

/// A JSON document of about `len` bytes: an object holding an array of
/// records (numbers, short strings, a nested array) and a long log string.
fn json_doc(len: usize) -> Vec<u8> {
    let mut d = Vec::with_capacity(len + 256);
    // `fresh_json` writes a run number over the zeros.
    d.extend_from_slice(b"{\"run\":\"00000000\",\"status\":\"failed\",\"results\":[");
    let mut i = 0u64;
    while d.len() < len * 9 / 10 {
        if i > 0 {
            d.push(b',');
        }
        write!(
            d,
            "{{\"id\":{i},\"name\":\"test_case_{i}\",\"ok\":{},\"ms\":{},\"tags\":[\"unit\",\"fast\"]}}",
            i % 1000 != 7,
            i % 997
        )
        .unwrap();
        i += 1;
    }
    d.extend_from_slice(b"],\"log\":\"");
    while d.len() < len - 2 {
        d.extend_from_slice(b"step ok\\n");
    }
    d.truncate(len - 2);
    // Never end inside an escape.
    while d.ends_with(b"\\") {
        d.pop();
    }
    d.extend_from_slice(b"\"}");
    d
}

/// A JSON document of about `len` bytes with more text than structure: an
/// array of articles (a title and a body of a few hundred bytes each), as a
/// web API or a search tool returns them.
fn json_articles(len: usize) -> Vec<u8> {
    let mut d = Vec::with_capacity(len + 1024);
    d.extend_from_slice(b"{\"run\":\"00000000\",\"articles\":[");
    let words = [
        "spill", "budget", "preview", "harness", "model", "context", "token", "stream",
    ];
    let mut i = 0usize;
    while d.len() < len - 1024 {
        if i > 0 {
            d.push(b',');
        }
        let body: Vec<&str> = (0..48)
            .map(|k| words[(i * 7 + k * 3) % words.len()])
            .collect();
        write!(
            d,
            "{{\"id\":{i},\"title\":\"On the {} of the {}\",\"body\":\"{}\",\"score\":{}}}",
            words[i % 8],
            words[(i / 8) % 8],
            body.join(" "),
            i % 101
        )
        .unwrap();
        i += 1;
    }
    d.extend_from_slice(b"]}");
    d
}

/// The JSON preview beside the text preview of the same document, both
/// storing it (zstd-1, relaxed): a document dense with small values, and
/// one with more text.
fn json(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("store")).unwrap();
    let budget = 32 * KIB;
    let make = |format: spillway::Format| {
        let policy = Policy::builder()
            .max_inline_bytes(budget as u64)
            .durability(Durability::Relaxed)
            .format(format)
            .render(Render::Raw)
            .build()
            .unwrap();
        Spiller::new(policy, store.clone()).unwrap()
    };
    let text = make(spillway::Format::Text);
    let json = make(spillway::Format::Json);
    for len in sizes() {
        if len <= budget {
            continue;
        }
        for (kind, input) in [("records", json_doc(len)), ("articles", json_articles(len))] {
            assert_eq!(
                json.apply(&input).unwrap().format,
                spillway::ContentFormat::Json
            );
            let mut g = c.benchmark_group(format!("json/{kind}"));
            g.throughput(Throughput::Bytes(len as u64));
            g.measurement_time(measurement(len))
                .sample_size(if len >= 16 * MIB { 10 } else { 30 });
            for (name, sp) in [("text-preview", &text), ("json-preview", &json)] {
                let mut owned = input.clone();
                g.bench_function(BenchmarkId::new(name, len), |b| {
                    b.iter_custom(|iters| {
                        let mut total = Duration::ZERO;
                        for i in 0..iters {
                            // A fresh document each time (nothing is a
                            // dedup hit), still JSON.
                            owned[8..16].copy_from_slice(format!("{:08x}", i as u32).as_bytes());
                            let t = Instant::now();
                            black_box(sp.apply(&owned).unwrap());
                            total += t.elapsed();
                            let _ = std::fs::remove_dir_all(objects_dir(&store));
                        }
                        total
                    })
                });
            }
            g.finish();
        }
    }
}

criterion_group!(benches, inline, spill, read, json, terminal);
criterion_main!(benches);
