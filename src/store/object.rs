//! What the store writes and what it reports: an object's encoding, the
//! settings of one write, and the one description of a stored object.

use std::path::PathBuf;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::{ContentId, ZSTD_SUFFIX};

/// How an object's bytes are kept on disk. The file name says which: a
/// zstd object's name ends in `.zst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Encoding {
    /// Exactly the stored bytes.
    Raw,
    /// zstd frames plus a size trailer (the byte-by-byte format is
    /// documented in the store's source, `src/store/mod.rs`).
    Zstd,
}

impl Encoding {
    /// Every encoding, in the order reads look for them.
    pub const ALL: [Encoding; 2] = [Encoding::Raw, Encoding::Zstd];

    /// `"none"` or `"zstd"`, as in JSON output.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Raw => "none",
            Encoding::Zstd => "zstd",
        }
    }

    /// The file name suffix.
    pub(crate) fn suffix(self) -> &'static str {
        match self {
            Encoding::Raw => "",
            Encoding::Zstd => ZSTD_SUFFIX,
        }
    }
}

impl Serialize for Encoding {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// When a stored object is durable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Durability {
    /// The object is fsynced, published and its directory fsynced before
    /// `finish()` returns, so a session log written afterwards never points
    /// at a lost object. The default.
    #[default]
    Durable,
    /// No fsync: faster, but a power loss may lose recent objects. A crash of
    /// the process alone loses nothing that was published.
    Relaxed,
}

/// The settings of one write: the encoding, the zstd level (which only the
/// writer knows: it is not recorded in the object), and durability.
///
/// # Examples
///
/// ```
/// use spillway::{Durability, Encoding, WriteOptions};
/// let opts = WriteOptions::zstd(3).durability(Durability::Relaxed);
/// assert_eq!(opts.encoding(), Encoding::Zstd);
/// assert_eq!(opts.level(), 3);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteOptions {
    encoding: Encoding,
    level: i32,
    durability: Durability,
}

impl WriteOptions {
    /// Raw objects, durable.
    pub const fn raw() -> Self {
        WriteOptions {
            encoding: Encoding::Raw,
            level: 0,
            durability: Durability::Durable,
        }
    }

    /// zstd objects at `level`, durable. The policy validates levels; the
    /// store passes the level to zstd as it is.
    pub const fn zstd(level: i32) -> Self {
        WriteOptions {
            encoding: Encoding::Zstd,
            level,
            durability: Durability::Durable,
        }
    }

    /// The same options with another durability.
    #[must_use]
    pub const fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// The encoding.
    pub const fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// The zstd level (0 for raw objects).
    pub const fn level(&self) -> i32 {
        self.level
    }

    /// The durability.
    pub const fn durability_mode(&self) -> Durability {
        self.durability
    }
}

/// A stored object, as a write, a dedup hit, a listing or a verification
/// reports it. Serialized, its fields are the `spill` object of
/// `spillway apply --json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct StoredObject {
    /// Its id.
    pub id: ContentId,
    /// Its file.
    pub path: PathBuf,
    /// Its uncompressed size.
    pub bytes: u64,
    /// Its size on disk.
    pub stored_bytes: u64,
    /// How it is kept on disk (`"compression": "none" | "zstd"` in JSON).
    #[serde(rename = "compression")]
    pub encoding: Encoding,
    /// Whether it holds less than the output it was stored for (the stage's
    /// `max_spill_bytes`). The store alone never truncates, so what it
    /// reports by itself says `false`.
    pub truncated: bool,
    /// Whether this write found the object already stored, so nothing new
    /// was written. `false` in listings.
    pub dedup: bool,
    /// When it was last written or reused: listings and verification say;
    /// a write leaves it `None`, so that the same write gives the same
    /// outcome.
    #[serde(skip)]
    pub modified: Option<SystemTime>,
}
