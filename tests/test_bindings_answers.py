"""Answers the Rust bindings gave differently from the reference (issue 22, item 4), and their class.

- Code points went back to Python through UTF-32 decoding with byte order 0, which takes a leading
  U+FEFF for a byte-order mark (and a leading U+FFFE for one of the other byte order).
- ``str(label)`` may return a ``str`` subclass with its own ``lower()`` or ``split()``: the contract's
  expression ``" ".join(str(s or "").lower().split()).rstrip(".!?;:,")`` calls them, so memdedup must.
- ``s or ""`` calls the label's ``__bool__`` (or ``__len__``): so must memdedup, and it must fail
  where that fails.
- difflib reads a ``str`` subclass through its own ``__getitem__``, ``__iter__`` and ``__hash__``.

Every answer is compared with the standard library's (``strategies.literal_normalise``,
``seed_labels_match``, ``difflib.SequenceMatcher``).
"""

from __future__ import annotations

import math
from difflib import SequenceMatcher
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memdedup import _reference, batch
from memdedup._backend import impl
from strategies import (
    ANY_CHAR,
    NOT_WHITESPACE,
    literal_normalise,
    n_examples,
    seed_labels_match,
    seed_match_reason,
)
from test_bindings_child import requires_rust

pytestmark = requires_rust

# ----------------------------------------------------------------------------------------------------
# A leading byte-order mark
# ----------------------------------------------------------------------------------------------------

FORMAT_CHARS = ["\ufeff", "\ufffe", "\u200b", "\u2060", "\u200d", "\u180e", "\x00"]


@pytest.mark.parametrize("mark", FORMAT_CHARS, ids=ascii)
@pytest.mark.parametrize(
    "text",
    ["ab\udc80", "\udc80", "AB \ud800 Cd", "x", "", "  Ab\ud83d  ", "\U0001f600\ud800", "Σ\udfff."],
    ids=ascii,
)
def test_a_leading_format_character_is_kept(mark: str, text: str) -> None:
    for s in (mark + text, text + mark, mark + " " + text, mark + mark + text):
        assert impl.normalise_label(s) == literal_normalise(s), ascii(s)


def test_the_issue_case() -> None:
    assert impl.normalise_label("\ufeffab\udc80") == "\ufeffab\udc80"


@settings(max_examples=n_examples(400))
@given(
    st.lists(
        st.one_of(st.sampled_from([*FORMAT_CHARS, "\ud800", "\udc80", " ", "\u3000", "."]), ANY_CHAR),
        max_size=12,
    ).map("".join)
)
def test_normalise_of_format_characters_and_surrogates(s: str) -> None:
    assert impl.normalise_label(s) == literal_normalise(s)


# ----------------------------------------------------------------------------------------------------
# str() returning a str subclass with its own methods
# ----------------------------------------------------------------------------------------------------


class Shouty(str):
    """A str whose ``lower()`` upper-cases (and keeps the class)."""

    def lower(self) -> str:
        return Shouty(str.upper(self))


class Splitter(str):
    """A str whose ``split()`` splits on commas too."""

    def split(self, *args: Any, **kwargs: Any) -> list[str]:  # type: ignore[override]
        return str.replace(self, ",", " ").split()


class Lowers(str):
    """A str whose ``lower()`` returns a :class:`Splitter`."""

    def lower(self) -> str:
        return Splitter(str.lower(self))


class Label:
    """A label whose ``str()`` is a subclass instance."""

    def __init__(self, text: str, kind: type = Shouty) -> None:
        self.text, self.kind = text, kind

    def __str__(self) -> str:
        return self.kind(self.text)

    def __repr__(self) -> str:
        return f"Label({self.text!r}, {self.kind.__name__})"


SUBCLASS_LABELS = [
    Label("Uses pytest and ruff"),
    Label("uses PYTEST and RUFF for python projects."),
    Label("a,b,c, and d", Lowers),
    Label("A,B,C and d", Splitter),
    Shouty("Prefers dark mode"),
    Splitter("prefers,dark,mode"),
    Lowers("Prefers,Dark,Mode in every editor"),
    "prefers dark mode",
    "PREFERS DARK MODE",
    "a b c and d",
    "USES PYTEST AND RUFF",
]


@pytest.mark.parametrize("label", SUBCLASS_LABELS, ids=repr)
def test_normalise_uses_the_subclass_methods(label: Any) -> None:
    assert impl.normalise_label(label) == literal_normalise(label)


def test_pair_functions_use_the_subclass_methods() -> None:
    for stored in SUBCLASS_LABELS:
        for incoming in SUBCLASS_LABELS:
            for threshold, min_chars in ((0.85, 16), (0.6, 5)):
                kw = {"threshold": threshold, "min_chars": min_chars}
                want = seed_labels_match(stored, incoming, **kw)
                assert impl.labels_match(stored, incoming, **kw) is want, (stored, incoming)
                assert impl.match_reason(stored, incoming, **kw) == seed_match_reason(stored, incoming, **kw)


def test_batch_functions_use_the_subclass_methods() -> None:
    labels = SUBCLASS_LABELS * 3
    for incoming in SUBCLASS_LABELS:
        want = [seed_labels_match(c, incoming, threshold=0.85) for c in labels]
        assert impl.match_mask(incoming, labels) == want
        assert impl.match_first(incoming, labels) == (want.index(True) if True in want else None)
    stored, incoming = labels[:-1], labels[1:]
    want = [seed_labels_match(a, b, threshold=0.85) for a, b in zip(stored, incoming, strict=True)]
    assert batch.match_pairs(stored, incoming).tolist() == want
    big_stored, big_incoming = stored * 400, incoming * 400  # past 8,192 pairs: decided while read
    assert batch.match_pairs(big_stored, big_incoming).tolist() == want * 400
    assert batch.join(labels).tolist() == [list(p) for p in _reference.join(labels)]
    expected = _reference.replay(labels, [0] * len(labels))
    got = batch.replay(labels)
    assert (got.canonical.tolist(), got.reason) == (expected[0], expected[1])
    c = batch.clusters(labels)
    for j, v in enumerate(c.via):
        if v is not None:
            assert (c.reason[j], c.score[j]) == _reference.match_reason(labels[v], labels[j])


def test_cdist_normalise_uses_the_subclass_methods() -> None:
    labels = SUBCLASS_LABELS
    got = batch.cdist(labels, labels, normalise=True)
    for i, q in enumerate(labels):
        for j, c in enumerate(labels):
            assert got[i, j] == SequenceMatcher(None, literal_normalise(q), literal_normalise(c)).ratio()


def test_replay_strips_with_the_subclass_method() -> None:
    class Strips(str):
        def strip(self, *args: Any) -> str:
            return str.strip(self, " x")

    # str() of a str subclass is an exact str: only a label whose __str__ returns the subclass gives
    # the reference a text with its own strip().
    labels = [
        Label("xx uses pytest and ruff xx", Strips),
        "uses pytest and ruff",
        Label("xxx", Strips),
        "  x  ",
    ]
    expected = _reference.replay(labels, [0] * 4)
    got = impl.replay(labels, [0] * 4)
    assert got[0] == expected[0] and got[1] == expected[1]


# ----------------------------------------------------------------------------------------------------
# `s or ""`: the label's __bool__ and __len__
# ----------------------------------------------------------------------------------------------------


class Falsy:
    def __bool__(self) -> bool:
        return False

    def __str__(self) -> str:
        return "not empty at all"


class Empty(str):
    def __len__(self) -> int:
        return 0


class Broken:
    def __bool__(self) -> bool:
        raise ZeroDivisionError("no truth")

    def __str__(self) -> str:
        return "label"


@pytest.mark.parametrize("label", [Falsy(), Empty("not empty"), 0, 0.0, [], None, ""], ids=repr)
def test_a_falsy_label_is_empty(label: Any) -> None:
    assert impl.normalise_label(label) == literal_normalise(label) == ""
    assert impl.labels_match(label, "not empty at all") is False
    assert impl.match_mask("not empty at all", [label, label]) == [False, False]


def test_a_label_whose_truth_fails_raises_as_the_reference_does() -> None:
    for call in (
        lambda: impl.normalise_label(Broken()),
        lambda: impl.labels_match(Broken(), "label"),
        lambda: impl.match_mask("label", ["label", Broken()]),
        lambda: impl.match_pairs(["label", Broken()], ["label", "label"]),
        lambda: impl.join(["label", Broken()]),
    ):
        with pytest.raises(ZeroDivisionError):
            call()
    with pytest.raises(ZeroDivisionError):
        literal_normalise(Broken())


# ----------------------------------------------------------------------------------------------------
# difflib on str subclasses
# ----------------------------------------------------------------------------------------------------


class Indexed(str):
    """Reads every character as "x" (difflib indexes ``a`` and iterates ``b``)."""

    def __getitem__(self, k: Any) -> str:
        return "x"

    def __iter__(self) -> Any:
        return iter("x" * len(self))


class Hashless(str):
    __hash__ = str.__hash__


@pytest.mark.parametrize("a", [Indexed("abcx"), Hashless("abcx"), "abcx", Shouty("abcx")], ids=repr)
@pytest.mark.parametrize("b", [Indexed("xxbx"), "xxbx", Hashless("xbx")], ids=repr)
def test_ratio_of_str_subclasses_is_difflibs(a: str, b: str) -> None:
    for autojunk in (True, False):
        sm = SequenceMatcher(None, a, b, autojunk=autojunk)
        assert impl.ratio(a, b, autojunk=autojunk) == sm.ratio()
        assert impl.quick_ratio(a, b, autojunk=autojunk) == sm.quick_ratio()
        assert impl.real_quick_ratio(a, b, autojunk=autojunk) == sm.real_quick_ratio()
        assert impl.matching_blocks(a, b, autojunk=autojunk) == [tuple(m) for m in sm.get_matching_blocks()]
    got = batch.cdist([a], [b])
    assert got[0, 0] == SequenceMatcher(None, a, b).ratio()


def test_nan_scores_stay_nan() -> None:
    r = batch.replay(["a", "a"])
    assert r.reason == ["new", "ratio"] and math.isnan(r.score[0]) and r.score[1] == 1.0
    assert np.isnan(batch.clusters(["a", "b"]).score).all()


def test_not_whitespace_is_kept() -> None:
    for ch in NOT_WHITESPACE:
        s = f"{ch}Ab{ch} {ch}"
        assert impl.normalise_label(s) == literal_normalise(s)
