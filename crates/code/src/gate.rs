//! What a program has handed the host and the host has not dealt with yet
//! (log batches to write, arguments of calls not finished), held
//! to [`IN_FLIGHT`] bytes: a program that prints 12 MB lines without end,
//! or starts calls with 10 MB arguments and never awaits them, waits for
//! the host instead of filling the host's memory. One message larger than
//! the bound still goes, alone.
//!
//! The program's thread waits here only while its run is not over; once
//! it is, nothing waits (the host takes what is left, or nothing).

use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// The most bytes in flight from a program to its host.
pub(crate) const IN_FLIGHT: usize = 8 << 20;

/// How often a waiting program looks whether its run is over.
const TICK: Duration = Duration::from_millis(20);

#[derive(Default)]
pub(crate) struct Gate {
    used: Mutex<usize>,
    freed: Condvar,
}

impl Gate {
    fn used(&self) -> std::sync::MutexGuard<'_, usize> {
        self.used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts `n` bytes handed over, first waiting while they would pass
    /// the bound (unless nothing is in flight), or until `over` says the
    /// run is over.
    pub(crate) fn enter(&self, n: usize, over: &dyn Fn() -> bool) {
        let mut used = self.used();
        while *used > 0 && *used + n > IN_FLIGHT && !over() {
            used = self
                .freed
                .wait_timeout(used, TICK)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
        *used += n;
    }

    /// The host dealt with `n` bytes.
    pub(crate) fn leave(&self, n: usize) {
        let mut used = self.used();
        *used = used.saturating_sub(n);
        drop(used);
        self.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Instant;

    #[test]
    fn a_sender_waits_past_the_bound_and_goes_when_the_host_takes() {
        let gate = Arc::new(Gate::default());
        let never = || false;
        // One message larger than the bound goes alone.
        gate.enter(IN_FLIGHT * 2, &never);
        let g = gate.clone();
        let t = Instant::now();
        let sender = std::thread::spawn(move || {
            g.enter(1, &|| false);
            t.elapsed()
        });
        std::thread::sleep(Duration::from_millis(100));
        gate.leave(IN_FLIGHT * 2);
        assert!(sender.join().unwrap() >= Duration::from_millis(90));
        gate.leave(1);
        // A run that is over never waits.
        gate.enter(IN_FLIGHT, &never);
        let t = Instant::now();
        gate.enter(IN_FLIGHT, &|| true);
        assert!(t.elapsed() < Duration::from_millis(50));
    }
}
