//! With the bindings on, tells rustc which CPython the extension is built for (`Py_3_12`,
//! `Py_LIMITED_API`, `PyPy`, ...), and sets `memdedup_layout` when `rust/python/ffi/` may read
//! object layouts in place (a CPython build outside the stable ABI, which this crate's `abi3`
//! feature selects); elsewhere it calls the C API.
fn main() {
    println!("cargo:rustc-check-cfg=cfg(memdedup_layout)");
    #[cfg(feature = "python")]
    {
        pyo3_build_config::use_pyo3_cfgs();
        let config = pyo3_build_config::get();
        let cpython = config.implementation() == pyo3_build_config::PythonImplementation::CPython;
        let stable_abi = std::env::var_os("CARGO_FEATURE_ABI3").is_some();
        if cpython && !stable_abi {
            println!("cargo:rustc-cfg=memdedup_layout");
        }
    }
}
