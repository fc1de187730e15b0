//! An input file mapped into memory under a read lease, for a caller that
//! hands the stage a whole file at once ([`Spiller::apply`](crate::Spiller::apply))
//! instead of reading it through a buffer.

use std::fs::File;

/// Runs `f` over the whole of `file` mapped into memory, and gives what it
/// returns; `None` when the file is not a regular file or cannot be mapped
/// safely, and should be read instead.
///
/// A mapping of a file that another process truncates kills its reader with
/// `SIGBUS`. So the file is mapped only under a read lease (`F_SETLEASE`,
/// Linux): the kernel grants one only while no process has the file open
/// for writing (a log still being written is read instead), and while it is
/// held, a process that opens the file for writing or truncates it waits
/// until `f` has returned or the kernel's `lease-break-time` (45 s by
/// default) has passed. The lease's break signal is SIGURG, whose default
/// is to be ignored, so a break never kills the caller. Elsewhere, on
/// someone else's file (without `CAP_LEASE`), or on a filesystem without
/// leases, nothing is mapped.
pub fn with_mapped_file<T>(file: &File, f: impl FnOnce(&[u8]) -> T) -> Option<T> {
    let meta = file.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    crate::sys::with_leased_map(file, meta.len(), f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quiet_file_is_mapped_whole_and_a_directory_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let body: Vec<u8> = (0..(2u32 << 20)).map(|i| b'a' + (i % 26) as u8).collect();
        std::fs::write(&path, &body).unwrap();
        let got = with_mapped_file(&File::open(&path).unwrap(), |b| b == &body[..]);
        // The portable fallbacks (no leases) map nothing.
        let want = (!crate::sys::use_portable()).then_some(true);
        assert_eq!(got, want);
        assert_eq!(
            with_mapped_file(&File::open(dir.path()).unwrap(), |b| b.len()),
            None
        );
    }
}
