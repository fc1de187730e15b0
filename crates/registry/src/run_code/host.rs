//! The caller's side of a run: the program's logs into the stage, and its
//! nested calls dispatched from any thread.

use std::fmt;
use std::io;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use spillway_process::{Cancel, WeakCancel};

use super::render::Renderer;
use super::{lock, nested_run, CodeRunFailed, NOT_RUN};
use crate::events::Event;
use crate::{Block, Registry, ToolStage};

/// A nested call a program started: its number and arguments. Run it with
/// [`Dispatcher::run`], on any thread.
#[derive(Debug)]
pub struct NestedCall {
    n: u32,
    tool: String,
    args: Value,
}

impl NestedCall {
    /// Its number in the run: `n` of `<outerCallId>:code:<n>`.
    pub fn n(&self) -> u32 {
        self.n
    }

    /// The tool it calls.
    pub fn tool(&self) -> &str {
        &self.tool
    }
}

/// Runs a program's nested calls. Cheap to clone, and `Send + Sync`: calls
/// a program starts together run on as many threads as the runtime gives
/// them.
#[derive(Clone)]
pub struct Dispatcher<'a> {
    pub(super) registry: &'a Registry,
    pub(super) parent: Arc<str>,
    pub(super) stop: Arc<Stop>,
}

/// How a run's nested calls are stopped.
#[derive(Debug)]
pub(super) struct Stop {
    /// The outer call's cancellation: raised when the caller cancels it.
    pub(super) outer: Cancel,
    /// The run's own stop, raised when the program ended.
    pub(super) stopped: Cancel,
    /// Each running nested call's cancellation, passed on to its command.
    pub(super) live: Mutex<Vec<WeakCancel>>,
    /// Why the run must end: a nested call found its tool unavailable.
    pub(super) fatal: Mutex<Option<String>>,
}

impl Dispatcher<'_> {
    /// Runs a started call through the registry's nested dispatch: its
    /// complete text, or its error text. Writes `tool/code-dispatch`.
    ///
    /// # Errors
    ///
    /// The tool's error, as text.
    pub fn run(&self, call: NestedCall) -> Result<NestedValue, String> {
        let signal = Cancel::new();
        {
            let mut live = lock(&self.stop.live);
            live.retain(|w| w.upgrade().is_some());
            live.push(signal.downgrade());
        }
        // A call started after the stop is stopped at once.
        if let Some(stopped) = self.stop.stopped.signal() {
            signal.raise(stopped);
        }
        nested_run(
            self.registry,
            &self.parent,
            call.n,
            &call.tool,
            call.args,
            signal,
        )
        .map_err(|(text, unavailable)| {
            if unavailable {
                lock(&self.stop.fatal).get_or_insert_with(|| text.clone());
            }
            text
        })
    }

    /// Ends calls that were started and will never run (their program
    /// ended before their turn): one `tool/code-dispatch` each saying so,
    /// all in one append to the session log, so that a program that left
    /// thousands queued does not wait for as many fsyncs.
    pub fn not_run(&self, calls: Vec<NestedCall>) {
        let events: Vec<Event> = calls
            .into_iter()
            .map(|call| Event::CodeDispatch {
                sub_call_id: sub_call_id(&self.parent, call.n),
                parent_call_id: self.parent.to_string(),
                tool: call.tool,
                args: call.args,
                content: vec![Block::text(NOT_RUN)],
                is_error: true,
                spills: Vec::new(),
            })
            .collect();
        let _ = self.registry.log.append_all(&events);
    }

    /// Why the run must end, when a nested call found its tool unavailable
    /// ([`ToolError::Unavailable`]): the runtime then fails the run with it.
    pub fn fatal(&self) -> Option<String> {
        lock(&self.stop.fatal).clone()
    }

    /// Stops the calls still running, and any started later: the command
    /// a nested call runs gets `signal` (9, SIGKILL, when its program
    /// ended).
    pub fn stop(&self, signal: i32) {
        self.stop.stopped.raise(signal);
        for s in lock(&self.stop.live).iter().filter_map(WeakCancel::upgrade) {
            s.raise(signal);
        }
    }

    /// Whether the outer call was cancelled or the run stopped.
    pub fn stopped(&self) -> bool {
        self.stop.stopped.is_cancelled() || self.stop.outer.is_cancelled()
    }
}

impl fmt::Debug for Dispatcher<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dispatcher")
            .field("parent", &self.parent)
            .finish()
    }
}

/// A nested call's complete value.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NestedValue {
    /// Its text: the tool's output, or a JSON value written as JSON.
    pub text: String,
    /// Whether `text` is a JSON value the tool produced
    /// ([`Rendered::Json`]): a program gets it parsed.
    pub json: bool,
}

/// A tool a program can call.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Callable {
    /// Its name in the registry.
    pub name: String,
    /// Its group: the program calls it as `tools.<group>.<member>`.
    pub group: Option<String>,
    /// The name the program calls it by (within its group).
    pub member: String,
    /// Whether its value is JSON (its output schema says a type other than
    /// `string`): a program then gets the parsed value, else the text.
    pub json: bool,
}

/// What a running program sees: its output, and a handle on the host's
/// tools.
///
/// Logs go straight into the spill stage as they are printed, so a program
/// that prints without end runs in bounded memory.
pub struct CodeHost<'a> {
    /// The stage, behind 64 KiB of buffer: a log line is two small writes
    /// (the separator and the line), gathered into large ones.
    pub(super) stage: io::BufWriter<ToolStage>,
    pub(super) renderer: Renderer,
    pub(super) dispatcher: Dispatcher<'a>,
    pub(super) callable: Vec<Callable>,
    pub(super) calls: u32,
    /// When the outer call must have answered ([`ToolCall::deadline`]).
    pub(super) deadline: Option<std::time::Instant>,
    /// A write to the stage failed (it never does: the stage takes every
    /// byte); kept so the error is not lost.
    pub(super) failed: Option<io::Error>,
}

impl<'a> CodeHost<'a> {
    /// Writes a log line (a `print`) into the output.
    pub fn log(&mut self, line: impl AsRef<str>) {
        if let Err(e) = self.renderer.log(&mut self.stage, line.as_ref().as_bytes()) {
            self.failed.get_or_insert(e);
        }
    }

    /// Writes `lines` log lines at once, given joined by `\n` (no `\n`
    /// after the last): what as many [`CodeHost::log`] calls write, in one
    /// write. A runtime gathers a program's prints this way.
    pub fn log_lines(&mut self, joined: &[u8], lines: u64) {
        if lines == 0 {
            return;
        }
        if let Err(e) = self.renderer.log_joined(&mut self.stage, joined, lines) {
            self.failed.get_or_insert(e);
        }
    }

    /// Bytes of output so far.
    pub fn bytes_written(&self) -> u64 {
        self.stage.get_ref().bytes_written() + self.stage.buffer().len() as u64
    }

    /// The tools a program can call: every tool of the registry but
    /// `run_code`, by name.
    pub fn tools(&self) -> &[Callable] {
        &self.callable
    }

    /// The SDK declaration of those tools (see [`Registry::sdk`]).
    pub fn sdk(&self) -> String {
        self.dispatcher.registry.sdk()
    }

    /// Calls a host tool (`await tools.name(args)`) and waits for it: its
    /// complete text. Emits `tool/code-dispatch-start` and
    /// `tool/code-dispatch`.
    ///
    /// # Errors
    ///
    /// The tool's error, as text.
    pub fn call(&mut self, tool: &str, args: Value) -> Result<String, String> {
        let call = self.start(tool, args);
        self.dispatcher.run(call).map(|v| v.text)
    }

    /// Starts a nested call: gives it the next number and writes
    /// `tool/code-dispatch-start`. Numbers follow the order calls start in;
    /// run it with [`Dispatcher::run`] on any thread.
    pub fn start(&mut self, tool: &str, args: Value) -> NestedCall {
        self.calls += 1;
        let n = self.calls;
        let reg = self.dispatcher.registry;
        let _ = reg.log.append(&Event::CodeDispatchStart {
            sub_call_id: sub_call_id(&self.dispatcher.parent, n),
            parent_call_id: self.dispatcher.parent.to_string(),
            tool: tool.to_string(),
            args: args.clone(),
        });
        NestedCall {
            n,
            tool: tool.to_owned(),
            args,
        }
    }

    /// A handle that runs started calls, on any thread.
    pub fn dispatcher(&self) -> Dispatcher<'a> {
        self.dispatcher.clone()
    }

    /// Whether the outer call was cancelled: the program should stop.
    pub fn cancelled(&self) -> bool {
        self.dispatcher.stopped()
    }

    /// When the outer call must have answered, when its caller set a
    /// deadline ([`crate::ToolCall::deadline`]): a runtime ends the program
    /// by then, or by its own wall-time limit, whichever comes first.
    pub fn deadline(&self) -> Option<std::time::Instant> {
        self.deadline
    }

    /// The outer call's cancellation, for a runtime that checks it from
    /// another thread or an interrupt handler.
    pub fn cancellation(&self) -> Cancel {
        self.dispatcher.stop.outer.clone()
    }

    /// A failure (kept for runtimes that map errors in one place).
    pub fn fail(&mut self, message: impl Into<String>) -> CodeRunFailed {
        CodeRunFailed::new(message)
    }
}

pub(super) fn sub_call_id(parent: &str, n: u32) -> String {
    format!("{parent}:code:{n}")
}
