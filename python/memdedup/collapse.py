"""Recall that shows each fact once, in its current form: among the recalled memories themselves, a group
of restatements renders one memory.

A recall block can hold many copies of one fact, and several versions of a fact that changed: write-time
dedup folds a statement only into a row of the same scope and layer, so an ancestor's copy, another
layer's, or rows written before dedup (or with the opt-in guards, which keep a changed value as another
fact) all come back. :func:`collapse_restatements` keeps one memory of each group of restatements and
reports every other one by id, before the block is rendered (:func:`memdedup.recall.recall` runs it by
default).

Decisions (the contract of this module):

Restates
    Two memories restate each other exactly when write-time dedup would take them for the same fact:
    ``memdedup.labels_match(stored, incoming, threshold=..., min_chars=..., guards=...)`` accepts their
    records' texts (ratio OR containment, then the opt-in guards of :mod:`memdedup.guards`), with the
    **older** memory as ``stored`` and the newer as ``incoming``, as at write time (difflib's ratio is
    not symmetric, so the direction is part of the answer). Older is lower by the ``age`` key (default:
    earlier in the items' order, the store's order, oldest first; :func:`memdedup.recall.recall` passes
    the store's statement counter, so the most recently stated row is the newest), ties by position.
    Across scopes and layers: the block is one block.

Which one stays: the nearest scope, then the newest (no chaining)
    Memories are taken nearest scope first (the ``nearness`` key, default :func:`item_nearness`: the
    number of levels of the record's owning ``scope_path``, so the user's own row comes before the
    org's, as in any configuration cascade), then newest first (``age``), then most salient first (the
    ``salience`` key, default :func:`item_salience`; it only breaks ties of ``age``), then last in the
    items' order first. Each one is dropped when it restates a memory already kept, and reported against
    the first such memory in that order; otherwise it is kept. So a kept memory is never a restatement of
    another kept memory, every dropped one restates the kept memory it names, and a dropped memory drops
    nothing: if B restates A and C restates B but not A, A and C stay. Salience ranks what fits the
    block (recall's admission), never which version of a fact is true.

Reporting
    Each dropped memory is a :class:`Restatement` (its id, the kept id, the rule that accepted,
    ``"ratio"`` or ``"containment"``, and the exact ratio of the normalised texts, stored first), and a
    ``(record_id, reason)`` pair as the window filter reports its drops, the reason being
    ``"restates <kept id> (<rule> <ratio, 3 decimals>)"``: ids, a rule name and a number, never text.
    Drops are listed, and kept items returned, in the items' own order.

Cost: the contract is decided once per pair of distinct texts, by two gate-free joins in the core (one
per direction; exact, pruned by lossless filters only), so n copies of one fact cost one text; the rule
then walks each memory's restating texts in Python.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from memdedup._rules import DEDUP_SIMILARITY_THRESHOLD, DEDUP_SUBSUME_MIN_CHARS
from memdedup._rules import comparable as _comparable
from memdedup.batch import join, match_pairs, match_reason
from memdedup.errors import InputTypeError, InvalidInputError
from memdedup.guards import Guards, as_guards, guards_allow
from memdedup.scope import SCOPE_PATH_DELIMITER

__all__ = [
    "DEFAULT_SALIENCE",
    "Collapsed",
    "Restatement",
    "check_options",
    "collapse_restatements",
    "item_nearness",
    "item_salience",
    "restated_reason",
]

#: The salience of a record that states none: the store's column default.
DEFAULT_SALIENCE = 0.5


def restated_reason(kept_id: str, rule: str, score: float) -> str:
    """The reason a dropped memory is reported with: the kept id, the rule, the ratio (3 decimals)."""
    return f"restates {kept_id} ({rule} {score:.3f})"


class Restatement(NamedTuple):
    """A dropped memory: ``record_id`` restates ``kept_id`` by ``rule`` with the exact ratio ``score``
    (the normalised texts, the older memory first)."""

    record_id: str
    kept_id: str
    rule: str
    score: float

    @property
    def reason(self) -> str:
        return restated_reason(self.kept_id, self.rule, self.score)


@dataclass(frozen=True)
class Collapsed:
    """What :func:`collapse_restatements` kept (the items, in their order) and dropped (in their order)."""

    kept: tuple[Any, ...]
    restatements: tuple[Restatement, ...]

    @property
    def dropped(self) -> tuple[tuple[str, str], ...]:
        """``(record_id, reason)`` of each dropped memory, as :class:`memdedup.window.BlockReport` lists
        its drops."""
        return tuple((r.record_id, r.reason) for r in self.restatements)


def item_salience(item: Any) -> Any:
    """A recalled item's salience: its record's ``salience``, or :data:`DEFAULT_SALIENCE` when the record
    states none."""
    value = getattr(getattr(item, "record", None), "salience", None)
    return DEFAULT_SALIENCE if value is None else value


def item_nearness(item: Any) -> int:
    """How near a recalled item's owning scope is to the recalling one: the number of levels of its
    record's ``scope_path`` (deeper is nearer: every row a recall selects is the recalling scope's or an
    ancestor's); 0 for a record that states no owner."""
    path = getattr(getattr(item, "record", None), "scope_path", None)
    return path.count(SCOPE_PATH_DELIMITER) // 2 + 1 if isinstance(path, str) and path else 0


def _salience(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputTypeError(f"a recalled item's salience must be a real number, not {type(value).__name__}")
    number = float(value)
    if math.isnan(number):
        raise InvalidInputError("a recalled item's salience must not be NaN")
    return number


def _record(item: Any) -> tuple[str, str]:
    """A recalled item's record id and text (the label write-time dedup compared)."""
    record = getattr(item, "record", None)
    record_id, text = getattr(record, "record_id", None), getattr(record, "text", None)
    if not isinstance(record_id, str) or not isinstance(text, str):
        raise InputTypeError(
            "a recalled item needs a record with a str record_id and a str text, not "
            f"{type(record_id).__name__} and {type(text).__name__}"
        )
    return record_id, text


def check_options(threshold: Any, min_chars: Any, guards: Guards | str | Iterable[str] | None) -> Guards:
    """Refuse, as ``labels_match`` does, a threshold or min_chars Python cannot compare and an unknown
    guard; return the parsed guards. Runs before anything is decided, so an empty recall refuses too."""
    _comparable(threshold, min_chars)
    return as_guards(guards)


def collapse_restatements(
    items: Iterable[Any],
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    guards: Guards | str | Iterable[str] | None = None,
    salience: Callable[[Any], Any] = item_salience,
    age: Callable[[Any], Any] | None = None,
    nearness: Callable[[Any], Any] = item_nearness,
) -> Collapsed:
    """Keep one memory of each group of restatements among ``items`` (recalled items:
    ``item.record.record_id`` and ``item.record.text``): the nearest scope's, then the newest; drop and
    report the others.

    ``items`` are oldest first unless ``age`` (a key, lower is older) says otherwise; ``nearness`` (higher
    is nearer, default :func:`item_nearness`) and ``salience`` (default :func:`item_salience`, a tie-break
    of ``age``) are keys too. ``threshold`` (0.85), ``min_chars`` (16) and ``guards`` (off) are
    ``memdedup.labels_match``'s. See the module docstring for the rule. ``items`` are not modified.
    """
    parsed = check_options(threshold, min_chars, guards)
    items = tuple(items)
    records = [_record(item) for item in items]
    labels = [text for _, text in records]
    saliences = [_salience(salience(item)) for item in items]
    near = [nearness(item) for item in items]
    n = len(items)
    keys: list[Any] = list(range(n)) if age is None else [age(item) for item in items]
    # rank: older is lower (ties by position): the direction of every pair.
    rank = [0] * n
    for r, i in enumerate(sorted(range(n), key=lambda i: (keys[i], i))):
        rank[i] = r

    restated = _Restated(labels, threshold=threshold, min_chars=min_chars)

    # Nearest first, then newest (ties of age: most salient, then last in order), each memory is dropped
    # for the first memory already kept that it restates, else kept. ``kept_of[t]``: the kept memories
    # whose text is distinct text ``t``.
    order = sorted(range(n), key=lambda i: (near[i], keys[i], saliences[i], i), reverse=True)
    position = {i: p for p, i in enumerate(order)}
    kept_of: dict[int, list[int]] = {}
    found: dict[int, Restatement] = {}
    for i in order:
        t = restated.text_of[i]
        best: int | None = None
        for u in restated.kept_neighbours(t, kept_of):
            for k in kept_of[u]:
                if best is not None and position[k] >= position[best]:
                    continue
                older, newer = (k, i) if rank[k] < rank[i] else (i, k)
                if restated.matches(restated.text_of[older], restated.text_of[newer]) and (
                    not parsed or guards_allow(labels[older], labels[newer], parsed)
                ):
                    best = k
        if best is None:
            kept_of.setdefault(t, []).append(i)
            continue
        stored, incoming = (labels[best], labels[i]) if rank[best] < rank[i] else (labels[i], labels[best])
        reason = match_reason(stored, incoming, threshold=threshold, min_chars=min_chars)
        assert reason is not None  # the contract accepted this pair a moment ago
        found[i] = Restatement(records[i][0], records[best][0], reason[0], reason[1])
    return Collapsed(
        kept=tuple(item for i, item in enumerate(items) if i not in found),
        restatements=tuple(found[i] for i in sorted(found)),
    )


class _Restated:
    """Which distinct texts restate which, exactly: ``matches(u, v)`` is ``labels_match(texts[u], texts[v])``
    (``u`` stored); two texts are neighbours when one restates the other in either direction (a text is
    its own neighbour when it matches itself)."""

    def __init__(self, labels: Sequence[str], *, threshold: Any, min_chars: Any) -> None:
        index: dict[str, int] = {}
        self.text_of = [index.setdefault(label, len(index)) for label in labels]
        texts = list(index)
        m = self._m = len(texts)
        stored, incoming = np.empty(0, np.int64), np.empty(0, np.int64)
        if m > 1:
            # join: every (a, b), a < b, with labels_match(texts[a], texts[b]), gate-free and exact; on the
            # reversed texts, the other direction.
            forward = join(texts, threshold=threshold, min_chars=min_chars)
            backward = (m - 1) - join(texts[::-1], threshold=threshold, min_chars=min_chars)
            stored = np.concatenate([forward[:, 0], backward[:, 0]])
            incoming = np.concatenate([forward[:, 1], backward[:, 1]])
        if m:
            itself = np.flatnonzero(match_pairs(texts, texts, threshold=threshold, min_chars=min_chars))
            stored, incoming = np.concatenate([stored, itself]), np.concatenate([incoming, itself])
        self._directed = set((stored * m + incoming).tolist())
        either = np.unique(np.concatenate([stored * m + incoming, incoming * m + stored]))
        self._either = set(either.tolist())
        self._rows = either // m if m else either
        self._cols = either % m if m else either
        self._neighbours: dict[int, list[int]] = {}

    def matches(self, stored: int, incoming: int) -> bool:
        return stored * self._m + incoming in self._directed

    def _neighbours_of(self, t: int) -> list[int]:
        found = self._neighbours.get(t)
        if found is None:
            lo, hi = np.searchsorted(self._rows, [t, t + 1])
            found = self._neighbours[t] = self._cols[lo:hi].tolist()
        return found

    def kept_neighbours(self, t: int, kept_of: Mapping[int, Any]) -> list[int]:
        """The neighbours of ``t`` that are keys of ``kept_of``, walking whichever of the two is smaller."""
        neighbours = self._neighbours_of(t)
        if len(kept_of) < len(neighbours):
            return [u for u in kept_of if t * self._m + u in self._either]
        return [u for u in neighbours if u in kept_of]
