//! The one conversion of the core's [`Error`] into Python exceptions: `memdedup.errors` classes
//! (looked up once, when the module is imported), `MemoryError`, and for an interrupted call the
//! exception its signal handler raised (`KeyboardInterrupt` for Ctrl-C).

use pyo3::exceptions::{PyKeyboardInterrupt, PyMemoryError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

use crate::error::Error;

static INVALID_INPUT: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static INPUT_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// Look up `memdedup.errors`' classes (at module import).
pub fn init(py: Python<'_>) -> PyResult<()> {
    let errors = py.import("memdedup.errors")?;
    for (slot, name) in [
        (&INVALID_INPUT, "InvalidInputError"),
        (&INPUT_TYPE, "InputTypeError"),
    ] {
        let class = errors.getattr(name)?.cast_into::<PyType>()?.unbind();
        let _ = slot.set(py, class);
    }
    Ok(())
}

fn class<'py>(py: Python<'py>, slot: &PyOnceLock<Py<PyType>>) -> Bound<'py, PyType> {
    match slot.get(py) {
        Some(class) => class.bind(py).clone(),
        // Unreachable once the module is imported (`init` runs first); a builtin base otherwise.
        None if std::ptr::eq(slot, &INPUT_TYPE) => py.get_type::<pyo3::exceptions::PyTypeError>(),
        None => py.get_type::<pyo3::exceptions::PyValueError>(),
    }
}

/// The core's error as a Python exception.
pub fn to_pyerr(py: Python<'_>, err: Error) -> PyErr {
    match err {
        Error::InvalidInput(msg) => PyErr::from_type(class(py, &INVALID_INPUT), msg),
        Error::WrongType(msg) => PyErr::from_type(class(py, &INPUT_TYPE), msg),
        Error::OutOfMemory(msg) => PyMemoryError::new_err(msg),
        // What interrupted the call is raised where that is known (`interrupt.rs`).
        Error::Interrupted => PyKeyboardInterrupt::new_err(()),
    }
}

/// `?` on a core result inside a binding: the same conversion ([`to_pyerr`]).
impl From<Error> for PyErr {
    fn from(err: Error) -> PyErr {
        Python::attach(|py| to_pyerr(py, err))
    }
}

/// `memdedup.errors.InvalidInputError(msg)`.
pub fn invalid(py: Python<'_>, msg: impl Into<String>) -> PyErr {
    to_pyerr(py, Error::InvalidInput(msg.into()))
}

/// `memdedup.errors.InputTypeError(msg)`.
pub fn wrong_type(py: Python<'_>, msg: impl Into<String>) -> PyErr {
    to_pyerr(py, Error::WrongType(msg.into()))
}

/// The name of `obj`'s type, for messages.
pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}
