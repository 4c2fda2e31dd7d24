"""The label indexes a :class:`~memdedup.store.SQLiteGraphStore` keeps in step with its rows (issue 26).

One :class:`~memdedup.index.LabelIndex` per ``(scope_path, layer)``, holding exactly the live (not
retracted) rows that scope path *owns* in that layer, under their node ids, in store order (``seq``), so
the index's first match is the oldest row, as the seed's store order has it. The store calls the hooks
below after each write statement has succeeded; this module only keeps the bookkeeping that makes the
index never hold a row the database does not:

* a write inside a transaction marks its partition *touched*; a rollback makes every touched partition
  *stale* (rebuilt from the database, which is authoritative after the rollback, the next time it is
  used), and a commit forgets the marks. Re-inserting a removed row would put it at the end of the
  insertion order, not at its place, so a rollback never tries to undo step by step;
* an upsert that changes a live row's label in the same layer keeps the row's place in store order: the
  index relabels the entry in place (:meth:`~memdedup.index.LabelIndex.relabel` keeps its place in the
  insertion order), nothing is rebuilt; one that moves the row to another layer changes its partition,
  where its place in store order is not the end: both partitions become stale and are rebuilt in order;
* another connection's commit (another process writing the same file) is seen through SQLite's
  ``PRAGMA data_version``, checked by the store on each use: then every partition is rebuilt, lazily;
* a failure inside the index itself (never expected) makes its partition stale and is logged at DEBUG:
  the write it follows has already succeeded and must not fail for the index.

Rebuilding reads the database inside whatever transaction is open; a partition rebuilt inside a
transaction is touched too (it may hold the transaction's rows), so a rollback rebuilds it again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from memdedup.index import LabelIndex

__all__ = ["Partition", "StoreLabelIndex"]

logger = logging.getLogger("memdedup.store")

Partition = tuple[str, str]
"""``(scope_path, layer)``: the stored texts a row is owned under."""

#: The live rows (``scope_path, layer, id, label``) in store order; of one partition when one is given.
RowSource = Callable[[Partition | None], Iterable[tuple[str, str, str, str]]]


class StoreLabelIndex:
    """The per-partition indexes of one store, rebuilt from ``rows`` when they may be out of step."""

    def __init__(self, rows: RowSource) -> None:
        self._rows = rows
        self._partitions: dict[Partition, LabelIndex] = {}
        #: False until every partition is built: then a partition not in ``_partitions`` is empty.
        self._complete = False
        self._stale: set[Partition] = set()
        self._touched: set[Partition] = set()
        self._rebuilt_all_in_transaction = False

    # -- reads

    def build(self, *, in_transaction: bool) -> None:
        """Build every partition from the live rows now."""
        self._rebuild_all(in_transaction=in_transaction)

    def get(self, partition: Partition, *, in_transaction: bool) -> LabelIndex:
        """The index of ``partition`` (built first if it may be out of step; an empty one if none)."""
        if not self._complete:
            self._rebuild_all(in_transaction=in_transaction)
        elif partition in self._stale:
            self._rebuild(partition, in_transaction=in_transaction)
        found = self._partitions.get(partition)
        if found is None:
            found = self._partitions[partition] = _new_index([], [])
        return found

    def invalidate(self) -> None:
        """Everything may be out of step (another connection wrote): rebuild on the next use."""
        self._complete = False
        self._partitions.clear()
        self._stale.clear()

    def memory_bytes(self) -> int:
        return sum(index.memory_bytes() for index in self._partitions.values())

    # -- write hooks (called after the statement succeeded)

    def inserted(self, partition: Partition, node_id: str, label: str, *, in_transaction: bool) -> None:
        """A new live row, the newest in store order."""
        if not self._complete or partition in self._stale:
            return  # the rebuild will read it
        self._mark(partition, in_transaction)
        try:
            index = self._partitions.get(partition)
            if index is None:
                self._partitions[partition] = _new_index([label], [node_id])
            else:
                index.insert(label, node_id)
        except Exception:
            logger.debug("label index: insert failed; the partition will be rebuilt", exc_info=True)
            self._make_stale(partition)

    def removed(self, partition: Partition, node_id: str, *, in_transaction: bool) -> None:
        """A live row was retracted."""
        if not self._complete or partition in self._stale:
            return
        self._mark(partition, in_transaction)
        try:
            index = self._partitions.get(partition)
            if index is not None:
                index.remove(node_id)
        except Exception:
            logger.debug("label index: remove failed; the partition will be rebuilt", exc_info=True)
            self._make_stale(partition)

    def relabeled(self, partition: Partition, node_id: str, label: str, *, in_transaction: bool) -> None:
        """A live row of ``partition`` changed its label in place (same layer): the entry is relabelled,
        keeping its place in store order; the rest of the partition is untouched."""
        if not self._complete or partition in self._stale:
            return  # the rebuild will read it
        self._mark(partition, in_transaction)
        try:
            index = self._partitions.get(partition)
            if index is None or node_id not in index:
                raise LookupError("the row is not in its partition's index")
            index.relabel(node_id, label)
        except Exception:
            logger.debug("label index: relabel failed; the partition will be rebuilt", exc_info=True)
            self._make_stale(partition)

    def reordered(self, *partitions: Partition, in_transaction: bool) -> None:
        """Live rows of ``partitions`` changed label or layer in place: rebuild them in store order."""
        for partition in partitions:
            self._mark(partition, in_transaction)
            self._make_stale(partition)

    def committed(self) -> None:
        self._touched.clear()
        self._rebuilt_all_in_transaction = False

    def rolled_back(self) -> None:
        """The transaction's rows are gone: every partition it touched is rebuilt on its next use."""
        if self._rebuilt_all_in_transaction:
            self.invalidate()
        else:
            for partition in self._touched:
                self._make_stale(partition)
        self._touched.clear()
        self._rebuilt_all_in_transaction = False

    # -- internals

    def _mark(self, partition: Partition, in_transaction: bool) -> None:
        if in_transaction:
            self._touched.add(partition)

    def _make_stale(self, partition: Partition) -> None:
        self._partitions.pop(partition, None)
        if self._complete:
            self._stale.add(partition)

    def _rebuild_all(self, *, in_transaction: bool) -> None:
        grouped: dict[Partition, tuple[list[str], list[str]]] = {}
        for scope_path, layer, node_id, label in self._rows(None):
            labels, ids = grouped.setdefault((scope_path, layer), ([], []))
            labels.append(label)
            ids.append(node_id)
        self._partitions = {key: _new_index(labels, ids) for key, (labels, ids) in grouped.items()}
        self._stale.clear()
        self._complete = True
        if in_transaction:
            self._rebuilt_all_in_transaction = True

    def _rebuild(self, partition: Partition, *, in_transaction: bool) -> None:
        rows = list(self._rows(partition))
        self._partitions[partition] = _new_index([row[3] for row in rows], [row[2] for row in rows])
        self._stale.discard(partition)
        self._mark(partition, in_transaction)


def _new_index(labels: list[str], ids: list[str]) -> LabelIndex:
    return LabelIndex.build(labels, ids)
