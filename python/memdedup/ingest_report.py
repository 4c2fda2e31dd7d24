"""What an ingest run reports: the turn it reads, and for every op and line what became of it.

:class:`IngestReport` is what :func:`memdedup.ingest.ingest_turns` returns (and ``memdedup ingest --json``
prints): every record written, restated or updated (old and new text), already ingested, or dropped with
its reason; every line not ingested with its reason. Every text in it has been scrubbed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from memdedup.operations import ProviderFamily, reason_code
from memdedup.scope import Scope, readable_scope_path

__all__ = [
    "ALREADY_INGESTED",
    "OUTCOMES",
    "RESTATED",
    "UPDATED",
    "WRITTEN",
    "DegradedOutput",
    "DroppedOp",
    "IngestReport",
    "LineProblem",
    "RecordOutcome",
    "Turn",
]

WRITTEN = "written"
RESTATED = "restated"
UPDATED = "updated"
ALREADY_INGESTED = "already_ingested"
OUTCOMES = (WRITTEN, RESTATED, UPDATED, ALREADY_INGESTED)
"""What a minted record can become, in the order reports list them."""


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
                return str(message["content"])
        return ""


@dataclass(frozen=True)
class LineProblem:
    """An input line that was not ingested, and why (``invalid_json: ...``, ``write_failed: ...``)."""

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
    """What one minted memory became (``outcome``):

    - ``written``: a new row, ``node_id``;
    - ``restated``: the same fact as the row ``node_id`` its scope owns, whose text ``stored_text`` stays
      current (equal normalised texts, or ``text`` is terser: it occurs in ``stored_text``);
    - ``updated``: the same fact, said otherwise: ``text`` is now the row's current text and
      ``stored_text`` (the text it replaced) a revision; ``change`` names what the guard detectors see
      changed (``value 5432 -> 6543``, ``negation``);
    - ``already_ingested``: an earlier run applied this record (``stored_text``: the row's text now).

    ``match_kind`` (``ratio`` or ``containment``) and ``match_score`` (the exact ratio of the normalised
    texts, stored first) say why a restated or updated record is the same fact.
    """

    line: int
    turn: int
    scope_path: str
    op: str
    record_id: str
    layer: str
    text: str
    outcome: str
    node_id: str
    stored_text: str = ""
    match_kind: str | None = None
    match_score: float | None = None
    change: str = ""
    redactions: tuple[str, ...] = ()

    def why(self) -> str:
        """``ratio 0.912``, ``containment (ratio 0.640)``, then the change (``; value 5432 -> 6543``), or
        ``""`` for a record that matched nothing."""
        if self.match_kind is None:
            return ""
        score = "" if self.match_score is None else f"{self.match_score:.3f}"
        if self.match_kind == "ratio":
            why = f"ratio {score}"
        else:
            why = f"{self.match_kind} (ratio {score})" if score else self.match_kind
        return f"{why}; {self.change}" if self.change else why


@dataclass
class IngestReport:
    """Everything one ingest run committed, and a reason for everything it did not.

    ``interrupted`` is True when Ctrl-C stopped the run; ``error`` is the database failure that ended it
    (``""`` when none); ``warnings`` what the run found about the database (a failed integrity check).
    """

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
    interrupted: bool = False
    error: str = ""
    warnings: list[str] = field(default_factory=list)

    def _add_turn(self, turn: Turn, result: Any, outcomes: list[RecordOutcome], transcript_rows: int) -> None:
        """A committed turn (called only after its transaction committed)."""
        scope_path = turn.scope.scope_path
        self.turns += 1
        self.ops += result.op_count
        self.forms[result.form] += 1
        if result.degraded:
            self.degraded.append(DegradedOutput(turn.line, turn.turn, scope_path, result.form, result.reason))
        self.records.extend(outcomes)
        self.dropped.extend(
            DroppedOp(turn.line, turn.turn, scope_path, identifier, reason)
            for identifier, reason in result.dropped
        )
        self.transcript_rows += transcript_rows

    def _with(self, outcome: str) -> list[RecordOutcome]:
        return [record for record in self.records if record.outcome == outcome]

    @property
    def written(self) -> list[RecordOutcome]:
        return self._with(WRITTEN)

    @property
    def restated(self) -> list[RecordOutcome]:
        """Records that restated a row's current text (which stays)."""
        return self._with(RESTATED)

    @property
    def updated(self) -> list[RecordOutcome]:
        """Records that updated a row: their text is current now, the text they replaced a revision."""
        return self._with(UPDATED)

    @property
    def already_ingested(self) -> list[RecordOutcome]:
        return self._with(ALREADY_INGESTED)

    @property
    def redactions(self) -> Counter[str]:
        """Redaction kinds over the records this run applied (not the already-ingested)."""
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
            "restated": len(self.restated),
            "updated": len(self.updated),
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
            "restated": [scoped(r) for r in self.restated],
            "updated": [scoped(r) for r in self.updated],
            "already_ingested": [scoped(r) for r in self.already_ingested],
            "dropped": [scoped(d) for d in self.dropped],
            "degraded": [scoped(d) for d in self.degraded],
            "bad_lines": [scoped(p) for p in self.problems],
            "redactions": dict(self.redactions),
            "forms": dict(self.forms),
            "dropped_by_code": dict(Counter(drop.code for drop in self.dropped)),
            "interrupted": self.interrupted,
            "error": self.error,
            "warnings": list(self.warnings),
        }
