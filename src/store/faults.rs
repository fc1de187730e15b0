//! A fault-injection seam: make the Nth create, write, fsync, publish or
//! directory fsync of a store fail with a chosen error, to prove that every
//! failure leaves the store consistent, removes its temp file, and yields an
//! honest notice. Costs one branch per system call when unused.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
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

/// Fails the `nth` (1-based) call at `point` with `errno`; counts every
/// call at every point.
///
/// # Examples
///
/// ```
/// use spillway::store::{FaultPlan, FaultPoint};
/// use spillway::{Compression, Durability, Store};
/// let dir = tempfile::tempdir().unwrap();
/// let plan = FaultPlan::new(FaultPoint::Fsync, 1, libc::EIO);
/// let store = Store::open(dir.path()).unwrap().with_faults(plan.clone());
/// let err = store.put(b"x", Compression::None, Durability::Durable).unwrap_err();
/// assert!(err.to_string().contains("fsync"));
/// assert_eq!(plan.calls(FaultPoint::Fsync), 1);
/// ```
#[derive(Clone, Debug)]
pub struct FaultPlan(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    point: FaultPoint,
    nth: u64,
    errno: i32,
    counts: [AtomicU64; 5],
}

fn index(p: FaultPoint) -> usize {
    match p {
        FaultPoint::Create => 0,
        FaultPoint::Write => 1,
        FaultPoint::Fsync => 2,
        FaultPoint::Publish => 3,
        FaultPoint::DirFsync => 4,
    }
}

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

/// Checks an optional plan.
pub(crate) fn check(plan: Option<&FaultPlan>, point: FaultPoint) -> io::Result<()> {
    plan.map_or(Ok(()), |p| p.check(point))
}
