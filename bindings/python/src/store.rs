//! `Store`: reading, resolving, verifying and collecting stored objects.

use std::path::PathBuf;
use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors;
use crate::json::ser_to_py;
use spillway::References;
use spillway::{ContentId, GcOptions, IdPrefix, Selection};

/// An open spill store.
#[pyclass(module = "spillway._spillway", frozen)]
pub struct Store {
    inner: spillway::Store,
}

impl Store {
    pub fn from_inner(inner: spillway::Store) -> Self {
        Store { inner }
    }

    fn id(&self, py: Python<'_>, text: &str) -> PyResult<ContentId> {
        if let Ok(id) = text.parse::<ContentId>() {
            return Ok(id);
        }
        let prefix: IdPrefix = text.parse().map_err(|e| errors::id(py, e))?;
        py.detach(|| self.inner.resolve(&prefix))
            .map_err(|e| errors::store(py, &e))
    }
}

pub fn seconds(what: &str, s: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(s).map_err(|_| {
        PyValueError::new_err(format!(
            "{what} must be a finite number of seconds, 0 or more; got {s}"
        ))
    })
}

#[pymethods]
impl Store {
    /// Opens (creating it, private) the store at `path`.
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let inner = py
            .detach(|| spillway::Store::open_url(&path.to_string_lossy()))
            .map_err(|e| errors::store(py, &e))?;
        Ok(Store { inner })
    }

    /// The store's directory, or its `s3://` URL (as text: a path would
    /// fold the URL's `//`).
    #[getter]
    fn root(&self) -> String {
        self.inner.location().to_string()
    }

    /// The full id of the one object whose id starts with `prefix`.
    fn resolve(&self, py: Python<'_>, prefix: &str) -> PyResult<String> {
        Ok(self.id(py, prefix)?.to_string())
    }

    /// An object's bytes, all of them or a range (`lines="A:B"` or
    /// `bytes="A:B"`, as `spillway show` takes them), verified.
    #[pyo3(signature = (id, lines=None, bytes=None))]
    fn read<'py>(
        &self,
        py: Python<'py>,
        id: &str,
        lines: Option<&str>,
        bytes: Option<&str>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let sel = match (lines, bytes) {
            (Some(_), Some(_)) => {
                return Err(errors::range(py, "give lines or bytes, not both"));
            }
            (Some(l), None) => Selection::Lines(l.parse().map_err(|e| errors::range(py, e))?),
            (None, Some(b)) => Selection::Bytes(b.parse().map_err(|e| errors::range(py, e))?),
            (None, None) => Selection::All,
        };
        let id = self.id(py, id)?;
        let data = py
            .detach(|| self.inner.read(&id, &sel))
            .map_err(|e| errors::store(py, &e))?;
        Ok(PyBytes::new(py, &data))
    }

    /// Every object, as `spillway ls --json` lists them (without ages).
    fn list<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let objects = py
            .detach(|| self.inner.list())
            .map_err(|e| errors::store(py, &e))?;
        ser_to_py(py, &objects)
    }

    /// Re-hashes every object; corrupt ones are quarantined.
    #[pyo3(signature = (grace_seconds))]
    fn verify<'py>(&self, py: Python<'py>, grace_seconds: f64) -> PyResult<Bound<'py, PyAny>> {
        let grace = seconds("grace", grace_seconds)?;
        let report = py
            .detach(|| self.inner.verify_all(grace, &mut |_, _| {}))
            .map_err(|e| errors::store(py, &e))?;
        ser_to_py(py, &report)
    }

    /// Removes objects by quota and age, keeping those `keep_texts` refer to.
    #[pyo3(signature = (max_bytes, max_age_seconds, keep_texts, dry_run, grace_seconds))]
    fn gc<'py>(
        &self,
        py: Python<'py>,
        max_bytes: Option<u64>,
        max_age_seconds: Option<f64>,
        keep_texts: Vec<String>,
        dry_run: bool,
        grace_seconds: f64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut opts = GcOptions::default();
        opts.max_bytes = max_bytes;
        opts.max_age = max_age_seconds.map(|s| seconds("max_age", s)).transpose()?;
        let mut keep = References::default();
        for text in &keep_texts {
            keep.add_text(text);
        }
        opts.keep = keep;
        opts.dry_run = dry_run;
        opts.temp_grace = seconds("grace", grace_seconds)?;
        let report = py
            .detach(|| self.inner.gc(&opts, &mut |_, _| {}))
            .map_err(|e| errors::store(py, &e))?;
        ser_to_py(py, &report)
    }

    /// Totals over the store.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let stats = py
            .detach(|| self.inner.stats())
            .map_err(|e| errors::store(py, &e))?;
        let dict = ser_to_py(py, &stats)?;
        dict.set_item("ratio", stats.ratio())?;
        Ok(dict)
    }
}
