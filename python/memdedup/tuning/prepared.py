"""Per pair, once: the gates, containment, the exact ratio and the guards' verdicts as arrays, so a
setting is decided with numpy and a threshold sweep costs about one pass."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memdedup._backend import impl as _impl
from memdedup._rules import DEDUP_PREFIX_LEN
from memdedup.errors import InvalidInputError
from memdedup.guards import Guards, negation_blocks, value_blocks
from memdedup.tuning.decision import Setting, _check_prefix
from memdedup.tuning.pairs import LabelledPair


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
