"""Large-batch dedup: one-vs-many, pair decisions, replay of a store's writes, all-pairs join, clusters.

Every function gives, for every pair it decides, the answer :func:`memdedup.labels_match` gives (the
earlier label is the stored one). The work runs in the Rust core without the GIL, in parallel across
cores (rayon; ``RAYON_NUM_THREADS`` sizes the pool); thread counts never change a result. Under
``MEMDEDUP_IMPLEMENTATION=python`` the same functions run on the pure-Python reference.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memdedup import _reference
from memdedup._backend import IMPLEMENTATION
from memdedup._backend import impl as _impl
from memdedup._reference import (
    DEDUP_PREFIX_LEN,
    DEDUP_QUERY_LIMIT,
    DEDUP_SIMILARITY_THRESHOLD,
    DEDUP_SUBSUME_MIN_CHARS,
)
from memdedup.errors import InputTypeError, InvalidInputError

__all__ = [
    "ClusterResult",
    "ReplayResult",
    "cdist",
    "clusters",
    "extract",
    "join",
    "match_first",
    "match_pairs",
    "replay",
]

_RUST = IMPLEMENTATION == "rust"


def _check_threshold(threshold: float) -> float:
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        raise InputTypeError(f"threshold must be a number, not {type(threshold).__name__}")
    if math.isnan(threshold):
        raise InvalidInputError("threshold must not be NaN")
    return float(threshold)


def match_first(
    incoming: Any,
    candidates: Iterable[Any],
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
) -> int | None:
    """Index of the first candidate that ``labels_match(candidate, incoming)`` accepts (the write-time
    path: the incoming label is prepared once and the candidates decided in one call)."""
    return _impl.match_first(incoming, list(candidates), threshold=threshold, min_chars=min_chars)


def match_pairs(
    stored: Sequence[Any],
    incoming: Sequence[Any],
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
) -> np.ndarray:
    """``labels_match(stored[k], incoming[k])`` for every k, as a numpy bool array."""
    threshold = _check_threshold(threshold)
    if len(stored) != len(incoming):
        raise InvalidInputError(f"stored has {len(stored)} labels but incoming has {len(incoming)}")
    return np.asarray(
        _impl.match_pairs(list(stored), list(incoming), threshold=threshold, min_chars=min_chars), dtype=bool
    )


def _choices(choices: Sequence[str] | Mapping[Hashable, str]) -> tuple[list[Hashable], list[str]]:
    if isinstance(choices, Mapping):
        return list(choices.keys()), list(choices.values())
    values = list(choices)
    return list(range(len(values))), values


def cdist(
    queries: Sequence[str],
    choices: Sequence[str],
    *,
    score_cutoff: float | None = None,
    normalise: bool = False,
    autojunk: bool = True,
    workers: int = -1,
) -> np.ndarray:
    """The matrix of exact difflib ratios ``ratio(queries[i], choices[j])`` (float64, shape
    ``(len(queries), len(choices))``), as rapidfuzz's ``process.cdist`` lays it out. Scores below
    ``score_cutoff`` are 0.0 (and cost only a length bound). ``normalise=True`` compares normalised labels.

    ``workers`` is accepted for rapidfuzz compatibility; the pool is rayon's (``RAYON_NUM_THREADS``).
    """
    del workers
    cutoff = 0.0 if score_cutoff is None else _check_threshold(score_cutoff)
    queries, choices = list(queries), list(choices)
    if _RUST:
        raw = _impl.cdist(queries, choices, autojunk=autojunk, cutoff=cutoff, normalise=normalise)
        return np.frombuffer(raw, dtype=np.float64).reshape(len(queries), len(choices)).copy()
    prep = _reference.normalise_label if normalise else (lambda s: s)
    out = np.zeros((len(queries), len(choices)))
    for i, q in enumerate(queries):
        for j, c in enumerate(choices):
            r = _reference.ratio(prep(q), prep(c), autojunk=autojunk)
            out[i, j] = r if r >= cutoff else 0.0
    return out


def extract(
    query: str,
    choices: Sequence[str] | Mapping[Hashable, str],
    *,
    score_cutoff: float | None = None,
    limit: int | None = 5,
    normalise: bool = False,
) -> list[tuple[str, float, Hashable]]:
    """The best ``limit`` choices by exact ratio ``ratio(query, choice)``, as ``(choice, score, key)``
    (key: the index, or the mapping's key, e.g. a memory id), best first, ties in input order."""
    keys, values = _choices(choices)
    scores = cdist([query], values, score_cutoff=score_cutoff, normalise=normalise)[0]
    cutoff = 0.0 if score_cutoff is None else float(score_cutoff)
    order = sorted(
        (k for k in range(len(values)) if scores[k] >= cutoff and (score_cutoff is None or scores[k] > 0)),
        key=lambda k: -scores[k],
    )
    if limit is not None:
        order = order[:limit]
    return [(values[k], float(scores[k]), keys[k]) for k in order]


@dataclass(frozen=True)
class ReplayResult:
    """Per label, in input order: the index it collapses into (itself when it is a new canonical or
    empty), why (``"new"``, ``"ratio"``, ``"containment"``, ``"empty"``), and the exact ratio of the
    collapse (NaN where nothing collapsed)."""

    canonical: np.ndarray
    reason: list[str]
    score: np.ndarray

    @property
    def collapsed(self) -> np.ndarray:
        return self.canonical != np.arange(len(self.canonical))


def _partitions(n: int, scopes: Sequence[Hashable] | None, layers: Sequence[Hashable] | None) -> list[int]:
    for name, column in (("scopes", scopes), ("layers", layers)):
        if column is not None and len(column) != n:
            raise InvalidInputError(f"{name} has {len(column)} entries but there are {n} labels")
    ids: dict[tuple[Hashable, Hashable], int] = {}
    out = []
    for k in range(n):
        key = (scopes[k] if scopes is not None else None, layers[k] if layers is not None else None)
        out.append(ids.setdefault(key, len(ids)))
    return out


def replay(
    labels: Sequence[Any],
    *,
    scopes: Sequence[Hashable] | None = None,
    layers: Sequence[Hashable] | None = None,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    prefix: str = "raw",
    prefix_len: int = DEDUP_PREFIX_LEN,
    query_limit: int = DEDUP_QUERY_LIMIT,
) -> ReplayResult:
    """Replay writes in order, deciding each label as ``find_canonical_node`` would against a store
    that appends every new canonical (its stripped label), oldest first.

    Scope (and layer, when given) is a hard partition: nothing collapses across it. A label is
    looked up among the first ``query_limit`` canonicals of its partition whose key starts with its
    own key's first ``prefix_len`` characters, and joins the first that matches.

    ``prefix="raw"`` keys by the stripped raw label, case-sensitively: the seed's gate, so results
    equal the sequential lookups exactly. ``prefix="normalised"`` keys by the normalised label, so a
    restatement that differs only in case, spacing or trailing punctuation at its start is fetched
    too (it collapses more; it is not the seed's behaviour).

    An empty label (``""``, ``None``, whitespace only) is never looked up and never a candidate: the
    seed returns before querying. It stays its own canonical with reason ``"empty"``.
    """
    threshold = _check_threshold(threshold)
    if prefix_len < 0 or query_limit < 0:
        raise InvalidInputError("prefix_len and query_limit must not be negative")
    labels = list(labels)
    parts = _partitions(len(labels), scopes, layers)
    canonical, reason, score = _impl.replay(
        labels,
        parts,
        threshold=threshold,
        min_chars=min_chars,
        prefix=prefix,
        prefix_len=prefix_len,
        query_limit=query_limit,
    )
    return ReplayResult(
        canonical=np.asarray(canonical, dtype=np.int64),
        reason=list(reason),
        score=np.asarray(score, dtype=np.float64),
    )


def join(
    labels: Sequence[Any],
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    scopes: Sequence[Hashable] | None = None,
) -> np.ndarray:
    """Every pair ``(i, j)``, ``i < j``, in the same scope, with ``labels_match(labels[i], labels[j])``
    and no prefix gate: exactly what brute force returns, as an ``(n_pairs, 2)`` int64 array sorted by
    ``(i, j)``."""
    threshold = _check_threshold(threshold)
    labels = list(labels)
    parts = _partitions(len(labels), scopes, None)
    pairs: list[tuple[int, int]] = []
    groups: dict[int, list[int]] = {}
    for k, part in enumerate(parts):
        groups.setdefault(part, []).append(k)
    for members in groups.values():
        sub = [labels[k] for k in members]
        if _RUST and hasattr(_impl, "join"):
            found = _impl.join(sub, threshold=threshold, min_chars=min_chars)
        else:
            found = _reference.join(sub, threshold=threshold, min_chars=min_chars)
        pairs.extend((members[i], members[j]) for i, j in found)
    pairs.sort()
    return np.asarray(pairs, dtype=np.int64).reshape(-1, 2)


@dataclass(frozen=True)
class ClusterResult:
    """Per label: its canonical index, and for each collapse the reason (``"ratio"``/``"containment"``,
    ``"new"`` for canonicals) and exact ratio against the label that justified it (``via``)."""

    canonical: np.ndarray
    via: list[int | None]
    reason: list[str]
    score: np.ndarray


def clusters(
    labels: Sequence[Any],
    pairs: np.ndarray | Sequence[tuple[int, int]] | None = None,
    *,
    mode: str = "canonical",
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    scopes: Sequence[Hashable] | None = None,
) -> ClusterResult:
    """Clusters from the matching pairs (computed by :func:`join` when not given).

    ``mode="canonical"``: in order, each label joins the earliest earlier canonical it matches, else
    becomes one; every member matches its canonical directly (no chains). ``mode="components"``:
    single linkage, canonical = the smallest index. Warning: single linkage chains, so A ~ B and
    B ~ C put A and C together even when A and C do not match at all; a long chain can merge
    unrelated facts. Prefer ``canonical`` unless you want that.
    """
    labels = list(labels)
    if pairs is None:
        pairs = join(labels, threshold=threshold, min_chars=min_chars, scopes=scopes)
    pair_list = [(int(i), int(j)) for i, j in np.asarray(pairs, dtype=np.int64).reshape(-1, 2)]
    canonical, via = _impl.clusters(len(labels), pair_list, mode=mode)
    collapsed = [(v, j) for j, v in enumerate(via) if v is not None]
    reason = ["new"] * len(labels)
    score = np.full(len(labels), np.nan)
    if collapsed:
        if _RUST:
            reasons, scores = _impl.pair_reasons(labels, collapsed, threshold=threshold, min_chars=min_chars)
        else:
            decided = [
                _reference.match_reason(labels[i], labels[j], threshold=threshold, min_chars=min_chars)
                for i, j in collapsed
            ]
            reasons = [d[0] if d else None for d in decided]
            scores = [d[1] if d else float("nan") for d in decided]
        for (_, j), r, s in zip(collapsed, reasons, scores, strict=True):
            reason[j] = r or "unmatched"
            score[j] = s
    return ClusterResult(np.asarray(canonical, dtype=np.int64), list(via), reason, score)
