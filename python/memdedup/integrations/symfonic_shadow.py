"""A pytest plugin: run a test suite with memdedup installed into symfonic-core, count every call into
memdedup, and compare every answer with symfonic's untouched function (or the standard library's
difflib). ::

    python -m pytest -p memdedup.integrations.symfonic_shadow ...

:func:`memdedup.integrations.symfonic.install` runs when pytest starts (before test modules import
symfonic, so the post-import path is the one exercised), with an ``instrument`` that wraps each rebound
name:

- the dedup functions (and the engine's and semantic merge's aliases) call memdedup's, then symfonic's
  own code from a private copy of ``symfonic/memory/dedup.py`` loaded with the standard ``difflib``
  (so its ``labels_match`` is symfonic's too); ``find_canonical_node``'s graph is queried once: the
  shadow replays the candidates memdedup's lookup was given, and its DEBUG line is not logged twice;
- the janitor's ``_similarity`` is compared with symfonic's function run on the standard difflib;
- every rebound ``SequenceMatcher`` is a subclass whose ``ratio()``, ``quick_ratio()`` and
  ``real_quick_ratio()`` are compared with the standard class's on the same arguments.

Answers must be equal (floats bit for bit, nodes by identity, exceptions of the reference's type).
Memdedup's answer is always the one returned, so a test sees exactly what an installed process sees.
A mismatch marks the session failed. With ``MEMDEDUP_SHADOW_REPORT=PATH`` a JSON report is written:
calls per rebound name, the tests that reached memdedup, the mismatches. ``scripts/symfonic-suite.py``
runs symfonic-core's own suite with and without this plugin and compares every test's outcome.
"""

from __future__ import annotations

import collections
import importlib.util
import inspect
import json
import logging
import math
import os
import sys
import threading
import types
from typing import Any

import pytest

from memdedup import difflib as _mdifflib
from memdedup.integrations import symfonic as _integ

_STD = _mdifflib._STANDARD["SequenceMatcher"]
_SYMFONIC_DEDUP_LOGGER = logging.getLogger("symfonic.memory.dedup")


class _Ledger:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: collections.Counter[str] = collections.Counter()
        self.tests: collections.Counter[str] = collections.Counter()
        self.mismatches: list[dict[str, Any]] = []
        self.current = "<outside a test>"
        self.shadow_dedup: types.ModuleType | None = None

    def count(self, key: str) -> None:
        with self.lock:
            self.calls[key] += 1
            self.tests[self.current] += 1

    def mismatch(self, key: str, ours: Any, theirs: Any, args: Any) -> None:
        with self.lock:
            self.mismatches.append(
                {
                    "key": key,
                    "test": self.current,
                    "ours": _show(ours),
                    "theirs": _show(theirs),
                    "args": _show(args),
                }
            )


_ledger = _Ledger()


def _show(value: Any) -> str:
    try:
        text = repr(value)
    except Exception as exc:  # an object whose repr fails
        text = f"<unrepresentable {type(value).__name__}: {type(exc).__name__}>"
    return text if len(text) <= 300 else text[:300] + "..."


def _outcome(call: Any) -> tuple[str, Any]:
    try:
        return ("ok", call())
    except Exception as exc:
        return ("raise", exc)


def _same(ours: tuple[str, Any], theirs: tuple[str, Any], identity: bool = False) -> bool:
    """The same value (floats bit for bit; the very same object with ``identity``), or an exception of
    the reference's type."""
    if ours[0] != theirs[0]:
        return False
    if ours[0] == "raise":
        return isinstance(ours[1], type(theirs[1]))
    a, b = ours[1], theirs[1]
    if identity:
        return a is b
    if isinstance(a, float) or isinstance(b, float):
        return type(a) is type(b) and (a.hex() == b.hex() or (math.isnan(a) and math.isnan(b)))
    if type(a) is not type(b):
        return False
    return bool(a is b or a == b)


def _result(outcome: tuple[str, Any]) -> Any:
    if outcome[0] == "raise":
        raise outcome[1]
    return outcome[1]


def _untouched_dedup() -> types.ModuleType:
    """A private copy of ``symfonic/memory/dedup.py``, run with the standard difflib: symfonic's code,
    none of whose names memdedup rebinds."""
    if _ledger.shadow_dedup is None:
        path = sys.modules["symfonic.memory.dedup"].__file__
        spec = importlib.util.spec_from_file_location("_memdedup_shadow_symfonic_dedup", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.SequenceMatcher = _STD  # type: ignore[attr-defined]
        _ledger.shadow_dedup = module
    return _ledger.shadow_dedup


class _Recorder:
    """The graph memdedup's lookup gets: queries the real graph once and records what it answered."""

    def __init__(self, graph: Any) -> None:
        self._graph = graph
        self.answers: list[tuple[Any, Any, str, Any]] = []

    async def query_nodes(self, *args: Any, **kwargs: Any) -> Any:
        try:
            raw = await self._graph.query_nodes(*args, **kwargs)
        except BaseException as exc:
            self.answers.append((args, kwargs, "raise", exc))
            raise
        try:
            answer = list(raw)
        except Exception:
            answer = raw  # not iterable: both lookups fail on it alike
        self.answers.append((args, kwargs, "ok", answer))
        return answer


class _Replay:
    """The graph symfonic's lookup gets in the shadow call: the recorded answers, in order."""

    def __init__(self, answers: list[tuple[Any, Any, str, Any]]) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[Any, Any]] = []

    async def query_nodes(self, *args: Any, **kwargs: Any) -> Any:
        self.asked.append((args, kwargs))
        if not self.answers:
            raise RuntimeError("the shadow lookup queried the graph more often than memdedup's")
        _args, _kwargs, kind, value = self.answers.pop(0)
        if kind == "raise":
            raise value
        return value


def _wrap_function(key: str, shadow: Any, replacement: Any) -> Any:
    def shadowed(*args: Any, **kwargs: Any) -> Any:
        _ledger.count(key)
        ours = _outcome(lambda: replacement(*args, **kwargs))
        theirs = _outcome(lambda: shadow()(*args, **kwargs))
        if not _same(ours, theirs):
            _ledger.mismatch(key, ours, theirs, (args, kwargs))
        return _result(ours)

    shadowed.__signature__ = inspect.signature(replacement)  # type: ignore[attr-defined]
    shadowed.__name__ = getattr(replacement, "__name__", "shadowed")
    return shadowed


def _wrap_lookup(key: str, replacement: Any) -> Any:
    async def find_canonical_node(graph: Any, scope: Any, **kwargs: Any) -> Any:
        _ledger.count(key)
        probe = graph is not None and hasattr(graph, "query_nodes")
        recorder = _Recorder(graph) if probe else graph
        try:
            ours: tuple[str, Any] = ("ok", await replacement(recorder, scope, **kwargs))
        except Exception as exc:
            ours = ("raise", exc)
        replay = _Replay(recorder.answers) if probe else graph
        disabled = _SYMFONIC_DEDUP_LOGGER.disabled
        _SYMFONIC_DEDUP_LOGGER.disabled = True  # symfonic's own lookup would log the same line again
        try:
            theirs: tuple[str, Any] = (
                "ok",
                await _untouched_dedup().find_canonical_node(replay, scope, **kwargs),
            )
        except Exception as exc:
            theirs = ("raise", exc)
        finally:
            _SYMFONIC_DEDUP_LOGGER.disabled = disabled
        if probe and (replay.answers or len(replay.asked) != len(recorder.answers)):
            _ledger.mismatch(key, f"{len(recorder.answers)} queries", f"{len(replay.asked)} queries", kwargs)
        if probe and any(
            (a, k) != (ra, rk) for (a, k), (ra, rk, _, _) in zip(replay.asked, recorder.answers, strict=False)
        ):
            _ledger.mismatch(key, recorder.answers, replay.asked, "query arguments")
        if not _same(ours, theirs, identity=True):
            _ledger.mismatch(key, ours, theirs, (scope, kwargs))
        return _result(ours)

    find_canonical_node.__signature__ = inspect.signature(replacement)  # type: ignore[attr-defined]
    return find_canonical_node


def _wrap_class(key: str, replacement: type[Any]) -> type:
    def compared(name: str) -> Any:
        def method(self: Any) -> Any:
            ours = _outcome(lambda: getattr(super(shadowed, self), name)())
            theirs = _outcome(
                lambda: getattr(_STD(self.isjunk, self.a, self.b, autojunk=self.autojunk), name)()
            )
            if not _same(ours, theirs):
                _ledger.mismatch(f"{key}.{name}", ours, theirs, (self.a, self.b, self.autojunk))
            return _result(ours)

        method.__name__ = name
        return method

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        _ledger.count(key)
        replacement.__init__(self, *args, **kwargs)

    # ratio and the two bounds only: overriding find_longest_match or get_matching_blocks would send
    # memdedup's matcher down difflib's own code (it honours such overrides), and test nothing.
    shadowed = type(
        "SequenceMatcher",
        (replacement,),
        {
            "__init__": __init__,
            "ratio": compared("ratio"),
            "quick_ratio": compared("quick_ratio"),
            "real_quick_ratio": compared("real_quick_ratio"),
            "__module__": replacement.__module__,
        },
    )
    return shadowed


def instrument(key: str, original: Any, replacement: Any) -> Any:
    """The ``instrument`` handed to :func:`memdedup.integrations.symfonic.install`."""
    if isinstance(replacement, type):
        return _wrap_class(key, replacement)
    name = key.rsplit(".", 1)[1]
    if name == "find_canonical_node":
        return _wrap_lookup(key, replacement)
    if name == "_similarity":
        namespace = dict(original.__globals__)
        namespace["SequenceMatcher"] = _STD
        untouched = types.FunctionType(original.__code__, namespace, original.__name__, original.__defaults__)
        return _wrap_function(key, lambda: untouched, replacement)
    return _wrap_function(key, lambda: getattr(_untouched_dedup(), name), replacement)


# --------------------------------------------------------------------------------------------------
# pytest hooks.
# --------------------------------------------------------------------------------------------------
def _more_stateful_examples(count: int) -> None:
    """``MEMDEDUP_SHADOW_STATEFUL_EXAMPLES=N``: hypothesis state machines run with at least N examples
    (symfonic's memory-invariant machine pins 25), for a longer shadow comparison of its lookups."""
    import hypothesis
    import hypothesis.stateful

    run = hypothesis.stateful.run_state_machine_as_test

    def run_state_machine_as_test(machine: Any, *, settings: Any = None, **kwargs: Any) -> Any:
        base = settings if settings is not None else hypothesis.settings()
        more = hypothesis.settings(base, max_examples=max(count, base.max_examples))
        return run(machine, settings=more, **kwargs)

    # A patch of hypothesis's function (its signature differs from ours on purpose: it forwards).
    setattr(hypothesis.stateful, "run_state_machine_as_test", run_state_machine_as_test)  # noqa: B010


def pytest_configure(config: pytest.Config) -> None:
    examples = os.environ.get("MEMDEDUP_SHADOW_STATEFUL_EXAMPLES", "").strip()
    if examples:
        _more_stateful_examples(int(examples))
    _integ.install(instrument=instrument)


def pytest_unconfigure(config: pytest.Config) -> None:
    _integ.uninstall()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Any) -> Any:
    _ledger.current = item.nodeid
    yield
    _ledger.current = "<outside a test>"


def report() -> dict[str, Any]:
    with _ledger.lock:
        return {
            "installed": [f"{m}.{n}" for m, n in _integ.installed()],
            "calls": dict(sorted(_ledger.calls.items())),
            "total_calls": sum(_ledger.calls.values()),
            "tests_reaching_memdedup": sorted(t for t in _ledger.tests if not t.startswith("<")),
            "mismatches": list(_ledger.mismatches),
        }


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    data = report()
    path = os.environ.get("MEMDEDUP_SHADOW_REPORT")
    if path:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1)
    if data["mismatches"]:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    data = report()
    write = terminalreporter.write_line
    write(
        f"memdedup shadow: {data['total_calls']} calls into memdedup from "
        f"{len(data['tests_reaching_memdedup'])} tests, "
        f"{len(data['mismatches'])} answers differing from symfonic's"
    )
    for key, count in data["calls"].items():
        write(f"  {count:8d}  {key}")
    for m in data["mismatches"][:20]:
        write(
            f"  MISMATCH {m['key']} in {m['test']}: "
            f"memdedup {m['ours']} != symfonic {m['theirs']} for {m['args']}"
        )
