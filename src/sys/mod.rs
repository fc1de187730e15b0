//! The platform layer under the store: a few system calls, each safe over
//! rustix, with Linux versions and portable unix fallbacks. On Linux both
//! are compiled; with the `test-seams` feature, the environment variable
//! `SPILLWAY_TEST_PORTABLE_SYS=1` makes the store use the fallbacks, so CI
//! tests them on Linux with the binaries it has already built.

use std::fs;
use std::io;
use std::path::Path;

use rustix::fs::{flock, FlockOperation, OFlags};
use rustix::io::Errno;

#[cfg(target_os = "linux")]
mod linux;
mod portable;

/// Whether the portable fallbacks stand in for the Linux calls: always off
/// the Linux kernel, and on Linux only when a test asks for them.
pub(crate) fn use_portable() -> bool {
    if cfg!(not(target_os = "linux")) {
        return true;
    }
    #[cfg(any(test, feature = "test-seams"))]
    {
        static FORCED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *FORCED.get_or_init(|| {
            std::env::var_os("SPILLWAY_TEST_PORTABLE_SYS").is_some_and(|v| v == "1")
        })
    }
    #[cfg(not(any(test, feature = "test-seams")))]
    false
}

/// Runs `f` over `file`'s `len` bytes mapped into memory under a read
/// lease (Linux), or gives `None` when that cannot be had and the caller
/// should read instead (see `linux::with_leased_map`).
pub(crate) fn with_leased_map<T>(
    file: &fs::File,
    len: u64,
    f: impl FnOnce(&[u8]) -> T,
) -> Option<T> {
    #[cfg(target_os = "linux")]
    if !use_portable() {
        return linux::with_leased_map(file, len, f);
    }
    portable::with_leased_map(file, len, f)
}

/// Asks the kernel to start writing a range of `file` back now (Linux), so
/// the fsync at the end waits for less; elsewhere nothing.
pub(crate) fn start_writeback(file: &fs::File, offset: u64, len: u64) {
    #[cfg(target_os = "linux")]
    if !use_portable() {
        return linux::start_writeback(file, offset, len);
    }
    portable::start_writeback(file, offset, len)
}

/// Renames `from` to `to` unless `to` exists (Linux); elsewhere
/// [`io::ErrorKind::Unsupported`].
pub(crate) fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    if !use_portable() {
        return linux::rename_noreplace(from, to);
    }
    portable::rename_noreplace(from, to)
}

/// Flags for opening anything inside the store: never through a symbolic
/// link, and never blocking on a FIFO someone planted.
pub(crate) fn no_follow_flags() -> i32 {
    (OFlags::NOFOLLOW | OFlags::NONBLOCK).bits() as i32
}

/// Whether a failed `link(2)` means the filesystem cannot hard-link here,
/// so a no-replace rename should be tried instead.
pub(crate) fn link_unsupported(e: &io::Error) -> bool {
    [Errno::PERM, Errno::OPNOTSUPP, Errno::NOSYS, Errno::MLINK]
        .iter()
        .any(|n| e.raw_os_error() == Some(n.raw_os_error()))
}

/// Takes an exclusive advisory lock without waiting; whether it was taken.
/// The lock lives as long as the open file, and dies with the process.
pub(crate) fn try_lock(file: &fs::File) -> bool {
    flock(file, FlockOperation::NonBlockingLockExclusive).is_ok()
}

/// Whether another open file holds the lock of `path` (a live writer).
pub(crate) fn is_locked(path: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let Ok(file) = fs::OpenOptions::new()
        .read(true)
        .custom_flags(no_follow_flags())
        .open(path)
    else {
        return false;
    };
    matches!(
        flock(&file, FlockOperation::NonBlockingLockExclusive),
        Err(Errno::WOULDBLOCK)
    )
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests damage stores and drive them from threads of their own
mod tests {
    use super::*;

    #[test]
    fn a_lock_is_seen_by_another_open_file_and_dies_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let f = fs::File::create(&p).unwrap();
        assert!(!is_locked(&p));
        assert!(try_lock(&f));
        assert!(is_locked(&p));
        drop(f);
        assert!(!is_locked(&p));
    }

    #[test]
    fn no_replace_rename_never_clobbers() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = (
            dir.path().join("a"),
            dir.path().join("b"),
            dir.path().join("c"),
        );
        fs::write(&a, b"a").unwrap();
        fs::write(&b, b"b").unwrap();
        let portable = use_portable();
        match rename_noreplace(&a, &b) {
            Err(e) if e.kind() == io::ErrorKind::Unsupported => assert!(portable),
            Err(e) => assert_eq!(e.kind(), io::ErrorKind::AlreadyExists),
            Ok(()) => panic!("renamed over an existing name"),
        }
        assert_eq!(fs::read(&b).unwrap(), b"b");
        if rename_noreplace(&a, &c).is_ok() {
            assert_eq!(fs::read(&c).unwrap(), b"a");
        }
    }

    #[test]
    fn the_portable_paths_are_taken_when_a_test_asks() {
        let asked = std::env::var_os("SPILLWAY_TEST_PORTABLE_SYS").is_some_and(|v| v == "1");
        assert_eq!(use_portable(), asked || cfg!(not(target_os = "linux")));
    }

    #[test]
    fn writeback_hints_never_fail_the_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let f = fs::File::create(&path).unwrap();
        std::io::Write::write_all(&mut &f, &[7u8; 8192]).unwrap();
        start_writeback(&f, 0, 8192);
        // Out-of-range hints are ignored too.
        start_writeback(&f, u64::MAX, 1);
        f.sync_data().unwrap();
        assert_eq!(fs::read(&path).unwrap(), [7u8; 8192]);
    }

    #[test]
    fn a_symlink_open_is_recognised() {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("t");
        fs::write(&target, b"x").unwrap();
        let link = dir.path().join("l");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let e = fs::OpenOptions::new()
            .read(true)
            .custom_flags(no_follow_flags())
            .open(&link)
            .unwrap_err();
        assert_eq!(e.raw_os_error(), Some(Errno::LOOP.raw_os_error()));
    }
}
