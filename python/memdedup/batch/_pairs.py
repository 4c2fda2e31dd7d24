"""Pair decisions: why one label restates another, the first candidate that matches, and many pairs at
once (see :mod:`memdedup.batch`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from memdedup._backend import impl as _impl
from memdedup._rules import DEDUP_SIMILARITY_THRESHOLD, DEDUP_SUBSUME_MIN_CHARS
from memdedup._rules import comparable as _comparable
from memdedup.errors import InvalidInputError
from memdedup.missing import as_labels, is_missing


def match_reason(
    stored: Any,
    incoming: Any,
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
) -> tuple[str, float] | None:
    """Why ``incoming`` restates ``stored`` under the match contract, or None when it does not.

    ``("ratio", score)`` when the normalised labels' difflib ratio (stored first) is at least
    ``threshold`` (default 0.85); else ``("containment", score)`` when the shorter normalised label has
    at least ``min_chars`` (default 16) characters and occurs in the longer; ``score`` is the exact
    ratio either way. A missing or empty label matches nothing (None). The same decision as
    :func:`memdedup.labels_match`, with its reason::

        >>> match_reason("Prefers dark mode", "prefers dark mode in every editor")
        ('containment', 0.68)
    """
    _comparable(threshold, min_chars)
    if is_missing(stored) or is_missing(incoming):
        return None
    found = _impl.match_reason(stored, incoming, threshold=threshold, min_chars=min_chars)
    return None if found is None else (str(found[0]), float(found[1]))


def match_first(
    incoming: Any,
    candidates: Iterable[Any],
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
) -> int | None:
    """Index of the first candidate that ``labels_match(candidate, incoming)`` accepts, or None (the
    write-time path: the incoming label is prepared once and the candidates decided in one call).
    Defaults: ``threshold=0.85``, ``min_chars=16``. A missing incoming label matches nothing; a missing
    candidate is never matched."""
    _comparable(threshold, min_chars)
    if is_missing(incoming):
        return None
    found = _impl.match_first(incoming, as_labels(candidates), threshold=threshold, min_chars=min_chars)
    return None if found is None else int(found)


def match_pairs(
    stored: Sequence[Any],
    incoming: Sequence[Any],
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
) -> np.ndarray:
    """``labels_match(stored[k], incoming[k])`` for every k, as a numpy bool array (defaults:
    ``threshold=0.85``, ``min_chars=16``; a pair with a missing label is False).

    Reading the labels needs the GIL and deciding them does not: from 8,192 pairs the decisions start
    on the pool's other threads while this one still reads, and this one joins them, without the GIL,
    once every label is read. In the Rust core a label's ``__str__`` that shortens the lists raises
    ``IndexError``.
    """
    _comparable(threshold, min_chars)
    if len(stored) != len(incoming):
        raise InvalidInputError(f"stored has {len(stored)} labels but incoming has {len(incoming)}")
    # Lists go as they are, unscanned: even a pass over the item types touches every object (a cache
    # miss each in a large batch), +57% on 1M pairs (0.22 -> 0.35 s). A pandas Series or numpy array is
    # masked at once. A missing value inside a plain list is read as the empty label by the core itself
    # (its `missing=True`, the extended API's rule: memdedup.missing).
    decided = _impl.match_pairs(
        _pair_labels(stored), _pair_labels(incoming), threshold=threshold, min_chars=min_chars
    )

    if isinstance(decided, bytes):  # the Rust core: one 0/1 byte per pair
        return np.frombuffer(decided, dtype=bool).copy()
    return np.asarray(decided, dtype=bool)


def _pair_labels(labels: Sequence[Any]) -> list[Any]:
    if isinstance(labels, list):
        return labels
    return as_labels(labels)
