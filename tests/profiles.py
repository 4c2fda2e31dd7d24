"""The default test profile samples the heaviest probes; the extended one (``-m slow``) runs the rest.

A parametrized probe whose every case spawns a process (an attack, a Ctrl-C, a command run on a hostile
file) keeps a few cases in the default profile, so every class is still exercised there, and marks the
others ``slow`` (docs/development.md). Which cases stay is fixed, never drawn at random.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pytest

SLOW = pytest.mark.slow


def sampled(values: Iterable[Any], keep: Iterable[Any] | int = 1) -> list[Any]:
    """``values`` as parameters: those in ``keep`` (or, for an int, the first ``keep`` and then every
    len/keep-th, spread over the list) in the default profile, the others marked slow."""
    values = list(values)
    if isinstance(keep, int):
        step = max(1, len(values) // max(1, keep))
        kept = {repr(v) for v in values[::step][:keep]}
    else:
        kept = {repr(v) for v in keep}
        missing = kept - {repr(v) for v in values}
        assert not missing, f"kept cases that are not cases: {sorted(missing)}"
    return [v if repr(v) in kept else pytest.param(v, marks=SLOW) for v in values]


def diagonal(rows: Sequence[Any], columns: Sequence[Any]) -> list[Any]:
    """Every ``(row, column)`` pair as a parameter; the default profile keeps one pair per row and per
    column (row k with column k mod len(columns), and so on), the rest marked slow."""
    width = max(len(rows), len(columns))
    kept = {(k % len(rows), k % len(columns)) for k in range(width)}
    return [
        (row, col) if (i, j) in kept else pytest.param(row, col, marks=SLOW)
        for i, row in enumerate(rows)
        for j, col in enumerate(columns)
    ]
