"""One setting in detail: the collapse matrix by class, precision, recall and F1, and every false merge
and miss with the reason."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memdedup._rules import DEDUP_PREFIX_LEN, DEDUP_SIMILARITY_THRESHOLD, DEDUP_SUBSUME_MIN_CHARS
from memdedup.guards import Guards, as_guards, why_blocked
from memdedup.tuning.decision import Setting, _check_prefix
from memdedup.tuning.pairs import LabelledPair
from memdedup.tuning.prepared import Prepared, prepare


class _Rates:
    """Precision, recall and F1 of a record with true positive, false positive and false negative counts."""

    tp: int
    fp: int
    fn: int

    @property
    def precision(self) -> float:
        return float(_ratio(self.tp, self.tp + self.fp))

    @property
    def recall(self) -> float:
        return float(_ratio(self.tp, self.tp + self.fn))

    @property
    def f1(self) -> float:
        return float(_f1(self.precision, self.recall))


@dataclass(frozen=True)
class ClassStats:
    """How one class fared: its pairs, how many are the same fact, how many collapsed."""

    cls: str
    total: int
    same_fact: int
    collapsed: int

    @property
    def rate(self) -> float:
        return self.collapsed / self.total if self.total else math.nan

    def to_dict(self) -> dict[str, Any]:
        return {"total": self.total, "same_fact": self.same_fact, "collapsed": self.collapsed}


@dataclass(frozen=True)
class PairOutcome:
    """A pair's decision with its exact ratio and why (``ratio``, ``containment``, ``prefix gate``,
    ``below threshold``, ``empty label``, or the guard that blocked it)."""

    index: int
    pair: LabelledPair
    collapsed: bool
    score: float
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, **self.pair.to_dict(), "score": self.score, "why": self.why}


def _f1(precision: Any, recall: Any) -> Any:
    with np.errstate(invalid="ignore", divide="ignore"):
        return 2 * precision * recall / (precision + recall)


def _ratio(num: Any, den: Any) -> Any:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(np.asarray(den) > 0, np.asarray(num, dtype=float) / np.maximum(den, 1), np.nan)


@dataclass(frozen=True)
class Evaluation(_Rates):
    """The outcome of one setting over a pair set. Positive = collapsed; precision is NaN when nothing
    collapsed, recall NaN when no pair is the same fact."""

    setting: Setting
    collapsed: np.ndarray
    tp: int
    fp: int
    fn: int
    tn: int
    classes: dict[str, ClassStats]
    false_merges: list[PairOutcome]
    misses: list[PairOutcome]

    def matrix(self) -> dict[str, tuple[int, int]]:
        """Class -> (collapsed, pairs)."""
        return {c: (s.collapsed, s.total) for c, s in self.classes.items()}

    def to_dict(self) -> dict[str, Any]:
        return {
            "setting": self.setting.to_dict(),
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
            "tn": self.tn,
            "precision": _num(self.precision),
            "recall": _num(self.recall),
            "f1": _num(self.f1),
            "classes": {c: s.to_dict() for c, s in self.classes.items()},
            "false_merges": [o.to_dict() for o in self.false_merges],
            "misses": [o.to_dict() for o in self.misses],
        }


def _num(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def _why(prepared: Prepared, k: int, setting: Setting, collapsed: bool, score: float) -> str:
    pair = prepared.pairs[k]
    if collapsed:
        return "ratio" if score >= setting.threshold else "containment"
    if not prepared.nonempty[k]:
        return "empty label"
    if not prepared.gates[setting.prefix][k]:
        return "prefix gate"
    contained = bool(prepared.contained[k])
    if score >= setting.threshold or (contained and prepared.shorter_len[k] >= setting.min_chars):
        return f"guard {why_blocked(pair.stored, pair.incoming, setting.guards)}"
    if contained:
        return f"below threshold; contained but shorter than {setting.min_chars}"
    return "below threshold"


def evaluate(
    pairs: Sequence[LabelledPair] | Prepared,
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    prefix: str = "raw",
    guards: Guards | str | None = None,
    prefix_len: int = DEDUP_PREFIX_LEN,
) -> Evaluation:
    """Decide every pair under one setting: counts, per-class collapses, false merges and misses."""
    prepared = prepare(pairs, prefix_len=prefix_len)
    setting = Setting(threshold, min_chars, _check_prefix(prefix), as_guards(guards), prepared.prefix_len)
    collapsed = prepared.collapsed(setting)
    same = prepared.same
    tp = int(np.count_nonzero(collapsed & same))
    fp = int(np.count_nonzero(collapsed & ~same))
    fn = int(np.count_nonzero(~collapsed & same))
    tn = int(np.count_nonzero(~collapsed & ~same))
    n_classes = len(prepared.classes)
    totals = np.bincount(prepared.class_ids, minlength=n_classes)
    same_counts = np.bincount(prepared.class_ids[same], minlength=n_classes)
    hits = np.bincount(prepared.class_ids[collapsed], minlength=n_classes)
    classes = {
        c: ClassStats(c, int(totals[k]), int(same_counts[k]), int(hits[k]))
        for k, c in enumerate(prepared.classes)
    }

    def outcomes(mask: np.ndarray, did: bool) -> list[PairOutcome]:
        scores = prepared.scores(mask)
        return [
            PairOutcome(
                k, prepared.pairs[k], did, float(scores[k]), _why(prepared, k, setting, did, scores[k])
            )
            for k in np.flatnonzero(mask).tolist()
        ]

    return Evaluation(
        setting=setting,
        collapsed=collapsed,
        tp=tp,
        fp=fp,
        fn=fn,
        tn=tn,
        classes=classes,
        false_merges=outcomes(collapsed & ~same, True),
        misses=outcomes(~collapsed & same, False),
    )
