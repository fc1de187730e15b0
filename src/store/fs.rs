//! Every change spillway makes to a local disk, behind one trait.
//!
//! The local store, the S3 store's cache and the registry's session log
//! create, write, sync, link, rename and remove through an [`Fs`]: the
//! real filesystem ([`RealFs`]) in use, and under the `test-seams` feature
//! the fault-injecting and crash-recording filesystems that wrap it
//! (`FaultPlan::fs`, `CrashModel::fs`). So a test that fails the
//! Nth change, or replays every prefix of them into a simulated power
//! loss, sees every change by construction: a new call site is one more
//! call of this trait. A clippy lint (the root `clippy.toml`) keeps the
//! `std::fs` calls that change a disk out of the rest of the core.
//! Reading (opening a file to read, listing, metadata) needs no trait.

// The one module that changes the disk with std::fs (see clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::fmt;
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The changes spillway makes to a local disk: the store's directory, the
/// S3 store's cache, the registry's session log. Each method is one
/// system call's worth of change, so that a crash can fall between any
/// two. The real filesystem is [`RealFs`]; the `test-seams` feature wraps
/// one in a fault plan (`FaultPlan::fs`) or a crash model
/// (`CrashModel::fs`), which then sees every change by construction.
pub trait Fs: Send + Sync + fmt::Debug {
    /// Creates the directory `dir`, private (0700, whatever the umask);
    /// [`io::ErrorKind::AlreadyExists`] when something is there.
    fn create_dir(&self, dir: &Path) -> io::Result<()>;

    /// Creates every missing directory above and at `dir` (for the parents
    /// of a store's root, outside what it owns), as `mkdir -p` does.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;

    /// Creates a new, empty, private file (0600) at `path`, never through
    /// a symbolic link and never over an existing name, open for reading
    /// and writing; with `append`, every write goes to its end.
    fn create_new(&self, path: &Path, append: bool) -> io::Result<File>;

    /// Writes the start of `buf` to `file` (created at `path`), where the
    /// file's position says; the bytes land at offset `at`. How many bytes
    /// were written.
    fn write(&self, file: &mut File, path: &Path, at: u64, buf: &[u8]) -> io::Result<usize>;

    /// Writes all of `buf` with [`write`](Fs::write), from offset `at`.
    fn write_all(
        &self,
        file: &mut File,
        path: &Path,
        mut at: u64,
        mut buf: &[u8],
    ) -> io::Result<()> {
        while !buf.is_empty() {
            match self.write(file, path, at, buf) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    at += n as u64;
                    buf = &buf[n..];
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Makes the data (and size) of `file`, at `path`, durable.
    fn sync(&self, file: &File, path: &Path) -> io::Result<()>;

    /// A hard link: the file at `from` is also at `to`, which must not
    /// exist.
    fn link(&self, from: &Path, to: &Path) -> io::Result<()>;

    /// Renames `from` to `to`, replacing `to` if it exists.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;

    /// Renames `from` to `to` unless `to` exists (for a filesystem without
    /// hard links).
    fn rename_noreplace(&self, from: &Path, to: &Path) -> io::Result<()>;

    /// Removes the file (or empty directory) at `path`.
    fn remove_file(&self, path: &Path) -> io::Result<()>;

    /// Removes the directory at `path` and everything in it.
    fn remove_dir_all(&self, path: &Path) -> io::Result<()>;

    /// Makes the entries of the directory `dir` durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
}

/// The real filesystem.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealFs;

impl Fs for RealFs {
    fn create_dir(&self, dir: &Path) -> io::Result<()> {
        fs::DirBuilder::new().mode(0o700).create(dir)?;
        // Exactly 0700, whatever the umask took away.
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir)
    }

    fn create_new(&self, path: &Path, append: bool) -> io::Result<File> {
        let file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .append(append)
            .create_new(true)
            .mode(0o600)
            .custom_flags(crate::sys::no_follow_flags())
            .open(path)?;
        file.set_permissions(fs::Permissions::from_mode(0o600))?;
        Ok(file)
    }

    fn write(&self, file: &mut File, _path: &Path, _at: u64, buf: &[u8]) -> io::Result<usize> {
        file.write(buf)
    }

    fn sync(&self, file: &File, _path: &Path) -> io::Result<()> {
        file.sync_data()
    }

    fn link(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::hard_link(from, to)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn rename_noreplace(&self, from: &Path, to: &Path) -> io::Result<()> {
        crate::sys::rename_noreplace(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        fs::remove_dir_all(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }
}

/// Publishes `from` as `to` unless `to` exists: `link(2)`, or on a
/// filesystem without hard links a rename that never replaces.
pub(crate) fn link_no_clobber(fs: &dyn Fs, from: &Path, to: &Path) -> io::Result<()> {
    match fs.link(from, to) {
        Err(e) if crate::sys::link_unsupported(&e) => fs.rename_noreplace(from, to),
        other => other,
    }
}
