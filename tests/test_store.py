"""The SQLite store and the scope type, held to symfonic-core's in-memory backend semantics."""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memdedup.dedup import find_canonical_node
from memdedup.errors import InputTypeError, InvalidInputError
from memdedup.scope import Scope, ScopeLevel
from memdedup.store import SQLiteGraphStore, StoreError, StoreIntegrityWarning, prefix_successor
from strategies import n_examples
from symfonic.core.scope import ScopeLevel as TenantLevel
from symfonic.core.scope import TenantScope
from symfonic.memory.backends.in_memory import InMemoryGraphBackend
from symfonic.memory.dedup import find_canonical_node as symfonic_find_canonical_node
from symfonic.memory.graph.store import GraphMemoryStore
from symfonic.memory.models.node import MemoryNode
from symfonic.memory.retraction import RETRACTED_KEY
from symfonic.memory.types import MemoryLayer as SymfonicLayer

ORG = Scope.root("org", "acme")
DANA = ORG.child("user", "dana")
LEE = ORG.child("user", "lee")
CORP = Scope.root("org", "acme-corp")


def tenant(scope: Scope) -> TenantScope:
    return TenantScope.from_path([TenantLevel(kind=lvl.kind, id=lvl.id) for lvl in scope.levels])


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with SQLiteGraphStore(tmp_path / "memory.sqlite") as opened:
        yield opened


def write(store: SQLiteGraphStore, scope: Scope, node_id: str, label: str, layer: str = "semantic") -> Any:
    return store.upsert_node(scope, node_id=node_id, layer=layer, label=label)[0]


# ---------------------------------------------------------------------------------------------------
# Scope
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "levels",
    [[("org", "acme")], [("org", "acme"), ("user", "dana")], [("t", "a/b:c"), ("s", "x-y"), ("c", "7")]],
)
def test_scope_paths_are_symfonic_core_s(levels: list[tuple[str, str]]) -> None:
    ours = Scope.from_path(levels)
    theirs = TenantScope.from_path([TenantLevel(kind=k, id=i) for k, i in levels])
    assert ours.scope_path == theirs.scope_path
    assert ours.ancestor_prefix_paths() == theirs.ancestor_prefix_paths()
    assert ours.tenant_id == theirs.tenant_id
    assert Scope.parse(theirs) == ours
    assert Scope.from_scope_path(ours.scope_path) == ours


def test_an_id_cannot_forge_a_level_boundary() -> None:
    with pytest.raises(InvalidInputError, match="forge"):
        ORG.child("user", "dana\x1fteam\x1fadmins")
    with pytest.raises(InvalidInputError, match="forge"):
        ScopeLevel("org\x1fuser", "x")
    # Neither can "/" or ":" in an id: they are plain characters of the id, not boundaries.
    odd = ORG.child("user", "a/b:c")
    assert odd.scope_path == "org\x1facme\x1fuser\x1fa/b:c" and odd.depth == 2


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ([], InvalidInputError),
        ([("org", "")], InvalidInputError),
        ([("org", "  ")], InvalidInputError),
        ([("org", "a"), ("org", "b")], InvalidInputError),
        ([("org", None)], InputTypeError),
        ([{"kind": "org"}], InvalidInputError),
        ("org:acme", InputTypeError),
        ([("org", "\ud800")], InvalidInputError),
        ([("org", True)], InputTypeError),
    ],
)
def test_bad_scopes_are_refused(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        Scope.parse(value)


def test_scope_json_forms() -> None:
    assert Scope.parse({"org": "acme", "user": "dana"}) == DANA
    assert Scope.parse([{"kind": "org", "id": "acme"}, {"kind": "user", "id": "dana"}]) == DANA
    assert Scope.parse({"path": [["org", "acme"], ["user", "dana"]]}) == DANA
    assert Scope.parse(DANA.to_json()) == DANA
    # Ids are text: a number is refused, never turned into the string it would collide with.
    with pytest.raises(InputTypeError, match="string"):
        Scope.parse({"org": "acme", "user": 42})
    assert DANA.readable() == "org:acme/user:dana" and DANA.parent == ORG and ORG.parent is None


def test_visibility_is_exact_membership_not_a_string_prefix() -> None:
    assert DANA.sees(ORG.scope_path) and DANA.sees(DANA.scope_path)
    assert not ORG.sees(DANA.scope_path)
    assert not DANA.sees(LEE.scope_path)
    assert CORP.scope_path.startswith(ORG.scope_path)  # the string-prefix trap...
    assert not CORP.sees(ORG.scope_path)  # ...that exact membership avoids


# ---------------------------------------------------------------------------------------------------
# The prefix range
# ---------------------------------------------------------------------------------------------------
@settings(max_examples=n_examples(500))
@given(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=6),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=8),
)
def test_prefix_range_is_exactly_startswith(prefix: str, label: str) -> None:
    successor = prefix_successor(prefix)
    in_range = prefix <= label and (successor is None or label < successor)
    assert in_range == label.startswith(prefix)


@pytest.mark.parametrize(
    ("prefix", "successor"),
    [("abc", "abd"), ("a\U0010ffff", "b"), ("\U0010ffff", None), ("\ud7ff", "\ue000"), ("", None)],
)
def test_prefix_successor_edges(prefix: str, successor: str | None) -> None:
    assert prefix_successor(prefix) == successor


def test_sqlite_prefix_query_agrees_with_startswith_on_awkward_labels(store: SQLiteGraphStore) -> None:
    labels = [
        "Uses pytest",
        "uses pytest",
        "Uses pytestify",
        "Uses",
        "Usf",
        "Ute",
        "Uses\x00nul",
        "Uses\U0010ffff!",
        "Usesé",
        "Uses\ud7ff",
        "Uses\ue000",
        "Us",
        "",
        "x",
    ]
    for i, label in enumerate(labels):
        if label:
            write(store, ORG, f"n{i}", label)
    for prefix in ["Uses", "Use", "uses", "Uses\U0010ffff", "Uses\ud7ff", "U", "Usesé", "Uses\x00"]:
        got = [n.label for n in store.query(ORG, label_prefix=prefix)]
        assert got == [label for label in labels if label and label.startswith(prefix)], prefix


def test_the_prefix_query_uses_the_index(store: SQLiteGraphStore) -> None:
    for i in range(50):
        write(store, DANA, f"n{i}", f"fact number {i}")
    plan = " | ".join(store.explain_query(DANA, layer="semantic", label_prefix="fact number 1"))
    assert "USING INDEX nodes_scope_layer_label (scope_path=? AND layer=? AND label>? AND label<?)" in plan
    assert "SCAN nodes" not in plan
    plan = " | ".join(store.explain_query(DANA, label_prefix="fact"))
    assert "USING INDEX nodes_scope_label (scope_path=? AND label>? AND label<?)" in plan


# ---------------------------------------------------------------------------------------------------
# Reads, against symfonic-core's GraphMemoryStore over its InMemoryGraphBackend
# ---------------------------------------------------------------------------------------------------
SCOPES = [ORG, DANA, LEE, DANA.child("session", "s1"), CORP, CORP.child("user", "dana")]
LABELS = ["Uses pytest", "uses pytest", "Uses ruff", "Dana likes tea", "Dana likes Tea", "Dana", "Usesé", "U"]
LAYERS = ["semantic", "procedural", "episodic"]

_WRITE = st.tuples(
    st.just("write"),
    st.integers(0, len(SCOPES) - 1),
    st.sampled_from(LABELS),
    st.sampled_from(LAYERS),
    st.integers(0, 7),
)
_RETRACT = st.tuples(st.just("retract"), st.integers(0, len(SCOPES) - 1), st.integers(0, 7))


def _symfonic_replay(steps: list[tuple[Any, ...]]) -> GraphMemoryStore:
    graph = GraphMemoryStore(InMemoryGraphBackend())
    backend = graph._backend

    async def run() -> None:
        for step in steps:
            if step[0] == "write":
                _, s, label, layer, n = step
                scope = SCOPES[s]
                node_id = f"{scope.scope_path}#{n}"  # ids unique across scopes on both sides
                existing = backend._nodes.get(scope.tenant_id, {}).get(node_id)
                node = MemoryNode(
                    id=node_id, layer=SymfonicLayer(layer), tenant_id=scope.tenant_id, label=label
                )
                if existing is not None:
                    node.properties.update(
                        {k: v for k, v in existing.properties.items() if k == RETRACTED_KEY}
                    )
                await backend.add_node(tenant(scope), node)
            else:
                _, s, n = step
                scope = SCOPES[s]
                node = backend._nodes.get(scope.tenant_id, {}).get(f"{scope.scope_path}#{n}")
                if node is not None and node.properties.get("scope_path") == scope.scope_path:
                    node.properties[RETRACTED_KEY] = True

    asyncio.run(run())
    return graph


def _our_replay(store: SQLiteGraphStore, steps: list[tuple[Any, ...]]) -> None:
    for step in steps:
        if step[0] == "write":
            _, s, label, layer, n = step
            scope = SCOPES[s]
            store.upsert_node(scope, node_id=f"{scope.scope_path}#{n}", layer=layer, label=label)
        else:
            _, s, n = step
            scope = SCOPES[s]
            store.retract_node(scope, f"{scope.scope_path}#{n}")


@settings(max_examples=n_examples(60))
@given(st.lists(st.one_of(_WRITE, _WRITE, _RETRACT), max_size=25))
def test_reads_match_symfonic_core_in_memory_backend(steps: list[tuple[Any, ...]]) -> None:
    graph = _symfonic_replay(steps)
    with SQLiteGraphStore(":memory:") as store:
        _our_replay(store, steps)

        async def compare() -> None:
            queries = itertools.product(
                SCOPES,
                [None, *LAYERS[:2]],
                [None, "Uses", "Dana likes", "U", "uses"],
                [None, 0, 2],
                [False, True],
            )
            for scope, layer, prefix, limit, retracted in queries:
                kwargs = {"label_prefix": prefix, "limit": limit, "include_retracted": retracted}
                theirs = await graph.query_nodes(
                    tenant(scope), layer=SymfonicLayer(layer) if layer else None, **kwargs
                )
                ours = await store.query_nodes(scope, layer=layer, **kwargs)
                assert [(n.id, n.label, n.layer) for n in ours] == [
                    (str(n.id), n.label, n.layer.value) for n in theirs
                ], (scope, layer, prefix, limit, retracted)
            for scope, label in itertools.product(SCOPES, LABELS):
                theirs = await graph.query_nodes(tenant(scope), label=label)
                ours = await store.query_nodes(scope, label=label)
                assert [n.id for n in ours] == [str(n.id) for n in theirs]

        asyncio.run(compare())


def test_order_is_oldest_first_and_an_upsert_keeps_its_place(store: SQLiteGraphStore) -> None:
    first = write(store, ORG, "a", "Uses pytest")
    write(store, DANA, "b", "Uses ruff")
    write(store, ORG, "c", "Uses mypy")
    updated, created = store.upsert_node(ORG, node_id="a", layer="semantic", label="Uses pytest daily")
    assert not created
    assert [n.id for n in store.query(DANA, label_prefix="Uses")] == ["a", "b", "c"]
    assert updated.label == "Uses pytest daily" and updated.created_at == first.created_at
    assert updated.seq == first.seq


def test_limits_follow_the_graph_store(store: SQLiteGraphStore) -> None:
    for i in range(5):
        write(store, ORG, f"n{i}", f"fact {i}")
    store.retract_node(ORG, "n1")
    assert [n.id for n in store.query(ORG, limit=2)] == [
        "n0",
        "n2",
    ]  # a retracted row does not use up the limit
    assert store.query(ORG, limit=0) == []
    assert len(store.query(ORG, limit=None)) == 4
    assert len(store.query(ORG, include_retracted=True)) == 5


# ---------------------------------------------------------------------------------------------------
# Ownership, retraction, get
# ---------------------------------------------------------------------------------------------------
def test_a_child_writing_an_ancestor_s_id_gets_its_own_row(store: SQLiteGraphStore) -> None:
    write(store, ORG, "x1.0.abc", "Acme's production region is eu-west-1")
    mine, created = store.upsert_node(DANA, node_id="x1.0.abc", layer="semantic", label="Dana's own fact")
    assert created and mine.scope_path == DANA.scope_path
    assert store.get_node(ORG, "x1.0.abc").label == "Acme's production region is eu-west-1"  # untouched
    assert store.get_node(DANA, "x1.0.abc").label == "Dana's own fact"  # the nearest scope first
    assert store.get_node(LEE, "x1.0.abc").scope_path == ORG.scope_path


def test_only_the_owner_retracts_and_reads_hide_retracted_rows(store: SQLiteGraphStore) -> None:
    write(store, ORG, "n", "Acme's production region is eu-west-1")
    assert not store.retract_node(DANA, "n")  # visible to Dana, not Dana's
    assert store.get_node(DANA, "n") is not None
    assert store.retract_node(ORG, "n", reason="moved to eu-central-1")
    assert not store.retract_node(ORG, "n")  # already retracted
    assert store.get_node(DANA, "n") is None and store.query(DANA) == []
    hidden = store.get_node(ORG, "n", include_retracted=True)
    assert hidden.retracted and hidden.retraction_reason == "moved to eu-central-1"


def test_find_canonical_node_collapses_only_into_the_write_scope_s_rows(store: SQLiteGraphStore) -> None:
    write(store, ORG, "org-fact", "Acme's production region is eu-west-1")

    async def lookup(scope: Scope, label: str) -> Any:
        return await find_canonical_node(store, scope, layer="semantic", label=label)

    assert asyncio.run(lookup(ORG, "Acme's production region is eu-west-1.")).id == "org-fact"
    assert store.query(DANA, label_prefix="Acme")  # Dana sees the org's row...
    assert asyncio.run(lookup(DANA, "Acme's production region is eu-west-1.")) is None  # ...but never owns it
    write(store, DANA, "dana-fact", "Acme's production region is eu-west-1")
    assert asyncio.run(lookup(DANA, "Acme's production region is eu-west-1.")).id == "dana-fact"
    store.retract_node(DANA, "dana-fact")
    assert (
        asyncio.run(lookup(DANA, "Acme's production region is eu-west-1.")) is None
    )  # re-learned, not revived


def test_symfonic_core_s_own_dedup_reads_this_store_the_same_way(store: SQLiteGraphStore) -> None:
    write(store, ORG, "org-fact", "Uses pytest and ruff")
    write(store, DANA, "dana-fact", "Uses pytest and ruff for Python projects")

    async def both(scope: Scope, label: str) -> tuple[Any, Any]:
        ours = await find_canonical_node(store, scope, layer="semantic", label=label)
        theirs = await symfonic_find_canonical_node(
            store, tenant(scope), layer=SymfonicLayer.SEMANTIC, label=label
        )
        return ours, theirs

    for scope, label in itertools.product(
        [ORG, DANA, LEE], ["Uses pytest and ruff.", "Uses pytest", "uses ruff"]
    ):
        ours, theirs = asyncio.run(both(scope, label))
        assert (ours and ours.id) == (theirs and theirs.id), (scope, label)


def test_record_mention_keeps_the_label_and_takes_the_higher_importance(store: SQLiteGraphStore) -> None:
    store.upsert_node(DANA, node_id="n", layer="semantic", label="Dana likes tea", importance=4, salience=0.3)
    node = store.record_mention(DANA, "n", importance=7, salience=0.1)
    assert (node.label, node.mentions, node.importance, node.salience) == ("Dana likes tea", 2, 7, 0.3)
    with pytest.raises(InvalidInputError):
        store.record_mention(LEE, "n")


# ---------------------------------------------------------------------------------------------------
# The file
# ---------------------------------------------------------------------------------------------------
def test_the_database_is_in_wal_mode_and_versioned(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    SQLiteGraphStore(path).close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match="schema version 99"):
        SQLiteGraphStore(path)


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("these are not the pages you are looking for\n" * 100)
    with pytest.raises(StoreError):
        SQLiteGraphStore(path)


def test_a_failed_transaction_leaves_nothing_behind(store: SQLiteGraphStore) -> None:
    with pytest.raises(RuntimeError), store.transaction():
        write(store, DANA, "a", "first")
        write(store, DANA, "b", "second")
        raise RuntimeError("the process hit a bug mid-turn")
    assert store.count_nodes() == 0
    with store.transaction():
        write(store, DANA, "a", "first")
    assert store.count_nodes() == 1


def test_text_sqlite_cannot_store_is_refused_clearly(store: SQLiteGraphStore) -> None:
    with pytest.raises(InvalidInputError, match="surrogate"):
        write(store, DANA, "a", "bad \ud800")
    with pytest.raises(InvalidInputError):
        write(store, DANA, "a", "   ")
    node = write(store, DANA, "a", "nul \x00 inside")
    assert store.get_node(DANA, "a").label == node.label == "nul \x00 inside"


# ---------------------------------------------------------------------------------------------------
# Ownership of rows and of the file; integrity; one error type
# ---------------------------------------------------------------------------------------------------
def test_insert_node_is_keyed_by_the_owner_not_by_visibility(store: SQLiteGraphStore) -> None:
    assert store.insert_node(ORG, node_id="t1", layer="episodic", label="hello")
    assert store.get_node(DANA, "t1") is not None  # the org's row is visible to Dana...
    assert store.owned_node(DANA, "t1") is None  # ...but not Dana's
    assert store.insert_node(DANA, node_id="t1", layer="episodic", label="hello")
    assert not store.insert_node(DANA, node_id="t1", layer="episodic", label="changed")  # left alone
    assert store.owned_node(DANA, "t1").label == "hello"
    assert [(n.scope_path, n.id) for n in store.all_nodes()] == [
        (ORG.scope_path, "t1"),
        (DANA.scope_path, "t1"),
    ]


def test_a_new_database_is_stamped_as_memdedup_s(tmp_path: Path) -> None:
    from memdedup.store import APPLICATION_ID

    SQLiteGraphStore(tmp_path / "m.sqlite").close()
    with sqlite3.connect(tmp_path / "m.sqlite") as conn:
        assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    conn.close()


@pytest.mark.parametrize(
    "setup",
    [
        "CREATE TABLE customers (id INTEGER PRIMARY KEY)",
        "CREATE VIEW v AS SELECT 1",
        "PRAGMA application_id = 42",
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT); CREATE TABLE orders (id INTEGER)",
    ],
)
def test_a_database_that_is_not_empty_and_not_memdedup_s_is_left_alone(tmp_path: Path, setup: str) -> None:
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript(setup)
    conn.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match="not a memdedup database"):
        SQLiteGraphStore(path)
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["other.sqlite"]


def test_a_damaged_row_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    with SQLiteGraphStore(path) as opened:
        write(opened, DANA, "n", "Dana likes tea")
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE nodes SET properties = '{not json'")
    conn.close()
    with pytest.warns(StoreIntegrityWarning, match="nodes row 1: properties is not JSON"):
        opened = SQLiteGraphStore(path)
    with opened, pytest.raises(StoreError, match="damaged"):
        opened.query(DANA)


def test_the_check_on_open_can_be_full_or_off(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    with pytest.raises(InvalidInputError, match="check"):
        SQLiteGraphStore(path, check="sometimes")
    for check in ("quick", "full", "off"):
        with SQLiteGraphStore(path, check=check) as opened:
            assert opened.integrity_problems == []


def test_a_failed_commit_rolls_back_and_is_a_store_error(tmp_path: Path) -> None:
    with SQLiteGraphStore(tmp_path / "m.sqlite") as opened:
        opened._conn.execute("PRAGMA max_page_count = 8")
        with pytest.raises(StoreError, match="full"), opened.transaction():
            for i in range(200):
                write(opened, DANA, f"n{i}", "x" * 500)
        assert not opened.in_transaction and opened.count_nodes() == 0
