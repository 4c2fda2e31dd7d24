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

from memdedup.dedup import DEDUP_SIMILARITY_THRESHOLD, DEDUP_SUBSUME_MIN_CHARS
from memdedup.facts import RESTATED, UPDATED, facts_match
from memdedup.guards import Guards, as_guards
from memdedup.index import LabelIndex
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


def _rounds(
    rows: list[StoredNode],
    *,
    threshold: float,
    min_chars: int,
    guards: Guards,
    advance: Callable[[int], None],
) -> Iterator[Merge]:
    """The merges of one partition's live rows (store order), pass after pass until a pass merges nothing.

    A row folded into an earlier one updates it only when it was stated after the earlier row's current
    text (the store's statement counter): a row visited later in store order may hold an older statement
    (the earlier row was restated since), and an older statement never replaces a newer one."""
    current = [(row.id, row.label, row.stated) for row in rows]
    round_ = 0
    while True:
        round_ += 1
        index = LabelIndex(threshold=threshold, min_chars=min_chars)
        text_of: dict[str, str] = {}
        stated_of: dict[str, int] = {}
        kept: list[str] = []
        merged = 0
        for node_id, text, stated in current:
            match = index.first_match(text, threshold=threshold, min_chars=min_chars, guards=guards or None)
            if round_ == 1:
                advance(1)
            if match is None:
                index.insert(text, node_id)
                text_of[node_id], stated_of[node_id] = text, stated
                kept.append(node_id)
                continue
            into = str(match.id)
            fact = facts_match(text_of[into], text, match.reason, match.score)
            newer = stated > stated_of[into]
            kind, change = (fact.kind, fact.change) if newer else (RESTATED, "stated before the current text")
            merged += 1
            yield Merge(
                rows[0].scope_path,
                rows[0].layer,
                into,
                node_id,
                kind,
                fact.rule,
                fact.score,
                change,
                text_of[into],
                text,
                round_,
            )
            stated_of[into] = max(stated_of[into], stated)
            if kind == UPDATED:
                text_of[into] = text
                _relabel(index, into, kept, text_of)
        if not merged:
            return
        current = [(node_id, text_of[node_id], stated_of[node_id]) for node_id in kept]


def _relabel(index: LabelIndex, node_id: str, kept: list[str], text_of: dict[str, str]) -> None:
    """The row ``node_id``'s current text is ``text_of[node_id]`` now, in its place in store order."""
    relabel = getattr(index, "relabel", None)
    if relabel is not None:
        relabel(node_id, text_of[node_id])
        return
    # No in-place relabel in this build: rebuild the partition's index in order (same answers, slower).
    for k in kept:
        index.remove(k)
    for k in kept:
        index.insert(text_of[k], k)


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
            merges.extend(
                _rounds(rows, threshold=threshold, min_chars=min_chars, guards=parsed, advance=advance)
            )
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
