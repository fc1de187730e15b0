//! `spillway mcp serve`: an MCP server of spillway's own, on stdio.
//!
//! Tools: `run` (a shell command: its stdout and stderr merged in the order
//! written, bounded by the policy, the exit status in the result, `isError`
//! when it is not 0), `spill_read` and `spill_grep`. Stored objects are
//! also resources (`spillway://<id>`). Requests are answered in order.

use std::io::{self, BufRead, Write};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};
use spillway::Spiller;
use spillway_process::{run_merged, RunOptions};

use crate::rpc::{self, Out};
use crate::tools::{self, ToolNames};

/// The protocol revisions this server answers with the `initialize`
/// handshake, oldest first.
pub const PROTOCOL_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// Room for `run`'s status lines after the preview.
const STATUS_ROOM: usize = 200;

/// The longest `timeout` a `run` call may ask for: one hour.
const MAX_TIMEOUT: f64 = 3600.0;

/// Serves until `input` ends. `spiller`'s templates should name the spill
/// tools (`ToolNames::with_prefix("").templates()`).
///
/// # Errors
///
/// When `output` fails.
pub fn serve(
    spiller: &Spiller,
    input: &mut dyn BufRead,
    output: Box<dyn Write + Send>,
) -> io::Result<()> {
    let out = Out::new(output);
    let names = ToolNames::with_prefix("");
    // `run` adds a status line after the preview: its room comes out of the
    // budget when the budget can spare it.
    let run_spiller = spiller
        .with_budget(
            spiller
                .policy()
                .max_inline_bytes()
                .saturating_sub(STATUS_ROOM),
        )
        .unwrap_or_else(|_| spiller.clone());
    let mut line = Vec::new();
    while let Some(raw) = rpc::next_line(input, &mut line) {
        let msg = match rpc::parse(raw) {
            Ok(m) => m,
            Err(e) => {
                out.error(&Value::Null, rpc::PARSE_ERROR, &e)?;
                continue;
            }
        };
        let Some(method) = msg.get("method").and_then(Value::as_str) else {
            // A response (to nothing: this server sends no requests).
            continue;
        };
        let Some(id) = msg.get("id").filter(|v| !v.is_null()) else {
            // A notification: initialized, cancelled, … nothing to answer.
            continue;
        };
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        match answer(spiller, &run_spiller, &names, method, &params) {
            Ok(result) => out.result(id, result)?,
            Err((code, message)) => out.error(id, code, &message)?,
        }
    }
    Ok(())
}

fn answer(
    spiller: &Spiller,
    run_spiller: &Spiller,
    names: &ToolNames,
    method: &str,
    params: &Value,
) -> Result<Value, (i64, String)> {
    let store = spiller.store();
    let budget = spiller.policy().max_inline_bytes();
    match method {
        "initialize" => {
            let asked = params
                .get("protocolVersion")
                .and_then(Value::as_str)
                .unwrap_or("");
            let version = if PROTOCOL_VERSIONS.contains(&asked) {
                asked
            } else {
                PROTOCOL_VERSIONS[PROTOCOL_VERSIONS.len() - 1]
            };
            Ok(json!({
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": false}, "resources": {}},
                "serverInfo": {"name": "spillway", "version": env!("CARGO_PKG_VERSION")},
                "instructions": "run executes a shell command; long output comes back as a bounded head and tail with a notice, and spill_read and spill_grep read the rest."
            }))
        }
        "ping" => Ok(json!({})),
        "tools/list" => {
            let mut list = vec![run_definition()];
            list.extend(names.definitions());
            Ok(json!({"tools": list}))
        }
        "tools/call" => {
            let (name, args) = rpc::call_parts(params);
            if name == "run" {
                return Ok(run_tool(run_spiller, &args));
            }
            names
                .call(store, budget, name, &args)
                .ok_or_else(|| (rpc::INVALID_PARAMS, format!("unknown tool: {name}")))
        }
        "resources/list" => Ok(json!({"resources": []})),
        "resources/templates/list" => {
            Ok(json!({"resourceTemplates": [tools::resource_template()]}))
        }
        "resources/read" => {
            let uri = params
                .get("uri")
                .and_then(Value::as_str)
                .unwrap_or_default();
            tools::read_resource(store, uri)
                .map_err(|e| (rpc::INVALID_PARAMS, format!("{uri}: {e}")))
        }
        other => Err((rpc::METHOD_NOT_FOUND, format!("Method not found: {other}"))),
    }
}

fn run_definition() -> Value {
    json!({
        "name": "run",
        "title": "Run a shell command",
        "description": "Runs a command with sh -c. Its stdout and stderr come back merged, in the order written; long output comes back as its first and last lines with a notice saying exactly what was left out and how to read it (spill_read, spill_grep). The exit status is in the result, and a failing command is an error result.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The shell command."},
                "cwd": {"type": "string", "description": "The working directory (default: the server's)."},
                "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_TIMEOUT, "description": "Seconds before the command (its whole process group) is killed."}
            },
            "required": ["command"]
        },
        "annotations": {"destructiveHint": true, "openWorldHint": true}
    })
}

/// Runs a `run` call; every failure is an error result.
fn run_tool(spiller: &Spiller, args: &Value) -> Value {
    let Some(command) = args.get("command").and_then(Value::as_str) else {
        return tools::tool_result("run needs a string `command`".into(), true);
    };
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .stdin(std::process::Stdio::null());
    match args.get("cwd") {
        None | Some(Value::Null) => {}
        Some(Value::String(dir)) => {
            let dir = PathBuf::from(dir);
            if !dir.is_dir() {
                return tools::tool_result(
                    format!("run: cwd {}: not a directory", dir.display()),
                    true,
                );
            }
            cmd.current_dir(dir);
        }
        Some(_) => return tools::tool_result("run: `cwd` must be a string".into(), true),
    }
    let mut opts = RunOptions::default();
    match args.get("timeout") {
        None | Some(Value::Null) => {}
        Some(v) => match v.as_f64() {
            Some(t) if t > 0.0 && t <= MAX_TIMEOUT => {
                opts.timeout = Some(Duration::from_secs_f64(t))
            }
            _ => {
                return tools::tool_result(
                    format!(
                    "run: `timeout` must be a number of seconds above 0 and at most {MAX_TIMEOUT}"
                ),
                    true,
                )
            }
        },
    }
    let mut stage = spiller.stage();
    let finished = run_merged(&mut cmd, &opts, &mut stage, &mut |_| {});
    let outcome = match stage.finish() {
        Ok(o) => o,
        Err(e) => e.into_outcome(),
    };
    let mut text = outcome.content;
    let (status, failed) = match finished {
        Ok(f) => {
            use std::os::unix::process::ExitStatusExt;
            let mut s = String::new();
            if f.timed_out {
                s.push_str(&format!(
                    "[killed after the {}s timeout]",
                    opts.timeout.map_or(0.0, |t| t.as_secs_f64())
                ));
            } else if let Some(code) = f.status.code() {
                if code != 0 {
                    s.push_str(&format!("[exit status {code}]"));
                }
            } else if let Some(sig) = f.status.signal() {
                s.push_str(&format!("[killed by signal {sig}]"));
            }
            if f.output_cut {
                s.push_str("[output after the command exited is not included: something it started kept the output open]");
            }
            (s, !f.status.success() || f.timed_out)
        }
        Err(e) => (format!("[{e}]"), true),
    };
    if !status.is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&status);
    }
    tools::tool_result(text, failed)
}
