//! Cancellation: the one way a caller asks work to stop, and the work
//! learns it. What is asked is a signal number (SIGTERM, SIGINT, SIGKILL…),
//! so that a command run for the work can be passed the same signal.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// A request to stop, shared by whoever may ask and whatever runs: cheap to
/// clone, checked without a lock, waitable with a deadline. Once asked it
/// stays asked ([`signal`](Cancel::signal)); the one that passes signals on
/// to a command also sees each new request ([`take`](Cancel::take)), so a
/// second Ctrl-C can insist.
#[derive(Clone, Debug, Default)]
pub struct Cancel(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    /// The signal asked since the last `take` (0: none), set by `raise` or
    /// by a signal handler through [`Cancel::os_flag`].
    pending: Arc<AtomicUsize>,
    /// The latest signal asked and taken (0: none).
    last: AtomicUsize,
}

/// A [`Cancel`] that does not keep the request alive.
#[derive(Clone, Debug, Default)]
pub struct WeakCancel(Weak<Inner>);

impl WeakCancel {
    /// The request, if anyone still holds it.
    pub fn upgrade(&self) -> Option<Cancel> {
        self.0.upgrade().map(Cancel)
    }
}

impl Cancel {
    /// A request not asked yet.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// The flag a signal handler sets to the signal's number to ask
    /// (`signal_hook::flag::register_usize(sig, cancel.os_flag(), sig)`).
    pub fn os_flag(&self) -> Arc<AtomicUsize> {
        self.0.pending.clone()
    }

    /// Asks the work to stop with `signal` (at least 1). A later request
    /// replaces an earlier one: SIGKILL after SIGTERM insists.
    pub fn raise(&self, signal: i32) {
        let n = usize::try_from(signal.max(1)).unwrap_or(1);
        self.0.last.store(n, Ordering::SeqCst);
        self.0.pending.store(n, Ordering::SeqCst);
    }

    /// The signal asked, if any: the latest, taken or not.
    pub fn signal(&self) -> Option<i32> {
        let n = match self.0.pending.load(Ordering::SeqCst) {
            0 => self.0.last.load(Ordering::SeqCst),
            n => n,
        };
        (n != 0).then(|| i32::try_from(n).unwrap_or(i32::MAX))
    }

    /// Whether the work was asked to stop.
    pub fn is_cancelled(&self) -> bool {
        self.signal().is_some()
    }

    /// A signal asked since the last call, for the one that passes signals
    /// on to a command: each new request is seen once.
    pub fn take(&self) -> Option<i32> {
        let n = self.0.pending.swap(0, Ordering::SeqCst);
        if n == 0 {
            return None;
        }
        self.0.last.store(n, Ordering::SeqCst);
        Some(i32::try_from(n).unwrap_or(i32::MAX))
    }

    /// Waits until the work is asked to stop or `timeout` has passed; the
    /// signal, if it was asked. (It looks every few milliseconds: a signal
    /// handler can set the flag but wake no one.)
    pub fn wait_timeout(&self, timeout: Duration) -> Option<i32> {
        let until = Instant::now() + timeout;
        loop {
            if let Some(s) = self.signal() {
                return Some(s);
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            std::thread::sleep(left.min(Duration::from_millis(5)));
        }
    }

    /// A handle that does not keep the request alive.
    pub fn downgrade(&self) -> WeakCancel {
        WeakCancel(Arc::downgrade(&self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_stays_asked_and_each_new_one_is_taken_once() {
        let c = Cancel::new();
        assert_eq!((c.signal(), c.take()), (None, None));
        c.raise(15);
        let other = c.clone();
        assert_eq!(other.take(), Some(15));
        assert_eq!(other.take(), None);
        assert_eq!(c.signal(), Some(15), "taken, still asked");
        // A handler writes the flag directly: seen, and taken once.
        c.os_flag().store(2, Ordering::SeqCst);
        assert_eq!(c.signal(), Some(2));
        assert_eq!(c.take(), Some(2));
        assert_eq!(c.signal(), Some(2));
        c.raise(9);
        assert_eq!(c.signal(), Some(9));
    }

    #[test]
    fn a_wait_ends_at_the_request_or_the_deadline() {
        let c = Cancel::new();
        let t = Instant::now();
        assert_eq!(c.wait_timeout(Duration::from_millis(30)), None);
        assert!(t.elapsed() >= Duration::from_millis(30));
        let asker = c.clone();
        let h = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            asker.raise(15);
        });
        assert_eq!(c.wait_timeout(Duration::from_secs(30)), Some(15));
        h.join().unwrap();
        let weak = c.downgrade();
        assert!(weak.upgrade().is_some());
        drop(c);
        assert!(weak.upgrade().is_none());
    }
}
