//! Where the core gets threads: the one place it starts them, and the
//! budget that bounds them.
//!
//! Work that pays for a thread of its own (a stream consumer past its
//! first MiB, a whole input stored beside its preview, zstd workers, a
//! second hashing thread) asks here. It gets a thread only with a permit
//! from its [`Parallelism`] budget (shared by a [`Store`](crate::Store),
//! its clones and every `Spiller` over it); without a permit, or when the
//! system has no thread to give, the work runs on the caller's thread,
//! which is the one fallback. Every thread started here is joined before
//! the work that started it returns (a panic on it is resumed on the
//! caller), and its permit goes back when it is joined.

// The one module allowed to start threads (see the root clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::{JoinHandle, Scope, ScopedJoinHandle};

/// How many threads the work of one store may run besides its callers'
/// own, at once: stream consumers moved off the stage's thread, a whole
/// input stored beside its preview, zstd workers, a second hashing thread.
/// Shared by a [`Store`](crate::Store)'s clones and every `Spiller` over
/// it, so that many stages at once (a registry's parallel calls) share one
/// bound.
///
/// A store uses the process's budget ([`Parallelism::process`]) unless it
/// is given one of its own. `0` runs everything on the callers' threads.
#[derive(Clone, Debug)]
pub struct Parallelism(Arc<Budget>);

#[derive(Debug)]
struct Budget {
    limit: usize,
    free: AtomicUsize,
}

impl Parallelism {
    /// A budget of `threads` threads.
    pub fn new(threads: usize) -> Parallelism {
        Parallelism(Arc::new(Budget {
            limit: threads,
            free: AtomicUsize::new(threads),
        }))
    }

    /// The budget every store in this process shares unless it is given
    /// its own: twice the machine's cores, at least 4.
    pub fn process() -> Parallelism {
        static PROCESS: std::sync::OnceLock<Parallelism> = std::sync::OnceLock::new();
        PROCESS
            .get_or_init(|| {
                let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
                Parallelism::new((cores * 2).max(4))
            })
            .clone()
    }

    /// The budget's size.
    pub fn limit(&self) -> usize {
        self.0.limit
    }

    /// The permits not taken now.
    pub fn free(&self) -> usize {
        self.0.free.load(Ordering::Acquire)
    }

    /// One thread's permit, when one is free: taken before the work that
    /// would run on it is set up, so that work on the caller's thread
    /// sets up nothing.
    pub(crate) fn permit(&self) -> Option<Permit> {
        Some(self.take(1)).filter(|p| p.count() == 1)
    }

    /// Up to `most` permits, as many as are free (maybe none).
    pub(crate) fn take(&self, most: usize) -> Permit {
        let mut free = self.0.free.load(Ordering::Acquire);
        loop {
            let n = free.min(most);
            if n == 0 {
                return Permit {
                    budget: self.clone(),
                    n: 0,
                };
            }
            match self.0.free.compare_exchange_weak(
                free,
                free - n,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    return Permit {
                        budget: self.clone(),
                        n,
                    }
                }
                Err(now) => free = now,
            }
        }
    }
}

/// Threads taken from a [`Parallelism`] budget, given back when dropped.
#[derive(Debug)]
pub(crate) struct Permit {
    budget: Parallelism,
    n: usize,
}

impl Permit {
    /// How many threads this permit allows.
    pub(crate) fn count(&self) -> usize {
        self.n
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if self.n > 0 {
            self.budget.0.free.fetch_add(self.n, Ordering::AcqRel);
        }
    }
}

/// A thread started by [`start`], joined when it is dropped.
pub(crate) struct Joined<T> {
    handle: Option<JoinHandle<T>>,
    _permit: Permit,
}

impl<T> Joined<T> {
    /// Waits for the thread and gives its result; a panic on it is
    /// resumed here.
    pub(crate) fn join(mut self) -> T {
        let handle = self.handle.take().expect("joined once");
        handle
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

impl<T> Drop for Joined<T> {
    fn drop(&mut self) {
        // Not joined by its owner (the stage was dropped unfinished): the
        // thread's input has ended with its owner's channels, so it ends
        // too; waited for all the same, so no thread outlives its work.
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Runs `work(state)` on a thread of its own named `name`, holding
/// `permit` (from [`Parallelism::permit`]); gives `state` back, to be
/// worked on the caller's thread, when the system starts no thread.
pub(crate) fn start<S, F, T>(permit: Permit, name: &str, state: S, work: F) -> Result<Joined<T>, S>
where
    S: Send + 'static,
    F: FnOnce(S) -> T + Send + 'static,
    T: Send + 'static,
{
    // The state goes over a channel, so that it is still here when the
    // thread cannot be started.
    let (give, take) = mpsc::channel::<S>();
    let spawned = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let state = take.recv().expect("a started thread is given its state");
            work(state)
        });
    let Ok(handle) = spawned else {
        return Err(state);
    };
    if let Err(mpsc::SendError(state)) = give.send(state) {
        return Err(state);
    }
    Ok(Joined {
        handle: Some(handle),
        _permit: permit,
    })
}

/// A thread started by [`scoped`], joined by its scope at the latest.
pub(crate) struct ScopedJoined<'scope, T> {
    handle: ScopedJoinHandle<'scope, T>,
    _permit: Permit,
}

impl<T> ScopedJoined<'_, T> {
    /// Waits for the thread and gives its result; a panic on it is
    /// resumed here.
    pub(crate) fn join(self) -> T {
        self.handle
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

/// [`start`] for work that borrows from the caller, on a thread of
/// `scope`.
pub(crate) fn scoped<'scope, 'env, F, T>(
    scope: &'scope Scope<'scope, 'env>,
    budget: &Parallelism,
    name: &str,
    work: F,
) -> Result<ScopedJoined<'scope, T>, F>
where
    F: FnOnce() -> T + Send + 'scope,
    T: Send + 'scope,
{
    let permit = budget.take(1);
    if permit.count() == 0 {
        return Err(work);
    }
    let (give, take) = mpsc::channel::<F>();
    let spawned = std::thread::Builder::new()
        .name(name.into())
        .spawn_scoped(scope, move || {
            let work = take.recv().expect("a started thread is given its work");
            work()
        });
    let Ok(handle) = spawned else {
        return Err(work);
    };
    if let Err(mpsc::SendError(work)) = give.send(work) {
        return Err(work);
    }
    Ok(ScopedJoined {
        handle,
        _permit: permit,
    })
}

/// Runs `work` on a thread of its own while the caller waits for it, for
/// work that may not run on the caller's thread (a runtime entered from
/// inside another). It takes no permit: the caller is idle meanwhile, so
/// no more threads work than before. When the system starts no thread,
/// `work` runs here after all.
#[cfg_attr(not(feature = "s3"), allow(dead_code))]
pub(crate) fn wait_elsewhere<F, T>(name: &str, work: F) -> T
where
    F: FnOnce() -> T + Send,
    T: Send,
{
    let mut work = Some(work);
    let run = &mut work;
    std::thread::scope(|s| {
        let spawned = std::thread::Builder::new()
            .name(name.into())
            .spawn_scoped(s, move || run.take().map(|w| w()));
        match spawned.map(|h| h.join()) {
            Ok(Ok(Some(out))) => Some(out),
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            Ok(Ok(None)) | Err(_) => None,
        }
    })
    .unwrap_or_else(|| (work.take().expect("not run"))())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_gives_at_most_its_permits_and_takes_them_back() {
        let b = Parallelism::new(3);
        let two = b.take(2);
        assert_eq!((two.count(), b.free()), (2, 1));
        let more = b.take(5);
        assert_eq!((more.count(), b.free()), (1, 0));
        assert_eq!(b.take(1).count(), 0);
        drop(two);
        assert_eq!(b.free(), 2);
        drop(more);
        assert_eq!(b.free(), b.limit());
    }

    #[test]
    fn without_a_permit_the_work_comes_back_to_run_here() {
        assert!(Parallelism::new(0).permit().is_none());
        let one = Parallelism::new(1);
        let a = start(one.permit().unwrap(), "t", 1, |n| n + 1).expect("a thread");
        assert!(one.permit().is_none(), "the one permit is taken");
        assert_eq!(a.join(), 2);
        assert_eq!(one.free(), 1, "joining gives the permit back");
        let x = 5;
        std::thread::scope(|s| {
            let h = scoped(s, &one, "t", || x * 2).ok().expect("a permit");
            assert!(scoped(s, &one, "t", || 0).is_err());
            assert_eq!(h.join(), 10);
        });
        assert_eq!(one.free(), 1);
    }

    #[test]
    fn a_thread_dropped_unjoined_is_waited_for_and_its_permit_returned() {
        let b = Parallelism::new(1);
        let (tx, rx) = mpsc::channel::<()>();
        let t = start(b.permit().unwrap(), "t", rx, |rx| rx.recv().is_err())
            .ok()
            .unwrap();
        drop(tx);
        drop(t);
        assert_eq!(b.free(), 1);
    }

    #[test]
    #[should_panic(expected = "boom")]
    fn a_panic_on_the_thread_is_resumed_on_the_caller() {
        let b = Parallelism::new(1);
        let t = start(b.permit().unwrap(), "t", (), |()| -> u8 { panic!("boom") })
            .ok()
            .unwrap();
        t.join();
    }
}
