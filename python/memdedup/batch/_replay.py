"""Replaying a store's writes in order: each label decided as the write-time lookup decides it (see
:mod:`memdedup.batch`), in the Rust core, or in Python when guards veto candidates."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from memdedup._backend import impl as _impl
from memdedup._rules import (
    DEDUP_PREFIX_LEN,
    DEDUP_QUERY_LIMIT,
    DEDUP_SIMILARITY_THRESHOLD,
    DEDUP_SUBSUME_MIN_CHARS,
    partition_ids,
)
from memdedup._rules import comparable as _comparable
from memdedup.errors import InvalidInputError
from memdedup.guards import Guards, as_guards, guards_allow
from memdedup.index import LabelIndex
from memdedup.missing import as_labels


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
        """Per label, whether it collapsed into an earlier one."""
        return np.asarray(self.canonical != np.arange(len(self.canonical)), dtype=bool)


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
    guards: Guards | str | None = None,
) -> ReplayResult:
    """Replay writes in order, deciding each label as ``find_canonical_node`` would against a store
    that appends every new canonical (its stripped label), oldest first.

    Scope (and layer, when given) is a hard partition: nothing collapses across it. A label is
    looked up among the first ``query_limit`` canonicals of its partition whose key starts with its
    own key's first ``prefix_len`` characters, and joins the first that matches.

    ``prefix="raw"`` keys by the stripped raw label, case-sensitively: the seed's gate, so results
    equal the sequential lookups exactly. ``prefix="normalised"`` keys by the normalised label, so a
    restatement that differs only in case, spacing or trailing punctuation at its start is fetched
    too (it collapses more; it is not the seed's behaviour). ``prefix="none"`` has no gate: each label is
    looked up among every earlier canonical of its partition (an exact :class:`memdedup.index.LabelIndex`
    query), so it collapses into the oldest one it matches; ``prefix_len`` and ``query_limit`` do not apply.

    An empty label (``""``, whitespace only, or missing: ``None``, NaN, ``pd.NA``) is never looked up and
    never a candidate: the seed returns before querying. It stays its own canonical with reason
    ``"empty"``.

    Defaults: ``threshold=0.85``, ``min_chars=16``, ``prefix="raw"``, ``prefix_len=20``,
    ``query_limit=20`` (the seed's), no guards.

    ``guards`` (off by default): a candidate must also pass :func:`memdedup.guards.guards_allow`. A
    guarded replay runs in Python (:func:`replay_guarded`), several times slower.
    """
    _comparable(threshold, min_chars)
    if prefix not in ("raw", "normalised", "none"):
        raise InvalidInputError(f"prefix must be 'raw', 'normalised' or 'none', not {prefix!r}")
    if prefix_len < 0 or query_limit < 0:
        raise InvalidInputError("prefix_len and query_limit must not be negative")
    labels = as_labels(labels)
    parts = partition_ids(len(labels), scopes, layers)
    replay_impl = _impl.replay
    if guards is not None and as_guards(guards):
        replay_impl = partial(replay_guarded, guards=as_guards(guards))
    canonical, reason, score = replay_impl(
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


def replay_guarded(
    labels: list[Any],
    partitions: list[int],
    *,
    guards: Guards | str | None,
    threshold: float,
    min_chars: int,
    prefix: str = "raw",
    prefix_len: int = 20,
    query_limit: int = 20,
) -> tuple[list[int], list[str], list[float]]:
    """``batch.replay`` with guards, in Python: each label joins the first of its candidates (the first
    ``query_limit`` canonicals of its partition whose key starts with its key's first ``prefix_len``
    characters, oldest first) that matches the contract AND passes the guards.

    The same lookups as the Rust replay, indexed by prefix, but every pair is decided by a separate call
    and the guards tokenise in Python: expect it to be several times slower than the unguarded replay.
    With every guard off it returns exactly what the Rust replay returns.
    """
    if prefix not in {"raw", "normalised", "normalized", "none"}:
        raise InvalidInputError(f"prefix must be 'raw', 'normalised' or 'none', not {prefix!r}")
    if len(labels) != len(partitions):
        raise InvalidInputError(f"{len(labels)} labels but {len(partitions)} partition ids")
    g = as_guards(guards)
    texts = [str(label or "") for label in labels]
    if prefix == "none":
        return _replay_guarded_ungated(texts, partitions, g, threshold, min_chars)
    # One index per (partition, key length): key[:length] -> canonicals in store order. A query key of
    # length ell < prefix_len (a short label) must find every canonical whose key starts with it.
    index: dict[tuple[int, int], dict[str, list[int]]] = {}
    canonical: list[int] = []
    reason: list[str] = []
    score: list[float] = []
    nan = float("nan")
    for i, (text, part) in enumerate(zip(texts, partitions, strict=True)):
        if not text.strip():
            canonical.append(i)
            reason.append("empty")
            score.append(nan)
            continue
        key = text.strip() if prefix == "raw" else _impl.normalise_label(text)
        query = key[:prefix_len]
        candidates = index.get((part, len(query)), {}).get(query, [])[:query_limit]
        hit = None
        for j in candidates:
            if _impl.labels_match(texts[j], text, threshold=threshold, min_chars=min_chars) and (
                not g or guards_allow(texts[j], text, g)
            ):
                hit = j
                break
        if hit is None:
            for length in range(min(len(key), prefix_len) + 1):
                index.setdefault((part, length), {}).setdefault(key[:length], []).append(i)
            canonical.append(i)
            reason.append("new")
            score.append(nan)
        else:
            decided = _impl.match_reason(texts[hit], text, threshold=threshold, min_chars=min_chars)
            assert decided is not None
            canonical.append(hit)
            reason.append(decided[0])
            score.append(decided[1])
    return canonical, reason, score


def _replay_guarded_ungated(
    texts: list[str], partitions: list[int], g: Guards, threshold: float, min_chars: int
) -> tuple[list[int], list[str], list[float]]:
    """:func:`replay_guarded` with no gate: each label joins the oldest canonical of its partition that
    matches and passes the guards (an exact :class:`memdedup.index.LabelIndex` query)."""
    index = LabelIndex(threshold=threshold, min_chars=min_chars)
    canonical: list[int] = []
    reason: list[str] = []
    score: list[float] = []
    for i, (text, part) in enumerate(zip(texts, partitions, strict=True)):
        if not text.strip():
            canonical.append(i)
            reason.append("empty")
            score.append(float("nan"))
            continue
        found = index.first_match(text, scope=part, guards=g)
        if found is None:
            index.insert(text, i, scope=part)
            canonical.append(i)
            reason.append("new")
            score.append(float("nan"))
        else:
            canonical.append(int(found.id))  # type: ignore[call-overload]
            reason.append(found.reason)
            score.append(found.score)
    return canonical, reason, score
