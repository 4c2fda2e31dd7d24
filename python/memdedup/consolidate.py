"""Consolidate a store that already holds duplicates: the rule of :mod:`memdedup.facts` applied to the rows
a store kept before it was on (or written with another threshold, or through the prefix gate, which misses
restatements that reword the first 20 characters).

For each owning scope and each deduplicated layer (semantic and procedural, as ingest: the other layers are
append-only), the live rows are taken in store order, with no prefix gate (every earlier current row is a
candidate, as ``batch.replay(prefix="none")`` decides): each row against the current rows before it, the
first that is the same fact (the match contract at ``threshold`` and ``min_chars``, then ``guards``),
with that row's current text as the stored side. A row that is the same fact as an earlier current row
becomes a revision of it, never deleted: *restated* (its text equal to or inside the current one: the
current text stays) or *updated* (its text becomes the earlier row's current text, the previous one a
revision); the later row is retracted, its reason naming the row it went into
(:meth:`memdedup.store.SQLiteGraphStore.merge`). An update changes what later rows are compared with, as
it would have at write time.

Passes repeat until one merges nothing: an update can make a current row restate an earlier one it did
not restate before, and a second ``--apply`` must change nothing. The plan is computed from the file
alone, so the dry run (the default) and ``apply=True`` merge exactly the same rows, in the same order;
``apply=True`` writes one transaction per scope.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from memdedup._backend import IMPLEMENTATION
from memdedup._backend import impl as _impl
from memdedup._rules import DEDUP_SIMILARITY_THRESHOLD, DEDUP_SUBSUME_MIN_CHARS
from memdedup.batch import join as _join
from memdedup.facts import RESTATED, UPDATED, facts_match
from memdedup.guards import Guards, as_guards, guards_allow
from memdedup.operations import DEDUP_LAYERS
from memdedup.progress import Progress
from memdedup.scope import Scope, readable_scope_path
from memdedup.store import SQLiteGraphStore

__all__ = ["ConsolidationReport", "Merge", "consolidate", "plan"]


@dataclass(frozen=True)
class _Owner:
    """The owner of a row as the store's writes read it: its stored ``scope_path`` (any path a store holds,
    a legacy one included)."""

    scope_path: str


_LAYERS = frozenset(layer.value for layer in DEDUP_LAYERS)
#: Rows looked up at once in the first pass (see ``_Partition._first_pass``).
_BATCH = 16
#: Partitions of at least this many rows take their first pass from the join (``_first_pass_joined``).
_JOIN_MIN = 2
#: Partitions of at least this many rows show their join as a phase (``phases``).
_SPINNER_MIN = 10_000


@dataclass(frozen=True)
class Merge:
    """One row folded into an earlier one: ``merged_id`` (whose text is ``text``) into ``node_id`` (whose
    current text was ``current``), as ``kind`` (``restated`` or ``updated``), by ``rule`` with the exact
    ``score`` (the normalised texts' ratio, the earlier row's current text first); ``change`` is what the
    guard detectors see changed; ``round`` the pass that found it (1 first)."""

    scope_path: str
    layer: str
    node_id: str
    merged_id: str
    kind: str
    rule: str
    score: float
    change: str
    current: str
    text: str
    round: int = 1

    @property
    def scope(self) -> str:
        return readable_scope_path(self.scope_path)

    @property
    def reason(self) -> str:
        """``ratio 0.972; value 5432 -> 6543``, ``containment (ratio 0.640)``."""
        why = f"ratio {self.score:.3f}" if self.rule == "ratio" else f"{self.rule} (ratio {self.score:.3f})"
        return f"{why}; {self.change}" if self.change else why

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["scope"] = self.scope
        data["reason"] = self.reason
        return data


@dataclass
class ConsolidationReport:
    """What :func:`consolidate` found (and, when ``applied``, wrote): every merge, in the order applied."""

    database: str
    applied: bool
    threshold: float
    min_chars: int
    guards: str
    scopes: int = 0
    rows: int = 0
    merges: list[Merge] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {
            "scopes": self.scopes,
            "rows": self.rows,
            "merges": len(self.merges),
            "restated": sum(1 for m in self.merges if m.kind != UPDATED),
            "updated": sum(1 for m in self.merges if m.kind == UPDATED),
            "rounds": max((m.round for m in self.merges), default=0),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "database": self.database,
            "applied": self.applied,
            "threshold": self.threshold,
            "min_chars": self.min_chars,
            "guards": self.guards,
            "counts": self.counts(),
            "merges": [m.to_dict() for m in self.merges],
        }


@dataclass(frozen=True)
class _Row:
    """What consolidation reads of a live row."""

    id: str
    layer: str
    label: str
    stated: int


class _Partition:
    """The consolidation of one partition's live rows (store order): :meth:`merges`.

    Rows are named by their position in store order; the core's index holds them under insertion numbers
    (one partition; performance: the wrapper's id maps and partition keys cost as much as the queries
    here, ``benches/bench_consolidate.py``)."""

    def __init__(
        self,
        scope_path: str,
        rows: list[_Row],
        threshold: float,
        min_chars: int,
        guards: Guards,
        phases: Progress | None = None,
    ) -> None:
        self.scope_path, self.rows, self.phases = scope_path, rows, phases
        self.text = [row.label for row in rows]
        self.stated = [row.stated for row in rows]
        self.threshold, self.min_chars, self.guards = threshold, min_chars, guards
        #: The current rows under their current texts, in store order (an update relabels a row in place).
        self.index = _impl.LabelIndex(min_chars)
        self.number: dict[int, int] = {}  # position -> insertion number in ``index``
        self.position: dict[int, int] = {}  # insertion number -> position
        #: Rows whose text changed since the pass before.
        self.changed: set[int] = set()

    def _matches(
        self, index: Any, row_of: dict[int, int], at: int, *, first: bool = False
    ) -> list[tuple[int, str, float]]:
        """The entries of ``index`` (insertion numbers, oldest first; ``row_of`` names their rows) that row
        ``at``'s current text restates, under the contract and the guards; with ``first``, the oldest."""
        text = self.text[at]
        found = index.query(
            text, 0, threshold=self.threshold, min_chars=self.min_chars, first=first and not self.guards
        )
        if self.guards:
            found = [m for m in found if guards_allow(self.text[row_of[m[0]]], text, self.guards)]
            found = found[:1] if first else found
        return found  # type: ignore[no-any-return]

    def decide(
        self, at: int, round_: int, found: list[tuple[int, str, float]] | None = None
    ) -> tuple[Merge, int] | None:
        """Fold row ``at`` into the first current row before it that it is the same fact as, if any: the
        merge and the position of the row it went into. The index keeps every current row (an earlier
        pass's later rows too) in store order, so its first match is the oldest: one at or after ``at``
        means none before it. ``found``: that first match, when the caller decided it already."""
        if found is None:
            found = self._matches(self.index, self.position, at, first=True)
        if not found or self.position[found[0][0]] >= at:
            return None
        number, rule, score = found[0]
        return self._fold(at, self.position[number], rule, score, round_)

    def _fold(self, at: int, into: int, rule: str, score: float, round_: int) -> tuple[Merge, int]:
        """Row ``at`` folded into the current row ``into`` before it, which it restates by ``rule`` with
        ``score``: the merge (restated or updated by :func:`memdedup.facts.facts_match`; an older statement
        never replaces a newer one) and ``into``."""
        text, stated = self.text[at], self.stated[at]
        fact = facts_match(self.text[into], text, rule, score)
        newer = stated > self.stated[into]
        kind, change = (fact.kind, fact.change) if newer else (RESTATED, "stated before the current text")
        row, target = self.rows[at], self.rows[into]
        merge = Merge(
            self.scope_path, row.layer, target.id, row.id, kind, fact.rule, fact.score, change,
            self.text[into], text, round_,
        )  # fmt: skip
        self.stated[into] = max(self.stated[into], stated)
        if kind == UPDATED:
            self.text[into] = text
            if into in self.number:
                self.index.relabel(self.number[into], text)  # its place in store order is kept
            self.changed.add(into)
        return merge, into

    def merges(self, advance: Callable[[int], None]) -> Iterator[Merge]:
        """Pass after pass until a pass merges nothing.

        The first pass visits every row against the rows before it, adding each to the index as it goes.
        A later pass can change the answer only for a row whose own text changed, or that a text changed
        since its last check now matches from an earlier row: it re-decides exactly those (found through a
        small index of the changed texts, kept up to date within the pass), and leaves every other row as
        the pass before left it."""
        joined = IMPLEMENTATION == "rust" and not self.guards and len(self.rows) >= _JOIN_MIN
        current = yield from (self._first_pass_joined(advance) if joined else self._first_pass(advance))
        round_ = 1
        while self.changed:
            round_ += 1
            recent, self.changed = self.changed, set()
            changed = _Changed(self, recent)
            survivors: list[int] = []
            for at in current:
                if at not in recent and not changed.before(at):
                    survivors.append(at)
                    continue
                decided = self.decide(at, round_)
                if decided is None:
                    survivors.append(at)
                    continue
                merge, into = decided
                self.index.remove(self.number.pop(at))
                yield merge
                if merge.kind == UPDATED:
                    changed.add(into)  # an earlier row's text changed in this pass: later rows check it
            current = survivors

    def _first_pass(self, advance: Callable[[int], None]) -> Generator[Merge, None, list[int]]:
        """Every row against the current rows before it, in store order; the rows that stay current. The
        first pass of a partition with guards, or on the pure-Python backend (else
        :meth:`_first_pass_joined`, which answers the same).

        Performance: the index's queries are most of the time (a scan of the length window), and they
        release the GIL, so the rows of a batch are looked up on two threads at once against the index as
        it stood when the batch began (841,708 labels in one scope: 130 s looked up one row at a time,
        117 s in batches of 16 on two threads; docs/perf.md). The batch's answers are then made exact one
        row at a time: a row's first match is the oldest of the looked-up match (when its text has not
        changed since) and of the batch's own changes before it (rows inserted or relabelled since the
        batch began), decided in one call into the core; when the looked-up match itself was relabelled,
        the row is looked up again.
        """
        current: list[int] = []
        n = len(self.rows)
        pool = (
            ThreadPoolExecutor(2, thread_name_prefix="memdedup-consolidate")
            if IMPLEMENTATION == "rust"
            else None
        )
        try:
            for start in range(0, n, _BATCH):
                batch = range(start, min(n, start + _BATCH))

                def first(at: int) -> list[tuple[int, str, float]]:
                    return self._matches(self.index, self.position, at, first=True)

                looked_up = list(pool.map(first, batch)) if pool is not None else [None] * len(batch)
                since: dict[int, None] = {}  # rows inserted or relabelled since the batch began, in order
                for at, found in zip(batch, looked_up, strict=True):
                    advance(1)
                    if found is not None:
                        found = self._with_changes_since(at, found, since)
                    decided = self.decide(at, 1, found)
                    if decided is None:
                        number = int(self.index.insert(self.text[at], 0))
                        self.number[at], self.position[number] = number, at
                        current.append(at)
                        since[at] = None
                    else:
                        merge, into = decided
                        if merge.kind == UPDATED:
                            since[into] = None
                        yield merge
        finally:
            if pool is not None:
                pool.shutdown()
        return current

    def _first_pass_joined(self, advance: Callable[[int], None]) -> Generator[Merge, None, list[int]]:
        """The first pass of :meth:`_first_pass`, answered from the exact all-pairs join of the partition's
        texts (:func:`memdedup.batch.join`, on groups of identical texts) instead of one index query a row;
        then the index of the rows that stay current, for the passes after.

        Why it is the same answer: in the first pass a current row's text is the text some row before the
        one being decided came in with (an update gives the earlier row the later row's text), so row
        ``k``'s first match is the oldest current row holding a text of a group the join pairs with
        ``k``'s group (stored side first). Each group keeps a heap of the current rows holding one of its
        texts; a row an update moved to another group is dropped from its old heap when met.

        Performance: 841,708 PyPI labels in one scope on this project's 2-core machine, in one session:
        134 s with the queried first pass, 67 s joined, half of it the join (docs/perf.md,
        ``benches/bench_consolidate.py``).
        """
        # The join is one call into the core: a spinner while it runs, for a partition it takes seconds on.
        shown = self.phases if len(self.rows) >= _SPINNER_MIN else None
        try:
            joined = _join(
                self.text, threshold=self.threshold, min_chars=self.min_chars, expand=False, progress=shown
            )
        except MemoryError:
            # A low threshold can pair most groups with most others: the queried pass answers the same
            # in memory that does not grow with the pairs.
            return (yield from self._first_pass(advance))
        group: list[int] = joined.group.tolist()
        pairs = joined.pairs
        # For each incoming group h, the stored groups g with (g, h) in the join: stored[bounds[h]:
        # bounds[h + 1]], kept as an array (a list would cost ~36 bytes a pair; a low threshold makes
        # hundreds of millions of pairs) and read a row's slice at a time.
        by_incoming = pairs[np.argsort(pairs[:, 1], kind="stable")] if len(pairs) else pairs
        stored = np.ascontiguousarray(by_incoming[:, 0])
        ngroups = int(joined.group.max()) + 1 if len(group) else 0
        bounds: list[int] = np.searchsorted(by_incoming[:, 1], np.arange(ngroups + 1)).tolist()
        del pairs, by_incoming, joined
        heaps: dict[int, list[int]] = {}
        held = group[:]  # the group of each current row's text
        current: list[int] = []
        for k in range(len(self.rows)):
            advance(1)
            h, best = group[k], -1
            lo, hi = bounds[h], bounds[h + 1]
            for g in stored[lo:hi].tolist() if hi > lo else ():
                heap = heaps.get(g)
                while heap and held[heap[0]] != g:
                    heapq.heappop(heap)
                if heap and (best < 0 or heap[0] < best):
                    best = heap[0]
            if best < 0:
                heapq.heappush(heaps.setdefault(h, []), k)
                current.append(k)
                continue
            reason = _impl.match_reason(
                self.text[best], self.text[k], threshold=self.threshold, min_chars=self.min_chars
            )
            if reason is None:  # the join and the contract disagree: a bug, never a silent wrong merge
                raise RuntimeError(f"consolidate: the join paired rows {best} and {k}, the contract does not")
            merge, into = self._fold(k, best, str(reason[0]), float(reason[1]), 1)
            if merge.kind == UPDATED:
                held[into] = h
                heapq.heappush(heaps.setdefault(h, []), into)
            yield merge
        if current:  # one call into the core; insertion numbers follow the first, in store order
            first = int(self.index.insert_many([self.text[at] for at in current], [0] * len(current)))
            for number, at in enumerate(current, first):
                self.number[at], self.position[number] = number, at
        return current

    def _with_changes_since(
        self, at: int, found: list[tuple[int, str, float]], since: dict[int, None]
    ) -> list[tuple[int, str, float]] | None:
        """Row ``at``'s first match now, from the one looked up when its batch began (``found``) and the
        rows changed since (``since``); None when it must be looked up again."""
        if found and self.position[found[0][0]] in since:
            return None  # the looked-up match's text changed: the next one in the index may be the answer
        limit = self.position[found[0][0]] if found else at
        text = self.text[at]
        for p in sorted(p for p in since if p < limit):  # the oldest changed row that matches comes first
            reason = _impl.match_reason(
                self.text[p], text, threshold=self.threshold, min_chars=self.min_chars
            )
            if reason is not None and (not self.guards or guards_allow(self.text[p], text, self.guards)):
                return [(self.number[p], str(reason[0]), float(reason[1]))]
        answer = found
        return answer


class _Changed:
    """The texts of a partition that changed since a row was last decided, each under its row's position:
    a row whose text none of them restates from before it keeps the answer it had."""

    def __init__(self, partition: _Partition, rows: Iterable[int]) -> None:
        self.partition = partition
        self.index = _impl.LabelIndex(partition.min_chars)
        self.row_of: dict[int, int] = {}  # insertion number -> position
        self.entry_of: dict[int, int] = {}  # position -> insertion number
        for at in rows:
            self.add(at)

    def add(self, at: int) -> None:
        """Row ``at``'s text (changed) is one of them now."""
        text = self.partition.text[at]
        if at in self.entry_of:
            self.index.relabel(self.entry_of[at], text)
        else:
            number = int(self.index.insert(text, 0))
            self.entry_of[at], self.row_of[number] = number, at

    def before(self, at: int) -> bool:
        """Whether a changed text of a row before ``at`` is restated by row ``at``'s text."""
        return any(
            self.row_of[number] < at for number, _, _ in self.partition._matches(self.index, self.row_of, at)
        )


def plan(
    store: SQLiteGraphStore,
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    guards: Guards | str | Iterable[str] | None = None,
    scope: Any = None,
    progress: Callable[[int], None] | None = None,
    phases: Progress | None = None,
) -> tuple[list[Merge], int, int]:
    """Every merge :func:`consolidate` would make on ``store`` (nothing written), with the number of scopes
    and of rows considered. ``scope`` (a scope in any form :meth:`Scope.coerce` reads) limits it to the
    rows that scope owns. ``progress`` and ``phases``: as :func:`consolidate` takes them."""
    parsed = as_guards(guards)
    paths = [Scope.coerce(scope).scope_path] if scope is not None else store.scope_paths()
    advance = progress or (lambda _n: None)
    merges: list[Merge] = []
    rows_seen = 0
    for path in paths:
        partitions: dict[str, list[_Row]] = {}
        for node_id, layer, label, origin, stated in store.live_texts(path):
            if layer in _LAYERS and origin != "transcript":
                partitions.setdefault(layer, []).append(_Row(node_id, layer, label, stated))
        for rows in partitions.values():
            rows_seen += len(rows)
            merges.extend(_Partition(path, rows, threshold, min_chars, parsed, phases).merges(advance))
    return merges, len(paths), rows_seen


def consolidate(
    db: str | os.PathLike[str] | SQLiteGraphStore,
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    guards: Guards | str | Iterable[str] | None = None,
    scope: Any = None,
    apply: bool = False,
    progress: Callable[[int], None] | None = None,
    phases: Progress | None = None,
) -> ConsolidationReport:
    """Find (and with ``apply=True`` make) the merges of a store that holds duplicates (see the module
    docstring). ``db`` is a path (opened read-only for a dry run: an older file is read as it is, never
    migrated) or an open store. ``progress`` is called with 1 per row considered in the first pass;
    ``phases`` (a :class:`memdedup.progress.Progress`) shows the long calls into the core of a large
    partition (its join) while ``progress`` cannot move."""
    if not isinstance(apply, bool):
        raise TypeError(f"apply must be True or False, not {type(apply).__name__}")
    store = db if isinstance(db, SQLiteGraphStore) else SQLiteGraphStore(db, readonly=not apply)
    try:
        merges, scopes, rows = plan(
            store,
            threshold=threshold,
            min_chars=min_chars,
            guards=guards,
            scope=scope,
            progress=progress,
            phases=phases,
        )
        if apply:
            _apply(store, merges)
        return ConsolidationReport(
            database=store.path,
            applied=apply,
            threshold=float(threshold),
            min_chars=int(min_chars),
            guards=str(as_guards(guards)),
            scopes=scopes,
            rows=rows,
            merges=merges,
        )
    finally:
        if store is not db:
            store.close()


def _apply(store: SQLiteGraphStore, merges: list[Merge]) -> None:
    """Make ``merges`` (in order), one transaction per scope."""
    by_scope: dict[str, list[Merge]] = {}
    for merge in merges:
        by_scope.setdefault(merge.scope_path, []).append(merge)
    for scope_path, scoped in by_scope.items():
        owner = _Owner(scope_path)
        with store.transaction():
            for merge in scoped:
                store.merge(owner, merge.node_id, merge.merged_id, kind=merge.kind, reason=merge.reason)
