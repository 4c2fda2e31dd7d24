//! New containers and buffers, filled before Python sees them: the opcode list, and bytes and
//! bytearrays of plain numbers.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyList, PyString};

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
