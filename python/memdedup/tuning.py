"""Benchmark-driven tuning: the write-time decision evaluated over labelled pairs and parameter grids.

A labelled pair is ``(stored, incoming, class, same_fact)``: ``same_fact`` is the human truth (does the
incoming label restate the stored one?), ``class`` the kind of restatement or near-miss it is. The
decision evaluated for a pair under a :class:`Setting` is the whole write-time path:

1. the prefix gate: ``"raw"`` (the seed's candidate fetch: the incoming label, stripped, cut to its first
   ``prefix_len`` = 20 characters, must be a case-sensitive prefix of the stripped stored label; a label
   shorter than that uses all of itself), ``"normalised"`` (the same on normalised labels) or ``"none"``
   (always compared);
2. :func:`memdedup.labels_match` with ``threshold`` and ``min_chars`` (ratio OR containment);
3. the guards (:mod:`memdedup.guards`), off unless asked for.

(The seed's candidate limit of 20 rows does not apply to a single pair.) :func:`decide` is that decision
for one pair, written plainly; the vectorised paths below give exactly its answer for every pair.

Everything a decision needs is computed once per pair set (:func:`prepare`): the gates, whether the
shorter normalised label occurs in the longer and its length, the exact ratio of the normalised labels
with the stored label first (the number ``labels_match`` compares with the threshold) and the guards'
verdicts, the last two only for the pairs whose decision can depend on them. A setting is then decided as
``gate & (score >= t | contained & shorter >= m) & ~blocked`` on numpy arrays, and a whole threshold sweep
with one sort and a binary search per (class, truth) group, so a 100-threshold sweep costs about one
pass.

What a gate costs (:func:`gate_costs`) is read off the same arrays: with no gate the decision is the
contract itself, so a gate's lost restatements are the same-fact pairs the contract accepts and the gate
does not fetch, and the false merges it stops are the different-fact pairs it keeps from an accepting
contract.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

import numpy as np

from memdedup._backend import impl as _impl
from memdedup._rules import DEDUP_PREFIX_LEN, DEDUP_SIMILARITY_THRESHOLD, DEDUP_SUBSUME_MIN_CHARS
from memdedup.errors import InvalidInputError
from memdedup.guards import Guards, as_guards, negation_blocks, value_blocks, why_blocked
from memdedup.inputs import display_name, read_text, split_lines
from memdedup.tables import check_fields

__all__ = [
    "PREFIX_MODES",
    "ClassStats",
    "Evaluation",
    "GateCost",
    "LabelledPair",
    "PairOutcome",
    "Prepared",
    "Setting",
    "Sweep",
    "TuneReport",
    "best_gate_costs",
    "check_plot_path",
    "corpus_path",
    "decide",
    "evaluate",
    "gate_costs",
    "gate_notes",
    "gate_passes",
    "grid",
    "guard_tradeoff",
    "load_pairs",
    "parse_pairs",
    "parse_thresholds",
    "plot_formats",
    "plot_sweep",
    "prepare",
    "sweep",
    "threshold_range",
    "tune",
]

PREFIX_MODES = ("raw", "normalised", "none")
MAX_THRESHOLDS = 100_001


# ---------------------------------------------------------------------------------------------------
# Labelled pairs
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LabelledPair:
    """A stored label, an incoming one, the restatement class and whether they state the same fact."""

    stored: str
    incoming: str
    cls: str
    same_fact: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "class": self.cls,
            "same_fact": self.same_fact,
            "stored": self.stored,
            "incoming": self.incoming,
        }


def corpus_path() -> Any:
    """The bundled restatement corpus (a :class:`importlib.resources.abc.Traversable`)."""
    import importlib.resources

    return importlib.resources.files("memdedup") / "data" / "restatements.jsonl"


def _bool(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if value in (0, 1) and not isinstance(value, float):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in {"true", "false", "yes", "no", "1", "0"}:
        return value.strip().lower() in {"true", "yes", "1"}
    raise InvalidInputError(f"{where}: same_fact must be true or false, not {value!r}")


def parse_pairs(lines: Iterable[str], source: str = "<pairs>") -> list[LabelledPair]:
    """Labelled pairs from JSONL lines: objects with ``stored``, ``incoming``, ``same_fact`` and an
    optional ``class`` (default ``"unlabelled"``); blank lines are skipped, anything else is an error
    naming the line."""
    pairs = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"{where}: not JSON ({exc.msg})") from exc
        except RecursionError:
            raise InvalidInputError(f"{where}: not JSON (nested too deeply)") from None
        if not isinstance(row, dict):
            raise InvalidInputError(f"{where}: expected a JSON object")
        check_fields(line, row, ("stored", "incoming", "same_fact", "class"), where)
        missing = [key for key in ("stored", "incoming", "same_fact") if key not in row]
        if missing:
            raise InvalidInputError(f"{where}: no {missing[0]!r} field")
        for key in ("stored", "incoming"):
            if not isinstance(row[key], str):
                raise InvalidInputError(f"{where}: {key} must be a string")
        cls = row.get("class", "unlabelled")
        pairs.append(
            LabelledPair(
                row["stored"],
                row["incoming"],
                str(cls) if cls is not None else "unlabelled",
                _bool(row["same_fact"], where),
            )
        )
    return pairs


def load_pairs(path: str | os.PathLike[str] | None = None) -> list[LabelledPair]:
    """Labelled pairs from a JSONL file (see :func:`parse_pairs`; ``-`` reads stdin, gzip is read
    decompressed, the text must be UTF-8: :mod:`memdedup.inputs`); the bundled corpus when ``path`` is
    None."""
    if path is None:
        return parse_pairs(split_lines(corpus_path().read_text(encoding="utf-8")), "restatements.jsonl")
    return parse_pairs(split_lines(read_text(path)), display_name(path))


# ---------------------------------------------------------------------------------------------------
# One decision, written plainly (the oracle)
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Setting:
    """One configuration of the write-time decision."""

    threshold: float = DEDUP_SIMILARITY_THRESHOLD
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS
    prefix: str = "raw"
    guards: Guards = field(default_factory=Guards)
    prefix_len: int = DEDUP_PREFIX_LEN

    def __post_init__(self) -> None:
        object.__setattr__(self, "prefix", _check_prefix(self.prefix))
        object.__setattr__(self, "guards", as_guards(self.guards))
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, int | float):
            raise InvalidInputError(f"threshold must be a number, not {self.threshold!r}")
        if math.isnan(self.threshold):
            raise InvalidInputError("threshold must not be NaN")
        object.__setattr__(self, "threshold", float(self.threshold))

    def to_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "min_chars": self.min_chars,
            "prefix": self.prefix,
            "guards": str(self.guards),
            "prefix_len": self.prefix_len,
        }


def _check_prefix(prefix: str) -> str:
    if prefix == "normalized":
        return "normalised"
    if prefix not in PREFIX_MODES:
        raise InvalidInputError(f"prefix must be one of {', '.join(PREFIX_MODES)}, not {prefix!r}")
    return prefix


def gate_passes(stored: Any, incoming: Any, prefix: str = "raw", prefix_len: int = DEDUP_PREFIX_LEN) -> bool:
    """Whether the write-time candidate fetch would return ``stored`` for ``incoming`` (see the module
    docstring). An incoming label that is blank (raw) or normalises to nothing (normalised) fetches
    nothing."""
    prefix = _check_prefix(prefix)
    if prefix == "none":
        return True
    if prefix == "raw":
        key, other = str(incoming or "").strip(), str(stored or "").strip()
    else:
        key, other = _impl.normalise_label(incoming), _impl.normalise_label(stored)
    return bool(key) and other.startswith(key[:prefix_len])


def decide(
    stored: Any,
    incoming: Any,
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    prefix: str = "raw",
    guards: Guards | str | None = None,
    prefix_len: int = DEDUP_PREFIX_LEN,
) -> bool:
    """Does ``incoming`` collapse into ``stored`` at write time: the gate, then ``labels_match`` with
    the guards."""
    if not gate_passes(stored, incoming, prefix, prefix_len):
        return False
    return bool(
        _impl.labels_match(
            stored, incoming, threshold=threshold, min_chars=min_chars, guards=as_guards(guards)
        )
    )


# ---------------------------------------------------------------------------------------------------
# Per pair, once
# ---------------------------------------------------------------------------------------------------
class Prepared:
    """What every decision over a pair set needs, computed once per pair.

    Up front: the normalised labels, the gates, "the shorter normalised label occurs in the longer" and its
    length, and difflib's length bound ``2 * min(la, lb) / (la + lb)`` (``real_quick_ratio``, never below
    the ratio). The exact ratio and the guards' verdicts are computed on first need and kept: a pair whose
    length bound is below every threshold asked for can only collapse by containment, so its ratio is
    computed only if it is listed (a miss, a false merge) or :attr:`score` is read.
    """

    def __init__(self, pairs: Sequence[LabelledPair], *, prefix_len: int = DEDUP_PREFIX_LEN) -> None:
        self.pairs = list(pairs)
        self.prefix_len = int(prefix_len)
        if self.prefix_len < 0:
            raise InvalidInputError("prefix_len must not be negative")
        n = len(self.pairs)
        self.classes: list[str] = list(dict.fromkeys(p.cls for p in self.pairs))
        index = {c: k for k, c in enumerate(self.classes)}
        self.class_ids = np.fromiter((index[p.cls] for p in self.pairs), dtype=np.int64, count=n)
        self.same = np.fromiter((p.same_fact for p in self.pairs), dtype=bool, count=n)
        norm = _impl.normalise_label
        self._norm_s = [norm(p.stored) for p in self.pairs]
        self._norm_i = [norm(p.incoming) for p in self.pairs]
        both = list(zip(self._norm_s, self._norm_i, strict=True))
        len_s = np.fromiter((len(a) for a in self._norm_s), np.int64, n)
        len_i = np.fromiter((len(b) for b in self._norm_i), np.int64, n)
        self.nonempty = (len_s > 0) & (len_i > 0)
        self.shorter_len = np.minimum(len_s, len_i)
        # The same float expression difflib evaluates (2.0 * M / (la + lb)) with M = min(la, lb).
        with np.errstate(invalid="ignore", divide="ignore"):
            self.bound = np.where(self.nonempty, 2.0 * self.shorter_len / (len_s + len_i), 0.0)
        self.contained = np.fromiter(
            (bool(a) and bool(b) and ((a in b) if len(a) <= len(b) else (b in a)) for a, b in both), bool, n
        )
        plen = self.prefix_len
        raw = [(p.stored.strip(), p.incoming.strip()) for p in self.pairs]
        self.gates: dict[str, np.ndarray] = {
            "raw": np.fromiter((bool(b) and a.startswith(b[:plen]) for a, b in raw), bool, n),
            "normalised": np.fromiter((bool(b) and a.startswith(b[:plen]) for a, b in both), bool, n),
            "none": np.ones(n, dtype=bool),
        }
        self._score = np.full(n, np.nan)
        self._verdicts: dict[str, np.ndarray] = {
            "value": np.full(n, -1, dtype=np.int8),
            "negation": np.full(n, -1, dtype=np.int8),
        }

    def __len__(self) -> int:
        return len(self.pairs)

    def scores(self, mask: np.ndarray) -> np.ndarray:
        """The score array, exact at least where ``mask`` is set (NaN where not computed yet): the ratio of
        the normalised labels, stored first, as ``labels_match`` computes it; 0.0 for an empty label."""
        todo = np.flatnonzero(mask & np.isnan(self._score))
        if todo.size:
            ratio, ns, ni = _impl.ratio, self._norm_s, self._norm_i
            self._score[todo] = [ratio(ns[k], ni[k]) if ns[k] and ni[k] else 0.0 for k in todo.tolist()]
        return self._score

    @property
    def score(self) -> np.ndarray:
        """Every pair's exact score (computed now for the pairs that have none yet)."""
        return self.scores(np.ones(len(self.pairs), dtype=bool)).copy()

    def blocked(self, guards: Guards, mask: np.ndarray) -> np.ndarray:
        """Whether the enabled ``guards`` block each pair in ``mask`` (False outside it)."""
        out = np.zeros(len(self.pairs), dtype=bool)
        for name, blocks in (("value", value_blocks), ("negation", negation_blocks)):
            if not getattr(guards, name):
                continue
            verdicts = self._verdicts[name]
            todo = np.flatnonzero(mask & (verdicts < 0))
            if todo.size:
                pairs = self.pairs
                verdicts[todo] = [blocks(pairs[k].stored, pairs[k].incoming) for k in todo.tolist()]
            out |= mask & (verdicts == 1)
        return out

    def masks(self, setting: Setting, t_min: float) -> tuple[np.ndarray, np.ndarray]:
        """``(always, open)`` for thresholds ``>= t_min``: the pairs that collapse at any such threshold
        (gate passed, contained, not blocked), and those that collapse exactly when the threshold is at
        most their score (gate passed, not contained, score ``>= t_min``, not blocked). No other pair
        collapses at those thresholds. Scores are computed only where the length bound reaches ``t_min``,
        guard verdicts only for pairs the contract matches at ``t_min``."""
        if setting.prefix_len != self.prefix_len:
            raise InvalidInputError(f"prepared with prefix_len {self.prefix_len}, not {setting.prefix_len}")
        base = self.nonempty & self.gates[_check_prefix(setting.prefix)]
        contained = self.contained & (self.shorter_len >= setting.min_chars)
        always = base & contained
        open_ = base & ~contained & (self.bound >= t_min)
        open_ &= np.where(open_, self.scores(open_), -np.inf) >= t_min
        if setting.guards:
            blocked = self.blocked(setting.guards, always | open_)
            always &= ~blocked
            open_ &= ~blocked
        return always, open_

    def collapsed(self, setting: Setting) -> np.ndarray:
        """The decision for every pair under ``setting``."""
        always, open_ = self.masks(setting, setting.threshold)
        return np.asarray(always | open_, dtype=bool)


def prepare(pairs: Sequence[LabelledPair] | Prepared, *, prefix_len: int = DEDUP_PREFIX_LEN) -> Prepared:
    """Compute everything per pair once (a :class:`Prepared` is returned as is)."""
    if isinstance(pairs, Prepared):
        return pairs
    return Prepared(pairs, prefix_len=prefix_len)


# ---------------------------------------------------------------------------------------------------
# One setting, in detail
# ---------------------------------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------------------------------
# Threshold sweeps
# ---------------------------------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------------------------------
# What each gate costs
# ---------------------------------------------------------------------------------------------------
def gate_notes(prefix_len: int = DEDUP_PREFIX_LEN) -> dict[str, str]:
    """What each gate of :data:`PREFIX_MODES` fetches, in a few words (the report's legend)."""
    return {
        "raw": f"the seed's fetch: the stripped label's first {prefix_len} characters, case-sensitive",
        "normalised": f"the first {prefix_len} characters of the normalised label as a prefix",
        "none": "no gate, every stored label is compared (what the candidate index gives)",
    }


@dataclass(frozen=True)
class GateCost(_Rates):
    """One gate at one setting (threshold, min_chars, guards): its confusion counts, and against no gate
    at the same setting ``lost`` (same-fact pairs the contract accepts but the gate never fetches: the
    recall lost to the gate) and ``stopped`` (different-fact pairs the contract accepts but the gate
    keeps out: false merges it prevents). Precision is NaN when nothing collapsed, recall and
    ``recall_lost`` NaN when no pair is the same fact."""

    gate: str
    threshold: float
    min_chars: int
    guards: Guards
    tp: int
    fp: int
    fn: int
    tn: int
    lost: int
    stopped: int

    @property
    def collapsed(self) -> int:
        return self.tp + self.fp

    @property
    def false_merges(self) -> int:
        return self.fp

    @property
    def misses(self) -> int:
        """Missed restatements: those lost to the gate and those the contract (or a guard) refused."""
        return self.fn

    @property
    def recall_lost(self) -> float:
        """The recall the gate costs: ``lost`` over the same-fact pairs (no gate's recall minus this)."""
        return float(_ratio(self.lost, self.tp + self.fn))

    def to_dict(self) -> dict[str, Any]:
        return {
            "gate": self.gate,
            "threshold": self.threshold,
            "min_chars": self.min_chars,
            "guards": str(self.guards),
            "collapsed": self.collapsed,
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
            "tn": self.tn,
            "false_merges": self.false_merges,
            "misses": self.misses,
            "lost": self.lost,
            "recall_lost": _num(self.recall_lost),
            "stopped": self.stopped,
            "precision": _num(self.precision),
            "recall": _num(self.recall),
            "f1": _num(self.f1),
        }


def gate_costs(
    pairs: Sequence[LabelledPair] | Prepared,
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    guards: Guards | str | None = None,
    prefix_len: int = DEDUP_PREFIX_LEN,
    gates: Iterable[str] = PREFIX_MODES,
) -> dict[str, GateCost]:
    """What each of ``gates`` costs at one setting (see :class:`GateCost`), in the order given: each
    gate's decisions are :meth:`Prepared.collapsed`'s, and ``lost``/``stopped`` count the pairs that
    collapse with no gate at the same setting but not through this one."""
    prepared = prepare(pairs, prefix_len=prefix_len)
    guards = as_guards(guards)
    names = list(dict.fromkeys(_check_prefix(g) for g in gates))
    contract = prepared.collapsed(Setting(threshold, min_chars, "none", guards, prepared.prefix_len))
    same = prepared.same
    out = {}
    for gate in names:
        setting = Setting(threshold, min_chars, gate, guards, prepared.prefix_len)
        collapsed = prepared.collapsed(setting)
        dropped = contract & ~collapsed
        out[gate] = GateCost(
            gate=gate,
            threshold=setting.threshold,
            min_chars=setting.min_chars,
            guards=guards,
            tp=int(np.count_nonzero(collapsed & same)),
            fp=int(np.count_nonzero(collapsed & ~same)),
            fn=int(np.count_nonzero(~collapsed & same)),
            tn=int(np.count_nonzero(~collapsed & ~same)),
            lost=int(np.count_nonzero(dropped & same)),
            stopped=int(np.count_nonzero(dropped & ~same)),
        )
    return out


def best_gate_costs(
    pairs: Sequence[LabelledPair] | Prepared,
    thresholds: Sequence[float] | np.ndarray,
    *,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    guards: Guards | str | None = None,
    prefix_len: int = DEDUP_PREFIX_LEN,
    gates: Iterable[str] = PREFIX_MODES,
) -> dict[str, GateCost]:
    """Each gate at its own recommended threshold: the one of ``thresholds`` with its best F1
    (:meth:`Sweep.best`: the first on ties, the lowest in a sorted grid). A gate whose F1 is undefined at
    every threshold (no pair collapses, or none is the same fact) is left out."""
    prepared = prepare(pairs, prefix_len=prefix_len)
    out = {}
    for gate in dict.fromkeys(_check_prefix(g) for g in gates):
        best = sweep(prepared, thresholds, min_chars=min_chars, prefix=gate, guards=guards).best("f1")
        if not math.isnan(best):
            out[gate] = gate_costs(
                prepared, threshold=best, min_chars=min_chars, guards=guards, gates=(gate,)
            )[gate]
    return out


# ---------------------------------------------------------------------------------------------------
# Threshold grids
# ---------------------------------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------------------------------
# Pictures
# ---------------------------------------------------------------------------------------------------
def plot_formats() -> list[str]:
    """The image file extensions :func:`plot_sweep` can write (matplotlib's), without the dot."""
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError as exc:
        raise InvalidInputError("plotting needs matplotlib: pip install 'memdedup[plot]'") from exc
    return sorted(FigureCanvasBase.get_supported_filetypes())


def check_plot_path(path: str | os.PathLike[str]) -> None:
    """Refuse, before any work, a plot path matplotlib cannot write: no matplotlib, an extension it has
    no writer for (the message lists those it has), or a folder that does not exist."""
    formats = plot_formats()
    name = os.fspath(path)
    extension = os.path.splitext(name)[1].lower().lstrip(".")
    if extension not in formats:
        what = f"a .{extension} file" if extension else "a file without an extension"
        raise InvalidInputError(
            f"--plot {name}: matplotlib cannot write {what}; name it .png (or "
            f"{', '.join('.' + f for f in formats if f != 'png')})"
        )
    folder = os.path.dirname(os.path.abspath(name))
    if not os.path.isdir(folder):
        raise InvalidInputError(f"--plot {name}: cannot write there: no such directory {folder!r}")


def plot_sweep(
    result: Sweep,
    path: str | os.PathLike[str],
    *,
    threshold: float | None = None,
    title: str = "",
    gates: dict[str, GateCost] | None = None,
    best: dict[str, GateCost] | None = None,
) -> None:
    """A PNG (or any format matplotlib writes, by extension: :func:`plot_formats`) with two panels:
    precision, recall and F1 against the threshold, and a class x threshold heatmap of collapse rates
    (truth marked per class). With ``gates`` (:func:`gate_costs`), a second row shows what each gate costs
    at that setting: precision, recall and F1, and the counts of false merges, misses, restatements lost
    to the gate and false merges it stopped; ``best`` (:func:`best_gate_costs`) adds each gate's best-F1
    threshold and F1 to its name. Needs matplotlib (``pip install 'memdedup[plot]'``). An extension
    matplotlib cannot write, a missing folder or a refused write is an
    :class:`~memdedup.errors.InvalidInputError`."""
    check_plot_path(path)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ts = result.thresholds
    n_classes = len(result.classes)
    top = max(5.0, 0.32 * n_classes + 2)
    if gates:
        fig, axes = plt.subplots(
            2,
            2,
            figsize=(15, top + 5.5),
            gridspec_kw={"width_ratios": [1, 1.35], "height_ratios": [top, 5.5]},
        )
        (left, right), bottom = axes[0], axes[1]
        _plot_gates(bottom[0], bottom[1], gates, best or {})
    else:
        fig, (left, right) = plt.subplots(1, 2, figsize=(15, top), gridspec_kw={"width_ratios": [1, 1.35]})
    left.plot(ts, result.precision, label="precision", marker=".", color="tab:blue")
    left.plot(ts, result.recall, label="recall", marker=".", color="tab:orange")
    left.plot(ts, result.f1, label="F1", linestyle="--", color="tab:green")
    if threshold is not None:
        left.axvline(threshold, color="grey", linewidth=0.8, linestyle=":")
        left.text(threshold, 0.02, f" {threshold:g}", color="grey", fontsize=8)
    left.set_xlabel("ratio threshold")
    left.set_ylim(-0.02, 1.02)
    left.set_title("precision / recall vs threshold")
    left.grid(alpha=0.3)
    left.legend(loc="lower left")

    rates = np.nan_to_num(result.collapse_rate.T, nan=0.0)  # (classes, thresholds)
    step = float(ts[1] - ts[0]) if len(ts) > 1 else 0.01
    image = right.imshow(
        rates,
        aspect="auto",
        cmap="viridis",
        vmin=0.0,
        vmax=1.0,
        interpolation="nearest",
        extent=(float(ts[0]) - step / 2, float(ts[-1]) + step / 2, n_classes - 0.5, -0.5),
    )
    labels = []
    for k, c in enumerate(result.classes):
        same, total = int(result.class_same[k]), int(result.class_totals[k])
        truth = "same" if same == total else "different" if same == 0 else f"{same}/{total} same"
        labels.append(f"{c} ({truth})")
    right.set_yticks(range(n_classes))
    right.set_yticklabels(labels, fontsize=8)
    right.set_xlabel("ratio threshold")
    right.set_title("share of each class that collapses")
    if threshold is not None:
        right.axvline(threshold, color="white", linewidth=0.8, linestyle=":")
    fig.colorbar(image, ax=right, fraction=0.04, pad=0.02)
    subtitle = f"prefix {result.prefix}, min-chars {result.min_chars}, guards {result.guards}"
    fig.suptitle(f"{title} ({subtitle})" if title else subtitle)
    fig.tight_layout()
    try:
        fig.savefig(os.fspath(path), dpi=110)
    except OSError as exc:
        raise InvalidInputError(f"cannot write {os.fspath(path)}: {exc.strerror or exc}") from exc
    finally:
        plt.close(fig)


def _plot_gates(scores: Any, counts: Any, gates: dict[str, GateCost], best: dict[str, GateCost]) -> None:
    """The gate row of :func:`plot_sweep`: grouped bars per gate, each bar labelled with its value."""
    names = list(gates)
    x = np.arange(len(names))
    ticks = []
    for g in names:
        b = best.get(g)
        ticks.append(g if b is None else f"{g}\nbest F1 {_fmt_p(b.f1)} at {_fmt_t(b.threshold)}")
    first = gates[names[0]]
    setting = f"threshold {_fmt_t(first.threshold)}, min-chars {first.min_chars}, guards {first.guards}"
    series = [
        ("precision", [gates[g].precision for g in names], "tab:blue"),
        ("recall", [gates[g].recall for g in names], "tab:orange"),
        ("F1", [gates[g].f1 for g in names], "tab:green"),
    ]
    width = 0.8 / len(series)
    for k, (label, values, color) in enumerate(series):
        bars = scores.bar(
            x + (k - 1) * width, np.nan_to_num(values, nan=0.0), width, label=label, color=color
        )
        scores.bar_label(bars, labels=[_fmt_p(v) for v in values], fontsize=7, padding=1)
    scores.set_xticks(x, ticks, fontsize=8)
    scores.set_ylim(0.0, 1.2)
    scores.set_title(f"each gate at {setting}", fontsize=10)
    scores.legend(loc="upper center", ncol=3, fontsize=8)
    scores.grid(alpha=0.3, axis="y")

    tallies = [
        ("false merges", [gates[g].false_merges for g in names], "tab:red"),
        ("misses", [gates[g].misses for g in names], "tab:gray"),
        ("lost to the gate", [gates[g].lost for g in names], "tab:purple"),
        ("false merges the gate stopped", [gates[g].stopped for g in names], "tab:cyan"),
    ]
    width = 0.8 / len(tallies)
    for k, (label, tally, color) in enumerate(tallies):
        bars = counts.bar(x + (k - 1.5) * width, tally, width, label=label, color=color)
        counts.bar_label(bars, fontsize=7, padding=1)
    lost = [
        f"{t}\nrecall lost to the gate {_fmt_p(gates[g].recall_lost)}"
        for g, t in zip(names, ticks, strict=True)
    ]
    counts.set_xticks(x, lost, fontsize=8)
    counts.set_ylabel("pairs")
    counts.margins(y=0.12)
    counts.set_title(
        "what each gate costs (lost: restatements the contract accepts but the gate never fetches)",
        fontsize=10,
    )
    counts.legend(loc="upper right", fontsize=8)
    counts.grid(alpha=0.3, axis="y")


# ---------------------------------------------------------------------------------------------------
# The report behind `memdedup tune`
# ---------------------------------------------------------------------------------------------------
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
    ts = parse_thresholds(thresholds) if isinstance(thresholds, str) else np.asarray(thresholds, dtype=float)
    prepared = prepare(pairs)
    result = sweep(prepared, ts, min_chars=min_chars, prefix=prefix, guards=guards)
    detail = evaluate(prepared, threshold=threshold, min_chars=min_chars, prefix=prefix, guards=guards)
    tradeoff = guard_tradeoff(prepared, threshold=threshold, min_chars=min_chars, prefix=prefix)
    gates = gate_costs(prepared, threshold=threshold, min_chars=min_chars, guards=guards)
    gates_best = best_gate_costs(prepared, ts, min_chars=min_chars, guards=guards)
    source = "bundled restatement corpus" if path is None else os.fspath(path)
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
