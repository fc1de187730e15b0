//! Rust errors as the Python package's exceptions (`spillway._errors`), each
//! carrying the Rust message and, where there is one, the error's kind and
//! the outcome it hands back.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyString, PyType};

static POLICY: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static STORE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static ID: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static RANGE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

fn raise(
    py: Python<'_>,
    cell: &'static PyOnceLock<Py<PyType>>,
    name: &str,
    message: String,
    attrs: &[(&str, Bound<'_, PyAny>)],
) -> PyErr {
    let made = (|| -> PyResult<PyErr> {
        let class = cell.import(py, "spillway._errors", name)?;
        let err = class.call1((message,))?;
        for (k, v) in attrs {
            err.setattr(*k, v)?;
        }
        Ok(PyErr::from_value(err))
    })();
    made.unwrap_or_else(|e| e)
}

/// A policy value was refused (`spillway.PolicyError`).
pub fn policy(py: Python<'_>, message: impl ToString) -> PyErr {
    raise(py, &POLICY, "PolicyError", message.to_string(), &[])
}

/// The store failed (`spillway.StoreError`), with its kind.
pub fn store(py: Python<'_>, e: &spillway::StoreError) -> PyErr {
    let kind = PyString::new(py, e.kind().name()).into_any();
    raise(py, &STORE, "StoreError", e.to_string(), &[("kind", kind)])
}

/// A stage could not store its output and the policy says `fail`: a
/// `StoreError` whose `outcome` is the bounded preview.
pub fn store_failed(
    py: Python<'_>,
    message: String,
    kind: spillway::StoreErrorKind,
    outcome: Bound<'_, PyAny>,
) -> PyErr {
    let kind = PyString::new(py, kind.name()).into_any();
    raise(
        py,
        &STORE,
        "StoreError",
        message,
        &[("kind", kind), ("outcome", outcome)],
    )
}

/// A content id or id prefix did not parse (`spillway.IdError`).
pub fn id(py: Python<'_>, message: impl ToString) -> PyErr {
    raise(py, &ID, "IdError", message.to_string(), &[])
}

/// A range did not parse (`spillway.RangeError`).
pub fn range(py: Python<'_>, message: impl ToString) -> PyErr {
    raise(py, &RANGE, "RangeError", message.to_string(), &[])
}
