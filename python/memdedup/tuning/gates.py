"""What each prefix gate costs against no gate: the restatements it never fetches and the false merges
it happens to stop, at one threshold and at each gate's best."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memdedup._rules import DEDUP_PREFIX_LEN, DEDUP_SIMILARITY_THRESHOLD, DEDUP_SUBSUME_MIN_CHARS
from memdedup.guards import Guards, as_guards
from memdedup.tuning.decision import PREFIX_MODES, Setting, _check_prefix
from memdedup.tuning.evaluation import _num, _Rates, _ratio
from memdedup.tuning.pairs import LabelledPair
from memdedup.tuning.prepared import Prepared, prepare
from memdedup.tuning.sweeps import sweep


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
