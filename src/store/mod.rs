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
mod error;
mod format;
mod fs;
mod grep;
mod id;
mod local;
mod maintain;
mod memory;
mod object;
mod op;
mod page;
mod pointer;
mod read;
#[cfg(feature = "s3")]
mod remote;
#[cfg(feature = "test-seams")]
mod seam;
mod sink;
mod write;

pub use backend::Location;
pub(crate) use backend::{Backend, Maintain, Reads};
#[cfg(feature = "test-seams")]
pub use crash::{CrashKind, CrashModel};
pub use error::{StoreError, StoreErrorKind};
pub use fs::{Fs, RealFs};
pub use grep::{GrepLine, GrepOptions, GrepPattern, GrepReport, PatternError, MAX_MATCHED_LINE};
pub use id::{ContentId, IdError, IdPrefix, MIN_PREFIX_DIGITS};
pub(crate) use local::Local;
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
#[cfg(feature = "test-seams")]
pub use seam::FaultPoint;
pub use sink::{SpillSink, SpillWriter};
pub use write::ObjectWriter;

use std::path::Path;
use std::sync::Arc;

use crate::threads::Parallelism;

/// The most bytes one object may hold: 16 GiB. A zstd object whose trailer
/// declares more is corrupt (a decompression bomb is refused before it is
/// decompressed).
pub const MAX_OBJECT_BYTES: u64 = 16 << 30;

/// The layout version directory.
pub const LAYOUT_VERSION: &str = "v1";
/// The file name suffix of zstd objects.
pub const ZSTD_SUFFIX: &str = ".zst";

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
        Store::over(Arc::new(sink::SpillSinkBackend::new(Box::new(sink))))
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
        let wrap = |fs: Arc<dyn Fs>| plan.fs(fs);
        Store(self.0.with_fs(&wrap).expect(NO_SEAMS), self.1.clone())
    }

    /// This store, recording every change into a crash model (tests only:
    /// the `test-seams` feature), over the same objects.
    ///
    /// # Panics
    ///
    /// For a store other than a local directory, as [`with_faults`](Self::with_faults).
    #[cfg(feature = "test-seams")]
    pub fn with_crash_model(&self, model: &CrashModel) -> Store {
        let wrap = |fs: Arc<dyn Fs>| model.fs(fs);
        Store(self.0.with_fs(&wrap).expect(NO_SEAMS), self.1.clone())
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
