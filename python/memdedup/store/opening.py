"""Opening a store file, in this order, so that nothing is written to a file that is not memdedup's:

1. *Ownership*, read only (:func:`claim`): the file must be empty (no schema object) or memdedup's
   (SQLite's ``application_id`` header field is :data:`~memdedup.store.schema.APPLICATION_ID`, or, for a
   file from before memdedup stamped it, every schema object is one memdedup creates). Anything else,
   another application's database, is refused with a :class:`StoreError` and left byte for byte as it
   was: no table, no WAL switch.
2. *Integrity*, read only (:func:`check`): ``"auto"`` (the default) runs SQLite's ``integrity_check``
   on a file of at most 8 MiB and ``quick_check`` on a larger one; ``"quick"`` (every page's structure,
   in time linear in the file) and ``"full"`` (``integrity_check``: also every index against its table,
   so a damaged label is caught) choose, ``"off"`` skips it. A damaged file is not refused (its readable
   rows may be all a user has left): the problems are returned and announced with a
   :class:`StoreIntegrityWarning`. A file too damaged to check is a StoreError.
3. *Version* (:func:`schema_version`): another memdedup's newer version, or a version that is not a
   number, is a StoreError. A writing open then (:func:`configure`) switches to WAL, creates the
   schema, stamps the application id and migrates an older file in place, in one transaction, after
   copying it to ``PATH.bak-vN`` beside it (:func:`backup`). A read-only open stops after the checks and
   reads an older file as it is.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
import warnings
from typing import Any

from memdedup import secret_memory
from memdedup.scope import readable_scope_path
from memdedup.scrub import redact
from memdedup.store.records import StoreError, StoreIntegrityWarning, damaged
from memdedup.store.schema import APPLICATION_ID, OWN_OBJECTS, SCHEMA, SCHEMA_VERSION, migrate

__all__ = ["CHECKS", "backup", "check", "claim", "configure", "schema_version"]

logger = logging.getLogger("memdedup.store")

CHECKS = ("auto", "quick", "full", "off")
_FULL_CHECK_MAX_BYTES = 8 * 1024 * 1024
"""``check="auto"`` runs the full ``integrity_check`` on files up to this size (~0.4 s at 8 MiB, measured on
a memdedup store: it also compares every index with its table, which catches damaged label text), and
``quick_check`` (~0.3 s per 120 MB) above it."""


def claim(conn: sqlite3.Connection, path: str) -> None:
    """Refuse, before writing anything, a database that is neither empty nor memdedup's."""
    names = sorted(
        name
        for (name,) in conn.execute("SELECT name FROM sqlite_master").fetchall()
        if not name.startswith("sqlite_")
    )
    application_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
    if application_id == APPLICATION_ID or (application_id == 0 and not names):
        return
    if application_id == 0 and "meta" in names and set(names) <= OWN_OBJECTS:
        return  # written by a memdedup from before the application id was stamped
    if application_id != 0:
        whose = f"its SQLite application_id is {application_id:#010x}, not memdedup's {APPLICATION_ID:#010x}"
    else:
        shown = ", ".join(repr(name) for name in names[:8]) + (", ..." if len(names) > 8 else "")
        whose = f"it holds schema objects memdedup did not create ({shown})"
    raise StoreError(
        f"{redact(path)!r} is not a memdedup database: {whose}. memdedup writes only to an empty "
        "database or one of its own, so the file was left as it was; give --db a new path"
    )


def check(conn: sqlite3.Connection, path: str, how: str) -> list[str]:
    """The integrity problems of the file (``[]`` when sound or unchecked), each also announced."""
    if how == "off" or path == ":memory:" or not path:
        return []
    if how == "auto":
        try:
            small = os.path.getsize(path) <= _FULL_CHECK_MAX_BYTES
        except OSError:
            small = True
        how = "full" if small else "quick"
    pragma = "quick_check" if how == "quick" else "integrity_check"
    try:
        rows = [str(row[0]) for row in conn.execute(f"PRAGMA {pragma}(20)").fetchall()]
    except sqlite3.DatabaseError as exc:
        # Too damaged for this check to finish: say so, with what the structural check still finds.
        rows = [f"the check could not finish ({redact(exc)})"]
        if pragma != "quick_check":
            try:
                rows += [str(row[0]) for row in conn.execute("PRAGMA quick_check(20)").fetchall()]
            except sqlite3.DatabaseError:
                pass
    checked = f"SQLite's {pragma}"
    if pragma == "integrity_check" and rows == ["ok"]:
        checked += " and every row's content"
        rows = _content_problems(conn) or rows
    if rows == ["ok"]:
        return []
    problems = [
        line
        for row in rows
        for line in row.splitlines()
        if line.strip() and not line.startswith("***") and line != "ok"
    ]
    summary = "; ".join(problems[:3])
    message = (
        f"{redact(path)!r} failed its integrity check on open ({checked}): {redact(summary)}"
        + (f" (and {len(problems) - 3} more)" if len(problems) > 3 else "")
        + ". Rows may be missing or damaged; back the file up and repair it (sqlite3 .recover)"
    )
    logger.warning("%s", message)
    warnings.warn(message, StoreIntegrityWarning, stacklevel=4)
    return problems


def _content_problems(conn: sqlite3.Connection, limit: int = 20) -> list[str]:
    """What SQLite's checks cannot see: stored text that is not UTF-8, properties that are not a JSON
    object, a number column holding something else (a flipped byte inside a row's payload). Row
    numbers only: never the text."""
    expected: dict[str, dict[str, type]] = {
        "meta": {},
        "nodes": {
            "seq": int,
            "importance": float,
            "salience": float,
            "mentions": int,
            "stated": int,
            "last_turn": int,
        },
        "ledger": {"turn": int},
        "revisions": {"seq": int, "turn": int},
    }
    problems: list[str] = []
    conn.text_factory = bytes
    try:
        for table, numbers in expected.items():
            columns = [str(row[1], "utf-8") for row in conn.execute(f"PRAGMA table_info({table})")]
            if not columns:
                continue  # a new database (no table yet), or an older version without this table
            for position, row in enumerate(conn.execute(f"SELECT * FROM {table}"), start=1):
                for column, value in zip(columns, row, strict=True):
                    problem = damaged(column, value, numbers.get(column), table in ("nodes", "revisions"))
                    if problem:
                        problems.append(f"{table} row {position}: {column} {problem}")
                        if len(problems) >= limit:
                            return problems
    finally:
        conn.text_factory = str
    return problems


def schema_version(conn: sqlite3.Connection, path: str) -> int | None:
    """The file's memdedup schema version (None for a new, empty file); a version this memdedup does not
    read is a StoreError."""
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.OperationalError:
        return None  # no meta table: an empty file
    if row is None:
        return None
    text = str(row[0]).strip()
    if not text.isdigit() or not 1 <= int(text) <= SCHEMA_VERSION:
        raise StoreError(
            f"{redact(path)!r} has memdedup schema version {redact(row[0], 20)}; "
            f"this memdedup reads versions 1 to {SCHEMA_VERSION}"
        )
    return int(text)


def backup(conn: sqlite3.Connection, path: str, version: int) -> str:
    """Copy the database to a new file beside it (``PATH.bak-vN``, or ``PATH.bak-vN.2`` ... when taken),
    a consistent snapshot through SQLite's backup API; the copy's path."""
    target = f"{path}.bak-v{version}"
    number = 1
    while os.path.exists(target):
        number += 1
        target = f"{path}.bak-v{version}.{number}"
    copy = sqlite3.connect(target)
    try:
        conn.backup(copy)
        copy.execute("PRAGMA journal_mode = DELETE")  # one self-contained file, whatever the original's mode
    finally:
        copy.close()
    return target


def configure(conn: sqlite3.Connection, path: str, timeout: float, transaction: Any) -> str | None:
    """Switch a writing connection to WAL, create or migrate the schema (the secret memory's tables
    too, in the same transaction) and stamp the application id; the backup's path when an older file
    was migrated, else None. ``transaction`` is the store's ``BEGIN IMMEDIATE`` context manager."""
    deadline = time.monotonic() + timeout
    while True:
        # Switching to WAL needs a moment without other writers; another process may be creating
        # the same database right now.
        try:
            conn.execute("PRAGMA journal_mode = WAL").fetchone()
            break
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)
    conn.execute("PRAGMA synchronous = NORMAL")
    copied = None
    version = schema_version(conn, path)
    if version is not None and version < SCHEMA_VERSION and path != ":memory:":
        copied = backup(conn, path, version)
    with transaction():
        # Read again under the write lock: another process may have migrated the file meanwhile.
        version = schema_version(conn, path)
        if version is not None and version < SCHEMA_VERSION:
            migrate(conn, version, readable_scope_path)
            logger.info("migrated %s from schema version %d (a copy is at %s)", redact(path), version, copied)
        else:
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
        secret_memory.ensure_schema(conn)  # the store-wide secret memory's tables and key
        if int(conn.execute("PRAGMA application_id").fetchone()[0]) != APPLICATION_ID:
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        if conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() is None:
            conn.execute("INSERT INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
    return copied
