"""Threshold sweeps and grids: every threshold of a grid decided with one sort per (class, truth) group,
the min-chars by threshold grid, what the guards trade, and threshold ranges parsed exactly."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

import numpy as np

from memdedup._rules import DEDUP_PREFIX_LEN, DEDUP_SIMILARITY_THRESHOLD, DEDUP_SUBSUME_MIN_CHARS
from memdedup.errors import InvalidInputError
from memdedup.guards import Guards, as_guards
from memdedup.tuning.decision import Setting, _check_prefix
from memdedup.tuning.evaluation import Evaluation, _f1, _num, _ratio, evaluate
from memdedup.tuning.pairs import LabelledPair
from memdedup.tuning.prepared import Prepared, prepare

MAX_THRESHOLDS = 100_001


@dataclass(frozen=True)
class Sweep:
    """One setting (min_chars, prefix, guards) at many thresholds: per threshold the confusion counts and
    per class the collapses. :meth:`at` gives the full :class:`Evaluation` of any threshold."""

    thresholds: np.ndarray
    min_chars: int
    prefix: str
    guards: Guards
    classes: list[str]
    class_totals: np.ndarray
    class_same: np.ndarray
    class_collapsed: np.ndarray  # (thresholds, classes)
    tp: np.ndarray
    fp: np.ndarray
    fn: np.ndarray
    tn: np.ndarray
    prepared: Prepared = field(repr=False)

    @property
    def precision(self) -> np.ndarray:
        return np.asarray(_ratio(self.tp, self.tp + self.fp), dtype=float)

    @property
    def recall(self) -> np.ndarray:
        return np.asarray(_ratio(self.tp, self.tp + self.fn), dtype=float)

    @property
    def f1(self) -> np.ndarray:
        return np.asarray(_f1(self.precision, self.recall), dtype=float)

    @property
    def collapse_rate(self) -> np.ndarray:
        """(thresholds, classes): the share of each class's pairs that collapse."""
        return np.asarray(_ratio(self.class_collapsed, self.class_totals[None, :]), dtype=float)

    def best(self, metric: str = "f1") -> float:
        """The threshold with the highest ``metric`` (``f1``, ``precision`` or ``recall``; the lowest
        threshold on ties); NaN when it is undefined everywhere."""
        values = np.asarray(getattr(self, metric), dtype=float)
        if values.size == 0 or np.all(np.isnan(values)):
            return math.nan
        return float(self.thresholds[int(np.nanargmax(values))])

    def at(self, threshold: float) -> Evaluation:
        return evaluate(
            self.prepared,
            threshold=threshold,
            min_chars=self.min_chars,
            prefix=self.prefix,
            guards=self.guards,
        )

    def rows(self) -> list[dict[str, Any]]:
        p, r, f = self.precision, self.recall, self.f1
        return [
            {
                "threshold": float(t),
                "collapsed": int(self.tp[k] + self.fp[k]),
                "tp": int(self.tp[k]),
                "fp": int(self.fp[k]),
                "fn": int(self.fn[k]),
                "tn": int(self.tn[k]),
                "precision": _num(float(p[k])),
                "recall": _num(float(r[k])),
                "f1": _num(float(f[k])),
            }
            for k, t in enumerate(self.thresholds)
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "min_chars": self.min_chars,
            "prefix": self.prefix,
            "guards": str(self.guards),
            "thresholds": [float(t) for t in self.thresholds],
            "rows": self.rows(),
            "classes": {
                c: {
                    "total": int(self.class_totals[k]),
                    "same_fact": int(self.class_same[k]),
                    "collapsed": [int(x) for x in self.class_collapsed[:, k]],
                }
                for k, c in enumerate(self.classes)
            },
        }


def sweep(
    pairs: Sequence[LabelledPair] | Prepared,
    thresholds: Sequence[float] | np.ndarray,
    *,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    prefix: str = "raw",
    guards: Guards | str | None = None,
    prefix_len: int = DEDUP_PREFIX_LEN,
) -> Sweep:
    """Every threshold of ``thresholds`` at once; equal, threshold by threshold, to :func:`evaluate`.

    Pairs that collapse whatever the threshold (containment) are counted once; the others that collapse
    at the lowest threshold do at ``t`` exactly when their score is ``>= t``, which a binary search in
    their sorted scores counts per (class, truth) group for all thresholds together.
    """
    prepared = prepare(pairs, prefix_len=prefix_len)
    ts = np.asarray(thresholds, dtype=np.float64).reshape(-1)
    if np.isnan(ts).any():
        raise InvalidInputError("thresholds must not be NaN")
    setting = Setting(0.0, min_chars, _check_prefix(prefix), as_guards(guards), prepared.prefix_len)
    always, open_ = prepared.masks(setting, float(ts.min()) if ts.size else math.inf)
    n_classes = len(prepared.classes)
    group = prepared.class_ids * 2 + prepared.same  # (class, truth) groups
    n_groups = 2 * n_classes
    counts = np.repeat(np.bincount(group[always], minlength=n_groups)[None, :], len(ts), axis=0)
    open_scores = prepared.scores(open_)[open_]
    order = np.lexsort((open_scores, group[open_]))
    scores, groups = open_scores[order], group[open_][order]
    bounds = np.searchsorted(groups, np.arange(n_groups + 1), side="left")
    for g in range(n_groups):
        block = scores[bounds[g] : bounds[g + 1]]
        if block.size:
            counts[:, g] += block.size - np.searchsorted(block, ts, side="left")
    by_class = counts.reshape(len(ts), n_classes, 2)
    totals = np.bincount(prepared.class_ids, minlength=n_classes)
    same = np.bincount(prepared.class_ids[prepared.same], minlength=n_classes)
    tp = by_class[:, :, 1].sum(axis=1)
    fp = by_class[:, :, 0].sum(axis=1)
    return Sweep(
        thresholds=ts,
        min_chars=setting.min_chars,
        prefix=setting.prefix,
        guards=setting.guards,
        classes=list(prepared.classes),
        class_totals=totals,
        class_same=same,
        class_collapsed=by_class.sum(axis=2),
        tp=tp,
        fp=fp,
        fn=int(same.sum()) - tp,
        tn=int((totals - same).sum()) - fp,
        prepared=prepared,
    )


def grid(
    pairs: Sequence[LabelledPair] | Prepared,
    thresholds: Sequence[float] | np.ndarray,
    *,
    min_chars: Iterable[int] = (DEDUP_SUBSUME_MIN_CHARS,),
    prefixes: Iterable[str] = ("raw",),
    guards: Iterable[Guards | str | None] = (None,),
    prefix_len: int = DEDUP_PREFIX_LEN,
) -> list[Sweep]:
    """A :class:`Sweep` for every (min_chars, prefix, guards) combination, on one :func:`prepare`."""
    prepared = prepare(pairs, prefix_len=prefix_len)
    return [
        sweep(prepared, thresholds, min_chars=m, prefix=p, guards=g)
        for m in min_chars
        for p in prefixes
        for g in guards
    ]


def guard_tradeoff(
    pairs: Sequence[LabelledPair] | Prepared,
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    prefix: str = "raw",
    prefix_len: int = DEDUP_PREFIX_LEN,
) -> dict[str, dict[str, Any]]:
    """What each guard choice (none, value, negation, all) gains and costs at one setting: per choice the
    counts and scores, ``stopped`` (false merges it prevents) and ``lost`` (true collapses it blocks),
    compared with no guards."""
    prepared = prepare(pairs, prefix_len=prefix_len)
    base = evaluate(prepared, threshold=threshold, min_chars=min_chars, prefix=prefix)
    out = {}
    for name in ("none", "value", "negation", "all"):
        ev = evaluate(prepared, threshold=threshold, min_chars=min_chars, prefix=prefix, guards=name)
        out[name] = {
            "tp": ev.tp,
            "fp": ev.fp,
            "fn": ev.fn,
            "precision": _num(ev.precision),
            "recall": _num(ev.recall),
            "f1": _num(ev.f1),
            "stopped": base.fp - ev.fp,
            "lost": base.tp - ev.tp,
        }
    return out


def _decimal(text: str, what: str) -> Decimal:
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        raise InvalidInputError(f"{what} is not a number: {text.strip()!r}") from None
    if not value.is_finite():
        raise InvalidInputError(f"{what} must be finite, not {text.strip()!r}")
    return value


def threshold_range(start: float | str, stop: float | str, step: float | str) -> np.ndarray:
    """``start, start + step, ...`` up to ``stop`` inclusive, in decimal arithmetic (so ``0.70:0.95:0.01``
    gives exactly the 26 floats one would type, 0.85 included), all within [0, 1]."""
    a, b, s = (_decimal(str(x), what) for x, what in ((start, "start"), (stop, "stop"), (step, "step")))
    if s <= 0:
        raise InvalidInputError(f"the step must be positive, not {s}")
    if not (0 <= a <= b <= 1):
        raise InvalidInputError(f"thresholds need 0 <= start <= stop <= 1, not {a}:{b}")
    count = int((b - a) / s) + 1
    if count > MAX_THRESHOLDS:
        raise InvalidInputError(f"{count} thresholds is too many (at most {MAX_THRESHOLDS})")
    return np.array([float(a + k * s) for k in range(count)], dtype=np.float64)


def parse_thresholds(text: str) -> np.ndarray:
    """``"A:B:STEP"`` (inclusive, see :func:`threshold_range`), or one value, or comma-separated values."""
    text = str(text).strip()
    if ":" in text:
        parts = text.split(":")
        if len(parts) != 3:
            raise InvalidInputError(f"thresholds must be A:B:STEP (e.g. 0.70:0.95:0.01), not {text!r}")
        return threshold_range(*parts)
    values = [_decimal(part, "threshold") for part in text.split(",") if part.strip()]
    if not values:
        raise InvalidInputError("no thresholds given")
    bad = [v for v in values if not 0 <= v <= 1]
    if bad:
        raise InvalidInputError(f"thresholds must lie in [0, 1], not {bad[0]}")
    return np.array(sorted({float(v) for v in values}), dtype=np.float64)
