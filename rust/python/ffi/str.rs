//! `str` data: a str's code units read in place, and new strs made from Latin-1 bytes or code
//! points (see the module doc of [`super`] for the rules every function here keeps).

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyString;

/// A canonical str's code units in place: `(kind, units)`, `kind` 1, 2 or 4 bytes a unit. None
/// for a 3.11 "legacy" str not made canonical yet (made by old C APIs only; readying it
/// allocates), and in builds without layouts.
///
/// # Safety
/// `s` must be a live `str` (exact or subclass) for `'a`. The units live as long as the str.
#[inline(always)]
pub(super) unsafe fn units<'a>(s: *mut ffi::PyObject) -> Option<(u32, &'a [u8])> {
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
pub(super) unsafe fn str_len_in_place(s: *mut ffi::PyObject) -> Option<usize> {
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
