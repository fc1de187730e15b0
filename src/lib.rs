//! # spillway
//!
//! The output spill and truncation stage of an AI agent harness. It sits
//! after a tool's result is rendered and before the result becomes durable,
//! and in one streaming pass:
//!
//! * measures the text against a budget (bytes, and optionally lines);
//! * passes it through unchanged when it fits;
//! * otherwise stores the full output once in a private, content-addressed
//!   [`Store`] (BLAKE3 ids, optional zstd, crash-safe publish), and replaces it
//!   with a bounded preview: a line-aware head, a notice that says exactly what
//!   was omitted and how to read it, and the tail, where errors usually are.
//!
//! ```
//! use std::io::Write;
//! use spillway::{Policy, Selection, Spiller, Store};
//!
//! let dir = tempfile::tempdir()?;
//! let policy = Policy::builder().max_inline_bytes(2048).build()?;
//! let spiller = Spiller::new(policy, Store::open(dir.path())?)?;
//!
//! let mut stage = spiller.stage();
//! for i in 1..=5000 {
//!     writeln!(stage, "compiling crate {i}")?;
//! }
//! writeln!(stage, "error[E0308]: mismatched types")?;
//! let outcome = stage.finish()?;
//!
//! assert!(outcome.spilled);
//! assert!(outcome.content.len() <= 2048);
//! assert!(outcome.content.ends_with("error[E0308]: mismatched types\n"));
//! assert!(outcome.content.contains("omitted lines"));
//!
//! // The full output is stored once, and reads back exactly.
//! let spill = outcome.spill.unwrap();
//! let full = spiller.store().read(&spill.id, &Selection::All)?;
//! assert_eq!(full.len() as u64, outcome.total_bytes);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The pieces, in the order data flows through them: [`Policy`] (the budget
//! and rules), [`Stage`] (the streaming `io::Write`), the preview rules (see
//! [`Outcome`]), and the [`Store`].

#![deny(missing_docs)]
#![deny(unsafe_code)]
#![warn(rust_2018_idioms)]

#[cfg(not(unix))]
compile_error!(
    "spillway needs a unix system: its store relies on hard links, advisory locks \
     (flock), O_NOFOLLOW and directory fsync to publish objects atomically, privately \
     and durably"
);

// One path per public type: the modules are private, and everything public
// is re-exported here, in the order data flows.
mod json;
mod measure;
mod notice;
mod offload;
mod outcome;
mod policy;
mod preview;
mod render;
mod ring;
mod salient;
mod stage;
mod store;
mod storing;
// The few system calls the store needs; with the render's AVX-512 blocks
// (`render/vector.rs`), the places of the core allowed `unsafe` (each block
// says why it is sound).
#[allow(unsafe_code)]
mod sys;
mod threads;
mod tokens;
mod units;
mod word;

pub use policy::{
    Compression, CompressionKind, NoticeConfig, OnStoreError, Policy, PolicyBuilder, PolicyConfig,
    PolicyError, DEFAULT_HEAD_PERCENT, DEFAULT_MAX_INLINE_BYTES, DEFAULT_MAX_SPILL_BYTES,
    DEFAULT_ZSTD_LEVEL, MAX_INLINE_BYTES_LIMIT, MAX_SPILL_BYTES_LIMIT,
};
pub use units::{ByteSize, HumanDuration, ParseUnitError};

pub use json::{Format, JsonPointer, PointerError};
pub use notice::{
    shell_quote, NoticeTemplates, ReadHint, Template, TemplateError, MAX_ERROR_BYTES, SHORT_ID_LEN,
};
pub use render::Render;
pub use salient::{
    SalientError, SalientPattern, SalientPatterns, SalientRank, DEFAULT_SALIENT,
    DEFAULT_SALIENT_PERCENT,
};
pub use store::{Fs, RealFs};
pub use threads::Parallelism;
pub use tokens::Tokenizer;

pub use outcome::{ContentFormat, Outcome, StoreFailure, TokenCount};
pub use stage::{FinishError, Spiller, Stage};

#[cfg(feature = "s3")]
pub use store::S3Options;
pub use store::{
    ByteRange, ContentId, CorruptObject, Durability, Encoding, GcOptions, GcReport, GrepLine,
    GrepOptions, GrepPattern, GrepReport, IdError, IdPrefix, LineRange, Location, Misplaced,
    ObjectWriter, Page, PatternError, RangeError, ReadReport, References, Selection, SpillSink,
    SpillWriter, Stats, Store, StoreError, StoreErrorKind, StoredObject, VerifyReport,
    WriteOptions, DEFAULT_TEMP_GRACE, LAYOUT_VERSION, MAX_MATCHED_LINE, MAX_OBJECT_BYTES,
    MIN_PREFIX_DIGITS, ZSTD_SUFFIX,
};
/// The store's test seams: fault injection and the crash model (the
/// `test-seams` feature; not public API).
#[cfg(feature = "test-seams")]
pub use store::{CrashKind, CrashModel, FaultPlan, FaultPoint};
