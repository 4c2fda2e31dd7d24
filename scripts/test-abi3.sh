#!/usr/bin/env bash
# The abi3 build (`--features abi3`: one wheel for every CPython >= 3.11, the stable ABI) takes other
# code paths in the bindings: C API calls where the version-specific build reads list items, a str's
# hash and its units in place. This builds that wheel, installs it into a venv of its own for the
# running CPython and for the newest other CPython 3.11+ found (the point of abi3: the same file on
# both), checks the extension loaded is the abi3 one, and runs the parity and difflib suites on it, on
# the Rust backend (an extension that fails to load is an error, not a fallback).
set -euo pipefail
cd "$(dirname "$0")/.."

# These builds test code paths (object layouts, the stable ABI), not speed: no fat LTO, parallel codegen
# (the same source, the same answers; a much shorter compile), in a target folder of their own that
# the next build reuses.
export CARGO_PROFILE_RELEASE_LTO=${CARGO_PROFILE_RELEASE_LTO:-false}
export CARGO_PROFILE_RELEASE_CODEGEN_UNITS=${CARGO_PROFILE_RELEASE_CODEGEN_UNITS:-16}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target/checks}

root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
pythons=("$(command -v python)")
running=$(python -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
for minor in 14 13 12 11; do
    [ "3.$minor" = "$running" ] && continue
    newest=""
    for candidate in "$(command -v "python3.$minor" || true)" "$root"/versions/3."$minor".*/bin/python3."$minor"; do
        if [ -n "$candidate" ] && [ -x "$candidate" ] && "$candidate" -c 'import venv' 2>/dev/null; then
            newest=$candidate
            break
        fi
    done
    if [ -n "$newest" ]; then
        pythons+=("$newest")
        break
    fi
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The running environment's maturin when it has one (CI installs it first); else one in a venv of its own.
if python -c 'import maturin' 2>/dev/null; then
    maturin=(python -m maturin)
else
    python -m venv "$work/build"
    "$work/build/bin/python" -m pip install -q 'maturin>=1.5,<2'
    maturin=("$work/build/bin/maturin")
fi
"${maturin[@]}" build --release --features abi3 --out "$work/dist" --interpreter "$(command -v python)"
wheel=$(ls "$work"/dist/memdedup-*-abi3-*.whl)
echo "built $wheel"

failed=()
for python in "${pythons[@]}"; do
    version=$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
    echo "+ abi3 wheel on CPython $version ($python)"
    "$python" -m venv "$work/$version"
    "$work/$version/bin/python" -m pip install -q pytest 'hypothesis>=6.100' "$wheel"
    # From outside the repo, so the installed package is the one imported.
    (cd "$work" && "$work/$version/bin/python" -c '
import memdedup._core as core, sys
assert core.__file__.endswith(".abi3.so"), core.__file__
print("loaded", core.__file__)
')
    # Every interpreter is tried before the script fails, so one run shows them all.
    MEMDEDUP_IMPLEMENTATION=rust "$work/$version/bin/python" -m pytest -q -p no:cacheprovider \
        tests/test_parity_core.py tests/test_difflib.py tests/test_difflib_cpython.py || failed+=("$version")
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "the abi3 wheel failed its tests on CPython ${failed[*]}" >&2
    exit 1
fi
