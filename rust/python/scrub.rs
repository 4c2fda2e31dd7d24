//! The Python binding of the credential detector (`crate::scrub`): it converts and calls, nothing else.
//! Only pyo3's safe API is used here.
//!
//! A `str` reaches the core as its UTF-8 (borrowed from CPython's cache, no copy) or, when it holds lone
//! surrogates, as `str.encode(text, "utf-8", "surrogatepass")` (WTF-8; the unbound `str.encode`, so a
//! subclass's override is never called). Spans come back as code-point offsets. A scan checks for
//! Ctrl-C between rules.

use pyo3::exceptions::PyRuntimeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyString};

use super::error::{invalid, wrong_type};
use crate::scrub::{detector, Detector, KeyClass};

/// The detector; a catalogue that does not build is a bug of this package (the catalogue is tested
/// by `cargo test`), not of the input, hence `RuntimeError`.
fn the_detector() -> PyResult<&'static Detector> {
    detector().map_err(|e| {
        PyRuntimeError::new_err(format!("the credential catalogue did not build: {e}"))
    })
}

fn as_str<'a, 'py>(value: &'a Bound<'py, PyAny>, what: &str) -> PyResult<&'a Bound<'py, PyString>> {
    // The message names no type: a type's name is as attacker-chosen as any other string.
    value
        .cast::<PyString>()
        .map_err(|_| wrong_type(value.py(), format!("{what} must be a str")))
}

/// Run `f` on the UTF-8 (or WTF-8) bytes of `text`.
fn with_bytes<R>(text: &Bound<'_, PyString>, f: impl FnOnce(&[u8]) -> PyResult<R>) -> PyResult<R> {
    match text.to_str() {
        Ok(s) => f(s.as_bytes()),
        Err(_) => {
            let py = text.py();
            let encoded = py.get_type::<PyString>().call_method1(
                intern!(py, "encode"),
                (text, intern!(py, "utf-8"), intern!(py, "surrogatepass")),
            )?;
            let bytes = encoded
                .cast::<PyBytes>()
                .map_err(|_| wrong_type(py, "str.encode returned no bytes"))?;
            f(bytes.as_bytes())
        }
    }
}

/// The rule ids and kind names as Python strings, made once: a text with thousands of findings
/// shares them rather than allocating two strings per finding.
type Names = (Vec<Py<PyString>>, Vec<Py<PyString>>);
static NAMES: PyOnceLock<Names> = PyOnceLock::new();

fn names<'py>(py: Python<'py>, det: &Detector) -> &'py Names {
    NAMES.get_or_init(py, || {
        let ids = det
            .rules()
            .iter()
            .map(|r| PyString::new(py, &r.id).unbind())
            .collect();
        let kinds = det
            .kinds()
            .iter()
            .map(|k| PyString::new(py, k).unbind())
            .collect();
        (ids, kinds)
    })
}

/// One finding as Python sees it.
type Found = (usize, usize, Py<PyString>, Py<PyString>);

/// Every credential in `text`: `(start, end, rule id, kind)` with code-point offsets, non-overlapping,
/// sorted. `pii` adds the e-mail and phone rules.
#[pyfunction]
#[pyo3(signature = (text, pii = false))]
fn scan_secrets(py: Python<'_>, text: &Bound<'_, PyAny>, pii: bool) -> PyResult<Vec<Found>> {
    let det = the_detector()?;
    let (ids, kinds) = names(py, det);
    with_bytes(as_str(text, "text")?, |bytes| {
        let mut found = det.scan(bytes, pii, &mut || py.check_signals())?;
        Detector::to_code_points(bytes, &mut found);
        Ok(found
            .iter()
            .map(|f| {
                (
                    f.start,
                    f.end,
                    ids[f.rule].clone_ref(py),
                    kinds[f.kind].clone_ref(py),
                )
            })
            .collect())
    })
}

/// The kind of a credential-named key (PASSWORD, PIN, TOKEN, API_KEY, SECRET), or None.
#[pyfunction]
fn credential_key_kind(name: &Bound<'_, PyAny>) -> PyResult<Option<&'static str>> {
    let det = the_detector()?;
    with_bytes(as_str(name, "name")?, |bytes| {
        Ok(det.keys().classify(bytes).map(KeyClass::name))
    })
}

/// The words a key name is judged by.
#[pyfunction]
fn credential_key_words(name: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    let det = the_detector()?;
    with_bytes(as_str(name, "name")?, |bytes| Ok(det.keys().words(bytes)))
}

/// Whether a credential-named key of `kind` keeps `value` (`quoted`: written as a string).
#[pyfunction]
fn credential_value_kept(kind: &str, value: &Bound<'_, PyAny>, quoted: bool) -> PyResult<bool> {
    let det = the_detector()?;
    let class =
        KeyClass::parse(kind).map_err(|_| invalid(value.py(), "kind must be a key kind"))?;
    with_bytes(as_str(value, "value")?, |bytes| {
        Ok(det.values().kept(class, bytes, quoted))
    })
}

/// Each rule's id, the longest match its pattern describes and, for a near rule, the longest match of
/// its near pattern (bytes): the pure-Python mirror must bound its searches by the same widths.
#[pyfunction]
fn secret_rule_widths() -> PyResult<Vec<(&'static str, usize, Option<usize>)>> {
    let det = the_detector()?;
    Ok(det
        .rules()
        .iter()
        .map(|r| {
            (
                r.id.as_str(),
                r.max_width,
                r.near.as_ref().map(|n| n.max_width),
            )
        })
        .collect())
}

/// Add the detector's functions to `memdedup._core`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(scan_secrets, m)?)?;
    m.add_function(wrap_pyfunction!(credential_key_kind, m)?)?;
    m.add_function(wrap_pyfunction!(credential_key_words, m)?)?;
    m.add_function(wrap_pyfunction!(credential_value_kept, m)?)?;
    m.add_function(wrap_pyfunction!(secret_rule_widths, m)?)?;
    Ok(())
}
