"""The recall path, top to bottom: the memory block a scope recalls, each fact once in its current form,
without the conversation window's own turns (the seed's window contract, in one call).

:func:`recall` (also :meth:`memdedup.store.SQLiteGraphStore.recall`) runs five steps:

1. **select**: the rows ``scope`` sees (its own and its ancestors', never a sibling's), not retracted, in
   the store's order (oldest first), optionally of one ``layer`` and at most ``limit`` of them
   (:meth:`~memdedup.store.SQLiteGraphStore.query`); ``scope`` is a :class:`~memdedup.scope.Scope`, its
   printed form (``"org:acme/user:dana"``) or a list of ``(kind, id)`` pairs (:meth:`Scope.coerce`);
2. **identify**: each row becomes a recalled item that keeps its properties (``turn_id``, ``speaker``,
   ``source`` for a transcript row), its owning scope path, its salience and its statement counter
   (:func:`memdedup.window.recalled_from_node`);
3. **collapse** (``collapse=True``, the default): among the selected items, each group of restatements
   keeps one memory, the nearest scope's (the user's own over the org's), then the most recently stated
   one; the others are dropped, each reported as ``(record_id, "restates <kept id> (<rule> <ratio>)")``.
   Restating is write-time dedup's contract (``memdedup.labels_match`` with ``threshold``, ``min_chars``
   and ``guards``, the library's defaults: 0.85, 16, off), the older row the stored side; across scopes
   and layers (:func:`memdedup.collapse.collapse_restatements` states the rule). So a fact that changed
   shows its newest value, never a stale one however important it was. A recalled copy of a window turn
   the block renders stands first (the window is the conversation now): its restatements go with it,
   and the fact shows once, in the window. It does not depend on the ceilings otherwise;
4. **rank**: the kept items in order of salience (descending), then the most recently stated first, then
   the store's order; transcript rows compete as items with their stored salience. Salience decides what
   fits the ceiling, never which version of a fact is true;
5. **render**: the window leads the block and the ranked items follow, admitted greedily under
   ``char_ceiling`` (and ``max_bytes``) in that order, and rendered in the order admitted
   (:func:`memdedup.window.render_block`). A recalled transcript row is dropped when it is the same
   utterance as a window turn the block renders: same conversation (the row is owned by ``scope``,
   unless the window turn names another ``scope_path``), same ``turn_id``, same ``speaker``. An
   ancestor's transcript is another conversation: its turn 1 is not this window's turn 1, so it stays.

The window is the caller's: :class:`memdedup.window.WindowTurn` objects (``turn_id``, ``speaker``,
``text``; or mappings with those keys), in the order the block shows them. For another ranking, call
:func:`memdedup.collapse.collapse_restatements` and :func:`memdedup.window.render_block` with ``scope=``
yourself.

The report lists the collapse's drops first, then the window filter's, each in the store's order.
``Recall.memories`` holds every item selected, before either filter, in the store's order.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from memdedup._rules import DEDUP_SIMILARITY_THRESHOLD, DEDUP_SUBSUME_MIN_CHARS
from memdedup.collapse import check_options, collapse_restatements, item_nearness, item_salience
from memdedup.errors import InputTypeError
from memdedup.guards import Guards
from memdedup.scope import Scope
from memdedup.window import (
    BlockReport,
    RecalledItem,
    RetrievalResult,
    WindowTurn,
    outside_window,
    recalled_from_node,
    render_block,
)

__all__ = ["Recall", "recall"]


@dataclass(frozen=True)
class Recall:
    """A rendered memory block: ``text`` (the window's admitted lines, then the memories'), ``report``
    (what happened to every line) and ``memories`` (every item selected, before the collapse and the
    window filter)."""

    text: str
    report: BlockReport
    memories: tuple[RecalledItem, ...]

    def __str__(self) -> str:
        return self.text

    def __contains__(self, text: str) -> bool:
        return text in self.text

    @property
    def dropped(self) -> tuple[tuple[str, str], ...]:
        """``(record_id, reason)`` of each restatement the collapse dropped, then of each recalled copy of
        a window turn the block renders."""
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
    collapse: bool = True,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    guards: Guards | str | Iterable[str] | None = None,
) -> Recall:
    """The memory block ``scope`` recalls from ``store``, led by ``window``, each restatement among the
    memories collapsed (``collapse=False``: none) and without the window's own turns (see the module
    docstring). ``char_ceiling=None`` admits every line; ``threshold``, ``min_chars`` and ``guards`` are
    the collapse's (``memdedup.labels_match``'s)."""
    if not isinstance(collapse, bool):
        raise InputTypeError(f"collapse must be a bool, not {type(collapse).__name__}")
    if collapse:
        guards = check_options(threshold, min_chars, guards)
    if char_ceiling is None:
        char_ceiling = sys.maxsize
    turns = [WindowTurn(**turn) if isinstance(turn, Mapping) else turn for turn in window]
    scope = Scope.coerce(scope)
    # 1. select
    nodes = store.query(scope, layer=layer, limit=limit)
    # 2. identify
    memories = tuple(recalled_from_node(node) for node in nodes)
    # 3. collapse restatements among the memories: the nearest scope's, then the most recently stated
    shown: tuple[RecalledItem, ...] = memories
    collapsed: tuple[tuple[str, str], ...] = ()
    if collapse:
        # A copy of a window turn the block renders stands before every other memory (the window is the
        # conversation now): its restatements go with it, and the block shows the fact once, in the window.
        _, _, copies = outside_window(
            RetrievalResult(memories=memories),
            turns,
            char_ceiling=char_ceiling,
            max_bytes=max_bytes,
            scope=scope,
        )
        in_window = {record_id for record_id, _ in copies}
        result = collapse_restatements(
            memories,
            threshold=threshold,
            min_chars=min_chars,
            guards=guards,
            age=_stated,
            nearness=lambda item: (item.record.record_id in in_window, item_nearness(item)),
        )
        shown, collapsed = result.kept, result.dropped
    # 4. rank: salience, then the most recently stated, then store order
    position = {id(item): k for k, item in enumerate(shown)}
    ranked = sorted(shown, key=lambda item: (-item_salience(item), -_stated(item), position[id(item)]))
    # 5. render, the window's own turns removed
    text, report = render_block(
        turns,
        RetrievalResult(memories=tuple(ranked)),
        char_ceiling=char_ceiling,
        max_bytes=max_bytes,
        scope=scope,
    )
    return Recall(text, replace(report, dropped=collapsed + report.dropped), memories)


def _stated(item: RecalledItem) -> int:
    """The store's statement counter of a recalled row (higher is more recently stated)."""
    return int(getattr(item.record, "stated", 0) or 0)
