"""The rules every layer shares: the seed's constants, the argument checks, and the partition key.

A leaf: it imports the standard library, numpy and :mod:`memdedup.errors` only, so any module (the
reference, the batch layer, the index, the collapse, Dask) can take its rules from here without
importing another's private helpers, and no import circle can form through it
(``tests/test_imports.py`` checks both).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from memdedup.errors import InputTypeError, InvalidInputError

__all__ = [
    "DEDUP_PREFIX_LEN",
    "DEDUP_QUERY_LIMIT",
    "DEDUP_SIMILARITY_THRESHOLD",
    "DEDUP_SUBSUME_MIN_CHARS",
    "TERMINAL_PUNCTUATION",
    "check_min_chars",
    "check_threshold",
    "comparable",
    "partition_ids",
    "partition_key",
    "partition_token",
]

# The seed's constants (symfonic.memory.dedup): the match contract's defaults and the prefix gate.
DEDUP_SIMILARITY_THRESHOLD = 0.85
DEDUP_PREFIX_LEN = 20
DEDUP_QUERY_LIMIT = 20
DEDUP_SUBSUME_MIN_CHARS = 16
TERMINAL_PUNCTUATION = ".!?;:,"


# `threshold` (and `cdist`'s `score_cutoff`) and `min_chars` go to the backend as they were given:
# the contract compares `ratio >= threshold` and `len(shorter) >= min_chars` with whatever was
# passed, so any number Python can compare that way (an int of any size, a float, NaN, a bool, a
# Fraction, a Decimal, a numpy scalar) decides exactly as Python's `>=` does. The Rust core
# reduces each once, exactly, and refuses at once what Python cannot compare (`InputTypeError`);
# `comparable` refuses the same on the reference backend, which would otherwise fail only at the
# first comparison it reaches.
def comparable(threshold: Any, min_chars: Any = DEDUP_SUBSUME_MIN_CHARS) -> None:
    """Refuse, as the Rust core does, a threshold Python cannot compare with a float or a min_chars
    it cannot compare with an int (a comparison that raises anything else raises that). The Rust core
    checks the same itself; checking here too keeps both backends' refusals identical."""
    for name, value, left in (("threshold", threshold, 0.5), ("min_chars", min_chars, 5)):
        try:
            bool(left >= value)
        except TypeError as exc:
            raise InputTypeError(
                f"{name} must be a number Python can compare with {type(left).__name__}, "
                f"not {type(value).__name__}"
            ) from exc


def check_threshold(threshold: Any) -> Any:
    """A threshold for a whole-table run (the CLI, ``memdedup.dask``): a number in [0, 1], returned as
    given (NaN, or anything Python cannot compare with a float, is refused)."""
    try:
        in_range = bool(0.0 <= threshold <= 1.0)
    except TypeError as exc:
        raise InputTypeError(f"threshold must be a number, not {type(threshold).__name__}") from exc
    if not in_range:
        raise InvalidInputError(f"threshold must lie in [0, 1], not {threshold}")
    return threshold


def check_min_chars(min_chars: int, name: str = "min_chars") -> int:
    """``min_chars`` as an int, 0 or more (the one rule for the library and every command's
    ``--min-chars``)."""
    if isinstance(min_chars, bool) or not isinstance(min_chars, numbers.Integral):
        raise InputTypeError(f"{name} must be an integer, not {type(min_chars).__name__}")
    if min_chars < 0:
        raise InvalidInputError(f"{name} must be 0 or more, not {min_chars}")
    return int(min_chars)


def partition_key(value: Any, name: str) -> Any:
    """``value`` as a partition key that equals another only for the same kind and value (scopes and
    layers are hard partitions, compared by type and value: see :mod:`memdedup.batch`): a ``str``
    (subclasses by their plain value), a ``bool``, an integer (numpy's too), a float (every NaN alike)
    or a tuple (element by element); any other hashable by its exact type."""
    if isinstance(value, str):
        return (str, str.__str__(value))
    if isinstance(value, bool | np.bool_):
        return (bool, bool(value))
    if isinstance(value, numbers.Integral):
        return (int, int(value))
    if isinstance(value, float | np.floating):
        return (float, "nan") if math.isnan(value) else (float, float(value) + 0.0)  # -0.0 is 0.0
    if isinstance(value, tuple):
        return (tuple, tuple(partition_key(item, name) for item in value))
    try:
        hash(value)
    except TypeError:
        raise InputTypeError(
            f"{name} values must be hashable (a str, a number, a tuple ...), not {type(value).__name__}"
        ) from None
    return (type(value), value)


def partition_token(value: Any, name: str = "scope") -> str:
    """A scope or layer value as text that equals another value's exactly when the two are one
    partition: what the Dask engine shuffles by, so both engines group rows by one rule."""
    return repr(partition_key(value, name))


def _typed(column: Sequence[Hashable], name: str) -> Sequence[Any]:
    if all(type(value) is str for value in column):
        return column  # the common case: plain strs only, so no two types can meet
    return [partition_key(value, name) for value in column]


def partition_ids(n: int, scopes: Sequence[Hashable] | None, layers: Sequence[Hashable] | None) -> list[int]:
    """Each of ``n`` labels' partition as a small int, numbered in order of first occurrence: labels
    share one exactly when their scope and layer keys (:func:`partition_key`) are equal."""
    for name, column in (("scopes", scopes), ("layers", layers)):
        if column is not None and len(column) != n:
            raise InvalidInputError(f"{name} has {len(column)} entries but there are {n} labels")
    if scopes is None and layers is None:
        return [0] * n  # one partition; the loop below took ~0.4 s a million labels
    scope_keys = _typed(scopes, "scope") if scopes is not None else [None] * n
    layer_keys = _typed(layers, "layer") if layers is not None else [None] * n
    ids: dict[tuple[Any, Any], int] = {}
    return [ids.setdefault(key, len(ids)) for key in zip(scope_keys, layer_keys, strict=True)]
