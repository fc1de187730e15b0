//! Linux: early writeback with `sync_file_range`, `renameat2` with
//! `RENAME_NOREPLACE`, and a file mapped under a read lease.

use std::fs;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

use rustix::fs::{renameat_with, RenameFlags, CWD};

/// Asks the kernel to start writing a range of `file` back now, so the
/// fsync at the end waits for less. Errors surface at that fsync.
///
/// rustix does not wrap `sync_file_range`, so this is the store's one call
/// through `libc`.
pub(crate) fn start_writeback(file: &fs::File, offset: u64, len: u64) {
    let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return;
    };
    // SAFETY: sync_file_range takes a descriptor and three integers and
    // touches no memory of ours; the descriptor is borrowed from `file`,
    // which stays open for the whole call. Its result is deliberately
    // ignored: it is only a hint, and any I/O error it would report is
    // reported again by the fsync that always follows it.
    unsafe {
        libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE);
    }
}

/// Renames `from` to `to` unless `to` exists.
pub(crate) fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    Ok(renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE)?)
}

/// `fcntl`'s command that names the signal a lease break sends (the same
/// on every Linux architecture; not every libc release exports it).
const F_SETSIG: libc::c_int = 10;

/// `file`'s bytes mapped, when it is `len` bytes long and can be leased
/// for reading: the kernel grants a read lease only while no process has
/// the file open for writing, and while it is held a process that opens
/// the file for writing or truncates it waits (until `f` returns, or the
/// kernel's `lease-break-time`), so no truncation can raise `SIGBUS` under
/// the mapping. The break is announced with SIGURG, ignored by default.
pub(crate) fn with_leased_map<T>(
    file: &fs::File,
    len: u64,
    f: impl FnOnce(&[u8]) -> T,
) -> Option<T> {
    let fd = file.as_raw_fd();
    // SAFETY: plain fcntl calls on a descriptor `file` keeps open for the
    // whole function.
    let leased = unsafe {
        libc::fcntl(fd, F_SETSIG, libc::SIGURG) == 0
            && libc::fcntl(fd, libc::F_SETLEASE, libc::F_RDLCK) == 0
    };
    if !leased {
        return None;
    }
    let out = (|| {
        if file.metadata().ok()?.len() != len {
            return None;
        }
        // SAFETY: read-only and private; the lease held until after the
        // mapping is dropped keeps the file from being written or
        // truncated, and its length was checked under the lease.
        let map = unsafe { memmap2::Mmap::map(file) }.ok()?;
        (map.len() as u64 == len).then(|| f(&map))
    })();
    // SAFETY: as above; the mapping is gone by now.
    unsafe {
        libc::fcntl(fd, libc::F_SETLEASE, libc::F_UNLCK);
    }
    out
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests damage stores and drive them from threads of their own
mod tests {
    use super::*;

    #[test]
    fn a_quiet_file_is_mapped_and_a_written_or_resized_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("object");
        let body: Vec<u8> = (0..(3u32 << 20)).map(|i| (i % 253) as u8).collect();
        fs::write(&path, &body).unwrap();
        let f = fs::File::open(&path).unwrap();
        let len = body.len() as u64;
        assert_eq!(
            with_leased_map(&f, len, blake3::hash),
            Some(blake3::hash(&body))
        );
        // Its length is not what the caller expects: nothing mapped.
        assert_eq!(with_leased_map(&f, len - 1, |b| b.len()), None);
        // Open for writing elsewhere: no lease, nothing mapped.
        let w = fs::OpenOptions::new().write(true).open(&path).unwrap();
        assert_eq!(with_leased_map(&f, len, |b| b.len()), None);
        drop(w);
        // The lease was given back: a writer is not kept waiting.
        let started = std::time::Instant::now();
        let w = fs::OpenOptions::new().write(true).open(&path).unwrap();
        w.set_len(10).unwrap();
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }
}
