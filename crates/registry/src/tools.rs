//! The tools that ship with the registry: `bash` and `spill_read`.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus, Stdio};

use serde_json::Value;

use super::{Block, Cx, Rendered, Tool, ToolError};
use spillway::{ByteRange, ContentId, IdPrefix, LineRange, Selection};
use spillway_process::{pump, spawn_merged};

/// How an exit reads in a result: nothing for success, else a last line.
pub fn status_line(status: ExitStatus) -> Option<String> {
    match (status.code(), status.signal()) {
        (Some(0), _) => None,
        (Some(c), _) => Some(format!("[exit status {c}]")),
        (None, Some(s)) => Some(format!("[killed by signal {s}]")),
        (None, None) => Some("[exit status unknown]".into()),
    }
}

/// `bash`: `{ "command": "…" }`. Runs the command with `sh -c`, streams its
/// stdout and stderr into the spill stage as they arrive (a 1 GiB output is
/// never buffered), and ends the text with `[exit status N]` or
/// `[killed by signal N]` unless the command succeeded.
#[derive(Debug, Default)]
pub struct Bash;

impl Tool for Bash {
    fn name(&self) -> &str {
        "bash"
    }

    fn execute(&self, cx: &mut Cx<'_>, args: &Value) -> Result<Rendered, ToolError> {
        let command = args
            .get("command")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::InvalidArgs("bash needs a string `command`".into()))?;
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(command).stdin(Stdio::null());
        let (mut child, mut reader) = spawn_merged(&mut cmd)
            .map_err(|e| ToolError::Failed(format!("cannot start sh: {e}")))?;
        let mut stage = cx.stage();
        pump(&mut reader, &mut stage, &mut |_| {})
            .map_err(|e| ToolError::Failed(format!("read output: {e}")))?;
        let status = child
            .wait()
            .map_err(|e| ToolError::Failed(format!("wait: {e}")))?;
        if let Some(line) = status_line(status) {
            let sep = match stage.last_byte() {
                None | Some(b'\n') => "",
                Some(_) => "\n",
            };
            stage.feed(format!("{sep}{line}").as_bytes());
        }
        Ok(Rendered::Streamed(cx.finish(stage)?))
    }
}

/// `spill_read`: `{ "id": "blake3:…" or a prefix, "lines": "A:B" }` or
/// `{ …, "bytes": "A:B" }`. Reads part of a stored object, bounded by the
/// registry's budget: whole lines that fit, and a note saying how to read
/// on. It is in the default skip list, so its result is never spilled again.
#[derive(Debug, Default)]
pub struct SpillRead;

/// Room kept for the continuation note.
const NOTE_ROOM: usize = 160;

impl Tool for SpillRead {
    fn name(&self) -> &str {
        "spill_read"
    }

    fn execute(&self, cx: &mut Cx<'_>, args: &Value) -> Result<Rendered, ToolError> {
        let bad = |m: String| ToolError::InvalidArgs(m);
        let id_text = args
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("spill_read needs a string `id`".into()))?;
        let store = cx.store();
        let id = match id_text.parse::<ContentId>() {
            Ok(id) => id,
            Err(_) => {
                let p: IdPrefix = id_text.parse().map_err(|e| bad(format!("{e}")))?;
                store
                    .resolve(&p)
                    .map_err(|e| ToolError::Failed(e.to_string()))?
            }
        };
        let lines = args.get("lines").and_then(Value::as_str);
        let bytes = args.get("bytes").and_then(Value::as_str);
        let sel = match (lines, bytes) {
            (Some(l), None) => {
                Selection::Lines(l.parse::<LineRange>().map_err(|e| bad(e.to_string()))?)
            }
            (None, Some(b)) => {
                Selection::Bytes(b.parse::<ByteRange>().map_err(|e| bad(e.to_string()))?)
            }
            (None, None) => Selection::All,
            (Some(_), Some(_)) => return Err(bad("give `lines` or `bytes`, not both".into())),
        };
        let data = store
            .read(&id, &sel)
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        let text = String::from_utf8_lossy(&data);
        let budget = cx.policy().max_inline_bytes().saturating_sub(NOTE_ROOM);
        if text.len() <= budget {
            return Ok(Rendered::Blocks(vec![Block::text(text)]));
        }
        let mut cut = budget;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let whole = text[..cut].rfind('\n').map(|i| i + 1);
        let (shown, note) = match (sel, whole) {
            (Selection::Lines(r), Some(end)) => {
                let shown_lines = text[..end].matches('\n').count() as u64;
                let next = r.first + shown_lines;
                let to = r.last.map_or(String::new(), |l| l.to_string());
                (&text[..end], format!("[spill_read: showing lines {}-{}; continue with lines=\"{next}:{to}\"]", r.first, next - 1))
            }
            (Selection::Bytes(r), _) => {
                let next = r.start + cut as u64;
                let to = r.end.map_or(String::new(), |e| e.to_string());
                (&text[..cut], format!("\n[spill_read: showing {cut} bytes; continue with bytes=\"{next}:{to}\"]"))
            }
            (_, Some(end)) => {
                let next = 1 + text[..end].matches('\n').count();
                (&text[..end], format!("[spill_read: showing lines 1-{}; continue with lines=\"{next}:\"]", next - 1))
            }
            (_, None) => (&text[..cut], format!("\n[spill_read: a line longer than the budget; showing its first {cut} bytes; read the rest with bytes]")),
        };
        Ok(Rendered::Blocks(vec![Block::text(format!(
            "{shown}{note}"
        ))]))
    }
}
