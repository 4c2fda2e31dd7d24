"""What :class:`~memdedup.integrations.langgraph.DedupStore` reads and writes in an item's value: the text
of an item, the supersession mark, the scrubbed value it hands the inner store, and the decision it
records for every put.

The mark
    A superseded item keeps its key and its value, plus one entry, ``value["memdedup"]``::

        {"superseded_by": "k2", "kind": "updated", "rule": "ratio", "score": 0.972,
         "reason": "ratio 0.972; value 5432 -> 6543", "change": "value 5432 -> 6543",
         "at": "2026-05-20T10:00:00+00:00", "index": null}

    ``kind`` is the rule's (:mod:`memdedup.facts`): ``"restated"`` (this item said again what
    ``superseded_by`` holds, or less) or ``"updated"`` (``superseded_by`` says it anew). ``index`` is the
    ``index`` argument :meth:`DedupStore.restore` embeds the item with when it becomes current again.
    The mark lives in the value, so it persists with the item and every process reading the store sees
    it. The top-level key ``"memdedup"`` is the wrapper's: a put whose value carries a mark (a superseded
    item's value, copied back) has it dropped, and any other ``"memdedup"`` entry is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from memdedup.errors import InputTypeError, InvalidInputError
from memdedup.scrub import CredentialScrubber

__all__ = [
    "HISTORY",
    "MARK",
    "RESERVED_ROOT",
    "Decision",
    "Prepared",
    "TextOf",
    "is_hidden",
    "mark_of",
    "prepare",
    "text_getter",
    "without_mark",
]

#: The value key holding the supersession mark.
MARK = "memdedup"
#: The namespace root the wrapper keeps for itself (history), hidden from ``search`` and ``list_namespaces``.
RESERVED_ROOT = "memdedup"
#: History of an overwritten item of namespace ``ns`` lives under ``HISTORY + ns``.
HISTORY = (RESERVED_ROOT, "history")

#: Decision kinds: a new current fact, a restatement of a current one (the put is superseded), an update
#: of a current one (the put supersedes it), a value with no text (never deduplicated).
WRITTEN = "written"
RESTATED = "restated"
UPDATED = "updated"
PASSED = "passed"

TextOf = Callable[[Mapping[str, Any]], "str | None"]


@dataclass(frozen=True)
class Decision:
    """What one put did. ``kind`` is ``"written"``, ``"restated"``, ``"updated"`` or ``"passed"`` (no
    text). For ``restated`` and ``updated``: the current item it matched (``matched_key``), the rule's
    reason (``"ratio 0.972; value 5432 -> 6543"``), ``rule`` and exact ``score``, and ``superseded``, the key
    that stopped being current (the put's own key when restated, ``matched_key`` when updated).
    ``overwrote``: the key held a value before (kept in history). ``redactions`` and ``dropped_keys``:
    what scrubbing took out of the value before the inner store saw it."""

    kind: str
    namespace: tuple[str, ...]
    key: str
    matched_key: str | None = None
    reason: str = ""
    score: float | None = None
    rule: str | None = None
    change: str = ""
    superseded: str | None = None
    overwrote: bool = False
    redactions: tuple[str, ...] = ()
    dropped_keys: tuple[str, ...] = ()


# ---------------------------------------------------------------------------------------------------
# The text of an item
# ---------------------------------------------------------------------------------------------------
def _default_text(value: Mapping[str, Any]) -> str | None:
    """``value["content"]`` when it is a string, else ``value["content"]["content"]`` (langmem's shape)."""
    content = value.get("content")
    if isinstance(content, str):
        return content
    if type(content) is dict or isinstance(content, Mapping):
        inner = content.get("content")
        if isinstance(inner, str):
            return inner
    return None


def _path_text(path: tuple[str, ...]) -> TextOf:
    def text_at(value: Mapping[str, Any]) -> str | None:
        here: Any = value
        for part in path:
            if not isinstance(here, Mapping):
                return None
            here = here.get(part)
        return here if isinstance(here, str) else None

    return text_at


def _checked(text: Callable[[Mapping[str, Any]], Any]) -> TextOf:
    def text_of(value: Mapping[str, Any]) -> str | None:
        found = text(value)
        if found is None or isinstance(found, str):
            return found
        raise InputTypeError(
            f"the text callable returned {type(found).__name__}; it must return a str or None"
        )

    return text_of


def text_getter(text: str | Sequence[str] | Callable[[Mapping[str, Any]], Any] | None) -> TextOf:
    """The text of an item: ``None`` for the default (``content``, then ``content.content``), a dotted key
    path (``"memory.text"``) or a sequence of keys, or a callable taking the value and returning a
    ``str`` or ``None`` (no text: the item is passed through and never deduplicated)."""
    if text is None:
        return _default_text
    if isinstance(text, str):
        parts = tuple(text.split("."))
    elif callable(text):
        return _checked(text)
    elif isinstance(text, Sequence) and all(isinstance(part, str) for part in text):
        parts = tuple(text)
    else:
        raise InputTypeError(
            f"text must be a key path (str or sequence of str) or a callable, not {type(text).__name__}"
        )
    if not parts or not all(parts):
        raise InvalidInputError(f"text key path {text!r} has an empty part")
    return _path_text(parts)


# ---------------------------------------------------------------------------------------------------
# The mark
# ---------------------------------------------------------------------------------------------------
def mark_of(value: Any) -> Mapping[str, Any] | None:
    """The supersession mark of an item's value, or None when the item is current."""
    # Every search result passes here: a plain dict without the key is answered without an ABC check.
    if type(value) is dict:
        mark = value.get(MARK)
    elif isinstance(value, Mapping):
        mark = value.get(MARK)
    else:
        return None
    if mark is not None and isinstance(mark, Mapping) and isinstance(mark.get("superseded_by"), str):
        return mark
    return None


def superseded_by(value: Any) -> str | None:
    mark = mark_of(value)
    return None if mark is None else str(mark["superseded_by"])


def without_mark(value: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k != MARK}


def is_hidden(namespace: Sequence[str], value: Any) -> bool:
    """Whether ``search`` hides an item: superseded, or in the wrapper's own namespace root."""
    return tuple(namespace[:1]) == (RESERVED_ROOT,) or mark_of(value) is not None


# ---------------------------------------------------------------------------------------------------
# A put's value, made ready
# ---------------------------------------------------------------------------------------------------
class Prepared(NamedTuple):
    """A put's value as the inner store will see it (scrubbed, no mark), its text, and what scrubbing
    took out."""

    value: dict[str, Any]
    text: str | None
    redactions: tuple[str, ...]
    dropped_keys: tuple[str, ...]


def prepare(value: Mapping[str, Any], text_of: TextOf, scrubber: CredentialScrubber | None) -> Prepared:
    """Scrub ``value`` (every string in it, credential-named keys dropped) before anything leaves, drop a
    copied-back mark, and read its text from the scrubbed value."""
    if MARK in value and mark_of(value) is None:
        raise InvalidInputError(
            f"the value key {MARK!r} is reserved by DedupStore for its supersession mark; "
            "store that entry under another key"
        )
    if scrubber is not None:
        # The value is one record: a secret found anywhere in it is redacted in every copy.
        scrubbed = scrubber.for_record(value).scrub_properties(value)
        clean, redactions, dropped = scrubbed.properties, scrubbed.redactions, scrubbed.dropped_keys
    else:
        clean, redactions, dropped = dict(value), (), ()
    clean.pop(MARK, None)
    return Prepared(clean, text_of(clean), redactions, dropped)
