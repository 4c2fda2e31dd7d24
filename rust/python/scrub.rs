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
use crate::scrub::memory::{code_point_spans, secret_bits as bits_of, secret_spans as spans_of};
use crate::scrub::{detector, Detector, KeyClass, Known};

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

/// The values other texts of a record gave: `(value, rule id, kind)` each.
fn known_values(det: &Detector, known: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<Known>> {
    let Some(known) = known else {
        return Ok(Vec::new());
    };
    let py = known.py();
    let mut out = Vec::new();
    for item in known.try_iter()? {
        let item = item?;
        let (value, rule, kind): (Bound<'_, PyAny>, String, String) = item
            .extract()
            .map_err(|_| wrong_type(py, "known holds (value, rule id, kind) tuples of str"))?;
        let rule = det
            .rule_index(&rule)
            .ok_or_else(|| invalid(py, "known names a rule the catalogue has not"))?;
        let kind = det
            .kind_index(&kind)
            .ok_or_else(|| invalid(py, "known names a kind the catalogue has not"))?;
        let value = with_bytes(as_str(&value, "a known value")?, |b| Ok(b.to_vec()))?;
        out.push(Known { value, rule, kind });
    }
    Ok(out)
}

/// Every credential in `text`: `(start, end, rule id, kind)` with code-point offsets, non-overlapping,
/// sorted. `pii` adds the e-mail and phone rules. Every copy of a value found is redacted too, and every
/// copy of the `known` values (`(value, rule id, kind)`: what the other texts of the same record gave).
#[pyfunction]
#[pyo3(signature = (text, pii = false, known = None))]
fn scan_secrets(
    py: Python<'_>,
    text: &Bound<'_, PyAny>,
    pii: bool,
    known: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<Found>> {
    let det = the_detector()?;
    let (ids, kinds) = names(py, det);
    let known = known_values(det, known)?;
    with_bytes(as_str(text, "text")?, |bytes| {
        let mut found = det.scan_with(bytes, pii, &known, &mut || py.check_signals())?;
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

/// How a key names a credential: `(kind, weak)`, or None (see `KeyPolicy::classify_key`).
#[pyfunction]
fn credential_key_class(name: &Bound<'_, PyAny>) -> PyResult<Option<(&'static str, bool)>> {
    let det = the_detector()?;
    with_bytes(as_str(name, "name")?, |bytes| {
        Ok(det
            .keys()
            .classify_key(bytes)
            .map(|h| (h.class.name(), h.weak)))
    })
}

/// Whether a value looks random enough for a weak key (`ValuePolicy::looks_random`).
#[pyfunction]
fn credential_value_random(value: &Bound<'_, PyAny>) -> PyResult<bool> {
    let det = the_detector()?;
    with_bytes(as_str(value, "value")?, |bytes| {
        Ok(det.values().looks_random(bytes))
    })
}

/// The estimated bits of a value a store may remember (0.0: never): `memory.rs secret_bits`.
#[pyfunction]
fn secret_bits(value: &Bound<'_, PyAny>) -> PyResult<f64> {
    with_bytes(as_str(value, "value")?, |bytes| Ok(bits_of(bytes)))
}

/// The spans of `text` a remembered value could occupy: code-point `(start, end)` pairs whose length and
/// estimate are one of `shapes`' pairs (`memory.rs secret_spans`). `shapes` is packed, 12 bytes a
/// pair: the length (u32) and the estimate (f64), little-endian (`struct.pack("<Id", ...)`): a store
/// looks up every text it writes, and a packed table is not converted object by object each time.
#[pyfunction]
fn secret_spans(
    text: &Bound<'_, PyAny>,
    shapes: &Bound<'_, PyAny>,
) -> PyResult<Vec<(usize, usize)>> {
    let py = text.py();
    let packed = shapes
        .cast::<PyBytes>()
        .map_err(|_| wrong_type(py, "shapes must be bytes"))?
        .as_bytes();
    if packed.len() % 12 != 0 {
        return Err(invalid(py, "shapes must be 12-byte (u32, f64) records"));
    }
    let shapes: Vec<(usize, f64)> = packed
        .chunks_exact(12)
        .map(|r| {
            let mut n = [0u8; 4];
            let mut b = [0u8; 8];
            n.copy_from_slice(&r[..4]);
            b.copy_from_slice(&r[4..]);
            (u32::from_le_bytes(n) as usize, f64::from_le_bytes(b))
        })
        .collect();
    with_bytes(as_str(text, "text")?, |bytes| {
        Ok(code_point_spans(bytes, &spans_of(bytes, &shapes)))
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
    m.add_function(wrap_pyfunction!(credential_key_class, m)?)?;
    m.add_function(wrap_pyfunction!(credential_value_random, m)?)?;
    m.add_function(wrap_pyfunction!(secret_bits, m)?)?;
    m.add_function(wrap_pyfunction!(secret_spans, m)?)?;
    Ok(())
}
