//! Arbitrary programs, built from fragments of the language and of the
//! sandbox's API, and arbitrary tool replies, through `run_code` on the
//! JavaScript runtime: nothing panics, every run ends within its wall-time
//! limit and a second, its result stays within the budget, and a failure
//! is `CODE_RUN_FAILED` content.
#![no_main]

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};
use spillway::{Policy, Spiller, Store};
use spillway_code::{JsRuntime, Limits};
use spillway_registry::events::SessionLog;
use spillway_registry::run_code::RunCode;
use spillway_registry::{Block, Cx, Registry, Rendered, Tool, ToolCall, ToolError};

const BUDGET: usize = 2048;
const TIMEOUT: Duration = Duration::from_millis(300);

/// The replies `tools.reply()` gives, in turn: text, or an error.
static REPLIES: Mutex<Vec<(bool, String)>> = Mutex::new(Vec::new());

struct Reply;
impl Tool for Reply {
    fn name(&self) -> &str {
        "reply"
    }
    fn execute(&self, _cx: &mut Cx<'_>, _args: &Value) -> Result<Rendered, ToolError> {
        let next = REPLIES.lock().unwrap_or_else(|e| e.into_inner()).pop();
        match next {
            Some((true, text)) => Err(ToolError::Failed(text)),
            Some((false, text)) => Ok(Rendered::Blocks(vec![Block::text(text)])),
            None => Ok(Rendered::Blocks(vec![Block::text("{\"done\":true}")])),
        }
    }
}

/// A tool whose value is JSON, to exercise the parse.
struct Json;
impl Tool for Json {
    fn name(&self) -> &str {
        "json"
    }
    fn output_schema(&self) -> Option<Value> {
        Some(json!({"type": "object"}))
    }
    fn execute(&self, cx: &mut Cx<'_>, args: &Value) -> Result<Rendered, ToolError> {
        Reply.execute(cx, args)
    }
}

fn registry() -> &'static Registry {
    static R: OnceLock<(tempfile::TempDir, Registry)> = OnceLock::new();
    &R.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(dir.path()).expect("store");
        let policy = Policy::builder()
            .max_inline_bytes(BUDGET as u64)
            .build()
            .expect("policy");
        let limits = Limits::builder()
            .timeout(TIMEOUT)
            .memory(8 << 20)
            .stack(256 << 10)
            .build()
            .expect("limits");
        let spiller = Spiller::new(policy, store).expect("spiller");
        let registry = Registry::builder(spiller, Arc::new(SessionLog::discard()))
            .expect("registry")
            .tool(RunCode::new(JsRuntime::new(limits)))
            .tool(Reply)
            .tool(Json)
            .build();
        (dir, registry)
    })
    .1
}

#[rustfmt::skip]
const FRAGMENTS: &[&str] = &[
    "print(", "console.log(", ")", "(", ";\n", "return ", "await ", "tools.reply({})",
    "tools.json({a: 1})", "tools.nope()", "Promise.all([tools.reply({}), tools.json({})])", ",",
    "'x'.repeat(1e6)", "'y'.repeat(1e9)", "while (true) {}", "for (let i = 0; i < 1e5; i++) print(i)",
    "throw new Error('e')", "throw null", "try {", "} catch (e) { print(e.message) }", "{", "}",
    "[", "]", "JSON.parse(", "JSON.stringify(", "setTimeout(() => print('t'), 1)",
    "await new Promise(r => setTimeout(r, 5))", "function f(n) { return f(n + 1) }", "f(0)",
    "let v = []; for (let i = 0; i < 1e5; i++) v = [v]", "v", "globalThis", "Object.prototype.x = 1",
    "import('fs')", "require('fs')", "new Array(1e7).fill(0)", "1", "'s'", "null", "undefined",
    "{a: [1, {b: 'c'}]}", "`t${1}`", "async () => 1", "Symbol()", "10n", "new Proxy({}, {})",
];

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(n) = u.int_in_range(0..=24usize) else {
        return;
    };
    let mut code = String::new();
    for _ in 0..n {
        if u.ratio(1u8, 8u8).unwrap_or(false) {
            let Ok(raw) = <&str>::arbitrary(&mut u) else {
                return;
            };
            code.push_str(raw);
        } else {
            let Ok(i) = u.choose_index(FRAGMENTS.len()) else {
                return;
            };
            code.push_str(FRAGMENTS[i]);
        }
    }
    let Ok(replies) = Vec::<(bool, String)>::arbitrary(&mut u) else {
        return;
    };
    *REPLIES.lock().unwrap_or_else(|e| e.into_inner()) = replies;

    let started = Instant::now();
    let r = registry()
        .call(&ToolCall::new("f", "run_code", json!({ "code": code })))
        .expect("the discarding log never fails");
    assert!(
        started.elapsed() < TIMEOUT + Duration::from_secs(1),
        "the run ended late"
    );
    let text = r.content[0].as_text().expect("text");
    assert!(text.len() <= BUDGET, "the result is over its budget");
    if r.is_error {
        assert!(text.contains("CODE_RUN_FAILED"), "{text}");
    }
});
