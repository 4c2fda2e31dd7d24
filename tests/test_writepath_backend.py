"""The reference mirrors the core's functions that batch.py and dedup.py call, name for name and answer for
answer, so neither module branches on the backend; and scope rules have one owner."""

from __future__ import annotations

import inspect
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memdedup import _backend, _reference, batch, dedup, scope
from strategies import label_pairs, label_text, min_chars_values, n_examples, seed_match_reason, thresholds

CORE_FUNCTIONS_USED = (
    "normalise_label",
    "ratio",
    "labels_match",
    "match_reason",
    "match_first",
    "match_mask",
    "match_pairs",
    "pair_reasons",
    "cdist",
    "replay",
    "join",
    "clusters",
)


def test_the_reference_has_every_core_function_batch_and_dedup_call() -> None:
    for name in CORE_FUNCTIONS_USED:
        assert callable(getattr(_reference, name)), name
        if _backend.IMPLEMENTATION == "rust":
            assert callable(getattr(_backend.impl, name)), name


def test_batch_and_dedup_do_not_branch_on_the_backend() -> None:
    for module in (batch, dedup):
        code = [line.split("#")[0] for line in inspect.getsource(module).splitlines() if "``" not in line]
        assert not any("IMPLEMENTATION" in line or "_RUST" in line for line in code), module.__name__


def test_scope_rules_have_one_owner() -> None:
    for name in ("stored_scope_path", "legacy_scope_path", "SCOPE_PATH_KEY", "LEGACY_SCOPE_PREFIX"):
        assert not hasattr(_reference, name) or getattr(_reference, name) is getattr(scope, name), name
    assert dedup.stored_scope_path is scope.stored_scope_path


@settings(max_examples=n_examples(300))
@given(st.lists(label_text, min_size=1, max_size=6), thresholds, min_chars_values, st.data())
def test_pair_reasons_is_match_reason_with_the_exact_score(
    labels: list[str], threshold: float, min_chars: int, data: st.DataObject
) -> None:
    index = st.integers(0, len(labels) - 1)
    pairs = data.draw(st.lists(st.tuples(index, index), max_size=8))
    reasons, scores = _backend.impl.pair_reasons(labels, pairs, threshold=threshold, min_chars=min_chars)
    assert (reasons, scores) == _reference.pair_reasons(
        labels, pairs, threshold=threshold, min_chars=min_chars
    )
    for (i, j), reason, score in zip(pairs, reasons, scores, strict=True):
        expected = seed_match_reason(labels[i], labels[j], threshold=threshold, min_chars=min_chars)
        assert reason == (expected[0] if expected else None)
        if expected:
            assert score == expected[1]


@settings(max_examples=n_examples(200))
@given(label_pairs, st.booleans(), st.booleans(), st.sampled_from([0.0, 0.5, 0.85]))
def test_cdist_bytes_are_the_reference_s(
    pair: tuple[str, str], normalise: bool, autojunk: bool, cutoff: float
) -> None:
    queries, choices = [pair[0], pair[1]], [pair[1], pair[0], ""]
    got = _backend.impl.cdist(queries, choices, autojunk=autojunk, cutoff=cutoff, normalise=normalise)
    assert got == _reference.cdist(queries, choices, autojunk=autojunk, cutoff=cutoff, normalise=normalise)


def test_pair_reasons_refuses_a_pair_out_of_range() -> None:
    with pytest.raises(ValueError, match="out of range"):
        _backend.impl.pair_reasons(["a"], [(0, 1)])
    with pytest.raises(ValueError, match="out of range"):
        _reference.pair_reasons(["a"], [(0, 1)])


def test_clusters_scores_are_exact_on_either_backend() -> None:
    labels = ["Uses pytest and ruff", "uses pytest and ruff for python projects", "something else"]
    result = batch.clusters(labels, [(0, 1)])
    assert result.reason == ["new", "containment", "new"]
    assert result.score[1] == _reference.ratio(
        _reference.normalise_label(labels[0]), _reference.normalise_label(labels[1])
    )
    assert math.isnan(result.score[0])
