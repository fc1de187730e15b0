//! The run_code renderer streaming a program's logs and result into the
//! stage (`render/run_code-render-into-stage`), beside applying the same
//! text already rendered (`render/apply-rendered`), measured in the same run.
//!
//! `python3 benches/ratios.py` (at the workspace root) prints the ratio.
//! Set `SPILLWAY_BENCH_SIZES` (e.g. `1MiB,64MiB`) to run fewer sizes; sizes
//! under 1 MiB are skipped.
// The bench cleans up files of its own; the rules of clippy.toml are the
// library's.
#![allow(clippy::disallowed_methods)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use spillway::{Compression, Durability, Policy, Render, Spiller, Store};
use spillway_registry::run_code::{render as render_code, RunCodeOutput};

#[path = "../../../tests/support/gen.rs"]
mod gen;

const MIB: usize = 1024 * 1024;

fn sizes() -> Vec<usize> {
    match std::env::var("SPILLWAY_BENCH_SIZES") {
        Ok(list) => list
            .split(',')
            .filter_map(|s| s.trim().parse::<spillway::ByteSize>().ok())
            .map(|b| b.get() as usize)
            .collect(),
        Err(_) => vec![MIB, 16 * MIB, 64 * MIB],
    }
}

fn measurement(len: usize) -> Duration {
    Duration::from_secs(if len >= 16 * MIB { 8 } else { 3 })
}

fn render(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let objects = dir.path().join("v1").join("objects");
    // The raw render: this measures the run_code renderer, not the terminal's.
    let policy = Policy::builder()
        .max_inline_bytes(32 * 1024)
        .compression(Compression::None)
        .durability(Durability::Relaxed)
        .render(Render::Raw)
        .build()
        .unwrap();
    let sp = Spiller::new(policy, store).unwrap();
    for len in sizes() {
        if len < MIB {
            continue;
        }
        let log = gen::tool_output(9, len);
        let logs: Vec<String> = String::from_utf8_lossy(&log)
            .lines()
            .map(str::to_owned)
            .collect();
        let output = RunCodeOutput {
            logs,
            result: Some(serde_json::json!({ "status": "done", "items": [1, 2, 3] })),
        };
        let mut rendered = Vec::new();
        render_code(&output, &mut rendered).unwrap();
        let mut g = c.benchmark_group("render");
        g.throughput(Throughput::Bytes(rendered.len() as u64));
        g.measurement_time(measurement(len)).sample_size(10);
        g.bench_function(BenchmarkId::new("apply-rendered", len), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for i in 0..iters {
                    // A fresh variant per iteration, so nothing is a dedup hit.
                    let n = rendered.len().min(8);
                    rendered[..n].copy_from_slice(&i.to_le_bytes()[..n]);
                    let t = Instant::now();
                    black_box(sp.apply(&rendered).unwrap());
                    total += t.elapsed();
                    let _ = std::fs::remove_dir_all(&objects);
                }
                total
            })
        });
        g.bench_function(BenchmarkId::new("run_code-render-into-stage", len), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for i in 0..iters {
                    let mut out = RunCodeOutput {
                        logs: output.logs.clone(),
                        result: output.result.clone(),
                    };
                    out.logs[0] = format!("{i} {}", out.logs[0]);
                    let t = Instant::now();
                    let mut stage = sp.stage();
                    render_code(&out, &mut stage).unwrap();
                    black_box(stage.finish().unwrap());
                    total += t.elapsed();
                    let _ = std::fs::remove_dir_all(&objects);
                }
                total
            })
        });
        g.finish();
    }
}

criterion_group!(benches, render);
criterion_main!(benches);
