//! Code Mode for spillway's registry: `run_code` runs JavaScript.
//!
//! A program is the body of an async function: `await` at the top level,
//! and `return` gives the result. It calls the registry's tools with
//! `await tools.<name>(args)` and gets their complete values; what it
//! prints (`print`, `console.log`) streams into the spill stage as it is
//! printed, and its result follows. The registry bounds the whole once and
//! makes it durable (see `spillway_registry::run_code`).
//!
//! Each run gets a fresh QuickJS runtime and context on a thread of its
//! own, with a wall-time, memory and stack limit ([`Limits`]). Nothing of
//! the host is reachable from it: no filesystem, network, process,
//! environment, `require` or `import`; only `tools`, `print`, `console`,
//! `setTimeout`/`clearTimeout` and the standard built-ins. A run past a
//! limit fails with `CODE_RUN_FAILED` naming the limit, after the logs it
//! printed; the host is unaffected and the next run starts clean. The call
//! answers within half a second of its wall-time limit, or of its
//! cancellation (seen within 50 ms): a program stuck in one long built-in
//! call then is left to stop on its own thread (at most four at once;
//! while four are, a run is refused).
//!
//! Nested calls a program starts together (`Promise.all`) run at once on a
//! pool of [`Limits::concurrency`] threads; they are numbered in the order
//! they started.
//!
//! ```
//! use std::sync::Arc;
//! use serde_json::json;
//! use spillway::{Policy, Spiller, Store};
//! use spillway_code::JsRuntime;
//! use spillway_registry::events::{LogSync, SessionLog};
//! use spillway_registry::run_code::RunCode;
//! use spillway_registry::{Registry, ToolCall};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let spiller = Spiller::new(Policy::default(), Store::open(dir.path().join("store"))?)?;
//! let log = Arc::new(SessionLog::open(dir.path().join("session.jsonl"), LogSync::EveryEvent)?);
//! let registry = Registry::builder(spiller, log)?
//!     .tool(RunCode::new(JsRuntime::default()))
//!     .build();
//! let code = "print('adding'); return [1, 2, 3].reduce((a, b) => a + b);";
//! let result = registry.call(&ToolCall::new("c1", "run_code", json!({ "code": code })))?;
//! assert_eq!(result.content[0].as_text(), Some("adding\n6"));
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]
#![deny(unsafe_code)]

mod alloc;
mod deadline;
mod gate;
mod host;
mod limits;
mod sandbox;
mod slots;

pub use limits::{
    Limits, LimitsBuilder, LimitsError, DEFAULT_CONCURRENCY, DEFAULT_MEMORY, DEFAULT_STACK,
    DEFAULT_TIMEOUT, MAX_CONCURRENCY, MAX_MEMORY, MAX_STACK, MAX_TIMEOUT, MIN_MEMORY, MIN_STACK,
};

use spillway_registry::run_code::{CodeHost, CodeRunFailed, CodeRuntime, CodeValue};

/// The most programs this process runs at once, counting those left
/// behind: a run waits for one of them to end (within its own wall-time
/// limit), so no more than this many are ever left behind.
pub const MAX_PROGRAMS: usize = slots::MAX_PROGRAMS;

/// How many programs of this process were left behind (they did not stop
/// within 500 ms of their limit or cancellation) and still run.
pub fn programs_left_behind() -> usize {
    slots::left_behind()
}

/// The JavaScript runtime of `run_code`: QuickJS, a fresh sandbox per run.
#[derive(Clone, Debug, Default)]
pub struct JsRuntime {
    limits: Limits,
}

impl JsRuntime {
    /// A runtime with these limits.
    pub fn new(limits: Limits) -> Self {
        JsRuntime { limits }
    }

    /// Its limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }
}

/// What `run_code` says of itself, before the SDK declaration.
pub const DESCRIPTION: &str = "Runs JavaScript: the body of an async function, so `await` works at the top level and `return` gives the result. Call the tools declared below with `await tools.<name>(args)`: each gives its complete value (a string, or parsed JSON where the tool returns JSON), and a failed call throws an Error you can catch; calls started together with Promise.all run at once. print() and console.log() lines come back first, then the returned value (strings as they are, anything else as JSON). Long output comes back bounded, the rest stored to read back. There is no filesystem, network, require or import: only the tools.";

impl CodeRuntime for JsRuntime {
    fn run(&self, code: &str, host: &mut CodeHost<'_>) -> Result<Option<CodeValue>, CodeRunFailed> {
        host::run(code, host, &self.limits)
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }
}
