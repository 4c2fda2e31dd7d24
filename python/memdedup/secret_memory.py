"""Once a secret, always a secret, store-wide: a store remembers the secrets it has seen and redacts
them wherever they come back, even where nothing marks them as secrets.

A value a turn's scrubbing found as a secret (:attr:`memdedup.scrub.CredentialScrubber.secrets`) is
remembered by a store when it has enough entropy that guessing it from its hash is hopeless: at least
:data:`MIN_BITS` (64) estimated bits (:func:`memdedup.scrub` ``secret_bits``, the lesser of a Shannon
and a word-aware estimate; never a placeholder or a value the policy keeps, since those are no
findings; never a PIN, a word, a short password or a passphrase of words, which stay redacted where
found but are not remembered). What is kept is HMAC-SHA256 of the value under a random 32-byte key
made once per store and kept in it, with the value's length, its estimated bits and its kind (the
length and the estimate let a lookup hash only the spans that could be a remembered value).

Then, in the same SQLite store:

* :meth:`SecretMemory.redact` redacts later text: the token-like spans of a text (``secret_spans``:
  maximal runs of the bytes secrets are made of, and their parts after ``=`` or ``:``, whose length
  and estimated bits are those of a remembered value; linear time) are hashed and compared, and a
  match becomes ``[REDACTED:KIND]``;
* :meth:`SecretMemory.learn`, when a value is first remembered, rewrites the earlier text of the store
  that holds it in clear (the tables and columns the caller names: nodes, revisions, ledger texts,
  transcript rows) in the caller's transaction: one scan per table, for a rare event.

docs/scrub.md ("Store-wide memory") states the threat model: what the key and the threshold protect
against, and what other stores get. This module knows SQLite and the scrubber's engine only; the
store (:mod:`memdedup.store`) decides when to call it.
"""

from __future__ import annotations

import hmac
import json
import os
import re
import sqlite3
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memdedup.errors import InvalidInputError
from memdedup.scrub import _engine, placeholder

__all__ = [
    "KEY_BYTES",
    "MIN_BITS",
    "OWN_OBJECTS",
    "SCHEMA",
    "Rewrite",
    "SecretMemory",
    "ensure_schema",
    "pack_shapes",
]

MIN_BITS = 64.0
"""The fewest estimated bits a value needs to be remembered (guessing 2**64 candidates per value is
hopeless)."""
KEY_BYTES = 32
"""The size of a store's random HMAC key."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS secret_memory_key (
    id  INTEGER PRIMARY KEY CHECK (id = 1),
    key BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS secret_memory (
    seq    INTEGER PRIMARY KEY,
    digest BLOB NOT NULL UNIQUE,
    length INTEGER NOT NULL,
    bits   REAL NOT NULL,
    kind   TEXT NOT NULL
);
"""
OWN_OBJECTS = frozenset({"secret_memory_key", "secret_memory", "sqlite_autoindex_secret_memory_1"})
"""The schema objects :data:`SCHEMA` creates (a store's ownership check lists them)."""

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Rewrite:
    """A table whose text columns :meth:`SecretMemory.learn` rewrites when it learns a value."""

    table: str
    columns: tuple[str, ...]

    def __post_init__(self) -> None:
        if not all(_IDENTIFIER.fullmatch(name) for name in (self.table, *self.columns)):
            raise InvalidInputError("a rewrite names tables and columns by plain SQL identifiers")


def ensure_schema(conn: sqlite3.Connection) -> None:
    """Create the tables and the store's key if they are not there (in the caller's transaction): the
    store does it as it creates or migrates its own schema."""
    for statement in SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)
    conn.execute("INSERT OR IGNORE INTO secret_memory_key (id, key) VALUES (1, ?)", (os.urandom(KEY_BYTES),))


def pack_shapes(shapes: Iterable[tuple[int, float]]) -> bytes:
    """``(length, bits)`` pairs as the engine's ``secret_spans`` takes them: 12 bytes each."""
    return b"".join(struct.pack("<Id", length, bits) for length, bits in shapes)


class SecretMemory:
    """The remembered secrets of one SQLite database, read and written through ``conn``.

    Call :meth:`ensure_schema` once in a write transaction (it makes the tables and the key), then
    :meth:`learn` and :meth:`redact` from the connection's writes; :meth:`rolled_back` when a
    transaction that may have learned something rolls back.
    """

    def __init__(
        self, conn: sqlite3.Connection, *, implementation: str | None = None, min_bits: float = MIN_BITS
    ) -> None:
        self._conn = conn
        self._engine = _engine(implementation)
        self.min_bits = float(min_bits)
        self._key: bytes | None = None
        self._seq = 0
        self._kinds: dict[bytes, str] = {}
        # The (length, estimated bits) of each remembered value, packed for the core: a text's spans
        # of other shapes are never hashed.
        self._shapes: set[tuple[int, float]] = set()
        self._packed = b""
        # Whether another connection may have learned a value since the last read: within one write
        # transaction no other connection writes, so a store reads once per transaction (begin).
        self._stale = True
        #: Whether a learn rewrote earlier text since the last :meth:`committed` (its old pages are in
        #: the WAL until a checkpoint).
        self.rewrote = False

    # -- schema and state ---------------------------------------------------------------------------

    def ensure_schema(self) -> None:
        """Create the tables and the store's key if they are not there (in the caller's transaction)."""
        ensure_schema(self._conn)

    def refresh(self) -> None:
        """Read what other connections (or this one) remembered since the last read: one indexed query."""
        if self._key is None:
            row = self._conn.execute("SELECT key FROM secret_memory_key WHERE id = 1").fetchone()
            if row is None:
                return
            self._key = bytes(row[0])
        for seq, digest, length, bits, kind in self._conn.execute(
            "SELECT seq, digest, length, bits, kind FROM secret_memory WHERE seq > ? ORDER BY seq",
            (self._seq,),
        ):
            self._kinds[bytes(digest)] = str(kind)
            self._shapes.add((int(length), float(bits)))
            self._seq = max(self._seq, int(seq))
            self._packed = b""
        if not self._packed and self._shapes:
            self._packed = pack_shapes(sorted(self._shapes))

    def rolled_back(self) -> None:
        """Forget what was read: a rolled-back transaction may have learned values the store lost."""
        self._seq = 0
        self._kinds.clear()
        self._shapes.clear()
        self._packed = b""
        self._stale = True
        self.rewrote = False

    def begin(self) -> None:
        """A write transaction began: read what other connections remembered once, at the next use
        (until it ends, no other connection writes)."""
        self._stale = True

    def committed(self) -> None:
        """After a commit: when a learn rewrote earlier text, checkpoint the WAL so the old pages (the
        text in clear) leave it. It never waits: a reader holding the WAL open defers it to a later
        checkpoint (docs/scrub.md, "Store-wide memory")."""
        if not self.rewrote:
            return
        self.rewrote = False
        (timeout,) = self._conn.execute("PRAGMA busy_timeout").fetchone()
        try:
            self._conn.execute("PRAGMA busy_timeout = 0")
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        except sqlite3.Error:
            pass
        finally:
            self._conn.execute(f"PRAGMA busy_timeout = {int(timeout)}")

    def __len__(self) -> int:
        self.refresh()
        return len(self._kinds)

    # -- remembering --------------------------------------------------------------------------------

    def memorable(self, value: str) -> bool:
        """Whether ``value`` is one a store remembers: its estimate reaches :attr:`min_bits`."""
        return isinstance(value, str) and self._engine.secret_bits(value) >= self.min_bits

    def _digest(self, value: str) -> bytes:
        assert self._key is not None
        return hmac.digest(self._key, str.encode(value, "utf-8", "surrogatepass"), "sha256")

    def learn(self, secrets: Iterable[tuple[str, str]], rewrite: Sequence[Rewrite] = ()) -> int:
        """Remember each ``(value, kind)`` that is :meth:`memorable` and not remembered yet, and rewrite
        the earlier text of ``rewrite``'s tables that holds it (its JSON-escaped form too, for JSON
        columns). Runs in the caller's write transaction; returns how many values were new."""
        self.refresh()
        if self._key is None:
            return 0
        new: list[tuple[str, str]] = []
        added: set[bytes] = set()
        for value, kind in secrets:
            bits = self._engine.secret_bits(value) if isinstance(value, str) else 0.0
            if bits < self.min_bits:
                continue
            digest = self._digest(value)
            if digest in self._kinds or digest in added:
                continue
            added.add(digest)
            self._conn.execute(
                "INSERT OR IGNORE INTO secret_memory (digest, length, bits, kind) VALUES (?, ?, ?, ?)",
                (digest, len(value), bits, kind),
            )
            new.append((value, kind))
        if not new:
            return 0
        self.refresh()
        for target in rewrite:
            for column in target.columns:
                for value, kind in new:
                    self._rewrite(target.table, column, value, placeholder(kind))
        self.rewrote = True
        return len(new)

    def _rewrite(self, table: str, column: str, value: str, replacement: str) -> None:
        forms = dict.fromkeys([value, json.dumps(value, ensure_ascii=True)[1:-1]])
        for form in forms:
            self._conn.execute(
                f"UPDATE {table} SET {column} = replace({column}, ?, ?) WHERE instr({column}, ?) > 0",
                (form, replacement, form),
            )

    # -- redacting ----------------------------------------------------------------------------------

    def redact(self, text: str) -> str:
        """``text`` with every remembered value in its token-like spans replaced by its placeholder."""
        if self._stale or not self._conn.in_transaction:
            self.refresh()
            self._stale = not self._conn.in_transaction
        if not self._kinds or not isinstance(text, str):
            return text
        spans = self._engine.secret_spans(text, self._packed)
        pieces: list[str] = []
        done = 0
        for start, end in spans:
            kind = self._kinds.get(self._digest(text[start:end]))
            if kind is None or start < done:
                continue
            pieces += (text[done:start], placeholder(kind))
            done = end
        if not pieces:
            return text
        pieces.append(text[done:])
        return "".join(pieces)
