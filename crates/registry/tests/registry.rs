//! The registry pipeline, in three layers: unit (the pipeline's cases), host
//! (what a frame carries) and end to end (real nested `bash` calls, replay,
//! cards).
// Tests write files of their own; the rules of clippy.toml are the
// library's.
#![allow(clippy::disallowed_methods)]

#[path = "../../../tests/support/mod.rs"]
mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use spillway::{ContentId, Durability, Policy, Selection, Spiller, Store, WriteOptions};
use spillway_registry::card::{cards, HostFrame};
use spillway_registry::events::{replay, replay_file, Event, LogSync, SessionLog};
use spillway_registry::run_code::{CodeHost, CodeRunFailed, CodeValue, RunCode, NO_OUTPUT};
use spillway_registry::tools::{Bash, SpillGrep, SpillRead};
use spillway_registry::{
    Block, Cx, OutputScanner, PostDecision, PostPolicy, Presentation, Registry, Rendered, Tool,
    ToolCall, ToolError, ToolResult,
};

type Program = fn(&str, &mut CodeHost<'_>) -> Result<Option<CodeValue>, CodeRunFailed>;

/// A runtime whose "code" names one of these Rust programs.
fn programs(code: &str, host: &mut CodeHost<'_>) -> Result<Option<CodeValue>, CodeRunFailed> {
    program_values(code, host).map(|v| v.map(CodeValue::from))
}

fn program_values(code: &str, host: &mut CodeHost<'_>) -> Result<Option<Value>, CodeRunFailed> {
    match code {
        "logs-only" => {
            host.log("first");
            host.log("second");
            Ok(None)
        }
        "result-only" => Ok(Some(json!({"answer": 42, "list": [1, "two", null]}))),
        "echo-two" => {
            let one = host
                .call("echo", json!({"text": "one"}))
                .map_err(|e| host.fail(e))?;
            host.log(format!("saw {one}"));
            let two = host
                .call("echo", json!({"text": "two"}))
                .map_err(|e| host.fail(e))?;
            Ok(Some(Value::String(two)))
        }
        "nothing" => Ok(None),
        "big-json" => {
            let rows: Vec<Value> = (0..5000)
                .map(|i| json!({"id": i, "name": format!("row {i}"), "ok": i != 2500}))
                .collect();
            Ok(Some(json!({"rows": rows, "failed": [2500]})))
        }
        "huge-bash" => {
            let out = host
                .call(
                    "bash",
                    json!({"command": "head -c 68000000 /dev/zero | tr '\\0' a; echo; echo tail"}),
                )
                .map_err(|e| host.fail(e))?;
            let notice = out
                .lines()
                .find(|l| l.starts_with("[spillway"))
                .unwrap_or("no notice")
                .to_string();
            host.log(format!("NESTED: {notice}"));
            Ok(None)
        }
        "empty-string" => Ok(Some(Value::String(String::new()))),
        "flood" => {
            for i in 0..100_000 {
                host.log(format!("progress line {i}"));
            }
            host.log("error: the last line matters");
            Ok(None)
        }
        "fail" => {
            host.log("step 1 ok");
            host.log("step 2 ok");
            Err(host.fail("TypeError: x is undefined"))
        }
        "deep" => {
            let mut v = Value::Null;
            for _ in 0..1_000_000 {
                v = Value::Array(vec![v]);
            }
            Ok(Some(v))
        }
        "two-bash" => {
            let a = host
                .call("bash", json!({"command": "echo CODE_ONE"}))
                .map_err(|e| host.fail(e))?;
            let b = host
                .call("bash", json!({"command": "echo CODE_TWO"}))
                .map_err(|e| host.fail(e))?;
            host.log(format!("captured: {}", a.trim_end()));
            host.log(format!("captured: {}", b.trim_end()));
            Ok(Some(Value::String(format!(
                "{}+{}",
                a.trim_end(),
                b.trim_end()
            ))))
        }
        other => Err(CodeRunFailed::new(format!("unknown program {other}"))),
    }
}

struct Echo;
impl Tool for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn execute(&self, _cx: &mut Cx<'_>, args: &Value) -> Result<Rendered, ToolError> {
        Ok(Rendered::Blocks(vec![Block::text(format!(
            "echo:{}",
            args["text"].as_str().unwrap_or("")
        ))]))
    }
}

/// Returns `args.bytes` bytes of text (a `read`-like tool when named so).
/// `count` distinct lines of `width` bytes each (`\n` included), so that
/// no two lines fold together.
fn lines(width: usize, count: usize) -> String {
    (0..count)
        .map(|i| format!("{i:0w$}\n", w = width - 1))
        .collect()
}

struct Big(&'static str, Arc<AtomicUsize>);
impl Tool for Big {
    fn name(&self) -> &str {
        self.0
    }
    fn execute(&self, _cx: &mut Cx<'_>, args: &Value) -> Result<Rendered, ToolError> {
        self.1.fetch_add(1, Ordering::SeqCst);
        if let Some(ms) = args["delay_ms"].as_u64() {
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
        let n = args["bytes"].as_u64().unwrap_or(10) as usize;
        let seed = args["seed"]
            .as_u64()
            .map_or(String::new(), |s| format!("seed {s}\n"));
        let text: String = (seed + &lines(17, n / 17 + 1))[..n.max(1)].to_string();
        if args["fail"].as_bool() == Some(true) {
            return Err(ToolError::Failed(text));
        }
        Ok(Rendered::Blocks(vec![Block::text(text)]))
    }
}

/// A caption (`args.caption_bytes` long, default short) and an image.
struct Picture;
impl Tool for Picture {
    fn name(&self) -> &str {
        "picture"
    }
    fn execute(&self, _cx: &mut Cx<'_>, args: &Value) -> Result<Rendered, ToolError> {
        let caption = match args["caption_bytes"].as_u64() {
            Some(n) => lines(13, n as usize / 13 + 1)[..n as usize].to_string(),
            None => "a chart:".into(),
        };
        Ok(Rendered::Blocks(vec![
            Block::text(caption),
            Block::Image {
                mime_type: "image/png".into(),
                data: "A".repeat(200_000),
            },
            Block::text("the end of the caption"),
        ]))
    }
}

/// Blocks any output that contains `SECRET`: in the rendered content, and
/// (for streamed tools) anywhere in the whole output, through a scanner that
/// keeps only the last few bytes of each chunk.
struct NoSecrets;
const SECRET: &[u8] = b"SECRET";

impl PostPolicy for NoSecrets {
    fn after(&self, _call: &ToolCall, content: &[Block]) -> PostDecision {
        if content
            .iter()
            .any(|b| b.as_text().is_some_and(|t| t.contains("SECRET")))
        {
            PostDecision::Block("the output contains a secret".into())
        } else {
            PostDecision::Keep
        }
    }

    fn scanner(&self, _call: &ToolCall) -> Option<Box<dyn OutputScanner>> {
        Some(Box::new(SecretScan::default()))
    }
}

#[derive(Default)]
struct SecretScan {
    carry: Vec<u8>,
    found: bool,
    seen: u64,
}

impl OutputScanner for SecretScan {
    fn feed(&mut self, chunk: &[u8]) {
        self.seen += chunk.len() as u64;
        self.carry.extend_from_slice(chunk);
        if self.carry.windows(SECRET.len()).any(|w| w == SECRET) {
            self.found = true;
        }
        let keep = self.carry.len().min(SECRET.len() - 1);
        self.carry.drain(..self.carry.len() - keep);
    }

    fn finish(self: Box<Self>) -> PostDecision {
        if self.found {
            PostDecision::Block(format!(
                "a secret in the output ({} bytes scanned)",
                self.seen
            ))
        } else {
            PostDecision::Keep
        }
    }
}

struct Harness {
    _dir: tempfile::TempDir,
    registry: Registry,
    log_path: std::path::PathBuf,
    runs: Arc<AtomicUsize>,
}

fn harness(budget: Option<usize>) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("store")).unwrap();
    let budget = budget.unwrap_or(4096);
    let policy = Policy::builder()
        .max_inline_bytes(budget as u64)
        .durability(Durability::Relaxed)
        .templates(spillway_registry::spill_read_templates())
        .build()
        .unwrap();
    let spiller = Spiller::new(policy, store).unwrap();
    let log_path = dir.path().join("session.jsonl");
    let log = Arc::new(SessionLog::open(&log_path, LogSync::EveryEvent).unwrap());
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = Registry::builder(spiller, log)
        .unwrap()
        .tool(RunCode::new(programs as Program))
        .tool(Echo)
        .tool(Bash::default())
        .tool(SpillRead)
        .tool(SpillGrep)
        .tool(Big("big", runs.clone()))
        .tool(Big("read", runs.clone()))
        .tool(Picture)
        .pre(|call: &ToolCall| {
            if call.args.get("forbidden").is_some() {
                Err("forbidden argument".to_string())
            } else {
                Ok(())
            }
        })
        .post(NoSecrets)
        .build();
    Harness {
        _dir: dir,
        registry,
        log_path,
        runs,
    }
}

fn run_code(h: &Harness, id: &str, code: &str) -> ToolResult {
    h.registry
        .call(
            &ToolCall::new(id, "run_code", json!({ "code": code }))
                .describe(format!("program {code}")),
        )
        .unwrap()
}

/// One outer call through the registry.
fn call(h: &Harness, id: &str, tool: &str, args: Value) -> ToolResult {
    h.registry.call(&ToolCall::new(id, tool, args)).unwrap()
}

fn text(r: &ToolResult) -> &str {
    assert_eq!(r.content.len(), 1, "{:?}", r.content);
    r.content[0].as_text().unwrap()
}

fn events(h: &Harness) -> Vec<Event> {
    let r = replay_file(&h.log_path).unwrap();
    assert!(r.bad.is_empty(), "{:?}", r.bad);
    r.events
}

// ---- unit ----

#[test]
fn logs_only() {
    let h = harness(None);
    let r = run_code(&h, "c1", "logs-only");
    assert_eq!(text(&r), "first\nsecond");
    assert!(!r.is_error);
}

#[test]
fn result_only() {
    let h = harness(None);
    let r = run_code(&h, "c1", "result-only");
    assert_eq!(text(&r), r#"{"answer":42,"list":[1,"two",null]}"#);
}

#[test]
fn logs_and_result_and_one_event_per_dispatch() {
    let h = harness(None);
    let r = run_code(&h, "outer", "echo-two");
    assert_eq!(text(&r), "saw echo:one\necho:two");
    let ev = events(&h);
    let dispatches: Vec<&Event> = ev
        .iter()
        .filter(|e| matches!(e, Event::CodeDispatch { .. }))
        .collect();
    assert_eq!(dispatches.len(), 2);
    let starts = ev
        .iter()
        .filter(|e| matches!(e, Event::CodeDispatchStart { .. }))
        .count();
    assert_eq!(starts, 2);
    match dispatches[1] {
        Event::CodeDispatch {
            sub_call_id,
            parent_call_id,
            args,
            content,
            ..
        } => {
            assert_eq!(sub_call_id, "outer:code:2");
            assert_eq!(parent_call_id, "outer");
            assert_eq!(args, &json!({"text": "two"}));
            assert_eq!(content, &vec![Block::text("echo:two")]);
        }
        _ => unreachable!(),
    }
    // The result's meta carries no copy of the content.
    let meta = serde_json::to_string(&r.meta).unwrap();
    assert!(!meta.contains("echo:two"), "{meta}");
}

#[test]
fn no_output() {
    let h = harness(None);
    assert_eq!(text(&run_code(&h, "c1", "nothing")), NO_OUTPUT);
    assert_eq!(text(&run_code(&h, "c2", "empty-string")), NO_OUTPUT);
}

#[test]
fn over_budget_is_spilled_bounded_and_stored_whole() {
    let h = harness(None);
    let r = run_code(&h, "c1", "flood");
    let t = text(&r);
    assert!(t.len() <= 4096);
    assert!(t.ends_with("error: the last line matters"));
    assert!(t.contains("[spillway: omitted lines"));
    assert_eq!(r.meta.spills.len(), 1);
    let full = h
        .registry
        .store()
        .read(&r.meta.spills[0], &Selection::All)
        .unwrap();
    let mut want: Vec<String> = (0..100_000).map(|i| format!("progress line {i}")).collect();
    want.push("error: the last line matters".into());
    assert_eq!(String::from_utf8(full).unwrap(), want.join("\n"));
    // The durable event references the spill.
    let ev = events(&h);
    assert!(ev
        .iter()
        .any(|e| matches!(e, Event::ToolResult { spills, .. } if spills == &r.meta.spills)));
}

#[test]
fn failure_keeps_the_logs_and_is_error_content() {
    let h = harness(None);
    let r = run_code(&h, "c1", "fail");
    assert!(r.is_error);
    let t = text(&r);
    // The logs so far come first, as the render contract puts them; the
    // error is the last line, which the preview's tail always keeps.
    assert_eq!(
        t, "step 1 ok\nstep 2 ok\nCODE_RUN_FAILED: TypeError: x is undefined",
        "{t}"
    );
}

#[test]
fn a_50_mb_error_is_bounded_too() {
    let h = harness(None);
    let r = call(&h, "c1", "big", json!({"bytes": 50_000_000, "fail": true}));
    assert!(r.is_error);
    assert!(text(&r).len() <= 4096);
    assert_eq!(r.meta.total_bytes, Some(50_000_000));
    assert_eq!(r.meta.spills.len(), 1);
}

#[test]
fn post_policy_block_replaces_the_content_with_an_error() {
    let h = harness(None);
    let r = call(&h, "c1", "echo", json!({"text": "SECRET=hunter2"}));
    assert!(r.is_error);
    assert_eq!(text(&r), "blocked: the output contains a secret");
    // The durable result never holds the blocked output.
    for e in events(&h) {
        if let Event::ToolResult { content, .. } = e {
            assert_eq!(
                content,
                vec![Block::text("blocked: the output contains a secret")]
            );
        }
    }
}

#[test]
fn pre_policy_denial_means_the_tool_never_runs() {
    let h = harness(None);
    let r = call(&h, "c1", "big", json!({"forbidden": true}));
    assert!(r.is_error);
    assert_eq!(text(&r), "denied: forbidden argument");
    assert_eq!(h.runs.load(Ordering::SeqCst), 0);
}

#[test]
fn non_text_results_pass_untouched() {
    let h = harness(None);
    let r = call(&h, "c1", "picture", json!({}));
    assert_eq!(r.content.len(), 3);
    assert!(matches!(&r.content[1], Block::Image { data, .. } if data.len() == 200_000));
    assert!(r.meta.spills.is_empty());
}

/// Text beside an image is bounded all the same: the text blocks together
/// become one preview within the budget, the image passes untouched.
#[test]
fn text_beside_non_text_blocks_is_bounded() {
    let h = harness(None);
    let r = call(&h, "c1", "picture", json!({"caption_bytes": 1_000_000}));
    assert_eq!(
        r.content.len(),
        2,
        "{:?}",
        r.content.iter().map(Block::as_text).collect::<Vec<_>>()
    );
    let preview = r.content[0].as_text().unwrap();
    assert!(preview.len() <= 4096, "{}", preview.len());
    assert!(preview.ends_with("the end of the caption"), "{preview}");
    assert!(preview.contains("spill_read("));
    assert!(matches!(&r.content[1], Block::Image { data, .. } if data.len() == 200_000));
    assert_eq!(r.meta.spills.len(), 1);
    let stored = h
        .registry
        .store()
        .read(&r.meta.spills[0], &spillway::Selection::All)
        .unwrap();
    assert_eq!(stored.len(), 1_000_000 + 1 + "the end of the caption".len());
}

/// A nested call's own notice (its value is past even the values budget)
/// points at the registry's read tool, not at a command the model lacks.
#[test]
fn nested_calls_use_the_registry_notice_templates() {
    let h = harness(None);
    let r = run_code(&h, "c1", "huge-bash");
    let t = text(&r);
    assert!(t.contains("NESTED:"), "{t}");
    assert!(t.contains("spill_read("), "{t}");
    assert!(!t.contains("spillway show"), "{t}");
}

#[test]
fn the_skip_list_passes_read_untouched() {
    let h = harness(None);
    let r = call(&h, "c1", "read", json!({"bytes": 100_000}));
    assert_eq!(text(&r).len(), 100_000);
    let r = call(&h, "c2", "big", json!({"bytes": 100_000}));
    assert!(text(&r).len() <= 4096);
}

#[test]
fn deep_values_render_and_drop_in_bounded_stack() {
    // A small stack proves neither rendering nor dropping recurses.
    let t = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(|| {
            let h = harness(None);
            let r = run_code(&h, "c1", "deep");
            let t = text(&r).to_string();
            assert!(t.starts_with("[[[[") && t.len() <= 4096);
            let full = h
                .registry
                .store()
                .read(&r.meta.spills[0], &Selection::All)
                .unwrap();
            assert_eq!(full.len(), 2_000_004);
            assert!(full[..1_000_000].iter().all(|&b| b == b'['));
            assert_eq!(&full[1_000_000..1_000_004], b"null");
            assert!(full[1_000_004..].iter().all(|&b| b == b']'));
        })
        .unwrap();
    t.join().expect("no stack overflow");
}

#[test]
fn unknown_tools_and_bad_args_are_error_content() {
    let h = harness(None);
    let r = call(&h, "c1", "nope", json!({}));
    assert!(r.is_error && text(&r).contains("unknown tool"));
    let r = call(&h, "c2", "run_code", json!({}));
    assert!(r.is_error && text(&r).contains("invalid arguments"));
    let r = call(&h, "c3", "spill_read", json!({"id": "../etc"}));
    assert!(r.is_error && text(&r).contains("invalid content id"));
}

/// A dev server left running does not hang the call; a timeout kills the
/// command's process group and says so; both keep the output so far.
#[test]
fn bash_returns_despite_a_background_child_and_honours_a_timeout() {
    let h = harness(None);
    let t = std::time::Instant::now();
    let r = call(
        &h,
        "c1",
        "bash",
        json!({"command": "echo serving; (sleep 30; echo late) &"}),
    );
    assert!(t.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(
        text(&r),
        "serving\n[the command exited, but a process it started still holds its output; later output is not included]"
    );
    let t = std::time::Instant::now();
    let r = call(
        &h,
        "c2",
        "bash",
        json!({"command": "echo working; sleep 30", "timeout": 0.5}),
    );
    assert!(t.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(
        text(&r),
        "working\n[timed out after 0.5 s; its process group was killed]"
    );
    for bad in [json!(0), json!(-1), json!("soon"), json!(1e9)] {
        let r = call(&h, "c3", "bash", json!({"command": "true", "timeout": bad}));
        assert!(r.is_error && text(&r).contains("timeout"), "{bad}");
    }
}

/// A policy judges every byte of a streamed output, not just the preview:
/// a secret in the omitted middle is blocked.
#[test]
fn post_policies_see_the_whole_streamed_output() {
    let h = harness(None);
    let r = call(
        &h,
        "c1",
        "bash",
        json!({"command": "seq 1 5000; echo SECRET_TOKEN=abc; seq 1 5000"}),
    );
    assert!(r.is_error, "{:?}", r.content);
    let t = text(&r);
    assert!(t.starts_with("blocked: a secret in the output"), "{t}");
    assert!(!t.contains("SECRET_TOKEN=abc"));
    // The same output without the secret passes, bounded.
    let r = call(
        &h,
        "c2",
        "bash",
        json!({"command": "seq 1 5000; echo SECR; echo ET; seq 1 5000"}),
    );
    assert!(!r.is_error);
    assert!(text(&r).len() <= 4096);
}

#[test]
fn bash_reports_exit_status_and_signals() {
    let h = harness(None);
    let r = call(
        &h,
        "c1",
        "bash",
        json!({"command": "echo out; echo err >&2; exit 3"}),
    );
    // No blank line before the status when the output ended its line, one
    // newline when it did not.
    assert_eq!(text(&r), "out\nerr\n[exit status 3]");
    let r = call(
        &h,
        "c1b",
        "bash",
        json!({"command": "printf 'no newline'; exit 2"}),
    );
    assert_eq!(text(&r), "no newline\n[exit status 2]");
    let r = call(&h, "c2", "bash", json!({"command": "kill -9 $$"}));
    assert_eq!(text(&r), "[killed by signal 9]");
    let r = call(
        &h,
        "c3",
        "bash",
        json!({"command": "yes spill | head -c 20000000"}),
    );
    assert!(text(&r).len() <= 4096);
    assert_eq!(r.meta.total_bytes, Some(20_000_000));
}

// ---- session log ----

#[test]
fn replay_keeps_every_valid_line_and_reports_the_rest() {
    let h = harness(None);
    run_code(&h, "c1", "logs-only");
    run_code(&h, "c2", "result-only");
    let mut bytes = std::fs::read(&h.log_path).unwrap();
    let valid = replay(&bytes).unwrap().events.len();
    // Garbage in the middle, a torn line at the end.
    let mut mangled = bytes.clone();
    let at = mangled.iter().position(|&b| b == b'\n').unwrap() + 1;
    mangled.splice(at..at, b"not json at all\n\xff\xfe\n".iter().copied());
    mangled.extend_from_slice(br#"{"type":"tool/result","callId":"c3","cont"#);
    let r = replay(&mangled).unwrap();
    assert_eq!(r.events.len(), valid);
    assert_eq!(r.bad.len(), 3);
    assert!(r.bad.last().unwrap().torn);
    assert!(!r.bad[0].torn);
    // The projection still works on what survived.
    assert_eq!(cards(&r.events).len(), 2);
    // Not a session log at all.
    assert!(replay(b"hello\n").is_err());
    bytes.clear();
    assert!(replay(&bytes).is_err());
}

fn event(id: &str) -> Event {
    Event::ToolCall {
        call_id: id.into(),
        tool: "echo".into(),
        description: None,
        args: json!({}),
    }
}

fn call_ids(r: &spillway_registry::events::Replay) -> Vec<String> {
    r.events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCall { call_id, .. } => Some(call_id.clone()),
            _ => None,
        })
        .collect()
}

/// A crash tore the last line: a reopened log must not glue the next
/// event to it. Every synced event survives; the torn line is reported.
#[test]
fn a_torn_last_line_never_swallows_the_next_event() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    let log = SessionLog::open(&path, LogSync::EveryEvent).unwrap();
    log.append(&event("before")).unwrap();
    drop(log);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    std::io::Write::write_all(&mut f, br#"{"type":"tool/call","callId":"torn","to"#).unwrap();
    drop(f);
    let log = SessionLog::open(&path, LogSync::EveryEvent).unwrap();
    log.append(&event("first-after")).unwrap();
    log.append(&event("second-after")).unwrap();
    assert_eq!(log.repairs(), 1);
    let r = replay_file(&path).unwrap();
    assert_eq!(call_ids(&r), ["before", "first-after", "second-after"]);
    assert_eq!(r.bad.len(), 1);
    assert!(r.bad[0].torn, "{:?}", r.bad);
    assert_eq!(r.bad[0].line, 3);
}

/// An append that failed half-way (say, ENOSPC) leaves a partial line; once
/// the disk has room, the next append through the same handle must start
/// on a fresh line.
#[test]
fn a_half_written_append_never_swallows_the_next_event() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    let log = SessionLog::open(&path, LogSync::Never).unwrap();
    log.append(&event("a")).unwrap();
    // What a failed write leaves: part of a line, no newline.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    std::io::Write::write_all(&mut f, br#"{"type":"tool/call","ca"#).unwrap();
    log.append(&event("b")).unwrap();
    log.append(&event("c")).unwrap();
    assert_eq!(log.repairs(), 1);
    let r = replay_file(&path).unwrap();
    assert_eq!(call_ids(&r), ["a", "b", "c"]);
    assert!(r.bad.len() == 1 && r.bad[0].torn);
}

#[test]
fn reopening_a_log_appends_and_checks_the_header() {
    let h = harness(None);
    run_code(&h, "c1", "logs-only");
    drop(h.registry);
    let log = SessionLog::open(&h.log_path, LogSync::Never).unwrap();
    log.append(&Event::ToolCall {
        call_id: "c9".into(),
        tool: "echo".into(),
        description: None,
        args: json!({}),
    })
    .unwrap();
    assert_eq!(replay_file(&h.log_path).unwrap().events.len(), 3);
    let other = h._dir.path().join("other.jsonl");
    std::fs::write(&other, "{\"format\":\"something-else\",\"version\":1}\n").unwrap();
    assert!(SessionLog::open(&other, LogSync::Never).is_err());
}

// ---- host ----

#[test]
fn a_host_frame_carries_the_content_exactly_once() {
    let h = harness(None);
    run_code(&h, "c1", "echo-two");
    let ev = events(&h);
    let frame = ev.iter().find_map(HostFrame::for_event).unwrap();
    let json = serde_json::to_string(&frame).unwrap();
    assert_eq!(json.matches("saw echo:one").count(), 1, "{json}");
    let v: Value = serde_json::from_str(&json).unwrap();
    assert!(v.get("view").is_none());
    assert_eq!(v.as_object().unwrap().len(), 4);
}

// ---- end to end ----

#[test]
fn code_mode_end_to_end() {
    let h = harness(None);
    let r = run_code(&h, "outer-1", "two-bash");
    let want = "captured: CODE_ONE\ncaptured: CODE_TWO\nCODE_ONE+CODE_TWO";
    assert_eq!(text(&r), want);
    let ev = events(&h);
    // The durable log holds the complete result.
    assert!(ev.iter().any(
        |e| matches!(e, Event::ToolResult { content, .. } if content == &vec![Block::text(want)])
    ));
    // Nested calls are events…
    let subs: Vec<&str> = ev
        .iter()
        .filter_map(|e| match e {
            Event::CodeDispatch { sub_call_id, .. } => Some(sub_call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(subs, ["outer-1:code:1", "outer-1:code:2"]);
    // …and replay yields one card, with both lines, and no nested cards.
    let cs = cards(&ev);
    assert_eq!(cs.len(), 1);
    assert_eq!(cs[0].title, "program two-bash");
    assert_eq!(cs[0].kind, "execute");
    assert_eq!(cs[0].raw_input, json!("two-bash"));
    assert_eq!(cs[0].content, Some(vec![Block::text(want)]));
}

#[test]
#[ignore = "slow tier: cargo test --workspace -- --ignored"]
fn code_mode_with_a_tiny_budget_shows_the_preview_and_spill_read_returns_everything() {
    let probe = support::temp_store();
    let budget = support::min_budget(&probe.1) + 200;
    let h = harness(Some(budget));
    let r = run_code(&h, "outer-1", "flood");
    let t = text(&r).to_string();
    assert!(t.len() <= budget);
    let cs = cards(&events(&h));
    assert_eq!(cs.len(), 1);
    assert_eq!(
        cs[0].content,
        Some(vec![Block::text(t.clone())]),
        "the card shows the bounded preview"
    );
    // The notice points at the tool the model has.
    assert!(t.contains("read it with spill_read(id=\""), "{t}");
    // Read everything back through the tool the model really has.
    let id = r.meta.spills[0].to_string();
    let mut got = String::new();
    let mut next = "1:".to_string();
    for n in 0.. {
        let page = call(
            &h,
            &format!("read-{n}"),
            "spill_read",
            json!({"id": id, "lines": next}),
        );
        assert!(!page.is_error, "{:?}", page.content);
        let p = text(&page);
        assert!(p.len() <= budget);
        match p.rsplit_once("[spill_read: showing lines ") {
            Some((body, note)) => {
                got.push_str(body);
                next = note
                    .split("lines=\"")
                    .nth(1)
                    .unwrap()
                    .trim_end_matches("\"]")
                    .to_string();
            }
            None => {
                got.push_str(p);
                break;
            }
        }
        assert!(n < 100_000);
    }
    let full = String::from_utf8(
        h.registry
            .store()
            .read(&r.meta.spills[0], &Selection::All)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(got, full);
    assert!(got.ends_with("error: the last line matters"));
}

/// Follows `spill_read` continuations from `first` until a page has none;
/// returns the raw bytes each page stands for, checking each page's text
/// against them.
fn follow_spill_read(h: &Harness, id: &ContentId, first: Value) -> Vec<u8> {
    let store = h.registry.store();
    let object = store.read(id, &Selection::All).unwrap();
    let mut args = first;
    let mut raw = Vec::new();
    for n in 0..10_000 {
        let mut a = args.clone();
        a["id"] = json!(id.to_string());
        let page = call(h, &format!("r{n}"), "spill_read", a);
        assert!(!page.is_error, "{:?}", page.content);
        let p = text(&page).to_string();
        assert!(p.len() <= 4096, "{}", p.len());
        let (body, next) = match p.rsplit_once("[spill_read: ") {
            Some((body, note)) => {
                let (unit, range) = if let Some(r) = note.split("bytes=\"").nth(1) {
                    ("bytes", r)
                } else {
                    ("lines", note.split("lines=\"").nth(1).unwrap())
                };
                let range = range.trim_end_matches("\"]").to_string();
                // A byte page's note starts on a line of its own; a line
                // page ends with its last whole line.
                let body = match unit {
                    "bytes" => body.strip_suffix('\n').unwrap(),
                    _ => body,
                };
                (body.to_string(), Some((unit, range)))
            }
            None => (p.clone(), None),
        };
        // The raw bytes this page shows: from where it started to where the
        // continuation starts (or the end of the selection).
        let sel = if let Some(b) = args.get("bytes") {
            Selection::Bytes(b.as_str().unwrap().parse().unwrap())
        } else {
            Selection::Lines(args["lines"].as_str().unwrap().parse().unwrap())
        };
        let mut sink = Vec::new();
        let rep = store.read_into(id, &sel, &mut sink).unwrap();
        let page_end = match &next {
            Some(("bytes", r)) => r.split(':').next().unwrap().parse::<usize>().unwrap(),
            Some((_, r)) => {
                let next_line: u64 = r.split(':').next().unwrap().parse().unwrap();
                let before = store
                    .read(
                        id,
                        &Selection::Lines(format!("1:{}", next_line - 1).parse().unwrap()),
                    )
                    .unwrap();
                before.len()
            }
            None => (rep.start + rep.written) as usize,
        };
        let shown = &object[rep.start as usize..page_end];
        assert_eq!(body, String::from_utf8_lossy(shown), "page {n}");
        raw.extend_from_slice(shown);
        match next {
            Some((unit, range)) => args = json!({ unit: range }),
            None => return raw,
        }
    }
    panic!("spill_read never finished");
}

/// Continuations are exact raw offsets: followed from the start, the pages
/// give back every byte once, on invalid UTF-8, one long line, and mixed
/// text alike.
#[test]
fn spill_read_continuations_are_exact_raw_offsets() {
    let h = harness(None);
    let store = h.registry.store().clone();
    let long_line = [
        "x".repeat(50_000).into_bytes(),
        b"\nafter 1\nafter 2\n".to_vec(),
    ]
    .concat();
    let mixed: Vec<u8> = (0..3000)
        .flat_map(|i| match i % 4 {
            0 => "é😀 text\n".as_bytes().to_vec(),
            1 => b"\xFF\xFE raw\n".to_vec(),
            2 => b"plain line of output\n".to_vec(),
            _ => b"\xF0\x9F\x98".to_vec(),
        })
        .collect();
    for (name, object) in [
        ("invalid", vec![0xFFu8; 20_000]),
        ("long line", long_line),
        ("mixed", mixed),
    ] {
        let opts = spillway::WriteOptions::raw().durability(Durability::Relaxed);
        let id = store.put(&object, opts).unwrap().id;
        for first in [json!({"bytes": "0:"}), json!({"lines": "1:"})] {
            let got = follow_spill_read(&h, &id, first.clone());
            assert!(
                got == object,
                "{name} from {first}: {} of {} bytes",
                got.len(),
                object.len()
            );
        }
    }
}

/// `spill_grep` finds what a preview omitted: every matching line of the
/// stored object, once, across continuations, each page within the budget,
/// never spilled itself.
#[test]
fn spill_grep_pages_through_every_match_within_the_budget() {
    let h = harness(None);
    let store = h.registry.store().clone();
    let mut log = String::new();
    for i in 1..=40_000 {
        log.push_str(&if i % 97 == 0 {
            format!("test_{i} FAILED: expected {i}\n")
        } else {
            format!("test_{i} ok\n")
        });
    }
    let id = store.put(log.as_bytes(), WriteOptions::zstd(1)).unwrap().id;
    let mut from = 1u64;
    let mut found = Vec::new();
    for n in 0..1000 {
        let r = call(
            &h,
            &format!("g{n}"),
            "spill_grep",
            json!({ "id": id.to_string()[..23], "pattern": "failed", "ignore_case": true, "context": 1, "from_line": from }),
        );
        assert!(!r.is_error, "{:?}", r.content);
        let t = text(&r).to_string();
        assert!(t.len() <= 4096, "{}", t.len());
        let mut next = None;
        for line in t.lines() {
            if let Some(note) = line.strip_prefix("[spill_grep: ") {
                next = Some(
                    note.rsplit("from_line=")
                        .next()
                        .unwrap()
                        .trim_end_matches(']')
                        .parse::<u64>()
                        .unwrap(),
                );
            } else if let Some((num, rest)) = line.split_once(':') {
                assert!(rest.contains("FAILED"), "{line}");
                found.push(num.parse::<u64>().unwrap());
            } else {
                assert!(line == "--" || line.split_once('-').is_some(), "{line}");
            }
        }
        match next {
            Some(n) => from = n,
            None => break,
        }
    }
    let want: Vec<u64> = (1..=40_000).filter(|i| i % 97 == 0).collect();
    assert_eq!(found, want);
    let none = call(
        &h,
        "g-none",
        "spill_grep",
        json!({ "id": id.to_string(), "pattern": "panicked" }),
    );
    assert!(text(&none).starts_with("[spill_grep: no line of 40000 lines matches]"));
    let bad = call(
        &h,
        "g-bad",
        "spill_grep",
        json!({ "id": id.to_string(), "pattern": "(" }),
    );
    assert!(bad.is_error);
}

#[test]
fn a_json_result_previews_as_json_whose_markers_spill_read_reads_back() {
    let h = harness(None);
    let r = call(&h, "j1", "run_code", json!({"code": "big-json"}));
    let t = text(&r).to_string();
    assert!(t.len() <= 4096, "{}", t.len());
    let preview: Value = serde_json::from_str(&t).expect("the preview is JSON");
    assert_eq!(preview["failed"], json!([2500]));
    let rows = preview["rows"].as_array().unwrap();
    assert_eq!(rows[0]["id"], 0);
    assert_eq!(rows.last().unwrap()["id"], 4999);
    let marker = rows
        .iter()
        .find_map(|r| r.as_str().filter(|s| s.starts_with("[spillway: ")))
        .expect("a marker");
    // The marker names spill_read with a pointer, and that call reads the
    // elided element back.
    let start = marker.find("spill_read(id=\"").unwrap() + "spill_read(id=\"".len();
    let id = &marker[start..start + 23];
    let p0 = marker.find("pointer=\"").unwrap() + "pointer=\"".len();
    let pointer = &marker[p0..marker[p0..].find('"').unwrap() + p0];
    let back = call(
        &h,
        "j2",
        "spill_read",
        json!({"id": id, "pointer": pointer}),
    );
    let got: Value = serde_json::from_str(text(&back)).unwrap();
    let index: usize = pointer.rsplit('/').next().unwrap().parse().unwrap();
    assert_eq!(
        got,
        json!({"id": index, "name": format!("row {index}"), "ok": index != 2500})
    );
    let missing = call(
        &h,
        "j3",
        "spill_read",
        json!({"id": id, "pointer": "/rows/9999"}),
    );
    assert!(missing.is_error);
    assert!(
        text(&missing).contains("the deepest part that exists is /rows"),
        "{}",
        text(&missing)
    );
    // A text tool keeps the text preview.
    let b = call(&h, "j4", "bash", json!({"command": "seq 1 100000"}));
    assert!(text(&b).contains("omitted lines"));
}

/// A deterministic mix of sizes: mostly small, some near the tool's own
/// budget, some far past it.
fn turn_sizes(n: usize, salt: u64) -> Vec<u64> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ salt;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            match x % 10 {
                0..=5 => 20 + x % 600,
                6 | 7 => 2000 + x % 3000,
                _ => 50_000 + x % 400_000,
            }
        })
        .collect()
}

#[test]
#[ignore = "slow tier: cargo test --workspace -- --ignored"]
fn a_turn_shares_its_budget_the_same_whatever_order_its_calls_finish_in() {
    // The turn of 64 calls takes half the time: the full tier only.
    let turn_cases = support::slow_tier(7, 8);
    let h = harness(None);
    let mut cut = 0;
    for (n, salt) in [
        (1, 1),
        (2, 2),
        (3, 3),
        (5, 4),
        (8, 5),
        (16, 6),
        (33, 7),
        (64, 8),
    ]
    .into_iter()
    .take(turn_cases)
    {
        let sizes = turn_sizes(n, salt);
        let budget = 700 * n + 600;
        // Each call alone, outside any turn: what a small result must stay.
        let alone: Vec<String> = sizes
            .iter()
            .enumerate()
            .map(|(i, &b)| {
                let r = call(
                    &h,
                    &format!("alone-{n}-{i}"),
                    "big",
                    json!({"bytes": b, "seed": i}),
                );
                text(&r).to_string()
            })
            .collect();
        let level = {
            let demands: Vec<usize> = alone.iter().map(String::len).collect();
            *spillway_registry::turn::fair_shares(&demands, budget)
                .iter()
                .max()
                .unwrap()
        };
        let mut first: Option<Vec<String>> = None;
        for round in 0..4u64 {
            let calls: Vec<ToolCall> = sizes
                .iter()
                .enumerate()
                .map(|(i, &b)| {
                    // Each round finishes the calls in another order.
                    let delay = (i as u64 * 7 + round * 13) % (n as u64 + 3);
                    ToolCall::new(
                        format!("turn-{n}-{round}-{i}"),
                        "big",
                        json!({"bytes": b, "seed": i, "delay_ms": delay}),
                    )
                })
                .collect();
            let turn = h
                .registry
                .turn(format!("turn-{n}-{round}"), calls, budget)
                .unwrap();
            if round % 2 == 0 {
                turn.run_all();
            } else {
                // One thread, calls run in a shuffled order.
                let mut order: Vec<usize> = (0..n).collect();
                order.rotate_left(round as usize % n);
                order.reverse();
                for i in order {
                    turn.run(i);
                }
            }
            let results: Vec<String> = turn
                .finish()
                .into_iter()
                .map(|r| text(&r.unwrap()).to_string())
                .collect();
            let total: usize = results.iter().map(String::len).sum();
            assert!(total <= budget, "{n} calls: {total} > {budget}");
            for (i, got) in results.iter().enumerate() {
                if alone[i].len() <= budget / n || alone[i].len() < level {
                    assert_eq!(
                        got, &alone[i],
                        "a small result was cut ({n} calls, call {i})"
                    );
                } else {
                    assert!(got.len() <= level, "call {i} past the fair level");
                    assert!(got.contains("[spillway: omitted lines"), "{got}");
                    cut += 1;
                }
            }
            match &first {
                None => first = Some(results),
                Some(f) => assert_eq!(f, &results, "the order of finishing changed a result"),
            }
        }
    }
    assert!(cut > 20, "the sizes must make the turns cut ({cut} cuts)");
    // The log records each turn with its shares, before its results.
    let evs = events(&h);
    let turns: Vec<&Event> = evs
        .iter()
        .filter(|e| matches!(e, Event::Turn { .. }))
        .collect();
    assert_eq!(turns.len(), turn_cases * 4);
    for t in turns {
        let Event::Turn { budget, calls, .. } = t else {
            unreachable!()
        };
        let total: u64 = calls.iter().map(|c| c.share).sum();
        assert!(total <= *budget);
        assert!(calls.iter().all(|c| c.share <= c.demand));
    }
    let too_small = h
        .registry
        .turn("tiny", vec![ToolCall::new("x", "big", json!({}))], 10);
    assert!(too_small.unwrap_err().to_string().contains("use at least"));
}

/// A tool with a policy of its own is bounded by it, in outer calls and in
/// the durable copies of nested ones; other tools keep the registry's; every
/// full output lands in the one store.
#[test]
fn a_tool_policy_bounds_that_tool_only() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("store")).unwrap();
    let policy = |bytes: u64| {
        Policy::builder()
            .max_inline_bytes(bytes)
            .durability(Durability::Relaxed)
            .templates(spillway_registry::spill_read_templates())
            .build()
            .unwrap()
    };
    let log_path = dir.path().join("session.jsonl");
    let log = Arc::new(SessionLog::open(&log_path, LogSync::EveryEvent).unwrap());
    let runs = Arc::new(AtomicUsize::new(0));
    let programs: Program = |_code, host| {
        host.call("web_fetch", json!({ "bytes": 50_000 }))
            .map_err(|e| host.fail(e))?;
        Ok(Some(json!("done").into()))
    };
    let registry = Registry::builder(Spiller::new(policy(8192), store.clone()).unwrap(), log)
        .unwrap()
        .tool(Big("web_fetch", runs.clone()))
        .tool(Big("big", runs.clone()))
        .tool(RunCode::new(programs))
        .tool(SpillRead)
        .policy("web_fetch", policy(1024))
        .unwrap()
        .build();
    let fetch = registry
        .call(&ToolCall::new(
            "c1",
            "web_fetch",
            json!({ "bytes": 50_000 }),
        ))
        .unwrap();
    let big = registry
        .call(&ToolCall::new("c2", "big", json!({ "bytes": 50_000 })))
        .unwrap();
    let fetched = text(&fetch);
    let other = text(&big);
    assert!(
        fetched.len() <= 1024 && fetched.len() > 512,
        "{}",
        fetched.len()
    );
    assert!(other.len() <= 8192 && other.len() > 4096, "{}", other.len());
    // The same 50,000 bytes, stored once.
    assert_eq!(fetch.meta.spills, big.meta.spills);
    registry
        .call(&ToolCall::new("c3", "run_code", json!({ "code": "fetch" })))
        .unwrap();
    let copies: Vec<_> = replay_file(&log_path)
        .unwrap()
        .events
        .into_iter()
        .filter_map(|e| match e {
            Event::CodeDispatch { content, .. } => Some(content),
            _ => None,
        })
        .collect();
    assert_eq!(copies.len(), 1);
    assert!(copies[0][0].as_text().unwrap().len() <= 1024);
    // A policy whose notice prints object paths, and whose budget fits the
    // notice only without them, is refused for this store.
    let mut t = spillway::NoticeTemplates::default();
    t.stored = "stored at {path}".parse().unwrap();
    // The budget the notice needs without paths, as the refusal names it.
    let needed = match Policy::builder()
        .templates(t.clone())
        .max_inline_bytes(1)
        .build()
    {
        Err(spillway::PolicyError::BudgetTooSmall { needed, .. }) => needed,
        other => panic!("a one-byte budget is refused: {other:?}"),
    };
    let tight = Policy::builder()
        .templates(t)
        .max_inline_bytes(needed)
        .build()
        .unwrap();
    let log2 =
        Arc::new(SessionLog::open(dir.path().join("s2.jsonl"), LogSync::EveryEvent).unwrap());
    let mut builder = Registry::builder(Spiller::new(policy(4096), store).unwrap(), log2).unwrap();
    let refused = builder.policy("x", tight);
    assert!(matches!(
        refused,
        Err(spillway::PolicyError::BudgetTooSmall { .. })
    ));
}

/// The SDK declaration a `run_code` program is written against lists the
/// registry's tools with their argument types, and not `run_code` itself.
fn code_mode_registry(dir: &std::path::Path) -> Registry {
    let store = Store::open(dir.join("store")).unwrap();
    let log = Arc::new(SessionLog::open(dir.join("s.jsonl"), LogSync::EveryEvent).unwrap());
    Registry::builder(Spiller::new(Policy::default(), store).unwrap(), log)
        .unwrap()
        .tool(RunCode::new(programs as Program))
        .tool(Bash::default())
        .tool(SpillRead)
        .tool(SpillGrep)
        .build()
}

#[test]
fn the_sdk_declares_every_tool_a_program_can_call() {
    let dir = tempfile::tempdir().unwrap();
    let registry = code_mode_registry(dir.path());
    let sdk = registry.sdk();
    assert!(sdk.starts_with("declare const tools: {\n"), "{sdk}");
    for want in [
        "  bash(args: {\n",
        "    command: string;\n",
        "    timeout?: number;\n",
        "  }): Promise<string>;\n",
        "  spill_grep(args: {\n",
        "    pattern: string;\n",
        "    ignore_case?: boolean;\n",
        "  spill_read(args: {\n",
        "    id: string;\n",
        "    pointer?: string;\n",
        "  /** Runs a shell command",
    ] {
        assert!(sdk.contains(want), "{want:?} in\n{sdk}");
    }
    assert!(!sdk.contains("run_code"), "{sdk}");
}

/// The three presentation modes: native tools, run_code with the retrieval
/// tools, or both; run_code's description carries the SDK.
#[test]
fn the_presentation_modes_list_the_tools_the_seed_names() {
    let dir = tempfile::tempdir().unwrap();
    let registry = code_mode_registry(dir.path());
    let names = |mode: &str| -> Vec<String> {
        registry
            .tools(mode.parse::<Presentation>().unwrap())
            .into_iter()
            .map(|t| t.name)
            .collect()
    };
    assert_eq!(names("native"), ["bash", "spill_grep", "spill_read"]);
    assert_eq!(names("ptc"), ["run_code", "spill_grep", "spill_read"]);
    assert_eq!(
        names("both"),
        ["bash", "run_code", "spill_grep", "spill_read"]
    );
    let code = registry
        .tools(Presentation::Ptc)
        .into_iter()
        .find(|t| t.name == "run_code")
        .unwrap();
    let description = code.description.unwrap();
    assert!(
        description.ends_with(&format!("```ts\n{}```", registry.sdk())),
        "{description}"
    );
    assert_eq!(code.input_schema["required"], json!(["code"]));
    assert!("plain"
        .parse::<Presentation>()
        .unwrap_err()
        .contains("native, ptc or both"));
}
