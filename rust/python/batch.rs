//! The batch functions behind `memdedup.batch`: pair decisions, the ratio matrix, replay of a
//! store's writes, the all-pairs join, clusters. Labels are read with the GIL; the core decides
//! without it, in parallel, answering Ctrl-C; results go back as Python buffers filled in place.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyInt, PyList, PyString};

use super::coerce::{
    collect, count, index_pairs, params, u32s, MinChars, Mode, Prefix, Size, Threshold,
    DEFAULT_MIN_CHARS, DEFAULT_THRESHOLD, READ_POLL,
};
use super::error::{invalid, to_pyerr, type_name, wrong_type};
use super::ffi;
use super::interrupt::{run_here, run_pool, run_pool_in, Signals};
use super::text::{label_str, normalise_str, normalised, text_of, MissingAsEmpty};
use crate::batch::{ReplayInput, ReplayParams, Workers, DEFAULT_PREFIX_LEN, DEFAULT_QUERY_LIMIT};
use crate::cancel::Cancel;
use crate::error::{Error, Result};
use crate::labels::{self, LabelBatch, PairReader, PIPELINE_CHUNK};
use crate::text::Text;

/// From this many pairs (two lists), `match_pairs` decides while it reads.
const PIPELINE_MIN_PAIRS: usize = 4 * PIPELINE_CHUNK;

/// A label into a batch: an exact ASCII str as its bytes, anything else normalised.
fn push_label(batch: &mut LabelBatch, label: Bound<'_, PyAny>) -> PyResult<()> {
    let py = label.py();
    let s = label_str(&label)?;
    let pushed = match ffi::ascii_of(s.as_any()) {
        Some(ascii) => batch.push_ascii(ascii),
        None => batch.push_normalised(normalise_str(&s)?),
    };
    pushed.map_err(|e| to_pyerr(py, e))
}

/// The labels of `seq` (an exact list read in place, anything else iterated), coerced as
/// `str(label or "")`.
fn read_batch(seq: &Bound<'_, PyAny>) -> PyResult<LabelBatch> {
    let py = seq.py();
    let mut batch = LabelBatch::default();
    if let Ok(list) = seq.cast_exact::<PyList>() {
        let n = list.len();
        for start in (0..n).step_by(READ_POLL) {
            py.check_signals()?;
            let end = (start + READ_POLL).min(n);
            ffi::read_labels_into(list, start..end, &mut batch, push_label)?;
        }
        return Ok(batch);
    }
    for (k, label) in seq.try_iter()?.enumerate() {
        if k % READ_POLL == READ_POLL - 1 {
            py.check_signals()?;
        }
        push_label(&mut batch, label?)?;
    }
    Ok(batch)
}

/// Reads chunks of two lists for the core's read-while-deciding pipeline (with the GIL).
struct ListPairs<'a, 'py> {
    stored: &'a Bound<'py, PyList>,
    incoming: &'a Bound<'py, PyList>,
    /// The Python exception a read raised (the core is told only that reading failed).
    raised: Option<PyErr>,
}

impl PairReader for ListPairs<'_, '_> {
    fn read(&mut self, start: usize, end: usize) -> Result<(LabelBatch, LabelBatch)> {
        let mut a = LabelBatch::default();
        let mut b = LabelBatch::default();
        let read = ffi::read_labels_into(self.stored, start..end, &mut a, push_label)
            .and_then(|()| ffi::read_labels_into(self.incoming, start..end, &mut b, push_label));
        match read {
            Ok(()) => Ok((a, b)),
            Err(err) => {
                self.raised = Some(err);
                Err(Error::InvalidInput("reading the labels failed".into()))
            }
        }
    }

    fn unlocked<R: Send>(&mut self, f: impl FnOnce() -> R + Send) -> R {
        self.stored.py().detach(f)
    }
}

/// `labels_match(stored[k], incoming[k])` for every k, decided in parallel without the GIL; one
/// byte per decision (0 or 1), for numpy to view as bool without a list of Python objects.
#[pyfunction]
#[pyo3(
    signature = (stored, incoming, *, threshold = DEFAULT_THRESHOLD, min_chars = DEFAULT_MIN_CHARS, missing = true),
    text_signature = "(stored, incoming, *, threshold=0.85, min_chars=16, missing=True)"
)]
pub fn match_pairs<'py>(
    py: Python<'py>,
    stored: &Bound<'py, PyAny>,
    incoming: &Bound<'py, PyAny>,
    threshold: Threshold,
    min_chars: MinChars,
    missing: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    let _missing = MissingAsEmpty::set(missing);
    let p = params(threshold, min_chars);
    let unequal =
        |a: usize, b: usize| invalid(py, format!("stored has {a} labels but incoming has {b}"));
    if let (Ok(a), Ok(b)) = (
        stored.cast_exact::<PyList>(),
        incoming.cast_exact::<PyList>(),
    ) {
        if a.len() != b.len() {
            return Err(unequal(a.len(), b.len()));
        }
        let workers = rayon::current_num_threads().saturating_sub(1);
        if a.len() >= PIPELINE_MIN_PAIRS && workers > 0 {
            let signals = Signals::new();
            let mut reader = ListPairs {
                stored: a,
                incoming: b,
                raised: None,
            };
            let decided = labels::match_pairs_while_reading(
                a.len(),
                &p,
                workers,
                &signals.cancel,
                &mut reader,
            );
            return match decided {
                Ok(decided) => Ok(PyBytes::new(py, &decided)),
                Err(err) => Err(match reader.raised.take() {
                    Some(raised) => raised,
                    None => signals.error(py, err),
                }),
            };
        }
    }
    let a = read_batch(stored)?;
    let b = read_batch(incoming)?;
    if a.len() != b.len() {
        return Err(unequal(a.len(), b.len()));
    }
    let decided = run_pool(py, |cancel| labels::match_pairs(&a, &b, &p, cancel))?;
    Ok(PyBytes::new(py, &decided))
}

/// A query or choice of `cdist`: its text, or None for a str subclass without `normalise`
/// (difflib reads it through its own methods: such cells are asked of difflib).
fn cdist_item(item: &Bound<'_, PyAny>, normalise: bool) -> PyResult<Option<Text>> {
    if normalise {
        return normalised(item).map(Some);
    }
    match item.cast::<PyString>() {
        Ok(s) if s.is_exact_instance_of::<PyString>() => text_of(s).map(Some),
        Ok(_) => Ok(None),
        Err(_) => Err(wrong_type(
            item.py(),
            format!(
                "each query and choice must be str, not {}; memdedup.difflib.SequenceMatcher takes other sequences",
                type_name(item)
            ),
        )),
    }
}

/// rapidfuzz's `workers` (an int: -1 for every core, else 1 to `MAX_WORKERS`).
fn workers_of(workers: &Bound<'_, PyAny>) -> PyResult<Workers> {
    let py = workers.py();
    if workers.is_instance_of::<PyBool>() || !workers.is_instance_of::<PyInt>() {
        return Err(wrong_type(
            py,
            format!("workers must be an integer, not {}", type_name(workers)),
        ));
    }
    // An int beyond i64 is beyond either bound: saturate it and let the bound name it.
    let n = match workers.extract::<i64>() {
        Ok(n) => n,
        Err(_) if workers.lt(0)? => i64::MIN,
        Err(_) => i64::MAX,
    };
    Workers::from_count(n).map_err(|e| to_pyerr(py, e))
}

/// The exact ratio matrix `ratio(queries[i], choices[j])`, row-major, as native-endian f64s in a
/// bytearray (numpy views it without a copy); entries under `cutoff` are 0.0.
#[pyfunction]
#[pyo3(
    signature = (queries, choices, *, autojunk = true, cutoff = Threshold(0.0), normalise = false, workers = None),
    text_signature = "(queries, choices, *, autojunk=True, cutoff=0.0, normalise=False, workers=1)"
)]
pub fn cdist<'py>(
    py: Python<'py>,
    queries: &Bound<'py, PyAny>,
    choices: &Bound<'py, PyAny>,
    autojunk: bool,
    cutoff: Threshold,
    normalise: bool,
    workers: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyByteArray>> {
    let workers = workers.map_or(Ok(Workers::Calling), workers_of)?;
    // The texts, and the str subclasses apart (with their positions): difflib decides their cells.
    let read = |seq: &Bound<'py, PyAny>| -> PyResult<(Vec<Text>, ffi::IndexedAny<'py>)> {
        let mut odd = Vec::new();
        let mut k = 0;
        let texts = collect(seq, |x| {
            let text = cdist_item(&x, normalise)?;
            if text.is_none() {
                odd.push((k, x));
            }
            k += 1;
            Ok(text.unwrap_or_default())
        })?;
        Ok((texts, odd))
    };
    let (q_texts, q_odd) = read(queries)?;
    let (c_texts, c_odd) = read(choices)?;
    let (nq, nc) = (q_texts.len(), c_texts.len());
    let cells = crate::alloc::product(nq, nc, "the ratio matrix").map_err(|e| to_pyerr(py, e))?;
    let (matrix, ()) = ffi::filled_bytearray::<f64, ()>(py, cells, |out| {
        let mut fill = |parallel: bool, cancel: &Cancel| {
            crate::batch::cdist_into(
                &q_texts, &c_texts, autojunk, cutoff.0, out, parallel, cancel,
            )
        };
        match workers.pool().map_err(|e| to_pyerr(py, e))? {
            Some(pool) => run_pool_in(py, Some(&pool), |cancel| fill(true, cancel))?,
            None if workers == Workers::All => run_pool(py, |cancel| fill(true, cancel))?,
            // The calling thread alone: no pool is started.
            None => run_here(py, cells, |cancel| fill(false, cancel))?,
        }
        if q_odd.is_empty() && c_odd.is_empty() {
            return Ok(());
        }
        // Cells with a str subclass: difflib's ratio, compared with the cutoff as the core does
        // (the other side, an exact str, as the str of its text).
        let item = |odd: &[(usize, Bound<'py, PyAny>)], texts: &[Text], k: usize| match odd
            .iter()
            .find(|(at, _)| *at == k)
        {
            Some((_, x)) => Ok(x.clone()),
            None => super::text::to_pystring(py, &texts[k]).map(Bound::into_any),
        };
        let odd_rows = q_odd
            .iter()
            .flat_map(|&(i, _)| (0..nc).map(move |j| (i, j)));
        let odd_columns = c_odd
            .iter()
            .flat_map(|&(j, _)| (0..nq).map(move |i| (i, j)));
        for (i, j) in odd_rows.chain(odd_columns) {
            let (q, c) = (item(&q_odd, &q_texts, i)?, item(&c_odd, &c_texts, j)?);
            let r = super::core::ratio(py, &q, &c, autojunk)?;
            out[i * nc + j] = if r >= cutoff.0 { r } else { 0.0 };
        }
        Ok(())
    })?;
    Ok(matrix)
}

/// Replay of a store's writes (see `memdedup.batch.replay`): canonical index, outcome, score per
/// label.
#[pyfunction]
#[pyo3(
    signature = (labels, partitions, *, threshold = DEFAULT_THRESHOLD, min_chars = DEFAULT_MIN_CHARS, prefix = Prefix::RAW, prefix_len = Size(DEFAULT_PREFIX_LEN), query_limit = Size(DEFAULT_QUERY_LIMIT)),
    text_signature = "(labels, partitions, *, threshold=0.85, min_chars=16, prefix='raw', prefix_len=20, query_limit=20)"
)]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn replay<'py>(
    py: Python<'py>,
    labels: &Bound<'py, PyAny>,
    partitions: &Bound<'py, PyAny>,
    threshold: Threshold,
    min_chars: MinChars,
    prefix: Prefix,
    prefix_len: Size,
    query_limit: Size,
) -> PyResult<Bound<'py, PyAny>> {
    let Prefix(prefix_mode, prefix_name) = prefix;
    // `key[:prefix_len]` and `candidates[:query_limit]` take any size.
    let (Size(prefix_len), Size(query_limit)) = (prefix_len, query_limit);
    // Each label is `str(label or "")`, stripped with its own `strip()` and normalised (the
    // reference normalises that text again: a str subclass's own methods apply).
    let mut kept = Vec::new();
    let mut input = ReplayInput::default();
    let mut odd = false;
    for (k, label) in labels.try_iter()?.enumerate() {
        if k % READ_POLL == READ_POLL - 1 {
            py.check_signals()?;
        }
        let label = label?;
        let text = label_str(&label)?;
        let pushed = if let Some(ascii) = ffi::ascii_of(text.as_any()) {
            input.push_ascii(ascii)
        } else if text.is_exact_instance_of::<PyString>() {
            input.push_texts(text_of(&text)?.strip_py()?, normalise_str(&text)?)
        } else {
            let stripped = text.call_method0(pyo3::intern!(py, "strip"))?;
            match stripped.cast_exact::<PyString>() {
                Ok(stripped) => input.push_texts(text_of(stripped)?, normalised(text.as_any())?),
                Err(_) => {
                    // A strip() that gives no exact str: its slicing and `startswith` are its
                    // own. The reference decides the whole replay.
                    odd = true;
                    Ok(())
                }
            }
        };
        pushed.map_err(|e| to_pyerr(py, e))?;
        crate::alloc::push(&mut kept, label).map_err(|e| to_pyerr(py, e))?;
    }
    let partitions = u32s(partitions, "partitions")?;
    if kept.len() != partitions.len() {
        return Err(invalid(
            py,
            format!(
                "{} labels but {} partition ids",
                kept.len(),
                partitions.len()
            ),
        ));
    }
    if odd {
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("threshold", threshold.0)?;
        kwargs.set_item("min_chars", min_chars.0)?;
        kwargs.set_item("prefix", prefix_name)?;
        kwargs.set_item("prefix_len", prefix_len)?;
        kwargs.set_item("query_limit", query_limit)?;
        return py
            .import("memdedup._reference")?
            .getattr("replay")?
            .call((PyList::new(py, &kept)?, partitions), Some(&kwargs));
    }
    drop(kept);
    let rp = ReplayParams {
        matching: params(threshold, min_chars),
        prefix_mode,
        prefix_len,
        query_limit,
    };
    let r = run_pool(py, |cancel| {
        let (stripped, norm) = input.into_texts(cancel)?;
        crate::batch::replay(&stripped, &norm, &partitions, &rp, cancel)
    })?;
    let outcomes: Vec<&str> = r
        .outcome
        .iter()
        .map(|o| match o {
            Some(crate::batch::Outcome::Collapsed(reason)) => reason.as_str(),
            Some(crate::batch::Outcome::Empty) => "empty",
            _ => "new",
        })
        .collect();
    Ok((r.canonical, outcomes, r.score)
        .into_pyobject(py)?
        .into_any())
}

/// Every pair `(i, j)`, `i < j`, with `labels_match(labels[i], labels[j])`, no prefix gate: the
/// exact all-pairs join of `crate::join`, without the GIL, as native-endian u32 pairs, sorted
/// (numpy views them without a Python object per pair; a list of tuples of the full corpus's
/// 35.5 million pairs took ~8 GiB).
#[pyfunction]
#[pyo3(
    signature = (labels, *, threshold = DEFAULT_THRESHOLD, min_chars = DEFAULT_MIN_CHARS),
    text_signature = "(labels, *, threshold=0.85, min_chars=16)"
)]
pub fn join<'py>(
    py: Python<'py>,
    labels: &Bound<'py, PyAny>,
    threshold: Threshold,
    min_chars: MinChars,
) -> PyResult<Bound<'py, PyBytes>> {
    let norm: Vec<Text> = collect(labels, |label| normalised(&label))?;
    let p = params(threshold, min_chars);
    let (joined, pairs) = run_pool(py, |cancel| {
        let joined = crate::join::joined(&norm, &p, cancel)?;
        let pairs = joined.pair_count(cancel)?;
        Ok((joined, pairs))
    })?;
    let (bytes, ()) = ffi::filled_bytes::<[u32; 2], ()>(py, pairs, |out| {
        run_pool(py, |cancel| joined.expand_into(out, cancel))
    })?;
    Ok(bytes)
}

/// The join on groups of identical labels (`crate::join::join_groups`), without the GIL: each
/// label's group (numbered in order of first occurrence) as native-endian u32s, and the matching
/// ordered group pairs `(stored, incoming)`, sorted, as u32 pairs. A few bytes per label and per
/// pair between distinct labels, where the expanded join has a pair per two identical labels.
#[pyfunction]
#[pyo3(
    signature = (labels, *, threshold = DEFAULT_THRESHOLD, min_chars = DEFAULT_MIN_CHARS),
    text_signature = "(labels, *, threshold=0.85, min_chars=16)"
)]
pub fn join_groups<'py>(
    py: Python<'py>,
    labels: &Bound<'py, PyAny>,
    threshold: Threshold,
    min_chars: MinChars,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    let norm: Vec<Text> = collect(labels, |label| normalised(&label))?;
    let p = params(threshold, min_chars);
    let (of, pairs) = run_pool(py, |cancel| crate::join::join_groups(&norm, &p, cancel))?;
    drop(norm);
    let (of, ()) = ffi::filled_bytes::<u32, ()>(py, of.len(), |out| {
        out.copy_from_slice(&of);
        Ok(())
    })?;
    let (pairs, ()) = ffi::filled_bytes::<[u32; 2], ()>(py, pairs.len(), |out| {
        for (slot, &(g, h)) in out.iter_mut().zip(&pairs) {
            *slot = [g, h];
        }
        Ok(())
    })?;
    Ok((of, pairs))
}

/// `u32`s from native-endian bytes (a `bytes` object), or from a sequence of ints.
fn u32s_of(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u32>> {
    let Ok(bytes) = value.cast_exact::<PyBytes>() else {
        return u32s(value, what);
    };
    let raw = bytes.as_bytes();
    if raw.len() % 4 != 0 {
        return Err(invalid(
            value.py(),
            format!("{what} must hold 4 bytes per u32, not {} bytes", raw.len()),
        ));
    }
    let mut out =
        crate::alloc::with_capacity(raw.len() / 4).map_err(|e| to_pyerr(value.py(), e))?;
    out.extend(
        raw.chunks_exact(4)
            .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]])),
    );
    Ok(out)
}

/// Pairs of `u32`s from native-endian bytes (a `bytes` object), or from a sequence of pairs.
fn u32_pairs_of(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<(u32, u32)>> {
    if !value.is_exact_instance_of::<PyBytes>() {
        return index_pairs(value, what);
    }
    let flat = u32s_of(value, what)?;
    if flat.len() % 2 != 0 {
        return Err(invalid(
            value.py(),
            format!("{what} must hold pairs of u32s, not {} u32s", flat.len()),
        ));
    }
    let mut out =
        crate::alloc::with_capacity(flat.len() / 2).map_err(|e| to_pyerr(value.py(), e))?;
    out.extend(flat.chunks_exact(2).map(|p| (p[0], p[1])));
    Ok(out)
}

/// Clusters from a join on groups (`join_groups`'s answer, as bytes or sequences): canonical and
/// `via` per label, equal to `clusters` on the expanded pairs, with the smallest partner of a
/// member linked only through later labels (`crate::cluster`).
#[pyfunction]
#[pyo3(
    signature = (group_of_label, group_pairs, *, mode = Mode::CANONICAL),
    text_signature = "(group_of_label, group_pairs, *, mode='canonical')"
)]
pub fn group_clusters(
    py: Python<'_>,
    group_of_label: &Bound<'_, PyAny>,
    group_pairs: &Bound<'_, PyAny>,
    mode: Mode,
) -> PyResult<(Vec<u32>, Vec<Option<u32>>)> {
    let of = u32s_of(group_of_label, "group_of_label")?;
    let pairs = u32_pairs_of(group_pairs, "group_pairs")?;
    let Mode(mode) = mode;
    run_here(py, of.len() + pairs.len(), |cancel| {
        crate::cluster::clusters_from_groups(&of, &pairs, mode, cancel)
    })
}

/// Every label pair a join on groups stands for (`join_groups`'s answer, as bytes or sequences):
/// native-endian u32 pairs `(i, j)`, `i < j`, sorted, what `join` returns for the same labels.
#[pyfunction]
#[pyo3(
    signature = (group_of_label, group_pairs),
    text_signature = "(group_of_label, group_pairs)"
)]
pub fn expand_groups<'py>(
    py: Python<'py>,
    group_of_label: &Bound<'py, PyAny>,
    group_pairs: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    let of = u32s_of(group_of_label, "group_of_label")?;
    let pairs = u32_pairs_of(group_pairs, "group_pairs")?;
    crate::cluster::check_groups(&of, &pairs).map_err(|e| to_pyerr(py, e))?;
    let expanded = run_pool(py, |cancel| crate::join::expand_groups(&of, &pairs, cancel))?;
    let (bytes, ()) = ffi::filled_bytes::<[u32; 2], ()>(py, expanded.len(), |out| {
        for (slot, &(i, j)) in out.iter_mut().zip(&expanded) {
            *slot = [i, j];
        }
        Ok(())
    })?;
    Ok(bytes)
}

/// Cluster assignment from matching pairs: canonical index and the partner that justified each
/// collapse. Pairs with an index outside `0..n` are ignored.
#[pyfunction]
#[pyo3(
    signature = (n, pairs, *, mode = Mode::CANONICAL),
    text_signature = "(n, pairs, *, mode='canonical')"
)]
pub fn clusters(
    py: Python<'_>,
    n: &Bound<'_, PyAny>,
    pairs: &Bound<'_, PyAny>,
    mode: Mode,
) -> PyResult<(Vec<u32>, Vec<Option<u32>>)> {
    let n = count(n, "n", false)?;
    if n > u32::MAX as usize {
        return Err(invalid(
            py,
            format!("clusters takes at most 2**32 - 1 labels, not {n}"),
        ));
    }
    let Mode(mode) = mode;
    let pairs = index_pairs(pairs, "pairs")?;
    run_here(py, n + pairs.len(), |cancel| {
        crate::batch::clusters(n, &pairs, mode, cancel)
    })
}

/// Decide many `(stored, incoming)` index pairs of one label list: reason and exact score each.
#[pyfunction]
#[pyo3(
    signature = (labels, pairs, *, threshold = DEFAULT_THRESHOLD, min_chars = DEFAULT_MIN_CHARS),
    text_signature = "(labels, pairs, *, threshold=0.85, min_chars=16)"
)]
pub fn pair_reasons(
    py: Python<'_>,
    labels: &Bound<'_, PyAny>,
    pairs: &Bound<'_, PyAny>,
    threshold: Threshold,
    min_chars: MinChars,
) -> PyResult<(Vec<Option<&'static str>>, Vec<f64>)> {
    let norm: Vec<Text> = collect(labels, |label| normalised(&label))?;
    let pairs = index_pairs(pairs, "pairs")?;
    if let Some(&(i, j)) = pairs
        .iter()
        .find(|&&(i, j)| i as usize >= norm.len() || j as usize >= norm.len())
    {
        let show = |k: u32| {
            if k == u32::MAX {
                "out of range".to_string()
            } else {
                k.to_string()
            }
        };
        return Err(invalid(
            py,
            format!(
                "pair ({}, {}) is out of range for {} labels",
                show(i),
                show(j),
                norm.len()
            ),
        ));
    }
    let p = params(threshold, min_chars);
    let decided = run_pool(py, |cancel| {
        crate::batch::pair_reasons(&norm, &pairs, &p, cancel)
    })?;
    Ok(decided
        .into_iter()
        .map(|d| (d.reason.map(|r| r.as_str()), d.score))
        .unzip())
}
