//! With the bindings on, tells rustc which CPython the extension is built for (`Py_3_12`,
//! `Py_LIMITED_API`, `PyPy`, ...), so `rust/python.rs` reads object layouts only where that CPython
//! defines them and calls the C API elsewhere.
fn main() {
    #[cfg(feature = "python")]
    pyo3_build_config::use_pyo3_cfgs();
}
