//! The native half of spillway's Python package: a thin layer over the Rust
//! API. It takes and returns plain Python values (bytes, str, dicts shaped as
//! the CLI's JSON); `python/spillway` builds the public, typed API on top.
//!
//! Every call that hashes, compresses, writes or waits releases the GIL.

#![deny(missing_docs)]

mod errors;
mod json;
mod run;
mod spiller;
mod store;

use pyo3::prelude::*;

/// The module `spillway._spillway`.
#[pymodule]
fn _spillway(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<spiller::Spiller>()?;
    m.add_class::<spiller::Stage>()?;
    m.add_class::<store::Store>()?;
    m.add_class::<run::RunToken>()?;
    m.add_function(wrap_pyfunction!(run::run, m)?)?;
    m.add_function(wrap_pyfunction!(parse_size, m)?)?;
    m.add_function(wrap_pyfunction!(parse_duration, m)?)?;
    m.add_function(wrap_pyfunction!(default_store, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

/// A size as the CLI takes it (`65536`, `64KiB`, `1.5MB`), in bytes.
#[pyfunction]
fn parse_size(py: Python<'_>, text: &str) -> PyResult<u64> {
    text.parse::<spillway::ByteSize>()
        .map(|s| s.get())
        .map_err(|e| errors::policy(py, e))
}

/// The store to use when none is named, and whether the user chose it
/// (`SPILLWAY_STORE`); `None` when no variable says where.
#[pyfunction]
fn default_store() -> Option<(String, bool)> {
    spillway_process::default_store().map(|d| (d.location, d.chosen))
}

/// A duration as the CLI takes it (`90s`, `15m`, `7d`), in seconds.
#[pyfunction]
fn parse_duration(py: Python<'_>, text: &str) -> PyResult<f64> {
    text.parse::<spillway::HumanDuration>()
        .map(|d| d.get().as_secs_f64())
        .map_err(|e| errors::policy(py, e))
}
