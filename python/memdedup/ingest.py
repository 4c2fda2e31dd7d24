"""The write path, top to bottom: model output in, scrubbed and deduplicated memories in a SQLite store out.

Read this file in order; it is the whole path. For each turn (one JSON object per line of a ``.jsonl``
file, :func:`read_turns` and :func:`parse_turn`), :func:`ingest_turn` runs five stages:

1. **parse**: find the ops in the model's raw output (:func:`memdedup.operations.read_ops`: fenced,
   tagged, embedded or truncated JSON; an output that cannot be read whole is *degraded*, never fatal);
2. **scrub**, once, before any id is derived or any text is kept: every chat message and every text an
   op carries (label, action, layer, property keys and values, dropped-key paths) is cleaned (lone
   surrogates become U+FFFD, :func:`memdedup.operations.clean_text`) and scrubbed of credentials
   (:func:`memdedup.operations.scrub_op`, :class:`memdedup.scrub.CredentialScrubber`);
3. **mint**: each scrubbed op becomes a memory with an id derived from the turn, its index and its
   scrubbed text, or a reason it is none (:func:`memdedup.operations.mint_all`);
4. **decide** (:func:`decide`): a semantic or procedural memory is the same fact as the memory its write
   scope owns that :func:`memdedup.dedup.find_canonical_node` chooses (the match contract, then the
   opt-in ``guards``), with the reason (``ratio`` or ``containment``) and the exact score from the same
   single call into the core; the other layers are append-only;
5. **write**, in the turn's one ``BEGIN IMMEDIATE`` transaction: the transcript rows
   (:class:`memdedup.window.TranscriptRow`, one per user and assistant message, owned by the turn's
   scope), then for each memory (:func:`_apply`, by the rule of :mod:`memdedup.facts`): a new row
   (*written*); or one more statement of the row it is the same fact as, whose text stays when the
   memory restates it (*restated*: equal, or terser) and becomes the memory's otherwise (*updated*: the
   previous text is kept as a revision, with its reason); and its ledger entry. An ancestor's row is
   never rewritten: a child's statement of it is a row of the child's own.

The report (:mod:`memdedup.ingest_report`) says, for every op, what became of it: written, restated or
updated (which row, why, and the text it replaced), already ingested, or dropped and why; and for every
input line that was not ingested, why. Only committed turns are in it, and every text in it has been
scrubbed.

Failures, by where they happen:

* a line that is not a turn (not JSON, no scope, a turn number SQLite cannot hold, a scope id that is
  not text or that holds a credential ...) is a :class:`LineProblem` with a reason; the run goes on;
* a turn whose write fails for its own data rolls back whole and is a ``write_failed`` problem; the run
  goes on;
* a failure of the database itself (damaged, full, locked, an I/O error) is a
  :class:`~memdedup.store.StoreError` that ends the run, with the partial report on ``.report``;
* Ctrl-C (SIGINT, when the run owns the main thread's default handler) stops the run at the next turn
  boundary: :class:`IngestInterrupted` (a ``KeyboardInterrupt``) carries the partial report; a second
  Ctrl-C stops at once, rolling the turn in progress back.

Idempotency: every applied record is entered in the ledger, keyed by ``(scope_path, record_id)``, in the
same transaction as its node, and transcript rows are keyed by ``(scope_path, id)``: re-running a file
derives the same ids and writes nothing new; a run killed mid-file leaves whole turns behind, and a
re-run finishes the rest exactly as one uninterrupted run would have.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import FrameType
from typing import Any

from memdedup._backend import impl as _impl
from memdedup.dedup import (
    DEDUP_PREFIX_LEN,
    DEDUP_QUERY_LIMIT,
    DEDUP_SIMILARITY_THRESHOLD,
    DEDUP_SUBSUME_MIN_CHARS,
    check_gate,
)
from memdedup.errors import InvalidInputError, MemdedupError
from memdedup.facts import UPDATED, facts_match
from memdedup.guards import Guards, as_guards, guards_allow
from memdedup.ingest_report import (
    ALREADY_INGESTED,
    WRITTEN,
    DegradedOutput,
    DroppedOp,
    IngestReport,
    LineProblem,
    RecordOutcome,
    Turn,
)
from memdedup.inputs import display_name
from memdedup.operations import (
    DEDUP_LAYERS,
    ExtractedMemory,
    ExtractionRequest,
    clean_text,
    mint_all,
    read_ops,
    scrub_op,
)
from memdedup.scope import Scope, owner_of
from memdedup.scrub import CredentialScrubber
from memdedup.store import LedgerEntry, SQLiteGraphStore, StoredNode, StoreError
from memdedup.turns import count_lines, exception_text, parse_turn, read_turns
from memdedup.window import TRANSCRIPT_SPEAKERS, TranscriptRow

__all__ = [
    "Canonical",
    "DegradedOutput",
    "DroppedOp",
    "IngestInterrupted",
    "IngestReport",
    "LineProblem",
    "RecordOutcome",
    "Turn",
    "aingest_turns",
    "count_lines",
    "decide",
    "ingest_file",
    "ingest_turns",
    "parse_turn",
    "read_turns",
]

logger = logging.getLogger("memdedup.ingest")


# ---------------------------------------------------------------------------------------------------
# One turn: parse -> scrub -> mint -> decide -> write
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Settings:
    threshold: float
    min_importance: float
    max_records: int
    scrubber: CredentialScrubber
    source: str
    gate: str = "prefix"
    guards: Guards = field(default_factory=Guards)


def ingest_turn(store: SQLiteGraphStore, turn: Turn, report: IngestReport, settings: _Settings) -> None:
    """Ingest one turn in one transaction; the report learns of it only once it is committed."""
    scrubber = settings.scrubber
    # 1. parse: find the ops in the model's raw output.
    ops, form, problem = read_ops(turn.output, scrubber)
    # 2. scrub, once: the chat messages and every text of every op, before any id is derived. The turn is
    # one record: a secret found in any of its texts is redacted in all of them.
    scrubber = scrubber.for_record(turn.messages, ops)
    transcript = _transcript_rows(turn, scrubber)
    scrubbed_ops = [scrub_op(op, scrubber) for op in ops]
    # 3. mint: memories with derived ids, and a reason for every op that is none.
    request = ExtractionRequest(
        scope=turn.scope,
        user_message=_last_said(transcript, "user"),
        assistant_message=_last_said(transcript, "assistant"),
        turn=turn.turn,
        max_records=settings.max_records,
        min_importance=settings.min_importance,
    )
    result = mint_all(scrubbed_ops, request, family=turn.family, form=form, problem=problem)
    # 4 and 5. decide and write, in the turn's one transaction: all of it is written, or none.
    with store.transaction():
        store.learn_secrets(scrubber.secrets)  # once a secret, always a secret, store-wide
        rows = sum(_write_transcript_row(store, turn.scope, row) for row in transcript)
        outcomes = [_apply(store, turn, memory, settings) for memory in result.memories]
    report._add_turn(turn, result, outcomes, rows)


def _transcript_rows(turn: Turn, scrubber: CredentialScrubber) -> list[TranscriptRow]:
    """The turn's user and assistant messages as transcript rows, cleaned and scrubbed."""
    rows = []
    for position, message in enumerate(turn.messages):
        speaker, content = message.get("role"), message.get("content")
        if not isinstance(speaker, str) or str.__str__(speaker) not in TRANSCRIPT_SPEAKERS:
            continue
        if not isinstance(content, str) or not content.strip():
            continue
        text = scrubber.scrub_text(clean_text(content.strip())).text
        rows.append(TranscriptRow.of(turn.turn, position, str.__str__(speaker), text))
    return rows


def _last_said(transcript: list[TranscriptRow], speaker: str) -> str:
    return next((row.text for row in reversed(transcript) if row.speaker == speaker), "")


@dataclass(frozen=True)
class Canonical:
    """The memory a write is the same fact as, and why: ``reason`` is ``"ratio"`` or ``"containment"``, and
    ``score`` the exact ratio of the normalised labels (stored first)."""

    node: StoredNode
    reason: str
    score: float


def decide(
    store: SQLiteGraphStore,
    scope: Scope,
    *,
    layer: Any,
    label: str,
    threshold: float,
    gate: str = "prefix",
    guards: Guards | str | Iterable[str] | None = None,
) -> Canonical | None:
    """The memory ``label`` is the same fact as, as :func:`memdedup.dedup.find_canonical_node` chooses it
    on this store with ``gate`` and ``guards``, with the reason and the score, from one call into the core.

    ``gate="prefix"`` (the seed's): the first ``DEDUP_QUERY_LIMIT`` rows ``scope`` sees in ``layer`` whose
    label starts with the stripped label's first ``DEDUP_PREFIX_LEN`` characters; of those, the first
    that ``scope`` owns, that matches, and that the guards (when given) allow. ``gate="index"``: the
    oldest such live row ``scope`` owns in ``layer``, from the store's label index (a store that keeps
    none, or an index lookup that fails, is logged at DEBUG and answered by the prefix gate).

    A lookup that fails for any reason but the database's is logged at DEBUG and decides nothing (the
    write goes on as a new memory); a database failure is the run's (:class:`StoreError`).
    """
    check_gate(gate)
    parsed = as_guards(guards)
    label = label.strip()
    if not label:
        return None
    if gate == "index":
        decided, found = _decide_by_index(
            store, scope, layer=layer, label=label, threshold=threshold, guards=parsed
        )
        if decided:
            return found
    candidates = store.query(
        scope, layer=layer, label_prefix=label[:DEDUP_PREFIX_LEN], limit=DEDUP_QUERY_LIMIT
    )
    try:
        # Visible but owned by an ancestor: never ours to collapse into (visibility is not ownership).
        owned = [node for node in candidates if owner_of(node) == scope.scope_path]
        if not owned:
            return None
        reasons, scores = _impl.pair_reasons(
            [label, *(node.label for node in owned)],
            [(k + 1, 0) for k in range(len(owned))],
            threshold=threshold,
            min_chars=DEDUP_SUBSUME_MIN_CHARS,
        )
        for node, reason, score in zip(owned, reasons, scores, strict=True):
            if reason is not None and (not parsed or guards_allow(node.label, label, parsed)):
                return Canonical(node, reason, score)
    except Exception:
        logger.debug("ingest: dedup lookup failed, writing a new memory", exc_info=True)
    return None


def _decide_by_index(
    store: SQLiteGraphStore, scope: Scope, *, layer: Any, label: str, threshold: float, guards: Guards
) -> tuple[bool, Canonical | None]:
    """The index gate of :func:`decide`: ``(True, answer)``, or ``(False, None)`` when the prefix gate
    must decide instead (no index, or an index lookup that failed)."""
    index = store.label_index(scope, layer)  # a database failure (a rebuild) is the run's
    if index is None:
        logger.debug("ingest: the store keeps no label index; using the prefix gate")
        return False, None
    try:
        match = index.first_match(
            label, threshold=threshold, min_chars=DEDUP_SUBSUME_MIN_CHARS, guards=guards or None
        )
        if match is None:
            return True, None
        node = store.owned_node(scope, str(match.id))
        if node is None or node.retracted or node.label != index.label(match.id):
            raise LookupError("the label index is out of step with the store")
        return True, Canonical(node, match.reason, match.score)
    except StoreError:
        raise
    except Exception:
        logger.debug("ingest: index lookup failed; using the prefix gate", exc_info=True)
        return False, None


def _write_transcript_row(store: SQLiteGraphStore, scope: Scope, row: TranscriptRow) -> int:
    """Write one transcript row unless ``scope`` already owns it (an ancestor's row is another row)."""
    created = store.insert_node(
        scope,
        node_id=row.node_id,
        layer=row.layer,
        label=row.text,
        properties=row.properties,
        origin=row.origin,
        turn=row.turn_id,
    )
    return 1 if created else 0


def _apply(
    store: SQLiteGraphStore, turn: Turn, memory: ExtractedMemory, settings: _Settings
) -> RecordOutcome:
    """Write one memory; or, when it is the same fact as a row the write scope owns, restate or update
    that row (:mod:`memdedup.facts`); enter it in the ledger."""
    # Compared and written as the store keeps it: a value it remembers as a secret is redacted first.
    record = memory.record
    text = store.redact_secrets(record.text)
    if text != record.text:
        record = replace(record, text=text)
    scope_path = turn.scope.scope_path

    def outcome_of(
        outcome: str,
        node_id: str,
        stored_text: str,
        kind: str | None = None,
        score: float | None = None,
        change: str = "",
    ) -> RecordOutcome:
        return RecordOutcome(
            line=turn.line,
            turn=turn.turn,
            scope_path=scope_path,
            op=f"op[{memory.op_index}]",
            record_id=record.record_id,
            layer=record.layer.value,
            text=record.text,
            outcome=outcome,
            node_id=node_id,
            stored_text=stored_text,
            match_kind=kind,
            match_score=score,
            change=change,
            redactions=memory.redactions,
        )

    applied = store.ledger_entry(scope_path, record.record_id)
    if applied is not None:
        node = store.owned_node(turn.scope, applied.node_id)
        return outcome_of(
            ALREADY_INGESTED,
            applied.node_id,
            node.label if node else "",
            applied.match_kind,
            applied.match_score,
        )
    canonical = None
    if record.layer in DEDUP_LAYERS:
        canonical = decide(
            store,
            turn.scope,
            layer=record.layer,
            label=record.text,
            threshold=settings.threshold,
            gate=settings.gate,
            guards=settings.guards,
        )
    if canonical is not None:
        stored = canonical.node
        fact = facts_match(stored.label, record.text, canonical.reason, canonical.score)
        scope, text, reason, source = turn.scope, record.text, fact.reason, settings.source
        importance, salience = memory.importance, record.salience
        if fact.kind == UPDATED:
            store.update_text(
                scope,
                stored.id,
                text=text,
                properties=memory.properties,
                reason=reason,
                turn=turn.turn,
                importance=importance,
                salience=salience,
                source=source,
            )
        else:
            store.restate(
                scope,
                stored.id,
                text=text,
                reason=reason,
                turn=turn.turn,
                importance=importance,
                salience=salience,
                source=source,
            )
        result = outcome_of(fact.kind, stored.id, stored.label, fact.rule, fact.score, fact.change)
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
            turn=turn.turn,
        )
        result = outcome_of(WRITTEN, node.id, "")
    store.add_ledger_entry(
        LedgerEntry(
            scope_path=scope_path,
            record_id=record.record_id,
            node_id=result.node_id,
            outcome=result.outcome,
            turn=turn.turn,
            layer=record.layer.value,
            text=record.text,
            match_kind=result.match_kind,
            match_score=result.match_score,
            source=settings.source,
        )
    )
    return result


# ---------------------------------------------------------------------------------------------------
# A run: every turn, with its failures kept apart
# ---------------------------------------------------------------------------------------------------
class IngestInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped an ingest run at a turn boundary; ``report`` is what it committed until then."""

    def __init__(self, report: IngestReport) -> None:
        super().__init__("ingest interrupted")
        self.report = report


class _Run:
    """One ingest run: the store, the report, the settings, and Ctrl-C deferred to turn boundaries."""

    def __init__(
        self,
        db: str | os.PathLike[str] | SQLiteGraphStore,
        *,
        threshold: float,
        min_importance: float,
        max_records: int,
        scrubber: CredentialScrubber | None,
        progress: Callable[[int], None] | None,
        source: str,
        gate: str = "prefix",
        guards: Guards | str | Iterable[str] | None = None,
    ) -> None:
        check_gate(gate)
        parsed_guards = as_guards(guards)
        if (
            isinstance(threshold, bool)
            or not isinstance(threshold, int | float)
            or not 0.0 <= threshold <= 1.0
        ):
            raise InvalidInputError(f"threshold must be a number within [0, 1], not {threshold!r}")
        if isinstance(max_records, bool) or not isinstance(max_records, int) or max_records < 0:
            raise InvalidInputError(f"max_records must be an integer >= 0, not {max_records!r}")
        scrubber = scrubber if scrubber is not None else CredentialScrubber()
        self.settings = _Settings(
            float(threshold), float(min_importance), max_records, scrubber, source, gate, parsed_guards
        )
        self.progress = progress
        self.owned = not isinstance(db, SQLiteGraphStore)
        indexed = gate == "index"
        self.store: SQLiteGraphStore = (
            db if isinstance(db, SQLiteGraphStore) else SQLiteGraphStore(db, label_index=indexed)
        )
        if indexed and not self.owned:
            self.store.enable_label_index()
        self.report = IngestReport(source=source, database=display_name(self.store.path))
        self.report.warnings.extend(
            f"the database failed its integrity check on open: {problem}"
            for problem in self.store.integrity_problems
        )
        self.stop_requested = False
        self._previous_handler: Any = None
        self._remembered = 0  # how many secrets the store remembered when the run began

    def __enter__(self) -> _Run:
        # Ctrl-C asks the run to stop at the next turn boundary, when the run may take the signal: in the
        # main thread, from Python's default handler (an asyncio loop or an application keeps its own).
        if threading.current_thread() is threading.main_thread() and (
            signal.getsignal(signal.SIGINT) is signal.default_int_handler
        ):
            self._previous_handler = signal.signal(signal.SIGINT, self._on_interrupt)
        self._remembered = self._secrets_remembered()
        return self

    def _secrets_remembered(self) -> int:
        try:
            return self.store.secrets_remembered()
        except MemdedupError:
            return -1

    def _on_interrupt(self, _signum: int, _frame: FrameType | None) -> None:
        if self.stop_requested:
            raise KeyboardInterrupt  # a second Ctrl-C: stop now (the turn in progress rolls back)
        self.stop_requested = True

    def ingest(self, item: Any) -> None:
        """One input item: a turn, a turn's JSON object, or the LineProblem of a line that is none."""
        self.report.lines += 1
        line = self.report.lines
        parsed = (
            item
            if isinstance(item, LineProblem)
            else parse_turn(item, line=line, scrubber=self.settings.scrubber)
        )
        if isinstance(parsed, LineProblem):
            self.report.problems.append(parsed)
        else:
            try:
                ingest_turn(self.store, parsed, self.report, self.settings)
            except StoreError:
                raise  # the database failed: the run ends (see __exit__)
            except Exception as exc:  # this turn's own data: it rolled back whole, the run goes on
                reason = (
                    f"write_failed: the turn was not written ({exception_text(exc, self.settings.scrubber)})"
                )
                self.report.problems.append(LineProblem(parsed.line, reason))
        if self.progress is not None:
            self.progress(1)

    def consume(self, turns: Iterable[Any]) -> IngestReport:
        """Ingest every item, stopping at a turn boundary on Ctrl-C; the report."""
        with self:
            for item in turns:
                if self.stop_requested:
                    break
                self.ingest(item)
        return self.report

    async def aconsume(self, turns: Iterable[Any] | AsyncIterator[Any]) -> IngestReport:
        """:meth:`consume` inside an event loop, which runs between turns."""
        with self:
            if isinstance(turns, AsyncIterator) or hasattr(turns, "__aiter__"):
                async for item in turns:
                    if self.stop_requested:
                        break
                    self.ingest(item)
            else:
                for item in turns:
                    if self.stop_requested:
                        break
                    self.ingest(item)
                    await asyncio.sleep(0)
        return self.report

    def __exit__(self, exc_type: Any, exc: BaseException | None, _tb: Any) -> None:
        if self._previous_handler is not None:
            signal.signal(signal.SIGINT, self._previous_handler)
        # A value a later turn taught the store is a secret is redacted in earlier records too (only
        # when the run taught the store something: each record's texts are looked up again).
        if self._secrets_remembered() != self._remembered:
            redact_secrets = self.store.redact_secrets
            with contextlib.suppress(MemdedupError):
                self.report.records[:] = [
                    replace(
                        r,
                        text=redact_secrets(r.text),
                        stored_text=redact_secrets(r.stored_text),
                        change=redact_secrets(r.change),
                    )
                    for r in self.report.records
                ]
        if self.owned:
            self.store.close()
        if isinstance(exc, StoreError):
            self.report.error = str(exc)
            exc.report = self.report
        elif isinstance(exc, KeyboardInterrupt) and not isinstance(exc, IngestInterrupted):
            self.report.interrupted = True
            raise IngestInterrupted(self.report) from exc
        elif exc is None and self.stop_requested:
            self.report.interrupted = True
            raise IngestInterrupted(self.report)


def ingest_turns(
    turns: Iterable[Turn | LineProblem | Mapping[str, Any]]
    | AsyncIterator[Turn | LineProblem | Mapping[str, Any]],
    db: str | os.PathLike[str] | SQLiteGraphStore,
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_importance: float = 3.0,
    max_records: int = 50,
    scrubber: CredentialScrubber | None = None,
    progress: Callable[[int], None] | None = None,
    source: str = "",
    gate: str = "prefix",
    guards: Guards | str | Iterable[str] | None = None,
) -> IngestReport:
    """Ingest turns (``Turn`` objects or their JSON objects) into the store at ``db`` (a path or a store).

    ``progress`` is called with 1 after each turn (or unreadable line) is done. ``gate`` is the write-time
    lookup's candidate gate (:func:`decide`): ``"prefix"``, the seed's, or ``"index"``, gate-free (the
    store then keeps a label index, built on open). ``guards`` (off by default; ``"value,negation"``)
    makes a statement that differs from a row in a value or a negation another fact. Raises
    :class:`IngestInterrupted` on Ctrl-C and :class:`~memdedup.store.StoreError` when the database fails,
    each carrying the partial report (see the module docstring). An async iterable is read on its own
    event loop (inside a running loop, use :func:`aingest_turns`).
    """
    run = _Run(
        db,
        threshold=threshold,
        min_importance=min_importance,
        max_records=max_records,
        scrubber=scrubber,
        progress=progress,
        source=source,
        gate=gate,
        guards=guards,
    )
    if hasattr(turns, "__aiter__"):
        return asyncio.run(run.aconsume(turns))
    return run.consume(turns)


async def aingest_turns(
    turns: Iterable[Turn | LineProblem | Mapping[str, Any]]
    | AsyncIterator[Turn | LineProblem | Mapping[str, Any]],
    db: str | os.PathLike[str] | SQLiteGraphStore,
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_importance: float = 3.0,
    max_records: int = 50,
    scrubber: CredentialScrubber | None = None,
    progress: Callable[[int], None] | None = None,
    source: str = "",
    gate: str = "prefix",
    guards: Guards | str | Iterable[str] | None = None,
) -> IngestReport:
    """:func:`ingest_turns` as a coroutine, for callers inside an event loop (turns may be an async
    iterable). Each turn is written synchronously (SQLite is); the loop runs between turns."""
    run = _Run(
        db,
        threshold=threshold,
        min_importance=min_importance,
        max_records=max_records,
        scrubber=scrubber,
        progress=progress,
        source=source,
        gate=gate,
        guards=guards,
    )
    return await run.aconsume(turns)


def ingest_file(
    path: str | os.PathLike[str],
    db: str | os.PathLike[str] | SQLiteGraphStore,
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_importance: float = 3.0,
    max_records: int = 50,
    scrubber: CredentialScrubber | None = None,
    progress: Callable[[int], None] | None = None,
    gate: str = "prefix",
    guards: Guards | str | Iterable[str] | None = None,
) -> IngestReport:
    """Ingest a ``.jsonl`` file of turns (see :class:`Turn`; ``-`` reads stdin, gzip is read
    decompressed); bad lines are reported, never fatal.

    An unreadable file raises :class:`~memdedup.errors.InvalidInputError` before anything is written.
    """
    source = display_name(path)
    if source != "<stdin>" and not os.path.isfile(path):
        raise InvalidInputError(f"cannot read {source}: no such file")
    scrubber = scrubber if scrubber is not None else CredentialScrubber()
    turns = read_turns(path, scrubber=scrubber)
    try:
        return ingest_turns(
            turns,
            db,
            threshold=threshold,
            min_importance=min_importance,
            max_records=max_records,
            scrubber=scrubber,
            progress=progress,
            source=source,
            gate=gate,
            guards=guards,
        )
    finally:
        turns.close()
