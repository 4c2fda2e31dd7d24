"""One query against many choices in rapidfuzz's ``process`` shapes: ``cdist``, ``extract`` and
``extractOne``, with exact difflib ratios on the 0-1 scale (see :mod:`memdedup.batch`)."""

from __future__ import annotations

import decimal
import math
import numbers
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from memdedup._backend import impl as _impl
from memdedup.errors import InputTypeError, InvalidInputError
from memdedup.missing import is_missing, labels_and_mask


def _check_cutoff(score_cutoff: float | None) -> float:
    """rapidfuzz's ``score_cutoff`` on memdedup's 0-1 scale: None is 0; above 1, below 0 or NaN is an
    error that names the scale."""
    if score_cutoff is None:
        return 0.0
    if isinstance(score_cutoff, bool) or not isinstance(score_cutoff, (numbers.Real, decimal.Decimal)):
        raise InputTypeError(f"score_cutoff must be a number, not {type(score_cutoff).__name__}")
    value = float(score_cutoff)
    if math.isnan(value) or not 0 <= score_cutoff <= 1:
        hint = f" ({value:g} on rapidfuzz's 0-100 scale is {value / 100:g} here)" if 1 < value <= 100 else ""
        raise InvalidInputError(
            f"score_cutoff must lie in [0, 1]: memdedup's scores are difflib ratios on a 0-1 scale, "
            f"not 0-100{hint}; got {score_cutoff!r}"
        )
    return score_cutoff  # as given: the core compares a Fraction or a Decimal exactly


# The core's cap on one call's threads (rust/batch.rs, MAX_WORKERS): a typo such as 10**9 is refused.
MAX_WORKERS = 1024


def _check_workers(workers: int) -> int:
    """rapidfuzz's ``workers``: -1 for every core, else 1 or more."""
    if isinstance(workers, bool) or not isinstance(workers, numbers.Integral):
        raise InputTypeError(f"workers must be an integer, not {type(workers).__name__}")
    if workers != -1 and workers < 1:
        raise InvalidInputError(f"workers must be -1 (every core) or 1 or more, not {workers}")
    if workers > MAX_WORKERS:
        raise InvalidInputError(
            f"workers must be at most {MAX_WORKERS} threads (-1: every core), not {workers}"
        )
    return int(workers)


def _check_limit(limit: int | None) -> int | None:
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, numbers.Integral):
        raise InputTypeError(f"limit must be an integer or None, not {type(limit).__name__}")
    if limit < 0:
        raise InvalidInputError(f"limit must be 0 or more (None: every choice), not {limit}")
    return int(limit)


def _choices(choices: Any) -> tuple[list[Hashable], list[Any]]:
    """``(keys, values)`` of the choices that are not missing: a mapping's keys, a pandas Series's index,
    else the positions (missing choices are skipped, as rapidfuzz skips them)."""
    if isinstance(choices, Mapping):
        keys, values = list(choices.keys()), list(choices.values())
    elif type(choices).__module__.startswith("pandas") and hasattr(choices, "index"):
        keys, values = list(choices.index), list(choices)
    else:
        values = list(choices)
        keys = list(range(len(values)))
    _, missing = labels_and_mask(values)
    if missing is None:
        return keys, values
    present = np.flatnonzero(~missing).tolist()
    return [keys[k] for k in present], [values[k] for k in present]


def cdist(
    queries: Sequence[Any],
    choices: Sequence[Any],
    *,
    score_cutoff: float | None = None,
    normalise: bool = False,
    autojunk: bool = True,
    workers: int = 1,
) -> np.ndarray:
    """The matrix of exact difflib ratios ``ratio(queries[i], choices[j])`` (float64, shape
    ``(len(queries), len(choices))``), as rapidfuzz's ``process.cdist`` lays it out.

    ``score_cutoff`` (default None: keep every score; on the 0-1 scale): scores below it are 0.0, and a
    cell whose length bound or bit-parallel LCS bound (both ``>=`` the ratio) is already below it never
    gets its exact ratio computed. ``normalise=True`` compares normalised labels. A row or column of a
    missing value (None, NaN, ``pd.NA``) is 0.0, as in rapidfuzz.

    ``workers`` (default 1, as rapidfuzz): 1 computes on the calling thread, -1 on every core (rayon's
    global pool; ``RAYON_NUM_THREADS`` sizes it), N (at most 1024) on a pool of N threads built for the
    call; 0 and other negatives are refused. The result never depends on it. The GIL is released
    while the core computes, and Ctrl-C stops it.
    """
    cutoff = _check_cutoff(score_cutoff)
    workers = _check_workers(workers)
    queries, missing_queries = labels_and_mask(queries)
    choices, missing_choices = labels_and_mask(choices)
    # A bytearray filled in place: numpy views it writable, without a copy.
    raw = _impl.cdist(
        queries, choices, autojunk=autojunk, cutoff=cutoff, normalise=normalise, workers=workers
    )
    scores = np.frombuffer(raw, dtype=np.float64).reshape(len(queries), len(choices))
    if missing_queries is not None:
        scores[missing_queries, :] = 0.0
    if missing_choices is not None:
        scores[:, missing_choices] = 0.0
    return scores


def extract(
    query: Any,
    choices: Sequence[Any] | Mapping[Hashable, Any],
    *,
    score_cutoff: float | None = None,
    limit: int | None = 5,
    normalise: bool = False,
    workers: int = 1,
) -> list[tuple[Any, float, Hashable]]:
    """The best ``limit`` (default 5; None: all) choices by exact ratio ``ratio(query, choice)``, as
    rapidfuzz's ``process.extract``: ``(choice, score, key)`` tuples (key: the index, a mapping's key or
    a pandas Series's index label, e.g. a memory id), best first, ties in input order, scores at least
    ``score_cutoff`` (default None: any, on the 0-1 scale). Missing choices are skipped; a missing
    query gives ``[]``. ``workers`` as in :func:`cdist`."""
    cutoff = _check_cutoff(score_cutoff)
    limit = _check_limit(limit)
    workers = _check_workers(workers)
    keys, values = _choices(choices)
    if is_missing(query) or limit == 0:
        return []
    scores = cdist([query], values, score_cutoff=cutoff, normalise=normalise, workers=workers)[0]
    # cdist zeroes every score below a positive cutoff (compared exactly, whatever its number type),
    # so what remains above zero is what reaches it.
    kept = np.arange(len(values)) if cutoff == 0 else np.flatnonzero(scores > 0.0)
    order = kept[np.argsort(-scores[kept], kind="stable")]
    if limit is not None:
        order = order[:limit]
    return [(values[k], float(scores[k]), keys[k]) for k in order.tolist()]


def extractOne(
    query: Any,
    choices: Sequence[Any] | Mapping[Hashable, Any],
    *,
    score_cutoff: float | None = None,
    normalise: bool = False,
    workers: int = 1,
) -> tuple[Any, float, Hashable] | None:
    """The best choice as ``(choice, score, key)``, or None when no choice reaches ``score_cutoff``
    (default None: any, on the 0-1 scale), as rapidfuzz's ``process.extractOne`` (see :func:`extract`;
    the first of equal best scores)."""
    best = extract(query, choices, score_cutoff=score_cutoff, limit=1, normalise=normalise, workers=workers)
    return best[0] if best else None
