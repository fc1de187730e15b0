//! Linux: early writeback with `sync_file_range`, and `renameat2` with
//! `RENAME_NOREPLACE`.

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
