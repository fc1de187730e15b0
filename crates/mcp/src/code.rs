//! Code Mode on `spillway mcp serve`: the registry behind `run_code`, whose
//! programs call `run`, `spill_read` and `spill_grep`.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use spillway::Spiller;
use spillway_code::{JsRuntime, Limits};
use spillway_process::{run_merged, RunOptions};
use spillway_registry::events::SessionLog;
use spillway_registry::run_code::RunCode;
use spillway_registry::tools::{SpillGrep, SpillRead};
use spillway_registry::{Cx, Registry, Rendered, Tool, ToolError};

use crate::server::MAX_TIMEOUT;

/// The registry of `spillway mcp serve`: `run_code` on the JavaScript
/// runtime, and the tools its programs call.
pub(crate) fn registry(
    spiller: &Spiller,
    log: Arc<SessionLog>,
    limits: Limits,
) -> Result<Registry, spillway::PolicyError> {
    Ok(Registry::builder(spiller.clone(), log)?
        .tool(RunCode::new(JsRuntime::new(limits)))
        .tool(Run)
        .tool(SpillRead)
        .tool(SpillGrep)
        .build())
}

/// `run` as a program calls it: the command's output, complete (the stage
/// of a nested call holds up to 64 MiB), then its status line when it
/// failed.
struct Run;

impl Tool for Run {
    fn name(&self) -> &str {
        "run"
    }

    fn description(&self) -> Option<&str> {
        Some("Runs a shell command (sh -c): its stdout and stderr together, in the order written, then a status line when it failed.")
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The shell command."},
                "cwd": {"type": "string", "description": "The working directory (default: the server's)."},
                "timeout": {"type": "number", "description": "Seconds before the command (its whole process group) is killed."}
            },
            "required": ["command"]
        })
    }

    fn output_schema(&self) -> Option<Value> {
        Some(json!({"type": "string"}))
    }

    fn execute(&self, cx: &mut Cx<'_>, args: &Value) -> Result<Rendered, ToolError> {
        let bad = |m: &str| ToolError::InvalidArgs(format!("run: {m}"));
        let command = args
            .get("command")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("needs a string `command`"))?;
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(command).stdin(Stdio::null());
        match args.get("cwd") {
            None | Some(Value::Null) => {}
            Some(Value::String(dir)) => {
                let dir = PathBuf::from(dir);
                if !dir.is_dir() {
                    return Err(bad(&format!("cwd {}: not a directory", dir.display())));
                }
                cmd.current_dir(dir);
            }
            Some(_) => return Err(bad("`cwd` must be a string")),
        }
        let mut opts = RunOptions::default();
        opts.forward = Some(cx.signal().clone());
        match args.get("timeout") {
            None | Some(Value::Null) => {}
            Some(v) => match v.as_f64() {
                Some(t) if t > 0.0 && t <= MAX_TIMEOUT => {
                    opts.timeout = Some(Duration::from_secs_f64(t))
                }
                _ => {
                    return Err(bad(&format!(
                        "`timeout` must be a number of seconds above 0 and at most {MAX_TIMEOUT}"
                    )))
                }
            },
        }
        let mut stage = cx.stage();
        let finished = run_merged(&mut cmd, &opts, &mut stage, &mut |_| {})
            .map_err(|e| ToolError::Failed(format!("run: {e}")))?;
        let status = crate::server::status_line(&finished, opts.timeout);
        if !status.is_empty() {
            let sep = match stage.last_byte() {
                None | Some(b'\n') => "",
                Some(_) => "\n",
            };
            stage.feed(format!("{sep}{status}").as_bytes());
        }
        let outcome = cx.finish(stage)?;
        if !finished.status.success() || finished.timed_out {
            // The program's `await` throws, with the output and the status.
            return Err(ToolError::Failed(outcome.content));
        }
        Ok(Rendered::Streamed(outcome))
    }
}
