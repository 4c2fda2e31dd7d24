"""An embedded SQLite graph store that :func:`memdedup.dedup.find_canonical_node` accepts as its ``graph``.

One file, stdlib :mod:`sqlite3`, WAL journal, every multi-statement write in one ``BEGIN IMMEDIATE``
transaction, so several processes can write to one database and a killed writer leaves the last
committed state behind. What opening a file checks, and how an older file is migrated, is
:mod:`memdedup.store.opening`; the tables are :mod:`memdedup.store.schema`.

Read rules (symfonic-core's ``GraphMemoryStore`` over its in-memory backend, which the tests hold this
store to):

* visibility: a query at scope P sees a row whose ``scope_path`` is one of P's
  ``ancestor_prefix_paths()``: exact set membership, never a string-prefix scan;
* ``label_prefix`` is case-sensitive ``str.startswith``; it is answered as a range on the label
  (``prefix <= label < successor(prefix)``), which the ``(scope_path, layer, label)`` index serves;
* order: oldest first (insertion order; an upsert or an update keeps a row's place);
* retracted rows are hidden unless ``include_retracted=True``; ``limit=None`` is all, ``limit=0`` none.

Rows are keyed by ``(scope_path, id)``: a record id is an upsert key *within* its scope, so a child
scope writing an id its ancestor also holds gets its own row and never re-stamps the ancestor's
(visibility is not ownership). Only the owning scope may change or retract a row.

Facts change (:mod:`memdedup.facts`): a statement that restates a row (:meth:`SQLiteGraphStore.restate`)
counts one more mention and moves the row's ``last_stated``; one that updates it
(:meth:`SQLiteGraphStore.update_text`, and :meth:`~SQLiteGraphStore.upsert_node` with another label)
makes the incoming text current and keeps the previous one as a revision; :meth:`~SQLiteGraphStore.merge`
folds a later row into an earlier one (``memdedup consolidate``). :meth:`~SQLiteGraphStore.history` reads
every earlier text back, oldest first. The ``ledger`` table holds every extracted record the ingest
pipeline has applied, written in the same transaction as its node: what makes re-running an ingest write
nothing new.

Every failure of the database itself (a damaged page, a full disk, a lock held beyond the timeout,
an I/O error) is one :class:`StoreError` (a :class:`~memdedup.errors.MemdedupError`) whose message says
what failed; a value SQLite cannot store (a lone surrogate, an integer beyond 64 bits) is an
:class:`~memdedup.errors.InvalidInputError`. Neither message quotes stored text.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import urllib.parse
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from memdedup.errors import InvalidInputError
from memdedup.scope import readable_scope_path
from memdedup.scrub import redact
from memdedup.secret_memory import Rewrite, SecretMemory
from memdedup.store import opening
from memdedup.store.history import UPDATED, FactHistory
from memdedup.store.records import (
    LedgerEntry,
    StoredNode,
    StoreError,
    node_from_row,
)
from memdedup.store.schema import SCHEMA_VERSION, node_columns
from memdedup.store.values import database_errors
from memdedup.store.values import now as _now
from memdedup.store.values import properties_json as _properties_json
from memdedup.store.values import text_value as _text
from memdedup.store.values import turn_value as _turn
from memdedup.store_index import StoreLabelIndex

if TYPE_CHECKING:
    from memdedup.index import LabelIndex
    from memdedup.recall import Recall

__all__ = ["SQLiteGraphStore", "prefix_successor"]

logger = logging.getLogger("memdedup.store")

_MAX_CODE_POINT = 0x10FFFF
# The text columns a newly remembered secret is redacted from, store-wide (memdedup.secret_memory).
_SECRET_REWRITE = (
    Rewrite("nodes", ("label", "properties")),
    Rewrite("ledger", ("text",)),
    Rewrite("revisions", ("text", "properties", "reason")),
)

_INSERT_NODE = (
    "INSERT INTO nodes (id, scope_path, tenant_id, layer, label, properties, importance, salience, origin, "
    "scope, created_at, updated_at, last_stated, last_turn, stated) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT coalesce(max(stated), 0) + 1 FROM nodes)) "
)


def prefix_successor(prefix: str) -> str | None:
    """The least string above every string that starts with ``prefix``; None when there is none.

    SQLite compares TEXT as UTF-8 bytes, and UTF-8 byte order is code point order, which is Python's
    ``str`` order: so ``prefix <= label < prefix_successor(prefix)`` is exactly ``label.startswith(prefix)``,
    and a B-tree index on ``label`` answers it. Surrogates (not storable as UTF-8) are skipped.
    """
    chars = list(prefix)
    while chars:
        code = ord(chars.pop())
        if code < _MAX_CODE_POINT:
            code += 1
            if 0xD800 <= code <= 0xDFFF:
                code = 0xE000
            return "".join(chars) + chr(code)
    return None


class SQLiteGraphStore(FactHistory):
    """A memory graph in one SQLite file (``":memory:"`` works too, for one connection).

    ``query_nodes`` is a coroutine because that is the graph protocol ``find_canonical_node`` awaits;
    every other method is a plain call (SQLite is synchronous), and :meth:`query` is ``query_nodes``
    without the coroutine. See :mod:`memdedup.store.opening` for what opening a file checks (``check``).

    ``readonly=True`` opens the file without writing to it (no WAL switch, no schema, no migration: a
    file of an older schema version is read as it is); every write then raises :class:`StoreError`.

    ``label_index=True`` keeps a :class:`~memdedup.index.LabelIndex` per ``(scope path, layer)`` of the
    live rows, built on open and kept in step with every write (:meth:`label_index`): what
    ``find_canonical_node(..., gate="index")`` and ``memdedup ingest --gate index`` look labels up in.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        timeout: float = 30.0,
        check: str = "auto",
        label_index: bool = False,
        readonly: bool = False,
    ) -> None:
        if check not in opening.CHECKS:
            raise InvalidInputError(
                f"check must be one of {', '.join(opening.CHECKS)}, not {redact(check, 40)!r}"
            )
        for name, flag in (("label_index", label_index), ("readonly", readonly)):
            if not isinstance(flag, bool):
                raise InvalidInputError(f"{name} must be True or False, not a {type(flag).__name__}")
        self._index: StoreLabelIndex | None = None
        self._secrets: SecretMemory | None = None  # the store-wide secret memory: made on opening to write
        self._data_version = 0
        self.path = os.fspath(path)
        self.timeout = timeout
        self.readonly = readonly
        #: What the integrity check on open found (empty when the file is sound or unchecked).
        self.integrity_problems: list[str] = []
        #: Where a copy of the file was written before it was migrated from an older schema, else None.
        self.migrated_from: str | None = None
        try:
            if readonly and self.path not in ("", ":memory:"):
                if not os.path.exists(self.path):
                    raise StoreError(f"cannot open the database {redact(self.path)!r}: no such file")
                uri = "file:" + urllib.parse.quote(os.path.abspath(self.path)) + "?mode=ro"
                self._conn = sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None)
            else:
                self._conn = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the database {redact(self.path)!r}: {redact(exc)}") from exc
        try:
            self._conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            # Deleted and overwritten content is zeroed, not left in free pages and freed cells: an
            # updated or deleted row's old text (a secret written before it was scrubbed, a memory a
            # user asked to forget) must not survive in the file. SQLite builds differ in the default
            # (Debian's is on; python.org's and manylinux's are off), so every connection says it.
            self._conn.execute("PRAGMA secure_delete = ON")
            opening.claim(self._conn, self.path)
            self.integrity_problems = opening.check(self._conn, self.path, check)
            version = opening.schema_version(self._conn, self.path)
            if readonly:
                self.schema_version = version or SCHEMA_VERSION
            else:
                self.migrated_from = opening.configure(self._conn, self.path, self.timeout, self.transaction)
                self._secrets = SecretMemory(self._conn)
                self.schema_version = SCHEMA_VERSION
            self._columns = node_columns(self.schema_version)
            if label_index:
                self.enable_label_index()
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise StoreError(
                f"cannot use {redact(self.path)!r} as a memdedup database: {redact(exc)}"
            ) from exc
        except BaseException:
            self._conn.close()
            raise

    def close(self) -> None:
        self._index = None
        self._conn.close()

    def __enter__(self) -> SQLiteGraphStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- statements ------------------------------------------------------------------------------------

    def _rows(self, sql: str, params: Sequence[Any] = (), *, doing: str = "reading") -> list[Any]:
        """All rows of a statement (fetched here, so a damaged page met mid-scan is a StoreError too)."""
        with database_errors(self.path, doing):
            return self._conn.execute(sql, params).fetchall()

    def _execute(self, sql: str, params: Sequence[Any] = (), *, doing: str = "writing") -> sqlite3.Cursor:
        self._writable()
        with database_errors(self.path, doing):
            return self._conn.execute(sql, params)

    def _writable(self) -> None:
        if self.readonly:
            raise StoreError(f"{redact(self.path)!r} was opened read-only")

    @property
    def in_transaction(self) -> bool:
        return self._conn.in_transaction

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on any exception); joins an open transaction.

        IMMEDIATE takes the write lock up front, so the reads inside (a dedup lookup) and the writes they
        decide are one atomic step even with other processes writing. A failed COMMIT (a full disk)
        rolls back and is a StoreError: the transaction's writes are all there, or none is.
        """
        if self._conn.in_transaction:
            yield
            return
        self._execute("BEGIN IMMEDIATE", doing="starting a write transaction")
        if self._secrets is not None:
            self._secrets.begin()  # other writers' secrets read once per transaction
        try:
            yield
        except BaseException:
            self._rollback()
            raise
        try:
            self._execute("COMMIT", doing="committing")
        except BaseException:
            self._rollback()
            raise
        if self._index is not None:
            self._index.committed()
        if self._secrets is not None:
            self._secrets.committed()  # a checkpoint after a rewrite

    def _rollback(self) -> None:
        # SQLite rolls some failures back itself (SQLITE_FULL can), and then there is nothing to undo.
        if self._conn.in_transaction:
            try:
                self._conn.execute("ROLLBACK")
            except sqlite3.Error:
                logger.debug("rollback failed", exc_info=True)
        if self._index is not None:
            # Whatever the transaction put in the index is rebuilt from the rolled-back database.
            self._index.rolled_back()
        if self._secrets is not None:
            self._secrets.rolled_back()

    # -- the label index -------------------------------------------------------------------------------

    def enable_label_index(self) -> None:
        """Keep a label index per ``(scope path, layer)`` from now on (what ``label_index=True`` does on
        open): built at once from the live rows in store order; a no-op when it is kept already."""
        if self._index is not None:
            return
        index = StoreLabelIndex(self._live_rows)
        self._data_version = self._current_data_version()
        index.build(in_transaction=self._conn.in_transaction)
        self._index = index

    @property
    def has_label_index(self) -> bool:
        """Whether this store keeps label indexes (``label_index=True`` or :meth:`enable_label_index`)."""
        return self._index is not None

    def label_index(self, scope: Any, layer: Any) -> LabelIndex | None:
        """The :class:`~memdedup.index.LabelIndex` of the live rows ``scope`` *owns* (its ``scope_path``
        exactly: an ancestor's or a sibling's rows are never in it) in ``layer``, under their node ids, in
        store order (its first match is the oldest row); None when this store keeps no index.

        This is the graph protocol of ``find_canonical_node(..., gate="index")`` (with
        :meth:`owned_node`). The index is the store's own, live: read it, never write to it. Another
        connection's commit (another process writing this file) is noticed here and the indexes are
        rebuilt from the database before the answer.
        """
        if self._index is None:
            return None
        partition = (_text("scope path", scope.scope_path), _text("layer", layer))
        version = self._current_data_version()
        if version != self._data_version:
            self._index.invalidate()
            self._data_version = version
        return self._index.get(partition, in_transaction=self._conn.in_transaction)

    def label_index_bytes(self) -> int:
        """Bytes the label indexes hold (0 without them)."""
        return self._index.memory_bytes() if self._index is not None else 0

    def _current_data_version(self) -> int:
        # Changes when another connection commits to the file (never for this connection's own writes).
        return int(self._rows("PRAGMA data_version")[0][0])

    def _live_rows(self, partition: tuple[str, str] | None) -> list[tuple[str, str, str, str]]:
        sql = "SELECT scope_path, layer, id, label FROM nodes WHERE retracted_at IS NULL"
        params: tuple[str, ...] = ()
        if partition is not None:
            sql += " AND scope_path = ? AND layer = ?"
            params = partition
        return [
            tuple(row) for row in self._rows(sql + " ORDER BY seq", params, doing="building the label index")
        ]

    def _relabelled_in_index(self, node: StoredNode, before: tuple[str, str]) -> None:
        """Keep the label index in step with a live row whose label or layer changed in place (inside its
        transaction). A new label in the same layer is relabelled in the index, keeping its place in
        store order; a row moved to another layer keeps its place too, which an insertion-ordered index
        can only follow by a rebuild of both partitions."""
        if self._index is None or before == (node.layer, node.label):
            return
        partition = (node.scope_path, node.layer)
        if before[0] == node.layer:
            self._index.relabeled(partition, node.id, node.label, in_transaction=True)
        else:
            self._index.reordered((node.scope_path, before[0]), partition, in_transaction=True)

    # -- reads -----------------------------------------------------------------------------------------

    def _select(
        self,
        scope: Any,
        *,
        layer: Any = None,
        label: str | None = None,
        label_prefix: str | None = None,
        limit: int | None = None,
        include_retracted: bool = False,
    ) -> tuple[str, list[Any]]:
        paths = list(scope.ancestor_prefix_paths())
        where = [f"scope_path IN ({', '.join('?' * len(paths))})"]
        params: list[Any] = list(paths)
        if layer is not None:
            where.append("layer = ?")
            params.append(_text("layer", layer))
        if label is not None:
            where.append("label = ?")
            params.append(_text("label", label))
        if label_prefix:
            prefix = _text("label_prefix", label_prefix)
            where.append("label >= ?")
            params.append(prefix)
            successor = prefix_successor(prefix)
            if successor is not None:
                where.append("label < ?")
                params.append(successor)
        if not include_retracted:
            where.append("retracted_at IS NULL")
        sql = f"SELECT {self._columns} FROM nodes WHERE {' AND '.join(where)} ORDER BY seq"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(max(int(limit), 0))
        return sql, params

    def query(
        self,
        scope: Any,
        layer: Any = None,
        label: str | None = None,
        label_prefix: str | None = None,
        limit: int | None = None,
        include_retracted: bool = False,
    ) -> list[StoredNode]:
        """The rows ``scope`` sees, filtered, oldest first (see the module docstring for the rules)."""
        if limit == 0:
            return []
        sql, params = self._select(
            scope,
            layer=layer,
            label=label,
            label_prefix=label_prefix,
            limit=limit,
            include_retracted=include_retracted,
        )
        return [node_from_row(row) for row in self._rows(sql, params)]

    async def query_nodes(
        self,
        scope: Any,
        layer: Any = None,
        label: str | None = None,
        label_prefix: str | None = None,
        limit: int | None = None,
        include_retracted: bool = False,
    ) -> list[StoredNode]:
        """:meth:`query` as the coroutine the graph protocol (``find_canonical_node``) awaits."""
        return self.query(
            scope,
            layer=layer,
            label=label,
            label_prefix=label_prefix,
            limit=limit,
            include_retracted=include_retracted,
        )

    def explain_query(self, scope: Any, **filters: Any) -> list[str]:
        """SQLite's ``EXPLAIN QUERY PLAN`` lines for the statement :meth:`query` runs with ``filters``."""
        sql, params = self._select(scope, **filters)
        return [row[-1] for row in self._rows(f"EXPLAIN QUERY PLAN {sql}", params)]

    def get_node(self, scope: Any, node_id: str, *, include_retracted: bool = False) -> StoredNode | None:
        """The row with ``node_id`` that ``scope`` *sees*, the nearest scope's first; None when none.

        Visibility, not ownership: to ask whether ``scope`` itself holds a row, use :meth:`owned_node`.
        """
        paths = list(scope.ancestor_prefix_paths())
        marks = ", ".join("?" * len(paths))
        sql = (
            f"SELECT {self._columns} FROM nodes WHERE id = ? AND scope_path IN ({marks})"
            + ("" if include_retracted else " AND retracted_at IS NULL")
            + " ORDER BY length(scope_path) DESC LIMIT 1"
        )
        rows = self._rows(sql, [_text("node id", node_id), *paths])
        return node_from_row(rows[0]) if rows else None

    def owned_node(self, scope: Any, node_id: str) -> StoredNode | None:
        """The row ``(scope.scope_path, node_id)`` (retracted or not): the one ``scope`` owns, if any."""
        return self._owned(_text("scope path", scope.scope_path), _text("node id", node_id))

    def _owned(self, scope_path: str, node_id: str) -> StoredNode | None:
        rows = self._rows(
            f"SELECT {self._columns} FROM nodes WHERE scope_path = ? AND id = ?", (scope_path, node_id)
        )
        return node_from_row(rows[0]) if rows else None

    def all_nodes(self, *, include_retracted: bool = True) -> list[StoredNode]:
        """Every row of every scope, oldest first (for reports, dumps and tests)."""
        sql = f"SELECT {self._columns} FROM nodes"
        if not include_retracted:
            sql += " WHERE retracted_at IS NULL"
        return [node_from_row(row) for row in self._rows(sql + " ORDER BY seq")]

    def owned_nodes(
        self, scope_path: str | None = None, *, include_retracted: bool = False
    ) -> list[StoredNode]:
        """The rows owned by ``scope_path`` exactly (every scope's when None), oldest first."""
        sql = f"SELECT {self._columns} FROM nodes WHERE 1"
        params: list[Any] = []
        if scope_path is not None:
            sql += " AND scope_path = ?"
            params.append(_text("scope path", scope_path))
        if not include_retracted:
            sql += " AND retracted_at IS NULL"
        return [node_from_row(row) for row in self._rows(sql + " ORDER BY seq", params)]

    def live_texts(self, scope_path: str) -> list[tuple[str, str, str, str, int]]:
        """``(id, layer, label, origin, stated)`` of the live rows ``scope_path`` owns, in store order: what
        a pass over a scope's texts reads (``memdedup consolidate``), without decoding every row."""
        stated = "stated" if self.schema_version >= 2 else "row_number() OVER (ORDER BY updated_at, seq)"
        rows = self._rows(
            f"SELECT id, layer, label, origin, {stated} FROM nodes "
            "WHERE scope_path = ? AND retracted_at IS NULL ORDER BY seq",
            (_text("scope path", scope_path),),
        )
        return [tuple(row) for row in rows]

    def scope_paths(self) -> list[str]:
        """Every owning scope path that holds a row, in the order of its first row."""
        rows = self._rows("SELECT scope_path FROM nodes GROUP BY scope_path ORDER BY min(seq)")
        return [row[0] for row in rows]

    def count_nodes(self, *, include_retracted: bool = True) -> int:
        sql = "SELECT count(*) FROM nodes" + ("" if include_retracted else " WHERE retracted_at IS NULL")
        return int(self._rows(sql)[0][0])

    def recall(
        self,
        scope: Any,
        window: Iterable[Any] = (),
        *,
        char_ceiling: int | None = None,
        max_bytes: int | None = None,
        layer: Any = None,
        limit: int | None = None,
        collapse: bool = True,
        threshold: float = 0.85,
        min_chars: int = 16,
        guards: Any = None,
    ) -> Recall:
        """The memory block recalled at ``scope``, each fact once in its current form (``collapse=False``:
        every row) and the window's own turns removed: one call for the recall path (see
        :func:`memdedup.recall.recall`; ``threshold``, ``min_chars`` and ``guards`` are the library's
        defaults)."""
        from memdedup.recall import recall

        return recall(
            self,
            scope,
            window,
            char_ceiling=char_ceiling,
            max_bytes=max_bytes,
            layer=layer,
            limit=limit,
            collapse=collapse,
            threshold=threshold,
            min_chars=min_chars,
            guards=guards,
        )

    # -- writes ----------------------------------------------------------------------------------------

    def _node_values(
        self,
        scope: Any,
        node_id: str,
        layer: Any,
        label: str,
        properties: dict[str, Any] | None,
        importance: float,
        salience: float,
        origin: str,
    ) -> tuple[Any, ...]:
        if not str(label).strip():
            raise InvalidInputError("a node needs a non-empty label")
        scope_path = _text("scope path", scope.scope_path)
        return (
            _text("node id", node_id),
            scope_path,
            _text("tenant id", getattr(scope, "tenant_id", "")),
            _text("layer", layer),
            self.redact_secrets(_text("label", label)),  # what the store remembers as secret, redacted
            self.redact_secrets(_properties_json(properties)),
            float(importance),
            float(salience),
            _text("origin", origin),
            readable_scope_path(scope_path),
        )

    def upsert_node(
        self,
        scope: Any,
        *,
        node_id: str,
        layer: Any,
        label: str,
        properties: dict[str, Any] | None = None,
        importance: float = 5.0,
        salience: float = 0.5,
        origin: str = "",
        turn: int | None = None,
    ) -> tuple[StoredNode, bool]:
        """Insert or update the row ``(scope.scope_path, node_id)``; ``(node, True)`` when it was new.

        An update replaces the label, layer, properties, importance, salience and origin, and keeps the
        row's place in the order, its creation time and its mention count; it is a statement (the row's
        ``last_stated`` moves), and a label it changes is kept as a revision (``updated``, reason
        ``upsert``), as every change of a fact's text is. A retracted row stays retracted.
        """
        values = self._node_values(scope, node_id, layer, label, properties, importance, salience, origin)
        turn = _turn(turn)
        now = _now()
        with self.transaction():
            before = self._owned(values[1], values[0])
            if before is not None and before.label != values[4]:
                self._add_revision(before, UPDATED, before.label, before.properties, "upsert", turn, now)
            self._execute(
                _INSERT_NODE + "ON CONFLICT (scope_path, id) DO UPDATE SET layer = excluded.layer, "
                "label = excluded.label, properties = excluded.properties, importance = excluded.importance, "
                "salience = excluded.salience, origin = excluded.origin, updated_at = excluded.updated_at, "
                "last_stated = excluded.last_stated, last_turn = coalesce(excluded.last_turn, last_turn), "
                "stated = excluded.stated",
                (*values, now, now, now, turn),
            )
            node = self._owned(values[1], values[0])
            assert node is not None
            if self._index is not None:
                if before is None:
                    self._index.inserted(
                        (node.scope_path, node.layer), node.id, node.label, in_transaction=True
                    )
                elif not before.retracted:
                    self._relabelled_in_index(node, (before.layer, before.label))
        return node, before is None

    def insert_node(
        self,
        scope: Any,
        *,
        node_id: str,
        layer: Any,
        label: str,
        properties: dict[str, Any] | None = None,
        importance: float = 5.0,
        salience: float = 0.5,
        origin: str = "",
        turn: int | None = None,
    ) -> bool:
        """Insert the row ``(scope.scope_path, node_id)`` unless ``scope`` already owns one (which is left
        alone); True when it was inserted. An ancestor's row with the same id is another row."""
        values = self._node_values(scope, node_id, layer, label, properties, importance, salience, origin)
        now = _now()
        cursor = self._execute(
            _INSERT_NODE + "ON CONFLICT (scope_path, id) DO NOTHING", (*values, now, now, now, _turn(turn))
        )
        inserted = cursor.rowcount == 1
        if inserted and self._index is not None:
            self._index.inserted(
                (values[1], values[3]), values[0], values[4], in_transaction=self._conn.in_transaction
            )
        return inserted

    def retract_node(self, scope: Any, node_id: str, *, reason: str = "") -> bool:
        """Soft-retract the row ``scope`` owns (an ancestor's row is not ``scope``'s to retract).

        Returns whether a live row was retracted. The row stays for audit; reads hide it.
        """
        scope_path = _text("scope path", scope.scope_path)
        with self.transaction():
            now = _now()
            cursor = self._execute(
                "UPDATE nodes SET retracted_at = ?, retraction_reason = ?, updated_at = ? "
                "WHERE scope_path = ? AND id = ? AND retracted_at IS NULL",
                (now, reason, now, scope_path, node_id),
            )
            retracted = cursor.rowcount == 1
            if retracted and self._index is not None:
                (layer,) = self._rows(
                    "SELECT layer FROM nodes WHERE scope_path = ? AND id = ?", (scope_path, node_id)
                )[0]
                self._index.removed((scope_path, layer), node_id, in_transaction=True)
        return retracted

    # -- the ingest ledger -----------------------------------------------------------------------------

    _LEDGER_COLUMNS = (
        "scope_path, record_id, node_id, outcome, turn, layer, text, match_kind, match_score, source, "
        "ingested_at"
    )

    def ledger_entry(self, scope_path: str, record_id: str) -> LedgerEntry | None:
        """What the record ``record_id`` of ``scope_path`` became, if it was applied."""
        rows = self._rows(
            f"SELECT {self._LEDGER_COLUMNS} FROM ledger WHERE scope_path = ? AND record_id = ?",
            (scope_path, record_id),
        )
        return LedgerEntry(*rows[0]) if rows else None

    def add_ledger_entry(self, entry: LedgerEntry) -> None:
        """Record an applied record; call it in the transaction that wrote or touched its node."""
        self._execute(
            f"INSERT INTO ledger ({self._LEDGER_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                entry.scope_path,
                entry.record_id,
                entry.node_id,
                entry.outcome,
                entry.turn,
                entry.layer,
                self.redact_secrets(_text("text", entry.text)),
                entry.match_kind,
                entry.match_score,
                entry.source,
                entry.ingested_at or _now(),
            ),
        )

    # -- secret memory: once a secret, always a secret, store-wide --------------------------

    def learn_secrets(self, secrets: Iterable[tuple[str, str]]) -> int:
        """Remember each ``(value, kind)`` a turn's scrubbing found (those with enough entropy,
        :mod:`memdedup.secret_memory`), and redact the earlier rows, ledger texts and transcript rows
        that hold a newly remembered one, in the caller's transaction (or one of its own). Returns how
        many values were new."""
        assert self._secrets is not None
        with self.transaction():
            with database_errors(self.path, "remembering secrets"):
                learned = self._secrets.learn(secrets, _SECRET_REWRITE)
            if learned and self._index is not None:
                self._index.invalidate()  # labels changed in place
        return learned

    def secrets_remembered(self) -> int:
        """How many values this store remembers as secrets (0 for a store opened read-only)."""
        if self._secrets is None:
            return 0
        with database_errors(self.path, "reading remembered secrets"):
            return len(self._secrets)

    def redact_secrets(self, text: str) -> str:
        """``text`` with every value this store remembers as a secret redacted (what every write does)."""
        if self._secrets is None:
            return text
        with database_errors(self.path, "reading remembered secrets"):
            return self._secrets.redact(text)

    def ledger(self) -> list[LedgerEntry]:
        """Every applied record, in ``(scope_path, record_id)`` order."""
        rows = self._rows(f"SELECT {self._LEDGER_COLUMNS} FROM ledger ORDER BY scope_path, record_id")
        return [LedgerEntry(*row) for row in rows]

    def integrity_check(self) -> str:
        """SQLite's ``PRAGMA integrity_check`` answer (``"ok"`` for a sound file)."""
        return str(self._rows("PRAGMA integrity_check")[0][0])
