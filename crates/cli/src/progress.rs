//! Progress on stderr, only when stderr is a terminal and not `--quiet`.
//! spillway never colours its own output, so `NO_COLOR` always holds.

use std::io::Write;
use std::time::{Duration, Instant};

pub struct Progress {
    label: &'static str,
    enabled: bool,
    last: Option<Instant>,
    drawn: bool,
}

impl Progress {
    pub fn new(label: &'static str, quiet: bool) -> Self {
        use std::io::IsTerminal;
        let tty = std::io::stderr().is_terminal();
        Progress {
            label,
            enabled: tty && !quiet,
            last: None,
            drawn: false,
        }
    }

    fn due(&mut self) -> bool {
        if !self.enabled {
            return false;
        }
        let now = Instant::now();
        if self
            .last
            .is_some_and(|t| now - t < Duration::from_millis(100))
        {
            return false;
        }
        self.last = Some(now);
        true
    }

    /// `done` of `total` items.
    pub fn items(&mut self, done: usize, total: usize) {
        if self.due() {
            let _ = write!(std::io::stderr(), "\r{} {done}/{total}", self.label);
            self.drawn = true;
        }
    }

    /// `done` bytes, of `total` when known.
    pub fn bytes(&mut self, done: u64, total: Option<u64>) {
        if self.due() {
            let done = spillway::ByteSize::new(done);
            let line = match total {
                Some(t) => format!("\r{} {done} of {}", self.label, spillway::ByteSize::new(t)),
                None => format!("\r{} {done}", self.label),
            };
            let _ = write!(std::io::stderr(), "{line}\x1b[K");
            self.drawn = true;
        }
    }

    pub fn clear(&mut self) {
        if self.drawn {
            let _ = write!(std::io::stderr(), "\r\x1b[K");
            self.drawn = false;
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.clear();
    }
}
