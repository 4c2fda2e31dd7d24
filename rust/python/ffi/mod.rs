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
//!
//! One file per kind of access: [`str`](self::str) (str data), [`items`] (list and tuple items),
//! [`lines`] (line-diff elements) and [`fill`] (new containers and buffers); threads here. This folder
//! stays the one home of FFI `unsafe`.

use pyo3::ffi;

mod fill;
mod items;
mod lines;
mod str;

pub use fill::*;
pub use items::*;
pub use lines::*;
pub use str::*;

// `memdedup_layout` (build.rs): object layouts may be read in place. It must never be set with
// the stable ABI.
#[cfg(all(memdedup_layout, Py_LIMITED_API))]
compile_error!("memdedup_layout is set in a stable-ABI build");

// ---------------------------------------------------------------------------------------------
// Threads

/// The identifier of the calling thread as Python knows it (`threading.get_ident()`).
pub fn thread_ident() -> u64 {
    // SAFETY: a plain query with no preconditions.
    unsafe { ffi::PyThread_get_thread_ident() as u64 }
}
