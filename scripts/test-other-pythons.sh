#!/usr/bin/env bash
# The bindings read object layouts that differ between CPython versions (build.rs gives them the
# `Py_3_x` cfgs): list items, a str's cached hash, length, kind and code units, and on 3.11 only, legacy
# (not ready) strs. The main test run covers only the interpreter it runs on. This builds memdedup for
# every other CPython 3.11+ found here (on PATH, or under pyenv) and runs the difflib suites, which drive
# that code, against it, on the Rust backend (an extension that fails to load is an error); on 3.11 also
# the legacy-str probes (tests/adversarial/test_adv_legacy_str.py), which reach the cfg(not Py_3_12)
# branches. With no such interpreter it says so and succeeds.
set -euo pipefail
cd "$(dirname "$0")/.."

# These builds test code paths (object layouts, the stable ABI), not speed: no fat LTO, parallel codegen
# (the same source, the same answers; a much shorter compile), in a target folder of their own that
# the next build reuses.
export CARGO_PROFILE_RELEASE_LTO=${CARGO_PROFILE_RELEASE_LTO:-false}
export CARGO_PROFILE_RELEASE_CODEGEN_UNITS=${CARGO_PROFILE_RELEASE_CODEGEN_UNITS:-16}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target/checks}

root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
running=$(python -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
found=()
for minor in 11 12 13 14; do
    [ "3.$minor" = "$running" ] && continue
    for candidate in "$(command -v "python3.$minor" || true)" "$root"/versions/3."$minor".*/bin/python3."$minor"; do
        # A pyenv shim for a version that is not selected exits non-zero: try it before taking it.
        if [ -n "$candidate" ] && [ -x "$candidate" ] && "$candidate" -c 'import venv' 2>/dev/null; then
            found+=("$candidate")
            break
        fi
    done
done
if [ ${#found[@]} -eq 0 ]; then
    echo "no CPython 3.11+ besides $running here: nothing to test"
    exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=()
for python in "${found[@]}"; do
    version=$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
    echo "+ CPython $version ($python)"
    "$python" -m venv "$work/$version"
    "$work/$version/bin/python" -m pip install -q pytest 'hypothesis>=6.100' .
    suites=(tests/test_difflib.py tests/test_difflib_cpython.py)
    if [ "$version" = "3.11" ]; then
        suites+=(tests/adversarial/test_adv_legacy_str.py)
    fi
    # Every interpreter is tried before the script fails, so one run shows them all.
    MEMDEDUP_IMPLEMENTATION=rust "$work/$version/bin/python" -m pytest -q -p no:cacheprovider -m "not perf" "${suites[@]}" \
        || failed+=("$version")
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "the tests failed on CPython ${failed[*]}" >&2
    exit 1
fi
