//! The spill store: a private, versioned, sharded, content-addressed tree.
//!
//! # Layout
//!
//! ```text
//! <root>/                                 created 0700 if absent; an existing root is left as it is
//! <root>/v1/                              0700: the layout version; everything below belongs to spillway
//! <root>/v1/objects/<h0h1>/               0700: shard = the first two hex digits of the id
//! <root>/v1/objects/<h0h1>/<h2…h63>       0600: a raw object, exactly the stored bytes
//! <root>/v1/objects/<h0h1>/<h2…h63>.zst   0600: a zstd object (format below)
//! <root>/v1/tmp/<pid>-<nanos>-<n>.tmp     0600: an object being written (same filesystem as objects/)
//! <root>/v1/quarantine/<name>             0600: corrupt objects moved aside by verify
//! ```
//!
//! The id is the BLAKE3 hash of the *uncompressed* bytes, so a raw and a zstd
//! object of the same content have the same id; either one satisfies a read,
//! and a writer that finds either one stores nothing new.
//!
//! # zstd object format
//!
//! ```text
//! offset  size  content
//! 0       F     zstd frames (RFC 8878) whose decompressed contents, in order, are the
//!               stored bytes: one frame, or for objects over 8 MiB two (the first
//!               8 MiB single-threaded, the rest compressed by worker threads)
//! F       4     5E 2A 4D 18: the magic of a skippable frame (0x184D2A5E, little-endian),
//!               which zstd decoders pass over
//! F+4     4     10 00 00 00: the skippable frame's payload size, 16 (u32, little-endian)
//! F+8     8     73 70 69 6C 6C 77 79 31: "spillwy1", the trailer's tag and version
//! F+16    8     the number of decompressed bytes (u64, little-endian)
//! ```
//!
//! The trailer lets `ls` and `stats` report sizes without decompressing; a
//! read still checks it against what it decompressed.
//!
//! # Writing
//!
//! A writer creates its temp file with `O_CREAT | O_EXCL | O_NOFOLLOW`, mode
//! 0600, streams into it while hashing, then (durable mode) fsyncs it,
//! publishes it with `link(2)` — which never replaces an existing name — and
//! fsyncs the shard directory. An existing object is a dedup hit: it is
//! verified, its mtime refreshed (for least-recently-used gc) and the temp file
//! removed; a corrupt one is replaced with `rename(2)`. The temp file is
//! removed on every error path. Nothing partial is ever visible under an
//! object's name.
//!
//! # Security
//!
//! Directories are created 0700 and objects 0600 whatever the umask. A root
//! that is a symbolic link is refused, and nothing inside the store is opened
//! through a symbolic link: directories are checked with `lstat`, files are
//! opened with `O_NOFOLLOW`.

mod faults;
mod id;
mod maintain;
mod read;
mod write;

pub use faults::{FaultPlan, FaultPoint};
pub use id::{ContentId, IdError, IdPrefix, MIN_PREFIX_DIGITS};
pub use maintain::{
    referenced_ids, CorruptObject, GcOptions, GcReport, Stats, VerifyReport, DEFAULT_TEMP_GRACE,
};
pub use read::{ByteRange, LineRange, ObjectInfo, Selection};
pub(crate) use write::PIECE;
pub use write::{ObjectWriter, Stored};

use std::fmt;
use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::policy::Compression;

/// The layout version directory.
pub const LAYOUT_VERSION: &str = "v1";
/// The file name suffix of zstd objects.
pub const ZSTD_SUFFIX: &str = ".zst";

/// Why a store operation failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum StoreError {
    /// A system call failed.
    Io {
        /// What was being done, such as `"create temp file"`.
        op: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// No object has this id or prefix.
    NotFound {
        /// The id or prefix, as written.
        id: String,
    },
    /// More than one object starts with this prefix.
    Ambiguous {
        /// The prefix.
        prefix: String,
        /// How many objects match.
        matches: usize,
    },
    /// An object's bytes do not hash to its id, or its file is malformed.
    Corrupt {
        /// The object's id.
        id: ContentId,
        /// Its file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A path inside the store (or the root) is a symbolic link.
    Symlink {
        /// The path.
        path: PathBuf,
    },
    /// A path inside the store is not of the expected kind (a file where a
    /// directory should be, a device where an object should be).
    WrongKind {
        /// The path.
        path: PathBuf,
        /// What it should have been.
        expected: &'static str,
    },
    /// A byte or line range lies outside the object.
    OutOfRange {
        /// What was asked for, and what the object has.
        detail: String,
    },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Io { op, path, source } => {
                write!(f, "{op} {}: {source}", path.display())
            }
            StoreError::NotFound { id } => write!(f, "no stored object matches {id}"),
            StoreError::Ambiguous { prefix, matches } => write!(
                f,
                "{prefix} matches {matches} objects: give more hex digits"
            ),
            StoreError::Corrupt { id, path, reason } => {
                write!(f, "object {id} is corrupt ({}): {reason}", path.display())
            }
            StoreError::Symlink { path } => write!(
                f,
                "{} is a symbolic link, which the store never follows",
                path.display()
            ),
            StoreError::WrongKind { path, expected } => {
                write!(f, "{} is not a {expected}", path.display())
            }
            StoreError::OutOfRange { detail } => f.write_str(detail),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl StoreError {
    pub(crate) fn io<'a>(
        op: &'static str,
        path: &'a Path,
    ) -> impl FnOnce(io::Error) -> StoreError + 'a {
        move |source| StoreError::Io {
            op,
            path: path.to_path_buf(),
            source,
        }
    }

    /// The underlying I/O error kind, if this is an I/O error.
    pub fn io_kind(&self) -> Option<io::ErrorKind> {
        match self {
            StoreError::Io { source, .. } => Some(source.kind()),
            _ => None,
        }
    }
}

#[derive(Debug)]
struct Inner {
    root: PathBuf,
    base: PathBuf,
    objects: PathBuf,
    tmp: PathBuf,
    quarantine: PathBuf,
    counter: AtomicU64,
    faults: Option<FaultPlan>,
}

/// A handle on a store directory. Cheap to clone; safe to share between
/// threads and between processes (every operation is atomic on disk).
///
/// # Examples
///
/// ```
/// use spillway::{Compression, Durability, Selection, Store};
/// let dir = tempfile::tempdir().unwrap();
/// let store = Store::open(dir.path().join("spill")).unwrap();
/// let stored = store.put(b"one\ntwo\n", Compression::None, Durability::Relaxed).unwrap();
/// assert_eq!(store.read(&stored.id, &Selection::All).unwrap(), b"one\ntwo\n");
/// ```
#[derive(Clone, Debug)]
pub struct Store(Arc<Inner>);

fn now_nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

impl Store {
    /// A store rooted at `root`. Nothing is created until the first write, so
    /// opening never fails on a read-only or missing directory; writes and
    /// reads report problems then.
    ///
    /// # Errors
    ///
    /// [`StoreError::Io`] when the current directory is needed to make `root`
    /// absolute and cannot be read.
    pub fn open(root: impl AsRef<Path>) -> Result<Store, StoreError> {
        let root = root.as_ref();
        let root = if root.is_absolute() {
            root.to_path_buf()
        } else {
            std::env::current_dir()
                .map_err(StoreError::io("read current directory for", root))?
                .join(root)
        };
        let base = root.join(LAYOUT_VERSION);
        Ok(Store(Arc::new(Inner {
            objects: base.join("objects"),
            tmp: base.join("tmp"),
            quarantine: base.join("quarantine"),
            base,
            root,
            counter: AtomicU64::new(0),
            faults: None,
        })))
    }

    /// This store with a fault-injection plan (for tests: see [`FaultPlan`]).
    pub fn with_faults(&self, plan: FaultPlan) -> Store {
        let i = &self.0;
        Store(Arc::new(Inner {
            root: i.root.clone(),
            base: i.base.clone(),
            objects: i.objects.clone(),
            tmp: i.tmp.clone(),
            quarantine: i.quarantine.clone(),
            counter: AtomicU64::new(0),
            faults: Some(plan),
        }))
    }

    pub(crate) fn faults(&self) -> Option<&FaultPlan> {
        self.0.faults.as_ref()
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.0.root
    }

    /// The directory of objects being written.
    pub fn tmp_dir(&self) -> &Path {
        &self.0.tmp
    }

    /// The directory corrupt objects are moved to.
    pub fn quarantine_dir(&self) -> &Path {
        &self.0.quarantine
    }

    /// The directory holding the object shards.
    pub fn objects_dir(&self) -> &Path {
        &self.0.objects
    }

    /// Where an object of this id and compression lives.
    pub fn object_path(&self, id: &ContentId, compression: Compression) -> PathBuf {
        let hex = id.to_hex();
        let mut name = hex[2..].to_string();
        if compression != Compression::None {
            name.push_str(ZSTD_SUFFIX);
        }
        self.0.objects.join(&hex[..2]).join(name)
    }

    /// The length of the longest object path, as a notice prints it.
    pub fn max_path_len(&self) -> usize {
        let id = ContentId::of(b"");
        self.object_path(&id, Compression::Zstd { level: 1 })
            .to_string_lossy()
            .len()
    }

    /// Creates `dir` (0700) if needed and checks it is a real directory.
    fn ensure_dir(dir: &Path) -> Result<(), StoreError> {
        match fs::DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => {
                // Exactly 0700, whatever the umask took away.
                fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
                    .map_err(StoreError::io("set permissions of", dir))?;
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(StoreError::io("create directory", dir)(e)),
        }
        let meta = fs::symlink_metadata(dir).map_err(StoreError::io("inspect", dir))?;
        if meta.file_type().is_symlink() {
            return Err(StoreError::Symlink {
                path: dir.to_path_buf(),
            });
        }
        if !meta.is_dir() {
            return Err(StoreError::WrongKind {
                path: dir.to_path_buf(),
                expected: "directory",
            });
        }
        Ok(())
    }

    /// Checks the root and the version directory, creating them if needed.
    fn ensure_base(&self) -> Result<(), StoreError> {
        let root = &self.0.root;
        match fs::symlink_metadata(root) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(StoreError::Symlink { path: root.clone() })
            }
            Ok(m) if !m.is_dir() => {
                return Err(StoreError::WrongKind {
                    path: root.clone(),
                    expected: "directory",
                })
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if let Some(parent) = root.parent() {
                    fs::create_dir_all(parent)
                        .map_err(StoreError::io("create directory", parent))?;
                }
                Self::ensure_dir(root)?;
            }
            Err(e) => return Err(StoreError::io("inspect", root)(e)),
        }
        Self::ensure_dir(&self.0.base)?;
        Self::ensure_dir(&self.0.objects)
    }

    /// Creates a new private temp file in `tmp/`.
    fn create_temp(&self) -> Result<(PathBuf, fs::File), StoreError> {
        self.ensure_base()?;
        Self::ensure_dir(&self.0.tmp)?;
        loop {
            let n = self.0.counter.fetch_add(1, Ordering::Relaxed);
            let name = format!("{}-{}-{n}.tmp", std::process::id(), now_nanos());
            let path = self.0.tmp.join(name);
            if let Err(e) = faults::check(self.faults(), FaultPoint::Create) {
                return Err(StoreError::io("create temp file", &path)(e));
            }
            match fs::OpenOptions::new()
                .write(true)
                .read(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&path)
            {
                Ok(file) => {
                    file.set_permissions(fs::Permissions::from_mode(0o600))
                        .map_err(StoreError::io("set permissions of", &path))?;
                    // Held while the writer lives (the kernel drops it if the
                    // process dies), so cleanup can tell a live writer from
                    // a crashed one.
                    let _ = lock_exclusive(&file);
                    return Ok((path, file));
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(StoreError::io("create temp file", &path)(e)),
            }
        }
    }

    /// Starts writing an object. Bytes past `max_bytes` are counted but not
    /// stored.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store directory or the temp file cannot be
    /// created.
    pub fn writer(
        &self,
        compression: Compression,
        durability: crate::policy::Durability,
    ) -> Result<ObjectWriter, StoreError> {
        ObjectWriter::new(self.clone(), compression, durability)
    }

    /// Stores `bytes` in one call. When an object with this content already
    /// exists (and verifies), nothing is written.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the object cannot be written or published.
    pub fn put(
        &self,
        bytes: &[u8],
        compression: Compression,
        durability: crate::policy::Durability,
    ) -> Result<Stored, StoreError> {
        let id = ContentId::of(bytes);
        if let Some(hit) = self.dedup_hit(&id)? {
            return Ok(hit);
        }
        let mut w = self.writer(compression, durability)?;
        w.write_all(bytes)?;
        w.finish()
    }

    /// An existing, verified object of this id, with its mtime refreshed.
    ///
    /// Safe against a concurrent gc: the object is verified and touched
    /// through one open file, and only counts as a hit if its name still
    /// points at that file afterwards. gc, for its part, restores an object
    /// whose mtime moved after gc started (see [`Store::gc`]).
    pub(crate) fn dedup_hit(&self, id: &ContentId) -> Result<Option<Stored>, StoreError> {
        for compression in [Compression::None, Compression::Zstd { level: 1 }] {
            let path = self.object_path(id, compression);
            let file = match open_regular(&path) {
                Ok(f) => f,
                Err(StoreError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                    continue
                }
                // A link or a non-file where an object belongs: not a hit;
                // publishing replaces it.
                Err(StoreError::Symlink { .. } | StoreError::WrongKind { .. }) => continue,
                Err(e) => return Err(e),
            };
            let Ok(info) = self.scan_file(
                file.try_clone().map_err(StoreError::io("open", &path))?,
                id,
                &path,
                compression,
                &mut |_| {},
            ) else {
                continue;
            };
            let _ = file.set_modified(std::time::SystemTime::now());
            if !same_file(&file, &path) {
                continue;
            }
            return Ok(Some(Stored {
                id: *id,
                path,
                bytes: info.bytes,
                stored_bytes: info.stored_bytes,
                compression,
                dedup: true,
            }));
        }
        Ok(None)
    }
}

/// Whether `path` still names the open `file`.
pub(crate) fn same_file(file: &fs::File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Takes an exclusive advisory lock without waiting; whether it was taken.
/// The lock lives as long as the open file, and dies with the process.
pub(crate) fn lock_exclusive(file: &fs::File) -> bool {
    use std::os::unix::io::AsRawFd;
    // SAFETY: flock only reads the descriptor, which `file` keeps open.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// Whether another process holds the lock of a temp file (a live writer).
pub(crate) fn is_locked(path: &Path) -> bool {
    use std::os::unix::io::AsRawFd;
    let Ok(file) = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
    else {
        return false;
    };
    // SAFETY: as above.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    rc != 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK)
}

/// Opens a file inside the store for reading, never through a symlink, and
/// checks that it is a regular file.
pub(crate) fn open_regular(path: &Path) -> Result<fs::File, StoreError> {
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                StoreError::Symlink {
                    path: path.to_path_buf(),
                }
            } else {
                StoreError::io("open", path)(e)
            }
        })?;
    let meta = file.metadata().map_err(StoreError::io("inspect", path))?;
    if !meta.is_file() {
        return Err(StoreError::WrongKind {
            path: path.to_path_buf(),
            expected: "regular file",
        });
    }
    Ok(file)
}
