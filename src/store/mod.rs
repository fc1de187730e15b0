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
//! zstd frames, then a 24-byte trailer (a skippable frame) that records the
//! decompressed size, byte by byte in [`format`]. One frame, or for objects
//! over 8 MiB two (the first 8 MiB single-threaded, the rest compressed by
//! worker threads).
//!
//! The trailer lets `ls` and `stats` report sizes without decompressing; a
//! read still checks it against what it decompressed.
//!
//! # Writing
//!
//! A writer creates its temp file with `O_CREAT | O_EXCL | O_NOFOLLOW`, mode
//! 0600, streams into it while hashing, then (durable mode) fsyncs it,
//! publishes it with `link(2)` — which never replaces an existing name — and
//! fsyncs the shard directory. Every directory the store creates (the root,
//! `v1`, `objects`, a new shard, `tmp`, `quarantine`) is followed by an
//! fsync of its parent, so a shard that holds a durable object is itself
//! durable. An existing object is a dedup hit: it is
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

mod backend;
#[cfg(feature = "test-seams")]
mod crash;
mod format;
mod grep;
mod id;
mod maintain;
mod memory;
mod object;
mod op;
mod page;
mod pointer;
mod publish;
mod read;
#[cfg(feature = "s3")]
mod remote;
mod seam;
mod sink;
mod write;

pub use backend::Location;
pub(crate) use backend::{Backend, Maintain, Reads};
#[cfg(feature = "test-seams")]
pub use crash::{CrashKind, CrashModel};
pub use grep::{GrepLine, GrepOptions, GrepPattern, GrepReport, PatternError, MAX_MATCHED_LINE};
pub use id::{ContentId, IdError, IdPrefix, MIN_PREFIX_DIGITS};
pub use maintain::{
    CorruptObject, GcOptions, GcReport, Misplaced, References, Stats, VerifyReport,
    DEFAULT_TEMP_GRACE,
};
pub use object::{Durability, Encoding, StoredObject, WriteOptions};
pub use page::Page;
pub use read::{ByteRange, LineRange, RangeError, ReadReport, Selection};
#[cfg(feature = "s3")]
pub use remote::S3Options;
#[cfg(feature = "test-seams")]
pub use seam::FaultPlan;
pub use seam::FaultPoint;
pub use sink::{SpillSink, SpillWriter};
pub use write::ObjectWriter;

use std::fmt;
use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde::Serialize;

use crate::sys;
use crate::threads::Parallelism;
use seam::{Op, Seam};

/// The most bytes one object may hold: 16 GiB. A zstd object whose trailer
/// declares more is corrupt (a decompression bomb is refused before it is
/// decompressed).
pub const MAX_OBJECT_BYTES: u64 = 16 << 30;

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
    /// A request to remote object storage failed.
    Remote {
        /// What was being done, such as `"publish"`.
        op: &'static str,
        /// The URL it was done to (`s3://BUCKET/KEY`).
        target: String,
        /// What kind of failure it is.
        kind: StoreErrorKind,
        /// The client's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The store's location or its settings cannot be used: a malformed
    /// `s3://` URL, missing credentials, a build without S3 support.
    Config {
        /// What is wrong, naming what is missing.
        reason: String,
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
            StoreError::Remote {
                op, target, source, ..
            } => write!(f, "{op} {target}: {source}"),
            StoreError::Config { reason } => f.write_str(reason),
        }
    }
}

/// What kind of failure a [`StoreError`] is, for a harness to branch on
/// (`store_error_kind` in `spillway apply --json`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StoreErrorKind {
    /// The disk or a quota is full (`ENOSPC`, `EDQUOT`).
    NoSpace,
    /// Permission denied (`EACCES`, `EPERM`).
    PermissionDenied,
    /// The store is on a read-only filesystem (`EROFS`).
    ReadOnly,
    /// A path in the store is a symbolic link, or not the kind of file it
    /// should be.
    NotRegularFile,
    /// No object has this id or prefix.
    NotFound,
    /// A prefix matches more than one object.
    Ambiguous,
    /// An object does not hash to its id, or its file is malformed.
    Corrupt,
    /// A range lies outside the object.
    OutOfRange,
    /// Any other I/O error (for a remote store: any other failed request).
    OtherIo,
    /// The store's location or settings cannot be used.
    Config,
}

impl StoreErrorKind {
    /// The kind's stable name, as in JSON: `no_space`, `permission_denied`,
    /// `read_only`, `not_regular_file`, `not_found`, `ambiguous`, `corrupt`,
    /// `out_of_range`, `other_io`, `config`.
    pub fn name(self) -> &'static str {
        match self {
            StoreErrorKind::NoSpace => "no_space",
            StoreErrorKind::PermissionDenied => "permission_denied",
            StoreErrorKind::ReadOnly => "read_only",
            StoreErrorKind::NotRegularFile => "not_regular_file",
            StoreErrorKind::NotFound => "not_found",
            StoreErrorKind::Ambiguous => "ambiguous",
            StoreErrorKind::Corrupt => "corrupt",
            StoreErrorKind::OutOfRange => "out_of_range",
            StoreErrorKind::OtherIo => "other_io",
            StoreErrorKind::Config => "config",
        }
    }
}

impl fmt::Display for StoreErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Io { source, .. } => Some(source),
            StoreError::Remote { source, .. } => Some(&**source),
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

    /// What kind of failure this is.
    pub fn kind(&self) -> StoreErrorKind {
        use rustix::io::Errno;
        match self {
            StoreError::Io { source, .. } => {
                let is = |n: Errno| source.raw_os_error() == Some(n.raw_os_error());
                if is(Errno::NOSPC) || is(Errno::DQUOT) {
                    StoreErrorKind::NoSpace
                } else if is(Errno::ROFS) {
                    StoreErrorKind::ReadOnly
                } else if is(Errno::ACCESS) || is(Errno::PERM) {
                    StoreErrorKind::PermissionDenied
                } else if is(Errno::LOOP) || is(Errno::ISDIR) || is(Errno::NOTDIR) {
                    StoreErrorKind::NotRegularFile
                } else {
                    StoreErrorKind::OtherIo
                }
            }
            StoreError::NotFound { .. } => StoreErrorKind::NotFound,
            StoreError::Ambiguous { .. } => StoreErrorKind::Ambiguous,
            StoreError::Corrupt { .. } => StoreErrorKind::Corrupt,
            StoreError::Symlink { .. } | StoreError::WrongKind { .. } => {
                StoreErrorKind::NotRegularFile
            }
            StoreError::OutOfRange { .. } => StoreErrorKind::OutOfRange,
            StoreError::Remote { kind, .. } => *kind,
            StoreError::Config { .. } => StoreErrorKind::Config,
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

/// A store in a local directory: its paths, the counter that names its
/// temp files, and the test seam. Cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct Local(Arc<Dirs>);

#[derive(Debug)]
pub(crate) struct Dirs {
    location: Location,
    root: PathBuf,
    base: PathBuf,
    objects: PathBuf,
    tmp: PathBuf,
    quarantine: PathBuf,
    counter: AtomicU64,
    seam: Seam,
}

impl Local {
    /// The store rooted at `root` (absolute), with `seam`.
    pub(crate) fn at(root: PathBuf, seam: Seam) -> Local {
        let base = root.join(LAYOUT_VERSION);
        Local(Arc::new(Dirs {
            location: Location::Dir(root.clone()),
            objects: base.join("objects"),
            tmp: base.join("tmp"),
            quarantine: base.join("quarantine"),
            base,
            root,
            counter: AtomicU64::new(0),
            seam,
        }))
    }

    /// The store rooted at `root`, made absolute against the current
    /// directory.
    pub(crate) fn open(root: &Path) -> Result<Local, StoreError> {
        let root = if root.is_absolute() {
            root.to_path_buf()
        } else {
            std::env::current_dir()
                .map_err(StoreError::io("read current directory for", root))?
                .join(root)
        };
        Ok(Local::at(root, Seam::default()))
    }

    pub(crate) fn seam(&self) -> &Seam {
        &self.0.seam
    }

    pub(crate) fn root(&self) -> &Path {
        &self.0.root
    }

    pub(crate) fn tmp_dir(&self) -> &Path {
        &self.0.tmp
    }

    pub(crate) fn quarantine_dir(&self) -> &Path {
        &self.0.quarantine
    }

    pub(crate) fn objects_dir(&self) -> &Path {
        &self.0.objects
    }

    /// The file of an object of this id and encoding.
    pub(crate) fn object_path(&self, id: &ContentId, encoding: Encoding) -> PathBuf {
        let hex = id.to_hex();
        let mut name = hex[2..].to_string();
        name.push_str(encoding.suffix());
        self.0.objects.join(&hex[..2]).join(name)
    }

    /// Creates `dir` (0700) if needed and checks it is a real directory. A
    /// directory it creates is made durable in its parent at once: a name
    /// published inside it later is only durable if the directory is.
    pub(crate) fn ensure_dir(&self, dir: &Path) -> Result<(), StoreError> {
        match fs::DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => {
                self.seam().record(Op::Mkdir(dir));
                // Exactly 0700, whatever the umask took away.
                fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
                    .map_err(StoreError::io("set permissions of", dir))?;
                if let Some(parent) = dir.parent() {
                    self.sync_dir(parent)?;
                }
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
                self.ensure_dir(root)?;
            }
            Err(e) => return Err(StoreError::io("inspect", root)(e)),
        }
        self.ensure_dir(&self.0.base)?;
        self.ensure_dir(&self.0.objects)
    }

    /// fsyncs a directory, making the names in it durable.
    pub(crate) fn sync_dir(&self, dir: &Path) -> Result<(), StoreError> {
        self.seam()
            .check(FaultPoint::DirFsync)
            .and_then(|()| fs::File::open(dir))
            .and_then(|d| d.sync_all())
            .map_err(StoreError::io("fsync directory", dir))?;
        self.seam().record(Op::FsyncDir(dir));
        Ok(())
    }

    /// Creates a new private temp file in `tmp/`.
    pub(crate) fn create_temp(&self) -> Result<(PathBuf, fs::File), StoreError> {
        self.ensure_base()?;
        self.ensure_dir(&self.0.tmp)?;
        loop {
            let n = self.0.counter.fetch_add(1, Ordering::Relaxed);
            let name = format!("{}-{}-{n}.tmp", std::process::id(), now_nanos());
            let path = self.0.tmp.join(name);
            if let Err(e) = self.seam().check(FaultPoint::Create) {
                return Err(StoreError::io("create temp file", &path)(e));
            }
            match fs::OpenOptions::new()
                .write(true)
                .read(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(sys::no_follow_flags())
                .open(&path)
            {
                Ok(file) => {
                    self.seam().record(Op::Create(&path));
                    file.set_permissions(fs::Permissions::from_mode(0o600))
                        .map_err(StoreError::io("set permissions of", &path))?;
                    // Held while the writer lives (the kernel drops it if the
                    // process dies), so cleanup can tell a live writer from
                    // a crashed one.
                    let _ = sys::try_lock(&file);
                    return Ok((path, file));
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(StoreError::io("create temp file", &path)(e)),
            }
        }
    }

    /// An existing, verified object of this id, with its mtime refreshed.
    ///
    /// Safe against a concurrent gc: the object is verified and touched
    /// through one open file, and only counts as a hit if its name still
    /// points at that file afterwards. gc, for its part, restores an object
    /// whose mtime moved after gc started (see [`Store::gc`](super::Store::gc)).
    pub(crate) fn dedup_hit(&self, id: &ContentId) -> Result<Option<StoredObject>, StoreError> {
        self.dedup_hit_checked(id, None)
    }

    /// [`dedup_hit`](Self::dedup_hit), each copy checked by comparing it
    /// with `content` (whose id is `id`) when that is at hand, not by
    /// hashing it again.
    pub(crate) fn dedup_hit_checked(
        &self,
        id: &ContentId,
        content: Option<&[u8]>,
    ) -> Result<Option<StoredObject>, StoreError> {
        for encoding in Encoding::ALL {
            let path = self.object_path(id, encoding);
            let file = match open_regular(self.root(), &path) {
                Ok(f) => f,
                Err(StoreError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                    continue
                }
                // A link or a non-file where an object belongs: not a hit,
                // and moved aside so that the id resolves to one good object.
                // Only the object's own name is moved, never a directory
                // above it (moving through a linked directory would reach
                // outside the store).
                Err(
                    StoreError::Symlink { path: bad } | StoreError::WrongKind { path: bad, .. },
                ) if bad == path && self.quarantine(&path).is_ok() => continue,
                Err(e) => return Err(e),
            };
            let scanned = self.check_file(
                file.try_clone().map_err(StoreError::io("open", &path))?,
                id,
                &path,
                encoding,
                content,
                &mut |_| {},
            );
            let info = match scanned {
                Ok(info) => info,
                Err(StoreError::Corrupt { .. }) => {
                    // A corrupt copy is never reused; moving it aside lets
                    // reads find the good copy of another encoding.
                    if same_file(&file, &path) {
                        let _ = self.quarantine(&path);
                    }
                    continue;
                }
                Err(e) => return Err(e),
            };
            let _ = file.set_modified(std::time::SystemTime::now());
            if !same_file(&file, &path) {
                continue;
            }
            return Ok(Some(StoredObject {
                dedup: true,
                modified: None,
                ..info
            }));
        }
        Ok(None)
    }
}

impl Backend for Local {
    fn location(&self) -> &Location {
        &self.0.location
    }

    fn object_location(&self, id: &ContentId, encoding: Encoding) -> PathBuf {
        self.object_path(id, encoding)
    }

    fn verified_hit(
        &self,
        id: &ContentId,
        _bytes: u64,
    ) -> Result<Option<StoredObject>, StoreError> {
        // Every copy is hashed again; the id holds the length.
        Local::dedup_hit(self, id)
    }

    fn dedup_hit_content(
        &self,
        id: &ContentId,
        content: &[u8],
    ) -> Result<Option<StoredObject>, StoreError> {
        self.dedup_hit_checked(id, Some(content))
    }

    fn writer(&self, opts: WriteOptions) -> Result<ObjectWriter, StoreError> {
        publish::LocalOut::writer(self.clone(), opts)
    }

    #[cfg(feature = "test-seams")]
    fn with_seam(&self, change: &dyn Fn(&mut Seam)) -> Option<Arc<dyn Backend>> {
        let mut seam = self.seam().clone();
        change(&mut seam);
        Some(Arc::new(Local::at(self.root().to_path_buf(), seam)))
    }

    #[cfg(feature = "test-seams")]
    fn damage(&self, _: &ContentId, _: Encoding, _: &[u8]) -> bool {
        // A file is damaged by writing it: the tests do that themselves.
        false
    }

    fn reads(&self) -> Result<&dyn Reads, StoreError> {
        Ok(self)
    }

    fn maintenance(&self) -> Result<&dyn Maintain, StoreError> {
        Ok(self)
    }
}

impl Reads for Local {
    fn locate(&self, id: &ContentId) -> Result<(PathBuf, Encoding), StoreError> {
        Local::locate(self, id)
    }

    fn resolve_prefix(&self, prefix: &IdPrefix) -> Result<ContentId, StoreError> {
        Local::resolve_prefix(self, prefix)
    }

    fn scan_good(
        &self,
        id: &ContentId,
        f: &mut dyn FnMut(Option<&[u8]>),
    ) -> Result<StoredObject, StoreError> {
        Local::scan_good(self, id, f)
    }

    fn rescan(
        &self,
        id: &ContentId,
        found: &StoredObject,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<StoredObject, StoreError> {
        self.scan(id, &found.path, found.encoding, f)
    }

    fn list(&self) -> Result<Vec<StoredObject>, StoreError> {
        Local::list(self)
    }
}

impl Maintain for Local {
    fn clean_temp(&self, grace: std::time::Duration) -> Result<usize, StoreError> {
        Local::clean_temp(self, grace)
    }

    fn verify_all(
        &self,
        temp_grace: std::time::Duration,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<VerifyReport, StoreError> {
        Local::verify_all(self, temp_grace, progress)
    }

    fn gc(
        &self,
        opts: &GcOptions,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<GcReport, StoreError> {
        Local::gc(self, opts, progress)
    }

    fn stats(&self) -> Result<Stats, StoreError> {
        Local::stats(self)
    }
}

/// Why a test seam cannot be had.
#[cfg(feature = "test-seams")]
const NO_SEAMS: &str = "only a local directory has test seams (fault injection, a crash model)";

/// A handle on a store: a local directory, or (the `s3` feature) a bucket
/// and prefix of S3-compatible object storage. Cheap to clone; safe to
/// share between threads and between processes (every operation is atomic
/// where the objects live).
///
/// # Examples
///
/// ```
/// use spillway::{Durability, Selection, Store, WriteOptions};
/// let dir = tempfile::tempdir().unwrap();
/// let store = Store::open(dir.path().join("spill")).unwrap();
/// let opts = WriteOptions::raw().durability(Durability::Relaxed);
/// let stored = store.put(b"one\ntwo\n", opts).unwrap();
/// assert_eq!(store.read(&stored.id, &Selection::All).unwrap(), b"one\ntwo\n");
/// ```
#[derive(Clone, Debug)]
pub struct Store(Arc<dyn Backend>, Parallelism);

pub(crate) fn now_nanos() -> u128 {
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
        Ok(Store::over(Arc::new(Local::open(root.as_ref())?)))
    }

    /// The store a location names: `s3://BUCKET/PREFIX` for S3-compatible
    /// object storage (the `s3` feature), anything else a directory as for
    /// [`Store::open`].
    ///
    /// An S3 store reads its endpoint, region and credentials from the
    /// standard AWS variables and files: `AWS_ENDPOINT_URL` (or
    /// `AWS_ENDPOINT_URL_S3`), `AWS_REGION` (or `AWS_DEFAULT_REGION`),
    /// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`,
    /// `AWS_PROFILE` with `~/.aws/credentials` and `~/.aws/config`. Plain
    /// HTTP is allowed only for an endpoint on this machine or with
    /// `AWS_ALLOW_HTTP=true`. Its local cache of verified objects is
    /// `SPILLWAY_S3_CACHE` (default `~/.cache/spillway/s3`), bounded by
    /// `SPILLWAY_S3_CACHE_BYTES` (default 1 GiB). Nothing is sent until the
    /// first operation.
    ///
    /// # Errors
    ///
    /// [`StoreError::Config`] for a malformed URL, a setting that is
    /// missing or wrong (the message names it), or an `s3://` location in a
    /// build without the `s3` feature.
    pub fn open_url(location: &str) -> Result<Store, StoreError> {
        if location.starts_with("s3://") {
            #[cfg(feature = "s3")]
            return remote::open_location(location);
            #[cfg(not(feature = "s3"))]
            return Err(StoreError::Config {
                reason: format!(
                    "{location}: this build of spillway has no S3 support (the `s3` cargo feature)"
                ),
            });
        }
        Store::open(location)
    }

    /// The S3 store `opts` describe, configured in code (see
    /// [`S3Options`]). Nothing is sent until the first operation.
    ///
    /// # Errors
    ///
    /// [`StoreError::Config`] for a setting that is missing or wrong (the
    /// message names it).
    #[cfg(feature = "s3")]
    pub fn open_s3(opts: &S3Options) -> Result<Store, StoreError> {
        remote::open(opts)
    }

    /// A store that spills into a harness's own blob storage: writes go to
    /// `sink`, published under the id spillway computed; the store's read,
    /// list and maintenance operations say the sink is the harness's to
    /// read. See [`SpillSink`].
    pub fn from_sink(sink: impl SpillSink + 'static) -> Store {
        Store::over(Arc::new(sink::SinkBackend::new(Box::new(sink))))
    }

    /// A store in memory: objects in the same encodings and verified by the
    /// same checks as on disk, gone with the store's last handle. For
    /// tests.
    pub fn in_memory() -> Store {
        Store::over(Arc::new(memory::Memory::default()))
    }

    /// Replaces the stored bytes of an object of a memory store, as a
    /// corrupt disk would (tests only: the `test-seams` feature). Whether
    /// there was such an object.
    #[cfg(feature = "test-seams")]
    pub fn damage_in_memory(&self, id: &ContentId, encoding: Encoding, bytes: &[u8]) -> bool {
        self.0.damage(id, encoding, bytes)
    }

    pub(crate) fn backend(&self) -> &dyn Backend {
        &*self.0
    }

    /// A store over `backend`, on the process's thread budget.
    pub(crate) fn over(backend: Arc<dyn Backend>) -> Store {
        Store(backend, Parallelism::process())
    }

    /// This store (the same objects) with its own thread budget: how many
    /// threads its writes, reads and every `Spiller` over it may run
    /// besides their callers' own. See [`Parallelism`].
    pub fn with_parallelism(&self, budget: Parallelism) -> Store {
        Store(self.0.clone(), budget)
    }

    /// The thread budget this store's work draws on.
    pub fn parallelism(&self) -> &Parallelism {
        &self.1
    }

    /// Where the store is: its directory, or its bucket and prefix.
    pub fn location(&self) -> &Location {
        self.0.location()
    }

    /// Whether this store is remote (an `s3://` location).
    pub fn is_remote(&self) -> bool {
        self.location().is_remote()
    }

    /// This store with a fault-injection plan (tests only: the
    /// `test-seams` feature), over the same objects.
    ///
    /// # Panics
    ///
    /// For a store other than a local directory, which has no fault seam:
    /// a test that asked for faults would otherwise run without them.
    #[cfg(feature = "test-seams")]
    pub fn with_faults(&self, plan: FaultPlan) -> Store {
        let change = |seam: &mut Seam| seam.faults = Some(plan.clone());
        Store(self.0.with_seam(&change).expect(NO_SEAMS), self.1.clone())
    }

    /// This store, recording every change into a crash model (tests only:
    /// the `test-seams` feature), over the same objects.
    ///
    /// # Panics
    ///
    /// For a store other than a local directory, as [`with_faults`](Self::with_faults).
    #[cfg(feature = "test-seams")]
    pub fn with_crash_model(&self, model: &CrashModel) -> Store {
        let change = |seam: &mut Seam| seam.crash = Some(model.clone());
        Store(self.0.with_seam(&change).expect(NO_SEAMS), self.1.clone())
    }

    /// The length of the longest object location, as a notice prints it.
    pub(crate) fn max_path_len(&self) -> usize {
        let id = ContentId::of(b"");
        self.0
            .object_location(&id, Encoding::Zstd)
            .to_string_lossy()
            .len()
    }

    /// Starts writing an object.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store directory or the temp file cannot be
    /// created.
    pub fn writer(&self, opts: WriteOptions) -> Result<ObjectWriter, StoreError> {
        Ok(self.0.writer(opts)?.on_budget(&self.1))
    }

    /// An object of this id holding `bytes` bytes, read back and checked
    /// against its id, marked used: what a writer that could not write
    /// reports when the store holds its content already.
    pub(crate) fn verified_hit(
        &self,
        id: &ContentId,
        bytes: u64,
    ) -> Result<Option<StoredObject>, StoreError> {
        self.0.verified_hit(id, bytes)
    }

    /// Stores `bytes` in one call. When an object with this content already
    /// exists (and holds exactly these bytes: it is compared with them, not
    /// hashed again), nothing is kept of the write. From 1 MiB the bytes
    /// are written to a temp file while another thread hashes them, so a
    /// new object costs the slower of the two, not their sum. On S3 the
    /// object's bytes (`bytes` itself, or its zstd frames) are held in
    /// memory and sent in one create-only `PUT` to the object's key once
    /// its id is known.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the object cannot be written or published.
    pub fn put(&self, bytes: &[u8], opts: WriteOptions) -> Result<StoredObject, StoreError> {
        if bytes.len() as u64 >= crate::offload::THREAD_AFTER {
            return self.put_whole(bytes, opts);
        }
        // The whole content is at hand: its id comes first, an existing
        // copy is checked against it, and the writer hashes nothing again.
        self.put_with_id(&ContentId::of(bytes), bytes, opts)
    }

    /// [`put`](Self::put) for a caller with other work to do meanwhile: the
    /// bytes are written to a temp file on one thread while this one
    /// hashes them; an existing copy found by the hash is checked against
    /// them and the temp file dropped, a new one is published. A hit then
    /// costs the hash and the check, and a miss the slower of hashing and
    /// writing, not their sum.
    pub(crate) fn put_whole(
        &self,
        bytes: &[u8],
        opts: WriteOptions,
    ) -> Result<StoredObject, StoreError> {
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            let write = || -> Result<Option<ObjectWriter>, StoreError> {
                let mut w = self.0.whole_writer(opts)?.on_budget(&self.1).id_to_come();
                for piece in bytes.chunks(1 << 20) {
                    if stop.load(Ordering::Relaxed) {
                        // Dropping the writer removes its temp file.
                        return Ok(None);
                    }
                    w.write_all(piece)?;
                }
                Ok(Some(w))
            };
            let writing = crate::threads::scoped(s, &self.1, "spillway-write", write);
            let Ok(writing) = writing else {
                // No thread to be had: one after the other.
                return self.put_with_id(&ContentId::of(bytes), bytes, opts);
            };
            let id = ContentId::of(bytes);
            // A copy under the id stops the write at once; it is checked
            // against the content after.
            let found = self.0.reads().is_ok_and(|r| r.locate(&id).is_ok());
            if found {
                stop.store(true, Ordering::Relaxed);
            }
            let hit = if found {
                self.0.dedup_hit_content(&id, bytes)
            } else {
                Ok(None)
            };
            let written = writing.join();
            // A hit found is a hit, whatever the write met meanwhile (a
            // full disk): the write's error counts only without one.
            match (hit?, written) {
                (Some(hit), _) => Ok(hit),
                (None, Err(e)) => Err(e),
                (None, Ok(Some(w))) => w.with_id(id).finish(),
                // The copy found was not the content (it is set aside now):
                // written again, one step after the other.
                (None, Ok(None)) => self.put_with_id(&id, bytes, opts),
            }
        })
    }

    /// [`put`](Self::put) of `bytes` whose id is `id`, computed from them
    /// by the caller.
    pub(crate) fn put_with_id(
        &self,
        id: &ContentId,
        bytes: &[u8],
        opts: WriteOptions,
    ) -> Result<StoredObject, StoreError> {
        let id = *id;
        if let Some(hit) = self.0.dedup_hit_content(&id, bytes)? {
            return Ok(hit);
        }
        let mut w = self.0.whole_writer(opts)?.on_budget(&self.1).with_id(id);
        w.write_all(bytes)?;
        w.finish()
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

/// Opens a file inside the store for reading and checks that it is a
/// regular file. No symbolic link is followed anywhere on the way: below
/// `root`, every directory is opened relative to the last one with
/// `O_NOFOLLOW | O_DIRECTORY`, so a shard or `v1/objects` replaced by a link
/// is refused, not read through.
pub(crate) fn open_regular(root: &Path, path: &Path) -> Result<fs::File, StoreError> {
    use rustix::fs::{openat, Mode, OFlags, CWD};
    let refuse = |e: rustix::io::Errno, at: &Path| match e {
        rustix::io::Errno::LOOP => StoreError::Symlink {
            path: at.to_path_buf(),
        },
        // O_NOFOLLOW | O_DIRECTORY on a link says ENOTDIR.
        rustix::io::Errno::NOTDIR if fs::symlink_metadata(at).is_ok_and(|m| m.is_symlink()) => {
            StoreError::Symlink {
                path: at.to_path_buf(),
            }
        }
        rustix::io::Errno::NOTDIR => StoreError::WrongKind {
            path: at.to_path_buf(),
            expected: "directory",
        },
        e => StoreError::io("open", at)(e.into()),
    };
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let file_flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = match path.strip_prefix(root) {
        Ok(rel) => {
            let mut dir =
                openat(CWD, root, dir_flags, Mode::empty()).map_err(|e| refuse(e, root))?;
            let mut at = root.to_path_buf();
            let mut parts = rel.components().peekable();
            let mut last = None;
            while let Some(part) = parts.next() {
                at.push(part);
                if parts.peek().is_none() {
                    last = Some(openat(&dir, part.as_os_str(), file_flags, Mode::empty()));
                    break;
                }
                dir = openat(&dir, part.as_os_str(), dir_flags, Mode::empty())
                    .map_err(|e| refuse(e, &at))?;
            }
            match last {
                Some(fd) => fd.map_err(|e| refuse(e, path))?,
                None => {
                    return Err(StoreError::WrongKind {
                        path: path.to_path_buf(),
                        expected: "regular file",
                    })
                }
            }
        }
        Err(_) => openat(CWD, path, file_flags, Mode::empty()).map_err(|e| refuse(e, path))?,
    };
    let file = fs::File::from(fd);
    let meta = file.metadata().map_err(StoreError::io("inspect", path))?;
    if !meta.is_file() {
        return Err(StoreError::WrongKind {
            path: path.to_path_buf(),
            expected: "regular file",
        });
    }
    Ok(file)
}
