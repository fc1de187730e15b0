//! JSON-RPC 2.0 messages, one a line.

use std::io::{self, BufRead, Write};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

/// JSON-RPC error codes used here.
pub(crate) const PARSE_ERROR: i64 = -32700;
pub(crate) const INVALID_REQUEST: i64 = -32600;
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
pub(crate) const INVALID_PARAMS: i64 = -32602;
pub(crate) const INTERNAL_ERROR: i64 = -32603;

/// A writer shared by the threads that answer one peer: each message is
/// written whole, then flushed.
#[derive(Clone)]
pub(crate) struct Out(Arc<Mutex<Box<dyn Write + Send>>>);

impl Out {
    pub(crate) fn new(w: Box<dyn Write + Send>) -> Self {
        Out(Arc::new(Mutex::new(w)))
    }

    /// Writes one line (`line` without its newline).
    pub(crate) fn line(&self, line: &[u8]) -> io::Result<()> {
        let mut w = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        w.write_all(line)?;
        w.write_all(b"\n")?;
        w.flush()
    }

    /// Closes the writer (a pipe's end is closed): later lines go nowhere.
    pub(crate) fn close(&self) {
        let mut w = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *w = Box::new(io::sink());
    }

    pub(crate) fn send(&self, v: &Value) -> io::Result<()> {
        self.line(v.to_string().as_bytes())
    }

    pub(crate) fn result(&self, id: &Value, result: Value) -> io::Result<()> {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
    }

    pub(crate) fn error(&self, id: &Value, code: i64, message: &str) -> io::Result<()> {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
    }
}

/// A line as a message: `Ok(value)`, or `Err` with the error to answer.
pub(crate) fn parse(line: &[u8]) -> Result<Value, String> {
    serde_json::from_slice::<Value>(line).map_err(|e| format!("Parse error: {e}"))
}

/// The line without its line ending.
fn trim_line(mut line: &[u8]) -> &[u8] {
    while let [rest @ .., b'\n' | b'\r'] = line {
        line = rest;
    }
    line
}

/// The next line of `input` that is not blank, without its line ending, in
/// `buf`; `None` at the end of the input (or when reading fails).
pub(crate) fn next_line<'b>(input: &mut dyn BufRead, buf: &'b mut Vec<u8>) -> Option<&'b [u8]> {
    loop {
        buf.clear();
        match input.read_until(b'\n', buf) {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
        if !buf.iter().all(u8::is_ascii_whitespace) {
            return Some(trim_line(buf));
        }
    }
}

/// A `tools/call`'s tool name and arguments (`{}` when absent).
pub(crate) fn call_parts(params: &Value) -> (&str, Value) {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let args = params
        .get("arguments")
        .cloned()
        .unwrap_or_else(|| json!({}));
    (name, args)
}
