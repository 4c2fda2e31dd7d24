"""The store keeps every version of a fact: restatements and updates, the revisions they leave, the
statement counter recall ranks by, consolidation's merge, and the migration of a version-1 file."""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from memdedup.errors import InvalidInputError
from memdedup.scope import Scope
from memdedup.store import SCHEMA_VERSION, SQLiteGraphStore, StoreError

ORG = Scope.root("org", "acme")
DANA = ORG.child("user", "dana")
V1 = Path(__file__).parent / "data" / "store-v1.db"
"""A store written by memdedup before schema version 2 (the bundled example ingested, one row retracted)."""


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with SQLiteGraphStore(tmp_path / "m.sqlite") as opened:
        yield opened


def write(store: SQLiteGraphStore, node_id: str, label: str, *, scope: Scope = DANA, **fields: Any) -> Any:
    node, _ = store.upsert_node(
        scope, node_id=node_id, layer=fields.pop("layer", "semantic"), label=label, **fields
    )
    return node


def kinds_and_texts(store: SQLiteGraphStore, node_id: str, scope: Scope = DANA) -> list[tuple[str, str]]:
    return [(h.kind, h.text) for h in store.history(scope, node_id)]


# --- restated and updated ------------------------------------------------------------------------------


def test_an_update_makes_the_new_text_current_and_keeps_the_old_one(store: SQLiteGraphStore) -> None:
    first = write(store, "port", "Dana's staging database port is 5432", turn=1, importance=9, salience=0.9)
    updated = store.update_text(
        DANA, "port", text="Dana's staging database port is 6543", reason="ratio 0.972; value 5432 -> 6543",
        turn=7, importance=4, salience=0.4,
    )  # fmt: skip
    assert updated.label == "Dana's staging database port is 6543"
    # The row keeps its id, owner, layer, place and first-seen time; importance and salience the higher.
    assert (updated.id, updated.scope_path, updated.layer, updated.seq) == (
        "port",
        DANA.scope_path,
        "semantic",
        first.seq,
    )
    assert updated.created_at == first.created_at and updated.mentions == 2
    assert (updated.importance, updated.salience) == (9, 0.9)
    assert (
        updated.last_turn == 7 and updated.stated > first.stated and updated.last_stated >= first.last_stated
    )
    history = store.history(DANA, "port")
    assert [(h.kind, h.text, h.reason, h.turn) for h in history] == [
        ("updated", "Dana's staging database port is 5432", "ratio 0.972; value 5432 -> 6543", 7),
        ("current", "Dana's staging database port is 6543", "", 7),
    ]


def test_a_restatement_keeps_the_text_and_records_a_different_wording(store: SQLiteGraphStore) -> None:
    write(store, "n", "Dana is training for a half marathon in Valencia this December", turn=1)
    node = store.restate(DANA, "n", text="Dana is training for a half marathon", reason="containment", turn=2)
    assert (
        node.label == "Dana is training for a half marathon in Valencia this December" and node.mentions == 2
    )
    same = store.restate(DANA, "n", text=node.label, turn=3)  # the very same text: nothing to keep
    assert same.mentions == 3 and same.last_turn == 3
    assert kinds_and_texts(store, "n") == [
        ("restated", "Dana is training for a half marathon"),
        ("current", "Dana is training for a half marathon in Valencia this December"),
    ]


def test_an_upsert_that_changes_a_label_keeps_a_revision(store: SQLiteGraphStore) -> None:
    write(store, "n", "Dana's default shell is zsh")
    write(store, "n", "Dana's default shell is zsh")  # the same label: no revision
    write(store, "n", "Dana's default shell is fish")
    assert kinds_and_texts(store, "n") == [
        ("updated", "Dana's default shell is zsh"),
        ("current", "Dana's default shell is fish"),
    ]
    assert store.history(DANA, "n")[0].reason == "upsert"


def test_purge_history_forgets_the_earlier_texts_only(store: SQLiteGraphStore) -> None:
    write(store, "n", "Dana's default shell is zsh")
    write(store, "n", "Dana's default shell is fish")
    write(store, "m", "Dana's editor is Helix")
    write(store, "m", "Dana's editor is Neovim")
    assert store.purge_history(DANA, "n") == 1
    assert kinds_and_texts(store, "n") == [("current", "Dana's default shell is fish")]
    assert kinds_and_texts(store, "m")[0] == ("updated", "Dana's editor is Helix")  # another row's stays
    assert store.purge_history(ORG, "n") == 0  # only the owner's


def test_the_statement_counter_orders_every_statement_of_the_file(store: SQLiteGraphStore) -> None:
    a = write(store, "a", "fact a")
    b = write(store, "b", "fact b", scope=ORG)
    restated = store.restate(DANA, "a")
    c = write(store, "c", "fact c")
    assert a.stated < b.stated < restated.stated < c.stated


def test_only_the_owner_changes_a_row(store: SQLiteGraphStore) -> None:
    write(store, "org-fact", "The on-call shift is 24 hours", scope=ORG)
    for change in (
        lambda: store.update_text(DANA, "org-fact", text="The on-call shift is 6 hours"),
        lambda: store.restate(DANA, "org-fact"),
    ):
        with pytest.raises(InvalidInputError, match="owns no node"):
            change()
    assert store.owned_node(ORG, "org-fact").label == "The on-call shift is 24 hours"
    assert store.history(DANA, "org-fact") == []


def test_a_failed_update_leaves_no_revision(store: SQLiteGraphStore) -> None:
    write(store, "n", "Dana's default shell is zsh")
    with pytest.raises(InvalidInputError):
        store.update_text(
            DANA, "n", text="Dana's shell is \ud800"
        )  # not storable: the whole update rolls back
    assert kinds_and_texts(store, "n") == [("current", "Dana's default shell is zsh")]


def test_merge_folds_a_later_row_into_an_earlier_one(store: SQLiteGraphStore) -> None:
    write(store, "a", "Dana's staging database port is 5432", turn=1, salience=0.2)
    write(store, "b", "Dana's staging database port is 6543", turn=5, salience=0.8)
    write(store, "c", "Dana's staging database port is 6543.", turn=6)
    merged = store.merge(DANA, "a", "b", kind="updated", reason="ratio 0.972; value 5432 -> 6543")
    assert merged.label == "Dana's staging database port is 6543" and merged.mentions == 2
    assert merged.salience == 0.8 and merged.last_turn == 5
    again = store.merge(DANA, "a", "c", kind="restated", reason="ratio 1.000")
    assert again.label == "Dana's staging database port is 6543" and again.mentions == 3
    assert kinds_and_texts(store, "a") == [
        ("updated", "Dana's staging database port is 5432"),
        ("restated", "Dana's staging database port is 6543."),
        ("current", "Dana's staging database port is 6543"),
    ]
    b = store.owned_node(DANA, "b")
    assert b.retracted and b.retraction_reason.startswith("consolidated into a: updated")
    assert [n.id for n in store.query(DANA)] == ["a"]
    with pytest.raises(InvalidInputError):
        store.merge(DANA, "a", "b", kind="updated", reason="")  # b is no longer live


# --- the schema, the migration and read-only opening ------------------------------------------------------


def test_a_new_file_has_the_current_schema_and_a_readable_view(
    store: SQLiteGraphStore, tmp_path: Path
) -> None:
    write(store, "n", "Dana prefers dark mode")
    store.close()
    with sqlite3.connect(tmp_path / "m.sqlite") as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
            str(SCHEMA_VERSION),
        )
        assert conn.execute("SELECT scope, id, text FROM memories").fetchall() == [
            ("org:acme/user:dana", "n", "Dana prefers dark mode")
        ]


def v1_copy(tmp_path: Path) -> Path:
    path = tmp_path / "old.sqlite"
    shutil.copyfile(V1, path)
    return path


def v1_rows(path: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    with closing(sqlite3.connect(path)) as conn:
        nodes = conn.execute(
            "SELECT seq, id, scope_path, layer, label, properties, mentions, created_at, retracted_at "
            "FROM nodes ORDER BY seq"
        ).fetchall()
        ledger = conn.execute(
            "SELECT scope_path, record_id, node_id, outcome, turn, text FROM ledger ORDER BY 1, 2"
        ).fetchall()
    return nodes, ledger


def test_a_version_1_file_migrates_in_place_with_a_backup_and_keeps_every_row(tmp_path: Path) -> None:
    path = v1_copy(tmp_path)
    nodes, ledger = v1_rows(path)
    assert {row[3] for row in ledger} == {"written", "collapsed"} and nodes
    with SQLiteGraphStore(path) as store:
        assert store.migrated_from == f"{path}.bak-v1"
        assert store.count_nodes() == len(nodes)
        # Every row, as it was; a collapse kept the stored text, so it reads as a restatement now.
        assert v1_rows(path)[0] == nodes
        assert [e.outcome for e in store.ledger()] == [
            "restated" if row[3] == "collapsed" else row[3] for row in ledger
        ]
        dana = [n for n in store.all_nodes() if n.scope_path == DANA.scope_path]
        assert all(n.scope == "org:acme/user:dana" and n.last_stated for n in dana)
        assert len({n.stated for n in store.all_nodes()}) == len(nodes)  # one count each, in time order
        mentioned = next(n for n in dana if n.mentions == 2)
        assert mentioned.last_turn == 3  # the ledger's latest turn for it
        # The migrated file takes the new statements.
        store.update_text(DANA, mentioned.id, text="Dana prefers dark mode in every editor and terminal")
        assert store.history(DANA, mentioned.id)[0].kind == "updated"
    # The backup is the version-1 file, whole.
    assert v1_rows(Path(f"{path}.bak-v1")) == (nodes, ledger)
    with closing(sqlite3.connect(f"{path}.bak-v1")) as conn:
        assert conn.execute("SELECT value FROM meta").fetchone() == ("1",)
    # Opening it again migrates nothing and copies nothing.
    with SQLiteGraphStore(path) as again:
        assert again.migrated_from is None
    assert sorted(p.name for p in tmp_path.iterdir() if ".bak" in p.name) == ["old.sqlite.bak-v1"]


def test_a_read_only_open_reads_a_version_1_file_without_writing(tmp_path: Path) -> None:
    path = v1_copy(tmp_path)
    before = path.read_bytes()
    nodes, _ = v1_rows(path)
    with SQLiteGraphStore(path, readonly=True) as store:
        assert store.schema_version == 1
        rows = store.all_nodes()
        assert [(n.seq, n.label) for n in rows] == [(row[0], row[4]) for row in nodes]
        assert sorted(n.stated for n in rows) == list(range(1, len(rows) + 1))
        some = next(n for n in rows if not n.retracted and n.scope_path == DANA.scope_path)
        assert [h.kind for h in store.history(DANA, some.id)] == ["current"]
        assert store.recall(DANA).text  # recall reads it too
        with pytest.raises(StoreError, match="read-only"):
            store.upsert_node(DANA, node_id="x", layer="semantic", label="a new fact")
    assert path.read_bytes() == before
    assert not Path(f"{path}.bak-v1").exists()


def test_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite"
    SQLiteGraphStore(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    for readonly in (False, True):
        with pytest.raises(StoreError, match="schema version"):
            SQLiteGraphStore(path, readonly=readonly)


def test_read_only_needs_an_existing_file(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no such file"):
        SQLiteGraphStore(tmp_path / "missing.sqlite", readonly=True)
    assert not (tmp_path / "missing.sqlite").exists()
