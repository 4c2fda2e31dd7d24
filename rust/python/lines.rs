//! The core of `memdedup.difflib`: difflib's index of a second sequence ([`SequenceIndex`]),
//! sequences coded against one ([`Codes`]), and `get_close_matches`' scoring pass.

use std::collections::HashSet;

use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

use super::coerce::{count, u32s, Threshold};
use super::error::{invalid, to_pyerr};
use super::ffi::{self, LineKind, Lines};
use super::interrupt::{run_here, run_pool};
use super::text::{text_of, with_cancelled_matcher, with_matcher};
use crate::elements::ElementTable;
use crate::matcher::{self, BSide, Window};

/// A sequence as element codes: a `str`'s code points, a [`Codes`] from
/// [`SequenceIndex::encode`], or a sequence of ints (ids the caller assigned).
fn element_codes<'a>(seq: &'a Bound<'_, PyAny>) -> PyResult<std::borrow::Cow<'a, [u32]>> {
    if let Ok(s) = seq.cast::<PyString>() {
        return Ok(text_of(s)?.codepoints_cow()?.into_owned().into());
    }
    if let Ok(codes) = seq.cast::<Codes>() {
        return Ok(codes.get().codes.as_slice().into());
    }
    let codes = u32s(seq, "a sequence of element codes")?;
    super::text::check_len(seq.py(), codes.len())?;
    Ok(codes.into())
}

/// A first sequence coded against one [`SequenceIndex`]'s elements (see [`SequenceIndex::encode`]).
#[pyclass(frozen, module = "memdedup._core")]
pub struct Codes {
    codes: Vec<u32>,
}

#[pymethods]
impl Codes {
    fn __len__(&self) -> usize {
        self.codes.len()
    }
}

/// difflib's index of the second sequence (`b2j`, `bjunk`, `bpopular`), built once per `b` and
/// shared by every first sequence matched against it: the core of
/// `memdedup.difflib.SequenceMatcher`.
#[pyclass(frozen, module = "memdedup._core")]
pub struct SequenceIndex {
    side: BSide<u32>,
    /// For an index built by `of_elements`: the elements behind the ids, and how they hash.
    table: Option<(ElementTable<Py<PyAny>>, LineKind)>,
}

/// difflib's index of `codes`; `junk` lists the junk codes. Dense first-occurrence codes (from an
/// element table) skip the interning map.
fn build_side(py: Python<'_>, codes: &[u32], autojunk: bool, junk: &[u32]) -> PyResult<BSide<u32>> {
    let junk: HashSet<u32> = junk.iter().copied().collect();
    // Linear in `b`: no poll needed.
    run_here(py, codes.len(), move |_| {
        let mut side = BSide::default();
        side.reserve_for(codes.len())?;
        if junk.is_empty() {
            side.rebuild_dense(codes, autojunk, None);
        } else {
            side.rebuild_dense(codes, autojunk, Some(&mut |c: u32| junk.contains(&c)));
        }
        Ok(side)
    })
}

#[pymethods]
impl SequenceIndex {
    #[new]
    #[pyo3(
        signature = (b, *, autojunk = true, junk = None),
        text_signature = "(b, *, autojunk=True, junk=None)"
    )]
    fn new(
        py: Python<'_>,
        b: &Bound<'_, PyAny>,
        autojunk: bool,
        junk: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let codes = element_codes(b)?;
        let junk = junk
            .map(|junk| u32s(junk, "junk"))
            .transpose()?
            .unwrap_or_default();
        let side = build_side(py, &codes, autojunk, &junk)?;
        Ok(SequenceIndex { side, table: None })
    }

    /// The index of an exact `list` or `tuple` of exact `str`s (or of exact `bytes`): elements are
    /// coded in Rust with `dict` semantics. `isjunk` is called once per distinct element, in
    /// first-occurrence order, as difflib calls it; `junk` gives the junk ids instead (for
    /// unpickling). None when `b` is anything else.
    #[staticmethod]
    #[pyo3(
        signature = (b, *, autojunk = true, isjunk = None, junk = None),
        text_signature = "(b, *, autojunk=True, isjunk=None, junk=None)"
    )]
    fn of_elements(
        py: Python<'_>,
        b: &Bound<'_, PyAny>,
        autojunk: bool,
        isjunk: Option<&Bound<'_, PyAny>>,
        junk: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<Self>> {
        let junk = junk
            .map(|junk| u32s(junk, "junk"))
            .transpose()?
            .unwrap_or_default();
        let Some(mut lines) = Lines::new(b, None) else {
            return Ok(None);
        };
        let kind = lines.kind();
        let Some(built) = ElementTable::build(&mut lines)? else {
            return Ok(None);
        };
        drop(lines);
        // isjunk may run any code (even mutate `b`): no item of `b` is read past here.
        let mut is_junk = vec![false; built.counts.len()];
        let mut any_junk = false;
        for id in junk {
            if let Some(flag) = is_junk.get_mut(id as usize) {
                (*flag, any_junk) = (true, true);
            }
        }
        if let Some(isjunk) = isjunk {
            for (flag, elem) in is_junk.iter_mut().zip(built.table.elements()) {
                if isjunk.call1((elem.bind(py),))?.is_truthy()? {
                    (*flag, any_junk) = (true, true);
                }
            }
        }
        let (ids, counts) = (built.ids, built.counts);
        let side = run_here(py, ids.len(), move |_| {
            let mut junk_of = |id: u32| is_junk[id as usize];
            let junk_of: Option<&mut dyn FnMut(u32) -> bool> = any_junk.then_some(&mut junk_of);
            BSide::of_dense_ids(ids, counts, autojunk, junk_of)
        })?;
        Ok(Some(SequenceIndex {
            side,
            table: Some((built.table, kind)),
        }))
    }

    /// `a` coded against this index's elements (ids absent from `b` become one id `b` lacks), or
    /// None when this index was not built by `of_elements`, or `a` is not an exact `list`/`tuple`
    /// of elements of `b`'s type (the caller then codes it with a dict).
    fn encode(&self, a: &Bound<'_, PyAny>) -> PyResult<Option<Codes>> {
        let Some((table, kind)) = &self.table else {
            return Ok(None);
        };
        let Some(mut lines) = Lines::new(a, Some(*kind)) else {
            return Ok(None);
        };
        Ok(table
            .code(&mut lines, &self.side)?
            .map(|codes| Codes { codes }))
    }

    /// The distinct elements of `b` by id, for an index built by `of_elements` (else None).
    fn elements(&self, py: Python<'_>) -> Option<Vec<Py<PyAny>>> {
        let (table, _) = self.table.as_ref()?;
        Some(table.elements().iter().map(|e| e.clone_ref(py)).collect())
    }

    fn __len__(&self) -> usize {
        self.side.len()
    }

    /// difflib's `find_longest_match(alo, ahi, blo, bhi)` of `a` against this `b`.
    #[pyo3(text_signature = "(self, a, alo, ahi, blo, bhi)")]
    fn find_longest_match(
        &self,
        py: Python<'_>,
        a: &Bound<'_, PyAny>,
        alo: &Bound<'_, PyAny>,
        ahi: &Bound<'_, PyAny>,
        blo: &Bound<'_, PyAny>,
        bhi: &Bound<'_, PyAny>,
    ) -> PyResult<(usize, usize, usize)> {
        let a = element_codes(a)?;
        let [alo, ahi, blo, bhi] = [
            count(alo, "alo", false)?,
            count(ahi, "ahi", false)?,
            count(blo, "blo", false)?,
            count(bhi, "bhi", false)?,
        ];
        if alo > ahi || ahi > a.len() || blo > bhi || bhi > self.side.len() {
            return Err(invalid(
                py,
                format!(
                    "bounds ({alo}, {ahi}, {blo}, {bhi}) are outside sequences of length {} and {}",
                    a.len(),
                    self.side.len()
                ),
            ));
        }
        let side = &self.side;
        run_here(py, (ahi - alo) + (bhi - blo), |cancel| {
            with_cancelled_matcher(cancel, |m| -> crate::Result<_> {
                m.reserve_for::<u32>(a.len(), side.len())?;
                m.set_a(&a, side);
                Ok(m.find_longest_match(side, Window::new(alo, ahi, blo, bhi)))
            })?
        })
    }

    /// difflib's `get_matching_blocks()` without the `(len(a), len(b), 0)` sentinel.
    fn matching_blocks(
        &self,
        py: Python<'_>,
        a: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<(usize, usize, usize)>> {
        let a = element_codes(a)?;
        self.blocks(py, &a)
    }

    /// difflib's `get_opcodes()`.
    fn opcodes<'py>(&self, py: Python<'py>, a: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        let a = element_codes(a)?;
        let mut blocks = self.blocks(py, &a)?;
        blocks.push((a.len(), self.side.len(), 0));
        let tags = [
            pyo3::intern!(py, "replace"),
            pyo3::intern!(py, "delete"),
            pyo3::intern!(py, "insert"),
            pyo3::intern!(py, "equal"),
        ];
        ffi::opcode_list(py, &matcher::opcodes(&blocks), tags)
    }

    /// `M`, the total size of the matching blocks.
    fn matches(&self, py: Python<'_>, a: &Bound<'_, PyAny>) -> PyResult<usize> {
        let a = element_codes(a)?;
        let side = &self.side;
        run_here(py, a.len() + side.len(), |cancel| {
            with_cancelled_matcher(cancel, |m| -> crate::Result<_> {
                m.reserve_for::<u32>(a.len(), side.len())?;
                m.set_a(&a, side);
                Ok(m.matches(side))
            })?
        })
    }

    /// The multiset intersection size behind `quick_ratio()` (linear: no poll needed).
    fn quick_matches(&self, a: &Bound<'_, PyAny>) -> PyResult<usize> {
        let a = element_codes(a)?;
        with_matcher(|m| -> crate::Result<usize> {
            m.reserve_for::<u32>(a.len(), self.side.len())?;
            m.set_a(&a, &self.side);
            Ok(m.quick_matches(&self.side))
        })
        .map_err(PyErr::from)
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

impl SequenceIndex {
    fn blocks(&self, py: Python<'_>, a: &[u32]) -> PyResult<Vec<(usize, usize, usize)>> {
        let side = &self.side;
        run_here(py, a.len() + side.len(), |cancel| {
            with_cancelled_matcher(cancel, |m| -> crate::Result<_> {
                m.reserve_for::<u32>(a.len(), side.len())?;
                m.set_a(a, side);
                Ok(m.matching_blocks(side))
            })?
        })
    }
}

/// `get_close_matches`' scoring pass for a `str` word and `str` possibilities: `(ratio, index)`
/// for every possibility whose `real_quick_ratio`, `quick_ratio` and `ratio` (possibility first,
/// as difflib's `set_seq1(x)` with `set_seq2(word)`) all reach `cutoff`, in input order. None when
/// the word or some possibility is not an exact `str` (a subclass may redefine what difflib reads
/// of it): the caller then runs difflib's own loop.
#[pyfunction]
#[pyo3(
    signature = (word, possibilities, cutoff, *, autojunk = true),
    text_signature = "(word, possibilities, cutoff, *, autojunk=True)"
)]
pub fn close_matches(
    py: Python<'_>,
    word: &Bound<'_, PyAny>,
    possibilities: &Bound<'_, PyAny>,
    cutoff: Threshold,
    autojunk: bool,
) -> PyResult<Option<Vec<(f64, usize)>>> {
    let Ok(word) = word.cast_exact::<PyString>() else {
        return Ok(None);
    };
    let word = text_of(word)?;
    let in_place = possibilities.is_exact_instance_of::<PyList>()
        || possibilities.is_exact_instance_of::<PyTuple>();
    let candidates: Vec<(usize, Bound<'_, PyString>)> = if in_place {
        match ffi::close_match_candidates(possibilities, word.len(), cutoff.0)? {
            Some(candidates) => candidates,
            None => return Ok(None),
        }
    } else {
        // Any other iterable: read item by item, with a reference each.
        let mut kept = Vec::new();
        for (index, x) in possibilities.try_iter()?.enumerate() {
            let x = x?;
            let Ok(s) = x.cast_exact::<PyString>() else {
                return Ok(None);
            };
            if crate::close::length_admits(s.len()?, word.len(), cutoff.0) {
                crate::alloc::push(&mut kept, (index, s.clone())).map_err(|e| to_pyerr(py, e))?;
            }
        }
        kept
    };
    let pool = candidates
        .iter()
        .map(|(index, s)| Ok((*index, text_of(s)?)))
        .collect::<PyResult<Vec<_>>>()?;
    drop(candidates);
    run_pool(py, |cancel| {
        crate::close::scores(&word, &pool, cutoff.0, autojunk, cancel)
    })
    .map(Some)
}
