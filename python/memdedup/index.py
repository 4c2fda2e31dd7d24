"""An exact, incremental candidate index: every stored label the match contract accepts against an incoming
one, with no prefix gate.

:class:`LabelIndex` keeps labels under ids the caller chooses, partitioned by ``scope`` and ``layer``
(nothing matches across partitions). :meth:`LabelIndex.query` returns every live label of the
partition that ``labels_match(stored, incoming)`` accepts, oldest first (insertion order, so the first
match is the one the seed's store order would reach first), each with its reason (``"ratio"`` or
``"containment"``) and the exact ratio (stored first). The answer is exactly what deciding every
stored label would give; the core prunes with lossless filters only (the length bound, character
histograms, the LCS bound, a substring index for containment).

    >>> index = LabelIndex()
    >>> index.insert("User prefers dark mode in every editor", "n1")
    >>> index.insert("Lives in Berlin", "n2")
    >>> [m.id for m in index.query("prefers dark mode in every editor")]
    ['n1']

The index lives in memory; :meth:`LabelIndex.build` rebuilds one from rows in one parallel call.
Reads are thread-safe: queries release the GIL and run concurrently; a write waits for them.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Hashable, Iterable, Sequence
from typing import Any, NamedTuple

from memdedup._backend import impl as _impl
from memdedup._rules import DEDUP_SIMILARITY_THRESHOLD, DEDUP_SUBSUME_MIN_CHARS, check_min_chars
from memdedup._rules import comparable as _comparable
from memdedup._rules import partition_key as _partition_key
from memdedup.errors import InvalidInputError
from memdedup.guards import Guards, as_guards, guards_allow
from memdedup.missing import is_missing

__all__ = ["IndexMatch", "LabelIndex"]

#: A slot with no id here: retracted, used up by a failed write, or written by one still running.
_VACANT: Any = object()


class IndexMatch(NamedTuple):
    """A stored label that matches: its ``id``, why (``"ratio"`` or ``"containment"``), and the exact
    ratio of the normalised labels, stored first."""

    id: Hashable
    reason: str
    score: float


class LabelIndex:
    """Labels under ids, partitioned by ``(scope, layer)``; exact queries under the match contract.

    ``threshold`` and ``min_chars`` are the defaults of :meth:`query` (0.85 and 16, the seed's). The
    core tunes its containment filter for ``min_chars``; a query with a smaller ``min_chars`` is still
    exact, only slower.
    """

    def __init__(
        self,
        *,
        threshold: float = DEDUP_SIMILARITY_THRESHOLD,
        min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    ) -> None:
        _comparable(threshold, min_chars)
        self.threshold = threshold
        self.min_chars = check_min_chars(min_chars)
        self._core = _impl.LabelIndex(self.min_chars)
        self._slot_of: dict[Hashable, int] = {}
        # By slot (the core numbers insertions from 0); a removed slot keeps its place.
        self._id_of: list[Any] = []
        self._label_of: list[Any] = []
        # Writes are one at a time (the id checks and the slot lists change together); reads take no
        # lock: a slot the core returns before its write is recorded here is skipped (`_VACANT`).
        self._writing = threading.Lock()
        self._partitions: dict[Any, int] = {}

    # -- partitions and ids

    def _partition_of(self, scope: Hashable, layer: Hashable) -> int | None:
        """The partition number of ``(scope, layer)``, None when nothing was ever stored there."""
        return self._partitions.get((_partition_key(scope, "scope"), _partition_key(layer, "layer")))

    def _partition(self, scope: Hashable, layer: Hashable) -> int:
        """The partition number of ``(scope, layer)``, made when new."""
        key = (_partition_key(scope, "scope"), _partition_key(layer, "layer"))
        return self._partitions.setdefault(key, len(self._partitions))

    @staticmethod
    def _check_id(id: Hashable) -> None:
        try:
            hash(id)
        except TypeError:
            raise InvalidInputError(f"an id must be hashable, not {type(id).__name__}") from None

    # -- writes

    def insert(self, label: Any, id: Hashable, *, scope: Hashable = None, layer: Hashable = None) -> None:
        """Store ``label`` under ``id`` (an id already stored is refused: :meth:`remove` it first)."""
        self._check_id(id)
        with self._writing:
            if id in self._slot_of:
                raise InvalidInputError(f"id {id!r} is already in the index")
            partition = self._partition(scope, layer)
            slot = self._core.insert(label, partition)
            self._record(slot, [id], [label])

    def insert_many(
        self,
        labels: Sequence[Any],
        ids: Sequence[Hashable],
        *,
        scopes: Sequence[Hashable] | None = None,
        layers: Sequence[Hashable] | None = None,
    ) -> None:
        """Store many labels at once (prepared in parallel): ``labels[k]`` under ``ids[k]``, in order."""
        labels, ids = list(labels), list(ids)
        n = len(labels)
        for name, column in (("ids", ids), ("scopes", scopes), ("layers", layers)):
            if column is not None and len(column) != n:
                raise InvalidInputError(f"{name} has {len(column)} entries but there are {n} labels")
        with self._writing:
            self._insert_many(labels, ids, scopes, layers)

    def _insert_many(
        self,
        labels: list[Any],
        ids: list[Hashable],
        scopes: Sequence[Hashable] | None,
        layers: Sequence[Hashable] | None,
    ) -> None:
        n = len(labels)
        seen: set[Hashable] = set()
        for id in ids:
            self._check_id(id)
            if id in self._slot_of or id in seen:
                raise InvalidInputError(f"id {id!r} is already in the index")
            seen.add(id)
        if scopes is None and layers is None:
            partitions = [self._partition(None, None)] * n
        else:
            scope_column: list[Hashable] = list(scopes) if scopes is not None else [None] * n
            layer_column: list[Hashable] = list(layers) if layers is not None else [None] * n
            partitions = self._partitions_of(scope_column, layer_column)
        first = self._core.insert_many(labels, partitions)
        self._record(first, ids, labels)

    def _record(self, first: int, ids: list[Hashable], labels: list[Any]) -> None:
        """``ids[k]`` and ``labels[k]`` at slot ``first + k`` (slots a failed core call used up stay
        vacant)."""
        end = first + len(ids)
        missing = end - len(self._id_of)
        if missing > 0:
            self._id_of.extend([_VACANT] * missing)
            self._label_of.extend([_VACANT] * missing)
        self._label_of[first:end] = labels
        self._id_of[first:end] = ids
        self._slot_of.update(zip(ids, range(first, end), strict=True))

    def _partitions_of(self, scopes: list[Hashable], layers: list[Hashable]) -> list[int]:
        """The partition numbers of many rows: each distinct (type, value) pair is keyed once."""
        memo: dict[Any, int] = {}
        out = []
        for scope, layer in zip(scopes, layers, strict=True):
            try:
                raw = (type(scope), scope, type(layer), layer)
                found = memo.get(raw)
            except TypeError:  # unhashable: _partition refuses it with the reason
                raw, found = None, None
            if found is None:
                found = self._partition(scope, layer)
                if raw is not None:
                    memo[raw] = found
            out.append(found)
        return out

    @classmethod
    def build(
        cls,
        labels: Sequence[Any],
        ids: Sequence[Hashable] | None = None,
        *,
        scopes: Sequence[Hashable] | None = None,
        layers: Sequence[Hashable] | None = None,
        threshold: float = DEDUP_SIMILARITY_THRESHOLD,
        min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    ) -> LabelIndex:
        """An index of ``labels`` (under ``ids``, default ``0..n-1``), in one call."""
        index = cls(threshold=threshold, min_chars=min_chars)
        index.insert_many(labels, range(len(labels)) if ids is None else ids, scopes=scopes, layers=layers)
        return index

    def remove(self, id: Hashable) -> bool:
        """Retract ``id``: it matches nothing from now on. False when it was not stored."""
        self._check_id(id)
        with self._writing:
            slot = self._slot_of.pop(id, None)
            if slot is None:
                return False
            self._core.remove(slot)
            self._id_of[slot] = self._label_of[slot] = _VACANT  # the caller's objects are no longer held
            return True

    # -- reads

    def query(
        self,
        label: Any,
        *,
        scope: Hashable = None,
        layer: Hashable = None,
        threshold: float | None = None,
        min_chars: int | None = None,
        guards: Guards | str | Iterable[str] | None = None,
        first: bool = False,
    ) -> list[IndexMatch]:
        """Every stored label of ``(scope, layer)`` that ``labels_match(stored, label)`` accepts, oldest
        first, with its reason and exact ratio. ``guards`` (off by default) also drops a match that
        :func:`memdedup.guards.guards_allow` blocks. ``first=True`` stops at the first (oldest) match."""
        threshold = self.threshold if threshold is None else threshold
        min_chars = self.min_chars if min_chars is None else check_min_chars(min_chars)
        _comparable(threshold, min_chars)
        parsed = as_guards(guards) if guards is not None else None
        partition = self._partition_of(scope, layer)
        if partition is None:
            # No such partition: nothing can match, but the label is still refused as the core would.
            _impl.normalise_label(label if not is_missing(label) else "")
            return []
        guarded = parsed is not None and bool(parsed)
        found = self._core.query(
            label, partition, threshold=threshold, min_chars=min_chars, first=first and not guarded
        )
        out = []
        for slot, reason, score in found:
            found_id = self._id_of[slot] if slot < len(self._id_of) else _VACANT
            if found_id is _VACANT:
                continue  # stored by a write that has not returned yet (or failed)
            if guarded and not guards_allow(self._label_of[slot], label, parsed):
                continue
            out.append(IndexMatch(found_id, reason, score))
            if first:
                break
        return out

    def first_match(self, label: Any, **kwargs: Any) -> IndexMatch | None:
        """The oldest match of :meth:`query` (same arguments), or None."""
        found = self.query(label, first=True, **kwargs)
        return found[0] if found else None

    def label(self, id: Hashable) -> Any:
        """The label stored under ``id`` (``KeyError`` when none is)."""
        return self._label_of[self._slot_of[id]]

    def __len__(self) -> int:
        return len(self._slot_of)

    def __contains__(self, id: object) -> bool:
        try:
            return id in self._slot_of
        except TypeError:
            return False

    def memory_bytes(self) -> int:
        """Bytes held: the core's structures plus this wrapper's id maps (not the label objects, which
        the caller owns)."""
        maps = sum(sys.getsizeof(m) for m in (self._slot_of, self._id_of, self._label_of, self._partitions))
        return int(self._core.memory_bytes()) + maps
