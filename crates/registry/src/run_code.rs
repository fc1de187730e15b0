//! `run_code`: a program's logs and return value, rendered into the spill
//! stage as a stream, and its nested tool calls.

use std::fmt;
use std::io::{self, Write};

use serde_json::Value;

use super::{Cx, Rendered, Tool, ToolError};

/// The text when a program logged nothing and returned nothing.
pub const NO_OUTPUT: &str = "(run_code completed with no output)";

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
    render_into(output, &mut out)?;
    out.flush()
}

fn render_into(output: &RunCodeOutput, out: &mut dyn Write) -> io::Result<()> {
    let mut wrote = false;
    for (i, line) in output.logs.iter().enumerate() {
        if i > 0 {
            out.write_all(b"\n")?;
        }
        out.write_all(line.as_bytes())?;
        wrote |= !line.is_empty();
    }
    // An all-empty log list renders as nothing, like an empty part.
    let logs_part = output.logs.len() > 1 || wrote;
    let result_part = match &output.result {
        None => false,
        Some(Value::String(s)) => !s.is_empty(),
        Some(_) => true,
    };
    if logs_part && result_part {
        out.write_all(b"\n")?;
    }
    match &output.result {
        Some(Value::String(s)) => out.write_all(s.as_bytes())?,
        Some(v) if result_part => write_json(v, out)?,
        _ => {}
    }
    if !logs_part && !result_part {
        out.write_all(NO_OUTPUT.as_bytes())?;
    }
    Ok(())
}

/// Why a program failed: it threw, ran out of budget, was aborted, or the
/// runtime crashed. Error code `CODE_RUN_FAILED`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CodeRunFailed {
    /// What went wrong.
    pub message: String,
    /// The logs captured before the failure.
    pub logs: Vec<String>,
}

impl CodeRunFailed {
    /// The error code.
    pub const CODE: &'static str = "CODE_RUN_FAILED";

    /// A failure with the logs captured so far.
    pub fn new(message: impl Into<String>, logs: Vec<String>) -> Self {
        CodeRunFailed {
            message: message.into(),
            logs,
        }
    }
}

impl fmt::Display for CodeRunFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", Self::CODE, self.message)?;
        if !self.logs.is_empty() {
            write!(f, "\ncaptured output:\n{}", self.logs.join("\n"))?;
        }
        Ok(())
    }
}

impl std::error::Error for CodeRunFailed {}

/// What a running program sees: a log, and a handle on the host's tools.
pub struct CodeHost<'a, 'b> {
    cx: &'a mut Cx<'b>,
    logs: Vec<String>,
    calls: u32,
}

impl CodeHost<'_, '_> {
    /// Captures a log line (a `print`).
    pub fn log(&mut self, line: impl Into<String>) {
        self.logs.push(line.into());
    }

    /// The logs so far.
    pub fn logs(&self) -> &[String] {
        &self.logs
    }

    /// Calls a host tool (`tools.name(args)`): returns its complete rendered
    /// text. Emits `tool/code-dispatch-start` and `tool/code-dispatch`.
    ///
    /// # Errors
    ///
    /// The tool's error, as text.
    pub fn call(&mut self, tool: &str, args: Value) -> Result<String, String> {
        self.calls += 1;
        let n = self.calls;
        self.cx.dispatch_nested(n, tool, args)
    }

    /// Fails the program, keeping the logs captured so far.
    pub fn fail(&mut self, message: impl Into<String>) -> CodeRunFailed {
        CodeRunFailed::new(message, std::mem::take(&mut self.logs))
    }
}

/// Runs programs. A harness plugs in its interpreter (a JavaScript sandbox,
/// a WASM runtime); tests plug in Rust closures.
pub trait CodeRuntime: Send + Sync {
    /// Runs `code`; returns its value. Logs go through `host.log`.
    ///
    /// # Errors
    ///
    /// [`CodeRunFailed`] when the program fails.
    fn run(&self, code: &str, host: &mut CodeHost<'_, '_>) -> Result<Option<Value>, CodeRunFailed>;
}

impl<F> CodeRuntime for F
where
    F: Fn(&str, &mut CodeHost<'_, '_>) -> Result<Option<Value>, CodeRunFailed> + Send + Sync,
{
    fn run(&self, code: &str, host: &mut CodeHost<'_, '_>) -> Result<Option<Value>, CodeRunFailed> {
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

    fn execute(&self, cx: &mut Cx<'_>, args: &Value) -> Result<Rendered, ToolError> {
        let code = args
            .get("code")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::InvalidArgs("run_code needs a string `code`".into()))?;
        let mut host = CodeHost {
            cx,
            logs: Vec::new(),
            calls: 0,
        };
        let result = self
            .runtime
            .run(code, &mut host)
            .map_err(ToolError::CodeRunFailed)?;
        let logs = std::mem::take(&mut host.logs);
        let output = RunCodeOutput { logs, result };
        let mut stage = host.cx.stage();
        render(&output, &mut stage).map_err(|e| ToolError::Failed(e.to_string()))?;
        drop(output);
        Ok(Rendered::Streamed(host.cx.finish(stage)?))
    }
}
