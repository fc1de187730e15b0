//! What one run may use: wall time, memory, stack, and how many nested
//! calls run at once.

use std::fmt;
use std::time::Duration;

/// The wall-time limit when none is given: 30 s.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The memory limit when none is given: 512 MiB. A nested value may be up
/// to 64 MiB, and a program that splits one into lines (the natural way to
/// read a command's output) needs about ten times its size: 512 MiB holds
/// that for values up to about 40 MB (a 35 MB output of `seq` split, then
/// filtered, peaks between 256 and 512 MiB); give 1 GiB for values up to
/// the cap.
pub const DEFAULT_MEMORY: usize = 512 << 20;
/// The stack limit when none is given: 1 MiB (some ten thousand frames of
/// an ordinary recursive function).
pub const DEFAULT_STACK: usize = 1 << 20;
/// How many nested calls run at once when not told: 8.
pub const DEFAULT_CONCURRENCY: usize = 8;

/// The longest wall-time limit: a day.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(86_400);
/// The smallest memory limit: 1 MiB (the engine itself needs some).
pub const MIN_MEMORY: usize = 1 << 20;
/// The largest memory limit: 16 GiB.
pub const MAX_MEMORY: usize = 16 << 30;
/// The smallest stack limit: 64 KiB.
pub const MIN_STACK: usize = 64 << 10;
/// The largest stack limit: 256 MiB.
pub const MAX_STACK: usize = 256 << 20;
/// The most nested calls that may run at once.
pub const MAX_CONCURRENCY: usize = 64;

/// The limits of one run. Built with [`Limits::builder`], which checks
/// them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    timeout: Duration,
    memory: usize,
    stack: usize,
    concurrency: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: DEFAULT_TIMEOUT,
            memory: DEFAULT_MEMORY,
            stack: DEFAULT_STACK,
            concurrency: DEFAULT_CONCURRENCY,
        }
    }
}

impl Limits {
    /// A builder starting from the defaults.
    pub fn builder() -> LimitsBuilder {
        LimitsBuilder {
            limits: Limits::default(),
        }
    }

    /// The wall-time limit: from the start of the run to its result.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The memory limit of the engine's heap, in bytes.
    pub fn memory(&self) -> usize {
        self.memory
    }

    /// The stack limit, in bytes.
    pub fn stack(&self) -> usize {
        self.stack
    }

    /// How many nested calls run at once; more wait their turn.
    pub fn concurrency(&self) -> usize {
        self.concurrency
    }
}

/// Builds [`Limits`].
#[derive(Clone, Debug)]
pub struct LimitsBuilder {
    limits: Limits,
}

impl LimitsBuilder {
    /// The wall-time limit (default 30 s; more than 0, at most a day).
    pub fn timeout(&mut self, timeout: Duration) -> &mut Self {
        self.limits.timeout = timeout;
        self
    }

    /// The memory limit in bytes (default 512 MiB; 1 MiB to 16 GiB).
    pub fn memory(&mut self, bytes: usize) -> &mut Self {
        self.limits.memory = bytes;
        self
    }

    /// The stack limit in bytes (default 1 MiB; 64 KiB to 256 MiB).
    pub fn stack(&mut self, bytes: usize) -> &mut Self {
        self.limits.stack = bytes;
        self
    }

    /// How many nested calls run at once (default 8; 1 to 64).
    pub fn concurrency(&mut self, n: usize) -> &mut Self {
        self.limits.concurrency = n;
        self
    }

    /// The limits.
    ///
    /// # Errors
    ///
    /// [`LimitsError`] naming the limit out of its range.
    pub fn build(&self) -> Result<Limits, LimitsError> {
        let l = &self.limits;
        if l.timeout.is_zero() || l.timeout > MAX_TIMEOUT {
            return Err(LimitsError::Timeout(l.timeout));
        }
        if !(MIN_MEMORY..=MAX_MEMORY).contains(&l.memory) {
            return Err(LimitsError::Memory(l.memory));
        }
        if !(MIN_STACK..=MAX_STACK).contains(&l.stack) {
            return Err(LimitsError::Stack(l.stack));
        }
        if !(1..=MAX_CONCURRENCY).contains(&l.concurrency) {
            return Err(LimitsError::Concurrency(l.concurrency));
        }
        Ok(l.clone())
    }
}

/// A limit out of its range.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LimitsError {
    /// The wall-time limit is 0 or more than a day.
    Timeout(Duration),
    /// The memory limit is under 1 MiB or over 16 GiB.
    Memory(usize),
    /// The stack limit is under 64 KiB or over 256 MiB.
    Stack(usize),
    /// The concurrency is 0 or over 64.
    Concurrency(usize),
}

impl fmt::Display for LimitsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimitsError::Timeout(t) => write!(
                f,
                "the wall-time limit must be more than 0 and at most {} s; got {} s",
                MAX_TIMEOUT.as_secs(),
                t.as_secs_f64()
            ),
            LimitsError::Memory(m) => {
                write!(f, "the memory limit must be 1 MiB to 16 GiB; got {m} bytes")
            }
            LimitsError::Stack(s) => write!(
                f,
                "the stack limit must be 64 KiB to 256 MiB; got {s} bytes"
            ),
            LimitsError::Concurrency(n) => write!(
                f,
                "the number of nested calls at once must be 1 to {MAX_CONCURRENCY}; got {n}"
            ),
        }
    }
}

impl std::error::Error for LimitsError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_documented_ones_and_ranges_are_checked() {
        let l = Limits::builder().build().unwrap();
        assert_eq!(l.timeout(), Duration::from_secs(30));
        assert_eq!(l.memory(), 512 << 20);
        assert_eq!(l.stack(), 1 << 20);
        assert_eq!(l.concurrency(), 8);
        assert_eq!(
            Limits::builder().timeout(Duration::ZERO).build(),
            Err(LimitsError::Timeout(Duration::ZERO))
        );
        assert_eq!(
            Limits::builder().memory(1000).build(),
            Err(LimitsError::Memory(1000))
        );
        assert_eq!(
            Limits::builder().stack(1 << 30).build(),
            Err(LimitsError::Stack(1 << 30))
        );
        assert_eq!(
            Limits::builder().concurrency(0).build(),
            Err(LimitsError::Concurrency(0))
        );
        assert!(LimitsError::Memory(1000).to_string().contains("1 MiB"));
    }
}
