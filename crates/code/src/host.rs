//! The host's side of a run: the program runs on a thread of its own (a
//! stack of the stack limit), while the calling thread writes its logs
//! into the spill stage and runs its nested calls on a bounded pool.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use spillway_registry::run_code::{CodeHost, CodeRunFailed, CodeValue, NestedCall};

use crate::limits::Limits;
use crate::sandbox::{self, Completion, ToHost};

/// Room on the program's thread beyond the engine's stack limit: the
/// engine's own C frames and the host functions it calls.
const STACK_ROOM: usize = 4 << 20;

/// Messages from the program that may wait for the host: with 64 KiB log
/// batches, at most 4 MiB of logs in flight.
const QUEUE: usize = 64;

/// SIGKILL, for the commands nested calls still run when the program ends.
const SIGKILL: i32 = 9;

pub(crate) fn run(
    code: &str,
    host: &mut CodeHost<'_>,
    limits: &Limits,
) -> Result<Option<CodeValue>, CodeRunFailed> {
    let tools = host.tools().to_vec();
    let cancel = host.cancellation();
    // Set by a worker when a nested call's tool is gone: the run ends.
    let abort = Arc::new(sandbox::Abort::default());
    let dispatcher = host.dispatcher();
    let (to_host, from_program) = mpsc::sync_channel::<ToHost>(QUEUE);
    // Values wait here until the program takes them; a full queue holds
    // the pool's workers back.
    let (done_tx, done_rx) = mpsc::sync_channel::<Completion>(limits.concurrency());
    std::thread::scope(|s| {
        let program = std::thread::Builder::new()
            .name("run_code".into())
            .stack_size(limits.stack() + STACK_ROOM)
            .spawn_scoped(s, {
                let abort = abort.clone();
                move || sandbox::run(code, &tools, limits, cancel, &abort, to_host, done_rx)
            });
        let program = match program {
            Ok(p) => p,
            Err(e) => {
                return Err(CodeRunFailed::new(format!(
                    "cannot start the program's thread: {e}"
                )))
            }
        };
        let (jobs_tx, jobs_rx) = mpsc::channel::<(u64, NestedCall)>();
        let jobs_rx = Arc::new(Mutex::new(jobs_rx));
        let idle = Arc::new(AtomicUsize::new(0));
        let mut workers = 0;
        for msg in from_program {
            match msg {
                ToHost::Logs(joined, lines) => host.log_lines(&joined, lines),
                ToHost::Call { id, tool, args } => {
                    let call = host.start(&tool, args);
                    // The receiver lives as long as this loop.
                    let _ = jobs_tx.send((id, call));
                    if idle.load(Ordering::SeqCst) == 0 && workers < limits.concurrency() {
                        workers += 1;
                        let (jobs, idle, done) = (jobs_rx.clone(), idle.clone(), done_tx.clone());
                        let d = dispatcher.clone();
                        let abort = abort.clone();
                        let spawned = std::thread::Builder::new()
                            .name("run_code-call".into())
                            .spawn_scoped(s, move || loop {
                                idle.fetch_add(1, Ordering::SeqCst);
                                let job = jobs
                                    .lock()
                                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                                    .recv();
                                idle.fetch_sub(1, Ordering::SeqCst);
                                let Ok((id, call)) = job else { return };
                                let result = d.run(call);
                                if let Some(why) = d.fatal() {
                                    abort.set(why);
                                }
                                // The program may have ended: nobody waits.
                                let _ = done.send(Completion { id, result });
                            });
                        if spawned.is_err() {
                            workers -= 1;
                        }
                    }
                }
            }
        }
        // The program ended: what it left running stops, and the calls it
        // started and nobody will wait for end at once.
        dispatcher.stop(SIGKILL);
        drop(jobs_tx);
        drop(done_tx);
        program
            .join()
            .unwrap_or_else(|_| Err(CodeRunFailed::new("the runtime failed")))
    })
}
