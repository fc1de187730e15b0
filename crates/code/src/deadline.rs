//! When a run must end, shared by the host, the program's thread and the
//! engine's allocator.
//!
//! The engine polls its interrupt handler only every ten thousand jumps
//! or calls, so a loop whose every turn is one costly built-in (a
//! megabyte `repeat`, a long `indexOf`) would run for seconds past its
//! limit. The host marks the run over the moment the deadline comes (or
//! the call is cancelled); from then on the allocator refuses every
//! allocation, so such a turn fails at once and the poll comes soon. A
//! program that still does not stop is left to stop on its own (see
//! `host`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub(crate) struct Deadline {
    at: Instant,
    over: AtomicBool,
}

impl Deadline {
    /// The deadline `timeout` from now, or `not_after` when that is sooner.
    pub(crate) fn after(timeout: Duration, not_after: Option<Instant>) -> Self {
        let at = Instant::now() + timeout;
        Deadline {
            at: not_after.map_or(at, |n| n.min(at)),
            over: AtomicBool::new(false),
        }
    }

    pub(crate) fn at(&self) -> Instant {
        self.at
    }

    /// Marks the run over: the host saw the deadline come, or the call
    /// cancelled.
    pub(crate) fn pass(&self) {
        self.over.store(true, Ordering::SeqCst);
    }

    /// Whether the run was marked over: one load, for the allocator.
    pub(crate) fn over(&self) -> bool {
        self.over.load(Ordering::Relaxed)
    }

    /// Whether the deadline has passed, by the mark or by the clock.
    pub(crate) fn passed(&self) -> bool {
        self.over() || Instant::now() >= self.at
    }
}
