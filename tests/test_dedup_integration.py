"""The drop-in ``memdedup.dedup`` against the real ``symfonic-core`` 9.12.0, over symfonic's own store.

A ``GraphMemoryStore`` over an ``InMemoryGraphBackend`` receives a stream of writes at several levels of a
``TenantScope`` hierarchy (tenant -> agent -> session, plus a sibling hierarchy and another tenant):
restatements of every kind, ancestor-owned rows, legacy rows without ``scope_path``, retracted rows and
``requested_id`` hits. At every write both ``find_canonical_node`` functions are asked the same question on
the same graph and must return the same node; then the write is performed as symfonic's writers do, so the
store evolves.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import logging
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from memdedup import _reference
from memdedup import dedup as md

sym = pytest.importorskip("symfonic.memory.dedup")
sym_backend = pytest.importorskip("symfonic.memory.backends.in_memory")
sym_store = pytest.importorskip("symfonic.memory.graph.store")
sym_node = pytest.importorskip("symfonic.memory.models.node")
sym_types = pytest.importorskip("symfonic.memory.types")
sym_retraction = pytest.importorskip("symfonic.memory.retraction")
sym_isolation = pytest.importorskip("symfonic.memory.scope_isolation")

TenantScope = sym_types.TenantScope
MemoryLayer = sym_types.MemoryLayer
MemoryNode = sym_node.MemoryNode
SCOPE_PATH_KEY = sym_isolation.SCOPE_PATH_KEY
RETRACTED_KEY = sym_retraction.RETRACTED_KEY

ROOT = TenantScope.root("tenant", "acme")
AGENT = ROOT.child("agent", "planner")
SESSION_1 = AGENT.child("session", "s-1")
SESSION_2 = AGENT.child("session", "s-2")
CODER_SESSION = ROOT.child("agent", "coder").child("session", "s-9")
# Same tenant id, another hierarchy: legacy rows ("tenant\x1facme") are not on its ancestor chain.
ORG_TEAM = TenantScope.root("org", "acme").child("team", "payments")
OTHER_TENANT = TenantScope.root("tenant", "globex").child("agent", "planner")
SCOPES = [ROOT, AGENT, SESSION_1, SESSION_2, CODER_SESSION, ORG_TEAM, OTHER_TENANT]
SCOPE_WEIGHTS = [2, 3, 6, 4, 3, 2, 1]
LAYERS = [MemoryLayer.SEMANTIC, MemoryLayer.PROCEDURAL, MemoryLayer.EPISODIC]
LAYER_WEIGHTS = [6, 3, 1]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def node_key(node: Any) -> tuple[str, int] | None:
    """The node's id and identity (the very same object must come back); None for no node."""
    if node is None:
        return None
    try:
        node_id = str(node.id)
    except Exception:
        node_id = "<unreadable id>"
    return (node_id, id(node))


def test_symfonic_version_and_constants() -> None:
    assert importlib.metadata.version("symfonic-core") == "9.12.0"
    assert md.DEDUP_SIMILARITY_THRESHOLD == sym.DEDUP_SIMILARITY_THRESHOLD == 0.85
    assert md.DEDUP_PREFIX_LEN == sym.DEDUP_PREFIX_LEN == 20
    assert md.DEDUP_QUERY_LIMIT == sym.DEDUP_QUERY_LIMIT == 20
    assert md.DEDUP_SUBSUME_MIN_CHARS == sym.DEDUP_SUBSUME_MIN_CHARS == 16
    for name in ("find_canonical_node", "labels_match", "normalise_label"):
        assert callable(getattr(md, name))


def _outcome(func: Any, *args: Any) -> tuple[str, Any]:
    try:
        return ("ok", func(*args))
    except Exception:  # inside find_canonical_node any exception aborts the lookup: only "raised" matters
        return ("raised", None)


@pytest.mark.parametrize(
    ("properties", "tenant_id"),
    [
        ({SCOPE_PATH_KEY: SESSION_1.scope_path}, "acme"),
        ({}, "acme"),
        (None, "acme"),
        ([], "acme"),
        ({SCOPE_PATH_KEY: ""}, "acme"),
        ({SCOPE_PATH_KEY: 7}, "acme"),
        ({SCOPE_PATH_KEY: None}, "globex"),
        ({SCOPE_PATH_KEY: SESSION_1.scope_path}, ""),
        # symfonic builds the legacy path through a validated ScopeLevel: these tenant ids raise there.
        ({"other": 1}, ""),
        ({}, "   "),
        ({}, None),
        ({}, 5),
        ({}, "a\x1fb"),
        ([1, 2], "acme"),
        ("scope", "acme"),
    ],
)
def test_stored_scope_path_matches_symfonic(properties: Any, tenant_id: Any) -> None:
    expected = _outcome(sym_isolation.stored_scope_path, properties, tenant_id)
    assert _outcome(md.stored_scope_path, properties, tenant_id) == expected


# ==================================================================================================
# The label material of the stream
# ==================================================================================================

FACTS = [
    "Uses pytest and ruff",
    "Uses pytest and ruff for Python projects with strict linting",
    "The user prefers dark mode in all editors",
    "The user prefers tabs over spaces",
    "The user lives in Berlin",
    "The user works at Acme Corp on the payments team",
    "The user's favourite language is Rust",
    "Deploys to Kubernetes every Friday afternoon",
    "Café in München serves the best Straße coffee",
    "ΟΔΟΣ ΑΘΗΝΑΣ is the office street",
    "İstanbul office opens on Mondays",
    "Prefers résumé over CV and naïve Bayes over SVMs",
    "Short fact",
    "tiny",
    "Meeting notes: discuss Q3 roadmap and hiring plan",
    "Project codename is Falcon Heavy Rocket",
    "Project codename is Eagle",
]
FILLER_TAILS = [
    "Borealis",
    "Cobalt Tundra Sixteen",
    "Delta Quartz",
    "Ember Lattice Ninety",
    "Fjord",
    "Gravel Ocelot",
    "Harbor Kestrel Umbra",
    "Iris Nocturne",
    "Juniper Volt",
    "Krypton Wharf Seven",
    "Lumen",
    "Marble Zephyr",
    "Nimbus Quiver",
    "Opal Trellis Forty",
    "Pylon",
    "Quasar Meadow",
    "Rivet Saffron",
    "Sable Comet Eleven",
    "Talon",
    "Umber Vortex",
    "Velvet Glacier",
    "Willow Prism Two",
    "Xenon",
    "Yarrow Beacon",
]
FACTS += [f"Project codename is {tail}" for tail in FILLER_TAILS]  # > 20 rows behind one 20-char prefix
EXTRA = ["for all Python services", "with strict type checks", "since 2019", "on weekdays", "at the HQ"]
SYNONYMS = {"prefers": "likes", "lives": "resides", "works": "is employed", "every": "each", "best": "finest"}


def restate(rnd: random.Random, label: str) -> str:
    """One restatement of ``label``: the classes the seed's restatement corpus pins, and a few more."""
    words = label.split()
    kind = rnd.choice(
        ["tail", "extra", "terser", "punct", "case", "space", "unicode", "opening", "same", "synonym"]
    )
    if kind == "tail" and len(words) > 2:
        return " ".join([*words[:-1], rnd.choice(["today", "daily", "Berlin", "mostly", words[-1] + "s"])])
    if kind == "extra":
        return label.rstrip(".!") + " " + rnd.choice(EXTRA)
    if kind == "terser" and len(words) > 3:
        return " ".join(words[: rnd.randint(2, len(words) - 1)])
    if kind == "punct":
        return label + rnd.choice([".", "!", "...", " .", ";", "?!", ","])
    if kind == "case":
        return rnd.choice([label.upper(), label.lower(), label.title(), label.swapcase()])
    if kind == "space":
        sep = rnd.choice(["  ", "\t", " \u3000", "\u00a0", "\x1c"])
        return rnd.choice(["", " ", "\n"]) + sep.join(words) + rnd.choice(["", " ", "\t"])
    if kind == "unicode":
        table = str.maketrans({"a": "á", "o": "ö", "u": "ü", "s": "ß", "i": "İ", "e": "Σ"})
        return "".join(c.translate(table) if rnd.random() < 0.15 else c for c in label)
    if kind == "opening":
        return "Note: " + label
    if kind == "synonym":
        return " ".join(SYNONYMS.get(w, w) for w in words)
    return label


# ==================================================================================================
# The stream
# ==================================================================================================


@dataclass
class StreamResult:
    labels: set[str] = field(default_factory=set)
    stats: Counter[str] = field(default_factory=Counter)


async def _both(store: Any, scope: Any, **kwargs: Any) -> Any:
    ours = await md.find_canonical_node(store, scope, **kwargs)
    theirs = await sym.find_canonical_node(store, scope, **kwargs)
    reference = await _reference.find_canonical_node(store, scope, **kwargs)
    assert node_key(ours) == node_key(theirs), (scope.scope_path, kwargs, ours, theirs)
    assert node_key(reference) == node_key(theirs)
    return theirs


def _owned(node: Any, scope: Any) -> bool:
    return sym_isolation.stored_scope_path(node.properties, node.tenant_id) == scope.scope_path


async def _stream(seed: int, steps: int) -> StreamResult:
    rnd = random.Random(seed)
    backend = sym_backend.InMemoryGraphBackend()
    store = sym_store.GraphMemoryStore(backend)
    result = StreamResult()
    stats = result.stats
    history: list[tuple[Any, Any, str]] = []  # (scope, layer, node id) of every write

    for step in range(steps):
        roll = rnd.random()
        if roll < 0.05 and history:
            scope, _layer, node_id = rnd.choice(history)
            node = await backend.get_node(scope, node_id)
            if node is not None:
                await store.update_node(scope, node_id, {RETRACTED_KEY: True})
                stats["retracted"] += 1
            continue

        scope = rnd.choices(SCOPES, SCOPE_WEIGHTS)[0]
        layer = rnd.choices(LAYERS, LAYER_WEIGHTS)[0]
        requested_id = None
        if history and rnd.random() < 0.7:
            target_scope, _target_layer, target_id = rnd.choice(history)
            previous = await backend.get_node(target_scope, target_id)
            base = previous.label if previous is not None else rnd.choice(FACTS)
            label = restate(rnd, base)
            if rnd.random() < 0.2:  # the extractor re-emits the id it was shown
                requested_id = target_id
        else:
            label = restate(rnd, rnd.choice(FACTS)) if rnd.random() < 0.3 else rnd.choice(FACTS)
        id_roll = rnd.random()
        if id_roll < 0.05 and history:
            requested_id = rnd.choice(history)[2]
        elif id_roll < 0.1:
            requested_id = f"req-{step}"
        kwargs: dict[str, Any] = {"layer": layer, "label": label, "requested_id": requested_id}
        if rnd.random() < 0.25:
            kwargs["threshold"] = rnd.choice([0.6, 0.7, 0.8, 0.9, 0.95, 1.0])
        result.labels.add(label)

        # Coverage bookkeeping (what the step exercises), from symfonic's own store and rules.
        prefix = label.strip()[:20]
        visible = await store.query_nodes(scope, layer=layer, label_prefix=prefix, include_retracted=True)
        threshold = kwargs.get("threshold", 0.85)
        for node in visible:
            matches = sym.labels_match(node.label, label, threshold=threshold)
            if matches and sym_retraction.is_retracted(node.properties):
                stats["matching-retracted-row"] += 1
            elif matches and not _owned(node, scope):
                stats["matching-ancestor-row"] += 1
        if len([n for n in visible if not sym_retraction.is_retracted(n.properties)]) > 20:
            stats["over-query-limit"] += 1

        canonical = await _both(store, scope, **kwargs)

        if canonical is None:
            stats["new"] += 1
            node_id = requested_id or f"n-{seed}-{step}"
        else:
            stats["collapsed"] += 1
            if requested_id is not None and str(canonical.id) == requested_id:
                stats["requested-id-hit"] += 1
            if SCOPE_PATH_KEY not in canonical.properties:
                stats["collapsed-into-legacy"] += 1
            node_id = str(canonical.id)
            new_norm, can_norm = md.normalise_label(label), md.normalise_label(canonical.label)
            if new_norm != can_norm and new_norm in can_norm:
                stats["kept-richer"] += (
                    1  # CommitToMemoryTool's rule: a terser restatement does not overwrite
                )
                continue
        if not label.strip():
            continue
        legacy = scope.tenant_id == "acme" and rnd.random() < 0.08
        node = MemoryNode(id=node_id, layer=layer, tenant_id=scope.tenant_id, label=label)
        await store.add_node(scope, node)
        if legacy:
            node.properties.pop(SCOPE_PATH_KEY, None)  # a pre-v8.0 row: reads as "tenant\x1facme"
            stats["legacy-written"] += 1
        history.append((scope, layer, node_id))
        result.labels.add(label)
    return result


STREAM_SEEDS = [0, 1, 2, 3]


@pytest.fixture(scope="module")
def streams() -> dict[int, StreamResult]:
    return {seed: run(_stream(seed, steps=400)) for seed in STREAM_SEEDS}


@pytest.mark.parametrize("seed", STREAM_SEEDS)
def test_stream_find_canonical_node_agrees(streams: dict[int, StreamResult], seed: int) -> None:
    stats = streams[seed].stats
    # Every interesting path was taken, so the agreement asserted at each step means something.
    for key in (
        "new",
        "collapsed",
        "requested-id-hit",
        "matching-ancestor-row",
        "retracted",
        "legacy-written",
    ):
        assert stats[key] > 0, (key, stats)


def test_stream_covers_rare_paths(streams: dict[int, StreamResult]) -> None:
    total: Counter[str] = Counter()
    for result in streams.values():
        total.update(result.stats)
    for key in ("matching-retracted-row", "over-query-limit", "collapsed-into-legacy", "kept-richer"):
        assert total[key] > 0, (key, total)


def _label_sample(streams: dict[int, StreamResult], limit: int = 120) -> list[str]:
    labels = sorted(set().union(*(r.labels for r in streams.values())))
    if len(labels) > limit:
        labels = sorted(random.Random(7).sample(labels, limit))
    return labels


def test_labels_match_agrees_on_stream_labels(streams: dict[int, StreamResult]) -> None:
    labels = _label_sample(streams)
    assert len(labels) > 80
    matches = 0
    for stored in labels:
        for incoming in labels:  # every ordered pair: both orders
            theirs = sym.labels_match(stored, incoming, threshold=0.85)
            assert md.labels_match(stored, incoming, threshold=0.85) == theirs, (stored, incoming)
            matches += theirs
        assert md.normalise_label(stored) == sym.normalise_label(stored)
    assert matches > len(labels)  # more than the diagonal: restatements do match


def test_labels_match_agrees_at_other_thresholds(streams: dict[int, StreamResult]) -> None:
    labels = _label_sample(streams, limit=50)
    for threshold in (0.0, 0.6, 0.95, 1.0):
        for stored in labels:
            for incoming in labels:
                theirs = sym.labels_match(stored, incoming, threshold=threshold)
                assert md.labels_match(stored, incoming, threshold=threshold) == theirs, (stored, incoming)


# ==================================================================================================
# A scripted scenario with known answers
# ==================================================================================================


async def _scripted() -> None:
    backend = sym_backend.InMemoryGraphBackend()
    store = sym_store.GraphMemoryStore(backend)
    sem = MemoryLayer.SEMANTIC

    async def write(scope: Any, node_id: str, label: str, *, layer: Any = sem) -> Any:
        return await store.add_node(
            scope, MemoryNode(id=node_id, layer=layer, tenant_id=scope.tenant_id, label=label)
        )

    async def expect(scope: Any, label: str, expected: str | None, **kwargs: Any) -> None:
        kwargs.setdefault("layer", sem)
        got = await _both(store, scope, label=label, **kwargs)
        assert (None if got is None else str(got.id)) == expected, (scope.scope_path, label, kwargs)

    await write(SESSION_1, "pytest", "Uses pytest and ruff")
    # Extra detail (containment), terser, punctuation, case, whitespace: all collapse at the owning scope.
    await expect(SESSION_1, "Uses pytest and ruff for Python projects with strict linting", "pytest")
    await expect(SESSION_1, "  Uses pytest and ruff.  ", "pytest")
    await expect(SESSION_1, "Uses pytest and ruff\t\u3000FOR  PYTHON!", "pytest")
    # The candidate fetch is a raw prefix query: a change of case or spacing in the first 20 characters
    # is never fetched, so it never collapses (the seed's documented limit).
    await expect(SESSION_1, "USES PYTEST AND RUFF", None)
    await expect(SESSION_1, "Uses\tpytest\u3000and ruff!", None)
    await write(SESSION_1, "dark", "The user prefers dark mode in all editors")
    await expect(SESSION_1, "The user prefers dark mode in all IDEs", "dark")  # tail rewording, ratio >= 0.85
    await expect(SESSION_1, "The user prefers dark mode on weekends", None)  # ratio < 0.85
    await expect(SESSION_1, "Uses pytest and ruff", "pytest", threshold=1.0)
    await expect(SESSION_1, "Uses pytest", None)  # shorter than 16 characters: no containment
    await expect(SESSION_1, "We use pytest and ruff", None)  # reworded opening: another prefix
    await expect(SESSION_1, "Uses pytest and ruff", None, layer=MemoryLayer.PROCEDURAL)
    # Not visible from a sibling session, visible but not owned from nowhere else.
    await expect(SESSION_2, "Uses pytest and ruff", None)
    await expect(AGENT, "Uses pytest and ruff", None)

    # Ancestor-owned: visible from the child, never collapsed into; requested_id still short-circuits.
    await write(AGENT, "berlin", "The user lives in Berlin")
    await expect(AGENT, "The user lives in Berlin.", "berlin")
    await expect(SESSION_1, "The user lives in Berlin.", None)
    await expect(SESSION_1, "The user lives in Berlin.", "berlin", requested_id="berlin")
    await expect(SESSION_1, "The user lives in Berlin.", None, requested_id="pytest")  # not a candidate
    await expect(OTHER_TENANT, "The user lives in Berlin", None)

    # Legacy rows (no scope_path) belong to the tenant root.
    legacy = await write(SESSION_2, "rust", "The user's favourite language is Rust")
    legacy.properties.pop(SCOPE_PATH_KEY)
    await expect(ROOT, "The user's favourite language is Rust!", "rust")
    await expect(SESSION_2, "The user's favourite language is Rust!", None)
    await expect(ORG_TEAM, "The user's favourite language is Rust!", None)

    # Retracted rows never match, not even by requested_id.
    await write(SESSION_1, "acme", "The user works at Acme Corp")
    await expect(SESSION_1, "The user works at Acme Corp.", "acme")
    await store.update_node(SESSION_1, "acme", {RETRACTED_KEY: True})
    await expect(SESSION_1, "The user works at Acme Corp.", None)
    await expect(SESSION_1, "The user works at Acme Corp.", None, requested_id="acme")

    # Non-ASCII restatements.
    await write(SESSION_1, "cafe", "Café in München serves the best coffee")
    await expect(SESSION_1, "Café in München serves THE BEST COFFEE.", "cafe")
    await expect(SESSION_1, "Café in München serves the best coffee in town!", "cafe")
    await write(SESSION_1, "greek", "ΟΔΟΣ ΑΘΗΝΑΣ is the office street")
    await expect(SESSION_1, "ΟΔΟΣ ΑΘΗΝΑΣ is the oFFICE STREET.", "greek")  # final sigma on both sides
    await expect(SESSION_1, "οδος αθηνας is the office street", None)  # another raw prefix

    # Only the first DEDUP_QUERY_LIMIT candidates (in the graph's order) are considered.
    for i, tail in enumerate(FILLER_TAILS[:20]):
        await write(SESSION_2, f"filler-{i}", f"Project codename is {tail}")
    await write(SESSION_2, "falcon", "Project codename is Falcon Heavy Rocket")
    await expect(SESSION_2, "Project codename is Falcon Heavy Rocket.", None)
    await expect(SESSION_2, "Project codename is Falcon Heavy Rocket.", None, requested_id="falcon")
    await store.update_node(SESSION_2, "filler-3", {RETRACTED_KEY: True})  # now it is the 20th live row
    await expect(SESSION_2, "Project codename is Falcon Heavy Rocket.", "falcon")


def test_scripted_scenario() -> None:
    run(_scripted())


# ==================================================================================================
# Error handling and odd shapes (duck-typed graphs and nodes)
# ==================================================================================================


class ListGraph:
    def __init__(self, nodes: Any) -> None:
        self.nodes = nodes
        self.calls: list[dict[str, Any]] = []

    async def query_nodes(self, scope: Any, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        return self.nodes


class RaisingGraph:
    async def query_nodes(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("backend down")


class SyncGraph:
    def query_nodes(self, *args: Any, **kwargs: Any) -> Any:
        return []


class Node:
    def __init__(self, node_id: Any, label: Any, properties: Any = None, tenant_id: Any = "acme") -> None:
        self.id = node_id
        self.label = label
        self.properties = {SCOPE_PATH_KEY: SESSION_1.scope_path} if properties is None else properties
        self.tenant_id = tenant_id

    def __repr__(self) -> str:
        return f"Node({self.id!r})"


class LabelRaises(Node):
    def __init__(self, node_id: Any, error: type[Exception]) -> None:
        super().__init__(node_id, "unused")
        self.error = error

    def __getattribute__(self, name: str) -> Any:
        if name == "label":
            raise object.__getattribute__(self, "error")("label unavailable")
        return object.__getattribute__(self, name)


class IdRaises(Node):
    def __getattribute__(self, name: str) -> Any:
        if name == "id":
            raise ValueError("id unavailable")
        return object.__getattribute__(self, name)


class NoAttrs:
    """A node with none of the attributes: every getattr falls back to its default."""


class StrRaises:
    def __str__(self) -> str:
        raise ValueError("no text")


class Text:
    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


INCOMING = "Uses pytest and ruff for Python projects"


def good(node_id: str = "good") -> Node:
    return Node(node_id, "Uses pytest and ruff.")


BAD_NODES: list[tuple[str, Any]] = [
    ("label-valueerror", LabelRaises("bad", ValueError)),
    ("label-attributeerror", LabelRaises("bad", AttributeError)),
    ("label-none", Node("bad", None)),
    ("label-int", Node("bad", 123)),
    ("label-str-raises", Node("bad", StrRaises())),
    ("label-object-matching", Node("bad", Text("USES PYTEST AND RUFF"))),
    ("props-list", Node("bad", "Uses pytest and ruff", [1, 2])),
    ("props-str", Node("bad", "Uses pytest and ruff", "scope")),
    ("props-empty-list", Node("bad", "Uses pytest and ruff", [])),
    ("props-int-path", Node("bad", "Uses pytest and ruff", {SCOPE_PATH_KEY: 5})),
    ("props-legacy-root", Node("bad", "Uses pytest and ruff", {})),
    ("tenant-missing", Node("bad", "Uses pytest and ruff", {}, tenant_id=None)),
    ("id-raises", IdRaises("bad", "Uses pytest and ruff")),
    ("no-attrs", NoAttrs()),
    ("not-a-node", 42),
]


def _layouts(bad: Any) -> Iterator[tuple[str, list[Any]]]:
    yield "bad-only", [bad]
    yield "bad-first", [bad, good()]
    yield "bad-last", [good(), bad]
    yield "bad-between", [Node("other", "Unrelated fact entirely"), bad, good()]


async def _compare_on(graph: Any, scope: Any, caplog: pytest.LogCaptureFixture, **kwargs: Any) -> Any:
    caplog.clear()
    ours = await md.find_canonical_node(graph, scope, **kwargs)
    ours_logged = any(r.name == "memdedup.dedup" and r.levelno == logging.DEBUG for r in caplog.records)
    caplog.clear()
    theirs = await sym.find_canonical_node(graph, scope, **kwargs)
    theirs_logged = any(
        r.name == "symfonic.memory.dedup" and r.levelno == logging.DEBUG for r in caplog.records
    )
    assert node_key(ours) == node_key(theirs), kwargs
    assert ours_logged == theirs_logged, "a lookup failure is logged at DEBUG exactly when symfonic logs one"
    return theirs


@pytest.mark.parametrize(("name", "bad"), BAD_NODES, ids=[n for n, _ in BAD_NODES])
@pytest.mark.parametrize("requested_id", [None, "good", "bad", "missing"])
@pytest.mark.parametrize("scope", [SESSION_1, ROOT], ids=["session", "root"])
def test_odd_nodes_give_symfonics_answer(
    caplog: pytest.LogCaptureFixture, name: str, bad: Any, requested_id: str | None, scope: Any
) -> None:
    caplog.set_level(logging.DEBUG)
    for _layout, nodes in _layouts(bad):
        graph = ListGraph(nodes)
        run(
            _compare_on(
                graph, scope, caplog, layer=MemoryLayer.SEMANTIC, label=INCOMING, requested_id=requested_id
            )
        )


def test_odd_nodes_known_answers(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    layer = MemoryLayer.SEMANTIC

    async def ask(nodes: list[Any]) -> Any:
        return await _compare_on(ListGraph(nodes), SESSION_1, caplog, layer=layer, label=INCOMING)

    # A label that raises (other than AttributeError) aborts the lookup -- unless a match came first.
    assert run(ask([LabelRaises("bad", ValueError), good()])) is None
    assert str(run(ask([good(), LabelRaises("bad", ValueError)])).id) == "good"
    # getattr's default covers AttributeError: the node is just skipped.
    assert str(run(ask([LabelRaises("bad", AttributeError), good()])).id) == "good"
    # A node whose label is an object is read through str(): it matches.
    assert str(run(ask([Node("obj", Text("USES PYTEST AND RUFF"))])).id) == "obj"
    # Non-mapping properties break the ownership read of a matching node: lookup fails -> None.
    assert run(ask([Node("bad", "Uses pytest and ruff", [1, 2]), good()])) is None


def test_graph_whose_query_raises_returns_none_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="memdedup.dedup")
    got = run(md.find_canonical_node(RaisingGraph(), SESSION_1, layer=MemoryLayer.SEMANTIC, label=INCOMING))
    assert got is None
    records = [r for r in caplog.records if r.name == "memdedup.dedup"]
    assert records, "the swallowed failure is logged"
    assert all(r.levelno == logging.DEBUG for r in records)
    assert any(r.exc_info is not None and r.exc_info[0] is RuntimeError for r in records)
    assert (
        run(sym.find_canonical_node(RaisingGraph(), SESSION_1, layer=MemoryLayer.SEMANTIC, label=INCOMING))
        is None
    )


@pytest.mark.parametrize(
    "graph",
    [None, object(), SyncGraph(), ListGraph(None), ListGraph(42), ListGraph(iter([]))],
    ids=["none", "no-query-nodes", "sync-query-nodes", "returns-none", "returns-int", "returns-iterator"],
)
def test_missing_or_broken_graphs(caplog: pytest.LogCaptureFixture, graph: Any) -> None:
    caplog.set_level(logging.DEBUG)
    assert run(_compare_on(graph, SESSION_1, caplog, layer=MemoryLayer.SEMANTIC, label=INCOMING)) is None


def test_generator_candidates_and_query_arguments(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    for maker in (lambda: iter([good()]), lambda: (n for n in [Node("x", "zzz"), good()]), lambda: (good(),)):
        ours_graph, theirs_graph = ListGraph(maker()), ListGraph(maker())
        ours = run(md.find_canonical_node(ours_graph, SESSION_1, layer=MemoryLayer.SEMANTIC, label=INCOMING))
        theirs = run(
            sym.find_canonical_node(theirs_graph, SESSION_1, layer=MemoryLayer.SEMANTIC, label=INCOMING)
        )
        assert str(ours.id) == str(theirs.id) == "good"
        assert ours_graph.calls == theirs_graph.calls
    graph = ListGraph([])
    run(md.find_canonical_node(graph, SESSION_1, layer=MemoryLayer.PROCEDURAL, label="  " + "x" * 30 + "  "))
    assert graph.calls == [{"layer": MemoryLayer.PROCEDURAL, "label_prefix": "x" * 20}]


@pytest.mark.parametrize("label", ["", "   ", "\t\n", None])
def test_blank_label_never_queries(caplog: pytest.LogCaptureFixture, label: Any) -> None:
    caplog.set_level(logging.DEBUG)
    graph = ListGraph([good()])
    assert run(_compare_on(graph, SESSION_1, caplog, layer=MemoryLayer.SEMANTIC, label=label)) is None
    assert graph.calls == []


@pytest.mark.parametrize("position", [0, 10, 19, 20, 25])
def test_query_limit_on_duck_graph(caplog: pytest.LogCaptureFixture, position: int) -> None:
    caplog.set_level(logging.DEBUG)
    nodes: list[Any] = [Node(f"f{i}", f"Project codename is {FILLER_TAILS[i]}") for i in range(24)]
    nodes.insert(position, Node("falcon", "Project codename is Falcon Heavy Rocket"))
    for requested_id in (None, "falcon"):
        got = run(
            _compare_on(
                ListGraph(nodes),
                SESSION_1,
                caplog,
                layer=MemoryLayer.SEMANTIC,
                label="Project codename is Falcon Heavy Rocket!",
                requested_id=requested_id,
            )
        )
        assert (got is not None) == (position < 20)


@pytest.mark.parametrize("threshold", [0.85, 0.8, 0.9, 1.0, 0.0])
def test_threshold_boundary_through_find(caplog: pytest.LogCaptureFixture, threshold: float) -> None:
    caplog.set_level(logging.DEBUG)
    # 17 matching characters of 40 -> ratio exactly 0.85; no containment.
    stored = "abcdefghijklmnopq" + "012"
    incoming = "abcdefghijklmnopq" + "xyz"
    got = run(
        _compare_on(
            ListGraph([Node("n", stored)]),
            SESSION_1,
            caplog,
            layer=MemoryLayer.SEMANTIC,
            label=incoming,
            threshold=threshold,
        )
    )
    assert (got is not None) == (0.85 >= threshold)


def test_duck_scope() -> None:
    # Any object with scope_path works as the write scope, as with symfonic.
    class Scope:
        scope_path = SESSION_1.scope_path

    nodes = [Node("n", "Uses pytest and ruff")]
    ours = run(md.find_canonical_node(ListGraph(nodes), Scope(), layer="semantic", label=INCOMING))
    theirs = run(sym.find_canonical_node(ListGraph(nodes), Scope(), layer="semantic", label=INCOMING))
    assert node_key(ours) == node_key(theirs) == ("n", id(nodes[0]))
