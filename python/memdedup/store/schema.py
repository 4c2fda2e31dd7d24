"""The store's schema: its tables, its version, and the migration of an older file.

Tables (docs/write-and-recall.md, "The store's schema", describes them for people querying the file):

``nodes``
    One row per memory (and per transcript message, ``origin = 'transcript'``), keyed by
    ``(scope_path, id)``: ``scope_path`` is the owner (symfonic's ``\\x1f``-joined path, what the
    ownership guard compares) and ``scope`` its printed form (``org:acme/user:dana``); ``label`` is the
    current text; ``seq`` is the row's place in store order (an update keeps it); ``last_stated`` and
    ``last_turn`` say when the fact was last stated, ``stated`` is the store's statement counter at that
    moment (strictly increasing across the file: what "most recently stated" compares).
``revisions``
    Every earlier text of a row, oldest first: ``kind = 'updated'`` holds a text that was current until a
    newer statement replaced it (``reason`` says why: ``ratio 0.972; value 5432 -> 6543``);
    ``kind = 'restated'`` a restatement that kept the current text (recorded when its text differs).
``ledger``
    Every extracted record the write path applied: what ``(scope_path, record_id)`` became
    (``written``, ``restated`` or ``updated``, into ``node_id``) and why.
``meta``
    ``schema_version`` (this module's :data:`SCHEMA_VERSION`).
``memories`` (a view)
    The live rows with their printed scope, for people: ``SELECT * FROM memories WHERE scope = 'org:acme'``.

A file of an older version is migrated in place by the first command that writes to it, in one
transaction, after a copy of it is written beside it (``PATH.bak-v1``); a read-only open reads it as it is.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from memdedup.secret_memory import OWN_OBJECTS as SECRET_OBJECTS

__all__ = [
    "APPLICATION_ID",
    "NODE_COLUMNS",
    "OWN_OBJECTS",
    "SCHEMA",
    "SCHEMA_VERSION",
    "migrate",
    "node_columns",
]

SCHEMA_VERSION = 2
"""The version this memdedup writes. Version 1 (no revisions, no statement times) is migrated."""

APPLICATION_ID = int.from_bytes(b"mddp", "big")
"""SQLite's ``application_id`` header field of a memdedup database (``PRAGMA application_id``)."""

# The columns added by version 2 come last in ``nodes``, where ALTER TABLE puts them in a migrated file:
# a new file and a migrated one have the same layout.
SCHEMA = """
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
    scope             TEXT NOT NULL DEFAULT '',
    last_stated       TEXT NOT NULL DEFAULT '',
    last_turn         INTEGER,
    stated            INTEGER NOT NULL DEFAULT 0,
    UNIQUE (scope_path, id)
);
CREATE INDEX IF NOT EXISTS nodes_scope_layer_label ON nodes (scope_path, layer, label);
CREATE INDEX IF NOT EXISTS nodes_scope_label ON nodes (scope_path, label);
CREATE INDEX IF NOT EXISTS nodes_stated ON nodes (stated);
CREATE TABLE IF NOT EXISTS ledger (
    scope_path  TEXT NOT NULL,
    record_id   TEXT NOT NULL,
    node_id     TEXT NOT NULL,
    outcome     TEXT NOT NULL CHECK (outcome IN ('written', 'restated', 'updated')),
    match_kind  TEXT,
    match_score REAL,
    turn        INTEGER NOT NULL,
    layer       TEXT NOT NULL,
    text        TEXT NOT NULL,
    source      TEXT NOT NULL DEFAULT '',
    ingested_at TEXT NOT NULL,
    PRIMARY KEY (scope_path, record_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS revisions (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    scope_path TEXT NOT NULL,
    node_id    TEXT NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('updated', 'restated')),
    text       TEXT NOT NULL,
    properties TEXT NOT NULL DEFAULT '{}',
    reason     TEXT NOT NULL DEFAULT '',
    turn       INTEGER,
    stated_at  TEXT NOT NULL,
    source     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS revisions_node ON revisions (scope_path, node_id, seq);
CREATE VIEW IF NOT EXISTS memories AS
    SELECT seq, scope, id, layer, label AS text, importance, salience, mentions, origin,
           created_at, last_stated, last_turn
    FROM nodes WHERE retracted_at IS NULL ORDER BY seq;
"""

OWN_OBJECTS = (
    frozenset(
        {
            "meta",
            "nodes",
            "ledger",
            "revisions",
            "memories",
            "nodes_scope_layer_label",
            "nodes_scope_label",
            "nodes_stated",
            "revisions_node",
        }
    )
    | SECRET_OBJECTS
)
"""Every schema object a memdedup store holds (of any version): a file holding anything else is not ours."""

_V1_NODE_COLUMNS = (
    "seq, id, scope_path, tenant_id, layer, label, properties, importance, salience, origin, mentions, "
    "created_at, updated_at, retracted_at, retraction_reason"
)
NODE_COLUMNS = _V1_NODE_COLUMNS + ", last_stated, last_turn, stated"
"""The columns :func:`memdedup.store.records.node_from_row` reads, in its order."""


def node_columns(version: int) -> str:
    """The select list of :data:`NODE_COLUMNS` for a file of ``version`` (an older file, read as it is,
    keeps no statement times: its ``updated_at``, the time of a row's last mention, stands for
    ``last_stated``, and ``stated`` numbers the rows of each answer in that order, as the migration
    does)."""
    if version >= 2:
        return NODE_COLUMNS
    return (
        _V1_NODE_COLUMNS
        + ", updated_at AS last_stated, NULL AS last_turn, "
        + "row_number() OVER (ORDER BY updated_at, seq) AS stated"
    )


def migrate(conn: sqlite3.Connection, version: int, readable: Callable[[str], str]) -> None:
    """Bring a file of ``version`` to :data:`SCHEMA_VERSION`, inside the caller's transaction.

    1 -> 2: ``nodes`` gains ``scope`` (``readable(scope_path)``), ``last_stated`` (its ``updated_at``: the
    time of its last mention), ``last_turn`` (the latest turn the ledger holds for it) and ``stated``
    (numbered in ``updated_at`` order); the ledger's ``collapsed`` outcome becomes ``restated`` (a
    collapse kept the stored text); the ``revisions`` table and the ``memories`` view are created.
    """
    if version == 1:
        for column in (
            "scope TEXT NOT NULL DEFAULT ''",
            "last_stated TEXT NOT NULL DEFAULT ''",
            "last_turn INTEGER",
            "stated INTEGER NOT NULL DEFAULT 0",
        ):
            conn.execute(f"ALTER TABLE nodes ADD COLUMN {column}")
        paths = [row[0] for row in conn.execute("SELECT DISTINCT scope_path FROM nodes")]
        conn.executemany("UPDATE nodes SET scope = ? WHERE scope_path = ?", [(readable(p), p) for p in paths])
        conn.execute("UPDATE nodes SET last_stated = updated_at")
        conn.execute(
            "UPDATE nodes SET last_turn = latest.turn FROM (SELECT scope_path, node_id, max(turn) AS turn "
            "FROM ledger GROUP BY scope_path, node_id) AS latest "
            "WHERE latest.scope_path = nodes.scope_path AND latest.node_id = nodes.id"
        )
        conn.execute(
            "UPDATE nodes SET stated = numbered.n FROM (SELECT seq, row_number() OVER "
            "(ORDER BY updated_at, seq) AS n FROM nodes) AS numbered WHERE numbered.seq = nodes.seq"
        )
        # SQLite cannot change a CHECK constraint in place: the ledger is copied into a new table.
        conn.execute("ALTER TABLE ledger RENAME TO ledger_v1")
        ledger = SCHEMA[SCHEMA.index("CREATE TABLE IF NOT EXISTS ledger") :]
        conn.execute(ledger[: ledger.index(";")])
        conn.execute(
            "INSERT INTO ledger SELECT scope_path, record_id, node_id, "
            "CASE outcome WHEN 'collapsed' THEN 'restated' ELSE outcome END, match_kind, match_score, turn, "
            "layer, text, source, ingested_at FROM ledger_v1"
        )
        conn.execute("DROP TABLE ledger_v1")
        version = 2
    for statement in SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
