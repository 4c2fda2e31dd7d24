"""CPython's own difflib tests (``test.test_difflib``, shipped with the interpreter), run against the drop-in.

Every ``unittest.TestCase`` of that module and every doctest of :mod:`difflib` (the module's
``load_tests`` adds them) runs with ``difflib.SequenceMatcher`` and ``difflib.get_close_matches``
replaced by :mod:`memdedup.difflib`'s. Replacing the module globals also routes ``Differ``, ``ndiff``,
``unified_diff``, ``context_diff``, ``diff_bytes`` and ``HtmlDiff`` (which look ``SequenceMatcher`` up
at call time) through the drop-in, so their tests exercise it too. Nothing is skipped by us; a case the
CPython suite itself skips is reported as a pytest skip with its reason.

The tests are not vendored: when the interpreter ships without its test package the module is skipped.
"""

from __future__ import annotations

import collections
import copy
import difflib
import doctest
import inspect
import io
import unittest
from collections.abc import Iterator
from typing import Any

import pytest
from memdedup import difflib as md

cpython = pytest.importorskip(
    "test.test_difflib",
    reason="this interpreter ships without CPython's test package (test.test_difflib); nothing to run",
)

LOADER = unittest.TestLoader()
CASE_CLASSES = sorted(
    (obj for obj in vars(cpython).values() if isinstance(obj, type) and issubclass(obj, unittest.TestCase)),
    key=lambda cls: cls.__name__,
)
CASES = [(cls, name) for cls in CASE_CLASSES for name in LOADER.getTestCaseNames(cls)]
# Found on the unpatched module: the finder skips objects defined elsewhere (ours live in memdedup.difflib).
DOCTESTS = {t.name: t for t in doctest.DocTestFinder().find(difflib) if t.examples}

#: The classes the drop-in must actually serve (they build SequenceMatchers or call get_close_matches).
MATCHER_CLASSES = {
    "TestWithAscii",
    "TestAutojunk",
    "TestSFbugs",
    "TestFindLongest",
    "TestSFpatches",
    "TestBytes",
}
MATCHER_DOCTESTS = {
    name for name in DOCTESTS if name.startswith(("difflib.SequenceMatcher", "difflib.get_close"))
}

rust_only = pytest.mark.skipif(
    md.SequenceMatcher is difflib.SequenceMatcher,
    reason="memdedup runs on the pure-Python reference: memdedup.difflib is the standard library's",
)


class Usage:
    """What the drop-in served during one patched run: matcher modes built, close-match calls made."""

    def __init__(self) -> None:
        self.modes: collections.Counter[str] = collections.Counter()
        self.close_matches = 0


@pytest.fixture
def patched(monkeypatch: pytest.MonkeyPatch) -> Iterator[Usage]:
    """``difflib``'s ``SequenceMatcher`` and ``get_close_matches`` replaced by memdedup's, with counters."""
    usage = Usage()
    monkeypatch.setattr(difflib, "SequenceMatcher", md.SequenceMatcher)
    if md.SequenceMatcher is not md._std.SequenceMatcher:
        chain_b = md._FastSequenceMatcher._SequenceMatcher__chain_b

        def counting_chain_b(self: Any) -> None:
            chain_b(self)
            usage.modes[self._mode] += 1

        monkeypatch.setattr(md._FastSequenceMatcher, "_SequenceMatcher__chain_b", counting_chain_b)

    get_close_matches = md.get_close_matches

    def counting_get_close_matches(*args: Any, **kwargs: Any) -> Any:
        usage.close_matches += 1
        return get_close_matches(*args, **kwargs)

    monkeypatch.setattr(difflib, "get_close_matches", counting_get_close_matches)
    yield usage


def run_case(cls: type[unittest.TestCase], name: str) -> unittest.TestResult:
    """One CPython test case in a suite of its own (so the module's ``setUpModule`` runs)."""
    result = unittest.TestResult()
    unittest.TestSuite([cls(name)]).run(result)
    return result


def check(result: unittest.TestResult) -> None:
    problems = [f"{test}: {trace}" for test, trace in result.failures + result.errors]
    assert not problems, "\n".join(problems)
    if result.skipped:
        pytest.skip("; ".join(f"skipped by CPython's suite: {reason}" for _, reason in result.skipped))


def run_doctest(name: str) -> doctest.TestResults:
    """One doctest of :mod:`difflib`, its globals taken from the (patched) module now."""
    test = copy.copy(DOCTESTS[name])
    test.globs = dict(vars(difflib))
    out = io.StringIO()
    runner = doctest.DocTestRunner(verbose=False)
    results = runner.run(test, out=out.write)
    assert results.failed == 0, out.getvalue()
    return results


def test_suite_found() -> None:
    assert len(CASES) >= 30, CASES
    assert {cls.__name__ for cls in CASE_CLASSES} >= MATCHER_CLASSES
    assert len(MATCHER_DOCTESTS) >= 9, sorted(DOCTESTS)


@pytest.mark.parametrize(("cls", "name"), CASES, ids=[f"{cls.__name__}.{name}" for cls, name in CASES])
def test_cpython_case(patched: Usage, cls: type[unittest.TestCase], name: str) -> None:
    check(run_case(cls, name))
    if cls.__name__ in MATCHER_CLASSES and "SequenceMatcher" in _source(cls, name):
        if md.SequenceMatcher is not md._std.SequenceMatcher:
            # Served by the core, not by the standard library's fallback.
            assert patched.modes[md._STR] + patched.modes[md._IDS] > 0, patched.modes


@pytest.mark.parametrize("name", sorted(DOCTESTS))
def test_cpython_doctest(patched: Usage, name: str) -> None:
    run_doctest(name)
    if name.startswith("difflib.get_close_matches"):
        assert patched.close_matches > 0
    if name in MATCHER_DOCTESTS and md.SequenceMatcher is not md._std.SequenceMatcher:
        assert patched.modes[md._STR] + patched.modes[md._IDS] > 0, patched.modes


def _source(cls: type, name: str) -> str:
    return inspect.getsource(getattr(cls, name))


# ------------------------------------------------------------------------------------------------------
# The harness can fail: a matcher that is wrong by one detail is caught by the same suite.
# ------------------------------------------------------------------------------------------------------
class _OffByOneRatio(md._FastSequenceMatcher):
    def ratio(self) -> float:
        return super().ratio() * 0.999


class _DropsABlock(md._FastSequenceMatcher):
    def get_matching_blocks(self) -> list[difflib.Match]:
        blocks = super().get_matching_blocks()
        return [*blocks[:-2], blocks[-1]] if len(blocks) > 1 else blocks


@rust_only
@pytest.mark.parametrize("broken", [_OffByOneRatio, _DropsABlock])
def test_harness_catches_a_broken_matcher(monkeypatch: pytest.MonkeyPatch, broken: type) -> None:
    monkeypatch.setattr(difflib, "SequenceMatcher", broken)
    failed = [
        f"{cls.__name__}.{name}"
        for cls, name in CASES
        if cls.__name__ in MATCHER_CLASSES and not run_case(cls, name).wasSuccessful()
    ]
    for name in sorted(MATCHER_DOCTESTS):
        test = copy.copy(DOCTESTS[name])
        test.globs = dict(vars(difflib))
        if doctest.DocTestRunner(verbose=False).run(test, out=lambda s: None).failed:
            failed.append(name)
    assert len(failed) >= 3, failed
