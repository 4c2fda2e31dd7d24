//! Line-diff elements: the exact strs or bytes of a list or a tuple, read in place, hashed and
//! compared for `memdedup.difflib`'s line diffs (see [`super`] for the borrowed-read rule).

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use crate::elements::Elements;

use super::*;

/// How a sequence's elements are hashed. Any hash that equal elements share gives the same ids,
/// so this decides only the speed.
///
/// Performance notes (docs/perf.md, "Element table"): lines just read from a file have no `hash()`
/// cached, and computing Python's (SipHash) was over half of such a diff; foldhash of the code
/// units made it ~34% faster, but ~35% slower on lines hashed before, where reading the cache is
/// cheaper. So a table takes foldhash only when its first elements have no cached hash.
#[derive(Clone, Copy)]
pub enum Hashing {
    /// Python's `hash()`, which a str or bytes caches after computing it once.
    Python,
    /// foldhash (seeded once per process) of a str's code units in canonical form, read in place:
    /// equal strs have the same kind and units.
    #[cfg(all(memdedup_layout, not(Py_3_14)))]
    Units(&'static foldhash::SharedSeed),
}

/// How many leading elements [`Lines::new`] looks at to choose the hashing.
const HASHING_SAMPLE: usize = 16;

/// The items of an exact list or tuple as a line diff's elements: exact strs (or exact bytes,
/// `is_str` false), whose hash and `==` are C code that runs no Python code, read in place.
/// A list is read at its live length; [`Elements::poll`] (which checks for signals, and so may
/// run Python code) is where it may change, and the table re-checks its length there.
pub struct Lines<'a, 'py> {
    seq: std::borrow::Cow<'a, Bound<'py, PyAny>>,
    is_list: bool,
    /// The length when the lines were made or last polled: a list's length changes only when
    /// Python code runs, which happens only in `poll` (where this is read again).
    len: usize,
    /// Where the items are (a list's item array, a tuple's inline one), read with `len`: a
    /// list's array moves only when Python code changes the list.
    #[cfg(memdedup_layout)]
    base: *const *mut ffi::PyObject,
    is_str: bool,
    hashing: Hashing,
}

/// The element type and hashing of a table's lines, for coding other lines against it.
#[derive(Clone, Copy)]
pub struct LineKind {
    is_str: bool,
    hashing: Hashing,
}

impl<'a, 'py> Lines<'a, 'py> {
    /// The lines of `seq`, or None when it is not an exact list or tuple. `like` gives the
    /// element type and hashing of the table they will be coded against (else they are chosen
    /// from the first items).
    pub fn new(seq: &'a Bound<'py, PyAny>, like: Option<LineKind>) -> Option<Self> {
        let is_list = seq.is_exact_instance_of::<PyList>();
        if !is_list && !seq.is_exact_instance_of::<PyTuple>() {
            return None;
        }
        let seq = if is_list && cfg!(not(memdedup_layout)) {
            // Without layouts every item access is a call: read a tuple of the items instead, so
            // that no Python code can free one while it is read.
            let list = seq.cast_exact::<PyList>().ok()?;
            std::borrow::Cow::Owned(list.to_tuple().into_any())
        } else {
            std::borrow::Cow::Borrowed(seq)
        };
        let is_list = seq.is_exact_instance_of::<PyList>();
        let mut lines = Lines {
            seq,
            is_list,
            len: 0,
            #[cfg(memdedup_layout)]
            base: std::ptr::null(),
            is_str: true,
            hashing: Hashing::Python,
        };
        lines.read_len();
        match like {
            Some(kind) => (lines.is_str, lines.hashing) = (kind.is_str, kind.hashing),
            None => {
                lines.is_str = lines.len() == 0 || lines.kind_at(0) == Kind::Str;
                lines.hashing = lines.choose_hashing();
            }
        }
        Some(lines)
    }

    /// The element type and hashing of these lines.
    pub fn kind(&self) -> LineKind {
        LineKind {
            is_str: self.is_str,
            hashing: self.hashing,
        }
    }

    /// Read the length of the list or tuple (and where its items are) again.
    fn read_len(&mut self) {
        let seq = self.seq.as_ptr();
        // SAFETY: a list or tuple we hold; a list's item array and a tuple's inline one are read
        // as CPython lays them out.
        unsafe {
            let len = if self.is_list {
                ffi::PyList_Size(seq)
            } else {
                ffi::PyTuple_Size(seq)
            };
            self.len = len.max(0) as usize;
            #[cfg(memdedup_layout)]
            {
                self.base = if self.is_list {
                    (*seq.cast::<ffi::PyListObject>()).ob_item
                } else {
                    (*seq.cast::<ffi::PyTupleObject>()).ob_item.as_ptr()
                };
            }
        }
    }

    /// Item `i`, borrowed (null at or past the length).
    ///
    /// Performance notes: checked against the length kept in `self`, not the list's own (an extra
    /// load a line: reading the list's size on every access cost coding a line diff's `a` ~9%,
    /// docs/perf.md).
    #[inline(always)]
    fn item(&self, i: usize) -> *mut ffi::PyObject {
        if i >= self.len {
            return std::ptr::null_mut();
        }
        // SAFETY: a list or tuple we hold, and `i` below its length: a tuple's never changes, and
        // a list's (and where its items are) only when Python code runs, which happens only in
        // `poll`, where both are read again.
        unsafe {
            #[cfg(memdedup_layout)]
            let item = *self.base.add(i);
            #[cfg(not(memdedup_layout))]
            let item = {
                let (seq, i) = (self.seq.as_ptr(), i as ffi::Py_ssize_t);
                if self.is_list {
                    ffi::PyList_GetItem(seq, i)
                } else {
                    ffi::PyTuple_GetItem(seq, i)
                }
            };
            item
        }
    }

    #[inline(always)]
    fn kind_at(&self, i: usize) -> Kind {
        Self::kind_of(self.item(i))
    }

    /// The kind of a live item (or null).
    #[inline(always)]
    fn kind_of(item: *mut ffi::PyObject) -> Kind {
        if item.is_null() {
            return Kind::Other;
        }
        // SAFETY: a live item (no Python code runs between reading it and its type).
        unsafe {
            if ffi::PyUnicode_CheckExact(item) != 0 {
                // A 3.11 legacy str would need readying (an allocation) to hash or compare.
                #[cfg(all(memdedup_layout, not(Py_3_12)))]
                if ffi::PyUnicode_IS_READY(item) == 0 {
                    return Kind::Other;
                }
                Kind::Str
            } else if ffi::PyBytes_CheckExact(item) != 0 {
                Kind::Bytes
            } else {
                Kind::Other
            }
        }
    }

    /// `Units` when the items are strs and one of the first [`HASHING_SAMPLE`] has no cached
    /// hash (a list of fresh lines), else `Python`.
    fn choose_hashing(&self) -> Hashing {
        #[cfg(all(memdedup_layout, not(Py_3_14)))]
        if self.is_str
            && (0..self.len().min(HASHING_SAMPLE)).any(|i| {
                // SAFETY: a live item, of exact type str (checked first) before its hash field
                // is read.
                self.kind_at(i) == Kind::Str
                    && unsafe { (*self.item(i).cast::<ffi::PyASCIIObject>()).hash } == -1
            })
        {
            return Hashing::Units(foldhash::SharedSeed::global_random());
        }
        let _ = HASHING_SAMPLE;
        Hashing::Python
    }

    /// `x == y` for two distinct exact strs (or bytes) of this sequence's type, by Python's
    /// comparison.
    #[inline(never)]
    fn equal_by_python(&self, x: *mut ffi::PyObject, y: *mut ffi::PyObject) -> PyResult<bool> {
        // SAFETY: both are live objects of the table's exact type, whose comparison is C code.
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
            return Err(PyErr::fetch(self.seq.py()));
        }
        Ok(result)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Str,
    Bytes,
    Other,
}

/// `x == y` for two exact, ready strs as `str.__eq__` decides it (equal length, kind and code
/// units), read from the objects.
///
/// Performance notes: when two line lists share no objects (two reads of a file), every line of
/// `a` is compared with `b`'s equal line; `PyUnicode_Compare` (two calls, type checks, then a
/// three-way memcmp) took ~15% of such a line diff (perf).
///
/// # Safety
/// `x` and `y` must be live exact strs.
#[cfg(all(memdedup_layout, not(Py_3_14)))]
#[inline(always)]
unsafe fn str_equal(x: *mut ffi::PyObject, y: *mut ffi::PyObject) -> Option<bool> {
    // SAFETY: the caller's promise; the headers are compared first (most unequal lines differ in
    // length), and the units read only for ready strs of one length and kind.
    unsafe {
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
}

/// An item of [`Lines`]: a borrowed object, valid while the lines are borrowed (the table cannot
/// poll, which may run Python code, while it holds one).
#[derive(Clone, Copy)]
pub struct LineItem<'a>(*mut ffi::PyObject, std::marker::PhantomData<&'a ()>);

impl Elements for Lines<'_, '_> {
    type Kept = Py<PyAny>;
    type Error = PyErr;
    type Item<'b>
        = LineItem<'b>
    where
        Self: 'b;

    fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    fn item(&self, i: usize) -> LineItem<'_> {
        LineItem(Lines::item(self, i), std::marker::PhantomData)
    }

    #[inline(always)]
    fn admits(&self, item: LineItem<'_>) -> bool {
        let item = item.0;
        if item.is_null() {
            return false;
        }
        // SAFETY: a live item (the lines are borrowed: no Python code has run since it was read).
        unsafe {
            if !self.is_str {
                return ffi::PyBytes_CheckExact(item) != 0;
            }
            if ffi::PyUnicode_CheckExact(item) == 0 {
                return false;
            }
            // A 3.11 legacy str would need readying (an allocation) to hash or compare.
            #[cfg(all(memdedup_layout, not(Py_3_12)))]
            if ffi::PyUnicode_IS_READY(item) == 0 {
                return false;
            }
            true
        }
    }

    #[inline(always)]
    fn hash(&self, item: LineItem<'_>) -> PyResult<u64> {
        let item = item.0;
        match self.hashing {
            Hashing::Python => {
                #[cfg(memdedup_layout)]
                if self.is_str {
                    // SAFETY: an admitted item: a live exact str; -1 means not computed yet.
                    let cached = unsafe { (*item.cast::<ffi::PyASCIIObject>()).hash };
                    if cached != -1 {
                        return Ok(cached as u64);
                    }
                }
                // SAFETY: a live exact str or bytes, whose hash is C code (it cannot fail for a
                // ready str, nor for bytes).
                match unsafe { ffi::PyObject_Hash(item) } {
                    -1 => Err(PyErr::fetch(self.seq.py())),
                    hash => Ok(hash as u64),
                }
            }
            #[cfg(all(memdedup_layout, not(Py_3_14)))]
            Hashing::Units(seed) => {
                use std::hash::Hasher;
                // SAFETY: a Units table holds strs, and an admitted item is a live, ready exact
                // str.
                let (_, units) = unsafe { units(item) }.unwrap_or((1, &[]));
                let mut hasher = foldhash::quality::FoldHasher::with_seed(0, seed);
                hasher.write(units);
                Ok(hasher.finish())
            }
        }
    }

    /// Inline here, where the guesses of `code` compare every line (docs/perf.md: an out-of-line
    /// call cost 1.5-6% of a diff).
    #[inline(always)]
    fn equal(&self, kept: &Py<PyAny>, item: LineItem<'_>) -> PyResult<bool> {
        let (x, y) = (kept.as_ptr(), item.0);
        if x == y {
            return Ok(true);
        }
        #[cfg(all(memdedup_layout, not(Py_3_14)))]
        if self.is_str {
            // SAFETY: the kept element and an admitted item: both live exact strs.
            if let Some(equal) = unsafe { str_equal(x, y) } {
                return Ok(equal);
            }
        }
        self.equal_by_python(x, y)
    }

    fn keep(&self, item: LineItem<'_>) -> Py<PyAny> {
        // SAFETY: a live item; this takes a reference of our own.
        unsafe { Bound::from_borrowed_ptr(self.seq.py(), item.0) }.unbind()
    }

    fn reads_data(&self) -> bool {
        !matches!(self.hashing, Hashing::Python)
    }

    #[inline(always)]
    fn prefetch(&self, i: usize) {
        prefetch_object(Lines::item(self, i));
    }

    #[inline(always)]
    fn prefetch_kept(&self, kept: &Py<PyAny>) {
        prefetch_object(kept.as_ptr());
    }

    fn poll(&mut self) -> PyResult<()> {
        // Signal handlers are Python code: no item is borrowed across this (`Elements::Item`
        // borrows the lines), and the list may have changed: its length is read again (the
        // table stops if it differs).
        self.seq.py().check_signals()?;
        self.read_len();
        Ok(())
    }
}
