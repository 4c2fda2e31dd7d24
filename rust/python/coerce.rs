//! Arguments from Python, coerced by one rule per kind, checked before any work starts.
//!
//! `threshold` and `min_chars`: the contract compares `ratio >= threshold` (a float against what
//! was passed) and `len(shorter) >= min_chars` (an int against what was passed), so any value
//! Python can compare that way is taken, and decides exactly as Python's `>=` decides: a ratio is
//! an f64, so `ratio >= t` equals `ratio >= t'` for the least f64 `t'` that Python's `>=` admits,
//! found once (directly for a float or an int, else by asking Python's `>=` itself, which is how a
//! `Fraction`, a `Decimal` or a numpy scalar compare); likewise `len >= m` is `len >= m'` for the
//! least integer `m'` admitted. A value Python cannot compare so is refused at once: an
//! `InputTypeError` for a `TypeError`, and the comparison's own exception otherwise (a `Decimal`
//! NaN raises `InvalidOperation` under the default context).
//!
//! Counts and indices: any int (`__index__`), refused when negative; sizes past what memory could
//! hold are an `InvalidInputError` or, where the contract caps them anyway, capped.

use pyo3::exceptions::{PyOverflowError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyString};

use super::error::{invalid, type_name, wrong_type};
use crate::alloc;

/// A `threshold` as the core compares it: `ratio >= self.0` decides as Python's
/// `ratio >= threshold` does for every ratio (NaN: no ratio reaches it).
#[derive(Clone, Copy, Debug)]
pub struct Threshold(pub f64);

/// The contract's default threshold.
pub const DEFAULT_THRESHOLD: Threshold = Threshold(crate::contract::DEFAULT_THRESHOLD);

/// A `min_chars` as the core compares it: `len >= self.0` decides as Python's
/// `len >= min_chars` does for every length (`usize::MAX`: no label is that long).
#[derive(Clone, Copy, Debug)]
pub struct MinChars(pub usize);

/// The contract's default `min_chars`.
pub const DEFAULT_MIN_CHARS: MinChars = MinChars(crate::contract::DEFAULT_MIN_CHARS);

/// The match parameters of two coerced arguments.
pub fn params(threshold: Threshold, min_chars: MinChars) -> crate::MatchParams {
    crate::MatchParams {
        threshold: threshold.0,
        min_chars: min_chars.0,
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for Threshold {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        threshold(&obj.to_owned(), "threshold").map(Threshold)
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for MinChars {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        min_chars(&obj.to_owned()).map(MinChars)
    }
}

/// `bool(left >= value)`, by Python; a `TypeError` becomes an `InputTypeError` naming `what`.
fn at_least(
    left: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
    what: &str,
    kind: &str,
) -> PyResult<bool> {
    left.ge(value).map_err(|err| {
        if err.is_instance_of::<PyTypeError>(value.py()) {
            let typed = wrong_type(
                value.py(),
                format!(
                    "{what} must be a number Python can compare with {kind}, not {}",
                    type_name(value)
                ),
            );
            typed.set_cause(value.py(), Some(err));
            typed
        } else {
            err
        }
    })
}

/// The least f64 `t` in `[0, 1]` with `bool(t >= value)`, as the core's threshold (NaN when no
/// ratio reaches `value`).
pub fn threshold(value: &Bound<'_, PyAny>, what: &str) -> PyResult<f64> {
    let py = value.py();
    if let Ok(f) = value.cast_exact::<PyFloat>() {
        return Ok(f.value());
    }
    if value.is_instance_of::<PyInt>() {
        // An int (bool included) compares with a float exactly, and never through a subclass's
        // methods (float's own comparison handles any int first): only 0 and 1 are ratios.
        return Ok(match value.extract::<i64>() {
            Ok(k) => k.clamp(-1, 2) as f64,
            Err(_) if value.gt(0)? => 2.0,
            Err(_) => -1.0,
        });
    }
    let ge = |r: f64| at_least(&PyFloat::new(py, r).into_any(), value, what, "a float");
    if !ge(1.0)? {
        return Ok(f64::NAN);
    }
    if ge(0.0)? {
        return Ok(0.0);
    }
    // Python's `>=` fails at 0.0 and holds at 1.0: find where it starts to hold, on the bit
    // patterns of the floats in between (ordered as the floats are), starting at the value's own
    // float when it has one (a Fraction or a Decimal: one or two comparisons).
    let (mut lo, mut hi) = (0.0f64.to_bits(), 1.0f64.to_bits());
    if let Ok(guess) = value.extract::<f64>() {
        if guess > 0.0 && guess <= 1.0 {
            let g = guess.to_bits();
            if ge(guess)? {
                hi = g;
                if g - 1 > lo && !ge(f64::from_bits(g - 1))? {
                    lo = g - 1;
                }
            } else {
                lo = g;
                if g + 1 < hi && ge(f64::from_bits(g + 1))? {
                    hi = g + 1;
                }
            }
        }
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ge(f64::from_bits(mid))? {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(f64::from_bits(hi))
}

/// The least length `n` with `bool(n >= value)`, as the core's `min_chars` (`usize::MAX`: no length
/// reaches it).
pub fn min_chars(value: &Bound<'_, PyAny>) -> PyResult<usize> {
    let py = value.py();
    if value.is_exact_instance_of::<PyInt>() || value.is_exact_instance_of::<PyBool>() {
        // An int compares with an int exactly. (An int subclass may redefine the comparison, which
        // Python then tries first: it takes the general path below.)
        return Ok(match value.extract::<i64>() {
            Ok(k) => k.max(0) as usize,
            Err(_) if value.gt(0)? => usize::MAX,
            Err(_) => 0,
        });
    }
    if let Ok(f) = value.cast_exact::<PyFloat>() {
        // An int compares with a float exactly: `n >= x` for integers n is `n >= ceil(x)`.
        let x = f.value();
        return Ok(if x.is_nan() || x >= 2f64.powi(63) {
            usize::MAX
        } else if x <= 0.0 {
            0
        } else {
            x.ceil() as usize
        });
    }
    const NEVER: i64 = i64::MAX;
    let ge = |n: i64| {
        at_least(
            &n.into_pyobject(py)?.into_any(),
            value,
            "min_chars",
            "an int",
        )
    };
    if ge(0)? {
        return Ok(0);
    }
    if !ge(NEVER)? {
        return Ok(usize::MAX);
    }
    let (mut lo, mut hi) = (0i64, NEVER);
    if let Ok(guess) = value.extract::<f64>() {
        if guess > 0.0 && guess < NEVER as f64 {
            let g = guess.ceil() as i64;
            if ge(g)? {
                hi = g;
                if g - 1 > lo && !ge(g - 1)? {
                    lo = g - 1;
                }
            } else {
                lo = g;
            }
        }
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ge(mid)? {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi as usize)
}

/// A count or index: an int (`__index__`) of at least 0. Past `usize::MAX`: `usize::MAX` when
/// `capped`, else an `InvalidInputError`.
pub fn count(value: &Bound<'_, PyAny>, what: &str, capped: bool) -> PyResult<usize> {
    let py = value.py();
    match value.extract::<u64>() {
        Ok(v) => usize::try_from(v).or_else(|_| {
            if capped {
                Ok(usize::MAX)
            } else {
                Err(invalid(py, format!("{what} is too large: {v}")))
            }
        }),
        Err(err) if err.is_instance_of::<PyOverflowError>(py) => {
            if value.lt(0)? {
                Err(invalid(py, format!("{what} must not be negative")))
            } else if capped {
                Ok(usize::MAX)
            } else {
                Err(invalid(py, format!("{what} is too large")))
            }
        }
        Err(err) => {
            let typed = wrong_type(
                py,
                format!("{what} must be an int, not {}", type_name(value)),
            );
            typed.set_cause(py, Some(err));
            Err(typed)
        }
    }
}

/// Items between checks for signals while a long sequence is read (with the GIL).
pub const READ_POLL: usize = 1 << 14;

/// The items of an iterable, each made by `item`, read with the GIL: the vector grows fallibly
/// (a `MemoryError`, never an abort, for an endless iterator) and signals are checked as it goes.
pub fn collect<'py, T>(
    seq: &Bound<'py, PyAny>,
    mut item: impl FnMut(Bound<'py, PyAny>) -> PyResult<T>,
) -> PyResult<Vec<T>> {
    let py = seq.py();
    let mut out = Vec::new();
    let items = seq.try_iter().map_err(|err| {
        if err.is_instance_of::<PyTypeError>(py) {
            let typed = wrong_type(py, format!("{} is not iterable", type_name(seq)));
            typed.set_cause(py, Some(err));
            typed
        } else {
            err
        }
    })?;
    for (k, x) in items.enumerate() {
        if k % READ_POLL == READ_POLL - 1 {
            py.check_signals()?;
        }
        let x = item(x?)?;
        alloc::push(&mut out, x).map_err(|e| super::error::to_pyerr(py, e))?;
    }
    Ok(out)
}

/// An int as a `u32` index, `u32::MAX` for any int outside `0..u32::MAX` (an index no sequence of
/// the core has); an `InputTypeError` for anything else.
pub fn index_u32(value: &Bound<'_, PyAny>, what: &str) -> PyResult<u32> {
    match value.extract::<u32>() {
        Ok(v) => Ok(v),
        Err(err) if err.is_instance_of::<PyOverflowError>(value.py()) => Ok(u32::MAX),
        Err(_) => Err(wrong_type(
            value.py(),
            format!("{what} must hold ints, not {}", type_name(value)),
        )),
    }
}

/// A sequence of ints, each in `0..2**32` (an `InputTypeError` otherwise).
pub fn u32s(seq: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u32>> {
    if let Some(values) = super::ffi::exact_u32s(seq) {
        return Ok(values);
    }
    collect(seq, |x| {
        x.extract::<u32>().map_err(|_| {
            wrong_type(
                x.py(),
                format!("{what} must hold ints below 2**32, not {}", type_name(&x)),
            )
        })
    })
}

/// A sequence of pairs of ints; ints outside `0..u32::MAX` become `u32::MAX` (an index no sequence
/// holds, which the callers reject or skip).
pub fn index_pairs(seq: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<(u32, u32)>> {
    collect(seq, |x| {
        let pair: (Bound<'_, PyAny>, Bound<'_, PyAny>) = x.extract().map_err(|_| {
            wrong_type(
                x.py(),
                format!("{what} must hold pairs of ints, not {}", type_name(&x)),
            )
        })?;
        Ok((index_u32(&pair.0, what)?, index_u32(&pair.1, what)?))
    })
}

/// One of `options`, by name.
pub fn choice<'o>(value: &Bound<'_, PyAny>, what: &str, options: &[&'o str]) -> PyResult<&'o str> {
    let Ok(s) = value.cast::<PyString>() else {
        return Err(wrong_type(
            value.py(),
            format!("{what} must be a str, not {}", type_name(value)),
        ));
    };
    let s = s.to_cow()?;
    options.iter().find(|&&o| o == s).copied().ok_or_else(|| {
        let quoted: Vec<String> = options.iter().map(|o| format!("{o:?}")).collect();
        invalid(
            value.py(),
            format!("{what} must be one of {}, not {s:?}", quoted.join(", ")),
        )
    })
}

/// A size the contract slices by (`key[:prefix_len]`, `candidates[:query_limit]`): any int of at
/// least 0, capped at `usize::MAX`.
#[derive(Clone, Copy, Debug)]
pub struct Size(pub usize);

impl<'a, 'py> FromPyObject<'a, 'py> for Size {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        count(&obj.to_owned(), "a size", true).map(Size)
    }
}

/// `replay`'s `prefix`: which key the candidate fetch compares.
#[derive(Clone, Copy, Debug)]
pub struct Prefix(pub crate::batch::PrefixMode, pub &'static str);

impl Prefix {
    pub const RAW: Prefix = Prefix(crate::batch::PrefixMode::Raw, "raw");
}

impl<'a, 'py> FromPyObject<'a, 'py> for Prefix {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let name = choice(
            &obj.to_owned(),
            "prefix",
            &["raw", "normalised", "normalized", "none"],
        )?;
        Ok(match name {
            "raw" => Prefix::RAW,
            "none" => Prefix(crate::batch::PrefixMode::None, "none"),
            "normalised" => Prefix(crate::batch::PrefixMode::Normalised, "normalised"),
            _ => Prefix(crate::batch::PrefixMode::Normalised, "normalized"),
        })
    }
}

/// `clusters`' `mode`.
#[derive(Clone, Copy, Debug)]
pub struct Mode(pub crate::batch::ClusterMode);

impl Mode {
    pub const CANONICAL: Mode = Mode(crate::batch::ClusterMode::Canonical);
}

impl<'a, 'py> FromPyObject<'a, 'py> for Mode {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(
            match choice(&obj.to_owned(), "mode", &["canonical", "components"])? {
                "canonical" => Mode::CANONICAL,
                _ => Mode(crate::batch::ClusterMode::Components),
            },
        )
    }
}
