"""What the store reads back: a memory row, a ledger entry, a revision, and how a row is decoded."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memdedup.errors import MemdedupError
from memdedup.scope import SCOPE_PATH_KEY, readable_scope_path

__all__ = [
    "CURRENT",
    "LedgerEntry",
    "Revision",
    "StoreError",
    "StoreIntegrityWarning",
    "StoredNode",
    "damaged",
    "node_from_row",
]

CURRENT = "current"
"""The kind of the last entry of a row's history: its current text."""


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


@dataclass(frozen=True)
class StoredNode:
    """One stored memory, in the shape ``find_canonical_node`` reads (``id``, ``label``, ``properties``
    with ``scope_path``, ``tenant_id``).

    ``label`` is the current text. ``last_stated`` (ISO time) and ``last_turn`` say when the fact was
    last stated (restated or updated); ``stated`` is the store's statement counter then (higher is more
    recent, across every scope of the file; 0 in a file from before statement times were kept).
    """

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
    last_stated: str = ""
    last_turn: int | None = None
    stated: int = 0

    @property
    def scope(self) -> str:
        """The owning scope, printed (``org:acme/user:dana``)."""
        return readable_scope_path(self.scope_path)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "scope_path": self.scope_path,
            "scope": self.scope,
            "layer": self.layer,
            "label": self.label,
            "properties": {k: v for k, v in self.properties.items() if k != SCOPE_PATH_KEY},
            "importance": self.importance,
            "salience": self.salience,
            "origin": self.origin,
            "mentions": self.mentions,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "last_stated": self.last_stated,
            "last_turn": self.last_turn,
            "retracted": self.retracted,
        }


@dataclass(frozen=True)
class LedgerEntry:
    """An applied record: what ``(scope_path, record_id)`` became (``written``, ``restated`` or
    ``updated``, into ``node_id``), and why (``match_kind``, ``match_score``)."""

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


@dataclass(frozen=True)
class Revision:
    """One entry of a row's history (:meth:`memdedup.store.SQLiteGraphStore.history`).

    ``kind``: ``updated`` (``text`` was current until the statement of ``turn`` replaced it, ``reason``
    says why), ``restated`` (a restatement that kept the current text), or ``current`` (the last entry:
    the row's current text, last stated at ``stated_at`` in ``turn``).
    """

    kind: str
    text: str
    reason: str = ""
    turn: int | None = None
    stated_at: str = ""
    source: str = ""
    properties: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "text": self.text,
            "reason": self.reason,
            "turn": self.turn,
            "stated_at": self.stated_at,
            "source": self.source,
            "properties": dict(self.properties),
        }


def damaged(column: str, value: Any, number: type | None, node: bool) -> str:
    """Why a stored value read as bytes (``text_factory=bytes``) is damaged, or ``""``."""
    if number is not None:
        return (
            ""
            if value is None
            or (isinstance(value, int | float) and (number is float or isinstance(value, int)))
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


def properties_from(text: Any, where: str) -> dict[str, Any]:
    """A stored properties column as a dict (a damaged one is a StoreError naming ``where``)."""
    try:
        properties = json.loads(text)
    except (TypeError, ValueError, RecursionError) as exc:
        raise StoreError(f"{where} holds properties that are not JSON: the database is damaged") from exc
    if not isinstance(properties, dict):
        raise StoreError(f"{where} holds properties that are not an object: the database is damaged")
    return properties


def node_from_row(row: Sequence[Any]) -> StoredNode:
    """A :class:`StoredNode` from a row of :data:`memdedup.store.schema.NODE_COLUMNS`."""
    properties = properties_from(row[6], f"row {row[0]}")
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
        last_stated=row[15] or "",
        last_turn=row[16],
        stated=row[17] or 0,
    )
