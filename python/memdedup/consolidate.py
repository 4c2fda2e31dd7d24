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

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from memdedup._rules import DEDUP_SIMILARITY_THRESHOLD, DEDUP_SUBSUME_MIN_CHARS
from memdedup.facts import RESTATED, UPDATED, facts_match
from memdedup.guards import Guards, as_guards
from memdedup.index import IndexMatch, LabelIndex
from memdedup.operations import DEDUP_LAYERS
from memdedup.scope import Scope, readable_scope_path
from memdedup.store import SQLiteGraphStore, StoredNode

__all__ = ["ConsolidationReport", "Merge", "consolidate", "plan"]


@dataclass(frozen=True)
class _Owner:
    """The owner of a row as the store's writes read it: its stored ``scope_path`` (any path a store holds,
    a legacy one included)."""

    scope_path: str


_LAYERS = frozenset(layer.value for layer in DEDUP_LAYERS)


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


class _Partition:
    """The consolidation of one partition's live rows (store order): :meth:`merges`."""

    def __init__(self, rows: list[StoredNode], threshold: float, min_chars: int, guards: Guards) -> None:
        self.rows = rows
        self.position = {row.id: k for k, row in enumerate(rows)}
        self.text_of = {row.id: row.label for row in rows}
        self.stated_of = {row.id: row.stated for row in rows}
        self.threshold, self.min_chars, self.guards = threshold, min_chars, guards or None
        #: The current rows under their current texts, in store order (an update relabels a row in place).
        self.index = self._index()
        #: Rows whose text changed since the pass before: their new text.
        self.changed: dict[str, str] = {}

    def _index(self) -> LabelIndex:
        return LabelIndex(threshold=self.threshold, min_chars=self.min_chars)

    def _first_before(self, among: LabelIndex, node_id: str) -> IndexMatch | None:
        """The oldest entry of ``among`` (entries in store order) that ``node_id``'s current text
        restates, when it comes before ``node_id`` in store order; else None (the oldest match is
        ``node_id`` itself or a later row: nothing before it matches)."""
        found = among.first_match(
            self.text_of[node_id], threshold=self.threshold, min_chars=self.min_chars, guards=self.guards
        )
        if found is None or self.position[str(found.id)] >= self.position[node_id]:
            return None
        return found

    def _any_before(self, among: LabelIndex, node_id: str) -> bool:
        """Whether an entry of ``among`` (in any order) that ``node_id``'s current text restates comes
        before ``node_id`` in store order."""
        found = among.query(
            self.text_of[node_id], threshold=self.threshold, min_chars=self.min_chars, guards=self.guards
        )
        return any(self.position[str(m.id)] < self.position[node_id] for m in found)

    def decide(self, node_id: str, round_: int) -> Merge | None:
        """Fold ``node_id`` into the first current row before it that it is the same fact as, if any."""
        match = self._first_before(self.index, node_id)
        if match is None:
            return None
        into = str(match.id)
        text, stated = self.text_of[node_id], self.stated_of[node_id]
        fact = facts_match(self.text_of[into], text, match.reason, match.score)
        newer = stated > self.stated_of[into]
        kind, change = (fact.kind, fact.change) if newer else (RESTATED, "stated before the current text")
        first = self.rows[0]
        merge = Merge(
            first.scope_path, first.layer, into, node_id, kind, fact.rule, fact.score, change,
            self.text_of[into], text, round_,
        )  # fmt: skip
        self.stated_of[into] = max(self.stated_of[into], stated)
        if kind == UPDATED:
            self.text_of[into] = text
            self.index.relabel(into, text)  # its place in store order is kept
            self.changed[into] = text
        return merge

    def merges(self, advance: Callable[[int], None]) -> Iterator[Merge]:
        """Pass after pass until a pass merges nothing.

        The first pass visits every row against the rows before it, adding each to the index as it goes.
        A later pass can change the answer only for a row whose own text changed, or that a text changed
        since its last check now matches from an earlier row: it re-decides exactly those (found through a
        small index of the changed texts, kept up to date within the pass), and leaves every other row as
        the pass before left it. The index keeps every current row (an earlier pass's later rows too): a
        row's candidates are the matches before it, and its first match is the oldest, so a first match
        at or after the row means none before it."""
        current: list[str] = []
        for row in self.rows:
            advance(1)
            merge = self.decide(row.id, 1)
            if merge is None:
                self.index.insert(row.label, row.id)
                current.append(row.id)
            else:
                yield merge
        round_ = 1
        while self.changed:
            round_ += 1
            recent, self.changed = self.changed, {}
            flags = self._index()
            for node_id, text in recent.items():
                flags.insert(text, node_id)
            survivors: list[str] = []
            for node_id in current:
                if node_id not in recent and not self._any_before(flags, node_id):
                    survivors.append(node_id)
                    continue
                merge = self.decide(node_id, round_)
                if merge is None:
                    survivors.append(node_id)
                    continue
                self.index.remove(node_id)
                yield merge
                if merge.kind == UPDATED:
                    # An earlier row's text changed in this pass: the rows after it are checked against it.
                    if merge.node_id in flags:
                        flags.relabel(merge.node_id, self.text_of[merge.node_id])
                    else:
                        flags.insert(self.text_of[merge.node_id], merge.node_id)
            current = survivors


def plan(
    store: SQLiteGraphStore,
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    guards: Guards | str | Iterable[str] | None = None,
    scope: Any = None,
    progress: Callable[[int], None] | None = None,
) -> tuple[list[Merge], int, int]:
    """Every merge :func:`consolidate` would make on ``store`` (nothing written), with the number of scopes
    and of rows considered. ``scope`` (a scope in any form :meth:`Scope.coerce` reads) limits it to the
    rows that scope owns."""
    parsed = as_guards(guards)
    paths = [Scope.coerce(scope).scope_path] if scope is not None else store.scope_paths()
    advance = progress or (lambda _n: None)
    merges: list[Merge] = []
    rows_seen = 0
    for path in paths:
        partitions: dict[str, list[StoredNode]] = {}
        for node in store.owned_nodes(path):
            if node.layer in _LAYERS and node.origin != "transcript":
                partitions.setdefault(node.layer, []).append(node)
        for rows in partitions.values():
            rows_seen += len(rows)
            merges.extend(_Partition(rows, threshold, min_chars, parsed).merges(advance))
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
) -> ConsolidationReport:
    """Find (and with ``apply=True`` make) the merges of a store that holds duplicates (see the module
    docstring). ``db`` is a path (opened read-only for a dry run: an older file is read as it is, never
    migrated) or an open store. ``progress`` is called with 1 per row considered in the first pass."""
    if not isinstance(apply, bool):
        raise TypeError(f"apply must be True or False, not {type(apply).__name__}")
    store = db if isinstance(db, SQLiteGraphStore) else SQLiteGraphStore(db, readonly=not apply)
    try:
        merges, scopes, rows = plan(
            store, threshold=threshold, min_chars=min_chars, guards=guards, scope=scope, progress=progress
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
