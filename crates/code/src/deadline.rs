//! When a run must end, shared by the host, the program's thread and the
//! engine's allocator.
//!
//! The engine polls its interrupt handler only every ten thousand jumps
//! or calls, so a loop whose every turn is one costly built-in (a
//! megabyte `repeat`, a long `indexOf`) would run for seconds past its
//! limit. The host marks the deadline passed the moment it comes; from
//! then on the allocator refuses every allocation, so such a turn fails at
//! once and the poll comes soon. A program that still does not stop is
//! left to stop on its own (see `host`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub(crate) struct Deadline {
    at: Instant,
    passed: AtomicBool,
}

impl Deadline {
    /// The deadline `timeout` from now.
    pub(crate) fn after(timeout: Duration) -> Self {
        Deadline {
            at: Instant::now() + timeout,
            passed: AtomicBool::new(false),
        }
    }

    pub(crate) fn at(&self) -> Instant {
        self.at
    }

    /// Marks the deadline passed (the host's clock saw it).
    pub(crate) fn pass(&self) {
        self.passed.store(true, Ordering::SeqCst);
    }

    /// Whether it was marked passed: one load, for the allocator.
    pub(crate) fn marked(&self) -> bool {
        self.passed.load(Ordering::Relaxed)
    }

    /// Whether it has passed, by the mark or by the clock.
    pub(crate) fn passed(&self) -> bool {
        self.marked() || Instant::now() >= self.at
    }
}
