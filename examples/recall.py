"""Ingest the bundled turns, then recall Dana's memory block with her last exchange in the window.

    python examples/recall.py [DB]      (default: a temporary file)

The window shows Dana's turn 7; the block that follows it carries her memories and the transcript of her
earlier turns, and the organisation's (an ancestor's) transcript, whose turn numbers are its own: Dana's
turn 7 copies are left out, because the window already shows them, and so is each memory that restates
a more salient one (Dana's copy of the organisation's production region, say).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from memdedup.ingest import ingest_file
from memdedup.scope import Scope
from memdedup.store import SQLiteGraphStore
from memdedup.window import REPEATED_REASON, WindowTurn

HERE = Path(__file__).resolve().parent


def main(db: Path) -> None:
    ingest_file(HERE / "turns.jsonl", db)
    dana = Scope.root("org", "acme").child("user", "dana")
    with SQLiteGraphStore(db) as store:
        last = [n for n in store.query(dana, layer="episodic") if n.properties.get("turn_id") == 7]
        window = [WindowTurn(n.properties["turn_id"], n.properties["speaker"], n.label) for n in last]
        block = store.recall(dana, window, char_ceiling=2_000)
    print(block.text)
    repeats = sum(reason == REPEATED_REASON for _, reason in block.dropped)
    print(
        f"\n({len(block.admitted)} memories rendered; left out as repeats of the window: {repeats}, "
        f"as restatements of another memory: {len(block.dropped) - repeats})"
    )


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp) / "memory.sqlite")
