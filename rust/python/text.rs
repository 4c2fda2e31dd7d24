//! Labels and strs from Python as the core's texts, and back.
//!
//! A label is coerced as the contract coerces it, `str(label or "")`: the label's own `__bool__`
//! (or `__len__`) and `__str__` are called. When `str()` gives an exact str, the core normalises it
//! (lower-casing below 256 in Rust, above it as Python lower-cases each code point). When it gives
//! a str subclass, that subclass's `lower()` and `split()` are the contract's, so
//! `" ".join(x.lower().split())` is evaluated by Python (its result is always an exact str) and
//! only the final `rstrip(".!?;:,")` is left to the core.

use std::cell::{Cell, RefCell};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyFloat, PyString};

use super::ffi;
use crate::alloc::copy_of;
use crate::lower::{lower_wide, lowered_of, Lowered};
use crate::matcher::{BSide, ByteRemap, Matcher};
use crate::normalise::{collapse_lowered, normalise_ascii, normalise_latin1, TERMINAL_PUNCTUATION};
use crate::text::Text;

/// A sequence longer than this is refused: the core's indices are `u32`.
pub const MAX_LEN: usize = u32::MAX as usize - 1;

thread_local! {
    /// Whether the call on this thread reads a missing value as the empty label (see
    /// [`MissingAsEmpty`]).
    static MISSING_AS_EMPTY: Cell<bool> = const { Cell::new(false) };
}

/// For the lifetime of the guard, [`label_str`] on this thread reads a missing value (`None`, a
/// float NaN, numpy's NaN, `pd.NA`, `pd.NaT`: `memdedup.missing.is_missing`, the rule's one owner)
/// as `""`: the extended API's rule. Without it a label is the contract's `str(label or "")`,
/// where a float NaN is the label `"nan"` (the drop-in's, symfonic's). Labels are read with the
/// GIL on the calling thread, so a call-scoped flag reaches every read of the call; the guard
/// restores the caller's setting, so a label's `__str__` calling memdedup again cannot change it.
pub struct MissingAsEmpty(bool);

impl MissingAsEmpty {
    pub fn set(on: bool) -> MissingAsEmpty {
        MissingAsEmpty(MISSING_AS_EMPTY.with(|flag| flag.replace(on)))
    }
}

impl Drop for MissingAsEmpty {
    fn drop(&mut self) {
        MISSING_AS_EMPTY.with(|flag| flag.set(self.0));
    }
}

static IS_MISSING: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// `memdedup.missing.is_missing(label)` for a label that is not a str (a float is decided here).
fn is_missing(label: &Bound<'_, PyAny>) -> PyResult<bool> {
    if let Ok(f) = label.cast::<PyFloat>() {
        return Ok(f.value().is_nan());
    }
    let py = label.py();
    let rule = IS_MISSING.get_or_try_init(py, || {
        py.import("memdedup.missing")?
            .getattr("is_missing")
            .map(Bound::unbind)
    })?;
    rule.bind(py).call1((label,))?.is_truthy()
}

/// `str(label or "")`, as the contract coerces a label (a str subclass when its `__str__` gives
/// one); `""` for a missing value inside a [`MissingAsEmpty`] call.
pub fn label_str<'py>(label: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyString>> {
    if let Ok(s) = label.cast_exact::<PyString>() {
        return Ok(s.clone());
    }
    if MISSING_AS_EMPTY.with(Cell::get) && !label.is_instance_of::<PyString>() && is_missing(label)?
    {
        return Ok(PyString::new(label.py(), ""));
    }
    if !label.is_truthy()? {
        return Ok(PyString::new(label.py(), ""));
    }
    label.str()
}

/// Refuse a text the core cannot index (its positions are `u32`).
pub fn check_len(py: Python<'_>, len: usize) -> PyResult<()> {
    if len > MAX_LEN {
        return Err(super::error::invalid(
            py,
            format!("a text of {len} code points is longer than memdedup takes (2**32 - 2)"),
        ));
    }
    Ok(())
}

/// The code points of a str, lone surrogates included.
pub fn text_of(s: &Bound<'_, PyString>) -> PyResult<Text> {
    check_len(s.py(), s.len()?)?;
    if let Some(bytes) = ffi::latin1_of(s) {
        return Ok(Text::Narrow(copy_of(bytes)?));
    }
    if let Some(bytes) = ffi::ascii_of(s.as_any()) {
        return Ok(Text::Narrow(copy_of(bytes)?));
    }
    let mut cps = Vec::new();
    ffi::codepoints_into(s, &mut cps)?;
    Ok(Text::from_codepoint_vec(cps)?)
}

/// A str of a text's code points, lone surrogates included.
pub fn to_pystring<'py>(py: Python<'py>, text: &Text) -> PyResult<Bound<'py, PyString>> {
    match text {
        Text::Narrow(bytes) => ffi::str_from_latin1(py, bytes),
        Text::Wide(cps) => ffi::str_from_codepoints(py, cps),
    }
}

/// A label normalised: `" ".join(str(label or "").lower().split()).rstrip(".!?;:,")`.
pub fn normalised(label: &Bound<'_, PyAny>) -> PyResult<Text> {
    normalise_str(&label_str(label)?)
}

/// `" ".join(s.lower().split()).rstrip(".!?;:,")` of a str given by `str()`.
pub fn normalise_str(s: &Bound<'_, PyString>) -> PyResult<Text> {
    if !s.is_exact_instance_of::<PyString>() {
        return normalise_subclass(s);
    }
    check_len(s.py(), s.len()?)?;
    if let Some(bytes) = ffi::latin1_of(s) {
        let mut out = Vec::new();
        if !normalise_ascii(bytes, &mut out)? {
            // Every code point below 256: lower-cased exactly in Rust.
            normalise_latin1(bytes, &mut out)?;
        }
        return Ok(Text::Narrow(out));
    }
    if let Some(bytes) = ffi::ascii_of(s.as_any()) {
        let mut out = Vec::new();
        normalise_ascii(bytes, &mut out)?;
        return Ok(Text::Narrow(out));
    }
    let mut cps = Vec::new();
    ffi::codepoints_into(s, &mut cps)?;
    if cps.iter().all(|&c| c < 256) {
        let mut bytes = crate::alloc::with_capacity(cps.len())?;
        bytes.extend(cps.iter().map(|&c| c as u8));
        drop(cps);
        let mut out = Vec::new();
        normalise_latin1(&bytes, &mut out)?;
        return Ok(Text::Narrow(out));
    }
    // Lower-cased into a buffer of its own, then collapsed back into `cps` (reused: each of these
    // is as large as the text, so no third one is made).
    let mut lowered = Vec::new();
    if lower_codepoints(s.py(), &cps, &mut lowered)? {
        collapse_lowered(&lowered, &mut cps)?;
        drop(lowered);
        return Ok(Text::from_codepoint_vec(cps)?);
    }
    drop((cps, lowered));
    // Only Python's own `lower` of the whole text is exact (final sigma, ...). An interned name:
    // CPython's method cache is keyed by interned names (a fresh "lower" string made every such
    // label's lookup walk the type's dict).
    let lower = s.call_method0(pyo3::intern!(s.py(), "lower"))?;
    Ok(text_of(&lower.cast_into::<PyString>()?)?.collapse_lowered()?)
}

/// The contract on a str subclass: its own `lower()`, then `split()` of what that gives, joined
/// by Python (an exact str), and the final strip here.
fn normalise_subclass(s: &Bound<'_, PyString>) -> PyResult<Text> {
    let py = s.py();
    let split = s
        .call_method0(pyo3::intern!(py, "lower"))?
        .call_method0(pyo3::intern!(py, "split"))?;
    let joined = pyo3::intern!(py, " ").call_method1(pyo3::intern!(py, "join"), (split,))?;
    let joined = joined.cast_into::<PyString>()?;
    check_len(py, joined.len()?)?;
    let mut cps = Vec::new();
    ffi::codepoints_into(&joined, &mut cps)?;
    // `rstrip(".!?;:,")` only: what `split()` gave is not split again.
    while cps.last().is_some_and(|c| TERMINAL_PUNCTUATION.contains(c)) {
        cps.pop();
    }
    Ok(Text::from_codepoint_vec(cps)?)
}

/// `chr(c).lower()`, asked of Python.
fn lower_by_python(py: Python<'_>, c: u32) -> PyResult<Option<Lowered>> {
    let lowered = ffi::str_of_char(py, c)?.call_method0(pyo3::intern!(py, "lower"))?;
    let mut cps = Vec::new();
    ffi::codepoints_into(lowered.cast::<PyString>()?, &mut cps)?;
    Ok(lowered_of(&cps))
}

/// `str.lower()` of code points, each above 255 as Python lower-cases it alone (see
/// [`crate::lower`]); false when only Python's `lower` of the whole text is exact.
pub fn lower_codepoints(py: Python<'_>, cps: &[u32], out: &mut Vec<u32>) -> PyResult<bool> {
    lower_wide(cps, out, |c| lower_by_python(py, c))
}

/// Per-thread buffers for the one-pair calls: once warm, a call on labels Rust can lower-case
/// allocates nothing.
#[derive(Default)]
pub struct PairScratch {
    pub codepoints: Vec<u32>,
    pub lowered: Vec<u32>,
    pub a: Vec<u8>,
    pub b: Vec<u8>,
    pub side: BSide<u8>,
    pub wide_a: Vec<u32>,
    pub wide_b: Vec<u32>,
    pub wide_side: BSide<u32>,
    pub remap: ByteRemap,
    pub matcher: Matcher,
    pub decider: crate::contract::PairDecider,
}

thread_local! {
    static SCRATCH: RefCell<PairScratch> = RefCell::new(PairScratch::default());
    static MATCHER: RefCell<Matcher> = RefCell::new(Matcher::new());
}

/// Run `f` on this thread's scratch buffers; None when a re-entrant call already holds them (the
/// caller then takes its general path).
pub fn with_scratch<R>(
    f: impl FnOnce(&mut PairScratch) -> PyResult<Option<R>>,
) -> PyResult<Option<R>> {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut s) => f(&mut s),
        Err(_) => Ok(None),
    })
}

/// Run `f` with this thread's matcher (a fresh one if a re-entrant call already holds it).
pub fn with_matcher<R>(f: impl FnOnce(&mut Matcher) -> R) -> R {
    MATCHER.with(|cell| match cell.try_borrow_mut() {
        Ok(mut m) => f(&mut m),
        Err(_) => f(&mut Matcher::new()),
    })
}

/// Run `f` with this thread's matcher polling `cancel`: its answer, or `Interrupted` once
/// cancelled (the matcher is left polling nothing).
pub fn with_cancelled_matcher<R>(
    cancel: &crate::Cancel,
    f: impl FnOnce(&mut Matcher) -> R,
) -> crate::Result<R> {
    with_matcher(|m| {
        m.set_cancel(cancel);
        let answer = f(m);
        m.set_cancel(&crate::Cancel::never());
        cancel.check().map(|()| answer)
    })
}

/// The normalised label in `out` when `s` is an exact str of code points below 256 (false
/// otherwise).
pub fn normalised_bytes_into(s: &Bound<'_, PyString>, out: &mut Vec<u8>) -> PyResult<bool> {
    if !s.is_exact_instance_of::<PyString>() {
        return Ok(false);
    }
    match ffi::latin1_of(s).or_else(|| ffi::ascii_of(s.as_any())) {
        Some(bytes) => {
            if !normalise_ascii(bytes, out)? {
                normalise_latin1(bytes, out)?;
            }
            Ok(true)
        }
        None => Ok(false),
    }
}

/// The normalised code points of an exact str in `out`: lower-cased exactly as Python lower-cases
/// it, then collapsed, in the caller's buffers. False (`out` undefined) when only Python's own
/// `lower` of the whole text is exact, or `s` is not an exact str.
pub fn normalised_codepoints_into(
    s: &Bound<'_, PyString>,
    codepoints: &mut Vec<u32>,
    lowered: &mut Vec<u32>,
    out: &mut Vec<u32>,
) -> PyResult<bool> {
    if !s.is_exact_instance_of::<PyString>() {
        return Ok(false);
    }
    ffi::codepoints_into(s, codepoints)?;
    if !lower_codepoints(s.py(), codepoints, lowered)? {
        return Ok(false);
    }
    collapse_lowered(lowered, out)?;
    Ok(true)
}
