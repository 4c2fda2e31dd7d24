"""memdedup installed into the real symfonic-core 9.12.0 (:mod:`memdedup.integrations.symfonic`).

What is rebound, before and after symfonic's modules are imported (fresh child processes), that the
rebound names answer exactly as symfonic's own functions (hypothesis, against the untouched originals),
that uninstall restores every original object, idempotence and thread safety, the refusals of a
version or a shape memdedup does not know, the startup hook honouring ``MEMDEDUP_INSTALL_SYMFONIC``, and
the process-wide ``memdedup.difflib.install()`` together with it (no RecursionError: child processes).
"""

from __future__ import annotations

import asyncio
import difflib
import inspect
import json
import logging
import math
import os
import random
import subprocess
import sys
import textwrap
import threading
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import memdedup
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from memdedup import dedup as md
from memdedup.errors import MemdedupError
from memdedup.integrations import _symfonic_patching as patching
from memdedup.integrations import symfonic as integ
from profiles import sampled
from strategies import ANY_CHAR, LABEL_CHAR, PY_ONLY_WHITESPACE, n_examples, restatement_pairs

sym = pytest.importorskip("symfonic.memory.dedup")
sym_engine = pytest.importorskip("symfonic.agent.engine")
sym_merge = pytest.importorskip("symfonic.core.learning.phases_semantic_merge")
sym_entity = pytest.importorskip("symfonic.core.learning._phases_entity_helpers")
sym_janitor = pytest.importorskip("symfonic.memory.janitor")
sym_types = pytest.importorskip("symfonic.memory.types")
sym_node = pytest.importorskip("symfonic.memory.models.node")
sym_backend = pytest.importorskip("symfonic.memory.backends.in_memory")
sym_store = pytest.importorskip("symfonic.memory.graph.store")

MODULES = {
    "dedup": sym,
    "engine": sym_engine,
    "merge": sym_merge,
    "entity": sym_entity,
    "janitor": sym_janitor,
}
EXPECTED_PAIRS = [
    ("symfonic.memory.dedup", "labels_match"),
    ("symfonic.memory.dedup", "normalise_label"),
    ("symfonic.memory.dedup", "find_canonical_node"),
    ("symfonic.memory.dedup", "SequenceMatcher"),
    ("symfonic.agent.engine", "find_canonical_node"),
    ("symfonic.agent.engine", "SymfonicAgent._retract_memory.<locals>.SequenceMatcher"),
    ("symfonic.core.learning.phases_semantic_merge", "normalise_label"),
    ("symfonic.core.learning.phases_semantic_merge", "SequenceMatcher"),
    ("symfonic.core.learning._phases_entity_helpers", "SequenceMatcher"),
    ("symfonic.memory.janitor", "SequenceMatcher"),
    ("symfonic.memory.janitor", "_similarity"),
]
RETRACT = sym_engine.SymfonicAgent.__dict__["_retract_memory"]
TenantScope = sym_types.TenantScope
MemoryLayer = sym_types.MemoryLayer
MemoryNode = sym_node.MemoryNode
SCOPE = TenantScope.root("tenant", "acme").child("agent", "planner")


def bindings() -> dict[tuple[str, str], Any]:
    """Every rebindable object as it is now (the engine method: its code object)."""
    out: dict[tuple[str, str], Any] = {}
    for module, name in EXPECTED_PAIRS:
        mod = sys.modules[module]
        if name.startswith("SymfonicAgent."):
            out[(module, name)] = RETRACT.__code__
        else:
            out[(module, name)] = getattr(mod, name)
    return out


@pytest.fixture(autouse=True)
def _always_uninstalled() -> Any:
    """No test leaves memdedup installed (other test files compare against symfonic's originals)."""
    before = bindings()
    meta_path = list(sys.meta_path)
    yield
    integ.uninstall()
    assert bindings() == before
    assert sys.meta_path == meta_path


# --------------------------------------------------------------------------------------------------
# Child processes: a fresh interpreter, so "imported before" and "imported after" are real.
# --------------------------------------------------------------------------------------------------
def run_child(code: str, *, env: dict[str, str] | None = None, args: list[str] | None = None) -> Any:
    """Run ``code`` in ``python -X dev``; it prints one JSON value last, which is returned."""
    proc = subprocess.run(
        [sys.executable, "-X", "dev", "-c", textwrap.dedent(code), *(args or [])],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )
    assert proc.returncode == 0, proc.stderr[-6000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


CHILD_PRELUDE = """
import asyncio, collections, difflib, importlib, json, sys, types
import memdedup.integrations.symfonic as integ

MODULES = [
    "symfonic.memory.dedup", "symfonic.agent.engine", "symfonic.core.learning.phases_semantic_merge",
    "symfonic.core.learning._phases_entity_helpers", "symfonic.memory.janitor",
]
calls = collections.Counter()

def instrument(key, original, replacement):
    if isinstance(replacement, type):
        class Counted(replacement):
            _replacement = replacement
            def __init__(self, *args, **kwargs):
                calls[key] += 1
                super().__init__(*args, **kwargs)
        return Counted
    if asyncio.iscoroutinefunction(replacement):
        async def counted(*args, **kwargs):
            calls[key] += 1
            return await replacement(*args, **kwargs)
        counted._replacement = replacement
        return counted
    def counted(*args, **kwargs):
        calls[key] += 1
        return replacement(*args, **kwargs)
    counted._replacement = replacement
    return counted

async def exercise():
    from symfonic.memory.types import MemoryLayer, TenantScope
    from symfonic.memory.models.node import MemoryNode
    from symfonic.memory.backends.in_memory import InMemoryGraphBackend
    from symfonic.memory.graph.store import GraphMemoryStore
    dedup = sys.modules["symfonic.memory.dedup"]
    engine = sys.modules["symfonic.agent.engine"]
    merge = sys.modules["symfonic.core.learning.phases_semantic_merge"]
    entity = sys.modules["symfonic.core.learning._phases_entity_helpers"]
    janitor = sys.modules["symfonic.memory.janitor"]
    scope = TenantScope.root("tenant", "acme").child("agent", "planner")
    store = GraphMemoryStore(InMemoryGraphBackend())
    stored = MemoryNode(id="n1", layer=MemoryLayer.SEMANTIC, tenant_id="acme", label="Uses pytest and ruff")
    await store.add_node(scope, stored)
    out = {}
    out["labels_match"] = dedup.labels_match("Uses pytest and ruff.", "uses pytest and ruff", threshold=0.85)
    out["normalise_label"] = dedup.normalise_label("  Uses  Pytest. ")
    found = await engine.find_canonical_node(
        store, scope, layer=MemoryLayer.SEMANTIC, label="Uses pytest and ruff for Python projects")
    out["find_canonical_node"] = None if found is None else found.id
    agent = types.SimpleNamespace(_DEDUP_SIMILARITY_THRESHOLD=0.85)
    await engine.SymfonicAgent._retract_memory(
        agent, {"label": "uses pytest and ruff!"}, {"reason": "wrong"}, MemoryLayer.SEMANTIC,
        types.SimpleNamespace(_graph=store), scope)
    out["retracted"] = [n.id for n in await store.query_nodes(scope, layer=MemoryLayer.SEMANTIC)] == []
    a = MemoryNode(id="a", layer=MemoryLayer.SEMANTIC, tenant_id="acme", label="The user prefers tabs")
    b = MemoryNode(id="b", layer=MemoryLayer.SEMANTIC, tenant_id="acme", label="The user prefers tabs!")
    out["pair_similarity"] = await merge._pair_similarity(a, b, None)
    alice = MemoryNode(id="e", layer=MemoryLayer.SEMANTIC, tenant_id="acme", label="Entity: Alice Smyth",
                       properties={"kind": "person", "content": "alice smyth", "mention_count": 5})
    node, created = await entity.resolve_or_create_entity_node(
        store, scope, "alice smith", "person", episodic_ids=[], extractor_name="x", max_confidence=0.5,
        existing_entity_nodes={("alice smyth", "person"): alice})
    out["entity"] = [node.id, created]
    p1 = MemoryNode(id="p1", layer=MemoryLayer.PROCEDURAL, tenant_id="acme",
                    label="Deploy the service with the blue green script")
    p2 = MemoryNode(id="p2", layer=MemoryLayer.PROCEDURAL, tenant_id="acme",
                    label="Deploy the service with the blue-green script")
    dups = await janitor.SemanticMerge().find_duplicates(scope, [p1], p2)
    out["janitor"] = [d.id for d in dups]
    return out

def origin(obj):
    if isinstance(obj, types.CodeType):
        return "memdedup" if obj.co_names.count("difflib") == 0 else "symfonic"
    obj = getattr(obj, "_replacement", obj)
    module = getattr(obj, "__module__", "") or ""
    return module.split(".")[0]

def origins():
    out = {}
    engine = sys.modules.get("symfonic.agent.engine")
    for module, name in PAIRS:
        mod = sys.modules[module]
        if name.startswith("SymfonicAgent."):
            out[f"{module}.{name}"] = origin(mod.SymfonicAgent.__dict__["_retract_memory"].__code__)
        else:
            out[f"{module}.{name}"] = origin(getattr(mod, name))
    return out
"""


@pytest.mark.parametrize("order", sampled(["after", "before", "mixed"], ["before"]))
def test_install_rebinds_every_name_whether_imported_before_or_after(order: str) -> None:
    got = run_child(
        CHILD_PRELUDE
        + f"""
PAIRS = {EXPECTED_PAIRS!r}
order = {order!r}
first = {{"before": MODULES, "mixed": [MODULES[0], MODULES[4]], "after": []}}[order]
for name in first:
    importlib.import_module(name)
originals = {{name: dict(vars(sys.modules[name])) for name in first}}
assert not [name for name in MODULES if name not in first and name in sys.modules], "imported too early"
listed = integ.install(instrument=instrument)
assert integ.install(instrument=instrument) == listed  # idempotent
for name in MODULES:
    importlib.import_module(name)
listed = integ.installed()
answers = asyncio.run(exercise())
swapped = origins()
counts = dict(calls)
integ.uninstall()
integ.uninstall()
restored = origins()
same = all(vars(sys.modules[name])[k] is v for name in first for k, v in originals[name].items())
unswapped = asyncio.run(exercise())
print(json.dumps({{"listed": listed, "answers": answers, "unswapped": unswapped, "swapped": swapped,
                  "restored": restored, "counts": counts, "same": same, "after": integ.installed()}}))
"""
    )
    assert [tuple(p) for p in got["listed"]] == EXPECTED_PAIRS
    # (With the pure-Python backend memdedup.difflib.SequenceMatcher is difflib's own class.)
    fast = memdedup.difflib.SequenceMatcher is not difflib.SequenceMatcher
    assert set(got["swapped"].values()) == ({"memdedup"} if fast else {"memdedup", "difflib"}), got["swapped"]
    assert set(got["restored"].values()) == {"symfonic", "difflib"}, got["restored"]
    assert got["same"] is True and got["after"] == []
    # The same answers with and without memdedup, and every swapped path was taken.
    assert got["answers"] == got["unswapped"]
    assert got["answers"]["find_canonical_node"] == "n1" and got["answers"]["retracted"] is True
    expected_keys = {f"{m}.{n}" for m, n in EXPECTED_PAIRS}
    expected_keys = {k.replace(".<locals>.SequenceMatcher", "") for k in expected_keys}
    # Not called by symfonic's code once the functions that read them are memdedup's: dedup's own
    # find_canonical_node and SequenceMatcher (the engine calls its alias), the janitor's SequenceMatcher
    # (only _similarity used it).
    expected_keys -= {
        "symfonic.memory.dedup.find_canonical_node",
        "symfonic.memory.dedup.SequenceMatcher",
        "symfonic.memory.janitor.SequenceMatcher",
    }
    assert expected_keys <= set(got["counts"]), sorted(expected_keys - set(got["counts"]))


@pytest.mark.slow
def test_instrument_sees_symfonic_originals_after_import() -> None:
    """Imported after install(), the engine's alias is handed symfonic's original function (not the
    dedup module's replacement) as ``original``, as when imported before."""
    got = run_child(
        """
import sys, json
import memdedup.integrations.symfonic as integ
seen = {}
def instrument(key, original, replacement):
    seen[key] = f"{original.__module__}.{getattr(original, '__qualname__', '')}"
    return replacement
integ.install(instrument=instrument)
import symfonic.agent.engine, symfonic.core.learning.phases_semantic_merge
integ.uninstall()
print(json.dumps(seen))
"""
    )
    assert got["symfonic.agent.engine.find_canonical_node"] == "symfonic.memory.dedup.find_canonical_node"
    assert got["symfonic.core.learning.phases_semantic_merge.normalise_label"] == (
        "symfonic.memory.dedup.normalise_label"
    )
    assert got["symfonic.agent.engine.SymfonicAgent._retract_memory"] == "difflib.SequenceMatcher"
    assert got["symfonic.memory.janitor._similarity"] == "symfonic.memory.janitor._similarity"


# --------------------------------------------------------------------------------------------------
# In this process (symfonic imported before): idempotence, restoration, the context manager, threads.
# --------------------------------------------------------------------------------------------------
def test_install_uninstall_idempotent_and_exact() -> None:
    before = bindings()
    code = RETRACT.__code__
    assert integ.install() == EXPECTED_PAIRS
    assert integ.install() == EXPECTED_PAIRS
    assert integ.installed() == EXPECTED_PAIRS
    assert sym.labels_match is md.labels_match
    assert sym.normalise_label is md.normalise_label is sym_merge.normalise_label
    assert sym.find_canonical_node is integ.find_canonical_node is sym_engine.find_canonical_node
    assert sym_janitor._similarity is integ.similarity
    for module in (sym, sym_merge, sym_entity, sym_janitor):
        assert module.SequenceMatcher is memdedup.difflib.SequenceMatcher
    assert RETRACT.__code__ is not code and "difflib" not in RETRACT.__code__.co_names
    assert difflib.SequenceMatcher is memdedup.difflib._STANDARD["SequenceMatcher"]  # not process-wide
    integ.uninstall()
    integ.uninstall()
    assert integ.installed() == []
    assert bindings() == before
    assert RETRACT.__code__ is code


def test_context_manager_nests_and_respects_install() -> None:
    before = bindings()
    with integ.enabled() as pairs:
        assert pairs == EXPECTED_PAIRS
        with integ.enabled():
            assert integ.installed() == EXPECTED_PAIRS
        assert integ.installed() == EXPECTED_PAIRS  # the outer block still holds it
    assert integ.installed() == [] and bindings() == before
    with integ.enabled():
        integ.install()  # an explicit install outlives the block
    assert integ.installed() == EXPECTED_PAIRS
    integ.uninstall()
    with integ.enabled():
        integ.uninstall()  # an explicit uninstall inside a block uninstalls
        assert integ.installed() == []
        with integ.enabled():
            assert integ.installed() == EXPECTED_PAIRS
    assert integ.installed() == [] and bindings() == before


def test_another_instrument_needs_uninstall_first() -> None:
    integ.install()
    with pytest.raises(integ.SymfonicIntegrationError, match="uninstall"):
        integ.install(instrument=lambda key, original, replacement: replacement)
    assert isinstance(integ.SymfonicIntegrationError("x"), MemdedupError)


@pytest.mark.slow
def test_thread_safety() -> None:
    """Threads install, uninstall, enter blocks and read at once: every read sees all or nothing, every
    janitor similarity is difflib's, and the end state is symfonic's exactly."""
    before = bindings()
    expected = difflib.SequenceMatcher(None, "uses pytest and ruff", "uses pytest, ruff").ratio()
    errors: list[BaseException] = []
    seen: set[int] = set()
    barrier = threading.Barrier(6)

    def worker(seed: int) -> None:
        rnd = random.Random(seed)
        try:
            barrier.wait()
            for _ in range(150):
                op = rnd.random()
                if op < 0.3:
                    integ.install()
                elif op < 0.55:
                    integ.uninstall()
                elif op < 0.75:
                    with integ.enabled():  # another thread's uninstall() may end it early
                        seen.add(len(integ.installed()))
                else:
                    seen.add(len(integ.installed()))
                assert sym_janitor._similarity("Uses pytest and ruff", "uses pytest, RUFF") == expected
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert seen <= {0, len(EXPECTED_PAIRS)}
    integ.uninstall()
    assert bindings() == before


# --------------------------------------------------------------------------------------------------
# Refusals: a version or a shape memdedup does not know. Nothing is rebound.
# --------------------------------------------------------------------------------------------------
def test_refuses_an_unknown_version(monkeypatch: pytest.MonkeyPatch) -> None:
    before = bindings()
    monkeypatch.setattr(patching, "_symfonic_version", lambda: "9.13.0")
    with pytest.raises(integ.SymfonicVersionError, match=r"9\.13\.0.*supports 9\.12\.0.*nothing was rebound"):
        integ.install()
    with pytest.raises(MemdedupError):
        with integ.enabled():
            pass
    assert integ.installed() == [] and bindings() == before


def test_refuses_when_symfonic_is_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(patching, "DISTRIBUTION", "symfonic-core-not-installed-here")
    with pytest.raises(integ.SymfonicVersionError, match="is not installed"):
        integ.install()


def _other_labels_match(stored: str, incoming: str, *, threshold: float) -> bool:
    return stored == incoming


def _other_similarity(a: str, b: str) -> float:
    return 0.0


class _OtherMatcher(difflib.SequenceMatcher):
    pass


@pytest.mark.parametrize(
    ("module", "name", "value", "message"),
    [
        (sym, "labels_match", _other_labels_match, "labels_match is test_integration_symfonic._other"),
        (sym, "labels_match", lambda stored, incoming, threshold: True, "labels_match is"),
        (sym_janitor, "_similarity", _other_similarity, "_similarity is test_integration_symfonic._other"),
        (sym_janitor, "SequenceMatcher", _OtherMatcher, "SequenceMatcher is"),
        (sym_engine, "find_canonical_node", _other_labels_match, "engine.find_canonical_node is not"),
        (sym_merge, "normalise_label", str.lower, "phases_semantic_merge.normalise_label is not"),
    ],
)
def test_refuses_an_unknown_shape(
    monkeypatch: pytest.MonkeyPatch, module: Any, name: str, value: Any, message: str
) -> None:
    monkeypatch.setattr(module, name, value)
    before = bindings()
    with pytest.raises(integ.SymfonicVersionError, match=message):
        integ.install()
    assert integ.installed() == [] and bindings() == before


def test_refuses_a_changed_source_or_signature(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same function object with another body or signature than 9.12.0's: refused."""
    targets = integ._TARGETS_BY_VERSION["9.12.0"]
    changed = tuple(
        integ._Target(t.module, t.name, t.kind, t.signature, "0" * 64, t.alias_of)
        if t.name == "SymfonicAgent._retract_memory"
        else t
        for t in targets
    )
    monkeypatch.setitem(integ._TARGETS_BY_VERSION, "9.12.0", changed)
    with pytest.raises(
        integ.SymfonicVersionError, match=r"_retract_memory's source is not symfonic-core 9\.12\.0's"
    ):
        integ.install()
    changed = tuple(
        integ._Target(t.module, t.name, t.kind, "(stored, incoming)", t.source_sha256, t.alias_of)
        if t.name == "labels_match"
        else t
        for t in targets
    )
    monkeypatch.setitem(integ._TARGETS_BY_VERSION, "9.12.0", changed)
    with pytest.raises(integ.SymfonicVersionError, match="labels_match has the signature"):
        integ.install()
    assert integ.installed() == []


def test_local_import_shape_is_checked() -> None:
    """The engine method's import is redirected only when ``difflib`` is used by that one import."""

    def one() -> Any:
        from difflib import SequenceMatcher

        return SequenceMatcher

    def two() -> Any:
        import difflib
        from difflib import SequenceMatcher

        return SequenceMatcher, difflib

    def attribute(x: Any) -> Any:
        from difflib import SequenceMatcher

        return SequenceMatcher, x.difflib

    def star() -> Any:
        from difflib import SequenceMatcher, get_close_matches

        return SequenceMatcher, get_close_matches

    assert integ._import_site(one.__code__) >= 0
    assert integ._import_site(RETRACT.__code__) >= 0
    for func in (two, attribute, star):
        assert integ._import_site(func.__code__) == -1, func.__name__


def test_refuses_in_a_child_process_for_an_unknown_shape_not_yet_imported(tmp_path: Path) -> None:
    """A module not imported yet is checked on disk, in the installed distribution's file."""
    got = run_child(
        """
import json, sys
import memdedup.integrations.symfonic as integ
t = integ._TARGETS_BY_VERSION["9.12.0"]
integ._TARGETS_BY_VERSION["9.12.0"] = tuple(
    integ._Target(x.module, x.name, x.kind, x.signature, "f" * 64, x.alias_of)
    if x.name == "_similarity" else x
    for x in t)
try:
    integ.install()
    out = "installed"
except integ.SymfonicVersionError as exc:
    out = str(exc)
print(json.dumps([out, "symfonic.memory.janitor" in sys.modules, integ.installed()]))
"""
    )
    assert "_similarity's source is not symfonic-core 9.12.0's" in got[0]
    assert got[1] is False and got[2] == []


@pytest.mark.slow
def test_a_module_of_another_shape_imported_later_is_left_alone() -> None:
    """After install(), a module whose live shape differs is not rebound: a warning, not an error."""
    got = run_child(
        """
import json, warnings
import memdedup.integrations.symfonic as integ
import memdedup.integrations._symfonic_patching as patching
integ.install()
real = patching._check_live
patching._check_live = lambda target, module: (
    "odd" if target.module == "symfonic.memory.janitor" else real(target, module))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import symfonic.memory.janitor as janitor
print(json.dumps([janitor._similarity.__module__, [str(w.message) for w in caught
                  if issubclass(w.category, integ.SymfonicIntegrationWarning)]]))
"""
    )
    assert got[0] == "symfonic.memory.janitor"
    assert got[1] and "left symfonic.memory.janitor as it is: odd" in got[1][0]


# --------------------------------------------------------------------------------------------------
# Exact answers: each replacement against symfonic's untouched original.
# --------------------------------------------------------------------------------------------------
def outcome(call: Any) -> tuple[str, Any]:
    try:
        return ("ok", call())
    except Exception as exc:
        return ("raise", exc)


def same_outcome(ours: tuple[str, Any], theirs: tuple[str, Any]) -> bool:
    """The same value (a float bit for bit, of the same type), or an exception of the reference's type."""
    if ours[0] != theirs[0]:
        return False
    if ours[0] == "raise":
        return isinstance(ours[1], type(theirs[1]))
    a, b = ours[1], theirs[1]
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a.hex() == b.hex() or (math.isnan(a) and math.isnan(b))
    return bool(a == b)


class Shouty(str):
    """A ``str`` subclass whose ``lower()`` upper-cases."""

    def lower(self) -> str:  # type: ignore[override]
        return str.upper(self)


class LowerToSub(str):
    def lower(self) -> str:  # type: ignore[override]
        return LowerToSub(str.lower(self) + "!")


class LowerToList(str):
    def lower(self) -> Any:  # type: ignore[override]
        return list(str.lower(self))


class Labelled:
    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


class BadStr:
    def __str__(self) -> str:
        raise RuntimeError("no text")


texts = st.one_of(
    st.text(alphabet=ANY_CHAR, max_size=40),
    st.text(alphabet=LABEL_CHAR, max_size=60),
    st.text(alphabet=st.sampled_from("abc ABC.!" + PY_ONLY_WHITESPACE), max_size=30),
)
odd_labels = st.one_of(
    texts,
    texts.map(Shouty),
    texts.map(LowerToSub),
    texts.map(Labelled),
    st.sampled_from([None, 0, 1, 2.5, True, b"bytes", BadStr(), ["x"], ""]),
)
thresholds = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 1, 0.85, 0.6, True, False, Fraction(17, 20), Decimal("0.85"), None, "0.85"]),
)


@settings(max_examples=n_examples(400))
@given(pair=restatement_pairs() | st.tuples(odd_labels, odd_labels), threshold=thresholds)
@example(pair=("Uses pytest and ruff.", "uses pytest and ruff for Python projects"), threshold=0.85)
@example(pair=("", "x"), threshold="not a number")
def test_labels_match_and_normalise_label_are_symfonic_s(pair: tuple[Any, Any], threshold: Any) -> None:
    stored, incoming = pair
    for a, b in ((stored, incoming), (incoming, stored)):
        ours = outcome(lambda a=a, b=b: md.labels_match(a, b, threshold=threshold))
        theirs = outcome(lambda a=a, b=b: sym.labels_match(a, b, threshold=threshold))
        assert same_outcome(ours, theirs), (a, b, threshold, ours, theirs)
    for label in (stored, incoming):
        ours = outcome(lambda label=label: md.normalise_label(label))
        assert same_outcome(ours, outcome(lambda label=label: sym.normalise_label(label))), (label, ours)


janitor_texts = st.one_of(
    texts,
    texts.map(Shouty),
    texts.map(LowerToSub),
    texts.map(LowerToList),
    st.text(alphabet=ANY_CHAR, max_size=40).map(lambda s: s.encode("utf-8", "surrogatepass")),
    st.sampled_from([None, 3, "", "İ", "ΣΑΣ"]),
)


@settings(max_examples=n_examples(400))
@given(a=janitor_texts, b=janitor_texts)
@example(a="The user prefers Dark Mode", b="the user prefers dark mode!")
@example(a="x" * 250 + "Y", b="y" + "x" * 260)  # b >= 200: difflib's popular-element rule
def test_janitor_similarity_is_symfonic_s(a: Any, b: Any) -> None:
    """symfonic's ``_similarity`` lower-cases with the objects' own ``lower()``; so does memdedup's."""
    assert sym_janitor._similarity.__module__ == "symfonic.memory.janitor"
    ours, theirs = outcome(lambda: integ.similarity(a, b)), outcome(lambda: sym_janitor._similarity(a, b))
    assert same_outcome(ours, theirs), (a, b, ours, theirs)


def test_janitor_similarity_on_real_labels() -> None:
    rng = random.Random(3)
    words = "user prefers dark mode deploy service blue green script The Uses pytest ruff".split()
    for _ in range(2000):
        a = " ".join(rng.choice(words) for _ in range(rng.randint(1, 12)))
        b = " ".join(rng.choice(words) for _ in range(rng.randint(1, 12)))
        assert integ.similarity(a, b).hex() == sym_janitor._similarity(a, b).hex()


class _Graph:
    """A graph answering ``query_nodes`` with fixed candidates (or raising)."""

    def __init__(self, nodes: Any, error: BaseException | None = None) -> None:
        self.nodes = nodes
        self.error = error

    async def query_nodes(self, scope: Any, *, layer: Any, label_prefix: str) -> Any:
        if self.error is not None:
            raise self.error
        return self.nodes


class _Node:
    def __init__(self, node_id: Any, label: Any, scope_path: Any, tenant_id: Any = "acme") -> None:
        self.id = node_id
        self.label = label
        self.properties = None if scope_path is None else {"scope_path": scope_path}
        self.tenant_id = tenant_id


@settings(max_examples=n_examples(200))
@given(
    labels=st.lists(odd_labels, max_size=6),
    owners=st.lists(st.sampled_from([SCOPE.scope_path, "tenant\x1facme", None, 7]), min_size=6, max_size=6),
    label=odd_labels.filter(lambda x: isinstance(x, str)),
    requested=st.sampled_from([None, "", "n1", "n3"]),
    threshold=st.sampled_from([0.85, 0.5, 1.0, 0]),
)
def test_installed_find_canonical_node_is_symfonic_s(
    labels: list[Any], owners: list[Any], label: str, requested: Any, threshold: Any
) -> None:
    nodes = [_Node(f"n{k}", lab, owners[k]) for k, lab in enumerate(labels)]
    graph = _Graph(nodes)
    kwargs = {
        "layer": MemoryLayer.SEMANTIC,
        "label": label,
        "threshold": threshold,
        "requested_id": requested,
    }
    ours = asyncio.run(integ.find_canonical_node(graph, SCOPE, **kwargs))
    theirs = asyncio.run(sym.find_canonical_node(graph, SCOPE, **kwargs))
    assert ours is theirs


def test_lookup_failure_logs_on_the_logger_adopters_filter_on(caplog: pytest.LogCaptureFixture) -> None:
    graph = _Graph([], error=RuntimeError("backend down"))
    caplog.set_level(logging.DEBUG)
    kwargs = {"layer": MemoryLayer.SEMANTIC, "label": "Uses pytest and ruff"}
    assert asyncio.run(integ.find_canonical_node(graph, SCOPE, **kwargs)) is None
    assert asyncio.run(sym.find_canonical_node(graph, SCOPE, **kwargs)) is None
    assert asyncio.run(md.find_canonical_node(graph, SCOPE, **kwargs)) is None
    records = [
        (r.name, r.levelno, r.getMessage(), r.exc_info is not None)
        for r in caplog.records
        if r.name in ("symfonic.memory.dedup", "memdedup.dedup")
    ]
    line = "dedup: lookup failed, skipping dedup"
    assert records == [
        ("symfonic.memory.dedup", logging.DEBUG, line, True),  # installed into symfonic: symfonic's logger
        ("symfonic.memory.dedup", logging.DEBUG, line, True),  # symfonic's own
        ("memdedup.dedup", logging.DEBUG, line, True),  # memdedup's own function: memdedup's logger
    ]


# --------------------------------------------------------------------------------------------------
# The drop-in surface of memdedup.dedup itself.
# --------------------------------------------------------------------------------------------------
def test_dedup_module_exposes_symfonic_s_names() -> None:
    theirs = {n for n in dir(sym) if not n.startswith("__")}
    assert theirs - set(dir(md)) == set()
    for name in ("labels_match", "normalise_label", "materialise_scope_path", "stored_scope_path"):
        ours_sig = inspect.signature(getattr(md, name))
        their_sig = inspect.signature(getattr(sym, name))
        assert list(ours_sig.parameters) == list(their_sig.parameters), name
        for p, q in zip(ours_sig.parameters.values(), their_sig.parameters.values(), strict=True):
            assert (p.kind, p.default) == (q.kind, q.default), (name, p)
    assert str(inspect.signature(md.labels_match)) == str(inspect.signature(sym.labels_match))
    assert str(inspect.signature(integ.find_canonical_node)) == str(
        inspect.signature(sym.find_canonical_node)
    )
    assert md.SequenceMatcher is memdedup.difflib.SequenceMatcher
    assert md.materialise_scope_path(SCOPE) == sym.materialise_scope_path(SCOPE) == SCOPE.scope_path
    assert md.logger.name == "memdedup.dedup"


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("a", "a"), {}),
        (("a", "a", 0.85), {}),
        (("a", "a"), {"threshold": 0.85, "min_chars": 4}),
        (("a", "a"), {"threshold": 0.85, "guards": "value"}),
        (("a",), {"threshold": 0.85}),
    ],
)
def test_labels_match_signature_is_symfonic_s(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """``threshold`` keyword-only and required; no memdedup extensions: TypeError exactly where symfonic's."""
    with pytest.raises(TypeError):
        sym.labels_match(*args, **kwargs)
    with pytest.raises(TypeError):
        md.labels_match(*args, **kwargs)


def test_extended_labels_match_keeps_defaults_and_guards() -> None:
    assert memdedup.labels_match is md.labels_match_ext
    assert md.labels_match_ext("Uses pytest and ruff.", "uses pytest and ruff for Python projects")
    assert md.labels_match_ext("abcdefgh", "abcdefgh xyz", min_chars=4)
    assert not md.labels_match_ext("Ticket ASR1603 is blocked", "Ticket ASR1605 is blocked", guards="value")


# --------------------------------------------------------------------------------------------------
# Processes not started in code: the startup hook and the launcher.
# --------------------------------------------------------------------------------------------------
PROBE = (
    "import json, symfonic.memory.janitor as j, symfonic.memory.dedup as d; "
    "print(json.dumps([d.labels_match.__module__, j._similarity.__module__]))"
)


@pytest.mark.slow
def test_environment_variable_installs_at_startup(tmp_path: Path) -> None:
    shadowed = tmp_path / "sitecustomize.py"
    shadowed.write_text("import os\nos.environ['SHADOWED_SITECUSTOMIZE_RAN'] = '1'\n")
    probe = PROBE.replace(
        "print(json.dumps([", "import os; print(json.dumps([os.environ.get('SHADOWED_SITECUSTOMIZE_RAN'), "
    )
    path = os.pathsep.join([integ.BOOTSTRAP_DIR, str(tmp_path), os.environ.get("PYTHONPATH", "")])
    on = run_child(probe, env={"PYTHONPATH": path, integ.ENV_VAR: "1"})
    assert on == ["1", "memdedup.dedup", "memdedup.integrations.symfonic"]
    off = run_child(probe, env={"PYTHONPATH": path, integ.ENV_VAR: "0"})
    assert off == ["1", "symfonic.memory.dedup", "symfonic.memory.janitor"]
    # memdedup cannot even be imported: the process starts anyway, on symfonic's functions, and the
    # shadowed sitecustomize still runs.
    env = {**os.environ, "PYTHONPATH": path, integ.ENV_VAR: "1", "MEMDEDUP_IMPLEMENTATION": "bogus"}
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == ["1", "symfonic.memory.dedup", "symfonic.memory.janitor"]
    assert "MEMDEDUP_INSTALL_SYMFONIC: memdedup not installed: BackendUnavailableError" in proc.stderr


def test_launcher_runs_a_command_installed() -> None:
    module = [sys.executable, "-m", "memdedup.integrations.symfonic"]
    env = {k: v for k, v in os.environ.items() if k != integ.ENV_VAR}
    proc = subprocess.run(
        [*module, "run", "--", sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == ["memdedup.dedup", "memdedup.integrations.symfonic"]
    proc = subprocess.run([*module, "pythonpath"], capture_output=True, text=True, timeout=600)
    assert (Path(proc.stdout.strip()) / "sitecustomize.py").is_file()
    proc = subprocess.run([*module, "check"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "rebound symfonic.memory.dedup.labels_match" not in proc.stdout  # not imported there yet
    assert "pending symfonic.memory.dedup (rebound when imported)" in proc.stdout
    proc = subprocess.run([*module, "run", "--", "/nonexistent/command"], capture_output=True, text=True)
    assert proc.returncode == 2 and "cannot run" in proc.stderr


def test_install_from_environment_warns_on_a_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(patching, "_symfonic_version", lambda: "10.0.0")
    with pytest.warns(integ.SymfonicIntegrationWarning, match="10.0.0"):
        assert integ.install_from_environment({integ.ENV_VAR: "1"}) is False
    assert integ.install_from_environment({}) is False
    assert integ.installed() == []


# --------------------------------------------------------------------------------------------------
# With the process-wide difflib replacement too: no RecursionError anywhere (child process).
# --------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_process_wide_difflib_and_symfonic_together() -> None:
    got = run_child(
        """
import collections, difflib, json
import symfonic.memory.janitor as janitor, symfonic.memory.dedup as dedup
class T(str):
    pass
nan = float("nan")
cases = [(T("Uses Pytest"), "uses pytest"), ("ab", collections.deque("ab")), ([1, nan], [1, nan]),
         ([1], [[1]]), (T("x") * 300, "x" * 250)]
def answers():
    out = []
    for a, b in cases:
        try:
            out.append(repr(difflib.SequenceMatcher(None, a, b).ratio()))
        except Exception as exc:
            out.append(type(exc).__name__)
        try:
            out.append(repr(janitor._similarity(a, b)))
        except Exception as exc:
            out.append(type(exc).__name__)
    out.append(dedup.labels_match(T("Uses pytest and ruff."), "uses pytest and ruff", threshold=0.85))
    return out
expected = answers()
import memdedup.difflib, memdedup.integrations.symfonic as integ
memdedup.difflib.install()
integ.install()
got = answers()
ours = difflib.SequenceMatcher is memdedup.difflib.SequenceMatcher
print(json.dumps([got == expected, got, expected, ours]))
"""
    )
    assert got[0] is True, got
    assert got[3] is True


# --------------------------------------------------------------------------------------------------
# The shadow plugin (what scripts/symfonic-suite.py runs symfonic's suite with) sees a wrong answer.
# --------------------------------------------------------------------------------------------------
SHADOWED_TESTS = """
import asyncio, types
import symfonic.agent.engine as engine
import symfonic.memory.dedup as dedup
import symfonic.memory.janitor as janitor
from symfonic.memory.types import MemoryLayer, TenantScope

SCOPE = TenantScope.root("tenant", "acme")

class Graph:
    async def query_nodes(self, scope, *, layer, label_prefix):
        node = types.SimpleNamespace(id="n1", label="Uses pytest and ruff", properties=None, tenant_id="acme")
        return iter([node])  # a one-shot iterator: the shadow must replay it, not query again

def test_dedup():
    assert dedup.labels_match("Uses pytest and ruff", "uses pytest and ruff.", threshold=0.85)
    assert dedup.normalise_label("A  b.") == "a b"

def test_lookup_and_janitor():
    lookup = engine.find_canonical_node(Graph(), SCOPE, layer=MemoryLayer.SEMANTIC, label="Uses pytest")
    node = asyncio.run(lookup)
    assert node is None or node.id == "n1"
    assert janitor._similarity("AB", "ab") == 1.0

def test_nothing():
    pass
"""

BREAK_LABELS_MATCH = """
import memdedup.integrations._symfonic_patching as patching
real = patching._replacement
def wrong(target):
    replacement = real(target)
    if target.name == "labels_match":
        return lambda stored, incoming, *, threshold: not replacement(stored, incoming, threshold=threshold)
    return replacement
patching._replacement = wrong
"""


@pytest.mark.slow
@pytest.mark.parametrize("broken", [False, True])
def test_shadow_plugin_counts_calls_and_catches_a_wrong_answer(tmp_path: Path, broken: bool) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_shadowed.py").write_text(SHADOWED_TESTS)
    if broken:
        (tmp_path / "conftest.py").write_text(BREAK_LABELS_MATCH)
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "memdedup.integrations.symfonic_shadow",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "MEMDEDUP_SHADOW_REPORT": str(report)},
    )
    data = json.loads(report.read_text())
    assert data["calls"]["symfonic.agent.engine.find_canonical_node"] == 1
    assert data["calls"]["symfonic.memory.janitor._similarity"] == 1
    assert data["tests_reaching_memdedup"] == [
        "test_shadowed.py::test_dedup",
        "test_shadowed.py::test_lookup_and_janitor",
    ]
    if broken:
        assert proc.returncode == 1, proc.stdout
        assert [m["key"] for m in data["mismatches"]] == ["symfonic.memory.dedup.labels_match"]
        assert "MISMATCH symfonic.memory.dedup.labels_match" in proc.stdout
    else:
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert data["mismatches"] == [] and data["total_calls"] == 4
        assert "memdedup shadow: 4 calls into memdedup from 2 tests, 0 answers differing" in proc.stdout
