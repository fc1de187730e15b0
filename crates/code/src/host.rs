//! The host's side of a run: the program runs on a thread of its own (a
//! stack of the stack limit), while the calling thread writes its logs
//! into the spill stage and runs its nested calls on a bounded pool.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use spillway_registry::run_code::{CodeHost, CodeRunFailed, CodeValue, Limit, NestedCall};

use crate::deadline::Deadline;
use crate::gate::Gate;
use crate::limits::Limits;
use crate::sandbox::{self, Completion, Link, ToHost, Unsent};
use crate::slots::{NoSlot, Slot, MAX_PROGRAMS};
use spillway_process::stop::SIGKILL;

/// Room on the program's thread beyond the engine's stack limit: the
/// engine's own C frames and the host functions it calls.
const STACK_ROOM: usize = 4 << 20;

/// Messages from the program that may wait for the host: with 64 KiB log
/// batches, at most 4 MiB of logs in flight.
const QUEUE: usize = 64;

/// How long after its deadline (or the call's cancellation) a program may
/// take to stop before the host stops waiting for it and answers.
const STRAGGLE: Duration = Duration::from_millis(500);

/// The host sees a cancellation within this long.
const CANCEL_SEEN: Duration = Duration::from_millis(50);

/// A program thread's fate: still running, ended (and joined), or left
/// behind. Whichever of the thread and the host moves it first decides.
const RUNNING: u8 = 0;
const ENDED: u8 = 1;
const LEFT: u8 = 2;

pub(crate) fn run(
    code: &str,
    host: &mut CodeHost<'_>,
    limits: &Limits,
) -> Result<Option<CodeValue>, CodeRunFailed> {
    let link = Link {
        cancel: host.cancellation(),
        // Set by a worker when a nested call's tool is gone: the run ends.
        abort: Arc::new(sandbox::Abort::default()),
        deadline: Arc::new(Deadline::after(limits.timeout(), host.deadline())),
        unsent: Arc::new(Mutex::new(Unsent::default())),
        gate: Arc::new(Gate::default()),
    };
    // A slot of this process's few, within the run's own time: the
    // program's thread holds it, also when it is left behind.
    let slot = match Slot::take(link.deadline.at(), &link.cancel) {
        Ok(s) => s,
        Err(NoSlot::LeftBehind(n)) => {
            return Err(CodeRunFailed::new(format!(
                "{n} earlier programs did not stop at their wall-time limit or cancellation and still run; run again when one of them has stopped"
            )))
        }
        Err(NoSlot::Cancelled) => {
            return Err(CodeRunFailed::new(
                "the call was cancelled before its program started",
            ))
        }
        Err(NoSlot::Busy) => {
            return Err(CodeRunFailed::limit(
                Limit::WallTime,
                format!(
                    "the program did not start within its wall-time limit of {} s: {MAX_PROGRAMS} programs ran at once in this process, the most it runs",
                    limits.timeout().as_secs_f64()
                ),
            ))
        }
    };
    let slot = Arc::new(Mutex::new(slot));
    let tools = host.tools().to_vec();
    let dispatcher = host.dispatcher();
    let (to_host, from_program) = mpsc::sync_channel::<ToHost>(QUEUE);
    // Values wait here until the program takes them; a full queue holds
    // the pool's workers back.
    let (done_tx, done_rx) = mpsc::sync_channel::<Completion>(limits.concurrency());
    // The program's thread owns what it uses: a program that does not stop
    // at its deadline is left behind (see `STRAGGLE`), not waited for.
    let fate = Arc::new(AtomicU8::new(RUNNING));
    let program = std::thread::Builder::new()
        .name("run_code".into())
        .stack_size(limits.stack() + STACK_ROOM)
        .spawn({
            let (code, limits) = (code.to_owned(), limits.clone());
            let (link, fate, slot) = (link.clone(), fate.clone(), slot.clone());
            move || {
                let r = sandbox::run(&code, &tools, &limits, &link, to_host, done_rx);
                let _ = fate.compare_exchange(RUNNING, ENDED, Ordering::SeqCst, Ordering::SeqCst);
                // The slot goes back when the last of the thread and the
                // host lets go of it.
                drop(slot);
                r
            }
        });
    let program = match program {
        Ok(p) => p,
        Err(e) => {
            return Err(CodeRunFailed::new(format!(
                "cannot start the program's thread: {e}"
            )))
        }
    };
    // Set when the program ended: the calls still queued then are not
    // run but set aside, and recorded as not run together once the workers
    // are done, in one append to the session log.
    let ended = AtomicBool::new(false);
    let skipped: Mutex<Vec<NestedCall>> = Mutex::new(Vec::new());
    let left_behind = std::thread::scope(|s| {
        let (jobs_tx, jobs_rx) = mpsc::channel::<(u64, NestedCall, usize)>();
        let jobs_rx = Arc::new(Mutex::new(jobs_rx));
        let idle = Arc::new(AtomicUsize::new(0));
        let mut workers = 0;
        let mut left_behind = false;
        let mut watch = Watch {
            link: &link,
            over_at: None,
        };
        loop {
            let msg = match watch.next(&from_program) {
                Next::Msg(msg) => msg,
                Next::Ended => break,
                Next::Straggling => {
                    left_behind = true;
                    break;
                }
            };
            match msg {
                ToHost::Logs(joined, lines) => {
                    host.log_lines(&joined, lines);
                    link.gate.leave(joined.len());
                }
                ToHost::Call {
                    id,
                    tool,
                    args,
                    size,
                } => {
                    let call = host.start(&tool, args);
                    // The receiver lives as long as this loop.
                    let _ = jobs_tx.send((id, call, size));
                    if idle.load(Ordering::SeqCst) == 0 && workers < limits.concurrency() {
                        workers += 1;
                        let (jobs, idle, done) = (jobs_rx.clone(), idle.clone(), done_tx.clone());
                        let d = dispatcher.clone();
                        let (abort, deadline) = (link.abort.clone(), link.deadline.clone());
                        let gate = link.gate.clone();
                        let (ended, skipped) = (&ended, &skipped);
                        let spawned = std::thread::Builder::new()
                            .name("run_code-call".into())
                            .spawn_scoped(s, move || loop {
                                idle.fetch_add(1, Ordering::SeqCst);
                                let job = jobs
                                    .lock()
                                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                                    .recv();
                                idle.fetch_sub(1, Ordering::SeqCst);
                                let Ok((id, call, size)) = job else { return };
                                if ended.load(Ordering::SeqCst) {
                                    // Its program ended before its turn.
                                    skipped
                                        .lock()
                                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                                        .push(call);
                                    gate.leave(size);
                                    continue;
                                }
                                let result = d.run(call);
                                // Its arguments are let go only now: calls
                                // with large arguments run fewer at once.
                                gate.leave(size);
                                if let Some(why) = d.fatal() {
                                    abort.set(why);
                                }
                                deliver(&done, Completion { id, result }, &deadline);
                            });
                        if spawned.is_err() {
                            workers -= 1;
                        }
                    }
                }
            }
        }
        // The program ended: what it left running stops, and the calls it
        // started and nobody will wait for end at once: those still queued
        // are recorded as not run, together.
        dispatcher.stop(SIGKILL);
        // Workers set aside what is still queued (see `skipped`).
        ended.store(true, Ordering::SeqCst);
        drop(jobs_tx);
        drop(done_tx);
        left_behind
    });
    dispatcher.not_run(
        skipped
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    if left_behind && leave(&fate, &slot) {
        // Its thread ends at the engine's next poll; nobody waits for it.
        drop(program);
        last_logs(host, &from_program, &link.unsent, &link.gate);
        let left = format!(
            "did not stop within {} ms; it was left to stop on its own",
            STRAGGLE.as_millis()
        );
        if link.cancel.is_cancelled() {
            return Err(CodeRunFailed::new(format!(
                "the call was cancelled and the program {left}"
            )));
        }
        return Err(CodeRunFailed::limit(
            Limit::WallTime,
            format!(
                "the program ran past its wall-time limit of {} s and {left}",
                limits.timeout().as_secs_f64(),
            ),
        ));
    }
    program
        .join()
        .unwrap_or_else(|_| Err(CodeRunFailed::new("the runtime failed")))
}

/// Writes the logs a program left behind printed and the host has not
/// taken: the batches on their way, then what it had not sent, in order.
/// Later lines are dropped.
fn last_logs(
    host: &mut CodeHost<'_>,
    from_program: &mpsc::Receiver<ToHost>,
    unsent: &Mutex<Unsent>,
    gate: &Gate,
) {
    let drain = |host: &mut CodeHost<'_>| {
        while let Ok(msg) = from_program.try_recv() {
            match msg {
                ToHost::Logs(batch, n) => {
                    host.log_lines(&batch, n);
                    gate.leave(batch.len());
                }
                ToHost::Call { size, .. } => gate.leave(size),
            }
        }
    };
    loop {
        // A batch is sent under the lock: draining the queue lets a
        // program blocked on a full queue let go of it.
        drain(host);
        if let Ok(mut u) = unsent.try_lock() {
            // Every batch sent before the lock was taken is queued now, and
            // comes before what was never sent.
            drain(host);
            let (batch, n) = u.close();
            if n > 0 {
                host.log_lines(&batch, n);
            }
            return;
        }
        std::thread::yield_now();
    }
}

/// Counts the program left behind (its slot stays held until it stops),
/// unless it ended just now (then the caller joins it as usual).
fn leave(fate: &AtomicU8, slot: &Mutex<Slot>) -> bool {
    let left = fate
        .compare_exchange(RUNNING, LEFT, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok();
    if left {
        slot.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .leave();
    }
    left
}

/// Hands a nested call's value to the program, waiting while its queue is
/// full. A program that ended takes nothing; once its run is over it takes
/// nothing more, so a worker never waits on a program left behind.
fn deliver(done: &mpsc::SyncSender<Completion>, mut c: Completion, deadline: &Deadline) {
    loop {
        match done.try_send(c) {
            Ok(()) | Err(TrySendError::Disconnected(_)) => return,
            Err(TrySendError::Full(_)) if deadline.over() => return,
            Err(TrySendError::Full(back)) => {
                c = back;
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}

/// What the host's loop takes next from the program.
enum Next {
    Msg(ToHost),
    /// The program's thread ended (it dropped its sender).
    Ended,
    /// It is still running [`STRAGGLE`] after its run was over.
    Straggling,
}

/// The host's watch over a run: it marks the run over when the deadline
/// comes or the call is cancelled, and gives up on the program
/// [`STRAGGLE`] after.
struct Watch<'a> {
    link: &'a Link,
    over_at: Option<Instant>,
}

impl Watch<'_> {
    /// The next message from the program.
    fn next(&mut self, from_program: &mpsc::Receiver<ToHost>) -> Next {
        let deadline = &self.link.deadline;
        loop {
            let now = Instant::now();
            if self.over_at.is_none() {
                if now >= deadline.at() {
                    self.over_at = Some(deadline.at());
                } else if self.link.cancel.is_cancelled() {
                    self.over_at = Some(now);
                }
                if self.over_at.is_some() {
                    deadline.pass();
                }
            }
            let until = match self.over_at {
                Some(at) => at + STRAGGLE,
                None => deadline.at().min(now + CANCEL_SEEN),
            };
            match from_program.recv_timeout(until.saturating_duration_since(now)) {
                Ok(msg) => return Next::Msg(msg),
                Err(RecvTimeoutError::Disconnected) => return Next::Ended,
                Err(RecvTimeoutError::Timeout) => {
                    if self
                        .over_at
                        .is_some_and(|at| Instant::now() >= at + STRAGGLE)
                    {
                        return Next::Straggling;
                    }
                }
            }
        }
    }
}
