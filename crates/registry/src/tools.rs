//! The tools that ship with the registry: `bash` and `spill_read`.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus, Stdio};

use serde_json::Value;

use super::{Block, Cx, Rendered, Tool, ToolError};
use spillway::{ByteRange, ContentId, IdPrefix, LineRange, Selection};
use spillway_process::{run_merged, RunOptions};

/// How an exit reads in a result: nothing for success, else a last line.
pub fn status_line(status: ExitStatus) -> Option<String> {
    match (status.code(), status.signal()) {
        (Some(0), _) => None,
        (Some(c), _) => Some(format!("[exit status {c}]")),
        (None, Some(s)) => Some(format!("[killed by signal {s}]")),
        (None, None) => Some("[exit status unknown]".into()),
    }
}

/// `bash`: `{ "command": "…", "timeout": seconds }`. Runs the command with
/// `sh -c` in a process group of its own, streams its stdout and stderr into
/// the spill stage as they arrive (a 1 GiB output is never buffered), and
/// ends the text with a status line unless the command simply succeeded:
/// `[exit status N]`, `[killed by signal N]`, `[timed out after N s; its
/// process group was killed]`, or `[the command exited, but a process it
/// started still holds its output; later output is not included]` (a dev
/// server or daemon left running: the call returns once the command has
/// exited and its output has drained for [`Bash::drain`]).
#[derive(Debug)]
pub struct Bash {
    /// How long to keep reading after the command exits. Default 1 s.
    pub drain: std::time::Duration,
}

impl Default for Bash {
    fn default() -> Self {
        Bash {
            drain: std::time::Duration::from_secs(1),
        }
    }
}

/// The longest `timeout` a call may ask for: a day.
const MAX_TIMEOUT_SECS: f64 = 86_400.0;

impl Tool for Bash {
    fn name(&self) -> &str {
        "bash"
    }

    fn execute(&self, cx: &mut Cx<'_>, args: &Value) -> Result<Rendered, ToolError> {
        let command = args
            .get("command")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::InvalidArgs("bash needs a string `command`".into()))?;
        let timeout = match args.get("timeout") {
            None | Some(Value::Null) => None,
            Some(t) => match t.as_f64() {
                Some(secs) if secs > 0.0 && secs <= MAX_TIMEOUT_SECS => {
                    Some(std::time::Duration::from_secs_f64(secs))
                }
                _ => {
                    return Err(ToolError::InvalidArgs(format!(
                        "bash `timeout` is seconds, more than 0 and at most {MAX_TIMEOUT_SECS}; got {t}"
                    )))
                }
            },
        };
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(command).stdin(Stdio::null());
        let mut opts = RunOptions::default();
        opts.drain = self.drain;
        opts.timeout = timeout;
        let mut stage = cx.stage();
        let finished = run_merged(&mut cmd, &opts, &mut stage, &mut |_| {})
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        let line = if finished.timed_out {
            let secs = timeout.map_or(0.0, |t| t.as_secs_f64());
            Some(format!(
                "[timed out after {secs} s; its process group was killed]"
            ))
        } else {
            status_line(finished.status)
        };
        let cut = finished.output_cut.then(|| {
            "[the command exited, but a process it started still holds its output; later output is not included]".to_string()
        });
        for line in [cut, line].into_iter().flatten() {
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
        let mut data = Vec::new();
        let report = store
            .read_into(&id, &sel, &mut data)
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        let budget = cx.policy().max_inline_bytes().saturating_sub(NOTE_ROOM);
        let fit = fit_lossy(&data, budget);
        if fit == data.len() {
            return Ok(Rendered::Blocks(vec![Block::text(
                String::from_utf8_lossy(&data),
            )]));
        }
        // Every continuation is an exact offset into the raw object: what is
        // shown plus what the note points at is the selection, no byte
        // skipped or repeated.
        let start = report.start;
        let end = start + data.len() as u64;
        let whole_lines = match sel {
            Selection::Bytes(_) => None,
            _ => memchr::memrchr(b'\n', &data[..fit]).map(|i| i + 1),
        };
        let (shown, note) = match (sel, whole_lines) {
            (Selection::Bytes(r), _) => {
                let next = r.start + fit as u64;
                let to = r.end.map_or(String::new(), |e| e.to_string());
                (
                    fit,
                    format!(
                        "\n[spill_read: showing bytes {}-{}; continue with bytes=\"{next}:{to}\"]",
                        r.start, next
                    ),
                )
            }
            (_, Some(cut)) => {
                let first = match sel {
                    Selection::Lines(r) => r.first,
                    _ => 1,
                };
                let next = first + memchr::memchr_iter(b'\n', &data[..cut]).count() as u64;
                let to = match sel {
                    Selection::Lines(r) => r.last.map_or(String::new(), |l| l.to_string()),
                    _ => String::new(),
                };
                (cut, format!("[spill_read: showing lines {first}-{}; continue with lines=\"{next}:{to}\"]", next - 1))
            }
            (_, None) => {
                let next = start + fit as u64;
                (fit, format!("\n[spill_read: a line longer than the budget; showing bytes {start}-{next}; continue with bytes=\"{next}:{end}\"]"))
            }
        };
        Ok(Rendered::Blocks(vec![Block::text(format!(
            "{}{note}",
            String::from_utf8_lossy(&data[..shown])
        ))]))
    }
}

/// The longest prefix of `data`, in raw bytes, whose lossy decoding (each
/// invalid sequence shown as U+FFFD, 3 bytes) fits in `budget` bytes; it
/// never ends inside a valid character.
fn fit_lossy(data: &[u8], budget: usize) -> usize {
    let (mut shown, mut raw) = (0, 0);
    for chunk in data.utf8_chunks() {
        let valid = chunk.valid();
        if shown + valid.len() > budget {
            let mut cut = budget - shown;
            while !valid.is_char_boundary(cut) {
                cut -= 1;
            }
            return raw + cut;
        }
        shown += valid.len();
        raw += valid.len();
        let bad = chunk.invalid();
        if !bad.is_empty() {
            if shown + '\u{FFFD}'.len_utf8() > budget {
                return raw;
            }
            shown += '\u{FFFD}'.len_utf8();
            raw += bad.len();
        }
    }
    raw
}

#[cfg(test)]
mod tests {
    use super::fit_lossy;

    #[test]
    fn fit_lossy_counts_replacements_and_never_splits_a_character() {
        assert_eq!(fit_lossy(b"abc", 10), 3);
        assert_eq!(fit_lossy(b"abc", 2), 2);
        // Each invalid byte shows as 3 bytes.
        assert_eq!(fit_lossy(&[0xFF; 10], 9), 3);
        assert_eq!(fit_lossy(&[0xFF; 10], 10), 3);
        // A 4-byte character is never split.
        assert_eq!(fit_lossy("a😀b".as_bytes(), 4), 1);
        assert_eq!(fit_lossy("a😀b".as_bytes(), 5), 5);
        for budget in 0..40 {
            let data = [b"ok \xFF\xFE ".as_slice(), "é😀".as_bytes(), b"\xF0\x9F"].concat();
            let n = fit_lossy(&data, budget);
            assert!(String::from_utf8_lossy(&data[..n]).len() <= budget);
        }
    }
}
