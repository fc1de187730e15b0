//! Programs that do not stop at their wall-time limit are left behind, and
//! at most four of them at once: then a new run is refused, until one
//! stops. A binary of its own, since the count is the process's.

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
    for _ in 0..4 {
        let (r, took) = run(&registry, stuck);
        assert!(r.is_error);
        assert!(text(&r).contains("left to stop on its own"), "{}", text(&r));
        assert!(took < Duration::from_secs(2), "took {took:?}");
    }
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
