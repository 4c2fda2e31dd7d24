"""An embedded SQLite graph store that :func:`memdedup.dedup.find_canonical_node` accepts as its ``graph``.

One file, stdlib :mod:`sqlite3`, WAL journal, every multi-statement write in one ``BEGIN IMMEDIATE``
transaction, so several processes can write to one database and a killed writer leaves the last
committed state behind.

Read rules (symfonic-core's ``GraphMemoryStore`` over its in-memory backend, which the tests hold this
store to):

* visibility: a query at scope P sees a row whose ``scope_path`` is one of P's
  ``ancestor_prefix_paths()``: exact set membership, never a string-prefix scan;
* ``label_prefix`` is case-sensitive ``str.startswith``; it is answered as a range on the label
  (``prefix <= label < successor(prefix)``), which the ``(scope_path, layer, label)`` index serves;
* order: oldest first (insertion order; an upsert keeps a row's place);
* retracted rows are hidden unless ``include_retracted=True``; ``limit=None`` is all, ``limit=0`` none.

Rows are keyed by ``(scope_path, id)``: a record id is an upsert key *within* its scope, so a child
scope writing an id its ancestor also holds gets its own row and never re-stamps the ancestor's
(visibility is not ownership). Only the owning scope may retract a row.

The ``ledger`` table holds every extracted record the ingest pipeline has applied (``(scope_path,
record_id)`` -> the node it was written as or collapsed into, and why), written in the same transaction
as the node; it is what makes re-running an ingest write nothing new.

Opening a file (in this order, so that nothing is written to a file that is not memdedup's):

1. *Ownership*, read only: the file must be empty (no schema object) or memdedup's (SQLite's
   ``application_id`` header field is :data:`APPLICATION_ID`, or, for a file from before memdedup stamped
   it, every schema object is one memdedup creates). Anything else, another application's database, is
   refused with a :class:`StoreError` and left byte for byte as it was: no table, no WAL switch.
2. *Integrity*, read only: ``check="auto"`` (the default) runs SQLite's ``integrity_check`` on a file
   of at most 8 MiB and ``quick_check`` on a larger one; ``"quick"`` (every page's structure, in time
   linear in the file) and ``"full"`` (``integrity_check``: also every index against its table, so a
   damaged label is caught) choose, ``"off"`` skips it. A damaged file is not refused (its readable rows
   may be all a user has left): the problems are kept in :attr:`SQLiteGraphStore.integrity_problems`
   and announced with a :class:`StoreIntegrityWarning`. A file too damaged to check is a StoreError.
3. WAL journal, the schema, the application id, and the schema version (another version, or one that
   is not a number, is a StoreError).

Every failure of the database itself (a damaged page, a full disk, a lock held beyond the timeout,
an I/O error) is one :class:`StoreError` (a :class:`~memdedup.errors.MemdedupError`) whose message says
what failed; a value SQLite cannot store (a lone surrogate, an integer beyond 64 bits) is an
:class:`~memdedup.errors.InvalidInputError`. Neither message quotes stored text.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import time
import warnings
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from memdedup.errors import InvalidInputError, MemdedupError
from memdedup.scope import SCOPE_PATH_KEY
from memdedup.scrub import redact
from memdedup.secret_memory import OWN_OBJECTS as _SECRET_OBJECTS
from memdedup.secret_memory import Rewrite, SecretMemory
from memdedup.store_index import StoreLabelIndex

if TYPE_CHECKING:
    from memdedup.index import LabelIndex
    from memdedup.recall import Recall

__all__ = [
    "APPLICATION_ID",
    "SCHEMA_VERSION",
    "LedgerEntry",
    "SQLiteGraphStore",
    "StoreError",
    "StoreIntegrityWarning",
    "StoredNode",
    "prefix_successor",
]

logger = logging.getLogger("memdedup.store")

SCHEMA_VERSION = 1
APPLICATION_ID = int.from_bytes(b"mddp", "big")
"""SQLite's ``application_id`` header field of a memdedup database (``PRAGMA application_id``)."""
_MAX_CODE_POINT = 0x10FFFF
_OWN_OBJECTS = (
    frozenset({"meta", "nodes", "ledger", "nodes_scope_layer_label", "nodes_scope_label"}) | _SECRET_OBJECTS
)
# --- secret memory (issue 36): the text columns a newly learned secret is redacted from, store-wide.
_SECRET_REWRITE = (Rewrite("nodes", ("label", "properties")), Rewrite("ledger", ("text",)))
_CHECKS = ("auto", "quick", "full", "off")
_FULL_CHECK_MAX_BYTES = 8 * 1024 * 1024
"""``check="auto"`` runs the full ``integrity_check`` on files up to this size (~0.4 s at 8 MiB, measured on
a memdedup store: it also compares every index with its table, which catches damaged label text), and
``quick_check`` (~0.3 s per 120 MB) above it."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS nodes (
    seq               INTEGER PRIMARY KEY AUTOINCREMENT,
    id                TEXT NOT NULL,
    scope_path        TEXT NOT NULL,
    tenant_id         TEXT NOT NULL,
    layer             TEXT NOT NULL,
    label             TEXT NOT NULL,
    properties        TEXT NOT NULL DEFAULT '{}',
    importance        REAL NOT NULL DEFAULT 5.0,
    salience          REAL NOT NULL DEFAULT 0.5,
    origin            TEXT NOT NULL DEFAULT '',
    mentions          INTEGER NOT NULL DEFAULT 1,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL,
    retracted_at      TEXT,
    retraction_reason TEXT NOT NULL DEFAULT '',
    UNIQUE (scope_path, id)
);
CREATE INDEX IF NOT EXISTS nodes_scope_layer_label ON nodes (scope_path, layer, label);
CREATE INDEX IF NOT EXISTS nodes_scope_label ON nodes (scope_path, label);
CREATE TABLE IF NOT EXISTS ledger (
    scope_path  TEXT NOT NULL,
    record_id   TEXT NOT NULL,
    node_id     TEXT NOT NULL,
    outcome     TEXT NOT NULL CHECK (outcome IN ('written', 'collapsed')),
    match_kind  TEXT,
    match_score REAL,
    turn        INTEGER NOT NULL,
    layer       TEXT NOT NULL,
    text        TEXT NOT NULL,
    source      TEXT NOT NULL DEFAULT '',
    ingested_at TEXT NOT NULL,
    PRIMARY KEY (scope_path, record_id)
) WITHOUT ROWID;
"""

_INSERT_NODE = (
    "INSERT INTO nodes (id, scope_path, tenant_id, layer, label, properties, importance, salience, origin, "
    "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
)
_NODE_COLUMNS = (
    "seq, id, scope_path, tenant_id, layer, label, properties, importance, salience, origin, mentions, "
    "created_at, updated_at, retracted_at, retraction_reason"
)


class StoreError(MemdedupError):
    """The database cannot be used or failed: not memdedup's, another schema version, damaged, full, an I/O
    error, a lock held beyond the timeout.

    ``report`` is the partial :class:`~memdedup.ingest.IngestReport` when an ingest run stopped on this
    error (every turn it lists was committed), else None.
    """

    report: Any = None


class StoreIntegrityWarning(UserWarning):
    """The database failed its integrity check on open.

    :attr:`SQLiteGraphStore.integrity_problems` lists what the check found.
    """


# The errors of a value, not of the database: a parameter SQLite cannot bind or store.
_VALUE_ERRORS = (sqlite3.InterfaceError, sqlite3.ProgrammingError, sqlite3.DataError, OverflowError)


@contextmanager
def _database_errors(path: str, doing: str) -> Iterator[None]:
    """Raise every SQLite failure inside as one :class:`StoreError` (a bad value as InvalidInputError)."""
    try:
        yield
    except _VALUE_ERRORS as exc:
        raise InvalidInputError(f"SQLite cannot store a value while {doing}: {redact(exc)}") from exc
    except sqlite3.Error as exc:
        raise StoreError(f"the database {redact(path)!r} failed while {doing}: {redact(exc)}") from exc


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _text(name: str, value: Any) -> str:
    text = str(getattr(value, "value", value))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        # Never quote the text: it may be a memory, and this message reaches logs and reports.
        raise InvalidInputError(
            f"{name} is not valid Unicode text (a lone surrogate at position {exc.start})"
        ) from None
    return text


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


@dataclass(frozen=True)
class StoredNode:
    """One stored memory, in the shape ``find_canonical_node`` reads (``id``, ``label``, ``properties``
    with ``scope_path``, ``tenant_id``)."""

    id: str
    scope_path: str
    tenant_id: str
    layer: str
    label: str
    properties: dict[str, Any] = field(default_factory=dict)
    importance: float = 5.0
    salience: float = 0.5
    origin: str = ""
    mentions: int = 1
    created_at: str = ""
    updated_at: str = ""
    retracted: bool = False
    retraction_reason: str = ""
    seq: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "scope_path": self.scope_path,
            "layer": self.layer,
            "label": self.label,
            "properties": {k: v for k, v in self.properties.items() if k != SCOPE_PATH_KEY},
            "importance": self.importance,
            "salience": self.salience,
            "origin": self.origin,
            "mentions": self.mentions,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "retracted": self.retracted,
        }


@dataclass(frozen=True)
class LedgerEntry:
    """An applied record: what ``(scope_path, record_id)`` became, and why."""

    scope_path: str
    record_id: str
    node_id: str
    outcome: str
    turn: int
    layer: str
    text: str
    match_kind: str | None = None
    match_score: float | None = None
    source: str = ""
    ingested_at: str = ""


def _damaged(column: str, value: Any, number: type | None, node: bool) -> str:
    """Why a stored value read as bytes (``text_factory=bytes``) is damaged, or ``""``."""
    if number is not None:
        return (
            ""
            if isinstance(value, int | float) and (number is float or isinstance(value, int))
            else ("is not a number")
        )
    if not isinstance(value, bytes):
        return ""
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        return "is not UTF-8 text"
    if node and column == "properties":
        try:
            if not isinstance(json.loads(text), dict):
                return "is not a JSON object"
        except (ValueError, RecursionError):
            return "is not JSON"
    return ""


def _node(row: Sequence[Any]) -> StoredNode:
    try:
        properties = json.loads(row[6])
    except (TypeError, ValueError, RecursionError) as exc:
        raise StoreError(f"row {row[0]} holds properties that are not JSON: the database is damaged") from exc
    if not isinstance(properties, dict):
        raise StoreError(f"row {row[0]} holds properties that are not an object: the database is damaged")
    properties[SCOPE_PATH_KEY] = row[2]
    return StoredNode(
        seq=row[0],
        id=row[1],
        scope_path=row[2],
        tenant_id=row[3],
        layer=row[4],
        label=row[5],
        properties=properties,
        importance=row[7],
        salience=row[8],
        origin=row[9],
        mentions=row[10],
        created_at=row[11],
        updated_at=row[12],
        retracted=row[13] is not None,
        retraction_reason=row[14],
    )


class SQLiteGraphStore:
    """A memory graph in one SQLite file (``":memory:"`` works too, for one connection).

    ``query_nodes`` is a coroutine because that is the graph protocol ``find_canonical_node`` awaits;
    every other method is a plain call (SQLite is synchronous), and :meth:`query` is ``query_nodes``
    without the coroutine. See the module docstring for what opening a file checks (``check``).

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
    ) -> None:
        if check not in _CHECKS:
            raise InvalidInputError(f"check must be one of {', '.join(_CHECKS)}, not {redact(check, 40)!r}")
        if not isinstance(label_index, bool):
            raise InvalidInputError(f"label_index must be True or False, not a {type(label_index).__name__}")
        self._index: StoreLabelIndex | None = None
        self._secrets: SecretMemory | None = None  # secret memory (issue 36): made by _configure
        self._data_version = 0
        self.path = os.fspath(path)
        self.timeout = timeout
        #: What the integrity check on open found ("" lines when the file is sound or unchecked).
        self.integrity_problems: list[str] = []
        try:
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
            self._claim()
            self._check(check)
            self._configure()
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

    # -- opening: ownership, integrity, schema ---------------------------------------------------------

    def _claim(self) -> None:
        """Refuse, before writing anything, a database that is neither empty nor memdedup's."""
        names = sorted(
            name
            for (name,) in self._conn.execute("SELECT name FROM sqlite_master").fetchall()
            if not name.startswith("sqlite_")
        )
        application_id = int(self._conn.execute("PRAGMA application_id").fetchone()[0])
        if application_id == APPLICATION_ID or (application_id == 0 and not names):
            return
        if application_id == 0 and "meta" in names and set(names) <= _OWN_OBJECTS:
            return  # written by a memdedup from before the application id was stamped
        if application_id != 0:
            whose = (
                f"its SQLite application_id is {application_id:#010x}, not memdedup's {APPLICATION_ID:#010x}"
            )
        else:
            shown = ", ".join(repr(name) for name in names[:8]) + (", ..." if len(names) > 8 else "")
            whose = f"it holds schema objects memdedup did not create ({shown})"
        raise StoreError(
            f"{redact(self.path)!r} is not a memdedup database: {whose}. memdedup writes only to an empty "
            "database or one of its own, so the file was left as it was; give --db a new path"
        )

    def _check(self, check: str) -> None:
        if check == "off" or self.path == ":memory:" or not self.path:
            return
        if check == "auto":
            try:
                small = os.path.getsize(self.path) <= _FULL_CHECK_MAX_BYTES
            except OSError:
                small = True
            check = "full" if small else "quick"
        pragma = "quick_check" if check == "quick" else "integrity_check"
        try:
            rows = [str(row[0]) for row in self._conn.execute(f"PRAGMA {pragma}(20)").fetchall()]
        except sqlite3.DatabaseError as exc:
            # Too damaged for this check to finish: say so, with what the structural check still finds.
            rows = [f"the check could not finish ({redact(exc)})"]
            if pragma != "quick_check":
                try:
                    rows += [str(row[0]) for row in self._conn.execute("PRAGMA quick_check(20)").fetchall()]
                except sqlite3.DatabaseError:
                    pass
        checked = f"SQLite's {pragma}"
        if pragma == "integrity_check" and rows == ["ok"]:
            checked += " and every row's content"
            rows = self._content_problems() or rows
        if rows == ["ok"]:
            return
        self.integrity_problems = [
            line
            for row in rows
            for line in row.splitlines()
            if line.strip() and not line.startswith("***") and line != "ok"
        ]
        summary = "; ".join(self.integrity_problems[:3])
        message = (
            f"{redact(self.path)!r} failed its integrity check on open ({checked}): {redact(summary)}"
            + (f" (and {len(self.integrity_problems) - 3} more)" if len(self.integrity_problems) > 3 else "")
            + ". Rows may be missing or damaged; back the file up and repair it (sqlite3 .recover)"
        )
        logger.warning("%s", message)
        warnings.warn(message, StoreIntegrityWarning, stacklevel=3)

    def _content_problems(self, limit: int = 20) -> list[str]:
        """What SQLite's checks cannot see: stored text that is not UTF-8, properties that are not a JSON
        object, a number column holding something else (a flipped byte inside a row's payload). Row
        numbers only: never the text."""
        expected: dict[str, dict[str, type]] = {
            "meta": {},
            "nodes": {"seq": int, "importance": float, "salience": float, "mentions": int},
            "ledger": {"turn": int},
        }
        problems: list[str] = []
        self._conn.text_factory = bytes
        try:
            for table, numbers in expected.items():
                columns = [str(row[1], "utf-8") for row in self._conn.execute(f"PRAGMA table_info({table})")]
                if not columns:
                    continue  # a new database: no table yet
                for position, row in enumerate(self._conn.execute(f"SELECT * FROM {table}"), start=1):
                    for column, value in zip(columns, row, strict=True):
                        problem = _damaged(column, value, numbers.get(column), table == "nodes")
                        if problem:
                            problems.append(f"{table} row {position}: {column} {problem}")
                            if len(problems) >= limit:
                                return problems
        finally:
            self._conn.text_factory = str
        return problems

    def _configure(self) -> None:
        deadline = time.monotonic() + self.timeout
        while True:
            # Switching to WAL needs a moment without other writers; another process may be creating
            # the same database right now.
            try:
                self._conn.execute("PRAGMA journal_mode = WAL").fetchone()
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)
        self._conn.execute("PRAGMA synchronous = NORMAL")
        with self.transaction():
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    self._conn.execute(statement)
            self._secrets = SecretMemory(self._conn)  # secret memory (issue 36)
            self._secrets.ensure_schema()
            if int(self._conn.execute("PRAGMA application_id").fetchone()[0]) != APPLICATION_ID:
                self._conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            row = self._conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if row is None:
                self._conn.execute(
                    "INSERT INTO meta (key, value) VALUES ('schema_version', ?)", (SCHEMA_VERSION,)
                )
            elif str(row[0]).strip() != str(SCHEMA_VERSION):
                raise StoreError(
                    f"{redact(self.path)!r} has memdedup schema version {redact(row[0], 20)}; "
                    f"this memdedup reads version {SCHEMA_VERSION}"
                )

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
        with _database_errors(self.path, doing):
            return self._conn.execute(sql, params).fetchall()

    def _execute(self, sql: str, params: Sequence[Any] = (), *, doing: str = "writing") -> sqlite3.Cursor:
        with _database_errors(self.path, doing):
            return self._conn.execute(sql, params)

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
            self._secrets.begin()  # secret memory (issue 36): read other writers' once per transaction
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
            self._secrets.committed()  # secret memory (issue 36): checkpoint after a rewrite

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
            self._secrets.rolled_back()  # secret memory (issue 36)

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
        sql = f"SELECT {_NODE_COLUMNS} FROM nodes WHERE {' AND '.join(where)} ORDER BY seq"
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
        return [_node(row) for row in self._rows(sql, params)]

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
            f"SELECT {_NODE_COLUMNS} FROM nodes WHERE id = ? AND scope_path IN ({marks})"
            + ("" if include_retracted else " AND retracted_at IS NULL")
            + " ORDER BY length(scope_path) DESC LIMIT 1"
        )
        rows = self._rows(sql, [_text("node id", node_id), *paths])
        return _node(rows[0]) if rows else None

    def owned_node(self, scope: Any, node_id: str) -> StoredNode | None:
        """The row ``(scope.scope_path, node_id)`` (retracted or not): the one ``scope`` owns, if any."""
        return self._owned(_text("scope path", scope.scope_path), _text("node id", node_id))

    def all_nodes(self, *, include_retracted: bool = True) -> list[StoredNode]:
        """Every row of every scope, oldest first (for reports, dumps and tests)."""
        sql = f"SELECT {_NODE_COLUMNS} FROM nodes"
        if not include_retracted:
            sql += " WHERE retracted_at IS NULL"
        return [_node(row) for row in self._rows(sql + " ORDER BY seq")]

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
        """The memory block recalled at ``scope``, restatements collapsed (``collapse=False``: not) and the
        window's own turns removed: one call for the recall path (see :func:`memdedup.recall.recall`;
        ``threshold``, ``min_chars`` and ``guards`` are the library's defaults)."""
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
        props = {k: v for k, v in (properties or {}).items() if k != SCOPE_PATH_KEY}
        try:
            encoded = json.dumps(props, ensure_ascii=True, sort_keys=False, default=str)
        except (ValueError, TypeError, RecursionError) as exc:
            raise InvalidInputError(
                f"the node's properties cannot be stored as JSON: {redact(exc)}"
            ) from None
        return (
            _text("node id", node_id),
            _text("scope path", scope.scope_path),
            _text("tenant id", getattr(scope, "tenant_id", "")),
            _text("layer", layer),
            self.redact_secrets(_text("label", label)),  # secret memory (issue 36)
            self.redact_secrets(encoded),
            float(importance),
            float(salience),
            _text("origin", origin),
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
    ) -> tuple[StoredNode, bool]:
        """Insert or update the row ``(scope.scope_path, node_id)``; ``(node, True)`` when it was new.

        An update replaces the label, layer, properties, importance, salience and origin, and keeps the
        row's place in the order, its creation time and its mention count. A retracted row stays retracted.
        """
        values = self._node_values(scope, node_id, layer, label, properties, importance, salience, origin)
        now = _now()
        with self.transaction():
            existed = self._rows(
                "SELECT layer, label, retracted_at FROM nodes WHERE scope_path = ? AND id = ?",
                (values[1], values[0]),
            )
            self._execute(
                _INSERT_NODE + "ON CONFLICT (scope_path, id) DO UPDATE SET layer = excluded.layer, "
                "label = excluded.label, properties = excluded.properties, importance = excluded.importance, "
                "salience = excluded.salience, origin = excluded.origin, updated_at = excluded.updated_at",
                (*values, now, now),
            )
            node = self._owned(values[1], values[0])
            assert node is not None
            if self._index is not None:
                self._upserted_in_index(node, existed[0] if existed else None)
        return node, not existed

    def _upserted_in_index(self, node: StoredNode, before: Sequence[Any] | None) -> None:
        """Keep the label index in step with an upsert (inside its transaction)."""
        assert self._index is not None
        partition = (node.scope_path, node.layer)
        if before is None:
            self._index.inserted(partition, node.id, node.label, in_transaction=True)
        elif before[2] is None and (before[0], before[1]) != (node.layer, node.label):
            # A live row's label or layer changed in place: its place in store order is kept, which an
            # insertion-ordered index can only follow by a rebuild of both partitions.
            self._index.reordered((node.scope_path, before[0]), partition, in_transaction=True)

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
    ) -> bool:
        """Insert the row ``(scope.scope_path, node_id)`` unless ``scope`` already owns one (which is left
        alone); True when it was inserted. An ancestor's row with the same id is another row."""
        values = self._node_values(scope, node_id, layer, label, properties, importance, salience, origin)
        now = _now()
        cursor = self._execute(_INSERT_NODE + "ON CONFLICT (scope_path, id) DO NOTHING", (*values, now, now))
        inserted = cursor.rowcount == 1
        if inserted and self._index is not None:
            self._index.inserted(
                (values[1], values[3]), values[0], values[4], in_transaction=self._conn.in_transaction
            )
        return inserted

    def _owned(self, scope_path: str, node_id: str) -> StoredNode | None:
        rows = self._rows(
            f"SELECT {_NODE_COLUMNS} FROM nodes WHERE scope_path = ? AND id = ?", (scope_path, node_id)
        )
        return _node(rows[0]) if rows else None

    def record_mention(
        self, scope: Any, node_id: str, *, importance: float | None = None, salience: float | None = None
    ) -> StoredNode:
        """A restatement collapsed into the row ``scope`` owns: one more mention, the higher importance
        and salience kept, the label untouched."""
        scope_path = _text("scope path", scope.scope_path)
        with self.transaction():
            cursor = self._execute(
                "UPDATE nodes SET mentions = mentions + 1, updated_at = ?, "
                "importance = max(importance, coalesce(?, importance)), "
                "salience = max(salience, coalesce(?, salience)) WHERE scope_path = ? AND id = ?",
                (_now(), importance, salience, scope_path, node_id),
            )
            if cursor.rowcount != 1:
                raise InvalidInputError(f"the write scope owns no node {redact(node_id, 40)!r}")
            node = self._owned(scope_path, node_id)
        assert node is not None
        return node

    def retract_node(self, scope: Any, node_id: str, *, reason: str = "") -> bool:
        """Soft-retract the row ``scope`` owns (an ancestor's row is not ``scope``'s to retract).

        Returns whether a live row was retracted. The row stays for audit; reads hide it.
        """
        scope_path = _text("scope path", scope.scope_path)
        with self.transaction():
            cursor = self._execute(
                "UPDATE nodes SET retracted_at = ?, retraction_reason = ?, updated_at = ? "
                "WHERE scope_path = ? AND id = ? AND retracted_at IS NULL",
                (_now(), reason, _now(), scope_path, node_id),
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
                self.redact_secrets(_text("text", entry.text)),  # secret memory (issue 36)
                entry.match_kind,
                entry.match_score,
                entry.source,
                entry.ingested_at or _now(),
            ),
        )

    # -- secret memory (issue 36): once a secret, always a secret, store-wide --------------------------

    def learn_secrets(self, secrets: Iterable[tuple[str, str]]) -> int:
        """Remember each ``(value, kind)`` a turn's scrubbing found (those with enough entropy,
        :mod:`memdedup.secret_memory`), and redact the earlier rows, ledger texts and transcript rows
        that hold a newly remembered one, in the caller's transaction (or one of its own). Returns how
        many values were new."""
        assert self._secrets is not None
        with self.transaction():
            with _database_errors(self.path, "remembering secrets"):
                learned = self._secrets.learn(secrets, _SECRET_REWRITE)
            if learned and self._index is not None:
                self._index.invalidate()  # labels changed in place
        return learned

    def redact_secrets(self, text: str) -> str:
        """``text`` with every value this store remembers as a secret redacted (what every write does)."""
        if self._secrets is None:
            return text
        with _database_errors(self.path, "reading remembered secrets"):
            return self._secrets.redact(text)

    def ledger(self) -> list[LedgerEntry]:
        """Every applied record, in ``(scope_path, record_id)`` order."""
        rows = self._rows(f"SELECT {self._LEDGER_COLUMNS} FROM ledger ORDER BY scope_path, record_id")
        return [LedgerEntry(*row) for row in rows]

    def integrity_check(self) -> str:
        """SQLite's ``PRAGMA integrity_check`` answer (``"ok"`` for a sound file)."""
        return str(self._rows("PRAGMA integrity_check")[0][0])
