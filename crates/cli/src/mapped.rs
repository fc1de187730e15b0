//! An input file mapped into memory, so `apply` hands the stage the whole
//! input at once (stored on its own threads while the preview is made, see
//! `Spiller::apply`) without copying it through a read buffer.
//!
//! A mapping of a file that another process truncates kills the reader
//! with `SIGBUS` when it touches the missing pages. So a file is mapped
//! only under a read lease (`F_SETLEASE`, Linux): the kernel grants one
//! only when no process has the file open for writing, and while it is
//! held, a process that opens the file for writing or truncates it waits
//! until the lease is released (after the stage is done) or the kernel's
//! `lease-break-time` (45 s by default) passes. The lease's break signal
//! is one whose default is to be ignored, so a break never kills spillway.
//! A file that cannot be leased (open for writing: a log still growing;
//! someone else's file; a filesystem without leases) or is small is read
//! as a stream instead.

use std::fs::File;

/// Files from this size are mapped; smaller ones cost more to map than
/// to read.
const MAP_FROM: u64 = 1 << 20;

/// A mapped input file, held under a read lease until dropped.
pub struct Mapped {
    map: memmap2::Mmap,
    /// Released after the mapping is gone (fields drop in order).
    _lease: Lease,
}

impl std::ops::Deref for Mapped {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.map
    }
}

/// `file` mapped, or `None` when it should be read instead.
pub fn map(file: &File) -> Option<Mapped> {
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() < MAP_FROM {
        return None;
    }
    let lease = Lease::take(file)?;
    // Under the lease the size cannot change; it is checked again against
    // what was mapped.
    let len = file.metadata().ok()?.len();
    // SAFETY: the mapping is read-only and private, and while `Mapped`
    // lives the read lease keeps every other process from writing or
    // truncating the file (or makes it wait); the mapped length is checked
    // against the file's size under the lease.
    let map = unsafe { memmap2::Mmap::map(file) }.ok()?;
    if map.len() as u64 != len {
        return None;
    }
    Some(Mapped { map, _lease: lease })
}

/// `fcntl`'s command that names the signal a lease break sends (the same
/// on every Linux architecture; not every libc release exports it).
#[cfg(target_os = "linux")]
const F_SETSIG: libc::c_int = 10;

/// A read lease on an open file.
struct Lease {
    #[cfg(target_os = "linux")]
    fd: std::os::fd::RawFd,
}

impl Lease {
    #[cfg(target_os = "linux")]
    fn take(file: &File) -> Option<Lease> {
        use std::os::fd::AsRawFd;
        let fd = file.as_raw_fd();
        // SAFETY: plain fcntl calls on a descriptor that `file` keeps open
        // for the lease's lifetime (the caller holds both).
        unsafe {
            // A break is announced with SIGURG, ignored by default, instead
            // of SIGIO, whose default is to terminate.
            if libc::fcntl(fd, F_SETSIG, libc::SIGURG) != 0 {
                return None;
            }
            if libc::fcntl(fd, libc::F_SETLEASE, libc::F_RDLCK) != 0 {
                return None;
            }
        }
        Some(Lease { fd })
    }

    #[cfg(not(target_os = "linux"))]
    fn take(_: &File) -> Option<Lease> {
        None
    }
}

#[cfg(target_os = "linux")]
impl Drop for Lease {
    fn drop(&mut self) {
        // SAFETY: see `take`; the file is still open.
        unsafe {
            libc::fcntl(self.fd, libc::F_SETLEASE, libc::F_UNLCK);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_quiet_large_file_is_mapped_and_a_small_or_open_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let body: Vec<u8> = (0..(2u32 << 20)).map(|i| b'a' + (i % 26) as u8).collect();
        std::fs::write(&path, &body).unwrap();
        let f = File::open(&path).unwrap();
        let m = map(&f).expect("a quiet file of 2 MiB is mapped");
        assert_eq!(&m[..], &body[..]);
        drop(m);
        // Still open for writing elsewhere (a log being written): read.
        let mut w = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        let f = File::open(&path).unwrap();
        assert!(map(&f).is_none());
        w.write_all(b"more\n").unwrap();
        drop(w);
        // Small: read.
        let small = dir.path().join("small");
        std::fs::write(&small, b"x\n").unwrap();
        assert!(map(&File::open(&small).unwrap()).is_none());
    }
}
