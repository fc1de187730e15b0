//! The tools that ship with the registry: `bash`, `spill_read` and
//! `spill_grep`.

use std::process::{Command, Stdio};

use serde_json::Value;

use super::{Block, Cx, Rendered, Tool, ToolError};
use spillway::{
    ByteRange, ContentId, GrepOptions, GrepPattern, IdPrefix, LineRange, Page, Selection, Store,
};
use spillway_process::{run_merged, RunOptions, MAX_TIMEOUT};

/// `bash`: `{ "command": "…", "cwd": "…", "timeout": seconds }`, the one
/// shell tool every front end calls (`mcp serve` and Code Mode's nested
/// calls name it `run`). Runs the command with `sh -c` in a process group
/// of its own, in `cwd` if given, streams its stdout and stderr into the
/// spill stage as they arrive (a 1 GiB output is never buffered), and ends
/// the text with the status lines of
/// [`Finished::status_lines`](spillway_process::Finished::status_lines) unless the
/// command simply succeeded: `[exit status N]`, `[killed by signal N]`,
/// `[timed out after N s; its process group was killed]`, or `[the command
/// exited, but a process it started still holds its output; later output is
/// not included]` (a dev server or daemon left running: the call returns
/// once the command has exited and its output has drained for
/// [`Bash::drain`]).
#[derive(Debug)]
pub struct Bash {
    /// How long to keep reading after the command exits. Default 1 s.
    pub drain: std::time::Duration,
    name: String,
    failure_is_error: bool,
}

impl Default for Bash {
    fn default() -> Self {
        Bash {
            drain: std::time::Duration::from_secs(1),
            name: "bash".to_owned(),
            failure_is_error: false,
        }
    }
}

impl Bash {
    /// The same tool under another name (`run`, as the MCP servers list it).
    pub fn named(name: impl Into<String>) -> Bash {
        Bash {
            name: name.into(),
            ..Bash::default()
        }
    }

    /// Whether a command that failed (a non-zero status, a signal, a
    /// timeout) makes the call an error whose message is the output and
    /// its status lines, as MCP reports it. By default the call succeeds
    /// and its result says how the command ended.
    pub fn failure_is_error(mut self, yes: bool) -> Bash {
        self.failure_is_error = yes;
        self
    }

    /// The command a call's arguments ask for (`sh -c COMMAND`, in `cwd`),
    /// and its timeout; a message naming `tool` for bad arguments.
    pub fn command(
        tool: &str,
        args: &Value,
    ) -> Result<(Command, Option<std::time::Duration>), String> {
        let command = args
            .get("command")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{tool} needs a string `command`"))?;
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(command).stdin(Stdio::null());
        match args.get("cwd") {
            None | Some(Value::Null) => {}
            Some(Value::String(dir)) => {
                let dir = std::path::PathBuf::from(dir);
                if !dir.is_dir() {
                    return Err(format!("{tool}: cwd {}: not a directory", dir.display()));
                }
                cmd.current_dir(dir);
            }
            Some(_) => return Err(format!("{tool}: `cwd` must be a string")),
        }
        let max = MAX_TIMEOUT.as_secs_f64();
        let timeout = match args.get("timeout") {
            None | Some(Value::Null) => None,
            Some(t) => match t.as_f64() {
                Some(secs) if secs > 0.0 && secs <= max => {
                    Some(std::time::Duration::from_secs_f64(secs))
                }
                _ => {
                    return Err(format!(
                        "{tool} `timeout` is seconds, more than 0 and at most {max}; got {t}"
                    ))
                }
            },
        };
        Ok((cmd, timeout))
    }

    /// The tool's input schema, whatever its name.
    pub fn schema() -> Value {
        serde_json::json!({
            "type": "object",
            "properties": {
                "command": { "type": "string", "description": "The command line, run by sh -c." },
                "cwd": { "type": "string", "description": "The working directory (default: the harness's)." },
                "timeout": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "maximum": MAX_TIMEOUT.as_secs_f64(),
                    "description": "Seconds before its process group is killed."
                }
            },
            "required": ["command"]
        })
    }
}

impl Tool for Bash {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> Option<&str> {
        Some("Runs a shell command, stdout and stderr together in the order written; the output is bounded, and what is left out is stored to read back.")
    }

    fn input_schema(&self) -> Value {
        Bash::schema()
    }

    fn output_schema(&self) -> Option<Value> {
        Some(serde_json::json!({ "type": "string" }))
    }

    fn execute(&self, cx: &mut Cx<'_>, args: &Value) -> Result<Rendered, ToolError> {
        let (mut cmd, timeout) = Bash::command(&self.name, args).map_err(ToolError::InvalidArgs)?;
        let mut opts = RunOptions::default();
        opts.drain = self.drain;
        opts.timeout = timeout;
        // Cancelling the call (or the end of the program that made it)
        // stops the command.
        opts.forward = Some(cx.signal().clone());
        let mut stage = cx.stage();
        let finished = run_merged(&mut cmd, &opts, &mut stage, &mut |_| {})
            .map_err(|e| ToolError::Failed(format!("{}: {e}", self.name)))?;
        for line in finished.status_lines(timeout) {
            let sep = match stage.last_byte() {
                None | Some(b'\n') => "",
                Some(_) => "\n",
            };
            stage.feed(format!("{sep}{line}").as_bytes());
        }
        let outcome = cx.finish(stage)?;
        if self.failure_is_error && !finished.succeeded() {
            // An error result (a program's `await` throws) with the output
            // and the status.
            return Err(ToolError::Output(Box::new(outcome)));
        }
        Ok(Rendered::Streamed(outcome))
    }
}

/// `spill_read`: `{ "id": "blake3:…" or a prefix, "pointer": "/a/0" }` (the
/// value at a JSON Pointer of a stored JSON document), or
/// `{ "id": …, "lines": "A:B" }` or
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

    fn description(&self) -> Option<&str> {
        Some("Reads stored output back: lines A to B, bytes A to B, or the value at a JSON Pointer of a stored JSON document.")
    }

    fn input_schema(&self) -> Value {
        serde_json::json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "The id the notice printed (blake3:… or a prefix of at least 8 hex digits)."},
                "lines": {"type": "string", "description": "A:B, A: or :B"},
                "bytes": {"type": "string", "description": "A:B, A: or :B"},
                "pointer": {"type": "string", "description": "A JSON Pointer, such as /items/3"}
            },
            "required": ["id"]
        })
    }

    fn output_schema(&self) -> Option<Value> {
        Some(serde_json::json!({ "type": "string" }))
    }

    fn execute(&self, cx: &mut Cx<'_>, args: &Value) -> Result<Rendered, ToolError> {
        let text = SpillRead::read(cx.store(), cx.policy().max_inline_bytes(), args)?;
        Ok(Rendered::Blocks(vec![Block::text(text)]))
    }
}

impl SpillRead {
    /// What `spill_read` answers for `args`, within `budget` bytes: the
    /// tool without a registry (the MCP server and proxy call it).
    ///
    /// # Errors
    ///
    /// [`ToolError::InvalidArgs`] for bad arguments, [`ToolError::Failed`]
    /// when the store cannot give the object.
    pub fn read(store: &Store, budget: usize, args: &Value) -> Result<String, ToolError> {
        let bad = |m: String| ToolError::InvalidArgs(m);
        let id_text = args
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("spill_read needs a string `id`".into()))?;
        let id = object_id(store, id_text)?;
        let lines = args.get("lines").and_then(Value::as_str);
        let bytes = args.get("bytes").and_then(Value::as_str);
        let sel = match (args.get("pointer").and_then(Value::as_str), lines, bytes) {
            (Some(p), None, None) => {
                let pointer: spillway::JsonPointer = p
                    .parse()
                    .map_err(|e: spillway::PointerError| bad(e.to_string()))?;
                // Past the budget it reads on as a byte range of the object.
                let range = store
                    .pointer_range(&id, &pointer)
                    .map_err(|e| ToolError::Failed(e.to_string()))?;
                Selection::Bytes(range)
            }
            (Some(_), _, _) => {
                return Err(bad("give `pointer`, `lines` or `bytes`, one of them".into()))
            }
            (None, Some(l), None) => {
                Selection::Lines(l.parse::<LineRange>().map_err(|e| bad(e.to_string()))?)
            }
            (None, None, Some(b)) => {
                Selection::Bytes(b.parse::<ByteRange>().map_err(|e| bad(e.to_string()))?)
            }
            (None, None, None) => Selection::All,
            (None, Some(_), Some(_)) => {
                return Err(bad("give `lines` or `bytes`, not both".into()))
            }
        };
        let page = store
            .page(&id, &sel, budget.saturating_sub(NOTE_ROOM))
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        Ok(page_text(&page, &sel))
    }
}

/// What `spill_read` shows of a page: its text and, when the selection
/// goes on, the exact continuation in the tool's own arguments.
fn page_text(page: &Page, asked: &Selection) -> String {
    let text = page.text();
    let Some(next) = page.next else {
        return text.into_owned();
    };
    let note = match (page.shown, next) {
        (Selection::Lines(shown), Selection::Lines(next)) => format!(
            "[spill_read: showing lines {}-{}; continue with lines=\"{}:{}\"]",
            shown.first(),
            shown.last().unwrap_or(shown.first()),
            next.first(),
            next.last().map_or(String::new(), |l| l.to_string())
        ),
        (Selection::Bytes(shown), Selection::Bytes(next)) => {
            let to = next.end().map_or(String::new(), |e| e.to_string());
            let end = shown.end().unwrap_or(next.start());
            if page.is_long_line(asked) {
                format!("\n[spill_read: a line longer than the budget; showing bytes {}-{end}; continue with bytes=\"{}:{to}\"]", shown.start(), next.start())
            } else {
                format!(
                    "\n[spill_read: showing bytes {}-{end}; continue with bytes=\"{}:{to}\"]",
                    shown.start(),
                    next.start()
                )
            }
        }
        _ => String::new(),
    };
    format!("{text}{note}")
}

/// An id as a call gives it: whole, or a prefix resolved in the store.
fn object_id(store: &Store, text: &str) -> Result<ContentId, ToolError> {
    match text.parse::<ContentId>() {
        Ok(id) => Ok(id),
        Err(_) => {
            let p: IdPrefix = text
                .parse()
                .map_err(|e| ToolError::InvalidArgs(format!("{e}")))?;
            store
                .resolve(&p)
                .map_err(|e| ToolError::Failed(e.to_string()))
        }
    }
}

/// `spill_grep`: `{ "id": …, "pattern": "regex", "context": N, "max_count":
/// N, "ignore_case": bool, "from_line": N }`. Searches a stored object as
/// `spillway grep` does: matching lines as `N:text`, context lines as
/// `N-text`, groups apart as `--`, within the registry's budget; when
/// matches are left, a last line gives the `from_line` to continue from.
/// It is in the default skip list, like `spill_read`.
#[derive(Debug, Default)]
pub struct SpillGrep;

fn count(args: &Value, key: &str) -> Result<Option<u64>, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| {
            ToolError::InvalidArgs(format!(
                "spill_grep: `{key}` must be a whole number, 0 or more"
            ))
        }),
    }
}

impl Tool for SpillGrep {
    fn name(&self) -> &str {
        "spill_grep"
    }

    fn description(&self) -> Option<&str> {
        Some("Searches stored output with a regular expression: matching lines with their numbers, and context lines.")
    }

    fn input_schema(&self) -> Value {
        serde_json::json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "The id the notice printed."},
                "pattern": {"type": "string", "description": "A regular expression."},
                "context": {"type": "integer", "minimum": 0, "description": "Lines of context before and after each match."},
                "max_count": {"type": "integer", "minimum": 0, "description": "Stop after this many matching lines."},
                "ignore_case": {"type": "boolean"},
                "from_line": {"type": "integer", "minimum": 1, "description": "Start at this line (a continuation gives it)."}
            },
            "required": ["id", "pattern"]
        })
    }

    fn output_schema(&self) -> Option<Value> {
        Some(serde_json::json!({ "type": "string" }))
    }

    fn execute(&self, cx: &mut Cx<'_>, args: &Value) -> Result<Rendered, ToolError> {
        let text = SpillGrep::search(cx.store(), cx.policy().max_inline_bytes(), args)?;
        Ok(Rendered::Blocks(vec![Block::text(text)]))
    }
}

impl SpillGrep {
    /// What `spill_grep` answers for `args`, within `budget` bytes: the
    /// tool without a registry (the MCP server and proxy call it).
    ///
    /// # Errors
    ///
    /// [`ToolError::InvalidArgs`] for bad arguments or a pattern that does
    /// not parse, [`ToolError::Failed`] when the store cannot give the
    /// object.
    pub fn search(store: &Store, budget: usize, args: &Value) -> Result<String, ToolError> {
        let bad = |m: &str| ToolError::InvalidArgs(m.to_string());
        let id_text = args
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("spill_grep needs a string `id`"))?;
        let pattern = args
            .get("pattern")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("spill_grep needs a string `pattern` (a regular expression)"))?;
        let ignore_case = match args.get("ignore_case") {
            None | Some(Value::Null) => false,
            Some(v) => v
                .as_bool()
                .ok_or_else(|| bad("spill_grep: `ignore_case` must be true or false"))?,
        };
        let regex = GrepPattern::new(pattern, ignore_case).map_err(|e| {
            ToolError::InvalidArgs(format!("spill_grep: the pattern does not parse: {e}"))
        })?;
        let context = count(args, "context")?.unwrap_or(0);
        let context = usize::try_from(context.min(1000)).unwrap_or(1000);
        let from_line = count(args, "from_line")?.unwrap_or(1);
        if from_line == 0 {
            return Err(bad("spill_grep: `from_line` counts from 1"));
        }
        let id = object_id(store, id_text)?;
        let mut opts = GrepOptions::default();
        opts.before = context;
        opts.after = context;
        opts.max_count = count(args, "max_count")?;
        opts.from_line = from_line;
        opts.max_bytes = budget.saturating_sub(NOTE_ROOM);
        let report = store
            .grep(&id, &regex, &opts)
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        let mut text = report.printed(context > 0);
        if report.matches == 0 && report.more_matches == 0 {
            text = format!(
                "[spill_grep: no line of {} lines matches]",
                report.total_lines
            );
        } else if let Some(n) = report.next_line {
            text.push_str(&format!(
                "[spill_grep: {} more matching line(s); continue with from_line={n}]",
                report.more_matches
            ));
        }
        Ok(text)
    }
}
