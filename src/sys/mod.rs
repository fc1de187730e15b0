//! The platform layer under the store: a few system calls, each safe over
//! rustix, with Linux versions and portable unix fallbacks. The `portable`
//! feature forces the fallbacks on Linux too, so CI builds and tests them.

use std::fs;
use std::io;
use std::path::Path;

use rustix::fs::{flock, FlockOperation, OFlags};
use rustix::io::Errno;

#[cfg(all(target_os = "linux", not(feature = "portable")))]
mod linux;
#[cfg(all(target_os = "linux", not(feature = "portable")))]
pub(crate) use linux::{rename_noreplace, start_writeback};

#[cfg(any(not(target_os = "linux"), feature = "portable"))]
mod portable;
#[cfg(any(not(target_os = "linux"), feature = "portable"))]
pub(crate) use portable::{rename_noreplace, start_writeback};

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
        let portable = cfg!(any(not(target_os = "linux"), feature = "portable"));
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
