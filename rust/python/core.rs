//! The one-pair and one-against-many functions: `normalise_label`, difflib's ratios and matching
//! blocks of two strs, `labels_match`, `match_reason`, `match_mask`, `match_first`.
//!
//! Performance notes: most calls are on short labels, where the call itself is the cost; the
//! labels are read from the strs' own memory into per-thread buffers and decided without
//! allocating (docs/perf.md, "One pair").

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use super::coerce::{params, MinChars, Threshold, DEFAULT_MIN_CHARS, DEFAULT_THRESHOLD};
use super::error::{type_name, wrong_type};
use super::ffi;
use super::interrupt::{run_here, DETACH_MIN_WORK};
use super::text::{
    label_str, normalise_str, normalised, normalised_bytes_into, normalised_codepoints_into,
    text_of, to_pystring, with_cancelled_matcher, with_scratch, MissingAsEmpty, PairScratch,
};
use crate::contract::MatchParams;
use crate::matcher::{self, ratio_with, BSide};
use crate::text::{Query, Text};

#[pyfunction]
#[pyo3(text_signature = "(label)")]
pub fn normalise_label<'py>(label: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyString>> {
    to_pystring(label.py(), &normalised(label)?)
}

/// Two strs for difflib: exact strs as the core's texts; None when either is a str subclass,
/// which difflib reads through its own `__getitem__`, `__iter__` and `__len__` (the caller then
/// asks difflib). Anything else is an `InputTypeError`.
fn pair_of(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<Option<(Text, Text)>> {
    for (x, name) in [(a, "a"), (b, "b")] {
        if !x.is_instance_of::<PyString>() {
            return Err(wrong_type(
                x.py(),
                format!(
                    "{name} must be str, not {}; memdedup.difflib.SequenceMatcher takes other sequences",
                    type_name(x)
                ),
            ));
        }
    }
    if !a.is_exact_instance_of::<PyString>() || !b.is_exact_instance_of::<PyString>() {
        return Ok(None);
    }
    Ok(Some((text_of(a.cast()?)?, text_of(b.cast()?)?)))
}

static SEQUENCE_MATCHER: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// `difflib.SequenceMatcher(None, a, b, autojunk=autojunk)`: for str subclasses, read as difflib
/// reads them.
fn difflib_matcher<'py>(
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    autojunk: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let py = a.py();
    let class = SEQUENCE_MATCHER.get_or_try_init(py, || {
        Ok::<_, PyErr>(py.import("difflib")?.getattr("SequenceMatcher")?.unbind())
    })?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("autojunk", autojunk)?;
    class.bind(py).call((py.None(), a, b), Some(&kwargs))
}

/// `difflib.SequenceMatcher(None, a, b, autojunk=autojunk).ratio()`, bit for bit.
#[pyfunction]
#[pyo3(signature = (a, b, *, autojunk = true), text_signature = "(a, b, *, autojunk=True)")]
pub fn ratio(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    autojunk: bool,
) -> PyResult<f64> {
    if let (Ok(sa), Ok(sb)) = (a.cast_exact::<PyString>(), b.cast_exact::<PyString>()) {
        if let Some(r) = with_scratch(|s| ratio_in_scratch(s, sa, sb, autojunk))? {
            return Ok(r);
        }
    }
    let Some((a_text, b_text)) = pair_of(a, b)? else {
        return difflib_matcher(a, b, autojunk)?
            .call_method0("ratio")?
            .extract();
    };
    let work = a_text.len() + b_text.len();
    run_here(py, work, |cancel| {
        with_cancelled_matcher(cancel, |m| match (&a_text, &b_text) {
            (Text::Narrow(a), Text::Narrow(b)) => {
                m.try_ratio_with(&mut BSide::default(), a, b, autojunk)
            }
            _ => {
                let (a, b) = (a_text.codepoints_cow()?, b_text.codepoints_cow()?);
                m.try_ratio_with(&mut BSide::default(), &a, &b, autojunk)
            }
        })?
    })
}

/// `ratio` of two exact strs in this thread's buffers, None when the pair is large (the caller
/// then runs it without the GIL).
fn ratio_in_scratch(
    s: &mut PairScratch,
    sa: &Bound<'_, PyString>,
    sb: &Bound<'_, PyString>,
    autojunk: bool,
) -> PyResult<Option<f64>> {
    // Strs of code points below 256 (most labels): matched on their own bytes, which `rebuild`
    // and `set_a` copy anyway, not on copies of them.
    if let (Some(ua), Some(ub)) = (ffi::latin1_of(sa), ffi::latin1_of(sb)) {
        if ua.len() + ub.len() >= DETACH_MIN_WORK {
            return Ok(None);
        }
        return Ok(Some(ratio_with(
            &mut s.matcher,
            &mut s.side,
            ua,
            ub,
            autojunk,
        )));
    }
    // Some side is wider: both as code points (copied out of CPython's own layout).
    ffi::codepoints_into(sa, &mut s.wide_a)?;
    ffi::codepoints_into(sb, &mut s.wide_b)?;
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
        // More than 255 distinct elements in b: on code points. (Otherwise the same answer on
        // bytes: ByteRemap.)
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
}

/// difflib's `quick_ratio()`: an upper bound of `ratio()` from the character multisets.
#[pyfunction]
#[pyo3(signature = (a, b, *, autojunk = true), text_signature = "(a, b, *, autojunk=True)")]
pub fn quick_ratio(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>, autojunk: bool) -> PyResult<f64> {
    let Some((a_text, b_text)) = pair_of(a, b)? else {
        return difflib_matcher(a, b, autojunk)?
            .call_method0("quick_ratio")?
            .extract();
    };
    // quick_ratio counts every element of b, junk or popular (linear: no interrupt needed).
    Ok(match (&a_text, &b_text) {
        (Text::Narrow(a), Text::Narrow(b)) => matcher::quick_ratio(a, b)?,
        _ => matcher::quick_ratio(&a_text.codepoints_cow()?, &b_text.codepoints_cow()?)?,
    })
}

/// difflib's `real_quick_ratio()`: an upper bound of `ratio()` from the lengths alone.
#[pyfunction]
#[pyo3(signature = (a, b, *, autojunk = true), text_signature = "(a, b, *, autojunk=True)")]
pub fn real_quick_ratio(
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    autojunk: bool,
) -> PyResult<f64> {
    if pair_of_strs(a, b)? {
        return Ok(matcher::real_quick_ratio(a.len()?, b.len()?));
    }
    difflib_matcher(a, b, autojunk)?
        .call_method0("real_quick_ratio")?
        .extract()
}

/// Whether `a` and `b` are both exact strs (false for str subclasses; an `InputTypeError` for
/// anything else).
fn pair_of_strs(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<bool> {
    for (x, name) in [(a, "a"), (b, "b")] {
        if !x.is_instance_of::<PyString>() {
            return Err(wrong_type(
                x.py(),
                format!("{name} must be str, not {}", type_name(x)),
            ));
        }
    }
    Ok(a.is_exact_instance_of::<PyString>() && b.is_exact_instance_of::<PyString>())
}

/// difflib's `get_matching_blocks()` as plain tuples, the `(len(a), len(b), 0)` sentinel last.
#[pyfunction]
#[pyo3(signature = (a, b, *, autojunk = true), text_signature = "(a, b, *, autojunk=True)")]
pub fn matching_blocks<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    autojunk: bool,
) -> PyResult<Bound<'py, PyList>> {
    let Some((a_text, b_text)) = pair_of(a, b)? else {
        let blocks = difflib_matcher(a, b, autojunk)?.call_method0("get_matching_blocks")?;
        let list = PyList::empty(py);
        for block in blocks.try_iter()? {
            list.append(
                block?
                    .extract::<(usize, usize, usize)>()?
                    .into_pyobject(py)?,
            )?;
        }
        return Ok(list);
    };
    let (la, lb) = (a_text.len(), b_text.len());
    let blocks = run_here(py, la + lb, |cancel| {
        let mut m = crate::Matcher::new();
        m.set_cancel(cancel);
        let blocks = match (&a_text, &b_text) {
            (Text::Narrow(a), Text::Narrow(b)) => {
                let side = BSide::try_new(b, autojunk)?;
                m.reserve_for::<u8>(a.len(), b.len())?;
                m.set_a(a, &side);
                m.matching_blocks(&side)
            }
            _ => {
                let (a, b) = (a_text.codepoints_cow()?, b_text.codepoints_cow()?);
                let side = BSide::try_new(&b, autojunk)?;
                m.reserve_for::<u32>(a.len(), b.len())?;
                m.set_a(&a, &side);
                m.matching_blocks(&side)
            }
        };
        cancel.check().map(|()| blocks)
    })?;
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
/// Performance notes: this is `memdedup.labels_match` itself; a Python wrapper adding the
/// `guards` option cost about as much as the decision (docs/perf.md, "One pair").
#[pyfunction]
#[pyo3(
    signature = (stored, incoming, *, threshold = DEFAULT_THRESHOLD, min_chars = DEFAULT_MIN_CHARS, guards = None, missing = true),
    text_signature = "(stored, incoming, *, threshold=0.85, min_chars=16, guards=None, missing=True)"
)]
pub fn labels_match(
    py: Python<'_>,
    stored: &Bound<'_, PyAny>,
    incoming: &Bound<'_, PyAny>,
    threshold: Threshold,
    min_chars: MinChars,
    guards: Option<&Bound<'_, PyAny>>,
    missing: bool,
) -> PyResult<bool> {
    let _missing = MissingAsEmpty::set(missing);
    let matched = contract_match(py, stored, incoming, &params(threshold, min_chars))?;
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
    p: &MatchParams,
) -> PyResult<bool> {
    let (stored_str, incoming_str) = (label_str(stored)?, label_str(incoming)?);
    let fast = with_scratch(|s| {
        let stored_narrow = normalised_bytes_into(&stored_str, &mut s.a)?;
        let incoming_narrow = normalised_bytes_into(&incoming_str, &mut s.b)?;
        if stored_narrow && incoming_narrow {
            if s.a.len() + s.b.len() >= DETACH_MIN_WORK {
                return Ok(None);
            }
            return Ok(Some(s.decider.matches_bytes(&s.a, &s.b, p)?));
        }
        // Some label has a code point above 255: both as normalised code points in this thread's
        // buffers (a narrow one from its bytes), matched on bytes when they allow it.
        let PairScratch {
            codepoints,
            lowered,
            a,
            b,
            wide_a,
            wide_b,
            decider,
            ..
        } = s;
        for (label, narrow, bytes, out) in [
            (&stored_str, stored_narrow, &*a, &mut *wide_a),
            (&incoming_str, incoming_narrow, &*b, &mut *wide_b),
        ] {
            if narrow {
                out.clear();
                crate::alloc::reserve(out, bytes.len())?;
                out.extend(bytes.iter().map(|&c| c as u32));
            } else if !normalised_codepoints_into(label, codepoints, lowered, out)? {
                return Ok(None);
            }
        }
        if wide_a.len() + wide_b.len() >= DETACH_MIN_WORK {
            return Ok(None);
        }
        Ok(Some(decider.matches_codepoints(wide_a, wide_b, p)?))
    })?;
    if let Some(answer) = fast {
        return Ok(answer);
    }
    let a = normalise_str(&stored_str)?;
    let b = normalise_str(&incoming_str)?;
    run_here(py, a.len() + b.len(), |cancel| {
        let mut decider = crate::contract::PairDecider::with_cancel(cancel);
        let answer = decider.matches(&a, &b, p)?;
        cancel.check().map(|()| answer)
    })
}

/// Why two labels match: `("ratio", score)`, `("containment", score)`, or None.
#[pyfunction]
#[pyo3(
    signature = (stored, incoming, *, threshold = DEFAULT_THRESHOLD, min_chars = DEFAULT_MIN_CHARS, missing = true),
    text_signature = "(stored, incoming, *, threshold=0.85, min_chars=16, missing=True)"
)]
pub fn match_reason(
    py: Python<'_>,
    stored: &Bound<'_, PyAny>,
    incoming: &Bound<'_, PyAny>,
    threshold: Threshold,
    min_chars: MinChars,
    missing: bool,
) -> PyResult<Option<(&'static str, f64)>> {
    let _missing = MissingAsEmpty::set(missing);
    let a = normalised(stored)?;
    let b = normalised(incoming)?;
    let p = params(threshold, min_chars);
    let work = a.len() + b.len();
    let d = run_here(py, work, |cancel| {
        with_cancelled_matcher(cancel, |m| Query::new(b).decide(m, &a, &p))
    })?;
    Ok(d.reason.map(|r| (r.as_str(), d.score)))
}

/// `labels_match(stored[k], incoming)` for each k until `first_only` finds one.
fn scan_candidates(
    py: Python<'_>,
    incoming: &Bound<'_, PyAny>,
    candidates: &Bound<'_, PyAny>,
    p: &MatchParams,
    first_only: bool,
) -> PyResult<Vec<bool>> {
    let b = normalised(incoming)?;
    let stored = super::coerce::collect(candidates, |c| normalised(&c))?;
    let work = stored.iter().map(Text::len).sum::<usize>() + b.len() * stored.len();
    run_here(py, work, |cancel| {
        with_cancelled_matcher(cancel, |m| {
            let mut q = Query::new(b);
            let mut out = Vec::with_capacity(stored.len());
            for a in &stored {
                if cancel.is_cancelled() {
                    break;
                }
                let hit = q.matches(m, a, p);
                out.push(hit);
                if hit && first_only {
                    break;
                }
            }
            out
        })
    })
}

/// `[labels_match(c, incoming) for c in candidates]`, the incoming label prepared once.
#[pyfunction]
#[pyo3(
    signature = (incoming, candidates, *, threshold = DEFAULT_THRESHOLD, min_chars = DEFAULT_MIN_CHARS, missing = true),
    text_signature = "(incoming, candidates, *, threshold=0.85, min_chars=16, missing=True)"
)]
pub fn match_mask(
    py: Python<'_>,
    incoming: &Bound<'_, PyAny>,
    candidates: &Bound<'_, PyAny>,
    threshold: Threshold,
    min_chars: MinChars,
    missing: bool,
) -> PyResult<Vec<bool>> {
    let _missing = MissingAsEmpty::set(missing);
    scan_candidates(
        py,
        incoming,
        candidates,
        &params(threshold, min_chars),
        false,
    )
}

/// The index of the first candidate that `labels_match(candidate, incoming)` accepts.
#[pyfunction]
#[pyo3(
    signature = (incoming, candidates, *, threshold = DEFAULT_THRESHOLD, min_chars = DEFAULT_MIN_CHARS, missing = true),
    text_signature = "(incoming, candidates, *, threshold=0.85, min_chars=16, missing=True)"
)]
pub fn match_first(
    py: Python<'_>,
    incoming: &Bound<'_, PyAny>,
    candidates: &Bound<'_, PyAny>,
    threshold: Threshold,
    min_chars: MinChars,
    missing: bool,
) -> PyResult<Option<usize>> {
    let _missing = MissingAsEmpty::set(missing);
    let hits = scan_candidates(
        py,
        incoming,
        candidates,
        &params(threshold, min_chars),
        true,
    )?;
    Ok(hits
        .last()
        .copied()
        .unwrap_or(false)
        .then(|| hits.len() - 1))
}
