//! The native half of spillway's Node.js package: a thin layer over the Rust
//! API. Everything that hashes, compresses, writes, fsyncs or reads runs on
//! libuv's thread pool (`AsyncTask`), never on the event loop. The package's
//! JavaScript (`lib/`) gives the public API: options in camelCase, errors
//! with stable codes, a `Writable` adapter for stages.

#![deny(missing_docs)]

mod errors;
mod outcome;
mod spiller;
mod store;

pub use outcome::{JsFailure, JsOutcome, JsStoredObject, StageResult};
pub use spiller::{NativeSpiller, NativeStage};
pub use store::{default_store, parse_duration, parse_size, JsDefaultStore, NativeStore};
