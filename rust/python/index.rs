//! `memdedup._core.LabelIndex`: the core's [`crate::index::LabelIndex`] behind a read-write lock.
//!
//! Locking: the lock is always taken with the GIL released, so a thread waiting for it never
//! holds the GIL, and a thread holding it may take the GIL (the main thread's Ctrl-C polls do)
//! without deadlock. Queries share the lock and run concurrently; writes wait for them.

use std::sync::RwLock;

use pyo3::prelude::*;
use pyo3::types::PyList;

use super::coerce::{collect, params, MinChars, Threshold, DEFAULT_MIN_CHARS, DEFAULT_THRESHOLD};
use super::error::to_pyerr;
use super::interrupt::{run_detached, run_pool};
use super::text::{normalised, MissingAsEmpty};
use crate::error::Error;
use crate::index::{LabelIndex as Core, QueryScratch};
use crate::text::Text;

#[pyclass(frozen, module = "memdedup._core")]
pub struct LabelIndex {
    core: RwLock<Core>,
}

fn poisoned() -> Error {
    Error::InvalidInput("the index is unusable: a write to it failed midway".into())
}

/// A label as the index stores and queries it: normalised, a missing value read as empty.
fn label_text(label: &Bound<'_, PyAny>) -> PyResult<Text> {
    let _missing = MissingAsEmpty::set(true);
    normalised(label)
}

/// A partition id: an int in `0..2**32`.
fn partition_id(value: &Bound<'_, PyAny>) -> PyResult<u32> {
    value.extract::<u32>().map_err(|_| {
        to_pyerr(
            value.py(),
            Error::InvalidInput("a partition must be an int in 0..2**32".into()),
        )
    })
}

#[pymethods]
impl LabelIndex {
    /// An empty index whose containment lists serve queries with `min_chars >= min_chars` (any
    /// other query is answered exactly, by a scan).
    #[new]
    #[pyo3(signature = (min_chars = DEFAULT_MIN_CHARS), text_signature = "(min_chars=16)")]
    fn new(min_chars: MinChars) -> Self {
        LabelIndex {
            core: RwLock::new(Core::new(min_chars.0.min(1 << 20))),
        }
    }

    /// Store `label` in `partition`; returns its insertion number (0, 1, 2, ...: never reused).
    #[pyo3(text_signature = "(self, label, partition)")]
    fn insert(
        &self,
        py: Python<'_>,
        label: &Bound<'_, PyAny>,
        partition: &Bound<'_, PyAny>,
    ) -> PyResult<u64> {
        let text = label_text(label)?;
        let part = partition_id(partition)?;
        run_detached(py, move |cancel| {
            self.core
                .write()
                .map_err(|_| poisoned())?
                .insert(part, text, cancel)
        })
    }

    /// Give the live label `number` a new label, keeping its place in the insertion order and its
    /// partition; False when it is not live.
    #[pyo3(text_signature = "(self, number, label)")]
    fn relabel(
        &self,
        py: Python<'_>,
        number: &Bound<'_, PyAny>,
        label: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let text = label_text(label)?;
        let Ok(seq) = number.extract::<u64>() else {
            return Ok(false);
        };
        run_detached(py, move |cancel| {
            self.core
                .write()
                .map_err(|_| poisoned())?
                .relabel(seq, text, cancel)
        })
    }

    /// Store `labels[k]` in `partitions[k]`, prepared in parallel; returns the first one's insertion
    /// number (the others follow it).
    #[pyo3(text_signature = "(self, labels, partitions)")]
    fn insert_many(
        &self,
        py: Python<'_>,
        labels: &Bound<'_, PyAny>,
        partitions: &Bound<'_, PyAny>,
    ) -> PyResult<u64> {
        let texts = collect(labels, |x| label_text(&x))?;
        let parts = collect(partitions, |x| partition_id(&x))?;
        if texts.len() != parts.len() {
            return Err(to_pyerr(
                py,
                Error::InvalidInput(format!(
                    "{} labels but {} partitions",
                    texts.len(),
                    parts.len()
                )),
            ));
        }
        run_pool(py, move |cancel| {
            self.core
                .write()
                .map_err(|_| poisoned())?
                .insert_many(&parts, texts, cancel)
        })
    }

    /// Retract an insertion number; False when it is not live.
    #[pyo3(text_signature = "(self, number)")]
    fn remove(&self, py: Python<'_>, number: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Ok(seq) = number.extract::<u64>() else {
            return Ok(false);
        };
        run_detached(py, move |_| {
            self.core.write().map_err(|_| poisoned())?.remove(seq)
        })
    }

    /// Every live label of `partition` that `labels_match(stored, label)` accepts, oldest first:
    /// `[(number, reason, score)]`; with `first`, only the oldest. With `slots`, four parallel
    /// lists `[numbers, slots, reasons, scores]`, each match's slot beside it (slots are reused:
    /// the number tells which label the slot held).
    #[pyo3(
        signature = (label, partition, *, threshold = DEFAULT_THRESHOLD, min_chars = DEFAULT_MIN_CHARS, first = false, slots = false),
        text_signature = "(self, label, partition, *, threshold=0.85, min_chars=16, first=False, slots=False)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn query<'py>(
        &self,
        py: Python<'py>,
        label: &Bound<'_, PyAny>,
        partition: &Bound<'_, PyAny>,
        threshold: Threshold,
        min_chars: MinChars,
        first: bool,
        slots: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let text = label_text(label)?;
        let part = partition_id(partition)?;
        let p = params(threshold, min_chars);
        let hits = run_detached(py, move |cancel| {
            let core = self.core.read().map_err(|_| poisoned())?;
            let mut scratch = QueryScratch::with_cancel(cancel);
            let hits = core.query(part, &text, &p, first, &mut scratch, cancel)?;
            let slots: Vec<u32> = if slots {
                hits.iter()
                    .map(|h| core.slot_of(h.0).unwrap_or(u32::MAX))
                    .collect()
            } else {
                Vec::new()
            };
            Ok((hits, slots))
        })?;
        // The reasons as two interned strings (one object each, not one a match).
        let ratio = pyo3::intern!(py, "ratio");
        let containment = pyo3::intern!(py, "containment");
        let (hits, slot_list) = hits;
        let reason_of = |r: crate::contract::Reason| match r {
            crate::contract::Reason::Ratio => ratio,
            crate::contract::Reason::Containment => containment,
        };
        if slots {
            // Four parallel lists, not a tuple a match: a query on a common phrase has thousands,
            // and each tuple is a container the cyclic GC tracks (a full collection over a process
            // holding a million labels took ~50 ms, the p99.9 of bench_index).
            let numbers = PyList::new(py, hits.iter().map(|h| h.0))?;
            let slot_objs = PyList::new(py, slot_list)?;
            let reasons = PyList::new(py, hits.iter().map(|h| reason_of(h.1)))?;
            let scores = PyList::new(py, hits.iter().map(|h| h.2))?;
            return PyList::new(py, [numbers, slot_objs, reasons, scores]);
        }
        let out = PyList::empty(py);
        for (number, r, score) in hits {
            out.append((number, reason_of(r), score))?;
        }
        Ok(out)
    }

    /// The slot of the live label `number` (None when it is not live).
    fn slot_of(&self, py: Python<'_>, number: &Bound<'_, PyAny>) -> PyResult<Option<u32>> {
        let Ok(seq) = number.extract::<u64>() else {
            return Ok(None);
        };
        run_detached(py, move |_| {
            Ok(self.core.read().map_err(|_| poisoned())?.slot_of(seq))
        })
    }

    /// The slots of the labels numbered `first .. first + count` (u32::MAX where one is not live).
    fn slots_of(&self, py: Python<'_>, first: u64, count: u64) -> PyResult<Vec<u32>> {
        run_detached(py, move |_| {
            let core = self.core.read().map_err(|_| poisoned())?;
            let mut out =
                crate::alloc::with_capacity(usize::try_from(count).unwrap_or(usize::MAX))?;
            out.extend(
                (first..first.saturating_add(count)).map(|n| core.slot_of(n).unwrap_or(u32::MAX)),
            );
            Ok(out)
        })
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        run_detached(py, |_| Ok(self.core.read().map_err(|_| poisoned())?.len()))
    }

    /// Bytes the index holds (an estimate of its tables' slack included).
    fn memory_bytes(&self, py: Python<'_>) -> PyResult<usize> {
        run_detached(py, |_| {
            Ok(self.core.read().map_err(|_| poisoned())?.memory_bytes())
        })
    }

    /// The partition of the live label `number` (None when it is not live).
    fn partition_of(&self, py: Python<'_>, number: &Bound<'_, PyAny>) -> PyResult<Option<u32>> {
        let Ok(seq) = number.extract::<u64>() else {
            return Ok(None);
        };
        run_detached(py, move |_| {
            Ok(self.core.read().map_err(|_| poisoned())?.partition_of(seq))
        })
    }

    /// Live labels in `partition`.
    fn partition_len(&self, py: Python<'_>, partition: &Bound<'_, PyAny>) -> PyResult<usize> {
        let part = partition_id(partition)?;
        run_detached(py, move |_| {
            Ok(self
                .core
                .read()
                .map_err(|_| poisoned())?
                .partition_len(part))
        })
    }

    /// Whether insertion number `number` is live.
    fn __contains__(&self, py: Python<'_>, number: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Ok(seq) = number.extract::<u64>() else {
            return Ok(false);
        };
        run_detached(py, move |_| {
            Ok(self.core.read().map_err(|_| poisoned())?.contains(seq))
        })
    }

    /// Counts a server can export: `{"labels", "partitions", "bytes", "tombstones", "slots",
    /// "free_slots", "inserted"}`.
    fn stats(&self, py: Python<'_>) -> PyResult<Vec<(&'static str, u64)>> {
        let st = run_detached(py, |_| {
            Ok(self.core.read().map_err(|_| poisoned())?.stats())
        })?;
        Ok(vec![
            ("labels", st.labels as u64),
            ("partitions", st.partitions as u64),
            ("bytes", st.bytes as u64),
            ("tombstones", st.tombstones as u64),
            ("slots", st.slots as u64),
            ("free_slots", st.free_slots as u64),
            ("inserted", st.inserted),
        ])
    }
}
