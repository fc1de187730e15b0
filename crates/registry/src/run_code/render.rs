//! The render contract: a program's logs, then its value, written into the
//! stage as a stream, NUL bytes made visible.

use std::io::{self, Write};

use serde_json::Value;

use super::CodeRunFailed;

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
pub(super) struct Renderer {
    /// Log lines rendered so far.
    lines: u64,
    /// Whether any of them was not empty.
    wrote: bool,
}

/// A result to render: a JSON value, text (verbatim), or compact JSON text.
#[derive(Clone, Copy)]
pub(super) enum ResultRef<'a> {
    Json(&'a Value),
    Text(&'a str),
    JsonText(&'a str),
}

impl Renderer {
    pub(super) fn log(&mut self, out: &mut dyn Write, line: &[u8]) -> io::Result<()> {
        if self.lines > 0 {
            out.write_all(b"\n")?;
        }
        write_visible(out, line)?;
        self.lines += 1;
        self.wrote |= !line.is_empty();
        Ok(())
    }

    /// `lines` log lines joined by `\n`.
    pub(super) fn log_joined(
        &mut self,
        out: &mut dyn Write,
        joined: &[u8],
        lines: u64,
    ) -> io::Result<()> {
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

    pub(super) fn result(
        &mut self,
        out: &mut dyn Write,
        result: Option<ResultRef<'_>>,
    ) -> io::Result<()> {
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
    pub(super) fn failure(
        &mut self,
        out: &mut dyn Write,
        failed: &CodeRunFailed,
    ) -> io::Result<()> {
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
    pub(super) fn as_ref(&self) -> ResultRef<'_> {
        match self {
            CodeValue::Json(v) => ResultRef::Json(v),
            CodeValue::Text(t) => ResultRef::Text(t),
            CodeValue::JsonText(t) => ResultRef::JsonText(t),
        }
    }
}
