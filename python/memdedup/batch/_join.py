"""The exact all-pairs join: every matching pair in a scope with no prefix gate, as label pairs or on
groups of identical labels (see :mod:`memdedup.batch`)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, overload

import numpy as np

from memdedup._backend import impl as _impl
from memdedup._rules import DEDUP_SIMILARITY_THRESHOLD, DEDUP_SUBSUME_MIN_CHARS, partition_ids
from memdedup._rules import comparable as _comparable
from memdedup.errors import InvalidInputError
from memdedup.guards import Guards, as_guards, guards_allow
from memdedup.missing import as_labels
from memdedup.progress import Progress

_NO_PROGRESS = Progress()


@dataclass(frozen=True)
class JoinGroups:
    """The join on groups of labels identical after normalisation (``join(..., expand=False)``): what
    the pairs are, in a size a whole corpus affords. All 841,708 shared PyPI labels join into 35.5
    million pairs, 27.1 million of them between identical labels; here each label costs one group id
    and each matching pair of distinct texts one group pair.

    ``group``: each label's group (int64), numbered in order of first occurrence; a group never spans
    two scopes, and empty or missing labels have one too (in no pair). ``pairs``: the matching ordered
    group pairs ``(g, h)`` (int64, shape ``(m, 2)``, sorted): every label pair ``(i, j)``, ``i < j``,
    with ``i`` in ``g`` (stored) and ``j`` in ``h``, matches, and at least one such pair exists;
    ``(g, g)`` when ``g`` has two or more labels and they match each other. difflib's ratio depends
    on which label is stored, so ``(g, h)`` and ``(h, g)`` are decided apart. (At a threshold <= 0
    every pair of non-empty labels matches: then the group pairs are every realised pair of groups.)
    """

    group: np.ndarray
    pairs: np.ndarray

    def expand(self) -> np.ndarray:
        """Every label pair the groups stand for: exactly what :func:`join` returns for the same
        labels (an ``(n_pairs, 2)`` int64 array sorted by ``(i, j)``)."""
        raw = _impl.expand_groups(_u32_bytes(self.group), _u32_bytes(self.pairs))
        return _u32_array(raw).reshape(-1, 2).astype(np.int64)


def _u32_bytes(values: np.ndarray) -> bytes:
    """An index array as the core reads it: native-endian u32s."""
    return np.ascontiguousarray(values, dtype=np.uint32).tobytes()


def _u32_array(raw: Any) -> np.ndarray:
    """The core's native-endian u32s (bytes) or the reference's list, as a uint32 array."""
    return np.frombuffer(raw, dtype=np.uint32) if isinstance(raw, bytes) else np.asarray(raw, np.uint32)


@overload
def join(
    labels: Sequence[Any],
    *,
    threshold: float = ...,
    min_chars: int = ...,
    scopes: Sequence[Hashable] | None = ...,
    guards: Guards | str | None = ...,
    progress: Progress | None = ...,
    expand: Literal[True] = ...,
) -> np.ndarray: ...
@overload
def join(
    labels: Sequence[Any],
    *,
    threshold: float = ...,
    min_chars: int = ...,
    scopes: Sequence[Hashable] | None = ...,
    guards: Guards | str | None = ...,
    progress: Progress | None = ...,
    expand: Literal[False],
) -> JoinGroups: ...
def join(
    labels: Sequence[Any],
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    scopes: Sequence[Hashable] | None = None,
    guards: Guards | str | None = None,
    progress: Progress | None = None,
    expand: bool = True,
) -> np.ndarray | JoinGroups:
    """Every pair ``(i, j)``, ``i < j``, in the same scope, with ``labels_match(labels[i], labels[j])``
    and no prefix gate: exactly what brute force returns, as an ``(n_pairs, 2)`` int64 array sorted by
    ``(i, j)``. Defaults: ``threshold=0.85``, ``min_chars=16``, one scope, no guards (``guards`` drops
    the pairs :func:`memdedup.guards.guards_allow` blocks). A missing label is empty: in no pair.
    ``progress`` (a :class:`memdedup.progress.Progress`) shows the phase.

    ``expand=False`` returns the same join on groups of identical labels (:class:`JoinGroups`; its
    ``expand()`` gives the pairs): a label repeated k times costs one group, not k (k - 1) / 2 pairs.
    Guards decide each pair of labels apart, so they take the expanded join only."""
    _comparable(threshold, min_chars)
    if not expand and guards is not None and as_guards(guards):
        raise InvalidInputError(
            "guards decide each pair of labels on its own: join(..., expand=False) takes no guards"
        )
    labels = as_labels(labels)
    parts = partition_ids(len(labels), scopes, None)
    groups: dict[int, list[int]] = {}
    for k, part in enumerate(parts):
        groups.setdefault(part, []).append(k)
    if not expand:
        return _join_groups(labels, list(groups.values()), threshold, min_chars, progress)
    found_arrays = []
    shown = progress if progress is not None else _NO_PROGRESS
    # One long core call per scope: a spinner for one scope, a bar over the labels for many.
    with (
        shown.spinner("join") if len(groups) <= 1 else shown.bar("join", len(labels), unit=" labels")
    ) as advance:
        for members in groups.values():
            sub = [labels[k] for k in members]
            # The core answers with native-endian u32 pairs as bytes (no object per pair); the reference
            # with a list of pairs.
            raw = _impl.join(sub, threshold=threshold, min_chars=min_chars)
            found = _u32_array(raw).reshape(-1, 2).astype(np.int64)
            found_arrays.append(np.asarray(members, dtype=np.int64)[found] if len(groups) > 1 else found)
            if advance is not None:
                advance(len(members))
    pairs = np.concatenate(found_arrays) if found_arrays else np.empty((0, 2), dtype=np.int64)
    if guards is not None and as_guards(guards) and len(pairs):
        allowed = [guards_allow(labels[i], labels[j], as_guards(guards)) for i, j in pairs.tolist()]
        pairs = pairs[np.asarray(allowed, dtype=bool)]
    if len(groups) > 1:
        pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
    return pairs.reshape(-1, 2)


def _join_groups(
    labels: list[Any],
    partitions: list[list[int]],
    threshold: float,
    min_chars: int,
    progress: Progress | None,
) -> JoinGroups:
    """:func:`join` on groups, one core call per partition; group ids offset per partition, then
    renumbered in order of first occurrence over all labels."""
    n = len(labels)
    group = np.zeros(n, dtype=np.int64)
    pair_arrays = []
    ngroups = 0
    shown = progress if progress is not None else _NO_PROGRESS
    with shown.spinner("join") if len(partitions) <= 1 else shown.bar("join", n, unit=" labels") as advance:
        for members in partitions:
            sub = labels if len(partitions) == 1 else [labels[k] for k in members]
            of, found = _impl.join_groups(sub, threshold=threshold, min_chars=min_chars)
            local = _u32_array(of).astype(np.int64)
            group[members] = local + ngroups
            pair_arrays.append(_u32_array(found).reshape(-1, 2).astype(np.int64) + ngroups)
            ngroups += int(local.max()) + 1 if len(local) else 0
            if advance is not None:
                advance(len(members))
    pairs = np.concatenate(pair_arrays) if pair_arrays else np.empty((0, 2), dtype=np.int64)
    if len(partitions) > 1:
        _, firsts = np.unique(group, return_index=True)
        rank = np.empty(ngroups, dtype=np.int64)
        rank[np.argsort(firsts, kind="stable")] = np.arange(ngroups)
        group = rank[group]
        pairs = rank[pairs]
        pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
    return JoinGroups(group, pairs.reshape(-1, 2))
