//! How many programs this process runs at once: at most
//! [`MAX_PROGRAMS`], counting those left behind (programs that did not stop
//! at their limit and run on, on threads nobody waits for). A program
//! left behind keeps its slot until it stops, so no more than that many
//! are ever left behind, whatever number of calls arrive together.
//!
//! A run waits for a slot within its own deadline while a program still
//! runs in one; when every slot is held by a program left behind, it is
//! refused at once.

use spillway_process::Cancel;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// The most programs a process runs at once, those left behind included.
pub(crate) const MAX_PROGRAMS: usize = 4;

/// How often a wait for a slot looks at its cancellation.
const TICK: Duration = Duration::from_millis(50);

#[derive(Default)]
struct Count {
    running: usize,
    left: usize,
}

static COUNT: Mutex<Count> = Mutex::new(Count {
    running: 0,
    left: 0,
});
static FREED: Condvar = Condvar::new();

fn count() -> std::sync::MutexGuard<'static, Count> {
    COUNT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Why a run got no slot.
pub(crate) enum NoSlot {
    /// Every slot is held by a program left behind: how many.
    LeftBehind(usize),
    /// Programs still ran in every slot at the deadline.
    Busy,
    /// The call was cancelled while it waited.
    Cancelled,
}

/// A program's slot: held while it runs, and while it runs on after being
/// left behind ([`Slot::leave`]); given back when dropped.
pub(crate) struct Slot {
    left: bool,
}

impl Slot {
    /// Takes a slot, waiting for one until `until` or until `cancel` is
    /// raised.
    pub(crate) fn take(until: Instant, cancel: &Cancel) -> Result<Slot, NoSlot> {
        let mut c = count();
        loop {
            if c.running + c.left < MAX_PROGRAMS {
                c.running += 1;
                return Ok(Slot { left: false });
            }
            if c.left >= MAX_PROGRAMS {
                return Err(NoSlot::LeftBehind(c.left));
            }
            if cancel.is_cancelled() {
                return Err(NoSlot::Cancelled);
            }
            let now = Instant::now();
            if now >= until {
                return Err(NoSlot::Busy);
            }
            c = FREED
                .wait_timeout(c, TICK.min(until - now))
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
    }

    /// The program was left behind: it holds its slot until it stops.
    pub(crate) fn leave(&mut self) {
        if !self.left {
            self.left = true;
            let mut c = count();
            c.running -= 1;
            c.left += 1;
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut c = count();
        if self.left {
            c.left -= 1;
        } else {
            c.running -= 1;
        }
        drop(c);
        FREED.notify_all();
    }
}

/// Programs left behind that still run.
pub(crate) fn left_behind() -> usize {
    count().left
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_bounded_and_a_left_program_keeps_its_own() {
        let never = Cancel::new();
        let soon = || Instant::now() + Duration::from_millis(100);
        let mut held: Vec<Slot> = (0..MAX_PROGRAMS)
            .map(|_| Slot::take(soon(), &never).ok().unwrap())
            .collect();
        // All taken: a run waits, then gives up at its deadline.
        let t = Instant::now();
        assert!(matches!(Slot::take(soon(), &never), Err(NoSlot::Busy)));
        assert!(t.elapsed() >= Duration::from_millis(90));
        // A cancelled wait ends at once.
        assert!(matches!(
            Slot::take(soon() + Duration::from_secs(10), &{
                let c = Cancel::new();
                c.raise(15);
                c
            }),
            Err(NoSlot::Cancelled)
        ));
        // A slot freed while a run waits is taken.
        let freed = held.pop().unwrap();
        let waiter = std::thread::spawn(move || {
            Slot::take(Instant::now() + Duration::from_secs(10), &Cancel::new()).is_ok()
        });
        std::thread::sleep(Duration::from_millis(50));
        drop(freed);
        assert!(waiter.join().unwrap());
        // Left behind, every slot: refused at once.
        held.push(Slot::take(soon(), &never).ok().unwrap());
        for s in &mut held {
            s.leave();
        }
        assert!(matches!(
            Slot::take(soon() + Duration::from_secs(10), &never),
            Err(NoSlot::LeftBehind(n)) if n == MAX_PROGRAMS
        ));
        drop(held);
        assert_eq!(left_behind(), 0);
    }
}
