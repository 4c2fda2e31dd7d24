"""The report behind ``memdedup tune``: a sweep, one threshold in detail, the guards' trade and the
gates' costs, as text or JSON."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memdedup._rules import DEDUP_SIMILARITY_THRESHOLD, DEDUP_SUBSUME_MIN_CHARS
from memdedup.errors import InvalidInputError
from memdedup.guards import Guards
from memdedup.inputs import display_name
from memdedup.tuning.evaluation import Evaluation, _num, evaluate
from memdedup.tuning.gates import GateCost, best_gate_costs, gate_costs, gate_notes
from memdedup.tuning.pairs import load_pairs
from memdedup.tuning.prepared import prepare
from memdedup.tuning.sweeps import Sweep, guard_tradeoff, parse_thresholds, sweep

DEFAULT_THRESHOLDS = "0.70:0.95:0.01"


@dataclass(frozen=True)
class TuneReport:
    """A sweep, the detail of one threshold, what the guards gain and cost there, and what each gate
    costs there (``gates``) and at its own best-F1 threshold of the sweep (``gates_best``), with the
    same min_chars and guards."""

    source: str
    sweep: Sweep
    detail: Evaluation
    tradeoff: dict[str, dict[str, Any]]
    gates: dict[str, GateCost] = field(default_factory=dict)
    gates_best: dict[str, GateCost] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "pairs": len(self.sweep.prepared),
            "best_f1_threshold": _num(self.sweep.best("f1")),
            "sweep": self.sweep.to_dict(),
            "detail": self.detail.to_dict(),
            "guards_at_detail_threshold": self.tradeoff,
            "gates_at_detail_threshold": {g: c.to_dict() for g, c in self.gates.items()},
            "gates_at_best_f1": {g: c.to_dict() for g, c in self.gates_best.items()},
        }

    def _gate_table(self, costs: dict[str, GateCost]) -> str:
        rows = [
            (
                c.gate,
                _fmt_t(c.threshold),
                c.collapsed,
                c.false_merges,
                c.misses,
                c.lost,
                _fmt_p(c.recall_lost),
                c.stopped,
                _fmt_p(c.precision),
                _fmt_p(c.recall),
                _fmt_p(c.f1),
            )
            for c in costs.values()
        ]
        headers = (
            "gate",
            "threshold",
            "collapsed",
            "false merges",
            "misses",
            "lost",
            "recall lost",
            "stopped",
            "precision",
            "recall",
            "F1",
        )
        return _grid(headers, rows, right=frozenset(range(1, 11)))

    def text(self, *, show: int = 20) -> str:
        """The terminal form; ``show`` caps the false merges and misses listed (0: all)."""
        sw, ev = self.sweep, self.detail
        n = len(sw.prepared)
        ts = sw.thresholds
        lines = [
            f"memdedup tune: {self.source} ({n} pairs, {len(sw.classes)} classes, "
            f"{int(sw.class_same.sum())} same-fact)",
            f"  prefix {sw.prefix}, min-chars {sw.min_chars}, guards {sw.guards}; "
            f"{len(ts)} thresholds {_fmt_t(ts[0])}..{_fmt_t(ts[-1])}"
            if len(ts)
            else "  no thresholds",
            "",
        ]
        if len(ts):
            best = sw.best("f1")
            picks = _selection(ts, 30, [ev.setting.threshold, best])
            p, r, f = sw.precision, sw.recall, sw.f1
            rows: list[tuple[Any, ...]] = [
                (
                    _fmt_t(ts[k]) + (" *" if ts[k] == best else ""),
                    int(sw.tp[k] + sw.fp[k]),
                    int(sw.fp[k]),
                    int(sw.fn[k]),
                    _fmt_p(p[k]),
                    _fmt_p(r[k]),
                    _fmt_p(f[k]),
                )
                for k in picks
            ]
            lines.append(
                "Threshold sweep" + ("" if len(picks) == len(ts) else f" ({len(picks)} of {len(ts)})")
            )
            lines.append(
                _grid(
                    ("threshold", "collapsed", "false merges", "misses", "precision", "recall", "F1"),
                    rows,
                    right=frozenset(range(1, 7)),
                )
            )
            lines.append(
                f"  * best F1 {_fmt_p(np.nanmax(f)) if not np.all(np.isnan(f)) else '-'} at {_fmt_t(best)}"
            )
            lines.append("")
            cols = _selection(ts, 6, [ev.setting.threshold])
            lines.append("Collapsed per class (collapsed/pairs)")
            rows = []
            for c_idx, c in enumerate(sw.classes):
                same, total = int(sw.class_same[c_idx]), int(sw.class_totals[c_idx])
                truth = "same" if same == total else "different" if same == 0 else f"{same} same"
                rows.append(
                    (c, truth, total, *(f"{int(sw.class_collapsed[k, c_idx])}/{total}" for k in cols))
                )
            lines.append(
                _grid(("class", "truth", "pairs", *(_fmt_t(ts[k]) for k in cols)), rows, right=frozenset({2}))
            )
            lines.append("")
        s = ev.setting
        lines.append(
            f"At threshold {_fmt_t(s.threshold)}: {ev.tp + ev.fp} collapsed, {ev.fp} false merges, "
            f"{ev.fn} misses; precision {_fmt_p(ev.precision)}, recall {_fmt_p(ev.recall)}, "
            f"F1 {_fmt_p(ev.f1)}"
        )
        lines.append("")
        lines.append(
            f"Guards at threshold {_fmt_t(s.threshold)} "
            "(stopped: false merges prevented; lost: true collapses blocked)"
        )
        rows = [
            (
                name,
                v["tp"] + v["fp"],
                v["fp"],
                v["fn"],
                _fmt_p(v["precision"]),
                _fmt_p(v["recall"]),
                _fmt_p(v["f1"]),
                v["stopped"],
                v["lost"],
            )
            for name, v in self.tradeoff.items()
        ]
        lines.append(
            _grid(
                (
                    "guards",
                    "collapsed",
                    "false merges",
                    "misses",
                    "precision",
                    "recall",
                    "F1",
                    "stopped",
                    "lost",
                ),
                rows,
                right=frozenset(range(1, 9)),
            )
        )
        if self.gates:
            lines.append("")
            lines.append(
                f"Gates at threshold {_fmt_t(s.threshold)} (min-chars {s.min_chars}, guards {s.guards})"
            )
            notes = gate_notes(sw.prepared.prefix_len)
            lines.extend(f"  {g}: {notes[g]}" for g in self.gates)
            lines.append(
                "  lost: restatements the contract accepts but the gate never fetches (recall lost: lost / "
                "same-fact pairs);"
            )
            lines.append(
                "  stopped: false merges the gate prevents (both against no gate at the same setting)"
            )
            lines.append(self._gate_table(self.gates))
        if self.gates_best:
            lines.append("")
            lines.append(
                f"Gates at each gate's best-F1 threshold of the sweep (lowest on ties; min-chars "
                f"{s.min_chars}, guards {s.guards})"
            )
            lines.append(self._gate_table(self.gates_best))
        for title, outcomes in (("False merges", ev.false_merges), ("Misses", ev.misses)):
            lines.append("")
            shown = outcomes if show <= 0 else outcomes[:show]
            more = "" if len(shown) == len(outcomes) else f", first {len(shown)} shown (--show 0: all)"
            lines.append(f"{title} at {_fmt_t(s.threshold)} ({len(outcomes)}{more})")
            if shown:
                rows = [
                    (
                        o.pair.cls,
                        f"{o.score:.3f}",
                        _cut(o.why, 34),
                        _cut(o.pair.stored, 44),
                        _cut(o.pair.incoming, 44),
                    )
                    for o in shown
                ]
                lines.append(
                    _grid(("class", "score", "why", "stored", "incoming"), rows, right=frozenset({1}))
                )
        return "\n".join(lines) + "\n"


def tune(
    path: str | os.PathLike[str] | None = None,
    *,
    thresholds: Sequence[float] | np.ndarray | str = DEFAULT_THRESHOLDS,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    prefix: str = "raw",
    guards: Guards | str | None = None,
) -> TuneReport:
    """Load labelled pairs (the bundled corpus when ``path`` is None), sweep ``thresholds`` and detail
    ``threshold`` (the guards' trade-off and every gate's cost there, and each gate's at its best-F1
    threshold): what ``memdedup tune`` prints."""
    pairs = load_pairs(path)
    source = "bundled restatement corpus" if path is None else display_name(path)
    if not pairs:
        raise InvalidInputError(f"{source}: no labelled pairs (the input is empty): nothing to measure")
    ts = parse_thresholds(thresholds) if isinstance(thresholds, str) else np.asarray(thresholds, dtype=float)
    prepared = prepare(pairs)
    result = sweep(prepared, ts, min_chars=min_chars, prefix=prefix, guards=guards)
    detail = evaluate(prepared, threshold=threshold, min_chars=min_chars, prefix=prefix, guards=guards)
    tradeoff = guard_tradeoff(prepared, threshold=threshold, min_chars=min_chars, prefix=prefix)
    gates = gate_costs(prepared, threshold=threshold, min_chars=min_chars, guards=guards)
    gates_best = best_gate_costs(prepared, ts, min_chars=min_chars, guards=guards)
    return TuneReport(source, result, detail, tradeoff, gates, gates_best)


def _selection(ts: np.ndarray, most: int, keep: Iterable[float]) -> list[int]:
    """At most about ``most`` evenly spaced indices of ``ts``, always the ends and the thresholds in
    ``keep`` that ``ts`` contains (or the nearest ones)."""
    n = len(ts)
    if n <= most:
        return list(range(n))
    picks = {round(k * (n - 1) / (most - 1)) for k in range(most)}
    for t in keep:
        if not math.isnan(t):
            picks.add(int(np.argmin(np.abs(ts - t))))
    return sorted(picks)


def _fmt_t(t: float) -> str:
    return "-" if math.isnan(t) else f"{t:.4f}".rstrip("0").rstrip(".") if t % 1 else f"{t:.1f}"


def _fmt_p(x: Any) -> str:
    return "-" if x is None or (isinstance(x, float | np.floating) and math.isnan(x)) else f"{float(x):.3f}"


def _cut(text: str, width: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _grid(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], *, right: frozenset[int] = frozenset()
) -> str:
    cells = [[str(c) for c in row] for row in rows]
    widths = [
        max(len(h), *(len(row[i]) for row in cells)) if cells else len(h) for i, h in enumerate(headers)
    ]

    def line(row: Sequence[str]) -> str:
        parts = [c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(row)]
        return "  " + "  ".join(parts).rstrip()

    return "\n".join([line(list(headers)), *(line(r) for r in cells)])
