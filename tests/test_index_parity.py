"""Every batch and index entry point against ``memdedup._reference`` on labels where a run of NUL or
low control characters stands inside text holding code points above U+00FF (issue 37: the code-point
containment search, done as a byte search, missed ``"\\x00"`` in ``"ж\\x00ж"``)."""

from __future__ import annotations

import itertools
from typing import Any

import memdedup
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memdedup import _core, _reference, batch
from memdedup.index import IndexMatch, LabelIndex
from strategies import control_min_chars, controls_in_wide_labels, n_examples

pytestmark = pytest.mark.skipif(memdedup.IMPLEMENTATION != "rust", reason="the core's entry points")

thresholds = st.sampled_from([0.85, 0.85, 0.5, 1.0, 0.0])


def test_the_issue_s_pair() -> None:
    """The reproducer of the issue, at every entry point."""
    labels = ["\x00", "ж\x00ж"]
    assert memdedup.match_reason("\x00", "ж\x00ж", min_chars=1) == ("containment", 0.5)
    assert memdedup.labels_match("\x00", "ж\x00ж", min_chars=1)
    index = LabelIndex.build(labels, min_chars=1)
    assert index.query("ж\x00ж", min_chars=1) == [
        IndexMatch(0, "containment", 0.5),
        IndexMatch(1, "ratio", 1.0),
    ]
    assert [m.id for m in index.query("\x00", min_chars=1)] == [0, 1]
    replayed = batch.replay(labels, min_chars=1, prefix="none")
    assert replayed.canonical.tolist() == [0, 0] and replayed.reason == ["new", "containment"]
    assert batch.join(labels, min_chars=1).tolist() == [[0, 1]]
    assert batch.clusters(labels, min_chars=1).canonical.tolist() == [0, 0]


@settings(max_examples=n_examples(120), deadline=None)
@given(labels=controls_in_wide_labels(), threshold=thresholds, min_chars=control_min_chars)
def test_pairs_agree_with_the_reference(labels: list[str], threshold: float, min_chars: int) -> None:
    for a, b in itertools.permutations(labels, 2):
        want = _reference.match_reason(a, b, threshold=threshold, min_chars=min_chars)
        assert memdedup.match_reason(a, b, threshold=threshold, min_chars=min_chars) == want, (a, b)
        assert memdedup.labels_match(a, b, threshold=threshold, min_chars=min_chars) == (want is not None)


@settings(max_examples=n_examples(120), deadline=None)
@given(
    labels=controls_in_wide_labels(),
    threshold=thresholds,
    min_chars=control_min_chars,
    serves=st.sampled_from([1, 2, 4, 16]),
)
def test_index_queries_agree_with_the_reference(
    labels: list[str], threshold: float, min_chars: int, serves: int
) -> None:
    core, ref = _core.LabelIndex(serves), _reference.LabelIndex(serves)
    for label in labels:
        assert core.insert(label, 0) == ref.insert(label, 0)
    wrapper = LabelIndex.build(labels, min_chars=serves, threshold=threshold)
    for label in labels:
        want = ref.query(label, 0, threshold=threshold, min_chars=min_chars)
        assert core.query(label, 0, threshold=threshold, min_chars=min_chars) == want, label
        got = wrapper.query(label, min_chars=min_chars)
        assert [tuple(m) for m in got] == [tuple(w) for w in want], label


@settings(max_examples=n_examples(120), deadline=None)
@given(labels=controls_in_wide_labels(), threshold=thresholds, min_chars=control_min_chars)
def test_batch_entry_points_agree_with_the_reference(
    labels: list[str], threshold: float, min_chars: int
) -> None:
    n = len(labels)
    replayed = batch.replay(labels, threshold=threshold, min_chars=min_chars, prefix="none")
    canonical, reason, score = _reference.replay(
        labels, [0] * n, threshold=threshold, min_chars=min_chars, prefix="none"
    )
    assert replayed.canonical.tolist() == canonical
    assert replayed.reason == reason
    np.testing.assert_array_equal(replayed.score, np.asarray(score))
    pairs = _reference.join(labels, threshold=threshold, min_chars=min_chars)
    assert [tuple(p) for p in batch.join(labels, threshold=threshold, min_chars=min_chars).tolist()] == pairs
    for mode in ("canonical", "components"):
        got = batch.clusters(labels, threshold=threshold, min_chars=min_chars, mode=mode)
        want_canonical, _ = _reference.clusters(n, pairs, mode=mode)
        assert got.canonical.tolist() == want_canonical
        for j, via in enumerate(got.via):
            if via is not None:
                decided: Any = _reference.match_reason(
                    labels[min(via, j)], labels[max(via, j)], threshold=threshold, min_chars=min_chars
                )
                assert decided is not None and (got.reason[j], got.score[j]) == decided
