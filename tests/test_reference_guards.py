"""The reference's own statement of the guards (``memdedup._reference``, which does not import
``memdedup.guards``) against the guards the compiled core applies: the same verdict for every pair, and the
same refusal for every bad ``guards`` argument."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memdedup import _reference
from memdedup import guards as guard_rules
from memdedup.errors import MemdedupError
from strategies import n_examples

_core = pytest.importorskip("memdedup._core")

WORDS = [
    "Ticket", "ASR1603", "ASR1605", "asr1603", "is", "blocked", "not", "no", "never", "cannot", "don't",
    "doesn\u2019t", "dont", "cant", "won't", "nor", "Berlin", "berlin", "Kraków", "krakow", "Straße",
    "strasse", "Tuesdays", "Tuesday", "v1.2.3", "3.11", "3.12", "max_retries", "PostgreSQL", "camelCase",
    "no-code", "User's", "9:30", "Alpha", "Beta", "the", "server", "\u0130stanbul", "ǅemal", "ﬁle", "",
]  # fmt: skip
LABELS = st.one_of(
    st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join),
    st.text(alphabet=st.sampled_from("aAbB1._-' \u2019ßİﬁ"), max_size=12),
    st.text(max_size=10),
)
GUARDS = st.sampled_from(
    [None, "none", "", "all", "value", "negation", "value,negation", " Value , ", ["value"], ("negation",)]
)
GUARD_OBJECTS = st.builds(guard_rules.Guards, value=st.booleans(), negation=st.booleans())


@settings(max_examples=n_examples(300))
@given(a=LABELS, b=LABELS, value=st.booleans(), negation=st.booleans())
def test_the_reference_guards_agree_with_memdedup_guards(a: str, b: str, value: bool, negation: bool) -> None:
    expected = guard_rules.guards_allow(a, b, guard_rules.Guards(value=value, negation=negation))
    assert _reference._guards_allow(a, b, value, negation) == expected


@settings(max_examples=n_examples(200))
@given(a=LABELS, b=LABELS, guards=st.one_of(GUARDS, GUARD_OBJECTS))
def test_labels_match_with_guards_on_both_backends(a: str, b: str, guards: Any) -> None:
    kw = {"threshold": 0.5, "min_chars": 4, "guards": guards}
    assert _reference.labels_match(a, b, **kw) == _core.labels_match(a, b, **kw)


def _refusal(call: Any) -> tuple[type, str] | None:
    try:
        call()
    except MemdedupError as exc:
        return type(exc), str(exc)
    return None


@pytest.mark.parametrize("guards", ["bogus", "value,bogus", 3, [1, 2], b"value", object(), ["all", "value"]])
def test_bad_guards_are_refused_alike(guards: Any) -> None:
    ours = _refusal(lambda: _reference.labels_match("a", "b", guards=guards))
    assert ours is not None
    assert ours == _refusal(lambda: _core.labels_match("a", "b", guards=guards))
    assert ours == _refusal(lambda: guard_rules.as_guards(guards))
