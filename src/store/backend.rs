//! The seam between a [`Store`](super::Store) and where its objects live.
//!
//! A store is a handle on one backend: a local directory ([`Local`]), or,
//! with the `s3` feature, a bucket and prefix of S3-compatible object
//! storage. Everything that reads an object's bytes (ranges, grep, JSON
//! Pointer reads, verify) is written once, in the store, over
//! [`Backend::scan_good`]; a backend provides only what differs: where an
//! object is, how its bytes stream past, how one is written and published,
//! and how the whole store is listed and kept.
//!
//! The conformance suite (`tests/conformance.rs`) runs the same checks
//! against every backend.

use std::fmt;
use std::path::PathBuf;
#[cfg(feature = "test-seams")]
use std::sync::Arc;
use std::time::Duration;

#[cfg(feature = "test-seams")]
use super::fs::Fs;

use super::{
    ContentId, Encoding, GcOptions, GcReport, IdPrefix, ObjectWriter, Stats, StoreError,
    StoredObject, VerifyReport, WriteOptions,
};

/// Where a store is: a directory, or a bucket and prefix of S3-compatible
/// object storage.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Location {
    /// A local directory (absolute).
    Dir(PathBuf),
    /// A bucket and a key prefix (without slashes at either end; empty for
    /// the bucket's root).
    S3 {
        /// The bucket's name.
        bucket: String,
        /// The prefix every key of the store starts with.
        prefix: String,
    },
    /// A harness's own sink ([`Store::from_sink`](crate::Store::from_sink)),
    /// by the name it gives.
    Sink(String),
    /// Memory ([`Store::in_memory`](crate::Store::in_memory)).
    Memory,
}

impl Location {
    /// The directory, for a local store.
    pub fn as_dir(&self) -> Option<&std::path::Path> {
        match self {
            Location::Dir(d) => Some(d),
            Location::S3 { .. } | Location::Sink(_) | Location::Memory => None,
        }
    }

    /// Whether the store is remote.
    pub fn is_remote(&self) -> bool {
        matches!(self, Location::S3 { .. })
    }
}

impl fmt::Display for Location {
    /// The directory's path, or `s3://BUCKET[/PREFIX]`: what a read hint
    /// names with `--store`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Dir(d) => write!(f, "{}", d.display()),
            Location::S3 { bucket, prefix } if prefix.is_empty() => write!(f, "s3://{bucket}"),
            Location::S3 { bucket, prefix } => write!(f, "s3://{bucket}/{prefix}"),
            Location::Sink(name) => f.write_str(name),
            Location::Memory => f.write_str("memory:"),
        }
    }
}

/// What a backend provides. Every operation has the meaning, the errors
/// and the crash guarantees of the [`Store`](super::Store) method of the
/// same name; the store adds what is the same everywhere.
pub(crate) trait Backend: Send + Sync + fmt::Debug {
    /// Where the store is.
    fn location(&self) -> &Location;

    /// Where an object of this id and encoding is, as a notice or a
    /// listing prints it: its file, or its `s3://` URL.
    fn object_location(&self, id: &ContentId, encoding: Encoding) -> PathBuf;

    /// An existing object of this id whose content is `bytes` long, read
    /// back and checked against its id, marked used: a copy that proves
    /// damaged is set aside and `None` comes back. For a writer that knows
    /// the id of what it could not write (a full disk, a read-only store):
    /// a hit found is a hit. No default, as for `dedup_hit_content`.
    fn verified_hit(&self, id: &ContentId, bytes: u64) -> Result<Option<StoredObject>, StoreError>;

    /// An existing object that holds `content` (whose id is `id`), marked
    /// used. No backend may call an object a hit before its bytes were
    /// checked against the content or its id: a copy that proves damaged
    /// is set aside and `None` comes back, so the caller writes the
    /// content again. There is no default, so that no backend can skip the
    /// check by leaving this out.
    fn dedup_hit_content(
        &self,
        id: &ContentId,
        content: &[u8],
    ) -> Result<Option<StoredObject>, StoreError>;

    /// Starts writing an object whose whole content the caller holds: a
    /// backend that would stage a large object under a temporary name can
    /// keep it until `finish` instead, when its id is known, and publish
    /// it straight under that id.
    fn whole_writer(&self, opts: WriteOptions) -> Result<ObjectWriter, StoreError> {
        self.writer(opts)
    }

    /// Starts writing an object.
    fn writer(&self, opts: WriteOptions) -> Result<ObjectWriter, StoreError>;

    /// Reading objects back: the backend itself, or, for a write-only
    /// one (a harness's sink), the error that says why it cannot be read.
    fn reads(&self) -> Result<&dyn Reads, StoreError>;

    /// Keeping the store (cleanup, verify, gc, stats), as for `reads`.
    fn maintenance(&self) -> Result<&dyn Maintain, StoreError>;

    /// This backend over the same objects with its filesystem wrapped by
    /// `wrap` (a fault plan's, a crash model's); `None` for a backend that
    /// changes no local disk of its own. No default: each backend says.
    #[cfg(feature = "test-seams")]
    fn with_fs(&self, wrap: &dyn Fn(Arc<dyn Fs>) -> Arc<dyn Fs>) -> Option<Arc<dyn Backend>>;

    /// Replaces the stored bytes of an object, as a corrupt medium would;
    /// whether this backend can and there was such an object. No default.
    #[cfg(feature = "test-seams")]
    fn damage(&self, id: &ContentId, encoding: Encoding, bytes: &[u8]) -> bool;
}

/// What a backend that can read its objects back provides.
pub(crate) trait Reads {
    /// The object of this id: its location and encoding.
    fn locate(&self, id: &ContentId) -> Result<(PathBuf, Encoding), StoreError>;

    /// The one object whose id starts with `prefix` (not a full id).
    fn resolve_prefix(&self, prefix: &IdPrefix) -> Result<ContentId, StoreError>;

    /// Streams the one good object of this id through `f`, checked against
    /// its id; `f(None)` says to forget what a bad copy gave so far.
    fn scan_good(
        &self,
        id: &ContentId,
        f: &mut dyn FnMut(Option<&[u8]>),
    ) -> Result<StoredObject, StoreError>;

    /// Streams the copy `scan_good` found (`found`) again, checked again.
    fn rescan(
        &self,
        id: &ContentId,
        found: &StoredObject,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<StoredObject, StoreError>;

    /// Every object, without reading its contents.
    fn list(&self) -> Result<Vec<StoredObject>, StoreError>;
}

/// What a backend that can be kept (listed whole, verified, collected)
/// provides.
pub(crate) trait Maintain {
    /// Removes what dead writers left, older than `grace`.
    fn clean_temp(&self, grace: Duration) -> Result<usize, StoreError>;

    /// Re-hashes every object and sets corrupt ones aside.
    fn verify_all(
        &self,
        temp_grace: Duration,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<VerifyReport, StoreError>;

    /// Removes objects by age and quota.
    fn gc(
        &self,
        opts: &GcOptions,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<GcReport, StoreError>;

    /// Totals over the store.
    fn stats(&self) -> Result<Stats, StoreError>;
}
