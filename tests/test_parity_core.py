"""Parity of both backends (the compiled core ``memdedup._core`` and the pure-Python reference
``memdedup._reference``) with the contracts, on every kind of input, in one run.

Every answer is compared with an oracle built from the standard library (``difflib.SequenceMatcher`` and the
literal normalisation expression of contract 1), and, where it exists, with :mod:`memdedup._reference`.
Floats are compared bit for bit (``==`` and ``float.hex``). Every test runs once per backend (the
module's ``backend`` fixture sets ``impl``): the core in the default profile, the reference (slower) in the
extended one (``-m slow``), so the fallback needs no run of its own.
"""

from __future__ import annotations

import gzip
import itertools
import math
import os
import random
import sys
import threading
from collections.abc import Callable, Iterable
from decimal import Decimal
from difflib import SequenceMatcher
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from memdedup import _backend, _reference
from memdedup._backend import IMPLEMENTATION
from profiles import sampled
from strategies import (
    ANY_CHAR,
    CASE_IGNORABLE,
    LABEL_CHAR,
    NOT_WHITESPACE,
    PY_ONLY_WHITESPACE,
    PY_WHITESPACE,
    TRICKY_CASE,
    WORDS,
    any_number_min_chars,
    any_number_thresholds,
    any_text,
    difflib_all,
    label_pairs,
    label_text,
    literal_normalise,
    long_labels,
    min_chars_values,
    mutated,
    n_examples,
    near_duplicate_pairs,
    placed_label_pairs,
    placed_labels,
    restatement_pairs,
    seed_join,
    seed_labels_match,
    seed_match_reason,
    seed_replay,
    thresholds,
)

REPO = Path(__file__).resolve().parent.parent
DEFAULT_THRESHOLD = 0.85
DEFAULT_MIN_CHARS = 16
SLOW = [HealthCheck.too_slow, HealthCheck.large_base_example, HealthCheck.data_too_large]

try:
    from memdedup import _core as _compiled
except ImportError:  # no extension: the reference alone (test_backend_is_the_requested_one says why)
    _compiled = None

#: The backend every test below calls, set by the ``backend`` fixture for each of its two runs.
impl: Any = _backend.impl


@pytest.fixture(
    autouse=True,
    scope="module",
    params=["rust", pytest.param("python", marks=[pytest.mark.slow, pytest.mark.reference])],
)
def backend(request: pytest.FixtureRequest) -> Any:
    """Each test once on the compiled core and once on the pure-Python reference (the latter in the
    extended profile: it is slow)."""
    global impl
    if request.param == "rust" and _compiled is None:
        pytest.skip("the compiled extension is not importable")
    impl = _compiled if request.param == "rust" else _reference
    yield impl
    impl = _backend.impl


def same_float(got: Any, expected: float) -> None:
    assert type(got) is float, f"expected a float, got {type(got).__name__}: {got!r}"
    assert got == expected or (math.isnan(got) and math.isnan(expected)), (got, expected)
    assert got.hex() == expected.hex(), (got.hex(), expected.hex())


# ==================================================================================================
# Contract 1: normalise_label
# ==================================================================================================


def check_normalise(s: Any) -> None:
    expected = literal_normalise(s)
    got = impl.normalise_label(s)
    assert type(got) is str
    assert got == expected, (s, got, expected)


def test_oracle_strategy_really_produces_surrogates() -> None:
    # The parity tests below rely on hypothesis drawing lone surrogates (category Cs); it does not by default.
    from hypothesis import find

    found = find(
        ANY_CHAR,
        lambda c: 0xD800 <= ord(c) <= 0xDFFF,
        settings=settings(max_examples=5000),
        random=random.Random(0),  # seeded: a search that may find nothing by luck is a flaky test
    )
    assert 0xD800 <= ord(found) <= 0xDFFF
    assert set(PY_ONLY_WHITESPACE) <= set(PY_WHITESPACE)
    assert not set(NOT_WHITESPACE) & set(PY_WHITESPACE)


@settings(max_examples=n_examples(600))
@given(any_text)
@example("ΟΔΟΣ")
@example("\ud800")
@example("a\udc80.")
def test_normalise_any_text(s: str) -> None:
    check_normalise(s)


_ws_chunk = st.text(alphabet=st.sampled_from(PY_ONLY_WHITESPACE + PY_WHITESPACE + NOT_WHITESPACE), min_size=1)


@settings(max_examples=n_examples(400))
@given(st.lists(st.one_of(_ws_chunk, st.text(alphabet=LABEL_CHAR, max_size=6)), max_size=12).map("".join))
def test_normalise_whitespace_mixed_with_text(s: str) -> None:
    check_normalise(s)


@settings(max_examples=n_examples(400))
@given(st.text(alphabet=st.sampled_from(TRICKY_CASE + CASE_IGNORABLE + ".,;:!? \x1c\u2028a"), max_size=12))
def test_normalise_case_context(s: str) -> None:
    # Final sigma depends on the cased / case-ignorable characters on both sides of it.
    check_normalise(s)


NORMALISE_EXAMPLES: list[tuple[str, str]] = [
    ("", ""),
    (" ", ""),
    ("...", ""),
    (" . ", ""),
    ("Hello, World.", "hello, world"),
    ("a.!?;:,", "a"),
    ("a ,", "a "),  # rstrip only removes punctuation: the space before it stays
    ("a,b.", "a,b"),
    ("ΟΔΟΣ", "οδος"),
    ("Σ.", "σ"),
    ("Σ", "σ"),
    ("ΑΣ Β", "ας β"),
    ("ΑΣ.", "ας"),
    ("ΑΣΑ", "ασα"),
    ("ΑΣ\u0301", "ας\u0301"),
    ("ΑΣ'Β", "ασ'β"),
    ("ΑΣ\x1cΒ", "ας β"),
    ("İ", "i\u0307"),
    ("İSTANBUL", "i\u0307stanbul"),
    ("ß", "ß"),
    ("ẞ", "ß"),
    ("ﬁ", "ﬁ"),
    ("ǅ", "ǆ"),
    ("\u212a\u212b\u2126", "kåω"),
    ("\x00", "\x00"),
    ("A\x00B", "a\x00b"),
    ("x\x1cy\x1dz\x1e\x1fw", "x y z w"),
    ("a\x0bb\x0cc\x85d\xa0e", "a b c d e"),
    ("a\u1680b\u2000c\u200ad\u2028e\u2029f\u202fg\u205fh\u3000i", "a b c d e f g h i"),
    ("x\u200by", "x\u200by"),
    ("x\ufeff", "x\ufeff"),
    ("\ud800", "\ud800"),
    ("A\udfff.", "a\udfff"),
    ("\U0001f600 Smile!", "\U0001f600 smile"),
    ("\U00010400", "\U00010428"),  # astral uppercase (Deseret)
    ("  Uses   pytest\tand ruff.\n", "uses pytest and ruff"),
]


@pytest.mark.parametrize(("raw", "expected"), NORMALISE_EXAMPLES)
def test_normalise_examples(raw: str, expected: str) -> None:
    assert literal_normalise(raw) == expected  # the table itself is right about Python
    check_normalise(raw)


def _all_code_points() -> list[str]:
    return [chr(i) for i in range(sys.maxunicode + 1)]


@pytest.mark.parametrize(
    "template",
    sampled(["{}", "a\u03a3{}", "{}\u03a3", "A{}\u03a3", "{}A{}"], ["{}", "{}\u03a3"]),
    ids=["alone", "sigma-then-c", "c-then-sigma", "cased-c-sigma", "c-cased-c"],
)
def test_normalise_every_code_point(template: str) -> None:
    # Exhaustive over the whole code space, surrogates included: lowercase mappings, the whitespace set, the
    # cased / case-ignorable properties behind final sigma, all as the running Python's Unicode database says.
    bad = []
    for c in _all_code_points():
        s = template.format(c, c)
        if impl.normalise_label(s) != literal_normalise(s):
            bad.append(f"U+{ord(c):04X}")
            if len(bad) >= 20:
                break
    assert not bad, f"normalise_label differs from Python for {template!r} with {bad}"


class StrSubclass(str):
    def __str__(self) -> str:
        return "  Overridden  __STR__. "


class Labelled:
    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


class FalsyLabelled(Labelled):
    def __bool__(self) -> bool:
        return False


NON_STR_INPUTS: list[Any] = [
    None,
    0,
    0.0,
    -0.0,
    [],
    (),
    {},
    False,
    True,
    123,
    -7,
    1.5,
    float("nan"),
    10**30,
    b"AB.",
    ["A", "B"],
    StrSubclass("plain value"),
    StrSubclass(""),
    Labelled("  Some   Object!. "),
    Labelled("\ud800 X\u2028Y"),
    FalsyLabelled("Not used"),
]


@pytest.mark.parametrize("value", NON_STR_INPUTS, ids=lambda v: f"{type(v).__name__}:{v!r}"[:40])
def test_normalise_non_str(value: Any) -> None:
    check_normalise(value)


def test_normalise_non_str_known_values() -> None:
    assert impl.normalise_label(None) == ""
    assert impl.normalise_label(0) == ""
    assert impl.normalise_label(False) == ""
    assert impl.normalise_label(123) == "123"
    assert impl.normalise_label(1.5) == "1.5"
    assert impl.normalise_label(b"AB.") == "b'ab.'"
    assert impl.normalise_label(StrSubclass("x")) == "overridden __str__"
    assert impl.normalise_label(StrSubclass("")) == ""  # empty str subclass is falsy: str("") is used
    assert impl.normalise_label(FalsyLabelled("Not used")) == ""


class StrRaises:
    def __str__(self) -> str:
        raise ValueError("no text")


class BoolRaises:
    def __bool__(self) -> bool:
        raise RuntimeError("no truth")


@pytest.mark.parametrize(("value", "error"), [(StrRaises(), ValueError), (BoolRaises(), RuntimeError)])
def test_normalise_propagates_errors_like_python(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        literal_normalise(value)
    with pytest.raises(error):
        impl.normalise_label(value)


# ==================================================================================================
# Contract 2: ratio, quick_ratio, real_quick_ratio, matching_blocks
# ==================================================================================================


def check_matcher(
    a: str, b: str, autojunks: Iterable[bool] = (True, False), both_orders: bool = True
) -> None:
    orders = [(a, b), (b, a)] if both_orders and a != b else [(a, b)]
    for autojunk in autojunks:
        for x, y in orders:
            r, qr, rqr, blocks = difflib_all(x, y, autojunk)
            same_float(impl.ratio(x, y, autojunk=autojunk), r)
            same_float(impl.quick_ratio(x, y, autojunk=autojunk), qr)
            same_float(impl.real_quick_ratio(x, y, autojunk=autojunk), rqr)
            got_blocks = impl.matching_blocks(x, y, autojunk=autojunk)
            assert type(got_blocks) is list
            assert all(type(t) is tuple for t in got_blocks)
            assert got_blocks == blocks, (x, y, autojunk)
            if autojunk:  # the default is autojunk=True
                same_float(impl.ratio(x, y), r)


def check_ratio_only(a: str, b: str, autojunk: bool) -> None:
    """ratio and matching blocks from one difflib run (for long inputs, where difflib itself is slow)."""
    for x, y in ((a, b), (b, a)):
        sm = SequenceMatcher(None, x, y, autojunk=autojunk)
        blocks = [tuple(m) for m in sm.get_matching_blocks()]
        same_float(impl.ratio(x, y, autojunk=autojunk), sm.ratio())
        assert impl.matching_blocks(x, y, autojunk=autojunk) == blocks
        same_float(impl.quick_ratio(x, y, autojunk=autojunk), sm.quick_ratio())


MATCHER_EXAMPLES: list[tuple[str, str]] = [
    ("", ""),
    ("", "a"),
    ("abc", "abc"),
    ("abcd", "bcde"),
    ("ab", "ba"),
    ("abaaccab", "bacdcdab"),  # ratio 0.25 one way, 0.75 the other
    ("qabxcd", "abycdf"),
    (" abcd", "abcd abcd"),
    ("private Thread currentThread;", "private volatile Thread currentThread;"),
    ("aaaa", "aa"),
    ("abab", "baba"),
    ("\ud800a", "a\ud800"),
    ("\U0001f600a\U0001f600", "a\U0001f600"),
    ("é", "e\u0301"),
    ("uses pytest and ruff", "uses pytest and ruff for python projects with strict linting"),
]


@pytest.mark.parametrize(("a", "b"), MATCHER_EXAMPLES)
def test_matcher_examples(a: str, b: str) -> None:
    check_matcher(a, b)


def test_matcher_known_values() -> None:
    # Fixed points, independent of any oracle code path.
    assert impl.ratio("", "") == 1.0
    assert impl.ratio("abcd", "bcde") == 0.75
    assert impl.ratio("abaaccab", "bacdcdab") == 0.25
    assert impl.ratio("bacdcdab", "abaaccab") == 0.75
    assert impl.matching_blocks("abxcd", "abcd") == [(0, 0, 2), (3, 2, 2), (5, 4, 0)]
    assert impl.matching_blocks("", "") == [(0, 0, 0)]
    assert impl.real_quick_ratio("a", "abc") == 0.5


@settings(max_examples=n_examples(300))
@given(any_text, any_text)
def test_matcher_any_text(a: str, b: str) -> None:
    check_matcher(a, b)


@settings(max_examples=n_examples(300))
@given(near_duplicate_pairs())
def test_matcher_near_duplicates(pair: tuple[str, str]) -> None:
    check_matcher(*pair)


@settings(max_examples=n_examples(200))
@given(near_duplicate_pairs(alphabet=ANY_CHAR, max_size=40))
def test_matcher_near_duplicates_any_code_point(pair: tuple[str, str]) -> None:
    check_matcher(*pair)


@settings(max_examples=n_examples(300))
@given(near_duplicate_pairs(alphabet=st.sampled_from("ab "), max_size=60, max_edits=6))
def test_matcher_near_duplicates_tiny_alphabet(pair: tuple[str, str]) -> None:
    # Many equal-length candidate matches: exercises the longest-match tie-breaks.
    check_matcher(*pair)


_small_alphabet = st.sampled_from(["ab", "abc ", "aaaaaaaabbbbc d"])


@settings(max_examples=n_examples(30), suppress_health_check=SLOW)
@given(
    _small_alphabet.flatmap(
        lambda al: st.tuples(
            st.text(alphabet=st.sampled_from(al), min_size=200, max_size=2000),
            st.text(alphabet=st.sampled_from(al), min_size=200, max_size=2000),
        )
    )
)
def test_matcher_long_small_alphabet_autojunk(pair: tuple[str, str]) -> None:
    # len(b) >= 200: every element occurring more than len(b)//100 + 1 times is "popular" and dropped.
    check_ratio_only(*pair, autojunk=True)


@settings(max_examples=n_examples(8), suppress_health_check=SLOW)
@given(
    _small_alphabet.flatmap(
        lambda al: st.tuples(
            st.text(alphabet=st.sampled_from(al), min_size=200, max_size=450),
            st.text(alphabet=st.sampled_from(al), min_size=200, max_size=450),
        )
    )
)
def test_matcher_long_small_alphabet_no_autojunk(pair: tuple[str, str]) -> None:
    check_ratio_only(*pair, autojunk=False)


# A skewed alphabet: some characters popular in a 200+ string, some rare, some right at the limit.
_SKEWED = st.sampled_from("aaaaaaaaaaaaeeeeeeeettttnnss  .,xyzqjk01")


@settings(max_examples=n_examples(40), suppress_health_check=SLOW)
@given(near_duplicate_pairs(alphabet=_SKEWED, min_size=200, max_size=1200, max_edits=10))
def test_matcher_long_near_duplicates_autojunk(pair: tuple[str, str]) -> None:
    check_ratio_only(*pair, autojunk=True)


@settings(max_examples=n_examples(10), suppress_health_check=SLOW)
@given(near_duplicate_pairs(alphabet=_SKEWED, min_size=150, max_size=400, max_edits=10))
def test_matcher_long_near_duplicates_no_autojunk(pair: tuple[str, str]) -> None:
    check_ratio_only(*pair, autojunk=False)


@settings(max_examples=n_examples(60), suppress_health_check=SLOW)
@given(
    st.text(alphabet=_SKEWED, min_size=190, max_size=800),
    st.text(alphabet=LABEL_CHAR, max_size=40),
)
def test_matcher_one_long_one_short(long: str, short: str) -> None:
    # Both orders: the popular-element rule applies only to the second argument.
    check_ratio_only(long, short, autojunk=True)
    check_ratio_only(long[:260], short, autojunk=False)


@settings(max_examples=n_examples(60), suppress_health_check=SLOW)
@given(st.text(alphabet=LABEL_CHAR, min_size=1, max_size=7), st.integers(20, 300), st.data())
def test_matcher_repetitive(unit: str, times: int, data: st.DataObject) -> None:
    a = unit * times
    b = data.draw(mutated(a, LABEL_CHAR, 6))
    check_ratio_only(a, b, autojunk=True)
    check_ratio_only(a[:300], b[:300], autojunk=False)


def _popular_case(n: int, count: int, seed: int) -> tuple[str, str]:
    """b: ``n`` chars, "x" ``count`` times and every other char at most twice; a: a noisy copy."""
    rnd = random.Random(seed)
    filler = [chr(0x4E00 + i // 2) for i in range(n - count)]
    chars = ["x"] * count + filler
    rnd.shuffle(chars)
    b = "".join(chars)
    a_chars = list(b)
    for _ in range(n // 10):
        a_chars[rnd.randrange(len(a_chars))] = rnd.choice("xyx" + chr(0x4E00 + rnd.randrange(n // 2)))
    return "".join(a_chars), b


@pytest.mark.parametrize("n", [150, 199, 200, 201, 299, 300, 301, 777])
@pytest.mark.parametrize("delta", [-1, 0, 1, 2])
def test_matcher_popular_element_boundary(n: int, delta: int) -> None:
    ntest = n // 100 + 1
    count = ntest + delta
    a, b = _popular_case(n, count, seed=n * 10 + delta)
    sm = SequenceMatcher(None, a, b)
    # The construction really sits on the rule's boundary (difflib's own bookkeeping says so).
    assert b.count("x") == count
    assert ("x" in sm.bpopular) == (n >= 200 and count > ntest)
    check_matcher(a, b)


# ==================================================================================================
# Contract 3: labels_match, match_reason
# ==================================================================================================


def check_labels(stored: Any, incoming: Any, threshold: Any, min_chars: int | None) -> None:
    kwargs: dict[str, Any] = {"threshold": threshold}
    if min_chars is not None:
        kwargs["min_chars"] = min_chars
    oracle_kwargs = {
        "threshold": threshold,
        "min_chars": DEFAULT_MIN_CHARS if min_chars is None else min_chars,
    }
    expected = seed_labels_match(stored, incoming, **oracle_kwargs)
    got = impl.labels_match(stored, incoming, **kwargs)
    assert type(got) is bool
    assert got == expected, (stored, incoming, kwargs)
    assert _reference.labels_match(stored, incoming, **kwargs) == expected

    expected_reason = seed_match_reason(stored, incoming, **oracle_kwargs)
    reason = impl.match_reason(stored, incoming, **kwargs)
    assert (reason is None) == (expected_reason is None), (reason, expected_reason)
    assert (reason is None) == (not expected)
    if expected_reason is not None:
        assert type(reason) is tuple and len(reason) == 2
        assert reason[0] == expected_reason[0]
        same_float(reason[1], expected_reason[1])
    assert _reference.match_reason(stored, incoming, **kwargs) == expected_reason


@settings(max_examples=n_examples(700))
@given(label_pairs, thresholds, st.one_of(st.none(), min_chars_values))
def test_labels_match_property(pair: tuple[str, str], threshold: float, min_chars: int | None) -> None:
    check_labels(pair[0], pair[1], threshold, min_chars)
    check_labels(pair[1], pair[0], threshold, min_chars)


@settings(max_examples=n_examples(300))
@given(restatement_pairs())
def test_labels_match_defaults(pair: tuple[str, str]) -> None:
    stored, incoming = pair
    assert impl.labels_match(stored, incoming) == seed_labels_match(stored, incoming, threshold=0.85)
    assert impl.match_reason(stored, incoming) == seed_match_reason(stored, incoming, threshold=0.85)


COMMON = "abcdefghijklmnopqrstuvwxyz"  # the shared prefix: distinct characters, so M is exactly its length
A_ONLY = "0123456789"
B_ONLY = "αβγδεζηθικ"  # no sigma: lower(upper(c)) == c for all of these


def _ratio_pair(m: int, la: int, lb: int) -> tuple[str, str]:
    return COMMON[:m] + A_ONLY[: la - m], COMMON[:m] + B_ONLY[: lb - m]


def _boundary_cases() -> list[tuple[int, int, int]]:
    cases = []
    for m in (15, 16, 17, 18):
        for total in range(38, 43):
            for la in range(m + 1, total - m):
                lb = total - la
                if m < lb and la - m <= len(A_ONLY) and lb - m <= len(B_ONLY):
                    cases.append((m, la, lb))
    return cases


def test_boundary_arithmetic_is_what_python_says() -> None:
    a, b = _ratio_pair(17, 20, 20)
    assert SequenceMatcher(None, a, b).ratio() == 0.85
    assert 2.0 * 17 / 40 >= 0.85
    assert 2.0 * 17 / 40 == 0.85
    assert impl.labels_match(a, b, threshold=0.85) is True
    assert impl.labels_match(a, b, threshold=math.nextafter(0.85, 1.0)) is False
    assert impl.match_reason(a, b, threshold=0.85) == ("ratio", 0.85)
    # 16 of 40 -> 0.8: rejected at 0.85, and the shorter (20 chars) is not contained in the longer.
    a, b = _ratio_pair(16, 20, 20)
    assert impl.labels_match(a, b, threshold=0.85) is False
    assert impl.labels_match(a, b, threshold=0.8) is True


@pytest.mark.parametrize(("m", "la", "lb"), _boundary_cases())
def test_labels_match_ratio_at_exact_boundaries(m: int, la: int, lb: int) -> None:
    a, b = _ratio_pair(m, la, lb)
    r = 2.0 * m / (la + lb)
    assert SequenceMatcher(None, a, b).ratio() == r  # the construction has exactly M matching characters
    assert SequenceMatcher(None, b, a).ratio() == r
    decorated = [(a, b), ("  " + a.upper() + ".", b.upper() + ",! "), (b, a), (b.upper() + "?", "\u3000" + a)]
    candidates = [
        r,
        math.nextafter(r, 2.0),
        math.nextafter(r, -1.0),
        0.85,
        0.8,
        float(Fraction(2 * m, la + lb)),
    ]
    for stored, incoming in decorated:
        for t in candidates:
            expected = r >= t  # no containment is possible: the tails differ
            assert seed_labels_match(stored, incoming, threshold=t) == expected
            assert impl.labels_match(stored, incoming, threshold=t) == expected, (m, la, lb, t)
            reason = impl.match_reason(stored, incoming, threshold=t)
            assert reason == (("ratio", r) if expected else None)
            check_labels(stored, incoming, t, None)


LONG_TAIL = " with extra detail for python projects"


@pytest.mark.parametrize(
    ("short_raw", "norm_len"),
    [
        ("uses pytest and", 15),
        ("USES   PYTEST\tAND.", 15),
        ("uses pytest ruff", 16),
        ("Uses pytest ruff!?", 16),
        ("\u2003uses\x1cpytest\u3000ruff ,", 17),  # rstrip leaves the space before the comma
        ("uses pytest, ruff", 17),
        ("USES PYTEST, RUFF...", 17),
        ("İstanbul is big", 16),  # 15 raw characters, 16 once lowercased
        ("ΟΔΟΣ ΟΔΟΣ ΟΔΟΣ ΣΣ.", 17),
    ],
)
@pytest.mark.parametrize("min_chars", [None, 0, 1, 16, 17, 1000])
def test_labels_match_containment_boundary(short_raw: str, norm_len: int, min_chars: int | None) -> None:
    short = literal_normalise(short_raw)
    assert len(short) == norm_len
    long_raw = short.upper() + LONG_TAIL.upper() + "."
    mid_raw = "Note: " + short + LONG_TAIL
    need = DEFAULT_MIN_CHARS if min_chars is None else min_chars
    for longer in (long_raw, mid_raw):
        assert SequenceMatcher(None, short, literal_normalise(longer)).ratio() < DEFAULT_THRESHOLD
        expected = norm_len >= need
        for stored, incoming in ((short_raw, longer), (longer, short_raw)):
            assert seed_labels_match(stored, incoming, threshold=0.85, min_chars=need) == expected
            kwargs: dict[str, Any] = {} if min_chars is None else {"min_chars": min_chars}
            assert impl.labels_match(stored, incoming, threshold=0.85, **kwargs) == expected
            reason = impl.match_reason(stored, incoming, threshold=0.85, **kwargs)
            assert (reason is not None and reason[0] == "containment") == expected
            check_labels(stored, incoming, 0.85, min_chars)


def test_labels_match_containment_sees_final_sigma() -> None:
    # Raw text contains the shorter label, but lowercasing makes its last sigma final (ς) and the longer
    # one's medial (σ): after normalisation there is no containment.
    stored = "ΑΒΓΔΕΖΗΘΙΚΛΜΝΞΟΣ"
    incoming = "ΑΒΓΔΕΖΗΘΙΚΛΜΝΞΟΣΑΒΓ and a much longer tail"
    assert stored in incoming
    assert impl.labels_match(stored, incoming, threshold=0.85) is False
    assert impl.labels_match(incoming, stored, threshold=0.85) is False
    assert impl.labels_match(stored.lower().replace("ς", "σ"), incoming, threshold=0.85) is True
    check_labels(stored, incoming, 0.85, None)


def test_labels_match_seed_examples() -> None:
    # The seed's own motivating cases (v8.16 extra detail, v8.17 terminal punctuation).
    stored = "Uses pytest and ruff."
    incoming = "Uses pytest and ruff for Python projects with strict linting"
    assert SequenceMatcher(None, literal_normalise(stored), literal_normalise(incoming)).ratio() < 0.85
    assert impl.labels_match(stored, incoming, threshold=0.85) is True
    assert impl.labels_match(incoming, stored, threshold=0.85) is True
    # Internal punctuation is kept: "uses pytest, and ruff" is not a substring any more.
    assert impl.labels_match("Uses pytest, and ruff", incoming, threshold=0.85) is False


@pytest.mark.parametrize(
    ("stored", "incoming"),
    [
        ("The user prefers dark mode", "The user prefers dark mode"),
        ("the user prefers dark mode", "THE USER PREFERS DARK MODE"),
        ("ΟΔΟΣ", "οδος"),
        ("Σ.", "σ"),
        ("ab", "AB!"),
        ("x", "x"),
        ("İ", "i\u0307"),
    ],
)
@pytest.mark.parametrize("threshold", [0.0, 0.85, 1.0])
@pytest.mark.parametrize("min_chars", [0, 1, 16, 1000])
def test_labels_match_equal_after_normalisation(
    stored: str, incoming: str, threshold: float, min_chars: int
) -> None:
    assert literal_normalise(stored) == literal_normalise(incoming) != ""
    assert impl.labels_match(stored, incoming, threshold=threshold, min_chars=min_chars) is True
    assert impl.match_reason(stored, incoming, threshold=threshold, min_chars=min_chars) == ("ratio", 1.0)


@pytest.mark.parametrize("empty", ["", " ", "\t\n", "...", " ,.!", "\x1c\u3000", None, 0, False])
@pytest.mark.parametrize("other", ["", "...", "a", "some long label with many characters"])
@pytest.mark.parametrize("threshold", [0.0, -1.0, 0.85])
def test_labels_match_empty_never_matches(empty: Any, other: str, threshold: float) -> None:
    for stored, incoming in ((empty, other), (other, empty)):
        assert impl.labels_match(stored, incoming, threshold=threshold, min_chars=0) is False
        assert impl.match_reason(stored, incoming, threshold=threshold, min_chars=0) is None
        check_labels(stored, incoming, threshold, 0)


@pytest.mark.parametrize(
    "threshold",
    [float("nan"), float("inf"), -float("inf"), -0.0, 0.0, 1.5, -0.5, 0, 1, True, False, 5e-324],
    ids=repr,
)
def test_labels_match_unusual_thresholds(threshold: Any) -> None:
    pairs = [
        ("uses pytest and ruff", "uses pytest and ruff for python projects"),
        ("abaaccab", "bacdcdab"),
        ("the user prefers dark mode", "the user prefers light mode"),
        ("x", "x"),
        ("abc", "xyz"),
    ]
    for stored, incoming in pairs:
        check_labels(stored, incoming, threshold, None)
        check_labels(incoming, stored, threshold, None)


@pytest.mark.parametrize(
    "threshold",
    [Fraction(17, 20), Decimal("0.85"), Fraction(4, 5), Decimal("0.8"), 10**400, -(10**400)],
    ids=["Fraction(17,20)", "Decimal(0.85)", "Fraction(4,5)", "Decimal(0.8)", "10**400", "-10**400"],
)
def test_labels_match_exact_numeric_thresholds(threshold: Any) -> None:
    # Python compares a float with a Fraction / Decimal / big int exactly: 0.85 (the double) < 17/20, so the
    # 17-of-40 pair is rejected at Fraction(17, 20) although it is accepted at 0.85. Same answers as symfonic.
    a, b = _ratio_pair(17, 20, 20)
    c, d = _ratio_pair(16, 20, 20)
    assert seed_labels_match(a, b, threshold=Fraction(17, 20)) is False
    for stored, incoming in ((a, b), (c, d), ("uses pytest and ruff", "uses pytest and ruff for python")):
        check_labels(stored, incoming, threshold, None)


# ==================================================================================================
# match_first / match_mask: labels_match(candidate, incoming) per candidate, the candidate stored first
# ==================================================================================================


@st.composite
def incoming_and_candidates(draw: st.DrawFn) -> tuple[str, list[Any]]:
    incoming = draw(st.one_of(label_text, restatement_pairs().map(lambda p: p[0])))
    candidate = st.one_of(
        mutated(incoming, LABEL_CHAR, 3),
        restatement_pairs().map(lambda p: p[1]),
        st.just(incoming + " and more detail than before"),
        label_text,
        st.sampled_from([None, "", "   ", 123]),
    )
    return incoming, draw(st.lists(candidate, max_size=25))


def expected_mask(incoming: Any, candidates: list[Any], threshold: Any, min_chars: int) -> list[bool]:
    return [seed_labels_match(c, incoming, threshold=threshold, min_chars=min_chars) for c in candidates]


@settings(max_examples=n_examples(250))
@given(incoming_and_candidates(), thresholds, st.one_of(st.none(), min_chars_values))
def test_match_mask_and_first(case: tuple[str, list[Any]], threshold: float, min_chars: int | None) -> None:
    incoming, candidates = case
    kwargs: dict[str, Any] = {"threshold": threshold}
    if min_chars is not None:
        kwargs["min_chars"] = min_chars
    mask = expected_mask(
        incoming, candidates, threshold, DEFAULT_MIN_CHARS if min_chars is None else min_chars
    )
    first = mask.index(True) if True in mask else None
    got_mask = impl.match_mask(incoming, candidates, **kwargs)
    assert type(got_mask) is list and all(type(x) is bool for x in got_mask)
    assert got_mask == mask
    assert impl.match_mask(incoming, tuple(candidates), **kwargs) == mask
    got_first = impl.match_first(incoming, candidates, **kwargs)
    assert got_first == first
    assert got_first is None or type(got_first) is int
    assert impl.match_first(incoming, tuple(candidates), **kwargs) == first
    assert _reference.match_mask(incoming, candidates, **kwargs) == mask


def test_match_mask_direction_and_defaults() -> None:
    # ratio("abaaccab", "bacdcdab") == 0.25 but the other order is 0.75: the candidate is the stored label.
    assert impl.match_mask("bacdcdab", ["abaaccab"], threshold=0.5) == [False]
    assert impl.match_mask("abaaccab", ["bacdcdab"], threshold=0.5) == [True]
    assert impl.match_first("bacdcdab", ["abaaccab", "bacdcdab.", "x"], threshold=0.5) == 1
    assert impl.match_first("abaaccab", ["bacdcdab", "abaaccab"], threshold=0.5) == 0
    assert impl.match_first("abc", []) is None
    assert impl.match_mask("abc", []) == []
    stored = "Uses pytest and ruff."
    incoming = "Uses pytest and ruff for Python projects"
    assert impl.match_mask(incoming, [stored, "unrelated", incoming.upper()]) == [True, False, True]
    assert impl.match_first(incoming, ["unrelated", stored]) == 1
    assert impl.match_first(incoming, [stored], min_chars=1000) is None


# ==================================================================================================
# Real labels: PyPI summaries that share a 20-character prefix (the write-time candidate path)
# ==================================================================================================

CORPUS = Path(os.environ.get("MEMDEDUP_CORPUS", "/work/shared/data/pypi-summaries.txt.gz"))
SAMPLE = REPO / "benches" / "data" / "labels_sample.txt"


def _read_labels(limit: int) -> list[str] | None:
    for path in (CORPUS, SAMPLE, SAMPLE.with_suffix(".txt.gz")):
        if path.is_file():
            opener: Callable[..., Any] = gzip.open if path.suffix == ".gz" else open
            with opener(path, "rt", encoding="utf-8", errors="surrogateescape", newline="\n") as fh:
                return [line.rstrip("\n") for line in itertools.islice(fh, limit)]
    return None


@cache
def real_groups() -> list[list[str]] | None:
    """Groups of labels sharing their first 20 characters, in first-appearance order."""
    lines = _read_labels(200_000)
    if lines is None:
        return None
    groups: dict[str, list[str]] = {}
    for line in lines:
        if line.strip():
            groups.setdefault(line[:20], []).append(line)
    return [g for g in groups.values() if len(g) > 1]


@cache
def real_pairs(limit: int = 3000, per_group: int = 3) -> list[tuple[str, str]]:
    groups = real_groups() or []
    pairs: list[tuple[str, str]] = []
    for group in groups:
        for i, j in itertools.islice(itertools.combinations(range(min(len(group), 6)), 2), per_group):
            pairs.append((group[i], group[j]))
        if len(pairs) >= limit:
            break
    return pairs[:limit]


def _need_real() -> None:
    # The sample is bundled with the repo, so a missing corpus is a broken checkout, not a reason to skip
    # (a skip here would let CI pass without ever comparing a real label).
    assert real_groups() is not None, f"no label corpus: neither {CORPUS} nor the bundled {SAMPLE}.gz exists"


def test_real_label_pairs_labels_match_and_ratio() -> None:
    _need_real()
    pairs = real_pairs()
    assert len(pairs) >= 100
    decisions = {True: 0, False: 0}
    for x, y in pairs:
        for stored, incoming in ((x, y), (y, x)):
            expected_reason = seed_match_reason(stored, incoming, threshold=DEFAULT_THRESHOLD)
            expected = expected_reason is not None
            decisions[expected] += 1
            assert impl.labels_match(stored, incoming, threshold=DEFAULT_THRESHOLD) == expected, (
                stored,
                incoming,
            )
            reason = impl.match_reason(stored, incoming)
            assert reason == expected_reason, (stored, incoming)
            if reason is not None:
                same_float(reason[1], expected_reason[1])  # type: ignore[index]
            same_float(impl.ratio(stored, incoming), SequenceMatcher(None, stored, incoming).ratio())
    # The sample really exercises both outcomes (otherwise the comparison above proves little).
    assert decisions[True] > 50 and decisions[False] > 50, decisions


def test_real_label_groups_match_mask() -> None:
    _need_real()
    groups = real_groups() or []
    checked = 0
    for group in groups[:800]:
        incoming, candidates = group[-1], group[:-1][:20]
        mask = expected_mask(incoming, candidates, DEFAULT_THRESHOLD, DEFAULT_MIN_CHARS)
        assert impl.match_mask(incoming, candidates) == mask, incoming
        assert impl.match_first(incoming, candidates) == (mask.index(True) if True in mask else None)
        checked += 1
    assert checked > 100


# ==================================================================================================
# Threads
# ==================================================================================================


def _thread_pairs() -> list[tuple[str, str]]:
    rnd = random.Random(20240611)
    pairs = []
    for i in range(300):
        words = [rnd.choice(WORDS) for _ in range(rnd.randint(2, 14))]
        base = " ".join(words)
        other = list(base)
        for _ in range(rnd.randint(0, 4)):
            if other:
                other[rnd.randrange(len(other))] = rnd.choice("abcxyz .ΣİŚ\u3000")
        tail = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(0, 6)))
        other_s = "".join(other) + ((" " + tail) if i % 3 == 0 else "")
        if i % 25 == 0:  # a few long ones, so the work per call is not trivial
            base, other_s = base * 30, other_s * 29
        pairs.append((base, other_s))
    return pairs


def test_threads_agree_with_single_threaded_oracle() -> None:
    pairs = _thread_pairs()
    expected = [
        (
            SequenceMatcher(None, a, b).ratio(),
            seed_labels_match(a, b, threshold=0.85),
            seed_labels_match(b, a, threshold=0.7),
            literal_normalise(a),
            literal_normalise(b),
        )
        for a, b in pairs
    ]
    mask_incoming = pairs[0][0]
    mask_candidates = [b for _, b in pairs[:40]]
    expected_mask_value = expected_mask(mask_incoming, mask_candidates, 0.85, DEFAULT_MIN_CHARS)

    n_threads = 8
    barrier = threading.Barrier(n_threads)
    results: list[list[tuple[float, bool, bool, str, str]] | None] = [None] * n_threads
    masks: list[list[bool] | None] = [None] * n_threads
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            barrier.wait()
            order = list(range(len(pairs)))
            random.Random(k).shuffle(order)  # each thread walks the pairs in its own order
            out: list[Any] = [None] * len(pairs)
            for i in order:
                a, b = pairs[i]
                out[i] = (
                    impl.ratio(a, b),
                    impl.labels_match(a, b, threshold=0.85),
                    impl.labels_match(b, a, threshold=0.7),
                    impl.normalise_label(a),
                    impl.normalise_label(b),
                )
            results[k] = out
            masks[k] = impl.match_mask(mask_incoming, mask_candidates)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    for k in range(n_threads):
        got = results[k]
        assert got is not None
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            assert g[1:] == e[1:], (k, pairs[i])
            same_float(g[0], e[0])
        assert masks[k] == expected_mask_value


# ==================================================================================================
# Errors
# ==================================================================================================

NOT_STR: list[Any] = [None, 1, 1.5, object(), True]


@pytest.mark.parametrize("func", ["ratio", "quick_ratio", "real_quick_ratio", "matching_blocks"])
@pytest.mark.parametrize("bad", NOT_STR, ids=lambda v: type(v).__name__)
def test_matcher_rejects_non_str(func: str, bad: Any) -> None:
    f = getattr(impl, func)
    with pytest.raises(TypeError):
        f(bad, "abc")
    # difflib quirk: SequenceMatcher(None, "abc", None).quick_ratio() raises AttributeError, because
    # set_seq2(None) returns early (None is the initial self.b) and never creates fullbcount.
    expected_error: Any = (TypeError, AttributeError) if (func, bad) == ("quick_ratio", None) else TypeError
    with pytest.raises(expected_error):
        f("abc", bad)


@pytest.mark.parametrize("bad_threshold", ["0.5", None, [0.5], object(), b"1"], ids=repr)
@pytest.mark.parametrize("func", ["labels_match", "match_reason"])
def test_labels_match_rejects_non_number_threshold(func: str, bad_threshold: Any) -> None:
    f = getattr(impl, func)
    with pytest.raises(TypeError):
        f("uses pytest and ruff", "uses pytest and black", threshold=bad_threshold)


@pytest.mark.parametrize("func", ["labels_match", "match_reason"])
def test_threshold_is_keyword_only(func: str) -> None:
    with pytest.raises(TypeError):
        getattr(impl, func)("abc", "abd", 0.5)


def _extension_imports() -> bool:
    import importlib.util

    return importlib.util.find_spec("memdedup._core") is not None


def test_backend_is_the_requested_one() -> None:
    # "auto" takes the extension exactly when it is there; "rust" and "python" are what they say.
    requested = os.environ.get("MEMDEDUP_IMPLEMENTATION", "auto").strip().lower() or "auto"
    expected = {"rust": "rust", "python": "python"}.get(
        requested, "rust" if _extension_imports() else "python"
    )
    assert expected == IMPLEMENTATION, (requested, IMPLEMENTATION)
    want_module = "memdedup._core" if expected == "rust" else "memdedup._reference"
    assert _backend.impl.__name__ == want_module
    assert (_backend.impl is _reference) == (expected == "python")


def test_rust_mode_really_runs_the_rust_core() -> None:
    # CI runs the suite with MEMDEDUP_IMPLEMENTATION=rust (README's test command): then every parity test
    # above compared the compiled core with the stdlib oracles, not the reference with itself.
    requested = os.environ.get("MEMDEDUP_IMPLEMENTATION", "auto").strip().lower() or "auto"
    if requested != "rust":
        pytest.skip("MEMDEDUP_IMPLEMENTATION is not 'rust' (CI's main run sets it)")
    import memdedup
    from memdedup import _core, batch, dedup
    from memdedup import difflib as md

    assert IMPLEMENTATION == "rust" and memdedup.IMPLEMENTATION == "rust"
    assert _backend.impl is _core and memdedup.ratio is _core.ratio
    assert dedup.normalise_label is _core.normalise_label
    # dedup.labels_match is symfonic's signature over the core (threshold keyword-only and required).
    assert dedup._impl is _core and dedup.labels_match_ext is _core.labels_match and batch._impl is _core
    assert memdedup.labels_match is _core.labels_match
    assert md.SequenceMatcher is md._FastSequenceMatcher and md._SequenceIndex is _core.SequenceIndex
    assert str(Path(_core.__file__).name).startswith("_core.")


def test_rust_mode_refuses_a_missing_extension() -> None:
    # MEMDEDUP_IMPLEMENTATION=rust turns a missing or broken extension into an error, never a fallback.
    import subprocess

    code = (
        "import sys; sys.modules['memdedup._core'] = None\n"
        "try:\n    import memdedup\n"
        "except Exception as exc:\n    print(type(exc).__name__)\n"
        "else:\n    print('imported', memdedup.IMPLEMENTATION)\n"
    )
    env = dict(os.environ, MEMDEDUP_IMPLEMENTATION="rust")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "BackendUnavailableError", done.stdout + done.stderr
    env["MEMDEDUP_IMPLEMENTATION"] = "auto"
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", code], env=env, capture_output=True, text=True
    )
    assert done.stdout.strip() == "RuntimeWarning", done.stdout + done.stderr  # "auto" falls back, loudly


# ==================================================================================================
# Every Unicode general category, at the start, the end and next to whitespace, in every representation
# ==================================================================================================
#: Found by an adversarial review, missed by the strategies above: a leading U+FEFF went back to Python
#: through PyUnicode_DecodeUTF32 with byte order 0, which takes it for a byte-order mark and drops it.
BOM_CASES = [
    "\ufeffab\udc80",
    "\ufeff\udc80",
    "\ufeff\ud800 x",
    "  \ufeff\udc80  ",
    "\ufeff\ufeff\udfff.",
    "a\udc80 \ufeff",
    "\ufeffİ\ud800",
    "\u200b\ud800",
    "\u2060\ud800\u2060",
]


@settings(max_examples=n_examples(800))
@given(placed_labels())
@example("\ufeffab\udc80")
@example("\ufeff\udc80")
@example("  \ufeff\udc80  ")
@example("\u2060\ud800İ")
@example("ΣΑΣ\ud800 Σ.")
@example("\x85\xa0\xad ab\x1c")
def test_normalise_placed_labels(s: str) -> None:
    check_normalise(s)


@pytest.mark.parametrize("s", BOM_CASES, ids=ascii)
def test_normalise_keeps_a_leading_feff(s: str) -> None:
    check_normalise(s)
    assert impl.normalise_label(s).startswith(literal_normalise(s)[:1])


@settings(max_examples=n_examples(500))
@given(placed_label_pairs, any_number_thresholds, st.one_of(st.none(), any_number_min_chars))
@example(("\ufeffab\udc80 uses pytest", "\ufeffab\udc80 uses pytest and ruff"), 0.85, None)
@example(("a" * 20, "a" * 20 + "b"), 0.99, 16.0)
@example(("uses pytest and ruff", "uses pytest and ruff for python"), Fraction(17, 20), Fraction(16))
def test_labels_match_placed_any_number(pair: tuple[str, str], threshold: Any, min_chars: Any) -> None:
    check_labels(pair[0], pair[1], threshold, min_chars)
    check_labels(pair[1], pair[0], threshold, min_chars)


@settings(max_examples=n_examples(300))
@given(placed_label_pairs)
@example(("\ufeffab\udc80", "ab\udc80"))
def test_matcher_placed(pair: tuple[str, str]) -> None:
    check_matcher(*pair)


@settings(max_examples=n_examples(25), suppress_health_check=SLOW)
@given(long_labels(), long_labels(), st.sampled_from([0.6, 0.85, Fraction(17, 20)]))
def test_long_labels_around_thresholds(a: str, b: str, threshold: Any) -> None:
    # Lengths around difflib's popular rule (200) and, in pairs, around 4,096 elements.
    check_ratio_only(a, b, autojunk=True)
    check_labels(a, b, threshold, None)
    mask = impl.match_mask(b, [a, b, a[:-1]], threshold=threshold)
    assert mask == [seed_labels_match(x, b, threshold=threshold) for x in (a, b, a[:-1])]


@pytest.mark.parametrize("total", [4094, 4095, 4096, 4097, 4098])
@pytest.mark.parametrize("wide", [False, True], ids=["latin1", "wide"])
def test_pair_lengths_around_the_gil_release(total: int, wide: bool) -> None:
    # The one-pair calls take another path from 4,096 elements (both labels' lengths together).
    unit = "Uses pytest \ufeff\ud800 and RUFF " if wide else "Uses pytest\xa0and RUFF\x85 "
    a = (unit * 400)[: total // 2]
    b = (unit.upper() * 400)[: total - total // 2 - 3] + "xyz"
    assert len(a) + len(b) == total
    check_normalise(a)
    for x, y in ((a, b), (b, a)):
        same_float(impl.ratio(x, y), SequenceMatcher(None, x, y).ratio())
        for threshold in (0.5, 0.85, 0.99, Fraction(99, 100)):
            check_labels(x, y, threshold, None)


# ==================================================================================================
# Labels that are not plain strs
# ==================================================================================================
class LowerOverride(str):
    def lower(self) -> str:
        return "  Lowered BY the SUBCLASS, Not by str.  "


class StrGivesLowerOverride:
    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return LowerOverride(self.text)


class HashOverride(str):
    def __hash__(self) -> int:
        return 1


ODD_LABELS: list[Any] = [
    StrGivesLowerOverride("Uses pytest and ruff"),
    StrGivesLowerOverride("lowered by the subclass, not by str"),
    LowerOverride("Uses PYTEST and ruff"),  # str() of a subclass is an exact copy: its lower() is not used
    HashOverride("Uses pytest and ruff"),
    StrSubclass("plain value"),
    Labelled("\ufeffab\udc80 Some Object"),
    FalsyLabelled("not used"),
    b"bytes label",
    None,
    0,
    12345,
    2.5,
    "\ufeffab\udc80",
]


@pytest.mark.parametrize("label", ODD_LABELS, ids=lambda v: f"{type(v).__name__}:{str(v)[:20]!a}")
def test_odd_labels_everywhere(label: Any) -> None:
    check_normalise(label)
    for other in ("uses pytest and ruff", "lowered by the subclass, not by str", "  Lowered  by ", ""):
        check_labels(label, other, 0.85, None)
        check_labels(other, label, 0.6, 4)
    candidates = [label, "uses pytest and ruff", label]
    incoming = "lowered by the subclass, not by str"
    assert impl.match_mask(incoming, candidates) == expected_mask(incoming, candidates, 0.85, 16)


# ==================================================================================================
# The batch functions: every pair decided as labels_match, thresholds of every number type
# ==================================================================================================
batch_labels = st.lists(
    st.one_of(placed_labels(), restatement_pairs().map(lambda p: p[0]), st.sampled_from(ODD_LABELS[:8])),
    max_size=14,
)


@settings(max_examples=n_examples(120), suppress_health_check=SLOW)
@given(batch_labels, any_number_thresholds, st.one_of(st.none(), any_number_min_chars))
@example(["Uses pytest and ruff", "uses pytest and ruff."], True, None)
@example(["Uses pytest and ruff", "uses pytest and ruff for python"], Fraction(17, 20), 16.0)
@example(["Uses pytest and ruff", "uses pytest and ruff for python"], Decimal("0.85"), Fraction(16))
def test_batch_functions_decide_each_pair_as_labels_match(
    labels: list[Any], threshold: Any, min_chars: Any
) -> None:
    import numpy as np
    from memdedup import batch

    kwargs: dict[str, Any] = {"threshold": threshold}
    if min_chars is not None:
        kwargs["min_chars"] = min_chars
    oracle = {"threshold": threshold, "min_chars": DEFAULT_MIN_CHARS if min_chars is None else min_chars}
    stored, incoming = labels[:-1], labels[1:]
    want_pairs = [seed_labels_match(a, b, **oracle) for a, b in zip(stored, incoming, strict=True)]
    got = batch.match_pairs(stored, incoming, **kwargs)
    assert isinstance(got, np.ndarray) and got.dtype == bool and got.tolist() == want_pairs
    if labels:
        want_mask = expected_mask(labels[0], labels, threshold, oracle["min_chars"])
        assert batch.match_first(labels[0], labels, **kwargs) == (
            want_mask.index(True) if True in want_mask else None
        )
    assert [tuple(p) for p in batch.join(labels, **kwargs).tolist()] == seed_join(labels, **oracle)
    assert batch.replay(labels, **kwargs).canonical.tolist() == seed_replay(labels, **oracle)
    clusters = batch.clusters(labels, **kwargs)
    for j, via in enumerate(clusters.via):
        if via is not None:  # every collapse is a pair the contract accepts, with its exact ratio
            decided = seed_match_reason(labels[via], labels[j], **oracle)
            assert decided is not None and clusters.reason[j] == decided[0]
            same_float(float(clusters.score[j]), decided[1])


@settings(max_examples=n_examples(60), suppress_health_check=SLOW)
@given(st.lists(placed_labels(), min_size=1, max_size=6), st.lists(placed_labels(), min_size=1, max_size=6))
@example(["\ufeffab\udc80"], ["ab\udc80", "\ufeffab\udc80"])
def test_cdist_and_extract_on_every_category(queries: list[str], choices: list[str]) -> None:
    from memdedup import batch

    got = batch.cdist(queries, choices)
    norm = batch.cdist(queries, choices, normalise=True)
    for i, q in enumerate(queries):
        for j, c in enumerate(choices):
            same_float(float(got[i, j]), SequenceMatcher(None, q, c).ratio())
            want = SequenceMatcher(None, literal_normalise(q), literal_normalise(c)).ratio()
            same_float(float(norm[i, j]), want)
    scores = [SequenceMatcher(None, queries[0], c).ratio() for c in choices]
    order = sorted(range(len(choices)), key=lambda k: -scores[k])[:5]
    assert batch.extract(queries[0], choices) == [(choices[k], scores[k], k) for k in order]


def test_cdist_normalise_uses_the_labels_own_lower() -> None:
    from memdedup import batch

    labels = [StrGivesLowerOverride("Uses pytest and ruff"), "lowered by the subclass, not by str"]
    got = batch.cdist(labels, labels, normalise=True)
    for i, q in enumerate(labels):
        for j, c in enumerate(labels):
            same_float(
                float(got[i, j]), SequenceMatcher(None, literal_normalise(q), literal_normalise(c)).ratio()
            )


@pytest.mark.parametrize("min_chars", [16, 16.0, 15.5, Fraction(16), Fraction(33, 2)], ids=repr)
def test_min_chars_of_every_number_type(min_chars: Any) -> None:
    # "uses pytest ruff" has 16 characters: contained, so it matches exactly when 16 >= min_chars.
    stored, incoming = "Uses pytest ruff", "uses pytest ruff with extra detail for python projects"
    check_labels(stored, incoming, 0.85, min_chars)
    check_labels(incoming, stored, 0.85, min_chars)
    assert impl.labels_match(stored, incoming, min_chars=min_chars) is (16 >= min_chars)


# ==================================================================================================
# memdedup.difflib against difflib on elements whose == and hash disagree, in both sequences
# ==================================================================================================
class AlwaysEqual:
    """Equal to everything, hashed by identity: a dict finds it only as itself, ``==`` finds it anywhere."""

    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"AlwaysEqual#{id(self) % 1000}"


_NAN = float("nan")
_ALWAYS = AlwaysEqual()
#: Elements shared by both sequences (one object each, so identity-based equality is what difflib sees).
ODD_ELEMENTS: list[Any] = [
    "x",
    "y\n",
    "\ufeff\udc80",
    HashOverride("x"),
    HashOverride("y\n"),
    _ALWAYS,
    AlwaysEqual(),
    _NAN,
    float("nan"),
    (1, _NAN),
    1,
    1.0,
    True,
    None,
    b"x",
]
UNHASHABLE: list[Any] = [["x"], {"k": 1}]


def difflib_outcomes(cls: Any, a: Any, b: Any, isjunk: Any = None) -> list[Any]:
    """What every matcher method gives (or raises) for one pair of sequences."""

    def attempt(call: Callable[[], Any]) -> Any:
        try:
            value = call()
        except Exception as exc:
            return ("raise", type(exc).__name__)
        if isinstance(value, float):
            return ("ok", value.hex())
        return (
            "ok",
            [tuple(x) if isinstance(x, tuple) else x for x in value] if isinstance(value, list) else value,
        )

    out = []
    for method in ("get_opcodes", "ratio", "get_matching_blocks", "quick_ratio", "real_quick_ratio"):
        try:
            sm = cls(isjunk, a, b)
        except Exception as exc:
            out.append(("raise on init", type(exc).__name__))
            continue
        out.append((method, attempt(getattr(sm, method))))
    try:
        sm = cls(isjunk, a, b)
        out.append(
            ("find_longest_match", attempt(lambda: tuple(sm.find_longest_match(0, len(a), 0, len(b)))))
        )
    except Exception as exc:
        out.append(("raise on init", type(exc).__name__))
    return out


odd_sequences = st.lists(st.sampled_from(ODD_ELEMENTS), max_size=8)


@settings(max_examples=n_examples(400))
@given(odd_sequences, odd_sequences, st.sampled_from(["list", "tuple"]), st.booleans())
@example([HashOverride("x")], ["x"], "list", False)  # ratio 0.0 instead of 1.0 (a is not guarded)
@example([_ALWAYS], ["x"], "list", False)
@example(["x"], [_ALWAYS], "list", False)
@example([_NAN, "x"], [_NAN, "x"], "tuple", False)
@example([float("nan")], [float("nan")], "list", False)
@example([1, 1.0, True], [True, 1], "list", True)
def test_sequence_matcher_with_odd_elements_in_either_position(
    a: list[Any], b: list[Any], kind: str, unhashable: bool
) -> None:
    import difflib

    from memdedup import difflib as md

    seq = list if kind == "list" else tuple
    if unhashable and a:
        a = [*a[:-1], UNHASHABLE[len(a) % 2]]
    x, y = seq(a), seq(b)
    assert difflib_outcomes(md.SequenceMatcher, x, y) == difflib_outcomes(difflib.SequenceMatcher, x, y)
    assert difflib_outcomes(md.SequenceMatcher, y, x) == difflib_outcomes(difflib.SequenceMatcher, y, x)


@settings(max_examples=n_examples(200))
@given(
    st.lists(
        st.sampled_from(["x", "xy", "y\n", "\ufeff\udc80", HashOverride("xy"), LowerOverride("xy")]),
        max_size=8,
    )
)
def test_get_close_matches_with_odd_possibilities(possibilities: list[Any]) -> None:
    import difflib

    from memdedup import difflib as md

    for word in ("xy", "x", HashOverride("xy")):
        for cutoff in (0.0, 0.5, Fraction(1, 2)):
            assert md.get_close_matches(word, possibilities, 3, cutoff) == difflib.get_close_matches(
                word, possibilities, 3, cutoff
            )
