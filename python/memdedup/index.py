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

It is made to live as long as a server: :meth:`LabelIndex.relabel` changes a stored label in place
(its place in the order kept), a removal costs O(1) amortised, memory follows the live labels (slots,
lists and id maps are reused or given back), and :meth:`LabelIndex.stats` gives what to export:

    >>> index.relabel("n2", "Lives in Munich")
    >>> index.remove("n1")
    True
    >>> stats = index.stats()
    >>> stats["labels"], stats["partitions"], stats["bytes"] == index.memory_bytes()
    (1, 1, True)

An index cannot be copied (``copy.copy``, ``copy.deepcopy``, ``pickle``: ``TypeError``): a copy would
share the core index with the original; build another one from the labels instead.
"""

from __future__ import annotations

import sys
import threading
from array import array
from collections.abc import Hashable, Iterable, Sequence
from typing import Any, NamedTuple

from memdedup._backend import impl as _impl
from memdedup._rules import DEDUP_SIMILARITY_THRESHOLD, DEDUP_SUBSUME_MIN_CHARS, check_min_chars
from memdedup._rules import comparable as _comparable
from memdedup._rules import partition_key as _partition_key
from memdedup.errors import InputTypeError, InvalidInputError
from memdedup.guards import Guards, as_guards, guards_allow
from memdedup.missing import is_missing

__all__ = ["IndexMatch", "LabelIndex"]

_new_tuple = tuple.__new__

#: An insertion number with no id here: retracted, used up by a failed write, or written by one still
#: running.
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
        # The core's insertion number of each id (numbers are never reused), and by the core's slot
        # (slots are reused, lowest first, and given back from the top, so these lists follow the
        # live labels): the number the slot holds (-1: none), its id and label.
        self._number_of: dict[Hashable, int] = {}
        self._number_at = array("q")
        self._id_at: list[Any] = []
        self._label_at: list[Any] = []
        # Writes are one at a time (the id checks and the maps change together); reads take no lock.
        # A write fills a slot's id and label before its number, and a removal clears the number
        # first: a reader that reads the id and then finds the number it was given knows the id is
        # that number's (numbers never come back). Anything else is skipped: a write not recorded
        # yet, or a label retracted since the core answered.
        self._writing = threading.Lock()
        # Partition numbers by (scope, layer) key; a partition's number is freed when its last label
        # leaves, and reused.
        self._partitions: dict[Any, int] = {}
        self._key_of: dict[int, Any] = {}
        self._free_partitions: list[int] = []

    # -- partitions and ids

    @staticmethod
    def _key(scope: Hashable, layer: Hashable) -> tuple[Any, Any]:
        """The partition key of ``(scope, layer)``: the one rule every entry point uses."""
        return (_partition_key(scope, "scope"), _partition_key(layer, "layer"))

    def _partition_of(self, scope: Hashable, layer: Hashable) -> int | None:
        """The partition number of ``(scope, layer)``, None when nothing is stored there."""
        return self._partitions.get(self._key(scope, layer))

    def _partition(self, key: tuple[Any, Any]) -> int:
        """The partition number of a key, made when new (a freed number first)."""
        found = self._partitions.get(key)
        if found is None:
            found = self._free_partitions.pop() if self._free_partitions else len(self._partitions)
            self._partitions[key] = found
            self._key_of[found] = key
        return found

    def _forget_partition_if_empty(self, number: int | None) -> None:
        if number is not None and self._core.partition_len(number) == 0 and number in self._key_of:
            del self._partitions[self._key_of.pop(number)]
            self._free_partitions.append(number)

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
        key = self._key(scope, layer)
        with self._writing:
            if id in self._number_of:
                raise InvalidInputError(f"id {id!r} is already in the index")
            partition = self._partition(key)
            try:
                number = self._core.insert(label, partition)
            except BaseException:
                self._forget_partition_if_empty(partition)
                raise
            self._record(number, [id], [label])

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
            if id in self._number_of or id in seen:
                raise InvalidInputError(f"id {id!r} is already in the index")
            seen.add(id)
        # Every row's key by the one rule (never a memo on the raw values: 1, True and 1.0 compare and
        # hash equal, and are three partitions).
        scope_column: Sequence[Hashable] = scopes if scopes is not None else [None] * n
        layer_column: Sequence[Hashable] = layers if layers is not None else [None] * n
        if scopes is None and layers is None:
            partitions = [self._partition(self._key(None, None))] * n
        else:
            keys = [self._key(scope, layer) for scope, layer in zip(scope_column, layer_column, strict=True)]
            partitions = [self._partition(key) for key in keys]
        try:
            first = self._core.insert_many(labels, partitions)
        except BaseException:
            for partition in set(partitions):
                self._forget_partition_if_empty(partition)
            raise
        self._record(first, ids, labels)

    def _record(self, first: int, ids: list[Hashable], labels: list[Any]) -> None:
        """``ids[k]`` and ``labels[k]`` under insertion number ``first + k``, at the core's slots."""
        slots = [self._core.slot_of(first)] if len(ids) == 1 else self._core.slots_of(first, len(ids))
        top = max(slots, default=-1) + 1
        if top > len(self._id_at):
            grow = top - len(self._id_at)
            self._id_at.extend([_VACANT] * grow)
            self._label_at.extend([_VACANT] * grow)
            self._number_at.extend([-1] * grow)
        id_at, label_at, number_at = self._id_at, self._label_at, self._number_at
        n = len(slots)
        if n > 1 and slots[-1] - slots[0] == n - 1 and slots == list(range(slots[0], slots[0] + n)):
            # Consecutive slots (a new index, or one without free slots): slices at once.
            low = slots[0]
            id_at[low : low + n], label_at[low : low + n] = ids, labels
            number_at[low : low + n] = array("q", range(first, first + n))
            self._number_of.update(zip(ids, range(first, first + n), strict=True))
            return
        for k, slot in enumerate(slots):
            id_at[slot], label_at[slot] = ids[k], labels[k]
            number_at[slot] = first + k
        self._number_of.update(zip(ids, range(first, first + len(ids)), strict=True))

    def _clear(self, slot: int) -> None:
        """Slot ``slot`` holds nothing any more (its number first); the lists give back their top."""
        self._number_at[slot] = -1
        self._id_at[slot] = self._label_at[slot] = _VACANT
        while self._number_at and self._number_at[-1] == -1:
            self._number_at.pop()
            self._id_at.pop()
            self._label_at.pop()

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
            number = self._number_of.pop(id, None)
            if number is None:
                return False
            slot = self._core.slot_of(number)
            partition = self._core.partition_of(number)
            self._core.remove(number)
            if slot is not None:
                self._clear(slot)  # the caller's objects are no longer held
            self._forget_partition_if_empty(partition)
            return True

    def relabel(self, id: Hashable, label: Any) -> None:
        """Give the stored ``id`` a new ``label`` in place: its place in the order (oldest first) and its
        partition are kept, nothing else is rebuilt. ``KeyError`` when ``id`` is not stored."""
        self._check_id(id)
        with self._writing:
            number = self._number_of[id]
            slot = self._core.slot_of(number)
            partition = self._core.partition_of(number)
            try:
                self._core.relabel(number, label)
            except BaseException:
                if number not in self._core:  # out of memory midway: the core let the label go
                    del self._number_of[id]
                    if slot is not None:
                        self._clear(slot)
                    self._forget_partition_if_empty(partition)
                raise
            if slot is not None:
                self._label_at[slot] = label

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
            label,
            partition,
            threshold=threshold,
            min_chars=min_chars,
            first=first and not guarded,
            slots=True,
        )
        id_at, number_at = self._id_at, self._number_at
        if not guarded:
            try:
                # The id first, then its number (see __init__): a slot cleared or reused meanwhile
                # fails the test. One comprehension: a query on a common phrase has thousands.
                out = [
                    _new_tuple(IndexMatch, (found_id, reason, score))
                    for number, slot, reason, score in zip(*found, strict=True)
                    if (found_id := id_at[slot]) is not _VACANT and number_at[slot] == number
                ]
                return out[:1] if first else out
            except IndexError:  # the lists shrank under a concurrent removal: the careful loop
                pass
        out = []
        for number, slot, reason, score in zip(*found, strict=True):
            # The id first, then its number (see __init__): a slot cleared or reused meanwhile fails.
            found_id = id_at[slot] if slot < len(id_at) else _VACANT
            if found_id is _VACANT or slot >= len(number_at) or number_at[slot] != number:
                continue
            if guarded and not guards_allow(self._label_at[slot], label, parsed):
                continue
            out.append(_new_tuple(IndexMatch, (found_id, reason, score)))
            if first:
                break
        return out

    def first_match(self, label: Any, **kwargs: Any) -> IndexMatch | None:
        """The oldest match of :meth:`query` (same arguments), or None."""
        found = self.query(label, first=True, **kwargs)
        return found[0] if found else None

    def label(self, id: Hashable) -> Any:
        """The label stored under ``id`` (``KeyError`` when none is)."""
        slot = self._core.slot_of(self._number_of[id])
        if slot is None:
            raise KeyError(id)
        return self._label_at[slot]

    def __len__(self) -> int:
        return len(self._number_of)

    def __contains__(self, id: object) -> bool:
        try:
            return id in self._number_of
        except TypeError:
            return False

    def memory_bytes(self) -> int:
        """Bytes held: the core's structures plus this wrapper's id maps (not the label objects, which
        the caller owns)."""
        maps = (self._number_of, self._number_at, self._id_at, self._label_at, self._partitions, self._key_of)
        return int(self._core.memory_bytes()) + sum(sys.getsizeof(m) for m in maps)

    def stats(self) -> dict[str, int]:
        """What a server exports: ``labels`` (live), ``partitions`` (holding a live label), ``bytes``
        (:meth:`memory_bytes`), ``tombstones`` (retired entries of the containment lists not yet
        dropped), ``slots`` and ``free_slots`` (the core's rows, and those awaiting reuse) and
        ``inserted`` (insertions ever made)."""
        stats = dict(self._core.stats())
        stats["bytes"] = self.memory_bytes()
        return stats

    # -- copies

    def __copy__(self) -> LabelIndex:
        raise InputTypeError(_NO_COPY)

    def __deepcopy__(self, memo: dict[int, Any]) -> LabelIndex:
        raise InputTypeError(_NO_COPY)

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise InputTypeError(_NO_COPY)


_NO_COPY = (
    "a LabelIndex cannot be copied or pickled (a copy would share the original's core index): build "
    "another with LabelIndex.build(labels, ids)"
)
