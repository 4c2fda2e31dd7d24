#!/usr/bin/env bash
# Build one wheel per CPython (3.11+) found on this machine (on PATH, or under pyenv), into dist/, and
# smoke-test each in a fresh venv: install the wheel (numpy and tqdm from PyPI), then run the
# `memdedup` command and a difflib-parity check from outside the source tree.
#
# Per-version wheels keep the fast line-diff path (it reads CPython's object layouts directly, which the
# stable ABI does not allow). `--abi3` builds one cp311-abi3 wheel instead, for every CPython >= 3.11
# (same answers; line diffs slower: see README.md, "Install").
#
#   bash scripts/build-wheels.sh            # a wheel for every CPython 3.11+ here
#   bash scripts/build-wheels.sh --abi3     # one abi3 wheel, smoke-tested on every CPython 3.11+ here
set -euo pipefail
cd "$(dirname "$0")/.."

abi3=0
[ "${1:-}" = "--abi3" ] && abi3=1

root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
found=()
for minor in 11 12 13 14; do
    for candidate in "$(command -v "python3.$minor" || true)" "$root"/versions/3."$minor".*/bin/python3."$minor"; do
        # A pyenv shim for a version that is not selected exits non-zero: try it before taking it.
        if [ -n "$candidate" ] && [ -x "$candidate" ] && "$candidate" -c 'import venv' 2>/dev/null; then
            found+=("$candidate")
            break
        fi
    done
done
if [ ${#found[@]} -eq 0 ]; then
    echo "no CPython 3.11+ found" >&2
    exit 1
fi
command -v maturin >/dev/null || python -m pip install -q 'maturin>=1.5,<2'

rm -rf dist
if [ "$abi3" = 1 ]; then
    echo "+ maturin build --release --features abi3 -i ${found[0]}"
    maturin build --release --features abi3 -i "${found[0]}" --out dist
else
    for python in "${found[@]}"; do
        echo "+ maturin build --release -i $python"
        maturin build --release -i "$python" --out dist
    done
fi
ls -l dist

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for python in "${found[@]}"; do
    version=$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
    tag="cp${version/./}"
    wheel=$(ls dist/*.whl | grep -E -- "-($tag-$tag|cp311-abi3)-" | head -1)
    echo "+ CPython $version: $wheel"
    "$python" -m venv "$work/$version"
    "$work/$version/bin/python" -m pip install -q "$wheel"
    (
        cd "$work"
        "$work/$version/bin/python" - <<'EOF'
import difflib
import sys

import memdedup
from memdedup import batch

assert memdedup.IMPLEMENTATION == "rust", memdedup.IMPLEMENTATION
a, b = "Uses pytest and ruff", "uses pytest & ruff for Python"
assert memdedup.ratio(a, b) == difflib.SequenceMatcher(None, a, b).ratio()
assert memdedup.match_reason("Prefers dark mode", "prefers dark mode in every editor") == ("containment", 0.68)
assert batch.replay(["a b c d", "a b c d", None]).reason == ["new", "ratio", "empty"]
print(f"memdedup {memdedup.__version__} on CPython {sys.version.split()[0]}: ok ({memdedup._core.__file__})")
EOF
        printf 'Uses pytest and ruff\nUses pytest and ruff.\n' | "$work/$version/bin/memdedup" dedup - --quiet
    )
done
echo "wheels built and smoke-tested: ${#found[@]} CPython version(s)"
