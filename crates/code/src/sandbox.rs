//! The program's thread: a fresh QuickJS runtime and context, the prelude,
//! the program, and the event loop that settles its nested calls and
//! timers.
//!
//! Nothing here touches the host's state. Logs and nested calls leave as
//! messages ([`ToHost`]); values of nested calls come back as
//! [`Completion`]s. The channel to the host is bounded, so a program that
//! prints without end waits for the host to take its logs: memory stays
//! bounded.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rquickjs::context::EvalOptions;
use rquickjs::{Array, Context, Ctx, Exception, Function, Promise, Runtime, Value};
use spillway_process::Cancel;
use spillway_registry::run_code::{Callable, CodeRunFailed, CodeValue, Limit, NestedValue};

use crate::alloc::Counted;
use crate::deadline::Deadline;
use crate::gate::Gate;
use crate::limits::Limits;

/// What the program's thread asks of the host.
pub(crate) enum ToHost {
    /// Log lines, in order, joined by `\n`, and how many.
    Logs(Vec<u8>, u64),
    /// Start a nested call; its value comes back with the same `id`.
    Call {
        id: u64,
        tool: String,
        args: serde_json::Value,
        /// The arguments' size as the program gave them, counted in the
        /// gate until a worker takes the call.
        size: usize,
    },
}

/// A nested call's value, or its error text.
pub(crate) struct Completion {
    pub(crate) id: u64,
    pub(crate) result: Result<NestedValue, String>,
}

/// Why the run must end now, set from another thread (a nested call's
/// tool is gone).
#[derive(Default)]
pub(crate) struct Abort {
    set: AtomicBool,
    why: std::sync::Mutex<Option<String>>,
}

impl Abort {
    pub(crate) fn set(&self, why: String) {
        self.why
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get_or_insert(why);
        self.set.store(true, Ordering::SeqCst);
    }

    fn reason(&self) -> Option<String> {
        if !self.set.load(Ordering::SeqCst) {
            return None;
        }
        self.why
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// Log bytes gathered before they go to the host in one message.
const LOG_BATCH: usize = 64 << 10;

/// The first line of a program is line 1 of `run_code`'s stack traces.
const WRAP_HEAD: &str = "(async function () {";
const WRAP_TAIL: &str = "\n})()";

/// A JavaScript string's text for the host. A string with a lone
/// surrogate (which has no UTF-8) is first made well formed by the
/// engine's own `String.prototype.toWellFormed`, taken before the program
/// ran (`well_formed`): each lone surrogate becomes U+FFFD, and nothing the
/// program can override stands between its strings and the host.
fn js_text<'js>(s: rquickjs::String<'js>, well_formed: &Function<'js>) -> rquickjs::Result<String> {
    match s.to_string() {
        Ok(t) => Ok(t),
        Err(rquickjs::Error::Utf8(_)) => {
            let fixed: rquickjs::String<'js> = well_formed.call((rquickjs::function::This(s),))?;
            fixed.to_string()
        }
        Err(e) => Err(e),
    }
}

/// Logs printed and not yet sent: lines joined by `\n`, and how many. The
/// host takes what is left here from a program it leaves behind.
#[derive(Default)]
pub(crate) struct Unsent {
    joined: Vec<u8>,
    lines: u64,
    /// Set when the host took the rest: later lines go nowhere.
    closed: bool,
}

impl Unsent {
    /// What is left, as one batch; nothing is taken after this.
    pub(crate) fn close(&mut self) -> (Vec<u8>, u64) {
        self.closed = true;
        (
            std::mem::take(&mut self.joined),
            std::mem::take(&mut self.lines),
        )
    }
}

/// Logs on their way to the host, sent in one message when they reach
/// [`LOG_BATCH`] bytes or the program waits. A batch is sent while the
/// lock is held, so batches and what is left stay in order.
struct Logs {
    unsent: Arc<Mutex<Unsent>>,
    to_host: SyncSender<ToHost>,
    gate: Arc<Gate>,
    /// Whether the run is over: then nothing waits at the gate.
    over: Arc<dyn Fn() -> bool>,
}

impl Logs {
    fn push(&mut self, line: &str) {
        let mut u = lock(&self.unsent);
        if u.closed {
            return;
        }
        if u.lines > 0 {
            u.joined.push(b'\n');
        }
        u.joined.extend_from_slice(line.as_bytes());
        u.lines += 1;
        if u.joined.len() >= LOG_BATCH {
            self.send(&mut u);
        }
    }

    fn flush(&mut self) {
        let mut u = lock(&self.unsent);
        self.send(&mut u);
    }

    fn send(&self, u: &mut Unsent) {
        if u.lines > 0 {
            let joined = std::mem::replace(&mut u.joined, Vec::with_capacity(LOG_BATCH + 1024));
            self.gate.enter(joined.len(), &*self.over);
            // The host stops taking messages only when the run is over.
            let _ = self.to_host.send(ToHost::Logs(joined, u.lines));
            u.lines = 0;
        }
    }
}

/// The lock of what is unsent; a panic elsewhere leaves its data whole.
fn lock(unsent: &Mutex<Unsent>) -> std::sync::MutexGuard<'_, Unsent> {
    unsent
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The loop's state that the program's host functions share.
struct Shared<'js> {
    /// Nested calls waiting for their value: the promise's resolve.
    pending: HashMap<u64, Function<'js>>,
    next_call: u64,
    /// Timers by when they are due, then by id (the order they were set).
    timers: BTreeMap<(Instant, u32), Function<'js>>,
    timer_due: HashMap<u32, Instant>,
    next_timer: u32,
    /// The engine's `String.prototype.toWellFormed`, taken before the
    /// program ran (see [`js_text`]).
    well_formed: Option<Function<'js>>,
    /// What a `queueMicrotask` callback threw: it fails the run, as a
    /// `setTimeout` callback's error does.
    job_failed: Option<Value<'js>>,
}

/// What the host and the program's thread share besides their channels:
/// the call's cancellation, why the run must end, when, and the logs not
/// yet sent.
#[derive(Clone)]
pub(crate) struct Link {
    pub(crate) cancel: Cancel,
    pub(crate) abort: Arc<Abort>,
    pub(crate) deadline: Arc<Deadline>,
    pub(crate) unsent: Arc<Mutex<Unsent>>,
    /// The bytes handed to the host and not dealt with yet.
    pub(crate) gate: Arc<Gate>,
}

/// Runs `code` to its result. The caller's thread has a stack of the
/// stack limit and room to spare.
pub(crate) fn run(
    code: &str,
    tools: &[Callable],
    limits: &Limits,
    link: &Link,
    to_host: SyncSender<ToHost>,
    done: Receiver<Completion>,
) -> Result<Option<CodeValue>, CodeRunFailed> {
    let Link {
        cancel,
        abort,
        deadline,
        unsent,
        gate,
    } = link;
    let engine = |e: rquickjs::Error| CodeRunFailed::new(format!("the engine failed: {e}"));
    // The engine's heap is counted by its allocator, which refuses past
    // the limit and remembers it did.
    let refused = Arc::new(AtomicBool::new(false));
    let rt = Runtime::new_with_alloc(Counted::new(
        limits.memory(),
        refused.clone(),
        deadline.clone(),
    ))
    .map_err(engine)?;
    rt.set_max_stack_size(limits.stack());
    let (stop, aborted, due) = (cancel.clone(), abort.clone(), deadline.clone());
    rt.set_interrupt_handler(Some(Box::new(move || {
        stop.is_cancelled() || aborted.set.load(Ordering::Relaxed) || due.passed()
    })));
    let ctx = Context::full(&rt).map_err(engine)?;
    let over: Arc<dyn Fn() -> bool> = {
        let (deadline, cancel) = (deadline.clone(), cancel.clone());
        Arc::new(move || deadline.passed() || cancel.is_cancelled())
    };
    let logs = Rc::new(RefCell::new(Logs {
        unsent: unsent.clone(),
        to_host: to_host.clone(),
        gate: gate.clone(),
        over: over.clone(),
    }));
    let last = code.rsplit('\n').next().unwrap_or("");
    let run = Run {
        gate: gate.clone(),
        over,
        end: (
            code.matches('\n').count() + 1,
            last.chars().count()
                + if code.contains('\n') {
                    0
                } else {
                    WRAP_HEAD.len()
                },
        ),
        abort,
        refused: &refused,
        limits,
        deadline: deadline.at(),
        cancel,
        to_host: &to_host,
        done: &done,
    };
    let result = ctx.with(|ctx| {
        let shared = Rc::new(RefCell::new(Shared {
            pending: HashMap::new(),
            next_call: 0,
            timers: BTreeMap::new(),
            timer_due: HashMap::new(),
            next_timer: 0,
            well_formed: None,
            job_failed: None,
        }));
        let r = run.main(&ctx, code, tools, &logs, &shared).map_err(|f| {
            // Past the memory limit, whatever failed next that is not a
            // limit itself (a regexp, a normalization, a promise never
            // made, a job that threw) failed for want of memory: the limit
            // is what the run is told. A program that caught running out
            // and ran on to its wall-time limit is told that limit.
            let memory =
                refused.load(Ordering::SeqCst) && f.limit.is_none() && !cancel.is_cancelled();
            if memory {
                CodeRunFailed::limit(
                    Limit::Memory,
                    format!(
                        "the program ran past its memory limit of {} bytes",
                        limits.memory()
                    ),
                )
            } else {
                f
            }
        });
        // Functions the loop still holds (a call not settled, a timer not
        // due) go now, inside the context, so the runtime frees them.
        let mut s = shared.borrow_mut();
        s.pending.clear();
        s.timers.clear();
        s.well_formed = None;
        s.job_failed = None;
        r
    });
    logs.borrow_mut().flush();
    result
}

struct Run<'r> {
    /// The bytes handed to the host and not dealt with yet.
    gate: Arc<Gate>,
    /// Whether the run is over.
    over: Arc<dyn Fn() -> bool>,
    /// The program's last line and that line's length, as the engine
    /// counts them (line 1 starts after the wrapper's head).
    end: (usize, usize),
    abort: &'r Abort,
    /// Set when the allocator refused memory past the limit.
    refused: &'r AtomicBool,
    limits: &'r Limits,
    deadline: Instant,
    cancel: &'r Cancel,
    to_host: &'r SyncSender<ToHost>,
    done: &'r Receiver<Completion>,
}

impl Run<'_> {
    /// The failure when the run is past its time or was cancelled.
    fn stopped(&self) -> Option<CodeRunFailed> {
        if let Some(why) = self.abort.reason() {
            return Some(CodeRunFailed::new(why));
        }
        if self.cancel.is_cancelled() {
            return Some(CodeRunFailed::new("the call was cancelled"));
        }
        (Instant::now() >= self.deadline).then(|| {
            CodeRunFailed::limit(
                Limit::WallTime,
                format!(
                    "the program ran past its wall-time limit of {} s",
                    self.limits.timeout().as_secs_f64()
                ),
            )
        })
    }

    fn main<'js>(
        &self,
        ctx: &Ctx<'js>,
        code: &str,
        tools: &[Callable],
        logs: &Rc<RefCell<Logs>>,
        shared: &Rc<RefCell<Shared<'js>>>,
    ) -> Result<Option<CodeValue>, CodeRunFailed> {
        self.install(ctx, tools, logs, shared)
            .map_err(|e| CodeRunFailed::new(format!("the runtime could not start: {e}")))?;
        let mut opts = EvalOptions::default();
        opts.strict = false;
        opts.filename = Some("run_code".into());
        let source = format!("{WRAP_HEAD}{code}{WRAP_TAIL}");
        let main: Promise<'js> = match ctx.eval_with_options(source, opts) {
            Ok(p) => p,
            Err(e) => return Err(self.thrown(ctx, e)),
        };
        loop {
            while ctx.execute_pending_job() {
                if self.stopped().is_some() || shared.borrow().job_failed.is_some() {
                    break;
                }
            }
            if let Some(f) = self.stopped() {
                return Err(f);
            }
            let job_failed = shared.borrow_mut().job_failed.take();
            if let Some(v) = job_failed {
                let mut failed = self.failure(ctx, v);
                if failed.limit.is_none() {
                    failed.message = format!("in a queueMicrotask callback: {}", failed.message);
                }
                return Err(failed);
            }
            match main.state() {
                rquickjs::promise::PromiseState::Resolved => {
                    let v: Value<'js> = match main.result() {
                        Some(Ok(v)) => v,
                        Some(Err(e)) => return Err(self.thrown(ctx, e)),
                        None => continue,
                    };
                    logs.borrow_mut().flush();
                    return self.value(ctx, shared, v);
                }
                rquickjs::promise::PromiseState::Rejected => {
                    let e = match main.result::<Value<'js>>() {
                        Some(Err(e)) => e,
                        _ => rquickjs::Error::Exception,
                    };
                    return Err(self.thrown(ctx, e));
                }
                rquickjs::promise::PromiseState::Pending => {}
            }
            // A timer that is due runs now.
            let now = Instant::now();
            let due = {
                let mut s = shared.borrow_mut();
                let first = s.timers.keys().next().copied();
                match first {
                    Some(key) if key.0 <= now => {
                        s.timer_due.remove(&key.1);
                        s.timers.remove(&key)
                    }
                    _ => None,
                }
            };
            if let Some(f) = due {
                if let Err(e) = f.call::<_, ()>(()) {
                    let mut failed = self.thrown(ctx, e);
                    if failed.limit.is_none() {
                        failed.message = format!("in a setTimeout callback: {}", failed.message);
                    }
                    return Err(failed);
                }
                continue;
            }
            // Nothing to run: wait for a nested call or the next timer.
            let (waiting, next_timer) = {
                let s = shared.borrow();
                (!s.pending.is_empty(), s.timers.keys().next().map(|k| k.0))
            };
            if !waiting && next_timer.is_none() {
                return Err(CodeRunFailed::new(
                    "the program is waiting for a promise that nothing will settle",
                ));
            }
            logs.borrow_mut().flush();
            let until = next_timer.map_or(self.deadline, |t| t.min(self.deadline));
            // A cancellation is seen within this long.
            let wait = until
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(50));
            match self.done.recv_timeout(wait) {
                Ok(c) => {
                    // A run that must end gives its program nothing more.
                    if let Some(f) = self.stopped() {
                        return Err(f);
                    }
                    self.settle(ctx, shared, c)?
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(CodeRunFailed::new("the host stopped serving nested calls"))
                }
            }
        }
    }

    /// Gives a nested call's value to the program.
    fn settle<'js>(
        &self,
        ctx: &Ctx<'js>,
        shared: &Rc<RefCell<Shared<'js>>>,
        c: Completion,
    ) -> Result<(), CodeRunFailed> {
        let Some(resolve) = shared.borrow_mut().pending.remove(&c.id) else {
            return Ok(());
        };
        let (ok, text, json) = match c.result {
            Ok(v) => (true, v.text, v.json),
            Err(t) => (false, t, false),
        };
        let len = text.len();
        let made = (|| -> rquickjs::Result<Array<'js>> {
            let pair = Array::new(ctx.clone())?;
            pair.set(0, ok)?;
            pair.set(1, rquickjs::String::from_str(ctx.clone(), &text)?)?;
            pair.set(2, json)?;
            Ok(pair)
        })();
        drop(text);
        match made {
            Ok(pair) => resolve
                .call::<_, ()>((pair,))
                .map_err(|e| self.thrown(ctx, e)),
            Err(_) => {
                // The value did not fit in the program's memory.
                let _ = ctx.catch();
                Err(CodeRunFailed::limit(
                    Limit::Memory,
                    format!(
                        "a nested call's value of {len} bytes does not fit in the memory limit of {} bytes",
                        self.limits.memory()
                    ),
                ))
            }
        }
    }

    /// The program's result: nothing, text, or compact JSON.
    fn value<'js>(
        &self,
        ctx: &Ctx<'js>,
        shared: &Rc<RefCell<Shared<'js>>>,
        v: Value<'js>,
    ) -> Result<Option<CodeValue>, CodeRunFailed> {
        if v.is_undefined() {
            return Ok(None);
        }
        let Some(well_formed) = shared.borrow().well_formed.clone() else {
            return Err(CodeRunFailed::new("the runtime was not started"));
        };
        if let Some(s) = v.as_string() {
            return js_text(s.clone(), &well_formed)
                .map(|t| Some(CodeValue::Text(t)))
                .map_err(|e| self.thrown(ctx, e));
        }
        match ctx.json_stringify(v) {
            Ok(Some(s)) => js_text(s, &well_formed)
                .map(|t| Some(CodeValue::JsonText(t)))
                .map_err(|e| self.thrown(ctx, e)),
            // A function or a symbol: no JSON, no result.
            Ok(None) => Ok(None),
            Err(e) => {
                let mut failed = self.thrown(ctx, e);
                if failed.limit.is_none() {
                    failed.message = format!("the returned value is not JSON: {}", failed.message);
                }
                Err(failed)
            }
        }
    }

    /// A failure from what the program threw (or the engine raised).
    fn thrown<'js>(&self, ctx: &Ctx<'js>, e: rquickjs::Error) -> CodeRunFailed {
        if let Some(f) = self.stopped() {
            return f;
        }
        match e {
            rquickjs::Error::Exception => {
                let value = ctx.catch();
                self.failure(ctx, value)
            }
            other => CodeRunFailed::new(format!("the engine failed: {other}")),
        }
    }

    /// A failure from a value the program threw.
    fn failure<'js>(&self, ctx: &Ctx<'js>, value: Value<'js>) -> CodeRunFailed {
        if let Some(f) = self.stopped() {
            return f;
        }
        let (name, message, stack) = match value.as_object() {
            Some(o) if o.is_error() => (
                o.get::<_, Option<String>>("name").ok().flatten(),
                o.get::<_, Option<String>>("message").ok().flatten(),
                o.get::<_, Option<String>>("stack").ok().flatten(),
            ),
            _ => (None, None, None),
        };
        let name = name.unwrap_or_default();
        let message_text = message.clone().unwrap_or_default();
        // Without memory for an error object the engine throws `null`.
        let no_error_object = value.is_null() && self.refused.load(Ordering::SeqCst);
        if (name == "InternalError" && message_text == "out of memory") || no_error_object {
            return CodeRunFailed::limit(
                Limit::Memory,
                format!(
                    "the program ran past its memory limit of {} bytes",
                    self.limits.memory()
                ),
            );
        }
        if name == "RangeError" && message_text == "Maximum call stack size exceeded" {
            return CodeRunFailed::limit(
                Limit::Stack,
                format!(
                    "the program ran past its stack limit of {} bytes (recursion too deep)",
                    self.limits.stack()
                ),
            );
        }
        let mut head = match (name.is_empty(), message) {
            (false, Some(m)) => format!("Uncaught {name}: {m}"),
            _ => format!("Uncaught {}", describe(ctx, &value)),
        };
        let mut past_end = false;
        let frames: Vec<String> = stack
            .as_deref()
            .unwrap_or("")
            .lines()
            .filter(|l| l.contains("run_code") && !l.contains("<eval>"))
            .take(8)
            .map(|l| {
                let (frame, past) = self.program_place(l);
                past_end |= past;
                frame
            })
            .collect();
        // A syntax error at the wrapper's closing brace: the program ended
        // in the middle of a statement or an expression.
        if past_end && name == "SyntaxError" {
            head = "Uncaught SyntaxError: the program ends in the middle of a statement or an expression".into();
        }
        CodeRunFailed::new(if frames.is_empty() {
            head
        } else {
            format!("{head}\n{}", frames.join("\n"))
        })
    }

    /// A stack frame's `run_code:LINE:COLUMN` as a place in the program:
    /// line 1's columns without the wrapper's head, and a place in the
    /// wrapper's tail as just past the program's end (then `true`).
    fn program_place(&self, frame: &str) -> (String, bool) {
        const AT: &str = "run_code:";
        let Some(i) = frame.find(AT) else {
            return (frame.to_owned(), false);
        };
        let rest = &frame[i + AT.len()..];
        let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
        let n = digits(rest);
        let Ok(line) = rest[..n].parse::<usize>() else {
            return (frame.to_owned(), false);
        };
        let Some(after) = rest[n..].strip_prefix(':') else {
            return (frame.to_owned(), false);
        };
        let m = digits(after);
        let Ok(col) = after[..m].parse::<usize>() else {
            return (frame.to_owned(), false);
        };
        let (last_line, last_len) = self.end;
        let (line, col, past) = if line > last_line {
            let col = if last_line == 1 {
                last_len - WRAP_HEAD.len()
            } else {
                last_len
            };
            (last_line, col + 1, true)
        } else if line == 1 {
            (1, col.saturating_sub(WRAP_HEAD.len()).max(1), false)
        } else {
            (line, col, false)
        };
        (
            format!("{}{AT}{line}:{col}{}", &frame[..i], &after[m..]),
            past,
        )
    }

    /// Puts `print`, `console`, `tools` and the timers in the context.
    fn install<'js>(
        &self,
        ctx: &Ctx<'js>,
        tools: &[Callable],
        logs: &Rc<RefCell<Logs>>,
        shared: &Rc<RefCell<Shared<'js>>>,
    ) -> rquickjs::Result<()> {
        // Taken before any code of the program's runs.
        let well_formed: Function<'js> = ctx
            .globals()
            .get::<_, rquickjs::Object<'js>>("String")?
            .get::<_, rquickjs::Object<'js>>("prototype")?
            .get("toWellFormed")?;
        // Kept in the loop's state, which lets it go at the end of the run
        // (a closure's hold on it would keep the context alive).
        shared.borrow_mut().well_formed = Some(well_formed);
        let prelude: Function<'js> = ctx.eval(include_str!("prelude.js"))?;
        let (l, s, over) = (logs.clone(), shared.clone(), self.over.clone());
        let log = Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, line: rquickjs::String<'js>| -> rquickjs::Result<()> {
                // A run that is over prints nothing more: a loop of prints
                // of a long string (no allocation of the engine's, so none
                // refused) ends at once instead of at the engine's next
                // look at its clock.
                if over() {
                    return Err(Exception::throw_internal(&ctx, "the run is over"));
                }
                let text = match line.to_string() {
                    Ok(t) => t,
                    Err(_) => {
                        let well_formed = s.borrow().well_formed.clone();
                        match well_formed {
                            Some(w) => js_text(line, &w)?,
                            None => return Ok(()),
                        }
                    }
                };
                l.borrow_mut().push(&text);
                Ok(())
            },
        )?;
        let (s, to_host, l) = (shared.clone(), self.to_host.clone(), logs.clone());
        let (gate, over) = (self.gate.clone(), self.over.clone());
        let call = Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, tool: String, args: String| -> rquickjs::Result<Promise<'js>> {
                if over() {
                    return Err(Exception::throw_internal(&ctx, "the run is over"));
                }
                let size = args.len();
                let args: serde_json::Value = serde_json::from_str(&args).map_err(|e| {
                    Exception::throw_type(
                        &ctx,
                        &format!("the arguments of tools.{tool} are not JSON: {e}"),
                    )
                })?;
                let (promise, resolve, _reject) = ctx.promise()?;
                let id = {
                    let mut s = s.borrow_mut();
                    s.next_call += 1;
                    let id = s.next_call;
                    s.pending.insert(id, resolve);
                    id
                };
                // Logs printed before the call stay before it.
                l.borrow_mut().flush();
                gate.enter(size, &*over);
                if to_host
                    .send(ToHost::Call {
                        id,
                        tool,
                        args,
                        size,
                    })
                    .is_err()
                {
                    return Err(Exception::throw_internal(&ctx, "the host is gone"));
                }
                Ok(promise)
            },
        )?;
        let s = shared.clone();
        let timer = Function::new(ctx.clone(), move |f: Function<'js>, ms: f64| -> u32 {
            let mut s = s.borrow_mut();
            s.next_timer = s.next_timer.wrapping_add(1).max(1);
            let id = s.next_timer;
            // Past the wall-time limit a timer never runs: the run ends first.
            let delay = Duration::from_secs_f64((ms / 1000.0).clamp(0.0, 86_400.0 * 2.0));
            let due = Instant::now() + delay;
            s.timers.insert((due, id), f);
            s.timer_due.insert(id, due);
            id
        })?;
        let s = shared.clone();
        let job_failed = Function::new(ctx.clone(), move |e: Value<'js>| {
            s.borrow_mut().job_failed.get_or_insert(e);
        })?;
        let s = shared.clone();
        let clear = Function::new(ctx.clone(), move |id: f64| {
            let mut s = s.borrow_mut();
            if let Some(due) = s.timer_due.remove(&(id as u32)) {
                s.timers.remove(&(due, id as u32));
            }
        })?;
        let list = Array::new(ctx.clone())?;
        for (i, t) in tools.iter().enumerate() {
            let entry = Array::new(ctx.clone())?;
            entry.set(0, t.name.as_str())?;
            entry.set(1, t.json)?;
            entry.set(2, t.group.as_deref())?;
            entry.set(3, t.member.as_str())?;
            list.set(i, entry)?;
        }
        prelude.call::<_, ()>((log, call, timer, clear, list, job_failed))
    }
}

/// How a thrown value that is not an `Error` reads, as JavaScript writes
/// it: `undefined`, `null`, a string as it is, JSON, else its kind.
fn describe<'js>(ctx: &Ctx<'js>, v: &Value<'js>) -> String {
    use rquickjs::Type;
    if let Some(s) = v.as_string().and_then(|s| s.to_string().ok()) {
        return s;
    }
    match v.type_of() {
        Type::Undefined | Type::Uninitialized => return "undefined".into(),
        Type::Null => return "null".into(),
        Type::Symbol => return "a symbol".into(),
        Type::Function | Type::Constructor => return "a function".into(),
        _ => {}
    }
    match ctx.json_stringify(v.clone()) {
        Ok(Some(s)) => s.to_string().unwrap_or_default(),
        _ => {
            let _ = ctx.catch();
            v.type_name().to_string()
        }
    }
}
