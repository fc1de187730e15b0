//! `run_code`: a program's logs and return value, rendered into the spill
//! stage as a stream, and its nested tool calls.

use std::fmt;
use std::io::{self, Write};
use std::sync::{Arc, Mutex};

use spillway_process::stop::SIGKILL;
use spillway_process::{Cancel, WeakCancel};

use serde_json::Value;
use spillway::Outcome;

use super::events::Event;
use super::{text_of, Block, Cx, Registry, Rendered, Tool, ToolCall, ToolError, ToolStage};

/// The text when a program logged nothing and returned nothing.
pub const NO_OUTPUT: &str = "(run_code completed with no output)";

/// What a NUL in a program's logs, returned text or failure becomes:
/// U+2400 SYMBOL FOR NULL. A program's output is text; a raw NUL would make
/// the spill stage take the whole result, its failure included, for binary
/// output and show none of it.
pub const VISIBLE_NUL: &str = "\u{2400}";

/// Writes `text` with each NUL as [`VISIBLE_NUL`].
fn write_visible(out: &mut dyn Write, text: &[u8]) -> io::Result<()> {
    let mut rest = text;
    while let Some(i) = memchr::memchr(0, rest) {
        out.write_all(&rest[..i])?;
        out.write_all(VISIBLE_NUL.as_bytes())?;
        rest = &rest[i + 1..];
    }
    out.write_all(rest)
}

/// What a program produced: its captured logs and its return value.
#[derive(Debug, Default)]
pub struct RunCodeOutput {
    /// Captured log lines, in order.
    pub logs: Vec<String>,
    /// The return value, if any.
    pub result: Option<Value>,
}

impl Drop for RunCodeOutput {
    fn drop(&mut self) {
        if let Some(v) = self.result.take() {
            drop_deep(v);
        }
    }
}

/// Drops a JSON value of any depth without recursion (a value nested a
/// million levels deep would overflow the stack in the default drop).
pub fn drop_deep(v: Value) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(a) => stack.extend(a),
            Value::Object(m) => stack.extend(m.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

/// Writes `v` as compact JSON without recursion: a value of any depth
/// renders in bounded stack.
///
/// # Errors
///
/// Whatever `out` returns.
pub fn write_json(v: &Value, out: &mut dyn Write) -> io::Result<()> {
    enum Frame<'a> {
        Arr(std::slice::Iter<'a, Value>, bool),
        Obj(serde_json::map::Iter<'a>, bool),
    }
    let scalar = |v: &Value, out: &mut dyn Write| -> io::Result<()> {
        match v {
            Value::String(s) => serde_json::to_writer(&mut *out, s).map_err(io::Error::other),
            Value::Array(_) | Value::Object(_) => Ok(()),
            other => write!(out, "{other}"),
        }
    };
    let mut stack: Vec<Frame<'_>> = Vec::new();
    let mut next: Option<&Value> = Some(v);
    loop {
        if let Some(v) = next.take() {
            match v {
                Value::Array(a) => {
                    out.write_all(b"[")?;
                    stack.push(Frame::Arr(a.iter(), true));
                }
                Value::Object(m) => {
                    out.write_all(b"{")?;
                    stack.push(Frame::Obj(m.iter(), true));
                }
                other => scalar(other, out)?,
            }
        }
        let Some(top) = stack.last_mut() else {
            return Ok(());
        };
        match top {
            Frame::Arr(it, first) => match it.next() {
                Some(v) => {
                    if !*first {
                        out.write_all(b",")?;
                    }
                    *first = false;
                    next = Some(v);
                }
                None => {
                    out.write_all(b"]")?;
                    stack.pop();
                }
            },
            Frame::Obj(it, first) => match it.next() {
                Some((k, v)) => {
                    if !*first {
                        out.write_all(b",")?;
                    }
                    *first = false;
                    serde_json::to_writer(&mut *out, k).map_err(io::Error::other)?;
                    out.write_all(b":")?;
                    next = Some(v);
                }
                None => {
                    out.write_all(b"}")?;
                    stack.pop();
                }
            },
        }
    }
}

/// Renders a program's output into `out`, as a stream: the logs joined with
/// `\n`, then the result (a JSON string verbatim, any other value as compact
/// JSON), the two joined with `\n` when both are present, or [`NO_OUTPUT`]
/// when both are empty.
///
/// # Errors
///
/// Whatever `out` returns.
pub fn render(output: &RunCodeOutput, out: &mut dyn Write) -> io::Result<()> {
    // Many small pieces (a log line, a newline, a JSON token): gather them
    // into 64 KiB writes, so the stage's per-write work is amortized.
    let mut out = io::BufWriter::with_capacity(64 << 10, out);
    let mut r = Renderer::default();
    for line in &output.logs {
        r.log(&mut out, line.as_bytes())?;
    }
    r.result(&mut out, output.result.as_ref().map(ResultRef::Json))?;
    out.flush()
}

/// The render contract as a stream: logs as they come, then the result.
/// Rendering logs one by one gives exactly what [`render`] gives for the
/// whole list.
#[derive(Debug, Default)]
struct Renderer {
    /// Log lines rendered so far.
    lines: u64,
    /// Whether any of them was not empty.
    wrote: bool,
}

/// A result to render: a JSON value, text (verbatim), or compact JSON text.
#[derive(Clone, Copy)]
enum ResultRef<'a> {
    Json(&'a Value),
    Text(&'a str),
    JsonText(&'a str),
}

impl Renderer {
    fn log(&mut self, out: &mut dyn Write, line: &[u8]) -> io::Result<()> {
        if self.lines > 0 {
            out.write_all(b"\n")?;
        }
        write_visible(out, line)?;
        self.lines += 1;
        self.wrote |= !line.is_empty();
        Ok(())
    }

    /// `lines` log lines joined by `\n`.
    fn log_joined(&mut self, out: &mut dyn Write, joined: &[u8], lines: u64) -> io::Result<()> {
        if self.lines > 0 {
            out.write_all(b"\n")?;
        }
        write_visible(out, joined)?;
        self.lines += lines;
        // All empty, they are only their `lines - 1` separators.
        self.wrote |= joined.len() as u64 > lines - 1;
        Ok(())
    }

    /// Whether the logs make a part of their own: an all-empty log list
    /// renders as nothing, like an empty part.
    fn logs_part(&self) -> bool {
        self.lines > 1 || self.wrote
    }

    fn result(&mut self, out: &mut dyn Write, result: Option<ResultRef<'_>>) -> io::Result<()> {
        // A JSON string is text.
        let result = result.map(|r| match r {
            ResultRef::Json(Value::String(s)) => ResultRef::Text(s),
            other => other,
        });
        let result_part = match result {
            None => false,
            Some(ResultRef::Text(s)) => !s.is_empty(),
            Some(ResultRef::Json(_)) => true,
            Some(ResultRef::JsonText(t)) => !t.is_empty(),
        };
        if self.logs_part() && result_part {
            out.write_all(b"\n")?;
        }
        match result {
            Some(ResultRef::Text(s)) => write_visible(out, s.as_bytes())?,
            Some(ResultRef::Json(v)) => write_json(v, out)?,
            Some(ResultRef::JsonText(t)) => out.write_all(t.as_bytes())?,
            None => {}
        }
        if !self.logs_part() && !result_part {
            out.write_all(NO_OUTPUT.as_bytes())?;
        }
        Ok(())
    }

    /// A failure's last line, after the logs so far.
    fn failure(&mut self, out: &mut dyn Write, failed: &CodeRunFailed) -> io::Result<()> {
        if self.logs_part() {
            out.write_all(b"\n")?;
        }
        write!(out, "{}: ", CodeRunFailed::CODE)?;
        write_visible(out, failed.message.as_bytes())
    }
}

/// What a program returned.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum CodeValue {
    /// A JSON value: a string renders verbatim, anything else as compact
    /// JSON.
    Json(Value),
    /// Text, rendered verbatim (a program returned a string).
    Text(String),
    /// A value the runtime already wrote as compact JSON, rendered as it
    /// is (a runtime serializes inside its sandbox, at any depth).
    JsonText(String),
}

impl From<Value> for CodeValue {
    fn from(v: Value) -> Self {
        CodeValue::Json(v)
    }
}

impl Drop for CodeValue {
    fn drop(&mut self) {
        if let CodeValue::Json(v) = self {
            drop_deep(std::mem::take(v));
        }
    }
}

impl CodeValue {
    fn as_ref(&self) -> ResultRef<'_> {
        match self {
            CodeValue::Json(v) => ResultRef::Json(v),
            CodeValue::Text(t) => ResultRef::Text(t),
            CodeValue::JsonText(t) => ResultRef::JsonText(t),
        }
    }
}

/// Which limit a program ran past.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Limit {
    /// The wall-time limit.
    WallTime,
    /// The memory limit.
    Memory,
    /// The stack limit (recursion too deep).
    Stack,
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Limit::WallTime => "wall-time limit",
            Limit::Memory => "memory limit",
            Limit::Stack => "stack limit",
        })
    }
}

/// Why a program failed: it threw, ran past a limit, was cancelled, or the
/// runtime failed. Error code `CODE_RUN_FAILED`.
///
/// A runtime returns it from [`CodeRuntime::run`]; the `run_code` tool
/// then writes it as the last line of the program's output, after the
/// logs so far, and bounds the whole like any output ([`Self::output`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CodeRunFailed {
    /// What went wrong.
    pub message: String,
    /// The limit the program ran past, if that is why it failed.
    pub limit: Option<Limit>,
    /// The bounded content: the logs so far and this error, as the spill
    /// stage left them. Set by the `run_code` tool.
    pub output: Option<Box<Outcome>>,
}

impl CodeRunFailed {
    /// The error code.
    pub const CODE: &'static str = "CODE_RUN_FAILED";

    /// A failure.
    pub fn new(message: impl Into<String>) -> Self {
        CodeRunFailed {
            message: message.into(),
            limit: None,
            output: None,
        }
    }

    /// A failure for running past `limit`.
    pub fn limit(limit: Limit, message: impl Into<String>) -> Self {
        CodeRunFailed {
            message: message.into(),
            limit: Some(limit),
            output: None,
        }
    }
}

impl fmt::Display for CodeRunFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.output {
            Some(o) => f.write_str(&o.content),
            None => write!(f, "{}: {}", Self::CODE, self.message),
        }
    }
}

impl std::error::Error for CodeRunFailed {}

/// A nested call a program started: its number and arguments. Run it with
/// [`Dispatcher::run`], on any thread.
#[derive(Debug)]
pub struct NestedCall {
    n: u32,
    tool: String,
    args: Value,
}

impl NestedCall {
    /// Its number in the run: `n` of `<outerCallId>:code:<n>`.
    pub fn n(&self) -> u32 {
        self.n
    }

    /// The tool it calls.
    pub fn tool(&self) -> &str {
        &self.tool
    }
}

/// Runs a program's nested calls. Cheap to clone, and `Send + Sync`: calls
/// a program starts together run on as many threads as the runtime gives
/// them.
#[derive(Clone)]
pub struct Dispatcher<'a> {
    registry: &'a Registry,
    parent: Arc<str>,
    stop: Arc<Stop>,
}

/// How a run's nested calls are stopped.
#[derive(Debug)]
struct Stop {
    /// The outer call's cancellation: raised when the caller cancels it.
    outer: Cancel,
    /// The run's own stop, raised when the program ended.
    stopped: Cancel,
    /// Each running nested call's cancellation, passed on to its command.
    live: Mutex<Vec<WeakCancel>>,
    /// Why the run must end: a nested call found its tool unavailable.
    fatal: Mutex<Option<String>>,
}

impl Dispatcher<'_> {
    /// Runs a started call through the registry's nested dispatch: its
    /// complete text, or its error text. Writes `tool/code-dispatch`.
    ///
    /// # Errors
    ///
    /// The tool's error, as text.
    pub fn run(&self, call: NestedCall) -> Result<NestedValue, String> {
        let signal = Cancel::new();
        {
            let mut live = lock(&self.stop.live);
            live.retain(|w| w.upgrade().is_some());
            live.push(signal.downgrade());
        }
        // A call started after the stop is stopped at once.
        if let Some(stopped) = self.stop.stopped.signal() {
            signal.raise(stopped);
        }
        nested_run(
            self.registry,
            &self.parent,
            call.n,
            &call.tool,
            call.args,
            signal,
        )
        .map_err(|(text, unavailable)| {
            if unavailable {
                lock(&self.stop.fatal).get_or_insert_with(|| text.clone());
            }
            text
        })
    }

    /// Ends calls that were started and will never run (their program
    /// ended before their turn): one `tool/code-dispatch` each saying so,
    /// all in one append to the session log, so that a program that left
    /// thousands queued does not wait for as many fsyncs.
    pub fn not_run(&self, calls: Vec<NestedCall>) {
        let events: Vec<Event> = calls
            .into_iter()
            .map(|call| Event::CodeDispatch {
                sub_call_id: sub_call_id(&self.parent, call.n),
                parent_call_id: self.parent.to_string(),
                tool: call.tool,
                args: call.args,
                content: vec![Block::text(NOT_RUN)],
                is_error: true,
                spills: Vec::new(),
            })
            .collect();
        let _ = self.registry.log.append_all(&events);
    }

    /// Why the run must end, when a nested call found its tool unavailable
    /// ([`ToolError::Unavailable`]): the runtime then fails the run with it.
    pub fn fatal(&self) -> Option<String> {
        lock(&self.stop.fatal).clone()
    }

    /// Stops the calls still running, and any started later: the command
    /// a nested call runs gets `signal` (9, SIGKILL, when its program
    /// ended).
    pub fn stop(&self, signal: i32) {
        self.stop.stopped.raise(signal);
        for s in lock(&self.stop.live).iter().filter_map(WeakCancel::upgrade) {
            s.raise(signal);
        }
    }

    /// Whether the outer call was cancelled or the run stopped.
    pub fn stopped(&self) -> bool {
        self.stop.stopped.is_cancelled() || self.stop.outer.is_cancelled()
    }
}

impl fmt::Debug for Dispatcher<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dispatcher")
            .field("parent", &self.parent)
            .finish()
    }
}

/// A nested call's complete value.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NestedValue {
    /// Its text: the tool's output, or a JSON value written as JSON.
    pub text: String,
    /// Whether `text` is a JSON value the tool produced
    /// ([`Rendered::Json`]): a program gets it parsed.
    pub json: bool,
}

/// A tool a program can call.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Callable {
    /// Its name in the registry.
    pub name: String,
    /// Its group: the program calls it as `tools.<group>.<member>`.
    pub group: Option<String>,
    /// The name the program calls it by (within its group).
    pub member: String,
    /// Whether its value is JSON (its output schema says a type other than
    /// `string`): a program then gets the parsed value, else the text.
    pub json: bool,
}

/// What a running program sees: its output, and a handle on the host's
/// tools.
///
/// Logs go straight into the spill stage as they are printed, so a program
/// that prints without end runs in bounded memory.
pub struct CodeHost<'a> {
    /// The stage, behind 64 KiB of buffer: a log line is two small writes
    /// (the separator and the line), gathered into large ones.
    stage: io::BufWriter<ToolStage>,
    renderer: Renderer,
    dispatcher: Dispatcher<'a>,
    callable: Vec<Callable>,
    calls: u32,
    /// When the outer call must have answered ([`ToolCall::deadline`]).
    deadline: Option<std::time::Instant>,
    /// A write to the stage failed (it never does: the stage takes every
    /// byte); kept so the error is not lost.
    failed: Option<io::Error>,
}

impl<'a> CodeHost<'a> {
    /// Writes a log line (a `print`) into the output.
    pub fn log(&mut self, line: impl AsRef<str>) {
        if let Err(e) = self.renderer.log(&mut self.stage, line.as_ref().as_bytes()) {
            self.failed.get_or_insert(e);
        }
    }

    /// Writes `lines` log lines at once, given joined by `\n` (no `\n`
    /// after the last): what as many [`CodeHost::log`] calls write, in one
    /// write. A runtime gathers a program's prints this way.
    pub fn log_lines(&mut self, joined: &[u8], lines: u64) {
        if lines == 0 {
            return;
        }
        if let Err(e) = self.renderer.log_joined(&mut self.stage, joined, lines) {
            self.failed.get_or_insert(e);
        }
    }

    /// Bytes of output so far.
    pub fn bytes_written(&self) -> u64 {
        self.stage.get_ref().bytes_written() + self.stage.buffer().len() as u64
    }

    /// The tools a program can call: every tool of the registry but
    /// `run_code`, by name.
    pub fn tools(&self) -> &[Callable] {
        &self.callable
    }

    /// The SDK declaration of those tools (see [`Registry::sdk`]).
    pub fn sdk(&self) -> String {
        self.dispatcher.registry.sdk()
    }

    /// Calls a host tool (`await tools.name(args)`) and waits for it: its
    /// complete text. Emits `tool/code-dispatch-start` and
    /// `tool/code-dispatch`.
    ///
    /// # Errors
    ///
    /// The tool's error, as text.
    pub fn call(&mut self, tool: &str, args: Value) -> Result<String, String> {
        let call = self.start(tool, args);
        self.dispatcher.run(call).map(|v| v.text)
    }

    /// Starts a nested call: gives it the next number and writes
    /// `tool/code-dispatch-start`. Numbers follow the order calls start in;
    /// run it with [`Dispatcher::run`] on any thread.
    pub fn start(&mut self, tool: &str, args: Value) -> NestedCall {
        self.calls += 1;
        let n = self.calls;
        let reg = self.dispatcher.registry;
        let _ = reg.log.append(&Event::CodeDispatchStart {
            sub_call_id: sub_call_id(&self.dispatcher.parent, n),
            parent_call_id: self.dispatcher.parent.to_string(),
            tool: tool.to_string(),
            args: args.clone(),
        });
        NestedCall {
            n,
            tool: tool.to_owned(),
            args,
        }
    }

    /// A handle that runs started calls, on any thread.
    pub fn dispatcher(&self) -> Dispatcher<'a> {
        self.dispatcher.clone()
    }

    /// Whether the outer call was cancelled: the program should stop.
    pub fn cancelled(&self) -> bool {
        self.dispatcher.stopped()
    }

    /// When the outer call must have answered, when its caller set a
    /// deadline ([`crate::ToolCall::deadline`]): a runtime ends the program
    /// by then, or by its own wall-time limit, whichever comes first.
    pub fn deadline(&self) -> Option<std::time::Instant> {
        self.deadline
    }

    /// The outer call's cancellation, for a runtime that checks it from
    /// another thread or an interrupt handler.
    pub fn cancellation(&self) -> Cancel {
        self.dispatcher.stop.outer.clone()
    }

    /// A failure (kept for runtimes that map errors in one place).
    pub fn fail(&mut self, message: impl Into<String>) -> CodeRunFailed {
        CodeRunFailed::new(message)
    }
}

fn sub_call_id(parent: &str, n: u32) -> String {
    format!("{parent}:code:{n}")
}

/// Runs programs. A harness plugs in its interpreter (the JavaScript
/// sandbox of `spillway-code`, a WASM runtime); tests plug in Rust
/// closures.
pub trait CodeRuntime: Send + Sync {
    /// Runs `code`; returns its value. Logs go through [`CodeHost::log`].
    ///
    /// # Errors
    ///
    /// [`CodeRunFailed`] when the program fails.
    fn run(&self, code: &str, host: &mut CodeHost<'_>) -> Result<Option<CodeValue>, CodeRunFailed>;

    /// What `run_code` says of itself to the model, before the SDK
    /// declaration. Default: the contract in a few sentences.
    fn description(&self) -> &str {
        DESCRIPTION
    }
}

/// `run_code`'s description when the runtime gives none.
pub const DESCRIPTION: &str = "Runs a program that calls the tools below with `await tools.<name>(args)` and gets their complete values. What it prints (print, console.log) comes back first, then the value it returns; long output comes back bounded, the rest stored to read back.";

impl<F> CodeRuntime for F
where
    F: Fn(&str, &mut CodeHost<'_>) -> Result<Option<CodeValue>, CodeRunFailed> + Send + Sync,
{
    fn run(&self, code: &str, host: &mut CodeHost<'_>) -> Result<Option<CodeValue>, CodeRunFailed> {
        self(code, host)
    }
}

/// The `run_code` tool: `{ "code": "…" }`.
pub struct RunCode<R> {
    runtime: R,
}

impl<R: CodeRuntime> RunCode<R> {
    /// A `run_code` tool on this runtime.
    pub fn new(runtime: R) -> Self {
        RunCode { runtime }
    }
}

impl<R: CodeRuntime> Tool for RunCode<R> {
    fn name(&self) -> &str {
        "run_code"
    }

    fn description(&self) -> Option<&str> {
        Some(self.runtime.description())
    }

    fn input_schema(&self) -> Value {
        serde_json::json!({
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "The body of an async function: top-level await, and return gives the result."}
            },
            "required": ["code"]
        })
    }

    fn execute(&self, cx: &mut Cx<'_>, args: &Value) -> Result<Rendered, ToolError> {
        let code = args
            .get("code")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::InvalidArgs("run_code needs a string `code`".into()))?;
        let registry = cx.registry;
        let mut host = CodeHost {
            stage: io::BufWriter::with_capacity(64 << 10, cx.stage()),
            renderer: Renderer::default(),
            dispatcher: Dispatcher {
                registry,
                parent: Arc::from(cx.call_id()),
                stop: Arc::new(Stop {
                    outer: cx.signal.clone(),
                    stopped: Cancel::new(),
                    live: Mutex::new(Vec::new()),
                    fatal: Mutex::new(None),
                }),
            },
            callable: registry
                .tools
                .values()
                .filter(|t| t.name() != "run_code")
                .map(|t| Callable {
                    name: t.name().to_owned(),
                    group: t.group().map(str::to_owned),
                    member: t.member().to_owned(),
                    json: t
                        .output_schema()
                        .is_some_and(|s| s.get("type").is_some_and(|t| t != "string")),
                })
                .collect(),
            calls: 0,
            deadline: cx.call.deadline,
            failed: None,
        };
        let ran = self.runtime.run(code, &mut host);
        // Whatever the run left running stops now.
        host.dispatcher.stop(SIGKILL);
        let CodeHost {
            stage,
            mut renderer,
            failed,
            ..
        } = host;
        // Small writes (a JSON token at a time) gathered into 64 KiB ones.
        let mut out = stage;
        let written = match &ran {
            Ok(value) => renderer.result(&mut out, value.as_ref().map(CodeValue::as_ref)),
            Err(failed) => renderer.failure(&mut out, failed),
        };
        let stage = out
            .into_inner()
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        if let Some(e) = failed {
            return Err(ToolError::Failed(e.to_string()));
        }
        written.map_err(|e| ToolError::Failed(e.to_string()))?;
        let outcome = cx.finish(stage)?;
        match ran {
            Ok(value) => {
                drop(value);
                Ok(Rendered::Streamed(outcome))
            }
            Err(mut failed) => {
                failed.output = Some(Box::new(outcome));
                Err(ToolError::CodeRunFailed(failed))
            }
        }
    }
}

/// A nested call whose turn came after its program ended.
const NOT_RUN: &str = "not run: the program that called it had ended";

/// Runs a program's `n`th nested call: pre-policies apply, post-policies do
/// not (the program gets complete values). The durable copy in the
/// `tool/code-dispatch` event is bounded by the spill stage.
fn nested_run(
    reg: &Registry,
    parent: &str,
    n: u32,
    tool: &str,
    args: Value,
    signal: Cancel,
) -> Result<NestedValue, (String, bool)> {
    let sub_call_id = sub_call_id(parent, n);
    let call = ToolCall::new(sub_call_id.clone(), tool, args.clone());
    let executed = if tool == "run_code" {
        Err(ToolError::Failed(
            "run_code cannot be called from a program".into(),
        ))
    } else if signal.is_cancelled() {
        // Its program ended before the call's turn came.
        Err(ToolError::Failed(NOT_RUN.into()))
    } else {
        reg.precheck(&call).and_then(|t| {
            let mut cx = Cx {
                registry: reg,
                call: &call,
                call_id: sub_call_id.clone(),
                nested: true,
                scanned: Vec::new(),
                signal,
            };
            t.execute(&mut cx, &args)
        })
    };
    let unavailable = matches!(executed, Err(ToolError::Unavailable(_)));
    let (text, is_error, json) = match executed {
        Ok(Rendered::Blocks(b)) => match text_of(&b) {
            Some(t) => (t, false, false),
            // Not all text: the program gets the blocks as JSON.
            None => (serde_json::to_string(&b).unwrap_or_default(), false, true),
        },
        Ok(Rendered::Json(v)) => (v.to_string(), false, true),
        Ok(Rendered::Streamed(o)) => (o.content, false, false),
        Err(e) => (e.to_string(), true, false),
    };
    let bounded = match reg.spiller_for(tool).apply(text.as_bytes()) {
        Ok(o) => o,
        Err(e) => e.into_outcome(),
    };
    let _ = reg.log.append(&Event::CodeDispatch {
        sub_call_id,
        parent_call_id: parent.to_owned(),
        tool: tool.to_string(),
        args,
        content: vec![Block::text(bounded.content)],
        is_error,
        spills: bounded.spill.map(|s| s.id).into_iter().collect(),
    });
    if is_error {
        Err((text, unavailable))
    } else {
        Ok(NestedValue { text, json })
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines written in batches render as the same lines written one by
    /// one, whatever the batches, empty lines included.
    #[test]
    fn batches_of_log_lines_render_as_the_lines_one_by_one() {
        let cases: &[&[&str]] = &[
            &[""],
            &["", ""],
            &["a"],
            &["", "a", ""],
            &["one", "two", "three", "", "five"],
        ];
        for lines in cases {
            for result in [None, Some(ResultRef::Text("r")), Some(ResultRef::Text(""))] {
                let mut want = Vec::new();
                let mut r = Renderer::default();
                for l in *lines {
                    r.log(&mut want, l.as_bytes()).unwrap();
                }
                r.result(&mut want, result).unwrap();
                for split in 0..=lines.len() {
                    let mut got = Vec::new();
                    let mut r = Renderer::default();
                    for part in [&lines[..split], &lines[split..]] {
                        if !part.is_empty() {
                            r.log_joined(&mut got, part.join("\n").as_bytes(), part.len() as u64)
                                .unwrap();
                        }
                    }
                    r.result(&mut got, result).unwrap();
                    assert_eq!(got, want, "{lines:?} split at {split}");
                }
            }
        }
    }
}
