"""Recall that does not repeat the conversation window (the seed's ``window_overlap`` contract).

A turn is written to the transcript and to the episodic layer under one ``turn_id`` and one ``speaker``,
by the conversation's own scope. When a memory block is rendered, the conversation window leads it; if
the window renders a turn, that turn's recalled episodic copy is the same utterance and the model would
read it twice. :func:`outside_window` removes exactly those copies and nothing else.
:func:`memdedup.recall.recall` (``SQLiteGraphStore.recall``) is the whole recall path in one call.

Decisions (the contract of this module):

Block admission (:func:`admitted_mask`, :func:`render_block`)
    Lines are joined with ``SEPARATOR`` (``"\\n"``). Admission is greedy and in order: a line is admitted
    when the block with it appended still fits every ceiling, otherwise it is refused and the next line
    is tried (a refused line does not end the block). The separator is counted only between admitted
    lines: the first admitted line costs ``len(line)``, every later one ``1 + len(line)``, so the cost
    of the admitted lines is exactly the size of the rendered text. Characters are code points
    (``len``); bytes are UTF-8 (a lone surrogate counts its 3 ``surrogatepass`` bytes). Each decision
    depends only on the lines before it, so the mask of a prefix is the prefix of the mask: the window
    lines alone say which turns a block that the window leads renders.

Identity (:func:`outside_window`)
    A window turn and a recalled record are the same utterance only when ``(conversation, turn_id,
    speaker)`` are equal exactly: no stripping, no case folding, never by text. The conversation is the
    owning scope path: a record's ``scope_path`` (its attribute, else ``metadata["scope_path"]``, which
    :func:`recalled_from_node` and memdedup's store provide), and a window turn's ``scope_path``, else
    the ``scope`` given to :func:`outside_window` (the scope whose window it is). Turn ids are numbered
    per conversation, so an ancestor's transcript (visible from a child scope) holds a turn 1 of its own
    that the child's window does not show. An owner only ever equals the same owner; a window turn with
    no stated conversation matches only records that state none either, so it never removes a row of
    another conversation. ``turn_id`` and ``speaker`` must each be a ``str`` or an ``int`` (``bool``
    excluded) and the kinds must agree, so turn ``"7"`` is not turn ``7``; a ``str`` or ``int``
    subclass (a ``StrEnum`` speaker, say) compares by its plain value. A window turn whose ``turn_id``
    or ``speaker`` is missing or empty (``None``, ``""``, ``0``) suppresses nothing; one with another
    type is a caller error (:class:`~memdedup.errors.InputTypeError`). A record whose metadata holds
    anything else simply has no identity and is kept.

Transcript rows (:class:`TranscriptRow`, :func:`conversation_local`)
    :class:`TranscriptRow` is the one definition of a transcript row's shape, which the ingest
    pipeline writes and this module reads: the episodic layer, ``origin`` and ``source``
    ``"transcript"``, ``turn_id`` and ``speaker`` in its properties, an id derived from the turn, the
    message's position and its text (:func:`memdedup.operations.derive_id`), owned by the
    conversation's scope. Only the episodic copy of a turn is a candidate. A record is one when all of
    these hold:
    its layer (``record.layer``, else ``metadata["layer"]``; a ``str`` or an ``Enum`` whose value is a
    ``str``) is ``"episodic"``; it is marked as a transcript copy, ``metadata["source"]`` or
    ``record.origin`` being one of ``TRANSCRIPT_SOURCES`` (``"transcript"``, and ``"auto_turn"``, the
    marker symfonic-core writes on its per-message episodic rows); and it is not a classified memory
    (no truthy ``metadata["memory_category"]``, no ``origin`` starting with ``"extraction:"``). A
    semantic or classified memory that happens to carry a turn tag is a distinct memory and stays.

Only a window line the ceilings admit suppresses anything: a refused window line leaves its copy in
place, since suppressing it too would show the model neither. Filtering happens after selection, so
order, scores and the retrieval result itself are untouched; only the rendered block changes.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from memdedup.errors import InputTypeError, InvalidInputError
from memdedup.operations import derive_id
from memdedup.scope import SCOPE_PATH_KEY

__all__ = [
    "CEILING_REASON",
    "EPISODIC_LAYER",
    "REPEATED_REASON",
    "SEPARATOR",
    "TRANSCRIPT_SOURCE",
    "TRANSCRIPT_SOURCES",
    "TRANSCRIPT_SPEAKERS",
    "BlockReport",
    "RecalledItem",
    "RecalledRecord",
    "RetrievalResult",
    "TranscriptRow",
    "WindowTurn",
    "admitted_mask",
    "conversation_local",
    "outside_window",
    "recalled_from_node",
    "render_block",
]

SEPARATOR = "\n"
REPEATED_REASON = "repeated: the conversation window already renders this turn"
CEILING_REASON = "refused: the block's ceiling has no room for this line"
EPISODIC_LAYER = "episodic"
TRANSCRIPT_SOURCE = "transcript"
TRANSCRIPT_SOURCES: frozenset[str] = frozenset({TRANSCRIPT_SOURCE, "auto_turn"})
TRANSCRIPT_SPEAKERS: tuple[str, ...] = ("user", "assistant")


def _transcript_properties(turn_id: str | int, speaker: str) -> dict[str, Any]:
    return {"source": TRANSCRIPT_SOURCE, "turn_id": turn_id, "speaker": speaker}


@dataclass(frozen=True)
class TranscriptRow:
    """One utterance as the transcript stores it (the shape ingest writes and :func:`conversation_local`
    reads), owned by the conversation's scope: write it with the store at that scope."""

    node_id: str
    text: str
    turn_id: int
    speaker: str
    layer: str = EPISODIC_LAYER
    origin: str = TRANSCRIPT_SOURCE

    @classmethod
    def of(cls, turn_id: int, position: int, speaker: str, text: str) -> TranscriptRow:
        """The row of the message at ``position`` of turn ``turn_id`` (``text`` already cleaned and
        scrubbed: the id hashes it)."""
        return cls(derive_id("t", turn_id, position, text), text, turn_id, speaker)

    @property
    def properties(self) -> dict[str, Any]:
        return _transcript_properties(self.turn_id, self.speaker)


@dataclass(frozen=True)
class WindowTurn:
    """One turn of the conversation window, as the block renders it.

    ``scope_path`` names the conversation (the owning scope path of its transcript rows); when None,
    :func:`outside_window`'s ``scope`` does.
    """

    turn_id: str | int | None
    speaker: str | None
    text: str
    scope_path: str | None = None

    def line(self) -> str:
        """The rendered line: ``"speaker: text"``, or the text alone when there is no speaker."""
        return f"{self.speaker}: {self.text}" if self.speaker else self.text


@dataclass(frozen=True)
class RecalledRecord:
    """A stored memory as recall returns it.

    ``salience`` is the store row's (0-1; the store's default 0.5): what recall ranks admission by.
    ``stated`` is the store's statement counter at the row's latest statement (higher is more recent,
    0 when unknown): what :func:`memdedup.recall.recall` keeps the newest of a group of restatements by.
    """

    record_id: str
    text: str = ""
    layer: str = "semantic"
    metadata: Mapping[str, Any] = field(default_factory=dict)
    origin: str = ""
    scope_path: str | None = None
    salience: float = 0.5
    stated: int = 0

    @classmethod
    def transcript(
        cls, record_id: str, text: str, *, turn_id: str | int, speaker: str, scope_path: str | None = None
    ) -> RecalledRecord:
        """The episodic transcript row of one utterance (what :func:`conversation_local` accepts)."""
        return cls(
            record_id=record_id,
            text=text,
            layer=EPISODIC_LAYER,
            metadata=_transcript_properties(turn_id, speaker),
            origin=TRANSCRIPT_SOURCE,
            scope_path=scope_path,
        )


@dataclass(frozen=True)
class RecalledItem:
    """One recalled memory and the score that ranked it."""

    record: Any
    score: float = 0.0

    def line(self) -> str:
        """The rendered line: the record's text."""
        return str(self.record.text)


@dataclass(frozen=True)
class RetrievalResult:
    """What recall selected: ranked ``memories`` and graph-``linked`` neighbours."""

    memories: tuple[Any, ...] = ()
    linked: tuple[Any, ...] = ()


@dataclass(frozen=True)
class BlockReport:
    """What :func:`render_block` did with every line.

    ``window_admitted``/``window_refused`` are indices into the turns; ``admitted`` lists record ids in
    render order; ``dropped`` and ``refused`` are ``(record_id, reason)`` pairs.
    """

    window_admitted: tuple[int, ...] = ()
    window_refused: tuple[int, ...] = ()
    admitted: tuple[str, ...] = ()
    dropped: tuple[tuple[str, str], ...] = ()
    refused: tuple[tuple[str, str], ...] = ()


def _ceiling(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputTypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < 0:
        raise InvalidInputError(f"{name} must be >= 0, got {value}")
    return int(value)


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


class _Admission:
    """The running greedy admission of one block."""

    def __init__(self, char_ceiling: Any, max_bytes: Any) -> None:
        self.chars_left = _ceiling("char_ceiling", char_ceiling)
        self.bytes_left = None if max_bytes is None else _ceiling("max_bytes", max_bytes)
        self.started = False

    def offer(self, line: str) -> bool:
        sep = 1 if self.started else 0
        chars = sep + len(line)
        if chars > self.chars_left:
            return False
        if self.bytes_left is not None:
            size = sep + _utf8_len(line)
            if size > self.bytes_left:
                return False
            self.bytes_left -= size
        self.chars_left -= chars
        self.started = True
        return True


def _as_line(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise InputTypeError(f"{what} must be a str, not {type(value).__name__}")
    return value


def admitted_mask(lines: Iterable[str], *, char_ceiling: int, max_bytes: int | None = None) -> list[bool]:
    """Which lines a greedy, in-order block admission under the ceilings admits (see the module docstring).

    The mask of a prefix of ``lines`` is the prefix of the mask.
    """
    admission = _Admission(char_ceiling, max_bytes)
    return [admission.offer(_as_line(line, "a line")) for line in lines]


def _plain(value: Any) -> tuple[str, str | int] | None:
    """The comparable form of one identity part, or None when it is not a str/int."""
    if isinstance(value, str):
        return ("str", str.__str__(value))
    if isinstance(value, int) and not isinstance(value, bool):
        return ("int", int(value))
    return None


def _identity(owner: str | None, turn_id: Any, speaker: Any, *, strict: bool) -> tuple[Any, Any, Any] | None:
    """The exact ``(owner, turn_id, speaker)`` key, or None when ``turn_id`` or ``speaker`` is missing or
    empty.

    ``strict`` (window turns) raises on a part of another type; a stored record's odd part is no identity.
    """
    id_key, speaker_key = _plain(turn_id), _plain(speaker)
    if strict:
        for value, key in ((turn_id, id_key), (speaker, speaker_key)):
            if value is not None and key is None:
                raise InputTypeError(
                    f"a window turn's turn_id and speaker must be str or int, not {type(value).__name__}"
                )
    if id_key is None or speaker_key is None or not id_key[1] or not speaker_key[1]:
        return None
    return owner, id_key, speaker_key


def _path(value: Any, what: str) -> str | None:
    """A conversation given as a scope path ``str`` or a scope (anything with ``scope_path``); None for
    None."""
    if value is None:
        return None
    path = value if isinstance(value, str) else getattr(value, "scope_path", None)
    if not isinstance(path, str):
        raise InputTypeError(f"{what} must be a scope or a scope path str, not {type(value).__name__}")
    return str.__str__(path)


def _record_owner(record: Any) -> str | None:
    """The owning scope path a record states (its attribute, else its metadata), or None."""
    for value in (getattr(record, "scope_path", None), _metadata(record).get(SCOPE_PATH_KEY)):
        if isinstance(value, str) and value:
            return str.__str__(value)
    return None


def _metadata(record: Any) -> Mapping[str, Any]:
    metadata = getattr(record, "metadata", None)
    return metadata if isinstance(metadata, Mapping) else {}


def _str_value(value: Any) -> str | None:
    if isinstance(value, Enum):
        value = value.value
    return str.__str__(value) if isinstance(value, str) else None


def _node_salience(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return 0.5
    return float(value)


def _node_stated(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def recalled_from_node(node: Any, *, score: float = 0.0) -> RecalledItem:
    """A stored row (``memdedup.store.StoredNode`` or any node with ``id``, ``label``, ``layer``,
    ``properties`` and ``origin``) as a recalled item: its properties become the record's metadata, so a
    transcript row written by ``memdedup ingest`` keeps its ``turn_id`` and ``speaker``, and its owning
    scope path (``node.scope_path``, else ``properties["scope_path"]``) the record's ``scope_path``, and
    its ``salience`` (a real number, not a bool) the record's (a node without one has the store's default
    0.5), and its ``stated`` counter (an int, not a bool; else 0) the record's."""
    properties = getattr(node, "properties", None)
    metadata = dict(properties) if isinstance(properties, Mapping) else {}
    owner = getattr(node, "scope_path", None)
    if not isinstance(owner, str) or not owner:
        owner = metadata.get(SCOPE_PATH_KEY)
    return RecalledItem(
        record=RecalledRecord(
            record_id=str(node.id),
            text=str(getattr(node, "label", "") or ""),
            layer=_str_value(getattr(node, "layer", None)) or "semantic",
            metadata=metadata,
            origin=str(getattr(node, "origin", "") or ""),
            scope_path=owner if isinstance(owner, str) and owner else None,
            salience=_node_salience(getattr(node, "salience", None)),
            stated=_node_stated(getattr(node, "stated", None)),
        ),
        score=score,
    )


def conversation_local(record: Any) -> bool:
    """True only for a transcript row: the unclassified episodic copy of a turn (see the module docstring)."""
    metadata = _metadata(record)
    layer = getattr(record, "layer", None)
    if layer is None:
        layer = metadata.get("layer")
    if _str_value(layer) != EPISODIC_LAYER:
        return False
    if metadata.get("memory_category"):
        return False
    origin = _str_value(getattr(record, "origin", None))
    if origin is not None and origin.startswith("extraction:"):
        return False
    return _str_value(metadata.get("source")) in TRANSCRIPT_SOURCES or origin in TRANSCRIPT_SOURCES


def _turn_line(turn: Any) -> str:
    line = getattr(turn, "line", None)
    if not callable(line):
        raise InputTypeError(f"a window turn needs a line() method; {type(turn).__name__} has none")
    return _as_line(line(), "a window turn's line()")


def _sections(result: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    try:
        return tuple(result.memories), tuple(result.linked)
    except AttributeError as exc:
        raise InputTypeError(
            f"a retrieval result needs memories and linked; {type(result).__name__} lacks one"
        ) from exc


def _outside(
    memories: tuple[Any, ...],
    linked: tuple[Any, ...],
    turns: Sequence[Any],
    rendered: Sequence[bool],
    scope: Any,
) -> tuple[tuple[Any, ...], tuple[Any, ...], tuple[tuple[str, str], ...]]:
    conversation = _path(scope, "scope")
    window = set()
    for turn, fits in zip(turns, rendered, strict=True):
        owner = _path(getattr(turn, "scope_path", None), "a window turn's scope_path") or conversation
        key = _identity(owner, getattr(turn, "turn_id", None), getattr(turn, "speaker", None), strict=True)
        if fits and key is not None:
            window.add(key)
    if not window:
        return memories, linked, ()

    def repeats(item: Any) -> bool:
        record = item.record
        metadata = _metadata(record)
        key = _identity(_record_owner(record), metadata.get("turn_id"), metadata.get("speaker"), strict=False)
        return key in window and conversation_local(record)

    dropped: list[tuple[str, str]] = []

    def keep(section: tuple[Any, ...]) -> tuple[Any, ...]:
        kept = []
        for item in section:
            if repeats(item):
                dropped.append((item.record.record_id, REPEATED_REASON))
            else:
                kept.append(item)
        return tuple(kept)

    kept_memories = keep(memories)
    kept_linked = keep(linked)
    return kept_memories, kept_linked, tuple(dropped)


def outside_window(
    result: Any,
    turns: Iterable[Any],
    *,
    char_ceiling: int,
    max_bytes: int | None = None,
    scope: Any = None,
) -> tuple[tuple[Any, ...], tuple[Any, ...], tuple[tuple[str, str], ...]]:
    """Return ``(memories, linked, dropped)`` without the recalled copies of the window's rendered turns.

    An item is dropped only when its record is :func:`conversation_local` and its ``(conversation,
    turn_id, speaker)`` is a window turn the ceilings admit; ``scope`` (a scope or a scope path) is the
    conversation of the window turns that name none (see the module docstring). ``dropped`` lists
    ``(record_id, REPEATED_REASON)`` in memories-then-linked order. Kept items keep their order;
    ``result`` is not modified.
    """
    turns = tuple(turns)
    memories, linked = _sections(result)
    rendered = admitted_mask(
        [_turn_line(turn) for turn in turns], char_ceiling=char_ceiling, max_bytes=max_bytes
    )
    return _outside(memories, linked, turns, rendered, scope)


def _item_line(item: Any) -> str:
    line = getattr(item, "line", None)
    text = line() if callable(line) else item.record.text
    return _as_line(text, "a recalled item's line")


def render_block(
    turns: Iterable[Any],
    result: Any,
    *,
    char_ceiling: int,
    max_bytes: int | None = None,
    scope: Any = None,
) -> tuple[str, BlockReport]:
    """Render the memory block: the window first, then the surviving memories and linked items.

    One greedy admission runs over the window lines and then over the recalled lines (an item renders
    as its ``line()``, else its record's text) under the same ceilings, so the window lines it admits
    are exactly :func:`admitted_mask` of the window alone; ``scope`` is :func:`outside_window`'s. Returns
    the text and a :class:`BlockReport`. Deterministic: the same inputs give the same text and report.
    """
    turns = tuple(turns)
    admission = _Admission(char_ceiling, max_bytes)
    memories, linked = _sections(result)
    block: list[str] = []
    rendered: list[bool] = []
    # The window leads the block, so this is admitted_mask over the window lines (the prefix property).
    for turn in turns:
        line = _turn_line(turn)
        fits = admission.offer(line)
        rendered.append(fits)
        if fits:
            block.append(line)
    kept_memories, kept_linked, dropped = _outside(memories, linked, turns, rendered, scope)

    admitted: list[str] = []
    refused: list[tuple[str, str]] = []
    for item in (*kept_memories, *kept_linked):
        line = _item_line(item)
        if admission.offer(line):
            block.append(line)
            admitted.append(item.record.record_id)
        else:
            refused.append((item.record.record_id, CEILING_REASON))

    report = BlockReport(
        window_admitted=tuple(i for i, fits in enumerate(rendered) if fits),
        window_refused=tuple(i for i, fits in enumerate(rendered) if not fits),
        admitted=tuple(admitted),
        dropped=dropped,
        refused=tuple(refused),
    )
    return SEPARATOR.join(block), report
