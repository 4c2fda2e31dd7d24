"""The shared strategies (tests/strategies.py) really draw what the parity tests rely on: every Unicode
general category, and labels with the awkward placements (else those tests would prove little). It checks
the test data, not a backend, so it runs once, in the extended profile (each search draws up to 5,000
examples)."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest
from hypothesis import settings
from strategies import (
    EVERY_CATEGORY_CHAR,
    FORMAT_CHARS,
    GENERAL_CATEGORIES,
    LOWER_LONGER,
    long_labels,
    placed_labels,
)


@pytest.mark.slow
def test_strategies_draw_every_category_and_place() -> None:
    import unicodedata

    from hypothesis import find as unseeded_find

    def find(strategy: Any, condition: Any) -> Any:
        # Seeded, with room to search: whether an example is found must not depend on luck.
        seeded = random.Random(0)
        return unseeded_find(strategy, condition, settings=settings(max_examples=5000), random=seeded)

    for cat in GENERAL_CATEGORIES:
        c = find(EVERY_CATEGORY_CHAR, lambda c, cat=cat: unicodedata.category(c) == cat)
        assert unicodedata.category(c) == cat
    find(placed_labels(), lambda s: s[:1] == "\ufeff" and any("\ud800" <= c <= "\udfff" for c in s))
    find(placed_labels(), lambda s: s and s[-1] in FORMAT_CHARS)
    find(placed_labels(), lambda s: any(a.isspace() and b == "\u200b" for a, b in itertools.pairwise(s)))
    find(placed_labels(), lambda s: len(s) > 3 and max(map(ord, s)) < 128 and "\x1c" in s)
    find(placed_labels(), lambda s: len(s) > 3 and 128 <= max(map(ord, s)) < 256 and "\x85" in s)
    find(placed_labels(), lambda s: max(map(ord, s), default=0) > 0xFFFF)
    find(long_labels(), lambda s: len(s) >= 200)
    assert LOWER_LONGER == "İ"
