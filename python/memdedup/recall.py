"""The recall path, top to bottom: the memory block a scope recalls, without the conversation window's own
turns (the seed's window contract, in one call).

:func:`recall` (also :meth:`memdedup.store.SQLiteGraphStore.recall`) runs three steps:

1. **select**: the rows ``scope`` sees (its own and its ancestors', never a sibling's), not retracted, in
   the store's order (oldest first), optionally of one ``layer`` and at most ``limit`` of them
   (:meth:`~memdedup.store.SQLiteGraphStore.query`);
2. **identify**: each row becomes a recalled item that keeps its properties (``turn_id``, ``speaker``,
   ``source`` for a transcript row) and its owning scope path (:func:`memdedup.window.recalled_from_node`);
3. **render**: the window leads the block and the recalled items follow, admitted greedily under
   ``char_ceiling`` (and ``max_bytes``) (:func:`memdedup.window.render_block`). A recalled transcript row
   is dropped when it is the same utterance as a window turn the block renders: same conversation (the
   row is owned by ``scope``, unless the window turn names another ``scope_path``), same ``turn_id``,
   same ``speaker``. An ancestor's transcript is another conversation: its turn 1 is not this window's
   turn 1, so it stays.

The window is the caller's: :class:`memdedup.window.WindowTurn` objects (``turn_id``, ``speaker``,
``text``; or mappings with those keys), in the order the block shows them. Ranking is not this
module's: the block follows the store's order; filter or order the rows yourself and call
:func:`memdedup.window.render_block` with ``scope=`` for anything else.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from memdedup.window import (
    BlockReport,
    RecalledItem,
    RetrievalResult,
    WindowTurn,
    recalled_from_node,
    render_block,
)

__all__ = ["Recall", "recall"]


@dataclass(frozen=True)
class Recall:
    """A rendered memory block: ``text`` (the window's admitted lines, then the memories'), ``report``
    (what happened to every line) and ``memories`` (every item selected, before the window filter)."""

    text: str
    report: BlockReport
    memories: tuple[RecalledItem, ...]

    def __str__(self) -> str:
        return self.text

    def __contains__(self, text: str) -> bool:
        return text in self.text

    @property
    def dropped(self) -> tuple[tuple[str, str], ...]:
        """``(record_id, reason)`` of each recalled copy of a window turn the block renders."""
        return self.report.dropped

    @property
    def admitted(self) -> tuple[str, ...]:
        """The record ids the block renders, in order."""
        return self.report.admitted


def recall(
    store: Any,
    scope: Any,
    window: Iterable[Any] = (),
    *,
    char_ceiling: int | None = None,
    max_bytes: int | None = None,
    layer: Any = None,
    limit: int | None = None,
) -> Recall:
    """The memory block ``scope`` recalls from ``store``, led by ``window``, without the window's own turns
    (see the module docstring). ``char_ceiling=None`` admits every line."""
    if char_ceiling is None:
        char_ceiling = sys.maxsize
    turns = [WindowTurn(**turn) if isinstance(turn, Mapping) else turn for turn in window]
    # 1. select
    nodes = store.query(scope, layer=layer, limit=limit)
    # 2. identify
    memories = tuple(recalled_from_node(node) for node in nodes)
    # 3. render, the window's own turns removed
    text, report = render_block(
        turns,
        RetrievalResult(memories=memories),
        char_ceiling=char_ceiling,
        max_bytes=max_bytes,
        scope=scope,
    )
    return Recall(text, report, memories)
