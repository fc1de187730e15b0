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
#![warn(rust_2018_idioms)]

#[cfg(not(unix))]
compile_error!(
    "spillway needs a unix system: its store relies on hard links, advisory locks \
     (flock), O_NOFOLLOW and directory fsync to publish objects atomically, privately \
     and durably"
);

pub mod json;
mod measure;
pub mod notice;
pub mod policy;
mod preview;
pub mod render;
pub mod salient;
pub mod stage;
pub mod store;
mod sys;
pub mod tokens;
pub mod units;

pub use json::{Format, JsonPointer, PointerError};
pub use notice::{NoticeTemplates, Template, TemplateError};
pub use policy::{
    Compression, Durability, OnStoreError, Policy, PolicyBuilder, PolicyConfig, PolicyError,
};
pub use render::Render;
pub use salient::{SalientError, SalientPatterns};
pub use tokens::Tokenizer;

pub use stage::{FinishError, Outcome, Spiller, Stage};
pub use store::{
    ByteRange, ContentId, Encoding, GcOptions, GcReport, GrepLine, GrepOptions, GrepPattern,
    GrepReport, IdError, IdPrefix, LineRange, Selection, Stats, Store, StoreError, StoreErrorKind,
    StoredObject, VerifyReport, WriteOptions,
};
pub use units::{ByteSize, HumanDuration, ParseUnitError};

#[cfg(feature = "s3")]
pub use store::S3Options;
pub use store::{default_store, DefaultStore, Location};
