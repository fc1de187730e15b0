//! The store's test seam: every system call that changes the store goes
//! through here, so a test can make the Nth one fail ([`FaultPlan`]) or
//! record them all and replay them into a simulated crash
//! ([`CrashModel`](super::CrashModel)).
//!
//! Without the `test-seams` feature the seam is empty and every hook
//! compiles to nothing; with it, an unused seam costs one branch per call.

use std::io;

pub(crate) use super::op::Op;
#[cfg(feature = "test-seams")]
use std::sync::atomic::{AtomicU64, Ordering};
#[cfg(feature = "test-seams")]
use std::sync::Arc;

/// A store operation that can be made to fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FaultPoint {
    /// Creating a temp file.
    Create,
    /// A write to a temp file.
    Write,
    /// The fsync of a temp file.
    Fsync,
    /// Publishing (`link`/`rename`) an object.
    Publish,
    /// The fsync of a directory.
    DirFsync,
}

/// The hooks a store calls around its system calls.
#[derive(Clone, Debug, Default)]
pub(crate) struct Seam {
    #[cfg(feature = "test-seams")]
    pub(crate) faults: Option<FaultPlan>,
    #[cfg(feature = "test-seams")]
    pub(crate) crash: Option<super::crash::CrashModel>,
}

impl Seam {
    /// Counts a call at `point`; fails it when a fault plan says so.
    #[inline(always)]
    pub(crate) fn check(&self, point: FaultPoint) -> io::Result<()> {
        #[cfg(feature = "test-seams")]
        if let Some(plan) = &self.faults {
            return plan.check(point);
        }
        let _ = point;
        Ok(())
    }

    /// Tells the crash model about a change that just succeeded.
    #[inline(always)]
    pub(crate) fn record(&self, op: Op<'_>) {
        #[cfg(feature = "test-seams")]
        if let Some(model) = &self.crash {
            model.record(op);
        }
        let _ = op;
    }
}

/// Fails the `nth` (1-based) call at `point` with `errno`; counts every
/// call at every point.
///
/// # Examples
///
/// ```
/// use spillway::{FaultPlan, FaultPoint, WriteOptions};
/// use spillway::Store;
/// const EIO: i32 = 5;
/// let dir = tempfile::tempdir().unwrap();
/// let plan = FaultPlan::new(FaultPoint::Fsync, 1, EIO);
/// let store = Store::open(dir.path()).unwrap().with_faults(plan.clone());
/// let err = store.put(b"x", WriteOptions::raw()).unwrap_err();
/// assert!(err.to_string().contains("fsync"));
/// assert_eq!(plan.calls(FaultPoint::Fsync), 1);
/// ```
#[cfg(feature = "test-seams")]
#[derive(Clone, Debug)]
pub struct FaultPlan(Arc<Inner>);

#[cfg(feature = "test-seams")]
#[derive(Debug)]
struct Inner {
    point: FaultPoint,
    nth: u64,
    errno: i32,
    counts: [AtomicU64; 5],
}

#[cfg(feature = "test-seams")]
fn index(p: FaultPoint) -> usize {
    match p {
        FaultPoint::Create => 0,
        FaultPoint::Write => 1,
        FaultPoint::Fsync => 2,
        FaultPoint::Publish => 3,
        FaultPoint::DirFsync => 4,
    }
}

#[cfg(feature = "test-seams")]
impl FaultPlan {
    /// A plan that fails the `nth` call at `point` with `errno`.
    pub fn new(point: FaultPoint, nth: u64, errno: i32) -> Self {
        FaultPlan(Arc::new(Inner {
            point,
            nth,
            errno,
            counts: Default::default(),
        }))
    }

    /// A plan that never fails, to count calls.
    pub fn counting() -> Self {
        Self::new(FaultPoint::Create, 0, 0)
    }

    /// How many calls `point` has seen.
    pub fn calls(&self, point: FaultPoint) -> u64 {
        self.0.counts[index(point)].load(Ordering::SeqCst)
    }

    /// Counts a call; fails it if it is the planned one.
    pub(crate) fn check(&self, point: FaultPoint) -> io::Result<()> {
        let n = self.0.counts[index(point)].fetch_add(1, Ordering::SeqCst) + 1;
        if point == self.0.point && n == self.0.nth {
            return Err(io::Error::from_raw_os_error(self.0.errno));
        }
        Ok(())
    }
}
