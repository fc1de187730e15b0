//! Code Mode on `spillway mcp serve`: the registry behind `run_code`, whose
//! programs call `run`, `spill_read` and `spill_grep`.

use std::sync::Arc;

use spillway::Spiller;
use spillway_code::{JsRuntime, Limits};
use spillway_registry::events::SessionLog;
use spillway_registry::run_code::RunCode;
use spillway_registry::tools::{Bash, SpillGrep, SpillRead};
use spillway_registry::Registry;

/// The registry of `spillway mcp serve`: `run_code` on the JavaScript
/// runtime, and the tools its programs call.
pub(crate) fn registry(
    spiller: &Spiller,
    log: Arc<SessionLog>,
    limits: Limits,
) -> Result<Registry, spillway::PolicyError> {
    Ok(Registry::builder(spiller.clone(), log)?
        .tool(RunCode::new(JsRuntime::new(limits)))
        // `run` as a program calls it: the command's output, complete (the
        // stage of a nested call holds up to 64 MiB), then its status line;
        // a failed command makes the program's `await` throw.
        .tool(Bash::named("run").failure_is_error(true))
        .tool(SpillRead)
        .tool(SpillGrep)
        .build())
}
