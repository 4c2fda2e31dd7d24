"""The gate-free write-time lookup: ``find_canonical_node(..., gate="index")`` over the label index a
:class:`~memdedup.store.SQLiteGraphStore` keeps (issue 26), and ``memdedup ingest --gate index``.

The answer is held to a brute-force oracle written here from the rule itself: of the live rows owned by
exactly the write scope, in that layer, in store order, the first whose label the contract accepts.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

import cli_support
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memdedup.dedup import DEDUP_PREFIX_LEN, DEDUP_QUERY_LIMIT, find_canonical_node
from memdedup.errors import InvalidInputError
from memdedup.guards import as_guards, guards_allow
from memdedup.ingest import ingest_turns
from memdedup.scope import Scope
from memdedup.store import LedgerEntry, SQLiteGraphStore, StoreError
from strategies import n_examples, seed_labels_match

PARENT = Scope.root("org", "acme")
A = PARENT.child("user", "ann")
B = PARENT.child("user", "bob")
SCOPES = (PARENT, A, B)
LAYERS = ("semantic", "procedural")


def lookup(graph: Any, scope: Scope, label: str, *, layer: str = "semantic", **kwargs: Any) -> Any:
    return asyncio.run(find_canonical_node(graph, scope, layer=layer, label=label, **kwargs))


def oracle(
    store: SQLiteGraphStore, scope: Scope, layer: str, label: str, threshold: float = 0.85, guards: Any = None
) -> str | None:
    """The oldest live row owned by exactly ``scope`` in ``layer`` that the contract accepts (no gate)."""
    parsed = as_guards(guards) if guards is not None else None
    for node in store.all_nodes(include_retracted=False):  # store order: seq
        if node.scope_path != scope.scope_path or node.layer != layer:
            continue
        if not seed_labels_match(node.label, label.strip(), threshold=threshold):
            continue
        if parsed is not None and not guards_allow(node.label, label.strip(), parsed):
            continue
        return node.id
    return None


def node_id(node: Any) -> str | None:
    return None if node is None else str(node.id)


def assert_index_holds_the_live_rows(store: SQLiteGraphStore) -> None:
    """Every partition's index holds exactly the live rows of its (scope path, layer), with their labels."""
    live: dict[tuple[str, str], dict[str, str]] = {}
    for node in store.all_nodes(include_retracted=False):
        live.setdefault((node.scope_path, node.layer), {})[node.id] = node.label
    for scope in SCOPES:
        for layer in LAYERS:
            rows = live.get((scope.scope_path, layer), {})
            index = store.label_index(scope, layer)
            assert index is not None
            assert len(index) == len(rows)
            for id_, label in rows.items():
                assert id_ in index and index.label(id_) == label


# ---------------------------------------------------------------------------------------------------
# What the index gate finds that the prefix gate cannot
# ---------------------------------------------------------------------------------------------------
def test_a_restatement_with_another_prefix_is_found(tmp_path: Path) -> None:
    with SQLiteGraphStore(tmp_path / "m.sqlite", label_index=True) as store:
        store.upsert_node(A, node_id="n1", layer="semantic", label="User prefers dark mode")
        store.upsert_node(A, node_id="n2", layer="semantic", label="Lives in Berlin since 2019")
        incoming = "Prefers dark mode"
        assert "User prefers dark mode"[:DEDUP_PREFIX_LEN] != incoming[:DEDUP_PREFIX_LEN]
        assert lookup(store, A, incoming) is None  # the seed's gate never fetches it
        assert lookup(store, A, incoming, gate="prefix") is None
        found = lookup(store, A, incoming, gate="index")
        assert node_id(found) == "n1" == oracle(store, A, "semantic", incoming)
        assert found.scope_path == A.scope_path


def test_a_match_behind_more_than_the_candidate_cap_is_found(tmp_path: Path) -> None:
    shared = "Deploy note for acme: "
    assert len(shared) >= DEDUP_PREFIX_LEN
    with SQLiteGraphStore(tmp_path / "m.sqlite", label_index=True) as store:
        for k in range(DEDUP_QUERY_LIMIT + 1):
            store.upsert_node(
                A, node_id=f"f{k}", layer="semantic", label=f"{shared}{k:03d} {'xyzw' * (k % 7)}q"
            )
        store.upsert_node(A, node_id="target", layer="semantic", label=f"{shared}the build runs every Friday")
        incoming = f"{shared}the build runs every Friday."
        assert lookup(store, A, incoming) is None  # every one of the first 20 candidates is a filler
        assert node_id(lookup(store, A, incoming, gate="index")) == "target"
        assert oracle(store, A, "semantic", incoming) == "target"


def test_the_oldest_match_is_chosen(tmp_path: Path) -> None:
    with SQLiteGraphStore(tmp_path / "m.sqlite", label_index=True) as store:
        store.upsert_node(A, node_id="old", layer="semantic", label="Ann prefers dark mode everywhere")
        store.upsert_node(A, node_id="new", layer="semantic", label="prefers dark mode everywhere")
        assert node_id(lookup(store, A, "prefers dark mode everywhere", gate="index")) == "old"
        # An upsert that changes a label keeps the row's place in store order, and the index follows.
        store.upsert_node(A, node_id="old", layer="semantic", label="Ann lives in Lisbon, Portugal")
        store.upsert_node(A, node_id="old", layer="semantic", label="Ann prefers dark mode everywhere!")
        assert node_id(lookup(store, A, "prefers dark mode everywhere", gate="index")) == "old"
        assert oracle(store, A, "semantic", "prefers dark mode everywhere") == "old"


def test_a_sibling_s_or_a_parent_s_row_is_never_matched(tmp_path: Path) -> None:
    label = "User prefers dark mode in every editor"
    with SQLiteGraphStore(tmp_path / "m.sqlite", label_index=True) as store:
        store.upsert_node(A, node_id="a1", layer="semantic", label=label)
        store.upsert_node(PARENT, node_id="p1", layer="procedural", label=label)
        assert lookup(store, B, label, gate="index") is None
        assert lookup(store, PARENT, label, gate="index") is None
        assert (
            lookup(store, B, label, layer="procedural", gate="index") is None
        )  # parent's: visible, not owned
        assert lookup(store, A, label, layer="procedural", gate="index") is None
        assert node_id(lookup(store, A, label, gate="index")) == "a1"
        assert node_id(lookup(store, PARENT, label, layer="procedural", gate="index")) == "p1"


def test_retracted_rows_are_not_matched(tmp_path: Path) -> None:
    with SQLiteGraphStore(tmp_path / "m.sqlite", label_index=True) as store:
        store.upsert_node(A, node_id="n1", layer="semantic", label="User prefers dark mode")
        assert store.retract_node(A, "n1", reason="wrong")
        assert lookup(store, A, "Prefers dark mode", gate="index") is None
        store.upsert_node(
            A, node_id="n1", layer="semantic", label="User prefers dark mode"
        )  # stays retracted
        assert lookup(store, A, "Prefers dark mode", gate="index") is None


def test_guards_apply_to_the_index_gate(tmp_path: Path) -> None:
    with SQLiteGraphStore(tmp_path / "m.sqlite", label_index=True) as store:
        store.upsert_node(A, node_id="v1", layer="semantic", label="The API timeout is 30 seconds")
        incoming = "The API timeout is 60 seconds"
        assert node_id(lookup(store, A, incoming, gate="index")) == "v1"  # ratio alone accepts it
        assert lookup(store, A, incoming, gate="index", guards="value") is None
        assert oracle(store, A, "semantic", incoming, guards="value") is None


def test_requested_id_returns_the_owned_live_node_of_that_id(tmp_path: Path) -> None:
    with SQLiteGraphStore(tmp_path / "m.sqlite", label_index=True) as store:
        store.upsert_node(A, node_id="n1", layer="semantic", label="Lives in Berlin since 2019")
        store.upsert_node(PARENT, node_id="p1", layer="semantic", label="Completely unrelated fact")
        # Any label: the write names a node its scope owns in this layer.
        assert node_id(lookup(store, A, "Something else entirely", gate="index", requested_id="n1")) == "n1"
        # An ancestor's node of that id is not the write scope's (the store keys rows by scope and id).
        assert lookup(store, A, "Something else entirely", gate="index", requested_id="p1") is None
        assert (
            lookup(store, A, "Lives in Berlin", gate="index", requested_id="n1", layer="procedural") is None
        )


# ---------------------------------------------------------------------------------------------------
# The gate argument and the fallbacks
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("gate", ["Index", "none", "", None, 1, ("index",)])
def test_an_unknown_gate_is_refused(tmp_path: Path, gate: Any) -> None:
    with SQLiteGraphStore(tmp_path / "m.sqlite", label_index=True) as store:
        with pytest.raises(InvalidInputError, match="gate"):
            lookup(store, A, "Prefers dark mode", gate=gate)


def test_a_graph_without_an_index_falls_back_to_the_prefix_gate(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with SQLiteGraphStore(tmp_path / "m.sqlite") as store:
        store.upsert_node(A, node_id="n1", layer="semantic", label="User prefers dark mode")
        store.upsert_node(A, node_id="n2", layer="semantic", label="User prefers dark mode.")
        assert store.label_index(A, "semantic") is None
        with caplog.at_level(logging.DEBUG, logger="memdedup.dedup"):
            assert node_id(lookup(store, A, "User prefers dark mode!", gate="index")) == "n1"
            assert lookup(store, A, "Prefers dark mode", gate="index") is None
        assert any("prefix gate" in record.getMessage() for record in caplog.records)


class _BrokenIndexStore(SQLiteGraphStore):
    """A real store whose index lookup fails (a damaged index, a bug): the write must go on."""

    def label_index(self, scope: Any, layer: Any) -> Any:
        raise RuntimeError("index unavailable")


def test_an_index_failure_is_logged_and_the_prefix_gate_answers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with _BrokenIndexStore(tmp_path / "m.sqlite") as store:
        store.upsert_node(A, node_id="n1", layer="semantic", label="User prefers dark mode")
        with caplog.at_level(logging.DEBUG, logger="memdedup.dedup"):
            assert node_id(lookup(store, A, "User prefers dark mode.", gate="index")) == "n1"
        assert any(record.levelno == logging.DEBUG and record.exc_info for record in caplog.records)


# ---------------------------------------------------------------------------------------------------
# The store's index: rebuilt on open, in step with every write, never ahead of the database
# ---------------------------------------------------------------------------------------------------
def test_the_index_is_rebuilt_on_reopen(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite"
    with SQLiteGraphStore(db) as store:  # written without an index
        store.upsert_node(A, node_id="gone", layer="semantic", label="User prefers dark mode")
        store.upsert_node(A, node_id="n1", layer="semantic", label="User prefers dark mode!")
        store.upsert_node(B, node_id="b1", layer="procedural", label="Deploys go out every Friday at noon")
        store.retract_node(A, "gone")
    with SQLiteGraphStore(db, label_index=True) as store:
        assert_index_holds_the_live_rows(store)
        assert node_id(lookup(store, A, "Prefers dark mode", gate="index")) == "n1"
        assert (
            node_id(lookup(store, B, "deploys go out every friday", layer="procedural", gate="index")) == "b1"
        )
        assert "gone" not in store.label_index(A, "semantic")  # type: ignore[operator]


def test_a_failed_transaction_leaves_nothing_in_the_index(tmp_path: Path) -> None:
    with SQLiteGraphStore(tmp_path / "m.sqlite", label_index=True) as store:
        store.upsert_node(A, node_id="kept", layer="semantic", label="Ann prefers dark mode everywhere")
        with pytest.raises(RuntimeError), store.transaction():
            store.upsert_node(A, node_id="rolled", layer="semantic", label="Ann lives in Lisbon, Portugal")
            store.insert_node(B, node_id="rolled-b", layer="procedural", label="Deploys go out every Friday")
            assert store.retract_node(A, "kept")
            assert node_id(lookup(store, A, "Ann lives in Lisbon, Portugal", gate="index")) == "rolled"
            assert lookup(store, A, "prefers dark mode everywhere", gate="index") is None
            raise RuntimeError("the caller failed mid-transaction")
        assert_index_holds_the_live_rows(store)
        assert lookup(store, A, "Ann lives in Lisbon, Portugal", gate="index") is None
        assert lookup(store, B, "Deploys go out every Friday", layer="procedural", gate="index") is None
        assert node_id(lookup(store, A, "prefers dark mode everywhere", gate="index")) == "kept"


def test_a_label_changed_in_place_is_relabelled_without_a_rebuild(tmp_path: Path) -> None:
    """An upsert that changes a live row's label in its layer relabels the index entry in place: the
    partition's index is the same object (not rebuilt), and the row keeps its place in store order."""
    with SQLiteGraphStore(tmp_path / "m.sqlite", label_index=True) as store:
        store.upsert_node(A, node_id="old", layer="semantic", label="Ann lives in Berlin")
        store.upsert_node(A, node_id="new", layer="semantic", label="Ann prefers dark mode everywhere")
        index = store.label_index(A, "semantic")
        assert index is not None
        store.upsert_node(A, node_id="old", layer="semantic", label="Ann prefers dark mode everywhere!")
        assert store.label_index(A, "semantic") is index
        assert [m.id for m in index.query("Ann prefers dark mode everywhere")] == ["old", "new"]
        assert node_id(lookup(store, A, "prefers dark mode everywhere", gate="index")) == "old"
        assert lookup(store, A, "Ann lives in Berlin", gate="index") is None
        assert_index_holds_the_live_rows(store)
        # Rolled back: the partition is rebuilt from the database, the old label back.
        with pytest.raises(RuntimeError), store.transaction():
            store.upsert_node(A, node_id="old", layer="semantic", label="Ann lives in Lisbon")
            assert node_id(lookup(store, A, "Ann lives in Lisbon", gate="index")) == "old"
            raise RuntimeError("the caller failed mid-transaction")
        assert lookup(store, A, "Ann lives in Lisbon", gate="index") is None
        assert node_id(lookup(store, A, "prefers dark mode everywhere", gate="index")) == "old"
        assert_index_holds_the_live_rows(store)
        # Another layer: the row moves partitions (rebuilt in store order).
        store.upsert_node(A, node_id="old", layer="procedural", label="Ann prefers dark mode everywhere!")
        assert node_id(lookup(store, A, "prefers dark mode everywhere", gate="index")) == "new"
        assert (
            node_id(lookup(store, A, "prefers dark mode everywhere", layer="procedural", gate="index"))
            == "old"
        )
        assert_index_holds_the_live_rows(store)


def test_a_failed_statement_changes_nothing(tmp_path: Path) -> None:
    with SQLiteGraphStore(tmp_path / "m.sqlite", label_index=True) as store:
        with pytest.raises(InvalidInputError):
            store.upsert_node(A, node_id="bad", layer="semantic", label="Ann prefers dark mode\ud800")
        # The database refuses a later statement of the transaction (as a turn's ledger entry may be):
        # the node written before it is rolled back, and so is its place in the index.
        with pytest.raises(StoreError), store.transaction():
            store.upsert_node(A, node_id="n1", layer="semantic", label="Ann prefers dark mode")
            store.add_ledger_entry(LedgerEntry(A.scope_path, "r1", "n1", "bogus", 1, "semantic", "x"))
        assert store.count_nodes() == 0
        assert_index_holds_the_live_rows(store)
        assert lookup(store, A, "Ann prefers dark mode", gate="index") is None


def test_another_connection_s_writes_are_seen(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite"
    with SQLiteGraphStore(db, label_index=True) as indexed, SQLiteGraphStore(db) as other:
        indexed.upsert_node(A, node_id="n1", layer="semantic", label="Ann prefers dark mode everywhere")
        assert node_id(lookup(indexed, A, "prefers dark mode everywhere", gate="index")) == "n1"
        other.upsert_node(A, node_id="n0", layer="semantic", label="User prefers dark mode")
        other.retract_node(A, "n1")
        assert node_id(lookup(indexed, A, "Prefers dark mode", gate="index")) == "n0"
        assert lookup(indexed, A, "prefers dark mode everywhere", gate="index") is None
        assert_index_holds_the_live_rows(indexed)


def test_label_index_is_refused_with_a_bad_value(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="label_index"):
        SQLiteGraphStore(tmp_path / "m.sqlite", label_index="yes")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------
# The oracle, on drawn sequences of writes, retractions and failed transactions
# ---------------------------------------------------------------------------------------------------
PHRASES = [
    "User prefers dark mode",
    "Prefers dark mode",
    "prefers dark mode in every editor",
    "User prefers light mode",
    "Lives in Berlin since 2019",
    "lives in berlin since 2019.",
    "The deploy runs every Friday at noon",
    "deploy runs every Friday",
    "The API timeout is 30 seconds",
    "The API timeout is 60 seconds",
    "Does not like coffee in the morning",
    "Likes coffee in the morning",
]

labels = st.one_of(
    st.sampled_from(PHRASES),
    st.builds(lambda a, b: f"{a} {b}", st.sampled_from(PHRASES), st.sampled_from(PHRASES)),
    st.sampled_from(PHRASES).map(lambda s: "  " + s.upper() + "!"),
)
scopes = st.sampled_from(SCOPES)
layers = st.sampled_from(LAYERS)
write = st.tuples(st.just("write"), scopes, layers, labels)
relabel = st.tuples(st.just("relabel"), st.integers(0, 40), layers, labels)
retract = st.tuples(st.just("retract"), st.integers(0, 40))
ops = st.lists(
    st.one_of(
        write,
        write,
        relabel,
        retract,
        st.tuples(st.just("failed"), st.lists(st.one_of(write, relabel, retract), min_size=1, max_size=4)),
    ),
    max_size=30,
)


def _apply(store: SQLiteGraphStore, op: tuple[Any, ...], ids: list[tuple[Scope, str]]) -> None:
    kind = op[0]
    if kind == "write":
        _, scope, layer, label = op
        id_ = f"n{len(ids)}"
        ids.append((scope, id_))
        store.upsert_node(scope, node_id=id_, layer=layer, label=label)
    elif kind == "relabel" and ids:
        scope, id_ = ids[op[1] % len(ids)]
        store.upsert_node(scope, node_id=id_, layer=op[2], label=op[3])
    elif kind == "retract" and ids:
        scope, id_ = ids[op[1] % len(ids)]
        store.retract_node(scope, id_)
    elif kind == "failed":
        try:
            with store.transaction():
                for inner in op[1]:
                    _apply(store, inner, ids)
                raise RuntimeError("rolled back")
        except RuntimeError:
            pass


@settings(max_examples=n_examples(60))
@given(
    ops=ops,
    queries=st.lists(
        st.tuples(scopes, layers, labels, st.sampled_from([None, "value,negation"])), max_size=8
    ),
)
def test_the_index_gate_equals_the_oracle(ops: list[Any], queries: list[Any]) -> None:
    with SQLiteGraphStore(":memory:", label_index=True) as store:
        ids: list[tuple[Scope, str]] = []
        for op in ops:
            _apply(store, op, ids)
            if op[0] == "write":
                # Every write is also asked about at once (the write path's question).
                _, scope, layer, label = op
                got = lookup(store, scope, label, layer=layer, gate="index")
                assert node_id(got) == oracle(store, scope, layer, label)
        assert_index_holds_the_live_rows(store)
        for scope, layer, label, guards in queries:
            got = lookup(store, scope, label, layer=layer, gate="index", guards=guards)
            assert node_id(got) == oracle(store, scope, layer, label, guards=guards)


# ---------------------------------------------------------------------------------------------------
# ingest --gate index
# ---------------------------------------------------------------------------------------------------
DANA = [{"kind": "org", "id": "acme"}, {"kind": "user", "id": "dana"}]


def _turn(number: int, label: str) -> dict[str, Any]:
    op = {
        "action": "upsert_node",
        "layer": "semantic",
        "label": label,
        "properties": {"memory_category": "preference", "subject": "user"},
        "importance": 6,
    }
    output = "```json\n" + json.dumps({"ops": [op]}) + "\n```"
    return {"scope": DANA, "turn": number, "messages": [], "output": output, "provider": "openai"}


RESTATED = [
    _turn(1, "Dana said at work that she prefers dark mode in every editor"),
    _turn(2, "Prefers dark mode in every editor"),
]


def test_ingest_with_the_index_gate_collapses_what_the_prefix_gate_writes(tmp_path: Path) -> None:
    prefix = ingest_turns(RESTATED, tmp_path / "prefix.sqlite")
    index = ingest_turns(RESTATED, tmp_path / "index.sqlite", gate="index")
    assert [r.outcome for r in prefix.records] == ["written", "written"]
    assert [r.outcome for r in index.records] == ["written", "restated"]  # terser: the text stays
    restated = index.records[1]
    assert restated.node_id == index.records[0].node_id and restated.match_kind == "containment"


def test_ingest_refuses_an_unknown_gate(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="gate"):
        ingest_turns(RESTATED, tmp_path / "m.sqlite", gate="fuzzy")
    assert not (tmp_path / "m.sqlite").exists()


def test_memdedup_ingest_gate_index_in_a_child_process(tmp_path: Path) -> None:
    turns = tmp_path / "turns.jsonl"
    turns.write_text("".join(json.dumps(t) + "\n" for t in RESTATED))
    prefix = cli_support.run("ingest", turns, "--db", tmp_path / "prefix.sqlite", "--json")
    index = cli_support.run("ingest", turns, "--db", tmp_path / "index.sqlite", "--json", "--gate", "index")
    assert prefix.status == 0 and index.status == 0, (prefix.err, index.err)
    assert json.loads(prefix.out)["counts"]["restated"] == 0
    report = json.loads(index.out)
    assert report["counts"]["restated"] == 1
    assert report["restated"][0]["match_kind"] == "containment"
    con = sqlite3.connect(tmp_path / "index.sqlite")
    try:
        assert con.execute("SELECT label, mentions FROM nodes WHERE layer = 'semantic'").fetchall() == [
            ("Dana said at work that she prefers dark mode in every editor", 2)
        ]
    finally:
        con.close()


def test_memdedup_ingest_refuses_an_unknown_gate_with_exit_2(tmp_path: Path) -> None:
    turns = tmp_path / "turns.jsonl"
    turns.write_text("".join(json.dumps(t) + "\n" for t in RESTATED))
    done = cli_support.run("ingest", turns, "--db", tmp_path / "m.sqlite", "--gate", "fuzzy")
    assert done.status == 2
    assert "--gate" in done.err and "fuzzy" in done.err
    assert "Traceback" not in done.err
    assert not (tmp_path / "m.sqlite").exists()
