"""End to end: transcript rows written by ``memdedup ingest`` are recalled from the SQLite store and
``memdedup.window`` drops exactly the copies of turns the window renders, in the window's own conversation."""

from __future__ import annotations

import asyncio
from pathlib import Path

from memdedup.ingest import ingest_file
from memdedup.recall import recall
from memdedup.scope import Scope
from memdedup.store import SQLiteGraphStore
from memdedup.window import REPEATED_REASON, RetrievalResult, WindowTurn, outside_window, recalled_from_node

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "turns.jsonl"
ORG = Scope.root("org", "acme")
DANA = ORG.child("user", "dana")
# The window shows Dana's turn 2 (both speakers) and only the user's side of turn 1.
SHOWN = {(2, "user"), (2, "assistant"), (1, "user")}


def test_store_backed_recall_drops_only_window_copies(tmp_path: Path) -> None:
    db = tmp_path / "memory.sqlite"
    first = ingest_file(EXAMPLE, db)
    assert first.transcript_rows > 0
    again = ingest_file(EXAMPLE, db)
    assert again.transcript_rows == 0  # re-running writes no transcript row twice

    with SQLiteGraphStore(db) as store:
        episodic = asyncio.run(store.query_nodes(DANA, layer="episodic"))
        semantic = asyncio.run(store.query_nodes(DANA, layer="semantic"))
    transcript = [n for n in episodic if n.properties.get("source") == "transcript"]
    own = [n for n in transcript if n.scope_path == DANA.scope_path]
    ancestor = [n for n in transcript if n.scope_path == ORG.scope_path]
    assert own, "ingest should have stored Dana's messages as transcript rows"
    # The org's transcript is visible from Dana's scope, and has a turn 1 of its own.
    assert any(n.properties["turn_id"] == 1 for n in ancestor)
    assert all({"turn_id", "speaker"} <= n.properties.keys() for n in transcript)

    turns = [
        WindowTurn(n.properties["turn_id"], n.properties["speaker"], n.label)
        for n in own
        if (n.properties["turn_id"], n.properties["speaker"]) in SHOWN
    ]
    recalled = [recalled_from_node(n) for n in transcript + semantic]
    result = RetrievalResult(memories=tuple(recalled))
    memories, linked, dropped = outside_window(result, turns, char_ceiling=10_000, scope=DANA)

    dropped_ids = {record_id for record_id, _ in dropped}
    expected = {n.id for n in own if (n.properties["turn_id"], n.properties["speaker"]) in SHOWN}
    assert dropped_ids == expected and len(expected) == 3
    assert all(reason == REPEATED_REASON for _, reason in dropped)
    kept_ids = {item.record.record_id for item in memories}
    # Semantic memories stay even when they restate a window turn; other turns' copies stay, and so does
    # every row of the ancestor's conversation, whatever its turn numbers.
    assert {n.id for n in semantic} <= kept_ids
    assert {n.id for n in ancestor} <= kept_ids
    assert kept_ids | dropped_ids == {item.record.record_id for item in recalled}
    assert linked == ()

    # The same in one call: the store's recall renders the window first and never repeats it.
    with SQLiteGraphStore(db) as store:
        block = store.recall(DANA, turns, char_ceiling=100_000)
        assert block == recall(store, DANA, turns, char_ceiling=100_000)
        uncollapsed = store.recall(DANA, turns, char_ceiling=100_000, collapse=False)
    assert {record_id for record_id, _ in uncollapsed.dropped} == expected
    assert {record_id for record_id, reason in block.dropped if reason == REPEATED_REASON} == expected
    # The other drops are restatements among the memories themselves (tests/test_recall_collapse.py).
    assert all(reason.startswith("restates ") for _, reason in block.dropped if reason != REPEATED_REASON)
    assert block.text.startswith("\n".join(turn.line() for turn in turns))
    for node in ancestor:
        assert node.id in block.admitted
    assert not set(block.admitted) & expected
