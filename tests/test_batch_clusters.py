"""Clusters straight from the join on groups of identical labels (issue 28): ``batch.clusters`` without
the label pairs, and ``batch.join(..., expand=False)``. Every answer equals the pairs' path and brute
force: duplicates, containment chains, both modes, scopes, and a slice of the real corpus."""

from __future__ import annotations

import gzip
import itertools
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memdedup import _backend, _reference, batch
from memdedup.errors import InvalidInputError
from profiles import sampled
from strategies import duplicate_heavy_labels, n_examples, seed_labels_match, seed_match_reason

MODES = ("canonical", "components")
CORPUS = Path(os.environ.get("MEMDEDUP_CORPUS", "/work/shared/data/pypi-summaries.txt.gz"))


def brute_force_clusters(
    labels: list[Any], mode: str, threshold: float, min_chars: int, scopes: list[int] | None = None
) -> tuple[list[int], list[int | None], list[str], list[float]]:
    """The oracle: every pair by the stdlib contract, ``_reference.clusters`` on them, the smallest
    partner for a member linked only through later labels, and each collapse's decision."""
    n = len(labels)
    part = scopes or [0] * n
    pairs = [
        (i, j)
        for i in range(n)
        for j in range(i + 1, n)
        if part[i] == part[j]
        and seed_labels_match(labels[i], labels[j], threshold=threshold, min_chars=min_chars)
    ]
    canonical, via = _reference.clusters(n, pairs, mode=mode)
    for j in range(n):
        if canonical[j] != j and via[j] is None:
            via[j] = min(b if a == j else a for a, b in pairs if j in (a, b))
    reason = ["new" if str(label or "").strip() else "empty" for label in labels]
    score = [math.nan] * n
    for j, v in enumerate(via):
        if v is not None:
            decided = seed_match_reason(
                labels[min(v, j)], labels[max(v, j)], threshold=threshold, min_chars=min_chars
            )
            assert decided is not None
            reason[j], score[j] = decided
    return canonical, via, reason, score


def as_lists(c: batch.ClusterResult) -> tuple[list[int], list[int | None], list[str], list[float]]:
    return c.canonical.tolist(), list(c.via), list(c.reason), c.score.tolist()


def same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Equal results, NaN scores equal to NaN."""
    (ca, va, ra, sa), (cb, vb, rb, sb) = a, b
    scores = all((math.isnan(x) and math.isnan(y)) or x == y for x, y in zip(sa, sb, strict=True))
    return ca == cb and va == vb and ra == rb and scores


@settings(max_examples=n_examples(80), deadline=None)
@given(
    labels=duplicate_heavy_labels(),
    threshold=st.sampled_from([0.0, 0.6, 0.85, 1.0, 1.5]),
    min_chars=st.sampled_from([0, 5, 16]),
    scoped=st.booleans(),
)
def test_clusters_from_groups_equal_the_pairs_and_brute_force(
    labels: list[Any], threshold: float, min_chars: int, scoped: bool
) -> None:
    # 1.5: identical labels match only by containment, so short duplicates stay apart.
    scopes = [k % 2 for k in range(len(labels))] if scoped else None
    for mode in MODES:
        groups = as_lists(
            batch.clusters(labels, mode=mode, threshold=threshold, min_chars=min_chars, scopes=scopes)
        )
        pairs = batch.join(labels, threshold=threshold, min_chars=min_chars, scopes=scopes)
        from_pairs = as_lists(
            batch.clusters(labels, pairs, mode=mode, threshold=threshold, min_chars=min_chars)
        )
        # A join on groups already made (memdedup.dask.split_join's) clusters the same way.
        joined = batch.join(labels, threshold=threshold, min_chars=min_chars, scopes=scopes, expand=False)
        from_joined = as_lists(
            batch.clusters(labels, joined, mode=mode, threshold=threshold, min_chars=min_chars)
        )
        want = brute_force_clusters(labels, mode, threshold, min_chars, scopes)
        assert same(groups, want), (mode, groups, want)
        assert same(from_pairs, want), (mode, from_pairs, want)
        assert same(from_joined, want), (mode, from_joined, want)


@settings(max_examples=n_examples(60), deadline=None)
@given(
    labels=duplicate_heavy_labels(),
    threshold=st.sampled_from([0.0, 0.6, 0.85, 1.5]),
    scoped=st.booleans(),
)
def test_join_on_groups_expands_to_the_join(labels: list[Any], threshold: float, scoped: bool) -> None:
    scopes = [len(str(label)) % 3 for label in labels] if scoped else None
    joined = batch.join(labels, threshold=threshold, scopes=scopes, expand=False)
    assert joined.expand().tolist() == batch.join(labels, threshold=threshold, scopes=scopes).tolist()
    # Groups numbered in order of first occurrence, one per text and scope; pairs sorted, within a scope.
    firsts = [joined.group.tolist().index(g) for g in range(int(joined.group.max(initial=-1)) + 1)]
    assert firsts == sorted(firsts)
    assert joined.pairs.tolist() == sorted(joined.pairs.tolist())
    if not scoped:
        group, pairs = _reference.join_groups(labels, threshold=threshold)
        assert joined.group.tolist() == group
        assert [tuple(p) for p in joined.pairs.tolist()] == pairs


@settings(max_examples=n_examples(150), deadline=None)
@given(
    group=st.lists(st.integers(0, 5), max_size=14),
    pairs=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), max_size=12),
    mode=st.sampled_from(MODES),
)
def test_group_clusters_on_any_groups_equal_the_reference(
    group: list[int], pairs: list[tuple[int, int]], mode: str
) -> None:
    # Any group pairs, not only a join's: groups whose labels do not match each other but match
    # others too (never in a join), which the core expands.
    ngroups = max(group, default=-1) + 1
    pairs = [(g, h) for g, h in pairs if g < ngroups and h < ngroups]
    got = _backend.impl.group_clusters(group, pairs, mode=mode)
    assert (list(got[0]), list(got[1])) == _reference.group_clusters(group, pairs, mode=mode)
    raw = (np.asarray(group, np.uint32).tobytes(), np.asarray(pairs, np.uint32).reshape(-1, 2).tobytes())
    assert _backend.impl.group_clusters(*raw, mode=mode) == got


def test_malformed_groups_and_guards_are_refused() -> None:
    with pytest.raises((InvalidInputError, ValueError), match="out of range"):
        _backend.impl.group_clusters([0, 1], [(0, 2)])
    with pytest.raises((InvalidInputError, ValueError), match="out of range"):
        _backend.impl.expand_groups([0], [(1, 0)])
    with pytest.raises(InvalidInputError, match="guards"):
        batch.join(["a", "a"], guards="negation", expand=False)
    # Guards decide label pairs: clusters with guards take the pairs' path, and still cluster.
    labels = ["User likes cats", "User does not like cats", "User likes cats"]
    guarded = batch.clusters(labels, guards="negation", threshold=0.6)
    assert guarded.canonical.tolist() == [0, 1, 0]


def real_labels(limit: int) -> list[str]:
    if _backend.IMPLEMENTATION != "rust":
        pytest.skip("the pure-Python reference joins by brute force: 20,000 labels are out of its reach")
    if not CORPUS.exists():
        pytest.skip(f"no shared corpus at {CORPUS}")
    with gzip.open(CORPUS, "rt", encoding="utf-8", errors="surrogateescape") as fh:
        return [line.rstrip("\n") for line in itertools.islice(fh, limit)]


@pytest.mark.parametrize("mode", sampled(MODES, ["canonical"]))
def test_real_corpus_slice_clusters_equal_the_pairs_path(mode: str) -> None:
    labels = real_labels(20_000)
    pairs = batch.join(labels)
    groups = batch.clusters(labels, mode=mode)
    from_pairs = batch.clusters(labels, pairs, mode=mode)
    assert same(as_lists(groups), as_lists(from_pairs))
    # And the clustering itself against the oracle's, on the same pairs.
    canonical, via = _reference.clusters(len(labels), [tuple(p) for p in pairs.tolist()], mode=mode)
    assert groups.canonical.tolist() == canonical
    assert all(v == w for v, w in zip(groups.via, via, strict=True) if w is not None)
    collapsed = int((groups.canonical != np.arange(len(labels))).sum())
    assert collapsed > 1000  # the slice has duplicates and restatements to collapse
    assert batch.join(labels, expand=False).expand().tolist() == pairs.tolist()


def test_clusters_refuse_a_join_of_other_labels() -> None:
    joined = batch.join(["a", "b", "c"], expand=False)
    with pytest.raises(InvalidInputError, match="the join has 3 labels but there are 2"):
        batch.clusters(["a", "b"], joined)
