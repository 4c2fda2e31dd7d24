//! The Python bindings (the `python` feature): argument coercion, GIL handling, error conversion.
//! All matching logic lives in the pure core; this module only moves data across the boundary.
//!
//! Performance notes: a call copies each `str` once into code points with `PyUnicode_AsUCS4` (in the
//! stable ABI, unlike the compact-representation accessors), narrows to bytes when every code point is
//! below 256, and reuses per-thread matcher buffers. The GIL is released only when the work is large
//! enough (`DETACH_MIN_WORK` elements) to repay the release.

use std::cell::RefCell;

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyFloat, PyInt, PyList, PyString, PyTuple};
use rayon::iter::{IntoParallelIterator, IntoParallelRefIterator, ParallelIterator};

use crate::bounds::{folded, m_min, Lcs};
use crate::contract::{MatchParams, PairDecider, Reason};
use crate::error::Error;
use crate::matcher::{self, ratio_of, ratio_with, BSide, Matcher};
use crate::text::{Query, Text};

/// Below this many elements in a call, holding the GIL is cheaper than releasing it.
const DETACH_MIN_WORK: usize = 4096;

thread_local! {
    static MATCHER: RefCell<Matcher> = RefCell::new(Matcher::new());
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Per-thread buffers for the one-pair calls: once warm, a call on labels Rust can lower-case
/// (every code point below 256, or above it and kept by `lower_wide`) allocates nothing.
#[derive(Default)]
struct Scratch {
    codepoints: Vec<u32>,
    lowered: Vec<u32>,
    raw: Vec<u8>,
    a: Vec<u8>,
    b: Vec<u8>,
    side: BSide<u8>,
    wide_a: Vec<u32>,
    wide_b: Vec<u32>,
    wide_side: BSide<u32>,
    remap: crate::matcher::ByteRemap,
    matcher: Matcher,
    decider: crate::contract::PairDecider,
}

/// Run `f` on this thread's scratch buffers; None when a re-entrant call already holds them (the
/// caller then takes its general path).
fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> PyResult<Option<R>>) -> PyResult<Option<R>> {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut s) => f(&mut s),
        Err(_) => Ok(None),
    })
}

/// Copy the code points of `s` into `buf` (lone surrogates included).
fn load_codepoints(s: &Bound<'_, PyString>, buf: &mut Vec<u32>) -> PyResult<()> {
    // SAFETY: `s` is a live str; `buf` has room for exactly `len` code points and AsUCS4 is told so.
    unsafe {
        let len = ffi::PyUnicode_GetLength(s.as_ptr());
        if len < 0 {
            return Err(PyErr::fetch(s.py()));
        }
        buf.clear();
        buf.reserve(len as usize);
        if len > 0 {
            let done = ffi::PyUnicode_AsUCS4(s.as_ptr(), buf.as_mut_ptr(), len, 0);
            if done.is_null() {
                return Err(PyErr::fetch(s.py()));
            }
            buf.set_len(len as usize);
        }
    }
    Ok(())
}

/// The UTF-8 of `s` without copying: CPython keeps an ASCII string's UTF-8 in the object itself, and
/// caches any other string's (as every `PyUnicode_AsUTF8AndSize` caller makes it do). None for a
/// string with lone surrogates, which has no UTF-8. The bytes live as long as `s`.
fn utf8_of<'a>(s: &'a Bound<'_, PyString>) -> Option<&'a [u8]> {
    // SAFETY: `s` is a live str, borrowed for 'a.
    unsafe { utf8_of_ptr(s.as_ptr()) }
}

/// `utf8_of` a str by pointer.
///
/// # Safety
/// `s` must point to a live `str` that stays alive (and is not freed by any Python code) for 'a.
unsafe fn utf8_of_ptr<'a>(s: *mut ffi::PyObject) -> Option<&'a [u8]> {
    let mut size: ffi::Py_ssize_t = 0;
    // SAFETY: the caller's promise; the returned buffer belongs to the str. CPython builds a non-ASCII
    // str's UTF-8 with PyObject_Malloc, which runs no Python code.
    unsafe {
        let ptr = ffi::PyUnicode_AsUTF8AndSize(s, &mut size);
        if ptr.is_null() {
            ffi::PyErr_Clear();
            return None;
        }
        Some(std::slice::from_raw_parts(ptr.cast::<u8>(), size as usize))
    }
}

/// `s` as bytes in `out` when every code point is below 256 (false otherwise).
///
/// Performance notes: an ASCII string is copied straight from its UTF-8 (the object's own data);
/// `PyUnicode_AsUCS4`, which this replaced for them, converted one code point at a time and was
/// most of a short call's cost (callgrind).
fn narrow_into(s: &Bound<'_, PyString>, cps: &mut Vec<u32>, out: &mut Vec<u8>) -> PyResult<bool> {
    out.clear();
    match utf8_of(s) {
        Some(utf8) if utf8.is_ascii() => {
            out.extend_from_slice(utf8);
            return Ok(true);
        }
        Some(utf8) => {
            // SAFETY: CPython's UTF-8 of a str is valid UTF-8.
            let text = unsafe { std::str::from_utf8_unchecked(utf8) };
            cps.clear();
            cps.extend(text.chars().map(|c| c as u32));
        }
        None => load_codepoints(s, cps)?,
    }
    // An or over all code points vectorises; an early-exit test does not.
    if cps.iter().fold(0, |acc, &c| acc | c) >= 256 {
        return Ok(false);
    }
    out.extend(cps.iter().map(|&c| c as u8));
    Ok(true)
}

/// The normalised label in `out` when every code point of `s` is below 256 (false otherwise:
/// Python must lower-case it).
fn normalised_bytes_into(
    s: &Bound<'_, PyString>,
    scratch: &mut Scratch,
    second: bool,
) -> PyResult<bool> {
    let Scratch {
        codepoints,
        raw,
        a,
        b,
        ..
    } = scratch;
    let out = if second { b } else { a };
    match utf8_of(s) {
        Some(utf8) => Ok(crate::normalise::normalise_ascii(utf8, out)),
        None => Ok(narrow_into(s, codepoints, raw)? && crate::normalise::normalise_ascii(raw, out)),
    }
}

/// Run `f` with this thread's matcher (a fresh one if a re-entrant call already holds it).
fn with_matcher<R>(f: impl FnOnce(&mut Matcher) -> R) -> R {
    MATCHER.with(|cell| match cell.try_borrow_mut() {
        Ok(mut m) => f(&mut m),
        Err(_) => f(&mut Matcher::new()),
    })
}

/// The core's error as the package's Python exception (`memdedup.errors`).
fn to_pyerr(py: Python<'_>, err: Error) -> PyErr {
    let (class, msg) = match &err {
        Error::InvalidInput(m) => ("InvalidInputError", m.clone()),
        Error::WrongType(m) => ("InputTypeError", m.clone()),
    };
    let built = py
        .import("memdedup.errors")
        .and_then(|module| module.getattr(class))
        .and_then(|cls| cls.call1((msg.clone(),)));
    match built {
        Ok(instance) => PyErr::from_value(instance),
        Err(import_failure) => match err {
            Error::WrongType(_) => PyTypeError::new_err(msg),
            Error::InvalidInput(_) => import_failure,
        },
    }
}

/// The code points of a `str`, lone surrogates included.
fn codepoints(s: &Bound<'_, PyString>) -> PyResult<Vec<u32>> {
    let mut buf = Vec::new();
    load_codepoints(s, &mut buf)?;
    Ok(buf)
}

fn text_of(s: &Bound<'_, PyString>) -> PyResult<Text> {
    // An ASCII str's bytes are its code points: one copy, no UTF-32 detour.
    if let Some(utf8) = utf8_of(s).filter(|u| u.is_ascii()) {
        return Ok(Text::Narrow(utf8.to_vec()));
    }
    Ok(Text::from_codepoints(&codepoints(s)?))
}

/// A `str` from code points, lone surrogates included (they have no UTF-8 form, so go through UTF-32).
fn to_pystring<'py>(py: Python<'py>, text: &Text) -> PyResult<Bound<'py, PyString>> {
    match text {
        Text::Narrow(v) if v.is_ascii() => {
            // SAFETY: ASCII bytes are valid UTF-8.
            Ok(PyString::new(py, unsafe {
                std::str::from_utf8_unchecked(v)
            }))
        }
        _ => {
            let cps = text.codepoints();
            if let Some(s) = cps
                .iter()
                .map(|&c| char::from_u32(c))
                .collect::<Option<String>>()
            {
                return Ok(PyString::new(py, &s));
            }
            // SAFETY: the pointer and byte length describe `cps`, alive for the call.
            unsafe {
                let obj = ffi::PyUnicode_DecodeUTF32(
                    cps.as_ptr().cast(),
                    (cps.len() * 4) as ffi::Py_ssize_t,
                    c"surrogatepass".as_ptr(),
                    &mut 0, // native byte order
                );
                Ok(Bound::from_owned_ptr_or_err(py, obj)?.cast_into::<PyString>()?)
            }
        }
    }
}

/// `str(label or "")`, as the reference coerces labels.
fn label_str<'py>(label: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyString>> {
    if let Ok(s) = label.cast_exact::<PyString>() {
        return Ok(s.clone());
    }
    if !label.is_truthy()? {
        return Ok(PyString::new(label.py(), ""));
    }
    label.str()
}

/// The normalised label as the core stores it: lower-cased in Rust below 256, above it as Python
/// lower-cases each code point (`lower_wide`; exact for the running interpreter's Unicode database),
/// then collapsed in Rust.
fn normalised(label: &Bound<'_, PyAny>) -> PyResult<Text> {
    normalise_str(&label_str(label)?)
}

fn exact_str<'a, 'py>(
    obj: &'a Bound<'py, PyAny>,
    what: &str,
) -> PyResult<&'a Bound<'py, PyString>> {
    obj.cast::<PyString>().map_err(|_| {
        to_pyerr(
            obj.py(),
            Error::WrongType(format!(
                "{what} must be str, not {}; memdedup.difflib.SequenceMatcher takes other sequences",
                obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
            )),
        )
    })
}

/// A threshold as the contract compares it. A `float` (or `int`) is decided in Rust; any other number
/// (`Fraction`, `Decimal`, ...) compares with a float exactly in Python, and not always as its f64
/// rounding would, so those pairs get their exact ratio and Python's own `>=`.
enum Threshold<'py> {
    Float(f64),
    Python(Bound<'py, PyAny>),
}

impl<'a, 'py> FromPyObject<'a, 'py> for Threshold<'py> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Threshold::of(&obj.to_owned())
    }
}

/// The contract's default threshold, as a signature default (an explicit `None` stays `None`).
const DEFAULT: Threshold<'static> = Threshold::Float(crate::contract::DEFAULT_THRESHOLD);

impl<'py> Threshold<'py> {
    fn of(obj: &Bound<'py, PyAny>) -> PyResult<Self> {
        if let Ok(f) = obj.cast::<PyFloat>() {
            return Ok(Threshold::Float(f.value()));
        }
        if obj.cast::<PyInt>().is_ok() {
            // A ratio lies in [0, 1]: every int below 0 or above 1 decides like -2 or 2.
            return Ok(Threshold::Float(match obj.extract::<i64>() {
                Ok(k) => k.clamp(-2, 2) as f64,
                Err(_) => {
                    if obj.gt(0)? {
                        2.0
                    } else {
                        -2.0
                    }
                }
            }));
        }
        Ok(Threshold::Python(obj.clone()))
    }

    /// `score >= threshold`, as Python evaluates it.
    fn admits(&self, score: f64) -> PyResult<bool> {
        match self {
            Threshold::Float(t) => Ok(score >= *t),
            Threshold::Python(t) => PyFloat::new(t.py(), score).ge(t),
        }
    }
}

fn min_chars_of(min_chars: i64) -> usize {
    // A negative minimum admits every length, exactly as `len(shorter) >= min_chars` would.
    min_chars.max(0) as usize
}

/// One stored label against a prepared incoming one: the reason it matches and the exact ratio. Both
/// rules are evaluated here, ratio first, as the reference evaluates them, so a threshold of any number
/// type is compared by Python's own `>=` (the float fast paths call `Query::matches` instead).
fn decide_one(
    m: &mut Matcher,
    q: &mut Query,
    stored: &Text,
    threshold: &Threshold<'_>,
    min_chars: usize,
) -> PyResult<Option<(Reason, f64)>> {
    if stored.is_empty() || q.text().is_empty() {
        return Ok(None);
    }
    // `min_chars: usize::MAX` keeps `decide` from claiming containment (decided below).
    let p = MatchParams {
        threshold: f64::INFINITY,
        min_chars: usize::MAX,
    };
    let d = q.decide(m, stored, &p);
    if threshold.admits(d.score)? {
        Ok(Some((Reason::Ratio, d.score)))
    } else if q.contains_shorter(stored, min_chars) {
        Ok(Some((Reason::Containment, d.score)))
    } else {
        Ok(None)
    }
}

/// Two texts on one element type, for the one-pair functions.
enum Pair {
    Narrow(Vec<u8>, Vec<u8>),
    Wide(Vec<u32>, Vec<u32>),
}

fn pair(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<Pair> {
    let a = text_of(exact_str(a, "a")?)?;
    let b = text_of(exact_str(b, "b")?)?;
    Ok(match (a, b) {
        (Text::Narrow(a), Text::Narrow(b)) => Pair::Narrow(a, b),
        (a, b) => Pair::Wide(a.codepoints(), b.codepoints()),
    })
}

fn detach_if_large<T: Send>(py: Python<'_>, work: usize, f: impl FnOnce() -> T + Send) -> T {
    if work >= DETACH_MIN_WORK {
        py.detach(f)
    } else {
        f()
    }
}

#[pyfunction]
fn normalise_label<'py>(label: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyString>> {
    to_pystring(label.py(), &normalised(label)?)
}

/// `difflib.SequenceMatcher(None, a, b, autojunk=autojunk).ratio()`, bit for bit.
#[pyfunction]
#[pyo3(signature = (a, b, *, autojunk = true))]
fn ratio(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    autojunk: bool,
) -> PyResult<f64> {
    let (sa, sb) = (exact_str(a, "a")?, exact_str(b, "b")?);
    let fast = with_scratch(|s| {
        // ASCII strs (most labels): matched on their own bytes, which `rebuild` and `set_a` copy
        // anyway, not on copies of them.
        if let (Some(ua), Some(ub)) = (utf8_of(sa), utf8_of(sb)) {
            if ua.is_ascii() && ub.is_ascii() {
                if ua.len() + ub.len() >= DETACH_MIN_WORK {
                    return Ok(None);
                }
                let (m, side) = (&mut s.matcher, &mut s.side);
                return Ok(Some(ratio_with(m, side, ua, ub, autojunk)));
            }
        }
        // Some side is not ASCII: both as code points (CPython copies them out of its own
        // layout; decoding UTF-8 first cost ~2,000 instructions a wide label pair).
        load_codepoints(sa, &mut s.wide_a)?;
        load_codepoints(sb, &mut s.wide_b)?;
        if s.wide_a.len() + s.wide_b.len() >= DETACH_MIN_WORK {
            return Ok(None);
        }
        let (a, b) = (&s.wide_a, &s.wide_b);
        // An or over all code points vectorises; an early-exit test does not.
        if a.iter().chain(b).fold(0, |acc, &c| acc | c) < 256 {
            s.a.clear();
            s.a.extend(a.iter().map(|&c| c as u8));
            s.b.clear();
            s.b.extend(b.iter().map(|&c| c as u8));
        } else if !s.remap.remap(a, b, &mut s.a, &mut s.b) {
            // More than 255 distinct elements in b: on code points. (Otherwise the same
            // answer on bytes: ByteRemap.)
            return Ok(Some(ratio_with(
                &mut s.matcher,
                &mut s.wide_side,
                a,
                b,
                autojunk,
            )));
        }
        Ok(Some(ratio_with(
            &mut s.matcher,
            &mut s.side,
            &s.a,
            &s.b,
            autojunk,
        )))
    })?;
    if let Some(r) = fast {
        return Ok(r);
    }
    let p = pair(a, b)?;
    Ok(match p {
        Pair::Narrow(a, b) => {
            detach_if_large(py, a.len() + b.len(), || pair_ratio(&a, &b, autojunk))
        }
        Pair::Wide(a, b) => detach_if_large(py, a.len() + b.len(), || pair_ratio(&a, &b, autojunk)),
    })
}

fn pair_ratio<T: crate::Sym>(a: &[T], b: &[T], autojunk: bool) -> f64 {
    with_matcher(|m| ratio_with(m, &mut BSide::default(), a, b, autojunk))
}

/// difflib's `quick_ratio()`: an upper bound of `ratio()` from the character multisets.
#[pyfunction]
#[pyo3(signature = (a, b, *, autojunk = true))]
fn quick_ratio(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>, autojunk: bool) -> PyResult<f64> {
    let _ = autojunk; // quick_ratio counts every element of b, junk or popular
    Ok(match pair(a, b)? {
        Pair::Narrow(a, b) => matcher::quick_ratio(&a, &b),
        Pair::Wide(a, b) => matcher::quick_ratio(&a, &b),
    })
}

/// difflib's `real_quick_ratio()`: an upper bound of `ratio()` from the lengths alone.
#[pyfunction]
#[pyo3(signature = (a, b, *, autojunk = true))]
fn real_quick_ratio(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>, autojunk: bool) -> PyResult<f64> {
    let _ = autojunk;
    let la = exact_str(a, "a")?.len()?;
    let lb = exact_str(b, "b")?.len()?;
    Ok(matcher::real_quick_ratio(la, lb))
}

/// difflib's `get_matching_blocks()` as plain tuples, the `(len(a), len(b), 0)` sentinel last.
#[pyfunction]
#[pyo3(signature = (a, b, *, autojunk = true))]
fn matching_blocks<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    autojunk: bool,
) -> PyResult<Bound<'py, PyList>> {
    let (blocks, la, lb) = match pair(a, b)? {
        Pair::Narrow(a, b) => (
            detach_if_large(py, a.len() + b.len(), || {
                matcher::matching_blocks(&a, &b, autojunk)
            }),
            a.len(),
            b.len(),
        ),
        Pair::Wide(a, b) => (
            detach_if_large(py, a.len() + b.len(), || {
                matcher::matching_blocks(&a, &b, autojunk)
            }),
            a.len(),
            b.len(),
        ),
    };
    let list = PyList::empty(py);
    for (i, j, k) in blocks.into_iter().chain(std::iter::once((la, lb, 0))) {
        list.append(PyTuple::new(py, [i, j, k])?)?;
    }
    Ok(list)
}

/// The shared same-fact criterion: the ratio of the normalised labels (stored first) reaches the
/// threshold, or one contains the other (at least `min_chars` characters). `guards` (off by
/// default) also requires `memdedup.guards.guards_allow` (value / negation).
///
/// Performance notes: this is `memdedup.labels_match` itself; the Python wrapper that added the
/// `guards` option cost about as much as the decision (a frame and a keyword call, ~1,500 of
/// ~6,700 instructions a call under callgrind).
#[pyfunction]
#[pyo3(signature = (stored, incoming, *, threshold = DEFAULT, min_chars = 16, guards = None))]
fn labels_match(
    py: Python<'_>,
    stored: &Bound<'_, PyAny>,
    incoming: &Bound<'_, PyAny>,
    threshold: Threshold<'_>,
    min_chars: i64,
    guards: Option<&Bound<'_, PyAny>>,
) -> PyResult<bool> {
    let matched = contract_match(py, stored, incoming, threshold, min_chars)?;
    let Some(guards) = guards else {
        return Ok(matched);
    };
    // As the reference wrapper: the guards are parsed (and refused) even when the labels differ.
    let module = py.import("memdedup.guards")?;
    let guards = module.call_method1(pyo3::intern!(py, "as_guards"), (guards,))?;
    Ok(matched
        && module
            .call_method1(
                pyo3::intern!(py, "guards_allow"),
                (stored, incoming, guards),
            )?
            .is_truthy()?)
}

/// `labels_match` without guards.
fn contract_match(
    py: Python<'_>,
    stored: &Bound<'_, PyAny>,
    incoming: &Bound<'_, PyAny>,
    threshold: Threshold<'_>,
    min_chars: i64,
) -> PyResult<bool> {
    let min_chars = min_chars_of(min_chars);
    let (stored_str, incoming_str) = (label_str(stored)?, label_str(incoming)?);
    if let Threshold::Float(t) = threshold {
        let p = MatchParams {
            threshold: t,
            min_chars,
        };
        let fast = with_scratch(|s| {
            let stored_ascii = normalised_bytes_into(&stored_str, s, false)?;
            let incoming_ascii = normalised_bytes_into(&incoming_str, s, true)?;
            if stored_ascii && incoming_ascii {
                if s.a.len() + s.b.len() >= DETACH_MIN_WORK {
                    return Ok(None);
                }
                return Ok(Some(s.decider.matches_bytes(&s.a, &s.b, &p)));
            }
            // Some label has a code point above 127: both as normalised code points in this
            // thread's buffers (an ASCII one from its bytes), matched on bytes when they allow it
            // (`matches_codepoints`).
            let Scratch {
                codepoints,
                lowered,
                a,
                b,
                wide_a,
                wide_b,
                decider,
                ..
            } = s;
            for (label, ascii, bytes, out) in [
                (&stored_str, stored_ascii, &*a, &mut *wide_a),
                (&incoming_str, incoming_ascii, &*b, &mut *wide_b),
            ] {
                if ascii {
                    out.clear();
                    out.extend(bytes.iter().map(|&c| c as u32));
                } else if !normalised_codepoints_into(label, codepoints, lowered, out)? {
                    return Ok(None);
                }
            }
            if wide_a.len() + wide_b.len() >= DETACH_MIN_WORK {
                return Ok(None);
            }
            Ok(Some(decider.matches_codepoints(wide_a, wide_b, &p)))
        })?;
        if let Some(answer) = fast {
            return Ok(answer);
        }
    }
    let a = normalise_str(&stored_str)?;
    let b = normalise_str(&incoming_str)?;
    if let Threshold::Float(t) = threshold {
        let p = MatchParams {
            threshold: t,
            min_chars,
        };
        if a.len() + b.len() < DETACH_MIN_WORK {
            if let Some(answer) = with_scratch(|s| Ok(Some(s.decider.matches(&a, &b, &p))))? {
                return Ok(answer);
            }
        }
        return Ok(detach_if_large(py, a.len() + b.len(), || {
            with_matcher(|m| Query::new(b).matches(m, &a, &p))
        }));
    }
    with_matcher(|m| decide_one(m, &mut Query::new(b), &a, &threshold, min_chars))
        .map(|d| d.is_some())
}

/// Why two labels match: `("ratio", score)`, `("containment", score)`, or None.
#[pyfunction]
#[pyo3(signature = (stored, incoming, *, threshold = DEFAULT, min_chars = 16))]
fn match_reason(
    stored: &Bound<'_, PyAny>,
    incoming: &Bound<'_, PyAny>,
    threshold: Threshold<'_>,
    min_chars: i64,
) -> PyResult<Option<(&'static str, f64)>> {
    let a = normalised(stored)?;
    let b = normalised(incoming)?;
    let d = with_matcher(|m| {
        decide_one(
            m,
            &mut Query::new(b),
            &a,
            &threshold,
            min_chars_of(min_chars),
        )
    })?;
    Ok(d.map(|(r, score)| (r.as_str(), score)))
}

fn normalised_all(candidates: &Bound<'_, PyAny>) -> PyResult<Vec<Text>> {
    candidates.try_iter()?.map(|c| normalised(&c?)).collect()
}

/// `labels_match(stored[k], incoming)` for each k until `stop` says so; float thresholds without
/// the GIL when the work is large.
fn scan_candidates(
    py: Python<'_>,
    incoming: &Bound<'_, PyAny>,
    candidates: &Bound<'_, PyAny>,
    threshold: Threshold<'_>,
    min_chars: i64,
    first_only: bool,
) -> PyResult<Vec<bool>> {
    let b = normalised(incoming)?;
    let stored = normalised_all(candidates)?;
    let min_chars = min_chars_of(min_chars);
    let mut q = Query::new(b);
    if let Threshold::Float(t) = threshold {
        let p = MatchParams {
            threshold: t,
            min_chars,
        };
        let work = stored.iter().map(Text::len).sum::<usize>() + q.text().len() * stored.len();
        return Ok(detach_if_large(py, work, || {
            with_matcher(|m| {
                let mut out = Vec::with_capacity(stored.len());
                for a in &stored {
                    let hit = q.matches(m, a, &p);
                    out.push(hit);
                    if hit && first_only {
                        break;
                    }
                }
                out
            })
        }));
    }
    with_matcher(|m| {
        let mut out = Vec::with_capacity(stored.len());
        for a in &stored {
            let hit = decide_one(m, &mut q, a, &threshold, min_chars)?.is_some();
            out.push(hit);
            if hit && first_only {
                break;
            }
        }
        Ok(out)
    })
}

/// `[labels_match(c, incoming) for c in candidates]`, the incoming label prepared once.
#[pyfunction]
#[pyo3(signature = (incoming, candidates, *, threshold = DEFAULT, min_chars = 16))]
fn match_mask(
    py: Python<'_>,
    incoming: &Bound<'_, PyAny>,
    candidates: &Bound<'_, PyAny>,
    threshold: Threshold<'_>,
    min_chars: i64,
) -> PyResult<Vec<bool>> {
    scan_candidates(py, incoming, candidates, threshold, min_chars, false)
}

/// The index of the first candidate that `labels_match(candidate, incoming)` accepts.
#[pyfunction]
#[pyo3(signature = (incoming, candidates, *, threshold = DEFAULT, min_chars = 16))]
fn match_first(
    py: Python<'_>,
    incoming: &Bound<'_, PyAny>,
    candidates: &Bound<'_, PyAny>,
    threshold: Threshold<'_>,
    min_chars: i64,
) -> PyResult<Option<usize>> {
    let hits = scan_candidates(py, incoming, candidates, threshold, min_chars, true)?;
    Ok(hits
        .last()
        .copied()
        .unwrap_or(false)
        .then(|| hits.len() - 1))
}

/// `get_close_matches`' scoring pass for a `str` word and `str` possibilities: `(ratio, index)` for
/// every possibility whose `real_quick_ratio`, `quick_ratio` and `ratio` (possibility first, as difflib's
/// `set_seq1(x)` with `set_seq2(word)`) all reach `cutoff`, in input order. The word is indexed once;
/// candidates are decided in parallel without the GIL; the exact ratio is computed only for candidates
/// the early-stopping threshold test accepts. None when some possibility is not an exact `str` (a
/// subclass may redefine what difflib reads of it): the caller then runs difflib's own loop.
///
/// Performance notes: the caller used to check the types first (`set(map(type, pool))`), a pass
/// over every possibility that took ~10 ms of a short word's ~16 ms over 100,000 labels; the
/// reading loop checks each type anyway, on the str header it loads for the length.
#[pyfunction]
#[pyo3(signature = (word, possibilities, cutoff, *, autojunk = true))]
fn close_matches(
    py: Python<'_>,
    word: &Bound<'_, PyAny>,
    possibilities: &Bound<'_, PyAny>,
    cutoff: f64,
    autojunk: bool,
) -> PyResult<Option<Vec<(f64, usize)>>> {
    let word = text_of(exact_str(word, "word")?)?;
    let lw = word.len();
    // The length bound first, with the GIL: most possibilities of a very different length are never
    // copied out of Python at all.
    let mut pool: Vec<(usize, Text)> = Vec::new();
    // False when `x` is not an exact str.
    let mut consider = |index: usize, x: *mut ffi::PyObject| -> PyResult<bool> {
        // SAFETY: a live object (a list item borrowed while no Python code runs, or an item we hold).
        let lx = unsafe {
            if ffi::PyUnicode_CheckExact(x) == 0 {
                return Ok(false);
            }
            str_len(x)
        };
        if lx + lw == 0 || ratio_of(lx.min(lw), lx + lw) >= cutoff {
            // SAFETY: as above; an exact str, with a reference of our own for the copy.
            let x = unsafe { Bound::from_borrowed_ptr(py, x).cast_into_unchecked::<PyString>() };
            pool.push((index, text_of(&x)?));
        }
        Ok(true)
    };
    let mut all_str = true;
    if let Ok(list) = possibilities.cast_exact::<PyList>() {
        let mut index = 0;
        each_list_item(list, 0..list.len(), |x| {
            all_str = all_str && consider(index, x)?;
            index += 1;
            Ok(())
        })?;
    } else {
        for (index, x) in possibilities.try_iter()?.enumerate() {
            if !consider(index, x?.as_ptr())? {
                all_str = false;
                break;
            }
        }
    }
    if !all_str {
        return Ok(None);
    }
    Ok(py.detach(|| {
        use rayon::prelude::*;
        let narrow = match &word {
            Text::Narrow(w) => Some(BSide::new(w, autojunk)),
            Text::Wide(_) => None,
        };
        let wide = BSide::new(&word.codepoints(), autojunk);
        let word_folded = folded(&word, &mut Vec::new()).to_vec();
        let scored: Vec<Option<(f64, usize)>> = pool
            .par_iter()
            .map_init(
                || {
                    let mut lcs = Lcs::default();
                    lcs.load(&word_folded);
                    (Matcher::new(), lcs, Vec::new())
                },
                |(m, lcs, buf), &(index, ref x)| {
                    let length = x.len() + lw;
                    if length == 0 {
                        return Some((1.0, index));
                    }
                    // The pool passed the length bound (`real_quick_ratio`); the LCS bound implies
                    // difflib's `quick_ratio` bound (a common subsequence is a common multiset).
                    let need = m_min(length, cutoff)?;
                    if !lcs.at_least(folded(x, buf), need) {
                        return None;
                    }
                    let score = match (x, &narrow) {
                        (Text::Narrow(a), Some(side)) => close_score(m, a.as_slice(), side, cutoff),
                        _ => close_score(m, &x.codepoints(), &wide, cutoff),
                    };
                    score.map(|s| (s, index))
                },
            )
            .collect();
        Some(scored.into_iter().flatten().collect())
    }))
}

fn close_score<T: crate::Sym>(
    m: &mut Matcher,
    a: &[T],
    side: &BSide<T>,
    cutoff: f64,
) -> Option<f64> {
    let length = a.len() + side.len();
    m.set_a(a, side);
    if !m.ratio_at_least(side, cutoff) {
        return None;
    }
    m.set_a(a, side);
    Some(ratio_of(m.matches(side), length))
}

/// A sequence as element codes: a `str`'s code points, a [`Codes`] from [`SequenceIndex::encode`], or a
/// sequence of ints (ids the caller assigned).
fn element_codes<'a>(seq: &'a Bound<'_, PyAny>) -> PyResult<std::borrow::Cow<'a, [u32]>> {
    if let Ok(s) = seq.cast::<PyString>() {
        return Ok(codepoints(s)?.into());
    }
    if let Ok(codes) = seq.cast::<Codes>() {
        return Ok(codes.get().codes.as_slice().into());
    }
    Ok(seq
        .extract::<Vec<u32>>()
        .map_err(|_| {
            to_pyerr(
                seq.py(),
                Error::WrongType(
                    "a sequence must be a str or a sequence of ints below 2**32".into(),
                ),
            )
        })?
        .into())
}

/// A first sequence coded against one [`SequenceIndex`]'s elements (see [`SequenceIndex::encode`]).
#[pyclass(frozen, module = "memdedup._core")]
struct Codes {
    codes: Vec<u32>,
}

#[pymethods]
impl Codes {
    fn __len__(&self) -> usize {
        self.codes.len()
    }
}

/// The items of an exact `list` or `tuple`, as borrowed pointers (None for any other sequence).
///
/// They stay valid while `seq` is alive and no Python code runs; [`ElementTable`] runs none (it
/// checks each item is an exact `str` or `bytes` before hashing or comparing it, and those types'
/// hash and `==` are C code), so no reference is taken per item.
struct Items<'a, 'py> {
    seq: &'a Bound<'py, PyAny>,
    is_list: bool,
    len: usize,
}

impl<'a, 'py> Items<'a, 'py> {
    fn of(seq: &'a Bound<'py, PyAny>) -> Option<Self> {
        if let Ok(list) = seq.cast_exact::<PyList>() {
            Some(Items {
                seq,
                is_list: true,
                len: list.len(),
            })
        } else if let Ok(tuple) = seq.cast_exact::<PyTuple>() {
            Some(Items {
                seq,
                is_list: false,
                len: tuple.len(),
            })
        } else {
            None
        }
    }

    /// Item `i` (below `len`), borrowed: read from the object itself, except in an `abi3` build
    /// (where the layout is not part of the API). Not `list_item`: its bounds check cost coding a
    /// line diff's `a` ~9% (alternating runs).
    #[inline]
    fn get(&self, i: usize) -> *mut ffi::PyObject {
        let (seq, i) = (self.seq.as_ptr(), i as ffi::Py_ssize_t);
        // SAFETY: `seq` is an exact list or tuple we hold and i < len (a list does not change size
        // while no Python code runs).
        unsafe {
            #[cfg(not(any(Py_LIMITED_API, PyPy, GraalPy)))]
            if self.is_list {
                ffi::PyList_GET_ITEM(seq, i)
            } else {
                ffi::PyTuple_GET_ITEM(seq, i)
            }
            #[cfg(any(Py_LIMITED_API, PyPy, GraalPy))]
            if self.is_list {
                ffi::PyList_GetItem(seq, i)
            } else {
                ffi::PyTuple_GetItem(seq, i)
            }
        }
    }
}

/// The distinct elements of a sequence of exact `str`s (or of exact `bytes`), as dense ids in
/// first-occurrence order, looked up as a `dict` looks up keys: equal hash, then identity or `==`.
/// So coding `a` against it finds exactly what `difflib`'s `b2j.get(a[i])` finds.
///
/// Performance notes: mapping lines to ids with a Python dict (`dict(zip(b, range))`, then
/// `map(codes.get, a)`, then extracting the int lists) took ~390 ns a line of a line diff, most of
/// a `SequenceMatcher` call; this table reads each element's cached hash, compares only on equal
/// hashes (strs in place by `str_equal`, else `PyUnicode_Compare`; no bool objects), and takes no
/// reference per item, only per distinct element. Slots are 8 bytes (half of the hash, the id).
struct ElementTable {
    /// Whether the elements are `str` (else `bytes`).
    is_str: bool,
    /// How elements are hashed (the same for every element the table stores or looks up).
    hashing: Hashing,
    /// Open addressing: `(hash as u32, id)`, id [`EMPTY_SLOT`] when free.
    slots: Vec<(u32, u32)>,
    /// The distinct elements by id (each one's first occurrence, as `b2j`'s keys are).
    elems: Vec<Py<PyAny>>,
}

const EMPTY_SLOT: u32 = u32::MAX;

impl ElementTable {
    /// Whether `item` is of the table's element type, exactly (a subclass may redefine `==`).
    #[inline]
    fn admits(is_str: bool, item: *mut ffi::PyObject) -> bool {
        // SAFETY: `item` is a live object (see `Items`).
        unsafe {
            if is_str {
                ffi::PyUnicode_CheckExact(item) != 0
            } else {
                ffi::PyBytes_CheckExact(item) != 0
            }
        }
    }

    /// The table of `items` and their ids, or None when they are not all exact `str` or all exact
    /// `bytes`.
    /// With the table: each item's id, and each id's count.
    #[allow(clippy::type_complexity)]
    fn build(
        py: Python<'_>,
        items: &Items<'_, '_>,
    ) -> PyResult<Option<(ElementTable, Vec<u32>, Vec<u32>)>> {
        let is_str = items.len == 0 || ElementTable::admits(true, items.get(0));
        let capacity = (items.len + items.len / 2).next_power_of_two().max(16);
        let mut table = ElementTable {
            is_str,
            hashing: Hashing::for_items(items, is_str),
            slots: vec![(0, EMPTY_SLOT); capacity],
            elems: Vec::new(),
        };
        let mut ids = Vec::with_capacity(items.len);
        let mut counts: Vec<u32> = Vec::new();
        // Performance notes (alternating runs of two builds, line-diff core calls): one item at a
        // time, the next ones prefetched only when hashing reads their units, was 3-5% faster than
        // blocks of `each_hashed` with every hash cached and within +-2% on fresh lines.
        let prefetch = table.hashing.reads_units();
        for i in 0..items.len {
            if prefetch && i + PREFETCH_AHEAD < items.len {
                prefetch_object(items.get(i + PREFETCH_AHEAD));
            }
            let item = items.get(i);
            if !ElementTable::admits(is_str, item) {
                return Ok(None);
            }
            let hash = table.hashing.hash(py, item, is_str)?;
            ids.push(match table.find(py, item, hash)? {
                Ok(id) => {
                    counts[id as usize] += 1;
                    id
                }
                Err(slot) => {
                    let id = table.elems.len() as u32;
                    table.slots[slot] = (hash as u32, id);
                    // SAFETY: a live object; this takes a new reference to it.
                    table
                        .elems
                        .push(unsafe { Bound::from_borrowed_ptr(py, item) }.unbind());
                    counts.push(1);
                    id
                }
            });
        }
        Ok(Some((table, ids, counts)))
    }

    /// Call `f` with each item and its hash, in order; false (before calling it on the rest of a
    /// block, whose results the caller then drops) when some item is not an exact `str`
    /// (`is_str`) or `bytes`.
    ///
    /// Performance notes: a line diff's items are scattered objects and the table's slots are
    /// read at random, so one item at a time is two dependent cache misses a line (perf put ~27%
    /// of building a table on loading an item's type, ~21% on loading its slot). Items are taken
    /// in blocks instead: every item's type and hash first (independent loads, whose misses
    /// overlap), each hash's slot prefetched as it is read, then `f` on the block. Alternating
    /// runs of the line-diff workloads: 7-14% less time building and coding. Prefetching the
    /// next block's items as well was 9-20% slower (in the abi3 build: a second `PyList_GetItem`
    /// an item), and prefetching, before the block is probed, the element each hash's slot names
    /// (to overlap a compare's loads) 22-33% slower. When hashing reads each str's units
    /// ([`Hashing::Units`]), the items a block ahead are prefetched (header and units): ~10% less
    /// time on fresh lines. There, prefetching the elements the slots name was again 4-5% slower.
    /// A rayon thread sharing the pass (hashing or coding blocks from the end, GIL-free reads of
    /// immutable strs) was slower too: after the pool idles, its thread took ~0.1-1.8 ms to wake
    /// on this 2-core VM, longer than a whole diff of a 3,000-line file. Those figures predate
    /// guessing in `code` and units hashing; since them, `build` measured faster without blocks
    /// (see there), and only `code`'s windows where guesses miss take them.
    #[inline(always)]
    fn each_hashed(
        py: Python<'_>,
        items: &Items<'_, '_>,
        range: std::ops::Range<usize>,
        (is_str, hashing, slots, mask): (bool, Hashing, *const (u32, u32), usize),
        mut f: impl FnMut(*mut ffi::PyObject, ffi::Py_hash_t) -> PyResult<()>,
    ) -> PyResult<bool> {
        const BLOCK: usize = 16;
        let prefetch_ahead = hashing.reads_units();
        let mut block = [(std::ptr::null_mut(), 0); BLOCK];
        let mut start = range.start;
        while start < range.end {
            let len = BLOCK.min(range.end - start);
            for (k, entry) in block[..len].iter_mut().enumerate() {
                if prefetch_ahead && start + k + BLOCK < items.len {
                    prefetch_object(items.get(start + k + BLOCK));
                }
                let item = items.get(start + k);
                if !ElementTable::admits(is_str, item) {
                    return Ok(false);
                }
                let hash = hashing.hash(py, item, is_str)?;
                // A slot of the table (the mask keeps it in bounds).
                prefetch_address(slots.wrapping_add(hash as usize & mask).cast());
                *entry = (item, hash);
            }
            for &(item, hash) in &block[..len] {
                f(item, hash)?;
            }
            start += len;
        }
        Ok(true)
    }

    /// What `each_hashed` reads of the table: the element type, how it hashes, and where the slots
    /// lie (they do not move while a table is built or read).
    fn layout(&self) -> (bool, Hashing, *const (u32, u32), usize) {
        (
            self.is_str,
            self.hashing,
            self.slots.as_ptr(),
            self.slots.len() - 1,
        )
    }

    /// `Ok(id)` of the element equal to `item` (of the table's type, with hash `hash`), else
    /// `Err(slot)`: the free slot where it would go.
    #[inline(always)]
    fn find(
        &self,
        py: Python<'_>,
        item: *mut ffi::PyObject,
        hash: ffi::Py_hash_t,
    ) -> PyResult<Result<u32, usize>> {
        let mask = self.slots.len() - 1;
        let mut at = hash as usize & mask;
        loop {
            let (slot_hash, id) = self.slots[at];
            if id == EMPTY_SLOT {
                return Ok(Err(at));
            }
            if slot_hash == hash as u32 {
                let elem = self.elems[id as usize].as_ptr();
                if elem == item || self.equal_out_of_line(py, elem, item)? {
                    return Ok(Ok(id));
                }
            }
            at = (at + 1) & mask;
        }
    }

    /// The ids of `items` (exact elements of the table's type, else None), `elems.len()` for an
    /// element the table lacks; `side` is the index of the sequence the table was built from.
    ///
    /// A line diff's `a` mostly runs along `b`: each item is first compared with the element of
    /// `b`'s next line, and looked up by hash only when they differ (the guess then goes on after
    /// where the found id first occurs, unless it is junk or popular, as a blank line is: then it
    /// stays). Where guesses mostly miss (a window with fewer than half right), items are looked up
    /// in blocks (`each_hashed`), which still counts what the guesses would have hit, to take them
    /// up again.
    ///
    /// Performance notes (alternating runs of two builds, line-diff core calls on bench_difflib.py's
    /// files): a guess that hits needs no hash and no table slot. Whole diffs of fresh lines took
    /// 13-15% less time; with `b` hashed and `a` fresh (a `set_seq1` loop over new texts) 32% less,
    /// as `a`'s lines need no SipHash; with every `hash()` cached, within +-4%. Prefetching `a`'s and
    /// `b`'s next lines pays only on fresh lines (units hashing): with cached hashes the diffs were
    /// 4-7% faster without it. Coding a shuffled, every-other-line or unrelated `a` took 5-15%
    /// longer (4-9% of it with the blocks alone, a build-layout effect), which left those whole
    /// diffs, dominated by matching, within +-3%.
    fn code(
        &self,
        py: Python<'_>,
        items: &Items<'_, '_>,
        side: &BSide<u32>,
    ) -> PyResult<Option<Vec<u32>>> {
        let b_ids = side.seq();
        // Items between decisions to guess or not: guessing is dropped soon where it misses, and
        // blocks run long enough to pay their start.
        const GUESSING_WINDOW: usize = 64;
        const HASHING_WINDOW: usize = 512;
        let absent = self.elems.len() as u32;
        let mut codes = Vec::with_capacity(items.len);
        // The position in `b` whose element the next item is guessed to equal.
        let mut next = 0usize;
        // Where the guess goes on after a missed guess found `id`: past its first occurrence, or
        // where it was for a junk or popular id.
        let after_first = |id: u32, next: usize| side.first_position(id).map_or(next, |j| j + 1);
        let mut guessing = true;
        let prefetch = self.hashing.reads_units();
        let mut start = 0;
        while start < items.len {
            let window = if guessing {
                GUESSING_WINDOW
            } else {
                HASHING_WINDOW
            };
            let end = (start + window).min(items.len);
            let mut hits = 0;
            if guessing {
                for i in start..end {
                    if prefetch {
                        if i + PREFETCH_AHEAD < items.len {
                            prefetch_object(items.get(i + PREFETCH_AHEAD));
                        }
                        if let Some(&ahead) = b_ids.get(next + PREFETCH_AHEAD) {
                            prefetch_object(self.elems[ahead as usize].as_ptr());
                        }
                    }
                    let item = items.get(i);
                    if !ElementTable::admits(self.is_str, item) {
                        return Ok(None);
                    }
                    if let Some(&guess) = b_ids.get(next) {
                        let elem = self.elems[guess as usize].as_ptr();
                        if elem == item || self.equal(py, elem, item)? {
                            codes.push(guess);
                            next += 1;
                            hits += 1;
                            continue;
                        }
                    }
                    let hash = self.hashing.hash(py, item, self.is_str)?;
                    codes.push(match self.find(py, item, hash)? {
                        Ok(id) => {
                            next = after_first(id, next);
                            id
                        }
                        Err(_) => absent,
                    });
                }
            } else {
                let admitted = ElementTable::each_hashed(
                    py,
                    items,
                    start..end,
                    self.layout(),
                    |item, hash| {
                        codes.push(match self.find(py, item, hash)? {
                            Ok(id) if b_ids.get(next) == Some(&id) => {
                                hits += 1;
                                next += 1;
                                id
                            }
                            Ok(id) => {
                                next = after_first(id, next);
                                id
                            }
                            Err(_) => absent,
                        });
                        Ok(())
                    },
                )?;
                if !admitted {
                    return Ok(None);
                }
            }
            guessing = 2 * hits >= end - start;
            start = end;
        }
        Ok(Some(codes))
    }

    /// `x == y` for two distinct objects of the table's type: strs compared in place, anything
    /// else (and a 3.11 legacy str) by Python.
    ///
    /// Performance notes (four alternating runs of two builds, line-diff core calls): inline here,
    /// where the guesses of `code` compare every line. Through an out-of-line call, diffs of lines
    /// read separately took 1.5-3.5% longer, of fresh lines 0.2-6% (shared lines, equal by
    /// identity, +-1%). `find` takes `equal_out_of_line`: inlined there too, the diffs were 1-3%
    /// slower.
    #[inline(always)]
    fn equal(
        &self,
        py: Python<'_>,
        x: *mut ffi::PyObject,
        y: *mut ffi::PyObject,
    ) -> PyResult<bool> {
        #[cfg(not(any(Py_LIMITED_API, PyPy, GraalPy, Py_3_14)))]
        if self.is_str {
            // SAFETY: both are live exact strs.
            if let Some(equal) = unsafe { str_equal(x, y) } {
                return Ok(equal);
            }
        }
        self.equal_by_python(py, x, y)
    }

    /// `equal`, kept out of line (see there).
    #[inline(never)]
    fn equal_out_of_line(
        &self,
        py: Python<'_>,
        x: *mut ffi::PyObject,
        y: *mut ffi::PyObject,
    ) -> PyResult<bool> {
        self.equal(py, x, y)
    }

    /// `x == y` by Python's comparison, for two distinct objects of the table's type.
    #[inline(never)]
    fn equal_by_python(
        &self,
        py: Python<'_>,
        x: *mut ffi::PyObject,
        y: *mut ffi::PyObject,
    ) -> PyResult<bool> {
        // SAFETY: both are live objects of the table's exact type.
        let (result, failed) = unsafe {
            if self.is_str {
                let c = ffi::PyUnicode_Compare(x, y);
                (c == 0, c == -1 && !ffi::PyErr_Occurred().is_null())
            } else {
                let c = ffi::PyObject_RichCompareBool(x, y, ffi::Py_EQ);
                (c == 1, c == -1)
            }
        };
        if failed {
            return Err(PyErr::fetch(py));
        }
        Ok(result)
    }
}

/// `x == y` for two exact strs, as `str.__eq__` decides it (equal length, kind and code units), read
/// from the objects; None for a string not in canonical form yet (a 3.11 legacy string), which
/// `PyUnicode_Compare` then handles.
///
/// Performance notes: when two line lists do not share objects (two reads of a file), every line
/// of `a` is compared with `b`'s equal line; `PyUnicode_Compare` (two calls, type checks, then a
/// three-way memcmp) took ~15% of such a line diff (perf).
///
/// SAFETY: `x` and `y` must be live exact strs.
#[cfg(not(any(Py_LIMITED_API, PyPy, GraalPy, Py_3_14)))]
#[inline]
unsafe fn str_equal(x: *mut ffi::PyObject, y: *mut ffi::PyObject) -> Option<bool> {
    #[cfg(not(Py_3_12))]
    if ffi::PyUnicode_IS_READY(x) == 0 || ffi::PyUnicode_IS_READY(y) == 0 {
        return None;
    }
    let len = ffi::PyUnicode_GET_LENGTH(x) as usize;
    let kind = ffi::PyUnicode_KIND(x);
    if len != ffi::PyUnicode_GET_LENGTH(y) as usize || kind != ffi::PyUnicode_KIND(y) {
        return Some(false);
    }
    let bytes = len * kind as usize;
    let (px, py) = (
        ffi::PyUnicode_DATA(x).cast::<u8>(),
        ffi::PyUnicode_DATA(y).cast::<u8>(),
    );
    Some(std::slice::from_raw_parts(px, bytes) == std::slice::from_raw_parts(py, bytes))
}

/// `hash(item)` of an exact `str` (`is_str`) or `bytes`, which cache it after the first call: a
/// `str`'s cache is read directly, except in an `abi3` build (or on PyPy).
#[inline]
fn hash_of(py: Python<'_>, item: *mut ffi::PyObject, is_str: bool) -> PyResult<ffi::Py_hash_t> {
    #[cfg(not(any(Py_LIMITED_API, PyPy, GraalPy)))]
    if is_str {
        // SAFETY: an exact str; -1 means not computed yet.
        let cached = unsafe { (*item.cast::<ffi::PyASCIIObject>()).hash };
        if cached != -1 {
            return Ok(cached);
        }
    }
    #[cfg(any(Py_LIMITED_API, PyPy, GraalPy))]
    let _ = is_str;
    // SAFETY: a live object.
    match unsafe { ffi::PyObject_Hash(item) } {
        -1 => Err(PyErr::fetch(py)),
        hash => Ok(hash),
    }
}

/// How an [`ElementTable`] hashes its elements. Any hash that equal elements share gives the same
/// ids, so this decides only the speed.
///
/// Performance notes (alternating runs of two builds in one process, line diffs of
/// bench_difflib.py's files): Python computes a str's `hash()` once (SipHash-1-3, ~45 ns a source
/// line with the call) and caches it in the object. Lines just read from a file have none cached,
/// and hashing them was over half of such a diff; foldhash of the code units made that diff ~34%
/// faster. On lines hashed before (diffed again, or used as dict keys) reading the cache is
/// cheaper, and foldhash made the diff ~35% slower there. So a table takes foldhash only when its
/// first elements have no cached hash: ~31% faster on fresh lines, unchanged on hashed ones. A
/// hand-written inline hash (one multiply chain over 16-byte steps) was ~4% slower than foldhash's
/// two independent lanes, and one with a straight path for 17-64 bytes (four clamped 16-byte
/// chunks) no faster: reading a line costs more than hashing it.
#[derive(Clone, Copy)]
enum Hashing {
    /// Python's `hash()`, which a str or bytes caches after computing it once.
    Python,
    /// foldhash (seeded once per process) of a str's code units in canonical form, read in place:
    /// equal strs have the same kind and units.
    #[cfg(not(any(Py_LIMITED_API, PyPy, GraalPy, Py_3_14)))]
    Units(&'static foldhash::SharedSeed),
}

/// How many leading elements [`Hashing::for_items`] looks at.
#[cfg(not(any(Py_LIMITED_API, PyPy, GraalPy, Py_3_14)))]
const HASHING_SAMPLE: usize = 16;

impl Hashing {
    /// `Units` when `items` are strs and one of the first [`HASHING_SAMPLE`] has no cached hash
    /// (a list of fresh lines), else `Python`.
    fn for_items(items: &Items<'_, '_>, is_str: bool) -> Self {
        #[cfg(not(any(Py_LIMITED_API, PyPy, GraalPy, Py_3_14)))]
        if is_str
            && (0..items.len.min(HASHING_SAMPLE)).any(|i| {
                let item = items.get(i);
                // SAFETY: a live object, of exact type str before its hash field is read.
                ElementTable::admits(true, item)
                    && unsafe { (*item.cast::<ffi::PyASCIIObject>()).hash } == -1
            })
        {
            return Hashing::Units(foldhash::SharedSeed::global_random());
        }
        let _ = (items, is_str);
        Hashing::Python
    }

    /// Whether hashing reads each element's units (not only its header).
    #[inline(always)]
    fn reads_units(self) -> bool {
        !matches!(self, Hashing::Python)
    }

    /// The hash of `item`, an exact str (`is_str`) or exact bytes.
    #[inline(always)]
    fn hash(
        self,
        py: Python<'_>,
        item: *mut ffi::PyObject,
        is_str: bool,
    ) -> PyResult<ffi::Py_hash_t> {
        match self {
            Hashing::Python => hash_of(py, item, is_str),
            #[cfg(not(any(Py_LIMITED_API, PyPy, GraalPy, Py_3_14)))]
            Hashing::Units(seed) => {
                use std::hash::Hasher;
                debug_assert!(is_str);
                // SAFETY: a Units table holds strs, and `item` is a live exact str (checked by the
                // caller).
                let units = unsafe { str_units(py, item)? };
                let mut hasher = foldhash::quality::FoldHasher::with_seed(0, seed);
                hasher.write(units);
                Ok(hasher.finish() as ffi::Py_hash_t)
            }
        }
    }
}

/// The code units of an exact str, in place (readied first if it is a 3.11 legacy string).
///
/// SAFETY: `s` must be a live exact str; the slice lives as long as it does.
#[cfg(not(any(Py_LIMITED_API, PyPy, GraalPy, Py_3_14)))]
#[inline(always)]
unsafe fn str_units<'a>(py: Python<'_>, s: *mut ffi::PyObject) -> PyResult<&'a [u8]> {
    #[cfg(not(Py_3_12))]
    if ffi::PyUnicode_READY(s) == -1 {
        return Err(PyErr::fetch(py));
    }
    #[cfg(Py_3_12)]
    let _ = py;
    let len = ffi::PyUnicode_GET_LENGTH(s) as usize * ffi::PyUnicode_KIND(s) as usize;
    Ok(std::slice::from_raw_parts(
        ffi::PyUnicode_DATA(s).cast::<u8>(),
        len,
    ))
}

/// difflib's index of the second sequence (`b2j`, `bjunk`, `bpopular`), built once per `b` and shared
/// by every first sequence matched against it: the core of `memdedup.difflib.SequenceMatcher`.
#[pyclass(frozen, module = "memdedup._core")]
struct SequenceIndex {
    side: BSide<u32>,
    /// For an index built by `of_elements`: the elements behind the ids.
    table: Option<ElementTable>,
}

/// difflib's index of `codes`; `junk` lists the junk codes. Dense first-occurrence codes (from an
/// [`ElementTable`]) skip the interning map.
fn build_side(py: Python<'_>, codes: &[u32], autojunk: bool, junk: &[u32]) -> BSide<u32> {
    let junk: std::collections::HashSet<u32> = junk.iter().copied().collect();
    detach_if_large(py, codes.len(), move || {
        let mut side = BSide::default();
        if junk.is_empty() {
            side.rebuild_dense(codes, autojunk, None);
        } else {
            side.rebuild_dense(codes, autojunk, Some(&mut |c: u32| junk.contains(&c)));
        }
        side
    })
}

#[pymethods]
impl SequenceIndex {
    #[new]
    #[pyo3(signature = (b, *, autojunk = true, junk = None))]
    fn new(
        py: Python<'_>,
        b: &Bound<'_, PyAny>,
        autojunk: bool,
        junk: Option<Vec<u32>>,
    ) -> PyResult<Self> {
        let codes = element_codes(b)?;
        let side = build_side(py, &codes, autojunk, &junk.unwrap_or_default());
        Ok(SequenceIndex { side, table: None })
    }

    /// The index of an exact `list` or `tuple` of exact `str`s (or of exact `bytes`): elements are
    /// coded in Rust with `dict` semantics. `isjunk` is called once per distinct element, in
    /// first-occurrence order, as difflib calls it; `junk` gives the junk ids instead (for
    /// unpickling). None when `b` is anything else.
    #[staticmethod]
    #[pyo3(signature = (b, *, autojunk = true, isjunk = None, junk = None))]
    fn of_elements(
        py: Python<'_>,
        b: &Bound<'_, PyAny>,
        autojunk: bool,
        isjunk: Option<&Bound<'_, PyAny>>,
        junk: Option<Vec<u32>>,
    ) -> PyResult<Option<Self>> {
        let Some(items) = Items::of(b) else {
            return Ok(None);
        };
        if items.len >= u32::MAX as usize {
            return Ok(None);
        }
        let Some((table, ids, counts)) = ElementTable::build(py, &items)? else {
            return Ok(None);
        };
        // isjunk may run any code (even mutate `b`): no item of `b` is read past here.
        let mut is_junk = vec![false; counts.len()];
        let mut any_junk = false;
        for id in junk.unwrap_or_default() {
            if let Some(flag) = is_junk.get_mut(id as usize) {
                (*flag, any_junk) = (true, true);
            }
        }
        if let Some(isjunk) = isjunk {
            for (flag, elem) in is_junk.iter_mut().zip(&table.elems) {
                if isjunk.call1((elem.bind(py),))?.is_truthy()? {
                    (*flag, any_junk) = (true, true);
                }
            }
        }
        let side = detach_if_large(py, ids.len(), move || {
            let mut junk_of = |id: u32| is_junk[id as usize];
            let junk_of: Option<&mut dyn FnMut(u32) -> bool> = any_junk.then_some(&mut junk_of);
            BSide::of_dense_ids(ids, counts, autojunk, junk_of)
        });
        Ok(Some(SequenceIndex {
            side,
            table: Some(table),
        }))
    }

    /// `a` coded against this index's elements (ids absent from `b` become one id `b` lacks), or None
    /// when this index was not built by `of_elements`, or `a` is not an exact `list`/`tuple` of
    /// elements of `b`'s type (the caller then codes it with a dict).
    fn encode(&self, py: Python<'_>, a: &Bound<'_, PyAny>) -> PyResult<Option<Codes>> {
        let (Some(table), Some(items)) = (&self.table, Items::of(a)) else {
            return Ok(None);
        };
        Ok(table
            .code(py, &items, &self.side)?
            .map(|codes| Codes { codes }))
    }

    /// The distinct elements of `b` by id, for an index built by `of_elements` (else None).
    fn elements(&self, py: Python<'_>) -> Option<Vec<Py<PyAny>>> {
        let table = self.table.as_ref()?;
        Some(table.elems.iter().map(|e| e.clone_ref(py)).collect())
    }

    fn __len__(&self) -> usize {
        self.side.len()
    }

    /// difflib's `find_longest_match(alo, ahi, blo, bhi)` of `a` against this `b`.
    fn find_longest_match(
        &self,
        py: Python<'_>,
        a: &Bound<'_, PyAny>,
        alo: usize,
        ahi: usize,
        blo: usize,
        bhi: usize,
    ) -> PyResult<(usize, usize, usize)> {
        let a = element_codes(a)?;
        if alo > ahi || ahi > a.len() || blo > bhi || bhi > self.side.len() {
            return Err(to_pyerr(
                py,
                Error::InvalidInput(format!(
                    "bounds ({alo}, {ahi}, {blo}, {bhi}) are outside sequences of length {} and {}",
                    a.len(),
                    self.side.len()
                )),
            ));
        }
        Ok(with_matcher(|m| {
            m.set_a(&a, &self.side);
            m.find_longest_match(&self.side, alo, ahi, blo, bhi)
        }))
    }

    /// difflib's `get_matching_blocks()` without the `(len(a), len(b), 0)` sentinel.
    fn matching_blocks(
        &self,
        py: Python<'_>,
        a: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<(usize, usize, usize)>> {
        let a = element_codes(a)?;
        let side = &self.side;
        Ok(detach_if_large(py, a.len() + side.len(), || {
            with_matcher(|m| {
                m.set_a(&a, side);
                m.matching_blocks(side)
            })
        }))
    }

    /// difflib's `get_opcodes()`.
    fn opcodes<'py>(&self, py: Python<'py>, a: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        let mut blocks = self.matching_blocks(py, a)?;
        blocks.push((a.len()?, self.side.len(), 0));
        let tags = [
            pyo3::intern!(py, "replace"),
            pyo3::intern!(py, "delete"),
            pyo3::intern!(py, "insert"),
            pyo3::intern!(py, "equal"),
        ];
        opcode_list(py, &matcher::opcodes(&blocks), tags.map(|tag| tag.as_ptr()))
    }

    /// `M`, the total size of the matching blocks.
    fn matches(&self, py: Python<'_>, a: &Bound<'_, PyAny>) -> PyResult<usize> {
        let a = element_codes(a)?;
        let side = &self.side;
        Ok(detach_if_large(py, a.len() + side.len(), || {
            with_matcher(|m| {
                m.set_a(&a, side);
                m.matches(side)
            })
        }))
    }

    /// The multiset intersection size behind `quick_ratio()`.
    fn quick_matches(&self, a: &Bound<'_, PyAny>) -> PyResult<usize> {
        let a = element_codes(a)?;
        Ok(with_matcher(|m| {
            m.set_a(&a, &self.side);
            m.quick_matches(&self.side)
        }))
    }

    /// The junk elements (`bjunk`), in first-occurrence order.
    fn junk(&self) -> Vec<u32> {
        self.side.junk_elements()
    }

    /// The popular elements (`bpopular`), in first-occurrence order.
    fn popular(&self) -> Vec<u32> {
        self.side.popular_elements()
    }

    /// `b2j` as `(element, positions)` pairs in first-occurrence order.
    fn b2j(&self) -> Vec<(u32, Vec<u32>)> {
        self.side.b2j()
    }
}

/// difflib's opcodes as its list of `(tag, i1, i2, j1, j2)` tuples; `tags` are the four tag strs
/// (borrowed), in [`matcher::Tag`] order.
///
/// Performance notes: opcode lists are long in line diffs (~2,000 for the bench's 10 files at 10%
/// edited), and making their objects was ~12% of an `opcodes` call there (perf). Made at its size
/// with the tuples filled in place (`PyList_SET_ITEM`, `PyTuple_SET_ITEM`), rather than through
/// pyo3's `PyTuple::new` and `append`, the calls took 3-6% less time (alternating runs, the bench's
/// files at 2% and 10% edited). Each opcode shares the ints where the one before ended.
fn opcode_list<'py>(
    py: Python<'py>,
    codes: &[(matcher::Tag, usize, usize, usize, usize)],
    tags: [*mut ffi::PyObject; 4],
) -> PyResult<Bound<'py, PyList>> {
    let int = |v: usize| -> PyResult<*mut ffi::PyObject> {
        // SAFETY: returns a new reference, or NULL with an exception set.
        let obj = unsafe { ffi::PyLong_FromSize_t(v) };
        if obj.is_null() {
            return Err(PyErr::fetch(py));
        }
        Ok(obj)
    };
    // SAFETY: a new list of `codes.len()` NULL items, each set below before it is returned (a list
    // or tuple whose items are NULL is only deallocated, on an error, which allows NULL items);
    // every `fill_item` gives the container a new reference, taken just before.
    unsafe {
        let list =
            Bound::from_owned_ptr_or_err(py, ffi::PyList_New(codes.len() as ffi::Py_ssize_t))?;
        // Where the previous opcode ended, and its `i2`, `j2` ints (owned by its tuple).
        let mut ends: Option<(usize, usize, *mut ffi::PyObject, *mut ffi::PyObject)> = None;
        for (k, &(tag, i1, i2, j1, j2)) in codes.iter().enumerate() {
            let tuple = ffi::PyTuple_New(5);
            if tuple.is_null() {
                return Err(PyErr::fetch(py));
            }
            fill_item(list.as_ptr(), k, tuple, true);
            let tag = tags[tag as usize];
            ffi::Py_INCREF(tag);
            fill_item(tuple, 0, tag, false);
            match ends {
                Some((pi, pj, pio, pjo)) if pi == i1 && pj == j1 => {
                    ffi::Py_INCREF(pio);
                    fill_item(tuple, 1, pio, false);
                    ffi::Py_INCREF(pjo);
                    fill_item(tuple, 3, pjo, false);
                }
                _ => {
                    fill_item(tuple, 1, int(i1)?, false);
                    fill_item(tuple, 3, int(j1)?, false);
                }
            }
            let i2o = int(i2)?;
            fill_item(tuple, 2, i2o, false);
            let j2o = int(j2)?;
            fill_item(tuple, 4, j2o, false);
            ends = Some((i2, j2, i2o, j2o));
        }
        Ok(list.cast_into_unchecked())
    }
}

/// Put `item` (a new reference, which this steals) at `i` of a brand new `list` (`is_list`) or
/// tuple, whose slot `i` is still NULL: in place, except where the layout is not public.
///
/// SAFETY: as `PyList_SET_ITEM` / `PyTuple_SET_ITEM` require (`i` in bounds, the container new and
/// referenced once).
#[inline(always)]
unsafe fn fill_item(
    container: *mut ffi::PyObject,
    i: usize,
    item: *mut ffi::PyObject,
    is_list: bool,
) {
    let i = i as ffi::Py_ssize_t;
    #[cfg(not(any(Py_LIMITED_API, PyPy, GraalPy)))]
    if is_list {
        ffi::PyList_SET_ITEM(container, i, item);
    } else {
        ffi::PyTuple_SET_ITEM(container, i, item);
    }
    // Neither call can fail here: the index is in bounds and a new tuple is referenced once.
    #[cfg(any(Py_LIMITED_API, PyPy, GraalPy))]
    if is_list {
        ffi::PyList_SetItem(container, i, item);
    } else {
        ffi::PyTuple_SetItem(container, i, item);
    }
}

/// The labels of `seq`, coerced as `str(label or "")`.
///
/// Performance notes: in a large list the strs lie scattered in memory, and touching each one
/// costs a cache miss (~300 ns here, as much as a whole decision); a list is therefore walked with
/// its items a few places ahead prefetched, so those misses overlap.
fn labels_of<'py>(seq: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyString>>> {
    let mut out = Vec::new();
    for_each_label(seq, |s| {
        out.push(s);
        Ok(())
    })?;
    Ok(out)
}

/// Call `f` with each label of `seq`, coerced as `str(label or "")`, in order.
fn for_each_label<'py>(
    seq: &Bound<'py, PyAny>,
    mut f: impl FnMut(Bound<'py, PyString>) -> PyResult<()>,
) -> PyResult<()> {
    if let Ok(list) = seq.cast::<PyList>() {
        return for_each_label_in(list, 0..list.len(), f);
    }
    for item in seq.try_iter()? {
        f(label_str(&item?)?)?;
    }
    Ok(())
}

/// `for_each_label` over the items `range` of `list` (an IndexError if the list gets shorter).
fn for_each_label_in<'py>(
    list: &Bound<'py, PyList>,
    range: std::ops::Range<usize>,
    mut f: impl FnMut(Bound<'py, PyString>) -> PyResult<()>,
) -> PyResult<()> {
    each_list_item(list, range, |item| {
        // SAFETY: a live item of the list; this takes a reference of our own.
        f(label_str(&unsafe {
            Bound::from_borrowed_ptr(list.py(), item)
        })?)
    })
}

/// Call `f` with each item of `list` in `range`, borrowed (an IndexError if the list gets
/// shorter), with items a few places ahead prefetched. An item stays alive while `f` runs no
/// Python code; `f` takes a reference of its own before it runs any.
fn each_list_item(
    list: &Bound<'_, PyList>,
    range: std::ops::Range<usize>,
    mut f: impl FnMut(*mut ffi::PyObject) -> PyResult<()>,
) -> PyResult<()> {
    let ptr = list.as_ptr();
    for i in range.clone() {
        // Read at the live length: a label's __str__ may run any code, shortening the list too.
        if i + PREFETCH_AHEAD < range.end {
            // SAFETY: a list we hold; the item (or null) is only used as an address to prefetch.
            prefetch_object(unsafe { list_item(ptr, i + PREFETCH_AHEAD) });
        }
        // SAFETY: a list we hold.
        let item = unsafe { list_item(ptr, i) };
        if item.is_null() {
            return Err(pyo3::exceptions::PyIndexError::new_err(
                "list index out of range",
            ));
        }
        f(item)?;
    }
    Ok(())
}

/// The length of an exact str, read from the object except in an `abi3` build (or on PyPy).
///
/// SAFETY: `s` must be a live exact str.
#[inline]
unsafe fn str_len(s: *mut ffi::PyObject) -> usize {
    #[cfg(not(any(Py_LIMITED_API, PyPy, GraalPy, Py_3_12)))]
    if ffi::PyUnicode_IS_READY(s) == 0 {
        // A 3.11 legacy string: the function readies it first.
        return ffi::PyUnicode_GetLength(s) as usize;
    }
    #[cfg(not(any(Py_LIMITED_API, PyPy, GraalPy)))]
    return ffi::PyUnicode_GET_LENGTH(s) as usize;
    #[cfg(any(Py_LIMITED_API, PyPy, GraalPy))]
    return ffi::PyUnicode_GetLength(s) as usize;
}

/// Item `i` of `list`, borrowed, or null when `i` is past its current end (no error set): read from
/// the list itself, except in an `abi3` build (or on PyPy).
///
/// SAFETY: `list` must be a live list.
#[inline]
unsafe fn list_item(list: *mut ffi::PyObject, i: usize) -> *mut ffi::PyObject {
    #[cfg(not(any(Py_LIMITED_API, PyPy, GraalPy)))]
    let (len, item) = (ffi::PyList_GET_SIZE(list), ffi::PyList_GET_ITEM);
    #[cfg(any(Py_LIMITED_API, PyPy, GraalPy))]
    let (len, item) = (ffi::PyList_Size(list), ffi::PyList_GetItem);
    if i < len as usize {
        item(list, i as ffi::Py_ssize_t)
    } else {
        std::ptr::null_mut()
    }
}

/// How many items ahead of its use an object (or table slot) is prefetched.
const PREFETCH_AHEAD: usize = 12;

/// Ask the CPU to load an object's first two cache lines (a short str's header and data).
#[inline]
fn prefetch_object(obj: *mut ffi::PyObject) {
    if !obj.is_null() {
        prefetch_address(obj.cast());
        prefetch_address(obj.cast::<i8>().wrapping_add(64));
    }
}

/// Ask the CPU to load the cache line holding `address` (a hint: no effect elsewhere than x86_64).
#[inline]
fn prefetch_address(address: *const i8) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: prefetching never faults, whatever the address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(address) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}

/// The normalised code points of `s` in `out`: lower-cased exactly as Python lower-cases it
/// (`lower_wide`), then collapsed; in the caller's buffers. False (`out` undefined) when only
/// Python's own `lower` of the whole text is exact.
fn normalised_codepoints_into(
    s: &Bound<'_, PyString>,
    codepoints: &mut Vec<u32>,
    lowered: &mut Vec<u32>,
    out: &mut Vec<u32>,
) -> PyResult<bool> {
    load_codepoints(s, codepoints)?;
    if !lower_wide(s.py(), codepoints, lowered)? {
        return Ok(false);
    }
    crate::normalise::collapse_lowered(lowered, out);
    Ok(true)
}

fn normalise_str(s: &Bound<'_, PyString>) -> PyResult<Text> {
    if let Some(utf8) = utf8_of(s) {
        let mut out = Vec::new();
        if crate::normalise::normalise_ascii(utf8, &mut out) {
            return Ok(Text::Narrow(out));
        }
    }
    let text = text_of(s)?;
    if let Text::Narrow(bytes) = &text {
        // Every code point below 256: lower-cased exactly in Rust (normalise_latin1).
        let mut out = Vec::new();
        crate::normalise::normalise_latin1(bytes, &mut out);
        return Ok(Text::Narrow(out));
    }
    if let Text::Wide(cps) = &text {
        let mut lowered = Vec::with_capacity(cps.len());
        if lower_wide(s.py(), cps, &mut lowered)? {
            let mut out = Vec::with_capacity(lowered.len());
            crate::normalise::collapse_lowered(&lowered, &mut out);
            return Ok(Text::from_codepoints(&out));
        }
    }
    // An interned name: CPython's method cache is keyed by interned names, and a fresh "lower"
    // string made every non-ASCII label's lookup walk the type's dict (~700 instructions a call).
    let lower = s.call_method0(pyo3::intern!(s.py(), "lower"))?;
    Ok(text_of(&lower.cast_into::<PyString>()?)?.collapse_lowered())
}

/// GREEK CAPITAL LETTER SIGMA: the one code point whose `str.lower()` depends on its neighbours
/// (CPython's `handle_capital_sigma`, the final-sigma rule).
const CAPITAL_SIGMA: u32 = 0x3A3;

/// At most this many code points' lower-casings are kept per thread; past it, labels with a code
/// point not yet kept are lower-cased by Python whole.
const LOWER_CACHE_MAX: usize = 1 << 16;

/// A code point's `str.lower()`: at most three code points in every Unicode version so far.
type Lowered = ([u32; 3], u8);

thread_local! {
    static LOWER_CACHE: RefCell<
        std::collections::HashMap<u32, Lowered, std::hash::BuildHasherDefault<matcher::IdHasher>>,
    > = RefCell::default();
}

/// `str.lower()` of code points (some above 255) into `out`, exactly as Python computes it: false
/// (`out` undefined) when that needs Python's own `lower` on the whole text.
///
/// CPython lower-cases a str one code point at a time (`_PyUnicode_ToLowerFull`, from the running
/// interpreter's Unicode database) except U+03A3, which it maps by context. So each code point
/// above 255 is asked of Python once (a one-character str's `lower()`) and kept per thread, and
/// those below 256 take `lower_latin1` (checked against Python for all 256 by a test).
///
/// Performance notes: `lower()` through Python, with the second pass over its result, took about
/// a third of a `labels_match` call's instructions on prefix-sharing label pairs, though only
/// one label in twenty has a code point above 127.
fn lower_wide(py: Python<'_>, cps: &[u32], out: &mut Vec<u32>) -> PyResult<bool> {
    if cps.contains(&CAPITAL_SIGMA) {
        return Ok(false);
    }
    out.clear();
    out.reserve(cps.len());
    let mut rest = cps;
    loop {
        // A run below 256 in one mapping pass, then the code point that ends it.
        let narrow = rest.iter().position(|&c| c >= 256).unwrap_or(rest.len());
        let table = &crate::normalise::LOWER_LATIN1;
        out.extend(
            rest[..narrow]
                .iter()
                .map(|&c| table[c as usize & 0xFF] as u32),
        );
        let Some(&c) = rest.get(narrow) else {
            return Ok(true);
        };
        rest = &rest[narrow + 1..];
        let cached = LOWER_CACHE.with(|cache| cache.borrow().get(&c).copied());
        let (mapped, len) = match cached {
            Some(lowered) => lowered,
            None => {
                let Some(lowered) = lower_by_python(py, c)? else {
                    return Ok(false);
                };
                let kept = LOWER_CACHE.with(|cache| {
                    let mut cache = cache.borrow_mut();
                    (cache.len() < LOWER_CACHE_MAX)
                        .then(|| cache.insert(c, lowered))
                        .is_some()
                });
                if !kept {
                    return Ok(false);
                }
                lowered
            }
        };
        out.extend_from_slice(&mapped[..len as usize]);
    }
}

/// `chr(c).lower()`, asked of Python; None when it is longer than [`Lowered`] holds.
fn lower_by_python(py: Python<'_>, c: u32) -> PyResult<Option<Lowered>> {
    // SAFETY: PyUnicode_FromOrdinal returns a new reference, or NULL with an exception set (for
    // c above 0x10FFFF, which no str holds); lone surrogates are valid ordinals.
    let ch = unsafe {
        Bound::from_owned_ptr_or_err(py, ffi::PyUnicode_FromOrdinal(c as std::ffi::c_int))?
    };
    let lowered = ch.call_method0(pyo3::intern!(py, "lower"))?;
    let cps = codepoints(lowered.cast::<PyString>()?)?;
    if cps.len() > 3 {
        return Ok(None);
    }
    let mut mapped = [0; 3];
    mapped[..cps.len()].copy_from_slice(&cps);
    Ok(Some((mapped, cps.len() as u8)))
}

fn float_threshold(threshold: &Threshold<'_>, what: &str) -> PyResult<f64> {
    match threshold {
        Threshold::Float(t) => Ok(*t),
        Threshold::Python(t) => t.extract::<f64>().map_err(|_| {
            to_pyerr(
                t.py(),
                Error::WrongType(format!("{what} must be a real number")),
            )
        }),
    }
}

/// The bytes of an ASCII str, for the GIL-free phase of a batch.
#[derive(Clone, Copy)]
struct AsciiRef(*const u8, usize);

// SAFETY: an `AsciiRef` points into an immutable str that the batch function keeps alive (it holds
// a reference) until its GIL-free phase has returned; nothing writes to those bytes.
unsafe impl Send for AsciiRef {}
unsafe impl Sync for AsciiRef {}

impl AsciiRef {
    fn of(utf8: &[u8]) -> AsciiRef {
        AsciiRef(utf8.as_ptr(), utf8.len())
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: see the `Send` impl: the str is alive and immutable while the ref is used.
        unsafe { std::slice::from_raw_parts(self.0, self.1) }
    }
}

/// A batch's labels as read with the GIL held, for its GIL-free phase: byte strings back to back
/// in one buffer (ASCII labels as they are, to be normalised by whichever thread decides them;
/// other labels below 256 normalised), wider labels normalised, apart.
///
/// Performance notes: the strs of a large batch lie scattered in memory and each one misses the
/// cache. This loop used to keep pointers into the strs for the parallel phase, which then missed
/// the cache on every str a second time (perf: normalising there was ~25% of `match_pairs`, the
/// pointer loop ~24%); it now copies each label while it is in the cache, and keeps no reference
/// to the strs. Normalising ASCII labels here as well left this (GIL-holding) loop with twice the
/// deciding threads' work in a pipelined call, so that stays with the deciding threads.
#[derive(Default)]
struct LabelBatch {
    bytes: Vec<u8>,
    wide: Vec<Text>,
    views: Vec<LabelView>,
}

/// Where a label of a [`LabelBatch`] is.
#[derive(Clone, Copy)]
enum LabelView {
    /// An ASCII label as read: a range of the bytes.
    Ascii(usize, usize),
    /// A normalised label below 256: a range of the bytes.
    Normalised(usize, usize),
    /// A normalised wider label: an index of the wide texts.
    Wide(usize),
}

impl LabelBatch {
    /// The labels of `seq`, coerced as `str(label or "")`.
    fn of(seq: &Bound<'_, PyAny>) -> PyResult<Self> {
        let mut labels = LabelBatch::default();
        for_each_label(seq, |s| labels.push(&s))?;
        Ok(labels)
    }

    /// `of` the items `start..end` of `list` (an IndexError if the list gets shorter).
    ///
    /// Performance notes: an ASCII str is read through the list's borrowed reference: taking and
    /// dropping references (two each, through `label_str`) were function calls that also wrote to
    /// every str's header, in a loop bound by reading those headers.
    fn of_list_range(list: &Bound<'_, PyList>, start: usize, end: usize) -> PyResult<Self> {
        let mut labels = LabelBatch::default();
        each_list_item(list, start..end, |item| {
            // SAFETY: a live item, exact str checked; the list keeps it alive while no Python code
            // runs, and none does until its bytes are copied.
            let utf8 = unsafe {
                (ffi::PyUnicode_CheckExact(item) != 0)
                    .then(|| utf8_of_ptr(item))
                    .flatten()
            };
            match utf8 {
                Some(utf8) if utf8.is_ascii() => labels.push_ascii(utf8),
                // Anything else may run Python code: with a reference of our own.
                // SAFETY: a live item of the list (see above).
                _ => labels.push(&label_str(&unsafe {
                    Bound::from_borrowed_ptr(list.py(), item)
                })?)?,
            }
            Ok(())
        })?;
        Ok(labels)
    }

    fn push_ascii(&mut self, utf8: &[u8]) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(utf8);
        self.views.push(LabelView::Ascii(start, self.bytes.len()));
    }

    fn push(&mut self, s: &Bound<'_, PyString>) -> PyResult<()> {
        if let Some(utf8) = utf8_of(s).filter(|utf8| utf8.is_ascii()) {
            self.push_ascii(utf8);
            return Ok(());
        }
        let start = self.bytes.len();
        let view = match normalise_str(s)? {
            Text::Narrow(v) => {
                self.bytes.extend_from_slice(&v);
                LabelView::Normalised(start, self.bytes.len())
            }
            wide => {
                self.wide.push(wide);
                LabelView::Wide(self.wide.len() - 1)
            }
        };
        self.views.push(view);
        Ok(())
    }

    fn len(&self) -> usize {
        self.views.len()
    }

    /// Label `k` normalised, as bytes (in `scratch` for an ASCII one), or None for a wide label.
    fn normalised<'a>(&'a self, k: usize, scratch: &'a mut Vec<u8>) -> Option<&'a [u8]> {
        match self.views[k] {
            LabelView::Ascii(start, end) => {
                crate::normalise::normalise_ascii(&self.bytes[start..end], scratch);
                Some(scratch)
            }
            LabelView::Normalised(start, end) => Some(&self.bytes[start..end]),
            LabelView::Wide(_) => None,
        }
    }

    /// Label `k` normalised, as a text.
    fn text(&self, k: usize, scratch: &mut Vec<u8>) -> Text {
        match self.normalised(k, scratch) {
            Some(bytes) => Text::Narrow(bytes.to_vec()),
            None => match self.views[k] {
                LabelView::Wide(i) => self.wide[i].clone(),
                _ => unreachable!("only wide labels have no bytes"),
            },
        }
    }
}

/// One thread's state for deciding pairs of [`LabelBatch`]es without allocating.
#[derive(Default)]
struct BatchDecider {
    decider: PairDecider,
    stored: Vec<u8>,
    incoming: Vec<u8>,
}

impl BatchDecider {
    /// `labels_match` of pair `k` of two label batches, as 0 or 1.
    fn decide(&mut self, a: &LabelBatch, b: &LabelBatch, k: usize, p: &MatchParams) -> u8 {
        let BatchDecider {
            decider,
            stored,
            incoming,
        } = self;
        let matched = match (a.normalised(k, stored), b.normalised(k, incoming)) {
            (Some(x), Some(y)) => decider.matches_bytes(x, y, p),
            _ => decider.matches(&a.text(k, stored), &b.text(k, incoming), p),
        };
        matched as u8
    }

    /// `decide` for every pair of two equally long label batches.
    fn decide_all(&mut self, a: &LabelBatch, b: &LabelBatch, p: &MatchParams) -> Vec<u8> {
        (0..a.len()).map(|k| self.decide(a, b, k, p)).collect()
    }
}

/// `labels_match(stored[k], incoming[k])` for every k, decided in parallel without the GIL.
#[pyfunction]
#[pyo3(signature = (stored, incoming, *, threshold = DEFAULT, min_chars = 16))]
fn match_pairs<'py>(
    py: Python<'py>,
    stored: &Bound<'py, PyAny>,
    incoming: &Bound<'py, PyAny>,
    threshold: Threshold<'py>,
    min_chars: i64,
) -> PyResult<Bound<'py, PyBytes>> {
    let p = MatchParams {
        threshold: float_threshold(&threshold, "threshold")?,
        min_chars: min_chars_of(min_chars),
    };
    let unequal = |a: usize, b: usize| {
        to_pyerr(
            py,
            Error::InvalidInput(format!("stored has {a} labels but incoming has {b}")),
        )
    };
    if let (Ok(a), Ok(b)) = (stored.cast::<PyList>(), incoming.cast::<PyList>()) {
        if a.len() != b.len() {
            return Err(unequal(a.len(), b.len()));
        }
        if a.len() >= PIPELINE_MIN_PAIRS && rayon::current_num_threads() > 1 {
            let decided = match_pairs_pipelined(py, a, b, &p)?;
            return Ok(PyBytes::new(py, &decided));
        }
    }
    let a = LabelBatch::of(stored)?;
    let b = LabelBatch::of(incoming)?;
    if a.len() != b.len() {
        return Err(unequal(a.len(), b.len()));
    }
    let decided: Vec<u8> = py.detach(|| {
        (0..a.len())
            .into_par_iter()
            .map_init(BatchDecider::default, |d, k| d.decide(&a, &b, k, &p))
            .collect()
    });
    // One byte per decision (0 or 1), for numpy to view as bool without a list of Python objects.
    Ok(PyBytes::new(py, &decided))
}

/// Pairs `match_pairs` reads and hands to the deciding threads at a time.
const PIPELINE_CHUNK: usize = 2048;

/// From this many pairs (two lists), `match_pairs` decides while it reads.
const PIPELINE_MIN_PAIRS: usize = 4 * PIPELINE_CHUNK;

/// `match_pairs` of two equally long lists, decided while they are read: this thread reads the
/// labels chunk by chunk (which needs the GIL), the other threads of rayon's pool size decide the
/// chunks read so far (which does not), and this thread joins them, without the GIL, once every
/// label is read. A chunk read while the deciding threads are behind is decided here at once.
///
/// Performance notes: reading a large batch's scattered strs is bound by cache misses and took
/// about as long as deciding its pairs on one core (perf); read first and then decided on two
/// cores, 188,479 real prefix pairs took 1.1-1.3 us a pair after the first call, and 0.34-0.48
/// decided while read (the final build, in-process runs and bench_batch.py).
fn match_pairs_pipelined(
    py: Python<'_>,
    stored: &Bound<'_, PyList>,
    incoming: &Bound<'_, PyList>,
    p: &MatchParams,
) -> PyResult<Vec<u8>> {
    type Chunk = (usize, LabelBatch, LabelBatch);
    let n = stored.len();
    let workers = rayon::current_num_threads() - 1;
    let (sender, receiver) = std::sync::mpsc::sync_channel::<Chunk>(2 * workers);
    let receiver = std::sync::Mutex::new(receiver);
    // Decide chunks until the channel is closed and empty.
    let decide_chunks = || -> Vec<(usize, Vec<u8>)> {
        let mut d = BatchDecider::default();
        let mut decided = Vec::new();
        loop {
            let next = match receiver.lock() {
                Ok(receiver) => receiver.recv(),
                Err(_) => return decided,
            };
            let Ok((at, a, b)) = next else {
                return decided;
            };
            decided.push((at, d.decide_all(&a, &b, p)));
        }
    };
    std::thread::scope(|scope| -> PyResult<Vec<u8>> {
        let handles: Vec<_> = (0..workers).map(|_| scope.spawn(decide_chunks)).collect();
        // Chunks this thread decided itself: those it read while the deciding threads were behind
        // (so it never waits on them with the GIL held).
        let mut own = Vec::new();
        let mut d = BatchDecider::default();
        let read = (|| -> PyResult<()> {
            for start in (0..n).step_by(PIPELINE_CHUNK) {
                let end = (start + PIPELINE_CHUNK).min(n);
                let a = LabelBatch::of_list_range(stored, start, end)?;
                let b = LabelBatch::of_list_range(incoming, start, end)?;
                if let Err(
                    std::sync::mpsc::TrySendError::Full((at, a, b))
                    | std::sync::mpsc::TrySendError::Disconnected((at, a, b)),
                ) = sender.try_send((start, a, b))
                {
                    own.push((at, d.decide_all(&a, &b, p)));
                }
            }
            Ok(())
        })();
        drop(sender);
        let mut chunks = py.detach(decide_chunks);
        chunks.append(&mut own);
        for handle in handles {
            chunks.extend(handle.join().map_err(|_| {
                // A bug, not bad input: said as such rather than as a panic crossing into Python.
                pyo3::exceptions::PyRuntimeError::new_err(
                    "memdedup internal error: a thread deciding label pairs panicked",
                )
            })?);
        }
        read?;
        let mut decided = vec![0u8; n];
        for (at, out) in chunks {
            decided[at..at + out.len()].copy_from_slice(&out);
        }
        Ok(decided)
    })
}

/// The exact ratio matrix `ratio(queries[i], choices[j])` as native-endian f64 bytes, row-major;
/// entries under `cutoff` are 0.0.
#[pyfunction]
#[pyo3(signature = (queries, choices, *, autojunk = true, cutoff = 0.0, normalise = false))]
fn cdist<'py>(
    py: Python<'py>,
    queries: &Bound<'py, PyAny>,
    choices: &Bound<'py, PyAny>,
    autojunk: bool,
    cutoff: f64,
    normalise: bool,
) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
    let prepare = |seq: &Bound<'py, PyAny>| -> PyResult<Vec<Text>> {
        seq.try_iter()?
            .map(|item| {
                let item = item?;
                if normalise {
                    normalised(&item)
                } else {
                    text_of(exact_str(&item, "each query and choice")?)
                }
            })
            .collect()
    };
    let (q, c) = (prepare(queries)?, prepare(choices)?);
    let matrix = py.detach(|| crate::batch::cdist(&q, &c, autojunk, cutoff));
    let bytes: Vec<u8> = matrix.iter().flat_map(|v| v.to_ne_bytes()).collect();
    Ok(pyo3::types::PyBytes::new(py, &bytes))
}

/// Replay of a store's writes (see `memdedup.batch.replay`): canonical index, outcome, score per label.
#[pyfunction]
#[pyo3(signature = (labels, partitions, *, threshold = DEFAULT, min_chars = 16, prefix = "raw", prefix_len = 20, query_limit = 20))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn replay(
    py: Python<'_>,
    labels: &Bound<'_, PyAny>,
    partitions: Vec<u32>,
    threshold: Threshold<'_>,
    min_chars: i64,
    prefix: &str,
    prefix_len: usize,
    query_limit: usize,
) -> PyResult<(Vec<u32>, Vec<&'static str>, Vec<f64>)> {
    let prefix_mode = match prefix {
        "raw" => crate::batch::PrefixMode::Raw,
        "normalised" | "normalized" => crate::batch::PrefixMode::Normalised,
        other => {
            return Err(to_pyerr(
                py,
                Error::InvalidInput(format!(
                    "prefix must be 'raw' or 'normalised', not {other:?}"
                )),
            ))
        }
    };
    // Stripped and normalised labels: ASCII ones from their bytes in parallel without the GIL,
    // others here (Python lower-cases them).
    let mut keep = Vec::new();
    let mut views: Vec<Result<AsciiRef, (Text, Text)>> = Vec::new();
    for_each_label(labels, |s| {
        views.push(match utf8_of(&s) {
            Some(utf8) if utf8.is_ascii() => Ok(AsciiRef::of(utf8)),
            _ => Err((text_of(&s)?.strip_py(), normalise_str(&s)?)),
        });
        keep.push(s);
        Ok(())
    })?;
    if views.len() != partitions.len() {
        return Err(to_pyerr(
            py,
            Error::InvalidInput(format!(
                "{} labels but {} partition ids",
                views.len(),
                partitions.len()
            )),
        ));
    }
    // `keep` holds every str the refs point into until this call returns.
    let (stripped, norm): (Vec<Text>, Vec<Text>) = py.detach(|| {
        views
            .par_iter()
            .map(|view| match view {
                Ok(raw) => {
                    let raw = raw.bytes();
                    // Python's str.strip() set (not Rust's trim_ascii: \x0b, \x1c-\x1f count).
                    let space = |c: &u8| crate::normalise::is_py_whitespace(*c as u32);
                    let start = raw.iter().position(|c| !space(c)).unwrap_or(raw.len());
                    let end = raw.iter().rposition(|c| !space(c)).map_or(start, |e| e + 1);
                    let mut norm = Vec::new();
                    crate::normalise::normalise_ascii(raw, &mut norm);
                    (Text::Narrow(raw[start..end].to_vec()), Text::Narrow(norm))
                }
                Err((stripped, norm)) => (stripped.clone(), norm.clone()),
            })
            .unzip()
    });
    let rp = crate::batch::ReplayParams {
        matching: MatchParams {
            threshold: float_threshold(&threshold, "threshold")?,
            min_chars: min_chars_of(min_chars),
        },
        prefix_mode,
        prefix_len,
        query_limit,
    };
    let r = py.detach(|| crate::batch::replay(&stripped, &norm, &partitions, &rp));
    let outcomes = r
        .outcome
        .iter()
        .map(|o| match o {
            Some(crate::batch::Outcome::Collapsed(reason)) => reason.as_str(),
            Some(crate::batch::Outcome::Empty) => "empty",
            _ => "new",
        })
        .collect();
    Ok((r.canonical, outcomes, r.score))
}

/// Every pair `(i, j)`, `i < j`, with `labels_match(labels[i], labels[j])`, no prefix gate: the exact
/// all-pairs join of `crate::join`, without the GIL.
#[pyfunction]
#[pyo3(signature = (labels, *, threshold = DEFAULT, min_chars = 16))]
fn join<'py>(
    py: Python<'py>,
    labels: &Bound<'py, PyAny>,
    threshold: Threshold<'py>,
    min_chars: i64,
) -> PyResult<Bound<'py, PyBytes>> {
    let norm: Vec<Text> = labels_of(labels)?
        .iter()
        .map(normalise_str)
        .collect::<PyResult<_>>()?;
    if norm.len() >= u32::MAX as usize {
        return Err(to_pyerr(
            py,
            Error::InvalidInput("join takes fewer than 2**32 - 1 labels".into()),
        ));
    }
    let p = MatchParams {
        threshold: float_threshold(&threshold, "threshold")?,
        min_chars: min_chars_of(min_chars),
    };
    let pairs = py.detach(|| crate::join::join(&norm, &p));
    // Native-endian u32 pairs (i, j), sorted: numpy views them without a Python object per pair
    // (a list of tuples of the full corpus's 35.5 million pairs took ~8 GiB).
    let flat: Vec<u32> = pairs.iter().flat_map(|&(i, j)| [i, j]).collect();
    // SAFETY: any u32 slice is a valid byte slice of four times its length.
    let bytes = unsafe { std::slice::from_raw_parts(flat.as_ptr().cast::<u8>(), flat.len() * 4) };
    Ok(PyBytes::new(py, bytes))
}

/// Cluster assignment from matching pairs: canonical index and the partner that justified each collapse.
#[pyfunction]
#[pyo3(signature = (n, pairs, *, mode = "canonical"))]
fn clusters(
    py: Python<'_>,
    n: usize,
    pairs: Vec<(u32, u32)>,
    mode: &str,
) -> PyResult<(Vec<u32>, Vec<Option<u32>>)> {
    let mode = match mode {
        "canonical" => crate::batch::ClusterMode::Canonical,
        "components" => crate::batch::ClusterMode::Components,
        other => {
            return Err(to_pyerr(
                py,
                Error::InvalidInput(format!(
                    "mode must be 'canonical' or 'components', not {other:?}"
                )),
            ))
        }
    };
    Ok(py.detach(|| crate::batch::clusters(n, &pairs, mode)))
}

/// Decide many `(stored, incoming)` index pairs of one label list: reason and exact score each.
#[pyfunction]
#[pyo3(signature = (labels, pairs, *, threshold = DEFAULT, min_chars = 16))]
fn pair_reasons(
    py: Python<'_>,
    labels: &Bound<'_, PyAny>,
    pairs: Vec<(u32, u32)>,
    threshold: Threshold<'_>,
    min_chars: i64,
) -> PyResult<(Vec<Option<&'static str>>, Vec<f64>)> {
    let norm: Vec<Text> = labels_of(labels)?
        .iter()
        .map(normalise_str)
        .collect::<PyResult<_>>()?;
    if let Some(&(i, j)) = pairs
        .iter()
        .find(|&&(i, j)| i as usize >= norm.len() || j as usize >= norm.len())
    {
        return Err(to_pyerr(
            py,
            Error::InvalidInput(format!("pair ({i}, {j}) is out of range")),
        ));
    }
    let p = MatchParams {
        threshold: float_threshold(&threshold, "threshold")?,
        min_chars: min_chars_of(min_chars),
    };
    let decided: Vec<(Option<&'static str>, f64)> = py.detach(|| {
        use rayon::prelude::*;
        pairs
            .par_iter()
            .map_init(Matcher::new, |m, &(i, j)| {
                let d = Query::new(norm[j as usize].clone()).decide(m, &norm[i as usize], &p);
                (d.reason.map(|r| r.as_str()), d.score)
            })
            .collect()
    });
    Ok(decided.into_iter().unzip())
}

/// `gil_used`: the bindings read the items of lists and tuples in place, taking no reference to
/// each, which is sound only while the GIL keeps other threads from changing them. A free-threaded
/// CPython re-enables the GIL when it imports this module.
#[pymodule(gil_used = true)]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(normalise_label, m)?)?;
    m.add_function(wrap_pyfunction!(ratio, m)?)?;
    m.add_function(wrap_pyfunction!(quick_ratio, m)?)?;
    m.add_function(wrap_pyfunction!(real_quick_ratio, m)?)?;
    m.add_function(wrap_pyfunction!(matching_blocks, m)?)?;
    m.add_function(wrap_pyfunction!(labels_match, m)?)?;
    m.add_function(wrap_pyfunction!(match_reason, m)?)?;
    m.add_function(wrap_pyfunction!(match_mask, m)?)?;
    m.add_function(wrap_pyfunction!(match_first, m)?)?;
    m.add_function(wrap_pyfunction!(match_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(close_matches, m)?)?;
    m.add_function(wrap_pyfunction!(cdist, m)?)?;
    m.add_function(wrap_pyfunction!(replay, m)?)?;
    m.add_function(wrap_pyfunction!(clusters, m)?)?;
    m.add_function(wrap_pyfunction!(join, m)?)?;
    m.add_function(wrap_pyfunction!(pair_reasons, m)?)?;
    m.add_class::<SequenceIndex>()?;
    m.add_class::<Codes>()?;
    crate::python_scrub::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
