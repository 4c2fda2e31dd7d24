"""One rule for ``threshold`` and ``min_chars`` at every entry point (issue 22, item 4).

The contract compares ``ratio >= threshold`` (a float against whatever was passed) and
``len(shorter) >= min_chars`` (an int against whatever was passed). So every value Python can compare
that way is accepted, and decides exactly as Python's ``>=`` decides: ``16.0``, ``15.5``, ``Fraction``,
``Decimal``, ``bool``, ints of any size, numpy scalars (which compare in their own precision), NaN
(never reached). A value Python cannot compare (a str, None) is an ``InputTypeError`` (a
``TypeError``); a comparison that raises (``Decimal("NaN")`` under the default context) raises the
same exception. memdedup checks both values when the call starts, where the reference fails only on
the first comparison it reaches: the pairs below reach both comparisons.
"""

from __future__ import annotations

import decimal
import itertools
import math
from collections.abc import Callable
from decimal import Decimal
from difflib import SequenceMatcher
from fractions import Fraction
from functools import partial
from typing import Any

import numpy as np
import pytest
from memdedup import _reference, batch
from memdedup._backend import impl
from memdedup.errors import InputTypeError, InvalidInputError
from strategies import seed_labels_match, seed_match_reason
from test_bindings_child import requires_rust

pytestmark = requires_rust

THRESHOLDS: list[Any] = [
    0.85, 0.5, 1, 0, True, False, 2, -1,
    Fraction(17, 20), Fraction(4, 5), Fraction(3, 8), Decimal("0.85"), Decimal("0.8"), Decimal("0.375"),
    10**400, -(10**400), np.float64(0.85), np.float32(0.85), np.float16(0.85), np.int64(1), np.int8(0),
    math.nan, math.inf, -math.inf, -0.0, 5e-324, Decimal("Infinity"), Decimal("-Infinity"),
    Decimal("NaN"), Decimal("sNaN"), "0.85", None, b"x", [0.5], 0.5j,
]  # fmt: skip

MIN_CHARS: list[Any] = [
    16, 17, 15, 0, -5, 16.0, 15.5, 16.5, 15.999999999999998, 16.000000000000004, Fraction(31, 2),
    Fraction(33, 2), Decimal("16"), Decimal("15.5"), Decimal("16.5"), True, False, 10**30, -(10**30),
    np.int64(16), np.float32(15.5), np.float64(16.5), math.inf, -math.inf, math.nan, Decimal("NaN"),
    "16", None, 16j,
]  # fmt: skip

# Pairs that reach both comparisons of the contract: the ratio is computed and, being below most
# thresholds, the containment rule is tried too.
EXACT_85 = ("abcdefghijklmnopqXXX", "abcdefghijklmnopqYYY")  # ratio 17/20 = 0.85 as a double
PAIRS = [
    EXACT_85,
    ("abcdefghijklmnop", "a long label that holds abcdefghijklmnop inside it somewhere"),  # 16 chars
    ("abcdefghijklmno", "a long label that holds abcdefghijklmno inside it somewhere"),  # 15 chars
    ("abcdefghijklmnopq", "a long label that holds abcdefghijklmnopq inside it somewhere"),  # 17
    ("uses pytest and ruff", "uses pytest and black"),
    ("hello world", "something else entirely"),
    ("abc", "xyz"),
]
LABELS = [label for pair in PAIRS for label in pair]


def ids(value: Any) -> str:
    return f"{type(value).__name__}({str(value)[:24]})"


def outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return ("ok", call())
    except Exception as exc:
        return ("raised", type(exc))


def comparison_error(value: Any, left: float | int) -> type[Exception] | None:
    """The exception ``bool(left >= value)`` raises, if any: how the contract rejects ``value``."""
    try:
        bool(left >= value)
    except Exception as exc:
        return type(exc)
    return None


class Check:
    """Runs each entry point against its reference for one ``threshold`` and ``min_chars``: the same
    answer, or, for a value the contract rejects, the exception its comparison raises (an
    ``InputTypeError`` for a ``TypeError``), whether or not the reference reached that comparison."""

    def __init__(self, threshold: Any, min_chars: Any) -> None:
        self.kw = {"threshold": threshold, "min_chars": min_chars}
        self.error = comparison_error(threshold, 0.5) or comparison_error(min_chars, 5)

    def __call__(self, ours: Callable[[], Any], theirs: Callable[[], Any]) -> None:
        got = outcome(ours)
        if self.error is not None:
            assert got[0] == "raised" and issubclass(got[1], self.error), (got, self.error)
            if issubclass(self.error, TypeError):
                assert issubclass(got[1], InputTypeError), got
            return
        assert got == outcome(theirs)


def pairwise(threshold: Any, min_chars: Any) -> None:
    check = Check(threshold, min_chars)
    kw = check.kw
    for a, b in [*PAIRS, *[(b, a) for a, b in PAIRS]]:
        check(partial(impl.labels_match, a, b, **kw), partial(seed_labels_match, a, b, **kw))
        check(partial(impl.match_reason, a, b, **kw), partial(seed_match_reason, a, b, **kw))
    for incoming in LABELS[:6]:
        mask = [seed_labels_match(c, incoming, **kw) for c in LABELS] if check.error is None else []
        check(partial(impl.match_mask, incoming, LABELS, **kw), lambda mask=mask: mask)
        first = next((k for k, hit in enumerate(mask) if hit), None)
        check(partial(impl.match_first, incoming, LABELS, **kw), lambda first=first: first)


def core_pairs(raw: bytes) -> list[list[int]]:
    return np.frombuffer(raw, dtype=np.uint32).reshape(-1, 2).tolist()


def batched(threshold: Any, min_chars: Any) -> None:
    check = Check(threshold, min_chars)
    kw = check.kw
    stored, incoming = [a for a, _ in PAIRS], [b for _, b in PAIRS]
    decided = lambda: [seed_labels_match(a, b, **kw) for a, b in zip(stored, incoming, strict=True)]  # noqa: E731
    check(lambda: batch.match_pairs(stored, incoming, **kw).tolist(), decided)
    check(lambda: list(impl.match_pairs(stored, incoming, **kw)), lambda: [int(x) for x in decided()])
    check(
        lambda: list(impl.match_pairs(stored * 1300, incoming * 1300, **kw)),  # past 8,192: while read
        lambda: [int(x) for x in decided()] * 1300,
    )
    joined = lambda: [list(p) for p in _reference.join(LABELS, **kw)]  # noqa: E731
    check(lambda: batch.join(LABELS, **kw).tolist(), joined)
    check(lambda: core_pairs(impl.join(LABELS, **kw)), joined)
    replayed = lambda: _reference.replay(LABELS, [0] * len(LABELS), **kw)[:2]  # noqa: E731
    check(lambda: impl.replay(LABELS, [0] * len(LABELS), **kw)[:2], replayed)
    check(lambda: (lambda r: (r.canonical.tolist(), r.reason))(batch.replay(LABELS, **kw)), replayed)
    pairs = list(itertools.combinations(range(len(LABELS)), 2))
    check(
        lambda: impl.pair_reasons(LABELS, pairs, **kw)[0],
        lambda: [
            (lambda r: r[0] if r else None)(seed_match_reason(LABELS[i], LABELS[j], **kw)) for i, j in pairs
        ],
    )
    check(lambda: batch.clusters(LABELS, **kw).reason, lambda: _clusters_reference(LABELS, **kw))


def _clusters_reference(labels: list[str], **kw: Any) -> list[str]:
    _, via = _reference.clusters(len(labels), _reference.join(labels, **kw))
    reason = ["new"] * len(labels)
    for j, v in enumerate(via):
        if v is not None:
            r = _reference.match_reason(labels[v], labels[j], **kw)
            reason[j] = r[0] if r else "unmatched"
    return reason


@pytest.mark.parametrize("threshold", THRESHOLDS, ids=ids)
def test_threshold_pairwise(threshold: Any) -> None:
    pairwise(threshold, 16)


@pytest.mark.parametrize("min_chars", MIN_CHARS, ids=ids)
def test_min_chars_pairwise(min_chars: Any) -> None:
    pairwise(0.85, min_chars)


@pytest.mark.parametrize("threshold", THRESHOLDS, ids=ids)
def test_threshold_batch(threshold: Any) -> None:
    batched(threshold, 16)


@pytest.mark.parametrize("min_chars", MIN_CHARS, ids=ids)
def test_min_chars_batch(min_chars: Any) -> None:
    batched(0.85, min_chars)


@pytest.mark.parametrize(
    ("threshold", "min_chars"),
    [
        (Fraction(17, 20), 15.5),
        (Decimal("0.8"), Fraction(33, 2)),
        (np.float32(0.85), np.float32(15.5)),
        (True, 16.0),
    ],
    ids=ids,
)
def test_both_at_once(threshold: Any, min_chars: Any) -> None:
    pairwise(threshold, min_chars)
    batched(threshold, min_chars)


def test_the_issue_cases() -> None:
    a, b = "abcdefghijklmnop", "a long label that holds abcdefghijklmnop inside it"
    assert impl.labels_match(a, b, min_chars=16.0) is True
    assert impl.labels_match(a, b, min_chars=16.5) is False
    assert batch.match_pairs([a], [b], threshold=Fraction(1, 1)).tolist() == [True]
    assert batch.join([a, b], threshold=Decimal("0.99"), min_chars=True).tolist() == [[0, 1]]
    assert batch.replay([a, a], threshold=True).reason == ["new", "ratio"]


def test_exactness_at_the_boundary() -> None:
    # 0.85 (the double) is below 17/20: a pair whose ratio is that double is accepted at 0.85 and
    # rejected at the Fraction and the Decimal, though both round to the same double.
    a, b = EXACT_85
    assert SequenceMatcher(None, a.lower(), b.lower()).ratio() == 0.85
    assert impl.labels_match(a, b, threshold=0.85, min_chars=100) is True
    for t in (Fraction(17, 20), Decimal("0.85")):
        assert float(t) == 0.85
        assert impl.labels_match(a, b, threshold=t, min_chars=100) is False
        assert batch.match_pairs([a], [b], threshold=t, min_chars=100).tolist() == [False]
        assert batch.join([a, b], threshold=t, min_chars=100).tolist() == []
    # numpy compares a Python float in the scalar's own precision: 0.85 >= float32(0.85) is True.
    assert (0.85 >= np.float32(0.85)) is np.True_
    assert impl.labels_match(a, b, threshold=np.float32(0.85), min_chars=100) is True
    assert impl.labels_match(a, b, threshold=np.float32(0.8500001), min_chars=100) is False


def test_a_decimal_nan_follows_the_decimal_context() -> None:
    a, b = EXACT_85
    with pytest.raises(decimal.InvalidOperation):
        impl.labels_match(a, b, threshold=Decimal("NaN"))
    with decimal.localcontext() as ctx:
        ctx.traps[decimal.InvalidOperation] = False
        assert seed_labels_match(a, b, threshold=Decimal("NaN")) is False
        assert impl.labels_match(a, b, threshold=Decimal("NaN")) is False
        assert batch.match_pairs([a], [b], threshold=Decimal("NaN")).tolist() == [False]
        long_a, long_b = PAIRS[1]
        assert impl.labels_match(long_a, long_b, min_chars=Decimal("NaN")) is False


def test_a_bad_value_is_refused_before_any_work() -> None:
    for bad in ("0.85", None, [0.5]):
        with pytest.raises(InputTypeError):
            impl.labels_match("", "", threshold=bad)
        with pytest.raises(InputTypeError):
            batch.match_pairs([], [], threshold=bad)
        with pytest.raises(InputTypeError):
            impl.match_mask("a", [], min_chars=bad)


@pytest.mark.parametrize(
    "cutoff",
    [None, 0.5, Fraction(1, 2), Decimal("0.5"), 0, 1, np.float32(0.5), Fraction(2, 3), 0.0],
    ids=ids,
)
def test_cdist_and_extract_cutoffs(cutoff: Any) -> None:
    # rapidfuzz's conventions (score_cutoff None or 0 keeps every choice), compared exactly for any
    # number type.
    queries = ["abcd", "uses pytest", "ab"]
    choices = ["abce", "uses pytest and ruff", "ab", "", "zz", "abdc"]
    got = batch.cdist(queries, choices, score_cutoff=cutoff)
    for i, q in enumerate(queries):
        for j, c in enumerate(choices):
            r = SequenceMatcher(None, q, c).ratio()
            want = r if (cutoff is None or r >= cutoff) else 0.0
            assert got[i, j] == want, (q, c, r, cutoff)
    for q in queries:
        scores = [SequenceMatcher(None, q, c).ratio() for c in choices]
        keep = [k for k, s in enumerate(scores) if (cutoff is None or s >= cutoff)]
        keep.sort(key=lambda k: -scores[k])
        assert [key for _, _, key in batch.extract(q, choices, score_cutoff=cutoff, limit=None)] == keep


@pytest.mark.parametrize("cutoff", [True, math.nan, -0.1, 1.5, 60], ids=ids)
def test_cdist_refuses_cutoffs_off_the_0_1_scale(cutoff: Any) -> None:
    with pytest.raises((InputTypeError, InvalidInputError)):
        batch.cdist(["a"], ["a"], score_cutoff=cutoff)
