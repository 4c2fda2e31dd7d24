"""The read side of :class:`~memdedup.integrations.langgraph.DedupStore`: ``search`` and
``list_namespaces`` answer as if superseded items and the wrapper's own namespace root were not there.

Every step here is a generator that yields a list of inner-store ops and receives their results, so one
piece of logic serves ``batch`` and ``abatch`` (the store's two drivers run it) and several reads of one
caller batch share each round trip (:func:`gather`).

How a window is answered
    1. The caller's op as given, and when ``offset > 0`` a probe of the items before the window
       (``offset=0, limit=offset``, no TTL refresh), in one round trip. When neither holds a hidden item,
       the caller's op's own answer is returned untouched: for data with nothing hidden the wrapped store
       answers exactly as the bare one, whatever its paging quirks (InMemoryStore fills a vector search
       with unscored items from the start whatever the offset; SqliteStore pages within ``2 * limit``
       nearest vectors).
    2. Otherwise the window is read from the start (``offset=0``, a growing ``limit``, no TTL refresh)
       until ``offset + limit`` visible entries are found or the store runs out, and sliced; the items
       returned then have their TTL refreshed as the caller asked (a ``GetOp`` each, only when the inner
       store supports TTL).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Sequence
from typing import Any, TypeVar

from langgraph.store.base import GetOp, ListNamespacesOp, Op, SearchItem, SearchOp

from memdedup.integrations._langgraph_values import RESERVED_ROOT, is_hidden

__all__ = ["Step", "gather", "list_namespaces", "search"]

T = TypeVar("T")
#: One step of a read or a batch: yields inner-store ops, receives their results, returns its answer.
Step = Generator[Sequence[Op], list[Any], T]
WindowOp = TypeVar("WindowOp", SearchOp, ListNamespacesOp)


def gather(steps: Sequence[Step[Any]]) -> Step[list[Any]]:
    """Run several steps side by side: each round trip carries what every unfinished step asks for, in
    order; the answer is each step's return value, in order."""
    done: list[Any] = [None] * len(steps)
    pending: dict[int, Sequence[Op]] = {}
    for n, step in enumerate(steps):
        try:
            pending[n] = next(step)
        except StopIteration as stop:
            done[n] = stop.value
    while pending:
        answers = yield [op for request in pending.values() for op in request]
        at = 0
        asked, pending = pending, {}
        for n, request in asked.items():
            part = answers[at : at + len(request)]
            at += len(request)
            try:
                pending[n] = steps[n].send(part)
            except StopIteration as stop:
                done[n] = stop.value
    return done


def _plain(op: SearchOp | ListNamespacesOp) -> bool:
    """A window the wrapper can reason about: integer, non-negative offset and limit."""
    return type(op.offset) is int and type(op.limit) is int and op.offset >= 0 and op.limit >= 0


def _window(
    op: WindowOp,
    hidden: Callable[[Any], bool],
    *,
    probe: WindowOp,
    from_start: Callable[[int], WindowOp],
    select: Callable[[list[Any], bool], list[Any] | None] | None = None,
) -> Step[tuple[list[Any], bool]]:
    """The visible entries of ``op``'s window, and whether they were read from the start (step 2).
    ``select(visible, exhausted)`` picks the window from the visible entries read from the start, or says
    (None) that more must be read; by default ``visible[offset:offset + limit]``."""
    if not _plain(op):
        answers = yield [op]
        return [entry for entry in answers[0] if not hidden(entry)], False
    before: list[Any] = []
    if op.offset == 0:
        page: list[Any] = (yield [op])[0]
    else:
        before, page = yield [probe, op]
    if not any(hidden(entry) for entry in before) and not any(hidden(entry) for entry in page):
        return list(page), False
    want = op.offset + op.limit

    def sliced(visible: list[Any], exhausted: bool) -> list[Any] | None:
        return visible[op.offset : want] if len(visible) >= want or exhausted else None

    pick = select or sliced
    # Read enough at once for the share of hidden entries seen so far (each read from the start costs a
    # whole query: with a filter, InMemoryStore scans every item of the prefix each time).
    seen = len(before) + len(page)
    share = sum(1 for entry in [*before, *page] if hidden(entry)) / seen if seen else 0.0
    asked = max(want, 1) + math.ceil(max(want, 1) * min(share, 0.9) / (1 - min(share, 0.9))) + 8
    while True:
        answers = yield [from_start(asked)]
        raw = answers[0]
        kept = [entry for entry in raw if not hidden(entry)]
        found = pick(kept, len(raw) < asked)
        if found is not None:
            return found, True
        asked = 2 * asked + (len(raw) - len(kept))


def _vector_window(op: SearchOp) -> Callable[[list[SearchItem], bool], list[SearchItem] | None]:
    """The window of a vector search, as InMemoryStore fills it: the scored items ``[offset:offset +
    limit]``, then unscored ones (items with no vector) from the first, up to ``limit``. The stores that
    return only scored items (SqliteStore, PostgresStore) answer the same by this rule."""
    want = op.offset + op.limit

    def select(visible: list[SearchItem], exhausted: bool) -> list[SearchItem] | None:
        scored = [item for item in visible if item.score is not None]
        unscored = [item for item in visible if item.score is None]
        page = scored[op.offset : want]
        if len(scored) >= want:
            return page
        if not (unscored or exhausted):  # the scored items come first: not all of them seen yet
            return None
        fill = op.limit - len(page)
        if len(unscored) >= fill or exhausted:
            return page + unscored[:fill]
        return None

    return select


def search(op: SearchOp, *, refresh_supported: bool, vector: bool) -> Step[list[SearchItem]]:
    """``op``'s answer with superseded items and the wrapper's namespace root left out. ``vector``: the
    inner store ranks this op by vector similarity (it has an index and ``op`` a query)."""
    if tuple(op.namespace_prefix[:1]) == (RESERVED_ROOT,):
        return []

    def hidden(item: SearchItem) -> bool:
        return is_hidden(item.namespace, item.value)

    found, from_start = yield from _window(
        op,
        hidden,
        probe=op._replace(offset=0, limit=op.offset, refresh_ttl=False),
        from_start=lambda limit: op._replace(offset=0, limit=limit, refresh_ttl=False),
        select=_vector_window(op) if vector else None,
    )
    if from_start and op.refresh_ttl and refresh_supported and found:
        # The window was read without refreshing (it read past what it returns): refresh what it returns.
        yield [GetOp(item.namespace, item.key, refresh_ttl=True) for item in found]
    return found


def list_namespaces(op: ListNamespacesOp) -> Step[list[tuple[str, ...]]]:
    """``op``'s answer without the wrapper's namespace root."""

    def hidden(namespace: tuple[str, ...]) -> bool:
        return tuple(namespace[:1]) == (RESERVED_ROOT,)

    found, _from_start = yield from _window(
        op,
        hidden,
        probe=op._replace(offset=0, limit=op.offset),
        from_start=lambda limit: op._replace(offset=0, limit=limit),
    )
    return found
