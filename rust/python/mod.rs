//! The Python bindings (the `python` feature): the `memdedup._core` module.
//!
//! Layout: [`ffi`] holds every raw CPython access (the only FFI `unsafe`); [`coerce`] turns
//! arguments into the core's values by one rule per kind; [`text`] coerces labels and strs;
//! [`interrupt`] runs the core without the GIL, answering Ctrl-C; [`error`] converts the core's
//! one error type. The surfaces: [`core`] (one pair, one against many), [`batch`] (`memdedup.batch`),
//! [`lines`] (`memdedup.difflib`), [`scrub`] (`memdedup.scrub`'s detector). They convert and call: the algorithms are the core's.

mod batch;
mod coerce;
mod core;
mod error;
mod ffi;
mod index;
mod interrupt;
mod lines;
mod scrub;
mod text;

use pyo3::prelude::*;

/// `gil_used`: the bindings read the items of lists and tuples in place, taking no reference to
/// each, which is sound only while the GIL keeps other threads from changing them. A
/// free-threaded CPython re-enables the GIL when it imports this module.
#[pymodule(gil_used = true)]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    error::init(py)?;
    interrupt::init(py)?;
    m.add_function(wrap_pyfunction!(core::normalise_label, m)?)?;
    m.add_function(wrap_pyfunction!(core::ratio, m)?)?;
    m.add_function(wrap_pyfunction!(core::quick_ratio, m)?)?;
    m.add_function(wrap_pyfunction!(core::real_quick_ratio, m)?)?;
    m.add_function(wrap_pyfunction!(core::matching_blocks, m)?)?;
    m.add_function(wrap_pyfunction!(core::labels_match, m)?)?;
    m.add_function(wrap_pyfunction!(core::match_reason, m)?)?;
    m.add_function(wrap_pyfunction!(core::match_mask, m)?)?;
    m.add_function(wrap_pyfunction!(core::match_first, m)?)?;
    m.add_function(wrap_pyfunction!(batch::match_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(batch::cdist, m)?)?;
    m.add_function(wrap_pyfunction!(batch::replay, m)?)?;
    m.add_function(wrap_pyfunction!(batch::clusters, m)?)?;
    m.add_function(wrap_pyfunction!(batch::join, m)?)?;
    m.add_function(wrap_pyfunction!(batch::join_groups, m)?)?;
    m.add_function(wrap_pyfunction!(batch::group_clusters, m)?)?;
    m.add_function(wrap_pyfunction!(batch::expand_groups, m)?)?;
    m.add_function(wrap_pyfunction!(batch::pair_reasons, m)?)?;
    m.add_function(wrap_pyfunction!(lines::close_matches, m)?)?;
    m.add_class::<lines::SequenceIndex>()?;
    m.add_class::<lines::Codes>()?;
    m.add_class::<index::LabelIndex>()?;
    scrub::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
