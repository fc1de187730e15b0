//! `Spiller` and `Stage`: the policy applied to whole texts and to streams.

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyString};

use crate::errors;
use crate::json::{from_py, ser_to_py};
use crate::store::Store;

/// A validated policy over an open store.
#[pyclass(module = "spillway._spillway", frozen)]
pub struct Spiller {
    inner: spillway::Spiller,
}

impl Spiller {
    pub fn inner(&self) -> &spillway::Spiller {
        &self.inner
    }
}

#[pymethods]
impl Spiller {
    /// `config` holds the policy's config keys (as in the config file);
    /// `name_store` puts the store in the read hint, as the CLI does for a
    /// store that is not the default one.
    #[new]
    #[pyo3(signature = (store, config, name_store))]
    fn new(
        py: Python<'_>,
        store: PathBuf,
        config: &Bound<'_, PyDict>,
        name_store: bool,
    ) -> PyResult<Self> {
        let value = from_py(config.as_any())?;
        let config: spillway::PolicyConfig =
            serde_json::from_value(value).map_err(|e| errors::policy(py, e))?;
        // A budget too small is only known with the store (its name and
        // paths are in the notice); every other bad value is known now.
        if let Err(e) = config.build() {
            if !e.is_budget_too_small() {
                return Err(errors::policy(py, e));
            }
        }
        let store = py
            .detach(|| spillway::Store::open_url(&store.to_string_lossy()))
            .map_err(|e| errors::store(py, &e))?;
        // The command line's read hint, as the CLI gives it.
        let location = name_store.then(|| store.location().to_string());
        let hint = spillway_process::cli_read_hint(location.as_deref());
        let policy = config
            .build_for_store(&store, &hint)
            .map_err(|e| errors::policy(py, e))?;
        let inner = spillway::Spiller::new(policy, store).map_err(|e| errors::policy(py, e))?;
        Ok(Spiller { inner })
    }

    /// The policy in force, as config keys.
    fn policy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        ser_to_py(py, &self.inner.policy().to_config())
    }

    /// The store this spiller writes to.
    fn store(&self) -> Store {
        Store::from_inner(self.inner.store().clone())
    }

    /// Applies the policy to a whole text (str or bytes-like).
    fn apply<'py>(&self, py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let input = Input::extract(data)?;
        let bytes = input.bytes()?;
        let result = py.detach(|| self.inner.apply(bytes));
        finished(py, result)
    }

    /// A stage that takes the input in chunks.
    fn stage(&self) -> Stage {
        Stage {
            inner: Mutex::new(Some(self.inner.stage())),
        }
    }
}

/// A stream being measured, previewed and stored.
#[pyclass(module = "spillway._spillway", frozen)]
pub struct Stage {
    inner: Mutex<Option<spillway::Stage>>,
}

impl Stage {
    fn lock(&self) -> MutexGuard<'_, Option<spillway::Stage>> {
        // A panic while feeding cannot leave the stage half-updated in a
        // way that matters here: the next call sees a finished stage or
        // carries on.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn take(&self) -> Option<spillway::Stage> {
        self.lock().take()
    }
}

fn closed() -> PyErr {
    PyValueError::new_err("I/O operation on a finished stage")
}

#[pymethods]
impl Stage {
    /// Feeds a chunk (bytes-like); returns its length.
    fn write(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<usize> {
        if data.cast::<PyString>().is_ok() {
            return Err(PyTypeError::new_err(
                "a stage is a binary stream: write bytes, not str (encode it, or use Spiller.apply)",
            ));
        }
        let input = Input::extract(data)?;
        let bytes = input.bytes()?;
        py.detach(|| match self.lock().as_mut() {
            Some(stage) => {
                stage.feed(bytes);
                Ok(bytes.len())
            }
            None => Err(()),
        })
        .map_err(|()| closed())
    }

    /// Bytes fed so far.
    #[getter]
    fn bytes_written(&self) -> u64 {
        self.lock().as_ref().map_or(0, |s| s.bytes_written())
    }

    /// Whether `finish` or `abort` was called.
    #[getter]
    fn finished(&self) -> bool {
        self.lock().is_none()
    }

    /// Ends the input: stores it if it is over budget, returns the outcome.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let stage = self.take().ok_or_else(closed)?;
        let result = py.detach(move || stage.finish());
        finished(py, result)
    }

    /// Drops the stage without storing anything; its temp file is removed.
    fn abort(&self, py: Python<'_>) {
        let stage = self.take();
        py.detach(move || drop(stage));
    }
}

/// What `apply` and `write` accept, held so its bytes can be read without
/// the GIL.
pub enum Input<'py> {
    Bytes(Bound<'py, PyBytes>),
    Str(Bound<'py, PyString>, Option<Bound<'py, PyBytes>>),
    Owned(Vec<u8>),
}

impl<'py> Input<'py> {
    pub fn extract(data: &Bound<'py, PyAny>) -> PyResult<Self> {
        if let Ok(b) = data.cast::<PyBytes>() {
            return Ok(Input::Bytes(b.clone()));
        }
        if let Ok(s) = data.cast::<PyString>() {
            if s.to_str().is_ok() {
                return Ok(Input::Str(s.clone(), None));
            }
            // Text decoded with errors="surrogateescape" (os.fsdecode, a
            // subprocess's text mode with that handler) holds the original
            // bytes: give them back.
            let encoded = s.call_method1("encode", ("utf-8", "surrogateescape"))?;
            return Ok(Input::Str(s.clone(), Some(encoded.cast_into::<PyBytes>()?)));
        }
        if let Ok(b) = data.cast::<PyByteArray>() {
            return Ok(Input::Owned(b.to_vec()));
        }
        // Any other buffer (memoryview, array, mmap): copied once.
        match pyo3::buffer::PyBuffer::<u8>::get(data) {
            Ok(buf) => Ok(Input::Owned(buf.to_vec(data.py())?)),
            Err(_) => Err(PyTypeError::new_err(format!(
                "expected str or a bytes-like object, got {}",
                data.get_type().name()?
            ))),
        }
    }

    pub fn bytes(&self) -> PyResult<&[u8]> {
        Ok(match self {
            Input::Bytes(b) => b.as_bytes(),
            Input::Str(_, Some(b)) => b.as_bytes(),
            Input::Str(s, None) => s.to_str()?.as_bytes(),
            Input::Owned(v) => v,
        })
    }
}

/// An outcome as a dict shaped as `spillway apply --json`, the content
/// moved into a Python string once.
pub fn outcome_to_py<'py>(
    py: Python<'py>,
    mut o: spillway::Outcome,
) -> PyResult<Bound<'py, PyAny>> {
    let content = std::mem::take(&mut o.content);
    let dict = ser_to_py(py, &o)?;
    dict.set_item("content", PyString::new(py, &content))?;
    Ok(dict)
}

/// A finished stage's outcome, or `StoreError` carrying it.
pub fn finished<'py>(
    py: Python<'py>,
    result: Result<spillway::Outcome, spillway::FinishError>,
) -> PyResult<Bound<'py, PyAny>> {
    match result {
        Ok(o) => outcome_to_py(py, o),
        Err(e) => {
            let error = e.to_string();
            let kind = e.store_error().kind();
            let outcome = outcome_to_py(py, e.into_outcome())?;
            Err(errors::store_failed(py, error, kind, outcome))
        }
    }
}
