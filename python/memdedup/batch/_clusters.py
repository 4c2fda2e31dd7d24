"""Clusters from the matching pairs: canonical (each label joins the earliest canonical it matches) or
single-linkage components, each collapse with the pair, reason and exact ratio that justify it (see
:mod:`memdedup.batch`)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memdedup._backend import impl as _impl
from memdedup._rules import DEDUP_SIMILARITY_THRESHOLD, DEDUP_SUBSUME_MIN_CHARS
from memdedup._rules import comparable as _comparable
from memdedup.batch._join import JoinGroups, _u32_bytes, join
from memdedup.errors import InvalidInputError
from memdedup.guards import Guards, as_guards
from memdedup.missing import as_labels
from memdedup.progress import Progress

_NO_PROGRESS = Progress()


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
    pairs: np.ndarray | Sequence[tuple[int, int]] | JoinGroups | None = None,
    *,
    mode: str = "canonical",
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    scopes: Sequence[Hashable] | None = None,
    guards: Guards | str | None = None,
    progress: Progress | None = None,
) -> ClusterResult:
    """Clusters from the matching pairs (computed by :func:`join` when not given).

    Without ``pairs`` (and without guards, which decide label pairs) the clusters come from the join on
    groups of identical labels (``join(..., expand=False)``): duplicates settle by their group and no
    label pair is made, with the same answer (rust/cluster.rs proves the canonical mode's rule on
    groups). Its memory grows with the labels and the pairs of distinct labels, not with the pairs of
    duplicates, and its time is the join's (docs/perf.md has the figures on the whole corpus). ``pairs``
    may be that join already made (a :class:`JoinGroups` of these labels, e.g. from
    :func:`memdedup.dask.split_join`): the clusters come from it the same way.

    ``mode="canonical"`` (the default): in order, each label joins the earliest earlier canonical it
    matches, else becomes one; every member matches its canonical directly (no chains).
    ``mode="components"``: single linkage, canonical = the smallest index. Warning: single linkage
    chains, so A ~ B and B ~ C put A and C together even when A and C do not match at all; a long chain
    can merge unrelated facts. Prefer ``canonical`` unless you want that.

    Every collapsed label has the pair that put it in its cluster (``via``: the label it matched,
    earlier when there is one, else later) with that pair's reason and exact ratio; a canonical has
    reason ``"new"`` (``"empty"`` for a blank or missing label, which matches nothing), no ``via`` and
    a NaN score. Defaults: ``threshold=0.85``, ``min_chars=16``.
    """
    if mode not in ("canonical", "components"):
        raise InvalidInputError(f"mode must be 'canonical' or 'components', not {mode!r}")
    _comparable(threshold, min_chars)
    labels = as_labels(labels)
    shown = progress if progress is not None else _NO_PROGRESS
    group: np.ndarray | None = None
    if isinstance(pairs, JoinGroups):
        if len(pairs.group) != len(labels):
            raise InvalidInputError(f"the join has {len(pairs.group)} labels but there are {len(labels)}")
        group, group_pairs = pairs.group, pairs.pairs
    elif pairs is None and not (guards is not None and as_guards(guards)):
        # From the join on groups: duplicates settle by their group, and no label pair is made.
        joined = join(
            labels,
            threshold=threshold,
            min_chars=min_chars,
            scopes=scopes,
            progress=progress,
            expand=False,
        )
        group, group_pairs = joined.group, joined.pairs
    elif pairs is None:
        pairs = join(
            labels, threshold=threshold, min_chars=min_chars, scopes=scopes, guards=guards, progress=progress
        )
    with shown.spinner("cluster"):
        if group is not None:
            canonical, via = _impl.group_clusters(_u32_bytes(group), _u32_bytes(group_pairs), mode=mode)
            via = list(via)
        else:
            pair_array = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
            pair_list = [(int(i), int(j)) for i, j in pair_array.tolist()]
            canonical, via = _impl.clusters(len(labels), pair_list, mode=mode)
            via = list(via)
            # A member linked into its component only through later labels has no earlier partner: its
            # link is the smallest label it matched at all.
            unlinked = [j for j, c in enumerate(canonical) if c != j and via[j] is None]
            if unlinked:
                for j, partner in _smallest_partners(pair_array, unlinked).items():
                    via[j] = partner
        reason, score = _reasons(labels, via, group, threshold, min_chars)
    return ClusterResult(np.asarray(canonical, dtype=np.int64), via, reason, score)


def _reasons(
    labels: list[Any], via: list[int | None], group: np.ndarray | None, threshold: Any, min_chars: Any
) -> tuple[list[str], np.ndarray]:
    """Each label's reason and score: of the pair ``(via, label)`` (the earlier one stored) when it
    collapsed, else ``"new"`` (``"empty"`` for a blank or missing label, which matches nothing) and NaN.

    With ``group`` (labels identical after normalisation share one), each pair of groups is decided
    once: the decision depends on the two normalised texts alone."""
    reason = ["empty" if not _text_of(label).strip() else "new" for label in labels]
    score = np.full(len(labels), np.nan)
    collapsed = np.asarray([j for j, v in enumerate(via) if v is not None], dtype=np.int64)
    if not len(collapsed):
        return reason, score
    partners = np.asarray([via[j] for j in collapsed.tolist()], dtype=np.int64)
    stored, incoming = np.minimum(partners, collapsed), np.maximum(partners, collapsed)
    if group is None:
        picked, back = np.arange(len(collapsed)), np.arange(len(collapsed))
        sub, at_stored, at_incoming = labels, stored, incoming
    else:
        keys = group[stored].astype(np.uint64) * np.uint64(len(labels)) + group[incoming].astype(np.uint64)
        _, picked, back = np.unique(keys, return_index=True, return_inverse=True)
        needed = np.unique(np.concatenate([stored[picked], incoming[picked]]))
        sub = [labels[k] for k in needed.tolist()]
        at_stored = np.searchsorted(needed, stored)
        at_incoming = np.searchsorted(needed, incoming)
    ordered = list(zip(at_stored[picked].tolist(), at_incoming[picked].tolist(), strict=True))
    reasons, scores = _impl.pair_reasons(sub, ordered, threshold=threshold, min_chars=min_chars)
    decided = np.asarray(scores, dtype=np.float64)[back]
    for j, k, s in zip(collapsed.tolist(), back.tolist(), decided.tolist(), strict=True):
        reason[j] = reasons[k] or "unmatched"
        score[j] = s
    return reason, score


def _text_of(label: Any) -> str:
    """A label as the core reads it (``str(label or "")``) for the empty check."""
    return label if type(label) is str else str(label or "")


def _smallest_partners(pairs: np.ndarray, nodes: list[int]) -> dict[int, int]:
    """For each of ``nodes``, the smallest label it forms a pair with."""
    ends = np.concatenate([pairs[:, 0], pairs[:, 1]])
    partners = np.concatenate([pairs[:, 1], pairs[:, 0]])
    keep = np.isin(ends, np.asarray(nodes, dtype=np.int64))
    ends, partners = ends[keep], partners[keep]
    order = np.lexsort((partners, ends))
    ends, partners = ends[order], partners[order]
    first = np.ones(len(ends), dtype=bool)
    first[1:] = ends[1:] != ends[:-1]
    return dict(zip(ends[first].tolist(), partners[first].tolist(), strict=True))
