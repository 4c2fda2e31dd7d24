"""Facts change: the one rule that says whether a statement is a fact already held, and whether it
restates it or updates it.

Every path that keeps memory true reads this module: the write path (:mod:`memdedup.ingest`), recall
(which version of a fact a block shows, :mod:`memdedup.collapse`), ``memdedup consolidate``
(:mod:`memdedup.consolidate`) and the LangGraph wrapper (:mod:`memdedup.integrations.langgraph`).

The same fact
    Two statements are the same fact when write-time dedup says so: the match contract
    (:func:`memdedup.match_reason`: ratio OR containment at ``threshold`` and ``min_chars``, the
    current text as the stored side), and, when ``guards`` are given, the guards allow it
    (:func:`memdedup.guards.guards_allow`). With ``guards="value,negation"`` a pair that differs in a
    value or a negation is two facts. Scope and layer are the caller's part of the rule: a store
    compares a statement only with rows of the same owning scope and layer.

Restated or updated
    For a statement that is the same fact as a current text:

    - **restated**: the normalised texts are equal, or the incoming normalised text occurs in the current
      one (a terser restatement): the current text stays;
    - **updated**: anything else (a ratio match with other text, or an incoming text that contains the
      current one and says more): the incoming text becomes current and the previous one a revision.

    :func:`decide` returns which, with the contract's rule and exact score, and what the guard
    detectors see changed (:func:`change_of`): ``value 5432 -> 6543`` (each side holds a value token
    the other lacks) and ``negation`` (the negation words differ). They name the change whether or not
    the guards are on.

>>> decide("Dana's staging database port is 5432", "Dana's staging database port is 6543")
FactMatch(kind='updated', rule='ratio', score=0.9722222222222222, change='value 5432 -> 6543')
>>> decide("Dana's staging database port is 5432", "Dana's staging database port is 5432.").kind
'restated'
>>> decide("Dana's staging database port is 5432", "Dana's staging database port is 6543",
...        guards="value,negation") is None
True
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from memdedup._rules import DEDUP_SIMILARITY_THRESHOLD, DEDUP_SUBSUME_MIN_CHARS
from memdedup.batch import match_reason
from memdedup.dedup import normalise_label
from memdedup.guards import Guards, as_guards, guards_allow, negation_words, value_changes

__all__ = [
    "RESTATED",
    "UPDATED",
    "FactMatch",
    "change_of",
    "decide",
    "facts_match",
    "kind_of",
    "same_fact",
]

RESTATED = "restated"
UPDATED = "updated"


@dataclass(frozen=True)
class FactMatch:
    """An incoming statement is the same fact as a current text: ``kind`` (:data:`RESTATED` or
    :data:`UPDATED`), the contract's ``rule`` (``"ratio"`` or ``"containment"``), the exact ``score``
    (the normalised texts' ratio, current first) and ``change`` (:func:`change_of`, ``""`` for none)."""

    kind: str
    rule: str
    score: float
    change: str = ""

    @property
    def reason(self) -> str:
        """``ratio 0.972; value 5432 -> 6543``, ``containment (ratio 0.640)``: the rule, the score, the
        change."""
        why = f"ratio {self.score:.3f}" if self.rule == "ratio" else f"{self.rule} (ratio {self.score:.3f})"
        return f"{why}; {self.change}" if self.change else why


def same_fact(
    current: str,
    incoming: str,
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    guards: Guards | str | Iterable[str] | None = None,
) -> tuple[str, float] | None:
    """``(rule, score)`` when ``incoming`` is the same fact as ``current`` (the contract, ``current`` the
    stored side, then the guards when given), else None."""
    parsed = as_guards(guards)
    found = match_reason(current, incoming, threshold=threshold, min_chars=min_chars)
    if found is None or (parsed and not guards_allow(current, incoming, parsed)):
        return None
    return found


def kind_of(current: str, incoming: str) -> str:
    """:data:`RESTATED` when the normalised ``incoming`` equals or occurs in the normalised ``current``,
    else :data:`UPDATED` (for two statements already known to be the same fact)."""
    terse = normalise_label(incoming)
    return RESTATED if terse and terse in normalise_label(current) else UPDATED


def change_of(current: str, incoming: str) -> str:
    """What the guard detectors see changed from ``current`` to ``incoming``: ``value A -> B`` when each
    side holds a value token the other lacks, ``negation`` when their negation words differ, both joined
    by ``"; "``, or ``""``."""
    parts = []
    old, new = value_changes(current, incoming)
    if old and new:
        parts.append(f"value {', '.join(dict.fromkeys(old))} -> {', '.join(dict.fromkeys(new))}")
    if negation_words(current) != negation_words(incoming):
        parts.append("negation")
    return "; ".join(parts)


def decide(
    current: str,
    incoming: str,
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    guards: Guards | str | Iterable[str] | None = None,
) -> FactMatch | None:
    """The rule in one call: None when ``incoming`` is another fact than ``current``; else whether it
    restates or updates it, why, and what changed."""
    found = same_fact(current, incoming, threshold=threshold, min_chars=min_chars, guards=guards)
    if found is None:
        return None
    return facts_match(current, incoming, *found)


def facts_match(current: str, incoming: str, rule: str, score: float) -> FactMatch:
    """The :class:`FactMatch` of two statements the contract already matched by ``rule`` with ``score``
    (for callers that decided the contract in a batch)."""
    kind = kind_of(current, incoming)
    return FactMatch(kind, rule, score, change_of(current, incoming) if kind == UPDATED else "")
