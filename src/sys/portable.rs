//! Any unix: no early writeback (the final fsync does all the work), and no
//! atomic no-replace rename (publishing needs hard links there).

use std::fs;
use std::io;
use std::path::Path;

/// No early writeback: the fsync at the end writes everything.
pub(crate) fn start_writeback(_file: &fs::File, _offset: u64, _len: u64) {}

/// Unsupported: without `renameat2`, a rename can replace its target, which
/// publishing must never do. Stores on filesystems without hard links
/// therefore need Linux.
pub(crate) fn rename_noreplace(_from: &Path, _to: &Path) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "this filesystem has no hard links, and this platform has no rename that never replaces",
    ))
}

/// No leases: nothing is mapped (callers read instead).
pub(crate) fn with_leased_map<T>(
    _file: &fs::File,
    _len: u64,
    _f: impl FnOnce(&[u8]) -> T,
) -> Option<T> {
    None
}
