//! Fault injection: a filesystem that makes the Nth change of a kind fail
//! ([`FaultPlan::fs`]), wrapped around the one every change to the disk
//! goes through ([`Fs`](super::fs::Fs)). Available with the
//! `test-seams` feature.

use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::fs::Fs;

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
    /// A link or a rename: publishing an object, setting one aside.
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

    /// `inner` with this plan: each change is counted at its point
    /// (creating a file, a write, a file's fsync, a link or a rename, a
    /// directory's fsync) and the planned one fails before it is made.
    pub fn fs(&self, inner: Arc<dyn Fs>) -> Arc<dyn Fs> {
        Arc::new(FaultFs {
            plan: self.clone(),
            inner,
        })
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

/// A filesystem whose changes a [`FaultPlan`] counts and fails.
#[derive(Debug)]
struct FaultFs {
    plan: FaultPlan,
    inner: Arc<dyn Fs>,
}

impl Fs for FaultFs {
    fn create_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir(dir)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }

    fn create_new(&self, path: &Path, append: bool) -> io::Result<File> {
        self.plan.check(FaultPoint::Create)?;
        self.inner.create_new(path, append)
    }

    fn write(&self, file: &mut File, path: &Path, at: u64, buf: &[u8]) -> io::Result<usize> {
        self.plan.check(FaultPoint::Write)?;
        self.inner.write(file, path, at, buf)
    }

    fn sync(&self, file: &File, path: &Path) -> io::Result<()> {
        self.plan.check(FaultPoint::Fsync)?;
        self.inner.sync(file, path)
    }

    fn link(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.plan.check(FaultPoint::Publish)?;
        self.inner.link(from, to)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.plan.check(FaultPoint::Publish)?;
        self.inner.rename(from, to)
    }

    fn rename_noreplace(&self, from: &Path, to: &Path) -> io::Result<()> {
        // The second half of one publish whose link was counted.
        self.inner.rename_noreplace(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_file(path)
    }

    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_dir_all(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.plan.check(FaultPoint::DirFsync)?;
        self.inner.sync_dir(dir)
    }
}
