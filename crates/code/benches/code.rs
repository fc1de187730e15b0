//! Code Mode's costs, each beside a baseline measured in the same run:
//!
//! * `code/start`: a program that returns at once (`return 1`), beside a
//!   registry call of a tool that does nothing (`code/noop-call`): what a
//!   run's start costs (a thread, a fresh engine and context, the
//!   prelude). Target: 5 ms.
//! * `code/nested-1000`: a program that makes 1,000 nested calls one after
//!   another, beside 1,000 direct registry calls of the same tool
//!   (`code/direct-1000`) and the program's start: the difference over
//!   1,000 is what a nested call adds. Target: 100 µs.
//! * `print/program`: a program that prints 64 MiB, beside the stage alone
//!   on the same bytes (`print/stage`). Target: 2×.
//!
//! `python3 benches/ratios.py` prints the ratios; `python3 benches/code.py`
//! reports the peak memory of runs and the token comparison.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use serde_json::{json, Value};
use spillway::{Compression, Durability, Policy, Spiller, Store};
use spillway_code::{JsRuntime, Limits};
use spillway_registry::events::SessionLog;
use spillway_registry::run_code::RunCode;
use spillway_registry::{Block, Cx, Registry, Rendered, Tool, ToolCall, ToolError};

struct Noop;
impl Tool for Noop {
    fn name(&self) -> &str {
        "noop"
    }
    fn execute(&self, _cx: &mut Cx<'_>, _args: &Value) -> Result<Rendered, ToolError> {
        Ok(Rendered::Blocks(vec![Block::text("ok")]))
    }
}

fn registry(dir: &std::path::Path) -> Registry {
    let store = Store::open(dir).unwrap();
    let policy = Policy::builder()
        .max_inline_bytes(32 * 1024)
        .compression(Compression::None)
        .durability(Durability::Relaxed)
        .build()
        .unwrap();
    let limits = Limits::builder().memory(256 << 20).build().unwrap();
    Registry::builder(
        Spiller::new(policy, store).unwrap(),
        Arc::new(SessionLog::discard()),
    )
    .unwrap()
    .tool(RunCode::new(JsRuntime::new(limits)))
    .tool(Noop)
    .build()
}

fn call(r: &Registry, tool: &str, args: Value) {
    let out = r.call(&ToolCall::new("b", tool, args)).unwrap();
    assert!(!out.is_error, "{:?}", out.content);
    black_box(out);
}

fn code(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let r = registry(dir.path());
    let mut g = c.benchmark_group("code");
    g.sample_size(20).measurement_time(Duration::from_secs(4));
    g.bench_function("noop-call", |b| b.iter(|| call(&r, "noop", json!({}))));
    g.bench_function("start", |b| {
        b.iter(|| call(&r, "run_code", json!({"code": "return 1"})))
    });
    g.bench_function("direct-1000", |b| {
        b.iter(|| {
            for _ in 0..1000 {
                call(&r, "noop", json!({}));
            }
        })
    });
    g.bench_function("nested-1000", |b| {
        b.iter(|| {
            call(
                &r,
                "run_code",
                json!({"code": "for (let i = 0; i < 1000; i++) await tools.noop({}); return 1"}),
            )
        })
    });
    g.finish();
}

fn print(c: &mut Criterion) {
    const LEN: usize = 64 << 20;
    let dir = tempfile::tempdir().unwrap();
    let r = registry(&dir.path().join("store"));
    let objects = dir.path().join("store").join("v1").join("objects");
    // 65,536 prints of a 1,023-byte line: 64 MiB with the newlines. Each
    // line starts with its number, so the program and the baseline write
    // the same bytes.
    let line = "x".repeat(1023);
    let program = format!(
        "const line = '{line}'; for (let i = 0; i < 65536; i++) print(i.toString(36).padStart(4, '0') + line.slice(4));"
    );
    let mut bytes = Vec::with_capacity(LEN);
    for i in 0..65_536u32 {
        if i > 0 {
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(format!("{:0>4}", radix36(i)).as_bytes());
        bytes.extend_from_slice(&line.as_bytes()[4..]);
    }
    let spiller = r.spiller_for("run_code").clone();
    let mut g = c.benchmark_group("print");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    g.bench_function(BenchmarkId::new("stage", LEN), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let t = Instant::now();
                black_box(spiller.apply(&bytes).unwrap());
                total += t.elapsed();
                let _ = std::fs::remove_dir_all(&objects);
            }
            total
        })
    });
    g.bench_function(BenchmarkId::new("program", LEN), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let t = Instant::now();
                call(&r, "run_code", json!({ "code": program }));
                total += t.elapsed();
                let _ = std::fs::remove_dir_all(&objects);
            }
            total
        })
    });
    g.finish();
}

fn radix36(mut n: u32) -> String {
    let digits = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(digits[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap()
}

criterion_group!(benches, code, print);
criterion_main!(benches);
