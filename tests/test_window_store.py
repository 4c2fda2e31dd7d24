"""End to end: transcript rows written by ``memdedup ingest`` are recalled from the SQLite store and
``memdedup.window`` drops exactly the copies of turns the window renders."""

from __future__ import annotations

import asyncio
from pathlib import Path

from memdedup.ingest import ingest_file
from memdedup.scope import Scope
from memdedup.store import SQLiteGraphStore
from memdedup.window import REPEATED_REASON, RetrievalResult, WindowTurn, outside_window, recalled_from_node

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "turns.jsonl"


def test_store_backed_recall_drops_only_window_copies(tmp_path: Path) -> None:
    db = tmp_path / "memory.sqlite"
    first = ingest_file(EXAMPLE, db)
    assert first.transcript_rows > 0
    again = ingest_file(EXAMPLE, db)
    assert again.transcript_rows == 0  # re-running writes no transcript row twice

    dana = Scope.root("org", "acme").child("user", "dana")
    with SQLiteGraphStore(db) as store:
        episodic = asyncio.run(store.query_nodes(dana, layer="episodic"))
        semantic = asyncio.run(store.query_nodes(dana, layer="semantic"))
    # Dana's own conversation: the ancestor's (org-level) transcript is another conversation, whose
    # turn ids would collide with Dana's (identity is (turn_id, speaker) within one conversation).
    transcript = [
        n for n in episodic if n.properties.get("source") == "transcript" and n.scope_path == dana.scope_path
    ]
    assert transcript, "ingest should have stored Dana's messages as transcript rows"
    assert all({"turn_id", "speaker"} <= n.properties.keys() for n in transcript)

    # The window shows Dana's turn 2 (both speakers) and only the user's side of turn 1.
    shown = {(2, "user"), (2, "assistant"), (1, "user")}
    turns = [
        WindowTurn(n.properties["turn_id"], n.properties["speaker"], n.label)
        for n in transcript
        if (n.properties["turn_id"], n.properties["speaker"]) in shown
    ]
    recalled = [recalled_from_node(n) for n in transcript + semantic]
    result = RetrievalResult(memories=tuple(recalled))
    memories, linked, dropped = outside_window(result, turns, char_ceiling=10_000)

    dropped_ids = {record_id for record_id, _ in dropped}
    expected = {n.id for n in transcript if (n.properties["turn_id"], n.properties["speaker"]) in shown}
    assert dropped_ids == expected and len(expected) == 3
    assert all(reason == REPEATED_REASON for _, reason in dropped)
    kept_ids = {item.record.record_id for item in memories}
    # Semantic memories stay even when they restate a window turn; other turns' copies stay.
    assert {n.id for n in semantic} <= kept_ids
    assert kept_ids | dropped_ids == {item.record.record_id for item in recalled}
    assert linked == ()
