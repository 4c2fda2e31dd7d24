"""The write pipeline: model output in, deduplicated and scrubbed memories in a SQLite store out.

For each turn (one JSON object per line of a ``.jsonl`` file, see :func:`parse_turn`): parse the model's
raw extraction output (:func:`memdedup.operations.parse_extraction`, which scrubs credentials before a
record id is derived), then, in one ``BEGIN IMMEDIATE`` transaction, write each memory or collapse it
into the memory it restates. Semantic and procedural memories go through
:func:`memdedup.dedup.find_canonical_node` on the store, which only ever collapses into a row owned by
the write scope itself; the other layers are append-only. The report says, for every op, what became of
it: written, collapsed into which memory and why (``ratio`` and its score, or ``containment``), already
ingested, or dropped and why; and for every input line that could not be read, why.

Idempotency: every applied record is entered in the store's ledger, keyed by ``(scope_path, record_id)``,
in the same transaction as its node. Record ids are derived from the turn, the op's index and the
scrubbed text, so re-running a file derives the same ids, finds them in the ledger and writes nothing
new; a run killed mid-file leaves whole turns behind (a turn commits or rolls back as one), and a re-run
finishes the rest exactly as one uninterrupted run would have.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from memdedup import dedup as _dedup
from memdedup._backend import impl as _impl
from memdedup.errors import InputTypeError, InvalidInputError
from memdedup.operations import (
    DEDUP_LAYERS,
    ExtractedMemory,
    ExtractionRequest,
    ProviderFamily,
    parse_extraction,
    reason_code,
)
from memdedup.scope import Scope, readable_scope_path
from memdedup.scrub import CredentialScrubber
from memdedup.store import LedgerEntry, SQLiteGraphStore

__all__ = [
    "DegradedOutput",
    "DroppedOp",
    "IngestReport",
    "LineProblem",
    "RecordOutcome",
    "Turn",
    "aingest_turns",
    "count_lines",
    "ingest_file",
    "ingest_turns",
    "parse_turn",
    "read_turns",
]

WRITTEN = "written"
COLLAPSED = "collapsed"
ALREADY_INGESTED = "already_ingested"


@dataclass(frozen=True)
class Turn:
    """One conversation turn and the model's raw extraction output for it.

    The JSON line: ``{"scope": [{"kind": "org", "id": "acme"}, ...] or {"org": "acme", ...}, "turn": 3,
    "messages": [{"role": "user", "content": "..."}, ...], "output": "<the model's raw text>",
    "provider": "anthropic"}``; ``messages`` and ``provider`` are optional.
    """

    scope: Scope
    turn: int
    output: Any
    messages: tuple[Mapping[str, Any], ...] = ()
    family: ProviderFamily = ProviderFamily.UNKNOWN
    line: int = 0

    def last_message(self, role: str) -> str:
        for message in reversed(self.messages):
            if message.get("role") == role and isinstance(message.get("content"), str):
                return message["content"]
        return ""


@dataclass(frozen=True)
class LineProblem:
    """An input line that could not be ingested, and why (``invalid_json: ...``)."""

    line: int
    reason: str

    @property
    def code(self) -> str:
        return reason_code(self.reason)


@dataclass(frozen=True)
class DroppedOp:
    """An op that became no memory, and why (the empty reason is a ``noop``)."""

    line: int
    turn: int
    scope_path: str
    op: str
    reason: str

    @property
    def code(self) -> str:
        return reason_code(self.reason)


@dataclass(frozen=True)
class DegradedOutput:
    """A model output that could not be read whole; its readable ops (if any) were still processed."""

    line: int
    turn: int
    scope_path: str
    form: str
    reason: str


@dataclass(frozen=True)
class RecordOutcome:
    """What one minted memory became: ``written``, ``collapsed`` into ``node_id``, or ``already_ingested``."""

    line: int
    turn: int
    scope_path: str
    op: str
    record_id: str
    layer: str
    text: str
    outcome: str
    node_id: str
    canonical_label: str = ""
    match_kind: str | None = None
    match_score: float | None = None
    redactions: tuple[str, ...] = ()

    def why(self) -> str:
        """``ratio 0.912``, ``containment (ratio 0.640)``, or ``""`` when nothing collapsed."""
        if self.match_kind is None:
            return ""
        score = "" if self.match_score is None else f"{self.match_score:.3f}"
        if self.match_kind == "ratio":
            return f"ratio {score}"
        return f"{self.match_kind} (ratio {score})" if score else self.match_kind


@dataclass
class IngestReport:
    """Everything one ingest run did, and a reason for everything it did not."""

    source: str = ""
    database: str = ""
    lines: int = 0
    turns: int = 0
    ops: int = 0
    records: list[RecordOutcome] = field(default_factory=list)
    dropped: list[DroppedOp] = field(default_factory=list)
    degraded: list[DegradedOutput] = field(default_factory=list)
    problems: list[LineProblem] = field(default_factory=list)
    forms: Counter[str] = field(default_factory=Counter)
    #: Episodic transcript rows (one per user/assistant message) written by this run.
    transcript_rows: int = 0

    def _with(self, outcome: str) -> list[RecordOutcome]:
        return [record for record in self.records if record.outcome == outcome]

    @property
    def written(self) -> list[RecordOutcome]:
        return self._with(WRITTEN)

    @property
    def collapsed(self) -> list[RecordOutcome]:
        return self._with(COLLAPSED)

    @property
    def already_ingested(self) -> list[RecordOutcome]:
        return self._with(ALREADY_INGESTED)

    @property
    def redactions(self) -> Counter[str]:
        """Redaction kinds over the records this run wrote or collapsed (not the already-ingested)."""
        return Counter(
            kind
            for record in self.records
            if record.outcome != ALREADY_INGESTED
            for kind in record.redactions
        )

    def counts(self) -> dict[str, int]:
        return {
            "lines": self.lines,
            "turns": self.turns,
            "ops": self.ops,
            "written": len(self.written),
            "collapsed": len(self.collapsed),
            "already_ingested": len(self.already_ingested),
            "dropped": len(self.dropped),
            "noops": sum(1 for drop in self.dropped if not drop.reason),
            "degraded_outputs": len(self.degraded),
            "bad_lines": len(self.problems),
            "transcript_rows": self.transcript_rows,
        }

    def to_dict(self) -> dict[str, Any]:
        """The whole report as JSON-ready data (``memdedup ingest --json``)."""

        def scoped(item: Any) -> dict[str, Any]:
            data = asdict(item)
            if "scope_path" in data:
                data["scope"] = readable_scope_path(data["scope_path"])
            if "reason" in data:
                data["code"] = reason_code(data["reason"])
            return data

        return {
            "source": self.source,
            "database": self.database,
            "counts": self.counts(),
            "written": [scoped(r) for r in self.written],
            "collapsed": [scoped(r) for r in self.collapsed],
            "already_ingested": [scoped(r) for r in self.already_ingested],
            "dropped": [scoped(d) for d in self.dropped],
            "degraded": [scoped(d) for d in self.degraded],
            "bad_lines": [scoped(p) for p in self.problems],
            "redactions": dict(self.redactions),
            "forms": dict(self.forms),
            "dropped_by_code": dict(Counter(drop.code for drop in self.dropped)),
        }


# ---------------------------------------------------------------------------------------------------
# Reading turns
# ---------------------------------------------------------------------------------------------------
def parse_turn(value: Any, *, line: int = 0) -> Turn | LineProblem:
    """One turn from its JSON object, or the reason it is not one."""
    if isinstance(value, Turn):
        return value
    if not isinstance(value, Mapping):
        return LineProblem(line, f"invalid_turn: a turn is a JSON object, not a {type(value).__name__}")
    if "scope" not in value:
        return LineProblem(line, "invalid_scope: the turn has no 'scope'")
    try:
        scope = Scope.parse(value["scope"])
    except (InvalidInputError, InputTypeError) as exc:
        return LineProblem(line, f"invalid_scope: {exc}")
    number = value.get("turn")
    if isinstance(number, bool) or not isinstance(number, int) or number < 0:
        return LineProblem(line, f"invalid_turn: 'turn' must be a non-negative integer, not {number!r:.40}")
    if "output" not in value:
        return LineProblem(
            line, "missing_output: the turn has no 'output' (the model's raw extraction output)"
        )
    messages = value.get("messages", ())
    if messages is None:
        messages = ()
    if not isinstance(messages, list | tuple):
        return LineProblem(line, f"invalid_turn: 'messages' must be a list, not a {type(messages).__name__}")
    return Turn(
        scope=scope,
        turn=number,
        output=value["output"],
        messages=tuple(message for message in messages if isinstance(message, Mapping)),
        family=ProviderFamily.parse(value.get("provider")),
        line=line,
    )


def read_turns(path: str | os.PathLike[str]) -> Iterator[Turn | LineProblem]:
    """The turns of a ``.jsonl`` file, line by line; a line that is not a turn yields its reason.

    Blank lines are skipped. An unreadable file raises :class:`~memdedup.errors.InvalidInputError`.
    """
    try:
        handle = open(path, "rb")  # closed in the finally below: the generator owns it
    except OSError as exc:
        raise InvalidInputError(f"cannot read {os.fspath(path)!r}: {exc.strerror or exc}") from exc
    try:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield LineProblem(number, f"invalid_utf8: byte {exc.start} is not UTF-8")
                continue
            try:
                value = json.loads(text)
            except (ValueError, RecursionError) as exc:
                yield LineProblem(number, f"invalid_json: {exc}")
                continue
            yield parse_turn(value, line=number)
    except OSError as exc:
        raise InvalidInputError(f"cannot read {os.fspath(path)!r}: {exc.strerror or exc}") from exc
    finally:
        handle.close()


def count_lines(path: str | os.PathLike[str]) -> int:
    """The number of non-blank lines of a file (the progress bar's total)."""
    try:
        with open(path, "rb") as handle:
            return sum(1 for raw in handle if raw.strip())
    except OSError as exc:
        raise InvalidInputError(f"cannot read {os.fspath(path)!r}: {exc.strerror or exc}") from exc


# ---------------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------------
async def _apply(
    store: SQLiteGraphStore,
    turn: Turn,
    memory: ExtractedMemory,
    *,
    threshold: float,
    source: str,
) -> RecordOutcome:
    """Write one memory, or collapse it into the memory the write scope owns; enter it in the ledger."""
    record = memory.record
    scope_path = turn.scope.scope_path
    base = {
        "line": turn.line,
        "turn": turn.turn,
        "scope_path": scope_path,
        "op": f"op[{memory.op_index}]",
        "record_id": record.record_id,
        "layer": record.layer.value,
        "text": record.text,
        "redactions": memory.redactions,
    }
    applied = store.ledger_entry(scope_path, record.record_id)
    if applied is not None:
        canonical = store.get_node(turn.scope, applied.node_id, include_retracted=True)
        return RecordOutcome(
            **base,
            outcome=ALREADY_INGESTED,
            node_id=applied.node_id,
            canonical_label=canonical.label if canonical else "",
            match_kind=applied.match_kind,
            match_score=applied.match_score,
        )
    canonical = None
    if record.layer in DEDUP_LAYERS:
        canonical = await _dedup.find_canonical_node(
            store, turn.scope, layer=record.layer, label=record.text, threshold=threshold
        )
        if canonical is not None and canonical.scope_path != scope_path:
            canonical = None  # find_canonical_node already refuses this; an ancestor's row is never ours
    if canonical is not None:
        why = _impl.match_reason(
            canonical.label, record.text, threshold=threshold, min_chars=_dedup.DEDUP_SUBSUME_MIN_CHARS
        )
        kind, score = why if why is not None else ("match", None)
        store.record_mention(turn.scope, canonical.id, importance=memory.importance, salience=record.salience)
        outcome, node_id, label = COLLAPSED, canonical.id, canonical.label
    else:
        node, _created = store.upsert_node(
            turn.scope,
            node_id=record.record_id,
            layer=record.layer.value,
            label=record.text,
            properties=memory.properties,
            importance=memory.importance,
            salience=record.salience,
            origin=record.origin,
        )
        kind, score = None, None
        outcome, node_id, label = WRITTEN, node.id, node.label
    store.add_ledger_entry(
        LedgerEntry(
            scope_path=scope_path,
            record_id=record.record_id,
            node_id=node_id,
            outcome=outcome,
            turn=turn.turn,
            layer=record.layer.value,
            text=record.text,
            match_kind=kind,
            match_score=score,
            source=source,
        )
    )
    return RecordOutcome(
        **base, outcome=outcome, node_id=node_id, canonical_label=label, match_kind=kind, match_score=score
    )


TRANSCRIPT_SPEAKERS = ("user", "assistant")


def _write_transcript(store: SQLiteGraphStore, turn: Turn, scrubber: CredentialScrubber) -> int:
    """Store each user and assistant message of the turn as an episodic transcript row (scrubbed), with
    ``turn_id`` and ``speaker`` in its properties, so :mod:`memdedup.window` can tell which recalled rows
    the conversation window already shows. Ids derive from the turn, position and scrubbed text, and an
    existing row is left alone: re-running a file writes no transcript row twice. Returns rows written."""
    import hashlib

    written = 0
    for position, message in enumerate(turn.messages):
        speaker, content = message.get("role"), message.get("content")
        if speaker not in TRANSCRIPT_SPEAKERS or not isinstance(content, str) or not content.strip():
            continue
        text = scrubber.scrub_text(content.strip()).text
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        node_id = f"t{turn.turn}.{position}.{digest}"
        if store.get_node(turn.scope, node_id, include_retracted=True) is not None:
            continue
        store.upsert_node(
            turn.scope,
            node_id=node_id,
            layer="episodic",
            label=text,
            properties={"source": "transcript", "turn_id": turn.turn, "speaker": speaker},
            origin="transcript",
        )
        written += 1
    return written


async def _ingest_one(
    store: SQLiteGraphStore,
    turn: Turn,
    report: IngestReport,
    *,
    threshold: float,
    min_importance: float,
    max_records: int,
    scrubber: CredentialScrubber,
) -> None:
    request = ExtractionRequest(
        scope=turn.scope,
        user_message=turn.last_message("user"),
        assistant_message=turn.last_message("assistant"),
        turn=turn.turn,
        max_records=max_records,
        min_importance=min_importance,
    )
    result = parse_extraction(turn.output, request, family=turn.family, scrubber=scrubber)
    scope_path = turn.scope.scope_path
    report.turns += 1
    report.ops += result.op_count
    report.forms[result.form] += 1
    if result.degraded:
        report.degraded.append(DegradedOutput(turn.line, turn.turn, scope_path, result.form, result.reason))
    outcomes: list[RecordOutcome] = []
    try:
        with store.transaction():
            transcript_rows = _write_transcript(store, turn, scrubber)
            for memory in result.memories:
                outcomes.append(await _apply(store, turn, memory, threshold=threshold, source=report.source))
        report.transcript_rows += transcript_rows
    except InvalidInputError as exc:
        # The turn rolled back whole; its ops are reported with the line, nothing was half-written.
        report.problems.append(LineProblem(turn.line, f"write_failed: {exc}"))
        outcomes = []
    report.records.extend(outcomes)
    report.dropped.extend(
        DroppedOp(turn.line, turn.turn, scope_path, identifier, reason)
        for identifier, reason in result.dropped
    )


def _open(db: str | os.PathLike[str] | SQLiteGraphStore) -> tuple[SQLiteGraphStore, bool]:
    if isinstance(db, SQLiteGraphStore):
        return db, False
    return SQLiteGraphStore(db), True


async def aingest_turns(
    turns: Iterable[Turn | LineProblem | Mapping[str, Any]]
    | AsyncIterator[Turn | LineProblem | Mapping[str, Any]],
    db: str | os.PathLike[str] | SQLiteGraphStore,
    *,
    threshold: float = _dedup.DEDUP_SIMILARITY_THRESHOLD,
    min_importance: float = 3.0,
    max_records: int = 50,
    scrubber: CredentialScrubber | None = None,
    progress: Callable[[int], None] | None = None,
    source: str = "",
) -> IngestReport:
    """:func:`ingest_turns` as a coroutine, for callers already inside an event loop."""
    if not 0.0 <= threshold <= 1.0:
        raise InvalidInputError(f"threshold must be within [0, 1], not {threshold!r}")
    if max_records < 0:
        raise InvalidInputError(f"max_records must be >= 0, not {max_records!r}")
    scrubber = scrubber if scrubber is not None else CredentialScrubber()
    store, owned = _open(db)
    report = IngestReport(source=source, database=store.path)
    try:
        position = 0

        async def items() -> AsyncIterator[Any]:
            if hasattr(turns, "__aiter__"):
                async for item in turns:  # type: ignore[union-attr]
                    yield item
            else:
                for item in turns:  # type: ignore[union-attr]
                    yield item

        async for item in items():
            position += 1
            report.lines += 1
            parsed = item if isinstance(item, LineProblem) else parse_turn(item, line=position)
            if isinstance(parsed, LineProblem):
                report.problems.append(parsed)
            else:
                await _ingest_one(
                    store,
                    parsed,
                    report,
                    threshold=threshold,
                    min_importance=min_importance,
                    max_records=max_records,
                    scrubber=scrubber,
                )
            if progress is not None:
                progress(1)
    finally:
        if owned:
            store.close()
    return report


def ingest_turns(
    turns: Iterable[Turn | LineProblem | Mapping[str, Any]],
    db: str | os.PathLike[str] | SQLiteGraphStore,
    *,
    threshold: float = _dedup.DEDUP_SIMILARITY_THRESHOLD,
    min_importance: float = 3.0,
    max_records: int = 50,
    scrubber: CredentialScrubber | None = None,
    progress: Callable[[int], None] | None = None,
    source: str = "",
) -> IngestReport:
    """Ingest turns (``Turn`` objects or their JSON objects) into the store at ``db`` (a path or a store).

    ``progress`` is called with 1 after each turn (or unreadable line) is done. Runs its own event loop;
    inside a running loop use :func:`aingest_turns`.
    """
    return asyncio.run(
        aingest_turns(
            turns,
            db,
            threshold=threshold,
            min_importance=min_importance,
            max_records=max_records,
            scrubber=scrubber,
            progress=progress,
            source=source,
        )
    )


def ingest_file(
    path: str | os.PathLike[str],
    db: str | os.PathLike[str] | SQLiteGraphStore,
    *,
    threshold: float = _dedup.DEDUP_SIMILARITY_THRESHOLD,
    min_importance: float = 3.0,
    max_records: int = 50,
    scrubber: CredentialScrubber | None = None,
    progress: Callable[[int], None] | None = None,
) -> IngestReport:
    """Ingest a ``.jsonl`` file of turns (see :class:`Turn`); bad lines are reported, never fatal.

    An unreadable file raises :class:`~memdedup.errors.InvalidInputError` before anything is written.
    """
    source = os.fspath(path)
    if not os.path.isfile(source):
        raise InvalidInputError(f"cannot read {source!r}: no such file")
    return ingest_turns(
        read_turns(path),
        db,
        threshold=threshold,
        min_importance=min_importance,
        max_records=max_records,
        scrubber=scrubber,
        progress=progress,
        source=source,
    )
