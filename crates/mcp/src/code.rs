//! Code Mode on `spillway mcp serve`: the registry behind `run_code`, whose
//! programs call `run`, `spill_read` and `spill_grep`.

use std::sync::Arc;

use serde_json::{json, Value};
use spillway::Spiller;
use spillway_code::{JsRuntime, Limits};
use spillway_process::run_merged;
use spillway_registry::events::SessionLog;
use spillway_registry::run_code::RunCode;
use spillway_registry::tools::{SpillGrep, SpillRead};
use spillway_registry::{Cx, Registry, Rendered, Tool, ToolError};

use crate::server::run_command;

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
        let (mut cmd, mut opts) = run_command(args).map_err(ToolError::InvalidArgs)?;
        opts.forward = Some(cx.signal().clone());
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
