"""What a value must be for the store to keep it, and how a failure of SQLite is reported: one rule each,
for every table (no message quotes stored text)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from memdedup.errors import InputTypeError, InvalidInputError
from memdedup.scope import SCOPE_PATH_KEY
from memdedup.scrub import redact
from memdedup.store.records import StoreError

__all__ = ["database_errors", "now", "properties_json", "text_value", "turn_value"]

# The errors of a value, not of the database: a parameter SQLite cannot bind or store.
_VALUE_ERRORS = (sqlite3.InterfaceError, sqlite3.ProgrammingError, sqlite3.DataError, OverflowError)


@contextmanager
def database_errors(path: str, doing: str) -> Iterator[None]:
    """Raise every SQLite failure inside as one :class:`StoreError` (a bad value as InvalidInputError)."""
    try:
        yield
    except _VALUE_ERRORS as exc:
        raise InvalidInputError(f"SQLite cannot store a value while {doing}: {redact(exc)}") from exc
    except sqlite3.Error as exc:
        raise StoreError(f"the database {redact(path)!r} failed while {doing}: {redact(exc)}") from exc


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def text_value(name: str, value: Any) -> str:
    text = str(getattr(value, "value", value))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        # Never quote the text: it may be a memory, and this message reaches logs and reports.
        raise InvalidInputError(
            f"{name} is not valid Unicode text (a lone surrogate at position {exc.start})"
        ) from None
    return text


def turn_value(turn: Any) -> int | None:
    if turn is None:
        return None
    if isinstance(turn, bool) or not isinstance(turn, int):
        raise InputTypeError(f"a turn must be an int or None, not {type(turn).__name__}")
    return turn


def properties_json(properties: dict[str, Any] | None) -> str:
    props = {k: v for k, v in (properties or {}).items() if k != SCOPE_PATH_KEY}
    try:
        return json.dumps(props, ensure_ascii=True, sort_keys=False, default=str)
    except (ValueError, TypeError, RecursionError) as exc:
        raise InvalidInputError(f"the node's properties cannot be stored as JSON: {redact(exc)}") from None
