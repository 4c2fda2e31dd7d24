//! Every raw CPython access of the bindings, and the only module with FFI `unsafe`: str layouts
//! and conversions, list and tuple items read in place, cached hashes, new containers filled in
//! place, buffers filled before Python sees them. Everything here is a safe function except where
//! a `# Safety` section says what the caller must hold; the rest of the bindings use pyo3's safe
//! API and these.
//!
//! The rule behind every borrowed read: an item read from a list without a reference of our own
//! stays alive only while no Python code runs (Python code may empty the list and free it), and
//! Python code runs on any call that may raise, allocate a tracked object, call `__eq__`,
//! `__hash__`, `__str__` or a finalizer, or check for signals. So a borrowed item is used only by
//! code here that runs none of that (reading the object's own memory, hashing or comparing exact
//! `str` and `bytes`), and anything else gets a reference first.
//!
//! Object layouts are read only where the running CPython defines them (`Py_LIMITED_API` off, not
//! PyPy); in an `abi3` build the same functions call the stable API instead, taking references
//! (or a tuple snapshot of a list) where the layout-reading code needs none.

use pyo3::exceptions::PyIndexError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyList, PyString, PyTuple};

use crate::elements::Elements;
use crate::labels::LabelBatch;

// `memdedup_layout` (build.rs): object layouts may be read in place. It must never be set with
// the stable ABI.
#[cfg(all(memdedup_layout, Py_LIMITED_API))]
compile_error!("memdedup_layout is set in a stable-ABI build");

// ---------------------------------------------------------------------------------------------
// str data

/// A canonical str's code units in place: `(kind, units)`, `kind` 1, 2 or 4 bytes a unit. None
/// for a 3.11 "legacy" str not made canonical yet (made by old C APIs only; readying it
/// allocates), and in builds without layouts.
///
/// # Safety
/// `s` must be a live `str` (exact or subclass) for `'a`. The units live as long as the str.
#[inline(always)]
unsafe fn units<'a>(s: *mut ffi::PyObject) -> Option<(u32, &'a [u8])> {
    // SAFETY: `s` is a live str (the caller's promise); before 3.12 its kind and data are read
    // only once it is ready, as the macros require. A str's units never move or change.
    #[cfg(memdedup_layout)]
    unsafe {
        #[cfg(not(Py_3_12))]
        if ffi::PyUnicode_IS_READY(s) == 0 {
            return None;
        }
        let len = ffi::PyUnicode_GET_LENGTH(s) as usize;
        let kind = ffi::PyUnicode_KIND(s);
        let data = ffi::PyUnicode_DATA(s).cast::<u8>();
        Some((kind, std::slice::from_raw_parts(data, len * kind as usize)))
    }
    #[cfg(not(memdedup_layout))]
    {
        let _ = s;
        None
    }
}

/// `s`'s bytes when every code point is below 256 (one byte each), read in place.
pub fn latin1_of<'a>(s: &'a Bound<'_, PyString>) -> Option<&'a [u8]> {
    // SAFETY: `s` is a live str, borrowed (so kept alive) for 'a.
    match unsafe { units(s.as_ptr()) } {
        Some((1, bytes)) => Some(bytes),
        _ => None,
    }
}

/// `s`'s bytes when it is an exact str of ASCII code points: read in place (or, without layouts,
/// its UTF-8, which CPython keeps in the object for ASCII strs).
pub fn ascii_of<'a>(s: &'a Bound<'_, PyAny>) -> Option<&'a [u8]> {
    let s = s.cast_exact::<PyString>().ok()?;
    #[cfg(memdedup_layout)]
    {
        latin1_of(s).filter(|bytes| bytes.is_ascii())
    }
    #[cfg(not(memdedup_layout))]
    {
        let mut size: ffi::Py_ssize_t = 0;
        // SAFETY: `s` is a live exact str, referenced for 'a; the UTF-8 belongs to it and lives as
        // long. A str with lone surrogates has none: the error is cleared.
        unsafe {
            let ptr = ffi::PyUnicode_AsUTF8AndSize(s.as_ptr(), &mut size);
            if ptr.is_null() {
                ffi::PyErr_Clear();
                return None;
            }
            let bytes = std::slice::from_raw_parts(ptr.cast::<u8>(), size as usize);
            bytes.is_ascii().then_some(bytes)
        }
    }
}

/// The code points of `s` into `out` (replaced), lone surrogates included.
pub fn codepoints_into(s: &Bound<'_, PyString>, out: &mut Vec<u32>) -> PyResult<()> {
    out.clear();
    // SAFETY: `s` is a live str, referenced while its units are read.
    if let Some((kind, data)) = unsafe { units(s.as_ptr()) } {
        try_reserve(out, data.len() / kind as usize)?;
        match kind {
            1 => out.extend(data.iter().map(|&c| c as u32)),
            2 => out.extend(
                data.chunks_exact(2)
                    .map(|u| u16::from_ne_bytes([u[0], u[1]]) as u32),
            ),
            _ => out.extend(
                data.chunks_exact(4)
                    .map(|u| u32::from_ne_bytes([u[0], u[1], u[2], u[3]])),
            ),
        }
        return Ok(());
    }
    // SAFETY: `s` is a live str; `out` has room for exactly `len` code points and AsUCS4 is told
    // so (it copies them, readying a legacy str first, and writes no terminator when told not to).
    unsafe {
        let len = ffi::PyUnicode_GetLength(s.as_ptr());
        if len < 0 {
            return Err(PyErr::fetch(s.py()));
        }
        try_reserve(out, len as usize)?;
        if len > 0 {
            let done = ffi::PyUnicode_AsUCS4(s.as_ptr(), out.as_mut_ptr(), len, 0);
            if done.is_null() {
                return Err(PyErr::fetch(s.py()));
            }
            out.set_len(len as usize);
        }
    }
    Ok(())
}

fn try_reserve<T>(v: &mut Vec<T>, n: usize) -> PyResult<()> {
    v.try_reserve(n)
        .map_err(|e| pyo3::exceptions::PyMemoryError::new_err(format!("cannot allocate: {e}")))
}

/// An exact str of code points below 256.
pub fn str_from_latin1<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyString>> {
    // SAFETY: the pointer and length describe `bytes`; Latin-1 decodes every byte (and
    // FromKindAndData copies them); the result is a new reference or NULL with an error set.
    unsafe {
        #[cfg(memdedup_layout)]
        let obj = ffi::PyUnicode_FromKindAndData(
            ffi::PyUnicode_1BYTE_KIND as i32,
            bytes.as_ptr().cast(),
            bytes.len() as ffi::Py_ssize_t,
        );
        #[cfg(not(memdedup_layout))]
        let obj = ffi::PyUnicode_DecodeLatin1(
            bytes.as_ptr().cast(),
            bytes.len() as ffi::Py_ssize_t,
            std::ptr::null(),
        );
        Ok(Bound::from_owned_ptr_or_err(py, obj)?.cast_into_unchecked())
    }
}

/// An exact str of these code points, lone surrogates included.
///
/// Not through UTF-32 decoding with byte order 0, which takes a leading U+FEFF for a byte-order
/// mark (and drops it): the byte order is always given (issue 22).
pub fn str_from_codepoints<'py>(py: Python<'py>, cps: &[u32]) -> PyResult<Bound<'py, PyString>> {
    // SAFETY: the pointer and length describe `cps`, alive for the call; every value is a code
    // point (they come from strs), and the result is a new reference or NULL with an error set.
    unsafe {
        #[cfg(memdedup_layout)]
        let obj = ffi::PyUnicode_FromKindAndData(
            ffi::PyUnicode_4BYTE_KIND as i32,
            cps.as_ptr().cast(),
            cps.len() as ffi::Py_ssize_t,
        );
        #[cfg(not(memdedup_layout))]
        let obj = {
            let mut native: std::ffi::c_int = if cfg!(target_endian = "little") {
                -1
            } else {
                1
            };
            ffi::PyUnicode_DecodeUTF32(
                cps.as_ptr().cast(),
                (cps.len() * 4) as ffi::Py_ssize_t,
                c"surrogatepass".as_ptr(),
                &mut native,
            )
        };
        Ok(Bound::from_owned_ptr_or_err(py, obj)?.cast_into_unchecked())
    }
}

/// `chr(c)`: a one-character str (lone surrogates included).
pub fn str_of_char(py: Python<'_>, c: u32) -> PyResult<Bound<'_, PyString>> {
    // SAFETY: returns a new reference, or NULL with an exception set (for c above 0x10FFFF).
    unsafe {
        Ok(
            Bound::from_owned_ptr_or_err(py, ffi::PyUnicode_FromOrdinal(c as std::ffi::c_int))?
                .cast_into_unchecked(),
        )
    }
}

/// The length of an exact str read in place, or None (a 3.11 legacy str, or no layouts).
///
/// # Safety
/// `s` must be a live exact str.
#[inline(always)]
unsafe fn str_len_in_place(s: *mut ffi::PyObject) -> Option<usize> {
    // SAFETY: the caller's promise; before 3.12 the length is read only once the str is ready.
    #[cfg(memdedup_layout)]
    unsafe {
        #[cfg(not(Py_3_12))]
        if ffi::PyUnicode_IS_READY(s) == 0 {
            return None;
        }
        Some(ffi::PyUnicode_GET_LENGTH(s) as usize)
    }
    #[cfg(not(memdedup_layout))]
    {
        let _ = s;
        None
    }
}

// ---------------------------------------------------------------------------------------------
// List and tuple items

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
fn prefetch_object(obj: *const ffi::PyObject) {
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
                    .map_err(|e| super::error::to_pyerr(list.py(), e))?;
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

// ---------------------------------------------------------------------------------------------
// Line-diff elements: exact strs or bytes of a list or tuple, read in place

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

// ---------------------------------------------------------------------------------------------
// New containers and buffers, filled before Python sees them

/// difflib's opcodes as its list of `(tag, i1, i2, j1, j2)` tuples; `tags` are the four tag strs
/// in [`crate::matcher::Tag`] order.
///
/// Performance notes: opcode lists are long in line diffs (~2,000 for the bench's 10 files at 10%
/// edited), and making their objects was ~12% of an `opcodes` call (perf). Made at its size with
/// the tuples filled in place rather than through `PyTuple::new` and `append`, the calls took 3-6%
/// less time. Each opcode shares the ints where the one before ended.
pub fn opcode_list<'py>(
    py: Python<'py>,
    codes: &[(crate::matcher::Tag, usize, usize, usize, usize)],
    tags: [&Bound<'py, PyString>; 4],
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
    // or tuple whose items are still NULL is only deallocated, on an error, which allows them);
    // every `fill_item` is given a new reference, taken just before.
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
            let tag = tags[tag as usize].as_ptr();
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

/// Put `item` (a new reference, which this steals) at `i` of a brand new list (`is_list`) or
/// tuple, whose slot `i` is still NULL: in place, except where the layout is not public.
///
/// # Safety
/// As `PyList_SET_ITEM` / `PyTuple_SET_ITEM` require: `i` in bounds, the container new and
/// referenced once, `item` a new reference.
#[inline(always)]
unsafe fn fill_item(
    container: *mut ffi::PyObject,
    i: usize,
    item: *mut ffi::PyObject,
    is_list: bool,
) {
    let i = i as ffi::Py_ssize_t;
    // SAFETY: the caller's promise. (The SetItem calls cannot fail here: the index is in bounds
    // and the container is new.)
    unsafe {
        #[cfg(memdedup_layout)]
        if is_list {
            ffi::PyList_SET_ITEM(container, i, item);
        } else {
            ffi::PyTuple_SET_ITEM(container, i, item);
        }
        #[cfg(not(memdedup_layout))]
        if is_list {
            ffi::PyList_SetItem(container, i, item);
        } else {
            ffi::PyTuple_SetItem(container, i, item);
        }
    }
}

/// A new `bytearray` of `n` zeroed `T`s, filled by `fill` before anyone else can see it (so `fill`
/// may run without the GIL: nothing else holds the object). A `MemoryError` when it cannot be
/// allocated.
pub fn filled_bytearray<'py, T: Zeroable, R>(
    py: Python<'py>,
    n: usize,
    fill: impl FnOnce(&mut [T]) -> PyResult<R>,
) -> PyResult<(Bound<'py, PyByteArray>, R)> {
    let (object, result) = filled(
        py,
        n,
        ffi::PyByteArray_FromStringAndSize,
        ffi::PyByteArray_AsString,
        fill,
    )?;
    // SAFETY: made by PyByteArray_FromStringAndSize.
    Ok((unsafe { object.cast_into_unchecked() }, result))
}

/// [`filled_bytearray`] for an immutable `bytes`.
pub fn filled_bytes<'py, T: Zeroable, R>(
    py: Python<'py>,
    n: usize,
    fill: impl FnOnce(&mut [T]) -> PyResult<R>,
) -> PyResult<(Bound<'py, PyBytes>, R)> {
    let (object, result) = filled(
        py,
        n,
        ffi::PyBytes_FromStringAndSize,
        ffi::PyBytes_AsString,
        fill,
    )?;
    // SAFETY: made by PyBytes_FromStringAndSize.
    Ok((unsafe { object.cast_into_unchecked() }, result))
}

/// A new bytes-like object of `n` `T`s made by `new` (a `*_FromStringAndSize`, which given NULL
/// makes an object of uninitialised bytes, or sets MemoryError) and read through `data` (its
/// `*_AsString`), zeroed, then filled by `fill` while no one else holds it.
fn filled<'py, T: Zeroable, R>(
    py: Python<'py>,
    n: usize,
    new: unsafe extern "C" fn(*const std::ffi::c_char, ffi::Py_ssize_t) -> *mut ffi::PyObject,
    data: unsafe extern "C" fn(*mut ffi::PyObject) -> *mut std::ffi::c_char,
    fill: impl FnOnce(&mut [T]) -> PyResult<R>,
) -> PyResult<(Bound<'py, PyAny>, R)> {
    let bytes = byte_len::<T>(n)?;
    // SAFETY: `new` with NULL makes a new object of `bytes` uninitialised bytes (or sets
    // MemoryError); they are zeroed before any use.
    let object = unsafe {
        Bound::from_owned_ptr_or_err(py, new(std::ptr::null(), bytes as ffi::Py_ssize_t))?
    };
    // SAFETY: the object is new and ours alone until returned (nothing else reads, writes or
    // resizes it while the slice lives); its buffer holds `bytes` bytes.
    let result = unsafe { fill_zeroed(data(object.as_ptr()).cast::<u8>(), n, fill)? };
    Ok((object, result))
}

fn byte_len<T>(n: usize) -> PyResult<usize> {
    n.checked_mul(std::mem::size_of::<T>())
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(|| {
            pyo3::exceptions::PyMemoryError::new_err(format!(
                "{n} items of {} bytes do not fit in memory",
                std::mem::size_of::<T>()
            ))
        })
}

/// Types whose every bit pattern is a value, zero included: filled in place from zeroed bytes.
///
/// # Safety
/// An implementor must be plain data with no padding, valid for any bit pattern.
pub unsafe trait Zeroable: Copy {}
// SAFETY: f64 and u32 arrays are plain data, valid for every bit pattern.
unsafe impl Zeroable for f64 {}
// SAFETY: as above.
unsafe impl Zeroable for [u32; 2] {}
// SAFETY: as above.
unsafe impl Zeroable for u32 {}
// SAFETY: as above.
unsafe impl Zeroable for u8 {}

/// Zero the `n` `T`s at `data` and hand them to `fill`.
///
/// # Safety
/// `data` must point to `n * size_of::<T>()` writable bytes that nothing else reads or writes
/// while `fill` runs.
unsafe fn fill_zeroed<T: Zeroable, R>(
    data: *mut u8,
    n: usize,
    fill: impl FnOnce(&mut [T]) -> PyResult<R>,
) -> PyResult<R> {
    if n == 0 {
        return fill(&mut []);
    }
    if data.is_null() || (data as usize) % std::mem::align_of::<T>() != 0 {
        // CPython's allocators align to 16 bytes; anything else would be a bug to report.
        return Err(pyo3::exceptions::PySystemError::new_err(
            "memdedup: a new buffer is not aligned for its items",
        ));
    }
    // SAFETY: the caller's promise: `n * size_of::<T>()` writable bytes, ours alone; aligned for
    // T (checked); zeroed before the slice is made, and T is valid for zero bytes (Zeroable).
    unsafe {
        std::ptr::write_bytes(data, 0, n * std::mem::size_of::<T>());
        fill(std::slice::from_raw_parts_mut(data.cast::<T>(), n))
    }
}

// ---------------------------------------------------------------------------------------------
// Threads

/// The identifier of the calling thread as Python knows it (`threading.get_ident()`).
pub fn thread_ident() -> u64 {
    // SAFETY: a plain query with no preconditions.
    unsafe { ffi::PyThread_get_thread_ident() as u64 }
}
