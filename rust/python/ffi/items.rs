//! List and tuple items: labels, close-match candidates and exact u32s read from a list or a tuple,
//! in place where the layout allows (see [`super`] for the borrowed-read rule).

use pyo3::exceptions::PyIndexError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

use crate::labels::LabelBatch;

use super::*;

/// Item `i` of a list, borrowed, or null when `i` is past its current end (no error set).
///
/// # Safety
/// `list` must be a live list.
#[inline]
unsafe fn list_item(list: *mut ffi::PyObject, i: usize) -> *mut ffi::PyObject {
    // SAFETY: `list` is a live list (the caller's promise); `i` is checked against its current
    // size first.
    unsafe {
        #[cfg(memdedup_layout)]
        let (len, item) = (ffi::PyList_GET_SIZE(list), ffi::PyList_GET_ITEM);
        #[cfg(not(memdedup_layout))]
        let (len, item) = (ffi::PyList_Size(list), ffi::PyList_GetItem);
        if i < len as usize {
            item(list, i as ffi::Py_ssize_t)
        } else {
            std::ptr::null_mut()
        }
    }
}

/// How many items ahead of its use an object is prefetched.
#[cfg(memdedup_layout)]
const PREFETCH_AHEAD: usize = 12;

/// Ask the CPU to load an object's first two cache lines (a short str's header and data).
#[inline(always)]
pub(super) fn prefetch_object(obj: *const ffi::PyObject) {
    if !obj.is_null() {
        crate::simd::prefetch_address(obj.cast());
        crate::simd::prefetch_address(obj.cast::<u8>().wrapping_add(64));
    }
}

fn shortened() -> PyErr {
    PyIndexError::new_err("list index out of range (the list got shorter while it was read)")
}

/// Read the items `range` of `list` into `batch`: an exact str of ASCII code points as its bytes,
/// read in place without taking a reference (nothing runs between reading the item and copying
/// its bytes into the batch); any other item is given to `other` with a reference of its own.
/// An `IndexError` if the list is shorter than the range when an item's turn comes (`other` may
/// run Python code that shortens it).
///
/// Performance notes: the strs of a large list lie scattered in memory, each a cache miss, so
/// items a few places ahead are prefetched; taking and dropping a reference to each wrote to every
/// str's header in a loop bound by reading those headers (docs/perf.md, "match_pairs").
pub fn read_labels_into<'py>(
    list: &Bound<'py, PyList>,
    range: std::ops::Range<usize>,
    batch: &mut LabelBatch,
    mut other: impl FnMut(&mut LabelBatch, Bound<'py, PyAny>) -> PyResult<()>,
) -> PyResult<()> {
    #[cfg(memdedup_layout)]
    let ptr = list.as_ptr();
    for i in range.clone() {
        #[cfg(memdedup_layout)]
        {
            if i + PREFETCH_AHEAD < range.end {
                // SAFETY: a list we hold; the item (or null) is only an address to prefetch.
                prefetch_object(unsafe { list_item(ptr, i + PREFETCH_AHEAD) });
            }
            // SAFETY: a list we hold. The item is borrowed; it is used below only to read its
            // type and units and copy them, which runs no Python code.
            let item = unsafe { list_item(ptr, i) };
            if item.is_null() {
                return Err(shortened());
            }
            // SAFETY: `item` is a live object (see above); its units are read only when it is an
            // exact str, and copied before anything else runs.
            let ascii = unsafe {
                (ffi::PyUnicode_CheckExact(item) != 0)
                    .then(|| units(item))
                    .flatten()
                    .filter(|&(kind, bytes)| kind == 1 && bytes.is_ascii())
            };
            if let Some((_, bytes)) = ascii {
                batch
                    .push_ascii(bytes)
                    .map_err(|e| crate::python::error::to_pyerr(list.py(), e))?;
                continue;
            }
        }
        // Anything else may run Python code: with a reference of our own, read again.
        let item = list.get_item(i).map_err(|_| shortened())?;
        other(batch, item)?;
    }
    Ok(())
}

/// Strs with their indices in the sequence they came from.
pub type Indexed<'py> = Vec<(usize, Bound<'py, PyString>)>;

/// Objects with their indices in the sequence they came from.
pub type IndexedAny<'py> = Vec<(usize, Bound<'py, PyAny>)>;

/// `get_close_matches`' candidates: the possibilities (an exact list or tuple) whose length
/// passes difflib's length test against a word of `word_len` (`real_quick_ratio() >= cutoff`),
/// with their indices, each with a reference of its own; None when some possibility is not an
/// exact str (a subclass may redefine what difflib reads of it), or for any other sequence.
/// Types and lengths are read in place, and every reference is taken before any Python code can
/// run, so the candidates are the items whose lengths were read.
///
/// Performance notes: most possibilities of a very different length are never copied out of
/// Python at all; checking the types in the same pass saved a separate one over every
/// possibility (~10 ms of a short word's ~16 ms over 100,000 labels).
pub fn close_match_candidates<'py>(
    seq: &Bound<'py, PyAny>,
    word_len: usize,
    cutoff: f64,
) -> PyResult<Option<Indexed<'py>>> {
    let snapshot;
    let seq = match seq.cast_exact::<PyList>() {
        // Without layouts, a tuple of the items (a reference to each) is read instead.
        Ok(list) if cfg!(not(memdedup_layout)) => {
            snapshot = list.to_tuple().into_any();
            &snapshot
        }
        _ => seq,
    };
    // The items, borrowed: a list's (or tuple's) own array, read in one pass in which no Python
    // code runs (types and lengths read in place, references taken).
    let (items, len) = if let Ok(list) = seq.cast_exact::<PyList>() {
        (list.as_ptr(), list.len())
    } else if let Ok(tuple) = seq.cast_exact::<PyTuple>() {
        (tuple.as_ptr(), tuple.len())
    } else {
        return Ok(None);
    };
    let is_list = seq.is_exact_instance_of::<PyList>();
    // SAFETY: a list or tuple we hold; `i < len`, its length when the pass began (nothing in the
    // pass can change it).
    let item = |i: usize| unsafe {
        #[cfg(memdedup_layout)]
        let tuple_item = ffi::PyTuple_GET_ITEM;
        #[cfg(not(memdedup_layout))]
        let tuple_item = ffi::PyTuple_GetItem;
        if is_list {
            list_item(items, i)
        } else {
            tuple_item(items, i as ffi::Py_ssize_t)
        }
    };
    let py = seq.py();
    let admits = |len: usize| crate::close::length_admits(len, word_len, cutoff);
    let mut kept = Vec::new();
    let mut unread = Vec::new();
    for index in 0..len {
        #[cfg(memdedup_layout)]
        if index + PREFETCH_AHEAD < len {
            // In a large list the strs lie scattered in memory: a cache miss each, overlapped.
            prefetch_object(item(index + PREFETCH_AHEAD));
        }
        let item = item(index);
        if item.is_null() {
            return Ok(None);
        }
        // SAFETY: a live item (see above), its type read first; only an exact str's length is
        // read in place.
        let len = unsafe {
            if ffi::PyUnicode_CheckExact(item) == 0 {
                return Ok(None);
            }
            str_len_in_place(item)
        };
        // SAFETY: a live item; this takes a reference of our own.
        let referenced =
            || unsafe { Bound::from_borrowed_ptr(py, item).cast_into_unchecked::<PyString>() };
        match len {
            Some(len) if admits(len) => kept.push((index, referenced())),
            Some(_) => {}
            None => unread.push((index, referenced())),
        }
    }
    // Lengths that need a call (which may run Python code): every reference is held by now.
    for (index, s) in unread {
        if admits(s.len()?) {
            kept.push((index, s));
        }
    }
    kept.sort_by_key(|&(index, _)| index);
    Ok(Some(kept))
}

/// The items of an exact list or tuple as `u32`s when every one is an exact int in
/// `0..2**32`, read in place (None otherwise: the caller takes the general path, which raises the
/// typed error). An int's value is read without any call that can raise.
///
/// Performance notes: iterating and extracting each item (a reference and a checked conversion
/// each) cost a `SequenceIndex` of 5,000 ints ~50% more than this.
pub fn exact_u32s(seq: &Bound<'_, PyAny>) -> Option<Vec<u32>> {
    if cfg!(not(memdedup_layout)) {
        return None;
    }
    let (ptr, len, is_list) = if let Ok(list) = seq.cast_exact::<PyList>() {
        (list.as_ptr(), list.len(), true)
    } else if let Ok(tuple) = seq.cast_exact::<PyTuple>() {
        (tuple.as_ptr(), tuple.len(), false)
    } else {
        return None;
    };
    let mut out = Vec::new();
    out.try_reserve_exact(len).ok()?;
    for i in 0..len {
        // SAFETY: a list or tuple we hold and `i` below its length (read before the loop; nothing
        // in the loop runs Python code: an exact int's value is read by
        // PyLong_AsLongAndOverflow, which reports a value out of range without raising).
        let value = unsafe {
            let item = if is_list {
                list_item(ptr, i)
            } else {
                ffi::PyTuple_GetItem(ptr, i as ffi::Py_ssize_t)
            };
            if item.is_null() || ffi::PyLong_CheckExact(item) == 0 {
                return None;
            }
            let mut overflow = 0;
            let v = ffi::PyLong_AsLongAndOverflow(item, &mut overflow);
            if overflow != 0 {
                return None;
            }
            v
        };
        out.push(u32::try_from(value).ok()?);
    }
    Some(out)
}
