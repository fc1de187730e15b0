//! The changes a store makes to its files, named once: what the seam
//! records and the crash model replays. It imports nothing of either, so
//! the seam and the crash model do not import each other.

use std::path::Path;

/// A change to the store's files, as the crash model sees it.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(not(feature = "test-seams"), allow(dead_code))]
pub(crate) enum Op<'a> {
    /// A directory was created.
    Mkdir(&'a Path),
    /// A new, empty file was created.
    Create(&'a Path),
    /// Bytes were written at an offset of the file at this path.
    Write(&'a Path, u64, &'a [u8]),
    /// The file at this path was fsynced (data and size).
    Fsync(&'a Path),
    /// A hard link: the file at the first path is now also at the second.
    Link(&'a Path, &'a Path),
    /// A rename, replacing the second path if it exists.
    Rename(&'a Path, &'a Path),
    /// A file (or an empty directory) was removed.
    Remove(&'a Path),
    /// A directory was fsynced: its entries are durable.
    FsyncDir(&'a Path),
}
