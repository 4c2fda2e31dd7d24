"""Missing values are empty labels: one rule for the extended API, the file readers and pandas inputs.

``None``, ``float('nan')`` (and numpy's NaN), ``pd.NA``, ``pd.NaT`` and the missing values of a pandas
string column are the empty label ``""``: never a candidate, never looked up, reason ``"empty"`` in a
replay. They are never the label ``"nan"``.

The drop-in :mod:`memdedup.dedup` (``labels_match``, ``normalise_label``) keeps symfonic-core's exact
``str(s or "")`` instead: there ``None`` is ``""`` but a float NaN is the label ``"nan"``, as symfonic's
pure-Python functions have it (parity with symfonic is that module's contract).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = ["as_labels", "is_missing", "label_text", "labels_and_mask"]

_PANDAS_MISSING = frozenset({"NAType", "NaTType"})


def is_missing(value: Any) -> bool:
    """Whether ``value`` is a missing value (see the module docstring)."""
    if value is None:
        return True
    if isinstance(value, float | np.floating):
        return math.isnan(value)
    return type(value).__name__ in _PANDAS_MISSING and type(value).__module__.startswith("pandas")


def label_text(value: Any) -> str:
    """A label read from a file or a table cell as text: a missing value is ``""``, a ``str`` is itself
    (a subclass by its plain value), anything else its ``str()``."""
    if isinstance(value, str):
        return str.__str__(value)
    return "" if is_missing(value) else str(value)


def as_labels(labels: Iterable[Any]) -> list[Any]:
    """``labels`` as a list for the core, with every missing value replaced by ``""``.

    A pandas Series or Index and a numpy array are masked at once (``pandas.isna``, or ``numpy.isnan``
    on a float array); a list goes as it is when no item can be a float NaN or a pandas missing value
    (one pass over the item types, no copy: the core reads ``None`` as ``""`` itself); other lists are
    copied with their missing values replaced. Values that are not missing are left for the core to read
    (it takes a ``str``, or calls ``str()`` as ``labels_match`` does)."""
    if isinstance(labels, np.ndarray) or _is_pandas(labels):
        return _masked(labels)[0]
    values = labels if isinstance(labels, list) else list(labels)
    if not _may_hold_missing(set(map(type, values)), none=False):
        return values
    return ["" if is_missing(v) else v for v in values]


def labels_and_mask(labels: Iterable[Any]) -> tuple[list[Any], np.ndarray | None]:
    """:func:`as_labels` with ``None`` replaced too (for functions that take ``str`` only), and the bool
    mask of the missing values (None when there is none)."""
    if isinstance(labels, np.ndarray) or _is_pandas(labels):
        return _masked(labels)
    values = labels if isinstance(labels, list) else list(labels)
    if not _may_hold_missing(set(map(type, values)), none=True):
        return values, None
    mask = np.fromiter((is_missing(v) for v in values), dtype=bool, count=len(values))
    if not mask.any():
        return values, None
    return ["" if m else v for v, m in zip(values, mask.tolist(), strict=True)], mask


def _may_hold_missing(types: set[type], *, none: bool) -> bool:
    if types <= {str}:
        return False
    if none and type(None) in types:
        return True
    return bool(types & _MAYBE_MISSING_TYPES) or any(t.__name__ in _PANDAS_MISSING for t in types)


_MAYBE_MISSING_TYPES = frozenset({float, np.float64, np.float32, np.float16})


def _is_pandas(value: Any) -> bool:
    module = type(value).__module__
    return module.startswith("pandas") and hasattr(value, "isna") and hasattr(value, "to_numpy")


def _masked(values: Any) -> tuple[list[Any], np.ndarray | None]:
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise ValueError(f"labels must be one-dimensional, not of shape {values.shape}")
        if values.dtype.kind in "US":
            return values.astype(str).tolist(), None
        if values.dtype.kind == "f":
            mask = np.isnan(values)
            array = values.astype(object)
        else:
            array = values.astype(object)
            mask = _isna(array)
    else:
        array = values.to_numpy(dtype=object)
        mask = np.asarray(values.isna(), dtype=bool)
    if not mask.any():
        return list(array.tolist()), None
    array = array.copy()
    array[mask] = ""
    return list(array.tolist()), mask


def _isna(array: np.ndarray) -> np.ndarray:
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas comes with the dask extra
        return np.fromiter((is_missing(v) for v in array.tolist()), dtype=bool, count=len(array))
    return np.asarray(pd.isna(array), dtype=bool)
