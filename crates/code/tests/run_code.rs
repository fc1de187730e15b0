//! `run_code` running real JavaScript through the registry: the seed's
//! cases, nested calls, the limits and the sandbox.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use spillway::{Policy, Selection, Spiller, Store};
use spillway_code::{JsRuntime, Limits};
use spillway_registry::events::{replay_file, Event, LogSync, SessionLog};
use spillway_registry::run_code::{RunCode, NO_OUTPUT};
use spillway_registry::tools::{Bash, SpillGrep, SpillRead};
use spillway_registry::{Block, Cx, Registry, Rendered, Tool, ToolCall, ToolError, ToolResult};

struct Harness {
    registry: Registry,
    dir: tempfile::TempDir,
}

/// A tool whose value is JSON: `{ "n": … }` back as `{ "twice": 2n }`,
/// or an error when `fail` is set.
struct Twice;
impl Tool for Twice {
    fn name(&self) -> &str {
        "twice"
    }
    fn output_schema(&self) -> Option<Value> {
        Some(json!({"type": "object"}))
    }
    fn execute(&self, _cx: &mut Cx<'_>, args: &Value) -> Result<Rendered, ToolError> {
        if args.get("fail").is_some() {
            return Err(ToolError::Failed("twice: asked to fail".into()));
        }
        let n = args.get("n").and_then(Value::as_i64).unwrap_or(0);
        Ok(Rendered::Blocks(vec![Block::text(
            json!({"twice": 2 * n}).to_string(),
        )]))
    }
}

/// `n` bytes of text: lines of 99 `x` and a newline.
struct Big;
impl Tool for Big {
    fn name(&self) -> &str {
        "big"
    }
    fn execute(&self, cx: &mut Cx<'_>, args: &Value) -> Result<Rendered, ToolError> {
        let n = args.get("bytes").and_then(Value::as_u64).unwrap_or(0) as usize;
        let mut stage = cx.stage();
        let line = [b"x".repeat(99), b"\n".to_vec()].concat();
        let mut left = n;
        while left > 0 {
            let k = left.min(line.len());
            stage.feed(&line[..k]);
            left -= k;
        }
        Ok(Rendered::Streamed(cx.finish(stage)?))
    }
}

/// A tool of a group, as a proxy in front of several servers has them:
/// `tools.gh["search-issues"]`, whose value is a JSON value.
struct Grouped;
impl Tool for Grouped {
    fn name(&self) -> &str {
        "gh/search-issues"
    }
    fn group(&self) -> Option<&str> {
        Some("gh")
    }
    fn member(&self) -> &str {
        "search-issues"
    }
    fn execute(&self, _cx: &mut Cx<'_>, args: &Value) -> Result<Rendered, ToolError> {
        Ok(Rendered::Json(json!({"query": args["q"], "hits": [1, 2]})))
    }
}

/// A tool whose backend is gone.
struct Gone;
impl Tool for Gone {
    fn name(&self) -> &str {
        "gone"
    }
    fn execute(&self, _cx: &mut Cx<'_>, _args: &Value) -> Result<Rendered, ToolError> {
        Err(ToolError::Unavailable("the server exited".into()))
    }
}

fn harness_with(budget: u64, limits: Limits) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("store")).unwrap();
    let policy = Policy::builder()
        .max_inline_bytes(budget)
        .templates(spillway_registry::spill_read_templates())
        .build()
        .unwrap();
    let spiller = Spiller::new(policy, store).unwrap();
    let log =
        Arc::new(SessionLog::open(dir.path().join("session.jsonl"), LogSync::EveryEvent).unwrap());
    let registry = Registry::builder(spiller, log)
        .unwrap()
        .tool(RunCode::new(JsRuntime::new(limits)))
        .tool(Bash::default())
        .tool(SpillRead)
        .tool(SpillGrep)
        .tool(Twice)
        .tool(Big)
        .tool(Grouped)
        .tool(Gone)
        .build();
    Harness { registry, dir }
}

fn harness() -> Harness {
    harness_with(4096, Limits::default())
}

fn limited(f: impl FnOnce(&mut spillway_code::LimitsBuilder)) -> Harness {
    let mut b = Limits::builder();
    f(&mut b);
    harness_with(4096, b.build().unwrap())
}

fn run(h: &Harness, id: &str, code: &str) -> ToolResult {
    h.registry
        .call(&ToolCall::new(id, "run_code", json!({ "code": code })))
        .unwrap()
}

fn text(r: &ToolResult) -> &str {
    r.content[0].as_text().unwrap()
}

/// The whole output a result stored.
fn stored(h: &Harness, r: &ToolResult) -> Vec<u8> {
    h.registry
        .store()
        .read(&r.meta.spills[0], &Selection::All)
        .unwrap()
}

fn events(h: &Harness) -> Vec<Event> {
    replay_file(&h.dir.path().join("session.jsonl"))
        .unwrap()
        .events
}

/// Taken by the tests that leave programs behind: each waits for its
/// programs to stop before it ends ([`LeavesBehind`]), so that they never
/// hold the process's few program slots while other tests run.
static LEAVING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Held by a test that leaves programs behind; waits for them to stop when
/// dropped.
struct LeavesBehind(#[allow(dead_code)] std::sync::MutexGuard<'static, ()>);

impl LeavesBehind {
    fn new() -> Self {
        LeavesBehind(
            LEAVING
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }
}

impl Drop for LeavesBehind {
    fn drop(&mut self) {
        let until = Instant::now() + Duration::from_secs(120);
        while spillway_code::programs_left_behind() > 0 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The next run works and sees nothing of the one before.
fn next_run_works(h: &Harness) {
    let r = run(h, "after", "return typeof leaked + ':' + (1 + 1)");
    assert!(!r.is_error, "{}", text(&r));
    assert_eq!(text(&r), "undefined:2");
}

// ---- the seed's cases ----

#[test]
fn logs_only() {
    let h = harness();
    let r = run(
        &h,
        "c1",
        "print('first'); console.log('second', 2, {a: 1});",
    );
    assert!(!r.is_error);
    assert_eq!(text(&r), "first\nsecond 2 {\"a\":1}");
}

#[test]
fn result_only_is_json_and_strings_are_verbatim() {
    let h = harness();
    let r = run(&h, "c1", "return {answer: 42, list: [1, 'two', null]};");
    assert_eq!(text(&r), r#"{"answer":42,"list":[1,"two",null]}"#);
    let r = run(&h, "c2", "return 'plain \"text\"';");
    assert_eq!(text(&r), "plain \"text\"");
}

#[test]
fn logs_then_result() {
    let h = harness();
    let r = run(&h, "c1", "print('saw it'); return [1, 2];");
    assert_eq!(text(&r), "saw it\n[1,2]");
}

#[test]
fn neither_logs_nor_result_says_so() {
    let h = harness();
    assert_eq!(text(&run(&h, "c1", "let x = 1;")), NO_OUTPUT);
    assert_eq!(text(&run(&h, "c2", "return '';")), NO_OUTPUT);
    assert_eq!(text(&run(&h, "c3", "return undefined;")), NO_OUTPUT);
}

#[test]
fn a_spilled_result_is_bounded_and_stored_whole() {
    let h = harness();
    let r = run(
        &h,
        "c1",
        "const rows = []; for (let i = 0; i < 5000; i++) rows.push({id: i, ok: i !== 2500}); return rows;",
    );
    assert!(!r.is_error);
    assert!(text(&r).len() <= 4096, "{}", text(&r).len());
    let full = stored(&h, &r);
    let v: Value = serde_json::from_slice(&full).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 5000);
    assert_eq!(v[2500], json!({"id": 2500, "ok": false}));
}

#[test]
fn a_failure_keeps_its_logs_and_names_the_error_and_line() {
    let h = harness();
    let r = run(
        &h,
        "c1",
        "print('step 1 ok');\nprint('step 2 ok');\nnull.x;",
    );
    assert!(r.is_error);
    let t = text(&r);
    assert!(
        t.starts_with("step 1 ok\nstep 2 ok\nCODE_RUN_FAILED: Uncaught TypeError: "),
        "{t}"
    );
    assert!(t.contains("run_code:3"), "the line of the error: {t}");
    let r = run(&h, "c2", "throw 'plain'");
    assert_eq!(text(&r), "CODE_RUN_FAILED: Uncaught plain");
    // A program's own `null` is not mistaken for the engine out of memory.
    let r = run(&h, "c4", "throw null");
    assert_eq!(text(&r), "CODE_RUN_FAILED: Uncaught null");
    // A thrown `undefined` reads as JavaScript writes it.
    let r = run(&h, "c5", "throw undefined");
    assert_eq!(text(&r), "CODE_RUN_FAILED: Uncaught undefined");
    // A place on line 1 has the same column as on any other line.
    let r = run(&h, "c6", "throw new Error('bad')");
    assert!(text(&r).ends_with("run_code:1:11)"), "{}", text(&r));
    let r = run(&h, "c7", "\nthrow new Error('bad')");
    assert!(text(&r).ends_with("run_code:2:11)"), "{}", text(&r));
    // A program that ends too soon is said so, at its end, not at the
    // wrapper's closing brace.
    for (code, place) in [
        ("return (", "run_code:1:9"),
        ("let a = 1\nreturn (a", "run_code:2:10"),
    ] {
        let r = run(&h, "c8", code);
        let t = text(&r);
        assert!(
            t.starts_with("CODE_RUN_FAILED: Uncaught SyntaxError: the program ends in the middle"),
            "{code}: {t}"
        );
        assert!(t.contains(place), "{code}: {t}");
    }
    let r = run(&h, "c3", "this is not javascript");
    assert!(
        text(&r).starts_with("CODE_RUN_FAILED: Uncaught SyntaxError"),
        "{}",
        text(&r)
    );
}

#[test]
fn the_seed_program_two_nested_bash_calls_events_and_one_card() {
    let h = harness();
    let code = "const a = await tools.bash({command: 'echo CODE_ONE'});\n\
                const b = await tools.bash({command: 'echo CODE_TWO'});\n\
                print('captured: ' + a.trim()); print('captured: ' + b.trim());\n\
                return a.trim() + '+' + b.trim();";
    let r = run(&h, "outer", code);
    assert!(!r.is_error, "{}", text(&r));
    assert_eq!(
        text(&r),
        "captured: CODE_ONE\ncaptured: CODE_TWO\nCODE_ONE+CODE_TWO"
    );
    let ev = events(&h);
    let starts: Vec<_> = ev
        .iter()
        .filter_map(|e| match e {
            Event::CodeDispatchStart {
                sub_call_id,
                parent_call_id,
                args,
                ..
            } => Some((sub_call_id.clone(), parent_call_id.clone(), args.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        starts,
        vec![
            (
                "outer:code:1".into(),
                "outer".into(),
                json!({"command": "echo CODE_ONE"})
            ),
            (
                "outer:code:2".into(),
                "outer".into(),
                json!({"command": "echo CODE_TWO"})
            ),
        ]
    );
    let done = ev
        .iter()
        .filter(|e| matches!(e, Event::CodeDispatch { .. }))
        .count();
    assert_eq!(done, 2);
    let cards = spillway_registry::card::cards(&ev);
    assert_eq!(cards.len(), 1, "one card per outer call");
}

// ---- nested calls ----

#[test]
fn json_tools_give_values_and_errors_reject_catchably() {
    let h = harness();
    let code = "const v = await tools.twice({n: 21});\n\
                let caught = 'none';\n\
                try { await tools.twice({fail: true}); } catch (e) { caught = e instanceof Error ? e.message : 'not an Error'; }\n\
                return {v: v.twice, caught};";
    let r = run(&h, "c1", code);
    assert_eq!(text(&r), r#"{"v":42,"caught":"twice: asked to fail"}"#);
    // An unknown tool is not there to call.
    let r = run(
        &h,
        "c2",
        "return typeof tools.nope + ',' + typeof tools.run_code;",
    );
    assert_eq!(text(&r), "undefined,undefined");
}

#[test]
fn calls_started_together_run_at_once_in_start_order() {
    let h = harness();
    let code = "const t0 = Date.now();\n\
                const outs = await Promise.all([1, 2, 3, 4].map(i => tools.bash({command: `sleep 1; echo ${i}`})));\n\
                return {outs: outs.map(o => o.trim()), ms: Date.now() - t0};";
    let started = Instant::now();
    let r = run(&h, "p", code);
    let elapsed = started.elapsed();
    let v: Value = serde_json::from_str(text(&r)).unwrap();
    assert_eq!(v["outs"], json!(["1", "2", "3", "4"]));
    assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
    let ids: Vec<String> = events(&h)
        .into_iter()
        .filter_map(|e| match e {
            Event::CodeDispatchStart {
                sub_call_id, args, ..
            } => Some(format!(
                "{sub_call_id} {}",
                args["command"].as_str().unwrap()
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        ids,
        (1..=4)
            .map(|i| format!("p:code:{i} sleep 1; echo {i}"))
            .collect::<Vec<_>>()
    );
}

#[test]
fn a_50_mb_nested_value_reaches_the_program_whole_and_the_result_is_bounded() {
    let h = limited(|l| {
        l.memory(256 << 20);
    });
    let code = "const out = await tools.big({bytes: 50000000});\n\
                let lines = 0; for (let i = out.indexOf('\\n'); i >= 0; i = out.indexOf('\\n', i + 1)) lines++;\n\
                print('length ' + out.length);\n\
                return {lines};";
    let r = run(&h, "c1", code);
    assert!(!r.is_error, "{}", text(&r));
    assert_eq!(text(&r), "length 50000000\n{\"lines\":500000}");
    // Its durable copy in the dispatch event is bounded.
    let bounded = events(&h).into_iter().find_map(|e| match e {
        Event::CodeDispatch {
            content, spills, ..
        } => Some((content, spills)),
        _ => None,
    });
    let (content, spills) = bounded.unwrap();
    assert!(content[0].as_text().unwrap().len() <= 4096);
    assert_eq!(spills.len(), 1);
}

#[test]
fn grouped_tools_are_reached_by_group_and_json_values_come_parsed() {
    let h = harness();
    let r = run(
        &h,
        "c1",
        "const v = await tools.gh['search-issues']({q: 'bug'}); return [v.query, v.hits.length, Object.isFrozen(tools.gh)];",
    );
    assert_eq!(text(&r), r#"["bug",2,true]"#);
    let sdk = h.registry.sdk();
    assert!(
        sdk.contains("  gh: {\n    \"search-issues\"(args: "),
        "{sdk}"
    );
    assert!(sdk.contains("\n  bash(args: {"), "{sdk}");
}

#[test]
fn a_tool_that_is_gone_fails_the_run_even_when_caught() {
    let h = harness();
    let r = run(
        &h,
        "c1",
        "print('before'); try { await tools.gone({}); } catch (e) { print('caught'); } return 'after';",
    );
    assert!(r.is_error);
    assert_eq!(text(&r), "before\nCODE_RUN_FAILED: the server exited");
    next_run_works(&h);
}

#[test]
fn odd_values_and_arguments_get_clear_results() {
    let h = harness();
    let cases = [
        // A lone surrogate has no UTF-8: U+FFFD, in a log and in a result.
        ("print('a \\ud800 b'); return '\\ud800 lone'", "a \u{FFFD} b\n\u{FFFD} lone", false),
        ("return {s: '\\ud800'}", r#"{"s":"\ud800"}"#, false),
        // A program that overrides the methods a guard in the sandbox
        // would call still cannot send the host a string that is not
        // UTF-8: the host converts.
        (
            "String.prototype.isWellFormed = () => true; String.prototype.toWellFormed = function () { return this }; print('a\\uD800b'); return 'x\\uDC00y'",
            "a\u{FFFD}b\nx\u{FFFD}y",
            false,
        ),
        // A NUL in a log line, a result or a failure shows as U+2400, and
        // the rest of the output stays text.
        ("print('a\\u0000b'); return 'c\\0d'", "a\u{2400}b\nc\u{2400}d", false),
        (
            "print('a\\u0000b'); throw new Error('the real error\\0')",
            "a\u{2400}b\nCODE_RUN_FAILED: Uncaught Error: the real error\u{2400}\n    at <anonymous> (run_code:1:30)",
            true,
        ),
        ("return [undefined, NaN, new Date(0)]", r#"[null,null,"1970-01-01T00:00:00.000Z"]"#, false),
        ("return () => 1", NO_OUTPUT, false),
        ("return 10n", "CODE_RUN_FAILED: the returned value is not JSON: Uncaught TypeError: BigInt are forbidden in JSON.stringify", true),
        ("const a = {}; a.a = a; return a", "CODE_RUN_FAILED: the returned value is not JSON: Uncaught TypeError: circular reference", true),
    ];
    for (i, (code, want, is_error)) in cases.into_iter().enumerate() {
        let r = run(&h, &format!("c{i}"), code);
        assert_eq!((text(&r), r.is_error), (want, is_error), "{code}");
    }
    let r = run(&h, "f", "return tools.bash(() => 1)");
    assert!(
        text(&r).starts_with("CODE_RUN_FAILED: Uncaught TypeError: tools.bash takes its arguments as one JSON object"),
        "{}",
        text(&r)
    );
}

#[test]
fn calls_a_program_leaves_behind_are_stopped_and_recorded() {
    let h = harness();
    let started = Instant::now();
    let r = run(
        &h,
        "c1",
        "for (let i = 0; i < 20; i++) tools.bash({command: 'sleep 5'}); return 'left them'",
    );
    assert_eq!(text(&r), "left them");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    // Every call that started has its dispatch event, run or not.
    let ev = events(&h);
    let starts = ev
        .iter()
        .filter(|e| matches!(e, Event::CodeDispatchStart { .. }))
        .count();
    let done = ev
        .iter()
        .filter(|e| matches!(e, Event::CodeDispatch { .. }))
        .count();
    assert_eq!((starts, done), (20, 20));
}

// ---- streaming and bounds ----

#[test]
fn a_flood_of_prints_is_bounded_and_stored_whole() {
    let h = harness();
    let r = run(
        &h,
        "c1",
        "for (let i = 0; i < 200000; i++) print('progress line ' + i); print('error: the last line matters');",
    );
    assert!(!r.is_error);
    let t = text(&r);
    assert!(t.len() <= 4096);
    assert!(t.starts_with("progress line 0\n"));
    assert!(t.ends_with("error: the last line matters"), "{t}");
    let full = stored(&h, &r);
    assert_eq!(full.iter().filter(|&&b| b == b'\n').count(), 200_000);
}

/// The sizes users hit most: an output that fits, and one just over its
/// budget, half again, twice. What fits comes back whole and nothing is
/// stored; what does not is bounded, starts and ends as the output does,
/// and its stored copy is the whole output, byte for byte.
#[test]
fn outputs_at_and_just_over_the_budget() {
    let h = harness();
    for (i, factor) in [0.99, 1.02, 1.5, 2.0].into_iter().enumerate() {
        // Each line 51 bytes and its newline; then the result, `done`.
        let n = ((factor * 4096.0 - 4.0) / 52.0) as usize;
        let code = format!(
            "for (let i = 0; i < {n}; i++) print('line ' + String(i).padStart(5, '0') + ' ' + 'x'.repeat(40)); return 'done';"
        );
        let mut full = String::new();
        for i in 0..n {
            full.push_str(&format!("line {i:05} {}\n", "x".repeat(40)));
        }
        full.push_str("done");
        let r = run(&h, &format!("s{i}"), &code);
        assert!(!r.is_error);
        let t = text(&r);
        if full.len() <= 4096 {
            assert_eq!(t, full, "{factor}");
            assert!(r.meta.spills.is_empty());
            continue;
        }
        assert!(t.len() <= 4096, "{factor}: {}", t.len());
        assert!(
            t.starts_with("line 00000 ") && t.ends_with("\ndone"),
            "{factor}: {t}"
        );
        assert_eq!(stored(&h, &r), full.as_bytes(), "{factor}");
        // A failure just as long keeps its error in the preview's tail.
        let failing = code.replace("return 'done';", "throw new Error('boom');");
        let r = run(&h, &format!("f{i}"), &failing);
        assert!(r.is_error && text(&r).len() <= 4096);
        assert!(
            text(&r).contains("\nCODE_RUN_FAILED: Uncaught Error: boom"),
            "{factor}: {}",
            text(&r)
        );
        // Logs with a NUL in every line, as long: still text, bounded, with
        // each NUL shown and the failure kept, never a binary notice.
        let nul = failing.replace("' ' + 'x'.repeat(40)", "'\\0' + 'x'.repeat(40)");
        let r = run(&h, &format!("n{i}"), &nul);
        let t = text(&r);
        assert!(r.is_error && t.len() <= 4096, "{factor}: {}", t.len());
        assert!(t.starts_with("line 00000\u{2400}x"), "{factor}: {t}");
        assert!(
            t.contains("\nCODE_RUN_FAILED: Uncaught Error: boom"),
            "{factor}: {t}"
        );
        assert!(
            !stored(&h, &r).contains(&0),
            "{factor}: the stored output holds no NUL"
        );
    }
}

// ---- limits ----

fn assert_limit(r: &ToolResult, started: Instant, limit_s: f64, needle: &str) {
    assert!(r.is_error);
    let t = text(r);
    assert!(t.contains("CODE_RUN_FAILED") && t.contains(needle), "{t}");
    assert!(t.len() <= 4096);
    let took = started.elapsed().as_secs_f64();
    assert!(took < limit_s + 1.0, "took {took} s");
}

#[test]
fn an_endless_loop_ends_at_the_wall_time_limit() {
    let h = limited(|l| {
        l.timeout(Duration::from_secs(1));
    });
    let t = Instant::now();
    let r = run(&h, "c1", "print('before'); while (true) {}");
    assert_limit(&r, t, 1.0, "wall-time limit of 1 s");
    assert!(text(&r).starts_with("before\n"));
    next_run_works(&h);
}

#[test]
fn endless_printing_ends_at_the_limit_bounded_with_its_output_stored() {
    let h = limited(|l| {
        l.timeout(Duration::from_secs(1));
    });
    let t = Instant::now();
    let r = run(&h, "c1", "let i = 0; while (true) print('x' + i++);");
    assert_limit(&r, t, 1.0, "wall-time limit");
    let full = stored(&h, &r);
    assert!(full.starts_with(b"x0\nx1\n"));
    assert!(full.ends_with(b"CODE_RUN_FAILED: the program ran past its wall-time limit of 1 s"));
    next_run_works(&h);
}

#[test]
fn a_timer_past_the_limit_or_a_promise_never_settled_ends_the_run() {
    let h = limited(|l| {
        l.timeout(Duration::from_secs(1));
    });
    let t = Instant::now();
    let r = run(&h, "c1", "await new Promise(r => setTimeout(r, 60000));");
    assert_limit(&r, t, 1.0, "wall-time limit");
    let r = run(&h, "c2", "await new Promise(() => {});");
    assert!(text(&r).contains("waiting for a promise that nothing will settle"));
    let r = run(
        &h,
        "c3",
        "const order = []; setTimeout(() => order.push('b'), 20); setTimeout(() => order.push('a'), 5);\n\
         const id = setTimeout(() => order.push('never'), 10); clearTimeout(id);\n\
         await new Promise(r => setTimeout(r, 50)); return order;",
    );
    assert_eq!(text(&r), r#"["a","b"]"#);
}

#[test]
fn a_costly_built_in_in_every_turn_of_a_loop_ends_at_the_wall_time_limit() {
    // The engine polls its interrupt only every ten thousand turns: a
    // megabyte string made in every turn once ran seconds past the limit.
    let h = limited(|l| {
        l.timeout(Duration::from_millis(300));
        l.memory(8 << 20);
    });
    for code in [
        "let v = []; for (let i = 0; i < 1e5; i++) v = [v], 'x'.repeat(1e6)",
        "for (;;) 'x'.repeat(1e6)",
        "for (;;) { try { 'x'.repeat(1e6) } catch (e) {} }",
        "const a = []; for (;;) { try { a.push(JSON.stringify(new Array(1e4).fill('x'))) } catch (e) {} }",
    ] {
        let t = Instant::now();
        let r = run(&h, "c1", code);
        assert_limit(&r, t, 0.3, "wall-time limit of 0.3 s");
        assert!(!text(&r).contains("left to stop"), "{code}: {}", text(&r));
    }
    next_run_works(&h);
}

/// One built-in call of some seconds, in which the engine never looks at
/// its clock: a naive search of 50,000 characters in 100,000.
const STUCK: &str = "const s = 'a'.repeat(1e5), p = 'a'.repeat(5e4) + 'b'; return s.indexOf(p);";

#[test]
fn a_program_that_does_not_stop_at_its_limit_is_left_behind_and_the_call_answers() {
    let _serial = LeavesBehind::new();
    let h = limited(|l| {
        l.timeout(Duration::from_millis(300));
    });
    // Before the stuck call, logs just over the budget (none of them sent
    // yet: a batch is 64 KiB), then 200 KiB (batches sent, and lines not).
    for count in [70, 3000] {
        let line = |i| format!("line {i} {}", "x".repeat(60));
        let code = format!(
            "for (let i = 0; i < {count}; i++) print('line ' + i + ' ' + 'x'.repeat(60));\n{STUCK}"
        );
        let t = Instant::now();
        let r = run(&h, "c1", &code);
        assert_limit(
            &r,
            t,
            0.3,
            "wall-time limit of 0.3 s and did not stop within 500 ms",
        );
        assert!(text(&r).starts_with("line 0 "), "{}", text(&r));
        let full = String::from_utf8(stored(&h, &r)).unwrap();
        if count == 70 {
            assert!((4096..2 * 4096).contains(&full.len()), "{}", full.len());
        }
        let lines: Vec<&str> = full.lines().collect();
        assert_eq!(lines.len(), count + 1, "{}", lines[lines.len() - 1]);
        for (i, l) in lines[..count].iter().enumerate() {
            assert_eq!(*l, line(i));
        }
        assert!(lines[count].contains("left to stop on its own"));
    }
    next_run_works(&h);
}

#[test]
fn a_cancelled_call_answers_at_once_even_when_its_program_does_not_stop() {
    let _serial = LeavesBehind::new();
    let h = harness();
    let cases = [
        // Stops at the cancellation: its allocations are refused.
        ("for (;;) 'x'.repeat(1e6)", false),
        // One long built-in call: left behind.
        (STUCK, true),
    ];
    for (code, left) in cases {
        let signal = spillway_registry::Cancel::new();
        let t = Instant::now();
        let r = std::thread::scope(|s| {
            let call = s.spawn(|| {
                h.registry
                    .call_with_signal(
                        &ToolCall::new("c1", "run_code", json!({ "code": code })),
                        signal.clone(),
                    )
                    .unwrap()
            });
            std::thread::sleep(Duration::from_millis(200));
            signal.raise(2);
            call.join().unwrap()
        });
        let took = t.elapsed();
        assert!(r.is_error);
        assert!(text(&r).contains("the call was cancelled"), "{}", text(&r));
        assert_eq!(
            text(&r).contains("left to stop on its own"),
            left,
            "{}",
            text(&r)
        );
        // The default limit is 30 s; the call answers within the grace.
        assert!(took < Duration::from_millis(1500), "{code}: took {took:?}");
    }
    next_run_works(&h);
}

#[test]
fn a_memory_bomb_ends_at_the_memory_limit() {
    let h = limited(|l| {
        l.memory(64 << 20);
    });
    let t = Instant::now();
    let r = run(&h, "c1", "print('start'); return 'x'.repeat(1e9);");
    assert_limit(&r, t, 30.0, "memory limit");
    let r = run(
        &h,
        "c2",
        "const a = []; while (true) a.push(new Array(1000).fill(1));",
    );
    assert_limit(&r, t, 30.0, "memory limit of 67108864 bytes");
    next_run_works(&h);
}

/// Whatever fails once memory ran out (a job in a microtask, a regexp, a
/// normalization, promises of calls never made), the failure names the
/// memory limit, not the wall-time limit or the engine's words.
#[test]
fn the_memory_limit_is_named_whatever_fails_once_it_is_reached() {
    // The wall-time limit is far off: unawaited calls reach 16 MiB after
    // about 4 s on an idle machine, and a loaded one (the tests run side
    // by side) once took past 10 s, so that the wall time was named.
    let h = limited(|l| {
        l.timeout(Duration::from_secs(60)).memory(16 << 20);
    });
    for code in [
        "queueMicrotask(() => { const a = []; for (;;) a.push('x'.repeat(1e5)) }); await new Promise((r) => setTimeout(r, 9000))",
        "for (;;) tools.twice({n: 1})",
        "return /(?:a|b)*c/.test('ab'.repeat(5e6))",
        "return '\\u1E9B\\u0323'.repeat(5e6).normalize('NFKD').length",
    ] {
        let t = Instant::now();
        let r = run(&h, "m", code);
        assert_limit(&r, t, 60.0, "memory limit of 16777216 bytes");
    }
    next_run_works(&h);
}

/// An error thrown in a microtask fails the run, as one in a timer does.
#[test]
fn an_error_in_a_microtask_fails_the_run() {
    let h = harness();
    let r = run(
        &h,
        "q",
        "print('before'); queueMicrotask(() => { throw new Error('in a job') }); await new Promise((r) => setTimeout(r, 50)); return 'not reached'",
    );
    assert!(r.is_error);
    assert!(
        text(&r).starts_with(
            "before\nCODE_RUN_FAILED: in a queueMicrotask callback: Uncaught Error: in a job"
        ),
        "{}",
        text(&r)
    );
    // One that is caught is the program's own business.
    let r = run(&h, "q2", "let seen; queueMicrotask(() => { try { throw 1 } catch (e) { seen = e } }); await null; return seen");
    assert_eq!(text(&r), "1");
}

#[test]
fn deep_recursion_ends_at_the_stack_limit() {
    let h = harness();
    let t = Instant::now();
    let r = run(
        &h,
        "c1",
        "function f(n) { return f(n + 1) + 1; } return f(0);",
    );
    assert_limit(&r, t, 30.0, "stack limit");
    next_run_works(&h);
}

#[test]
fn a_64_mib_string_and_a_million_deep_result() {
    // At a 64 MiB memory limit a 64 MiB string does not fit.
    let h = limited(|l| {
        l.memory(64 << 20);
    });
    let t = Instant::now();
    let r = run(&h, "c1", "return 'y'.repeat(64 * 1024 * 1024);");
    assert_limit(&r, t, 30.0, "memory limit");
    // With room, it is the result, bounded, stored whole.
    let h = limited(|l| {
        l.memory(512 << 20);
    });
    let r = run(&h, "c1", "return 'y'.repeat(64 * 1024 * 1024);");
    assert!(!r.is_error, "{}", text(&r));
    assert!(text(&r).len() <= 4096);
    let full = stored(&h, &r);
    assert_eq!(full.len(), 64 << 20);
    drop(full);
    // A million levels: the memory or the stack limit, never a crash.
    let t = Instant::now();
    let r = run(
        &h,
        "c2",
        "let v = []; for (let i = 0; i < 1e6; i++) v = [v]; return v;",
    );
    assert_limit(&r, t, 30.0, "limit");
    next_run_works(&h);
}

// ---- the sandbox ----

#[test]
fn nothing_of_the_host_is_reachable() {
    let h = harness();
    let code = r#"
        const seen = {};
        for (const name of ['require', 'process', 'fetch', 'XMLHttpRequest', 'Deno', 'Bun', 'std', 'os', 'module', 'exports', '__filename']) {
            seen[name] = typeof globalThis[name];
        }
        try { await import('fs'); seen.import = 'loaded'; } catch (e) { seen.import = 'refused'; }
        const g = Function('return this')();
        seen.globals = Object.getOwnPropertyNames(g).filter(n => !/^[A-Z]/.test(n)).sort().join(',');
        try { eval('require("fs")'); } catch (e) { seen.evalRequire = e.name; }
        return seen;
    "#;
    let r = run(&h, "c1", code);
    let v: Value = serde_json::from_str(text(&r)).unwrap();
    for name in [
        "require",
        "process",
        "fetch",
        "XMLHttpRequest",
        "Deno",
        "Bun",
        "std",
        "os",
        "module",
        "exports",
        "__filename",
    ] {
        assert_eq!(v[name], "undefined", "{name}: {v}");
    }
    assert_eq!(v["import"], "refused");
    assert_eq!(v["evalRequire"], "ReferenceError");
    // Only the standard lower-case globals and the four of the sandbox.
    let globals = v["globals"].as_str().unwrap();
    for ours in ["clearTimeout", "console", "print", "setTimeout", "tools"] {
        assert!(globals.split(',').any(|g| g == ours), "{globals}");
    }
    for leak in ["hostLog", "hostCall", "__log", "__call"] {
        assert!(!globals.split(',').any(|g| g == leak), "{globals}");
    }
}

#[test]
fn a_polluted_prototype_and_globals_do_not_survive_into_the_next_run() {
    let h = harness();
    let r = run(
        &h,
        "c1",
        "Object.prototype.polluted = 1; Array.prototype.map = null; globalThis.leaked = 1; return 'done'",
    );
    assert_eq!(text(&r), "done");
    let r = run(
        &h,
        "c2",
        "return [typeof ({}).polluted, typeof [].map, typeof leaked].join(',')",
    );
    assert_eq!(text(&r), "undefined,function,undefined");
    // The sandbox's own names cannot be replaced.
    let r = run(
        &h,
        "c3",
        "try { print = null; } catch (e) {} tools.bash = 1; return typeof print;",
    );
    assert_eq!(text(&r), "function");
}
