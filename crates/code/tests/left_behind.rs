//! Programs that do not stop at their wall-time limit are left behind, and
//! at most four of them at once, however many runs start together: then a
//! new run is refused, until one stops. A binary of its own, since the
//! count is the process's.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use spillway::{Policy, Spiller, Store};
use spillway_code::{JsRuntime, Limits};
use spillway_registry::events::SessionLog;
use spillway_registry::run_code::RunCode;
use spillway_registry::{Registry, ToolCall, ToolResult};

fn run(r: &Registry, code: &str) -> (ToolResult, Duration) {
    let t = Instant::now();
    let result = r
        .call(&ToolCall::new("c", "run_code", json!({ "code": code })))
        .unwrap();
    (result, t.elapsed())
}

fn text(r: &ToolResult) -> &str {
    r.content[0].as_text().unwrap()
}

#[test]
fn at_most_four_programs_are_left_behind_then_runs_are_refused_until_one_stops() {
    let dir = tempfile::tempdir().unwrap();
    let spiller = Spiller::new(Policy::default(), Store::open(dir.path()).unwrap()).unwrap();
    let limits = Limits::builder()
        .timeout(Duration::from_millis(100))
        .build()
        .unwrap();
    let registry = Registry::builder(spiller, Arc::new(SessionLog::discard()))
        .unwrap()
        .tool(RunCode::new(JsRuntime::new(limits)))
        .build();
    // One built-in call of some seconds (a naive search of 75,000
    // characters in 150,000), in which the engine never looks at its clock.
    let stuck = "const s = 'a'.repeat(1.5e5), p = 'a'.repeat(7.5e4) + 'b'; return s.indexOf(p);";
    // Eight at once: four run and are left behind; the other four find
    // every slot taken until their own limit, and say so. Each answers in
    // time, and no more than four are ever left behind.
    let results: Vec<(ToolResult, Duration)> = std::thread::scope(|s| {
        let runs: Vec<_> = (0..8).map(|_| s.spawn(|| run(&registry, stuck))).collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let mut left = 0;
    for (r, took) in &results {
        assert!(r.is_error);
        assert!(*took < Duration::from_secs(2), "took {took:?}");
        if text(r).contains("left to stop on its own") {
            left += 1;
        } else {
            assert!(
                text(r).contains("4 programs ran at once in this process"),
                "{}",
                text(r)
            );
        }
    }
    assert_eq!(left, 4);
    let (r, took) = run(&registry, "return 1");
    assert!(r.is_error);
    assert!(
        text(&r).contains("4 earlier programs did not stop at their wall-time limit"),
        "{}",
        text(&r)
    );
    // Refused at once: no program started, no limit waited for.
    assert!(took < Duration::from_secs(1), "took {took:?}");
    // They stop at the engine's next look at its clock.
    let until = Instant::now() + Duration::from_secs(120);
    loop {
        let (r, _) = run(&registry, "return 1");
        if !r.is_error {
            assert_eq!(text(&r), "1");
            break;
        }
        assert!(
            Instant::now() < until,
            "the programs left behind never stopped"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
