"""The one rule (memdedup.facts): the same fact is the match contract plus the guards when given; restated
when the incoming normalised text equals or occurs in the current one, else updated; the change named
by the guard detectors whether or not the guards are on."""

from __future__ import annotations

import doctest
from typing import Any

import memdedup.facts
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memdedup import _reference
from memdedup.facts import RESTATED, UPDATED, FactMatch, change_of, decide, kind_of, same_fact
from memdedup.guards import guards_allow
from strategies import EVERY_CATEGORY_CHAR, mutated, n_examples, restatement_pairs


def test_the_module_examples_run() -> None:
    failed, tried = doctest.testmod(memdedup.facts)
    assert tried >= 3 and failed == 0


@pytest.mark.parametrize(
    ("current", "incoming", "kind", "rule", "change"),
    [
        # A value changes: updated, and the detectors name it.
        ("Dana's staging database port is 5432", "Dana's staging database port is 6543", UPDATED, "ratio",
         "value 5432 -> 6543"),
        # A lowercase common word is not a value token: updated, nothing named.
        ("Dana's default shell is zsh on every machine", "Dana's default shell is fish on every machine",
         UPDATED, "ratio", ""),
        # A negation: updated, named.
        ("Raj is allergic to peanuts and tree nuts", "Raj is not allergic to peanuts and tree nuts", UPDATED,
         "ratio", "negation"),
        # Equal after normalisation, or terser: restated, nothing changed.
        ("Prefers dark mode in every editor", "prefers dark mode in every editor.", RESTATED, "ratio", ""),
        ("Dana is training for a half marathon in Valencia", "dana is training for a half marathon", RESTATED,
         "ratio", ""),
        ("Dana is training for a half marathon in Valencia this December",
         "Dana is training for a half marathon", RESTATED, "containment", ""),
        # More detail: updated; an added value is not a substitution.
        ("Dana is training for a half marathon",
         "Dana is training for a half marathon in Valencia this December", UPDATED, "containment", ""),
    ],
)  # fmt: skip
def test_decide(current: str, incoming: str, kind: str, rule: str, change: str) -> None:
    found = decide(current, incoming)
    assert found == FactMatch(
        kind, rule, _reference.ratio(*map(_reference.normalise_label, (current, incoming))), change
    )


def test_reasons_read_as_the_report_prints_them() -> None:
    assert (
        FactMatch(UPDATED, "ratio", 0.97222, "value 5432 -> 6543").reason == "ratio 0.972; value 5432 -> 6543"
    )
    assert FactMatch(RESTATED, "containment", 0.64, "").reason == "containment (ratio 0.640)"


def test_the_guards_make_a_changed_value_another_fact() -> None:
    old, new = "Dana's staging database port is 5432", "Dana's staging database port is 6543"
    assert decide(old, new, guards="value") is None
    assert decide(old, new, guards="negation") is not None
    assert (
        decide("Raj is allergic to nuts today", "Raj is not allergic to nuts today", guards="negation")
        is None
    )


def test_change_of_names_both_kinds() -> None:
    assert change_of("Port 5432 is open", "Port 6543 is not open") == "value 5432 -> 6543; negation"
    assert change_of("Meets Sarah", "Meets Sarah in Berlin") == ""  # an addition is not a substitution
    assert change_of("Tickets ASR1603, ASR1604 are blocked", "Tickets ASR1605 are blocked") == (
        "value ASR1603, ASR1604 -> ASR1605"
    )


@settings(max_examples=n_examples(300))
@given(
    pair=st.one_of(
        restatement_pairs(),
        st.tuples(st.text(EVERY_CATEGORY_CHAR, max_size=40), st.text(EVERY_CATEGORY_CHAR, max_size=40)),
        st.text(EVERY_CATEGORY_CHAR, min_size=1, max_size=40).flatmap(
            lambda s: st.tuples(st.just(s), mutated(s, EVERY_CATEGORY_CHAR, 3))
        ),
    ),
    threshold=st.sampled_from([0.5, 0.85, 1.0]),
    min_chars=st.sampled_from([0, 16]),
    guards=st.sampled_from([None, "value", "negation", "value,negation"]),
)
def test_the_rule_is_the_contract_plus_the_guards(
    pair: tuple[str, str], threshold: float, min_chars: int, guards: Any
) -> None:
    current, incoming = pair
    accepted = _reference.labels_match(current, incoming, threshold=threshold, min_chars=min_chars) and (
        guards is None or guards_allow(current, incoming, guards)
    )
    found = decide(current, incoming, threshold=threshold, min_chars=min_chars, guards=guards)
    assert (found is not None) == accepted
    assert (
        same_fact(current, incoming, threshold=threshold, min_chars=min_chars, guards=guards) is not None
    ) == (accepted)
    if found is None:
        return
    assert (found.rule, found.score) == _reference.match_reason(
        current, incoming, threshold=threshold, min_chars=min_chars
    )
    terse = _reference.normalise_label(incoming)
    assert found.kind == (RESTATED if terse and terse in _reference.normalise_label(current) else UPDATED)
    assert found.kind == kind_of(current, incoming)
    assert found.change == ("" if found.kind == RESTATED else change_of(current, incoming))
