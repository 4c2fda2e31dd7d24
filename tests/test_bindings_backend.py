"""Which backend runs: the Rust extension when it loads; the reference, with a warning, when it does
not (unless ``MEMDEDUP_IMPLEMENTATION=rust`` makes that an error). A green suite must mean the Rust
core was tested, so the suite's own run forces it (README's test command) and these child processes
exercise the fallback."""

from __future__ import annotations

import pytest
from test_bindings_child import assert_clean, requires_rust, run_child

BLOCK_CORE = """
import sys
sys.modules["memdedup._core"] = None  # as if the extension failed to import
"""


def test_a_missing_extension_falls_back_with_a_warning() -> None:
    code = (
        BLOCK_CORE
        + """
import warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import memdedup
    from memdedup import batch, dedup
print(memdedup.IMPLEMENTATION)
print(any("pure-Python reference" in str(w.message) for w in caught))
print(dedup.labels_match("Uses pytest and ruff.", "uses pytest and ruff for Python projects", threshold=0.85))
print(batch.join(["a b c d", "a b c d", "x"]).tolist())
"""
    )
    assert_clean(run_child(code, MEMDEDUP_IMPLEMENTATION="auto"), "python", "True", "True", "[[0, 1]]")


def test_forcing_rust_makes_a_missing_extension_an_error() -> None:
    code = (
        BLOCK_CORE
        + """
try:
    import memdedup
except ImportError as exc:
    print(type(exc).__name__)
"""
    )
    assert_clean(run_child(code), "BackendUnavailableError")


@requires_rust
def test_the_suite_runs_on_the_extension_it_was_built_from() -> None:
    # The compiled extension is this checkout's: same version as the package.
    code = """
import memdedup
from memdedup import _core
print(memdedup.IMPLEMENTATION, _core.__version__ == memdedup.__version__)
print(_core.__file__.startswith(memdedup.__path__[0]))
"""
    assert_clean(run_child(code), "rust True", "True")


@pytest.mark.parametrize("value", ["RUST", " rust ", "Python", "auto", ""])
def test_the_variable_is_read_leniently(value: str) -> None:
    code = "import memdedup; print(memdedup.IMPLEMENTATION)"
    expected = "python" if value.strip().lower() == "python" else "rust"
    assert_clean(run_child(code, MEMDEDUP_IMPLEMENTATION=value), expected)
