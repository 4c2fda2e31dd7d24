"""Large-batch dedup: one-vs-many, pair decisions, replay of a store's writes, all-pairs join, clusters.

Every function gives, for every pair it decides, the answer :func:`memdedup.labels_match` gives (the
earlier label is the stored one). The decisions run in the Rust core without the GIL (reading the Python
labels holds it), in parallel across cores (rayon; ``RAYON_NUM_THREADS`` sizes the pool); thread counts
never change a result. Under ``MEMDEDUP_IMPLEMENTATION=python`` the same functions run on the pure-Python
reference (``memdedup._backend.impl`` is either, with the same functions).

Scopes and layers are hard partitions, compared by type and value: ``1``, ``1.0``, ``True`` and ``"1"``
are four partitions (they are equal, and hash alike, in a ``dict``), tuples are compared element by
element the same way, every NaN is one partition, and an unhashable value is refused
(:class:`~memdedup.errors.InputTypeError`). In a file (:func:`read_label_table`) a JSON value keeps its
type: ``"scope": 1`` is not ``"scope": "1"``, and ``null``, ``""`` and a missing field are three
partitions. Nothing is ever merged because two values look alike.

Missing labels (``None``, NaN, ``pd.NA``, a pandas string column's missing values) are empty labels
everywhere in this module (:mod:`memdedup.missing`): never a match, reason ``"empty"`` in a replay, a
skipped choice in :func:`extract`. A pandas Series or a numpy array is masked at once, not item by item.
One exception, for speed: :func:`match_pairs` passes a plain ``list`` to the core unscanned, so a float
NaN or ``pd.NA`` inside a list is read by the core's own coercion (``str(s or "")``: NaN is ``"nan"``)
until the core treats missing values as empty itself.

The one-vs-many functions follow rapidfuzz's ``process`` conventions: ``extract``, ``extractOne`` and
``cdist`` take ``score_cutoff``, ``limit`` and ``workers``, return ``(choice, score, key)`` tuples, and
skip missing choices; but scores are difflib ratios on the 0-1 scale (rapidfuzz's are 0-100), so a
``score_cutoff`` above 1 is an error that says so.
"""

from __future__ import annotations

import decimal
import math
import numbers
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, partial
from typing import Any, Literal, overload

import numpy as np

from memdedup._backend import impl as _impl
from memdedup._reference import (
    DEDUP_PREFIX_LEN,
    DEDUP_QUERY_LIMIT,
    DEDUP_SIMILARITY_THRESHOLD,
    DEDUP_SUBSUME_MIN_CHARS,
)
from memdedup.components import COMPONENT_COLUMNS, Components
from memdedup.components import describe as describe_components
from memdedup.errors import InputTypeError, InvalidInputError
from memdedup.guards import Guards, as_guards, guards_allow, replay_guarded
from memdedup.missing import as_labels, is_missing, labels_and_mask
from memdedup.progress import Progress
from memdedup.tables import MISSING, JSONValue, LabelTable, read_label_table

_NO_PROGRESS = Progress()

__all__ = [
    "MISSING",
    "ClusterResult",
    "DedupRun",
    "JSONValue",
    "JoinGroups",
    "LabelTable",
    "ReplayResult",
    "cdist",
    "clusters",
    "dedup_table",
    "extract",
    "extractOne",
    "join",
    "match_first",
    "match_pairs",
    "match_reason",
    "read_label_table",
    "replay",
]


# `threshold` (and `cdist`'s `score_cutoff`) and `min_chars` go to the backend as they were given:
# the contract compares `ratio >= threshold` and `len(shorter) >= min_chars` with whatever was
# passed, so any number Python can compare that way (an int of any size, a float, NaN, a bool, a
# Fraction, a Decimal, a numpy scalar) decides exactly as Python's `>=` does. The Rust core
# reduces each once, exactly, and refuses at once what Python cannot compare (`InputTypeError`);
# `_comparable` refuses the same on the reference backend, which would otherwise fail only at the
# first comparison it reaches.


def _comparable(threshold: Any, min_chars: Any = DEDUP_SUBSUME_MIN_CHARS) -> None:
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


def _check_threshold(threshold: Any) -> Any:
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


@dataclass(frozen=True)
class ReplayResult:
    """Per label, in input order: the index it collapses into (itself when it is a new canonical or
    empty), why (``"new"``, ``"ratio"``, ``"containment"``, ``"empty"``), and the exact ratio of the
    collapse (NaN where nothing collapsed)."""

    canonical: np.ndarray
    reason: list[str]
    score: np.ndarray

    @property
    def collapsed(self) -> np.ndarray:
        """Per label, whether it collapsed into an earlier one."""
        return np.asarray(self.canonical != np.arange(len(self.canonical)), dtype=bool)


def _partition_key(value: Any, name: str) -> Any:
    """``value`` as a partition key that equals another only for the same kind and value (see the module
    docstring): a ``str`` (subclasses by their plain value), a ``bool``, an integer (numpy's too), a float
    (every NaN alike) or a tuple (element by element); any other hashable by its exact type."""
    if isinstance(value, str):
        return (str, str.__str__(value))
    if isinstance(value, bool | np.bool_):
        return (bool, bool(value))
    if isinstance(value, numbers.Integral):
        return (int, int(value))
    if isinstance(value, float | np.floating):
        return (float, "nan") if math.isnan(value) else (float, float(value) + 0.0)  # -0.0 is 0.0
    if isinstance(value, tuple):
        return (tuple, tuple(_partition_key(item, name) for item in value))
    try:
        hash(value)
    except TypeError:
        raise InputTypeError(
            f"{name} values must be hashable (a str, a number, a tuple ...), not {type(value).__name__}"
        ) from None
    return (type(value), value)


def partition_token(value: Any, name: str = "scope") -> str:
    """A scope or layer value as text that equals another value's exactly when the two are one
    partition (see the module docstring): what the Dask engine shuffles by, so both engines group rows
    by one rule."""
    return repr(_partition_key(value, name))


def _typed(column: Sequence[Hashable], name: str) -> Sequence[Any]:
    if all(type(value) is str for value in column):
        return column  # the common case: plain strs only, so no two types can meet
    return [_partition_key(value, name) for value in column]


def _partitions(n: int, scopes: Sequence[Hashable] | None, layers: Sequence[Hashable] | None) -> list[int]:
    for name, column in (("scopes", scopes), ("layers", layers)):
        if column is not None and len(column) != n:
            raise InvalidInputError(f"{name} has {len(column)} entries but there are {n} labels")
    if scopes is None and layers is None:
        return [0] * n  # one partition; the loop below took ~0.4 s a million labels
    scope_keys = _typed(scopes, "scope") if scopes is not None else [None] * n
    layer_keys = _typed(layers, "layer") if layers is not None else [None] * n
    ids: dict[tuple[Any, Any], int] = {}
    return [ids.setdefault(key, len(ids)) for key in zip(scope_keys, layer_keys, strict=True)]


def replay(
    labels: Sequence[Any],
    *,
    scopes: Sequence[Hashable] | None = None,
    layers: Sequence[Hashable] | None = None,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    prefix: str = "raw",
    prefix_len: int = DEDUP_PREFIX_LEN,
    query_limit: int = DEDUP_QUERY_LIMIT,
    guards: Guards | str | None = None,
) -> ReplayResult:
    """Replay writes in order, deciding each label as ``find_canonical_node`` would against a store
    that appends every new canonical (its stripped label), oldest first.

    Scope (and layer, when given) is a hard partition: nothing collapses across it. A label is
    looked up among the first ``query_limit`` canonicals of its partition whose key starts with its
    own key's first ``prefix_len`` characters, and joins the first that matches.

    ``prefix="raw"`` keys by the stripped raw label, case-sensitively: the seed's gate, so results
    equal the sequential lookups exactly. ``prefix="normalised"`` keys by the normalised label, so a
    restatement that differs only in case, spacing or trailing punctuation at its start is fetched
    too (it collapses more; it is not the seed's behaviour). ``prefix="none"`` has no gate: each label is
    looked up among every earlier canonical of its partition (an exact :class:`memdedup.index.LabelIndex`
    query), so it collapses into the oldest one it matches; ``prefix_len`` and ``query_limit`` do not apply.

    An empty label (``""``, whitespace only, or missing: ``None``, NaN, ``pd.NA``) is never looked up and
    never a candidate: the seed returns before querying. It stays its own canonical with reason
    ``"empty"``.

    Defaults: ``threshold=0.85``, ``min_chars=16``, ``prefix="raw"``, ``prefix_len=20``,
    ``query_limit=20`` (the seed's), no guards.

    ``guards`` (off by default): a candidate must also pass :func:`memdedup.guards.guards_allow`. A
    guarded replay runs in Python (:func:`memdedup.guards.replay_guarded`), several times slower.
    """
    _comparable(threshold, min_chars)
    if prefix not in ("raw", "normalised", "none"):
        raise InvalidInputError(f"prefix must be 'raw', 'normalised' or 'none', not {prefix!r}")
    if prefix_len < 0 or query_limit < 0:
        raise InvalidInputError("prefix_len and query_limit must not be negative")
    labels = as_labels(labels)
    parts = _partitions(len(labels), scopes, layers)
    replay_impl = _impl.replay
    if guards is not None and as_guards(guards):
        replay_impl = partial(replay_guarded, guards=as_guards(guards))
    canonical, reason, score = replay_impl(
        labels,
        parts,
        threshold=threshold,
        min_chars=min_chars,
        prefix=prefix,
        prefix_len=prefix_len,
        query_limit=query_limit,
    )
    return ReplayResult(
        canonical=np.asarray(canonical, dtype=np.int64),
        reason=list(reason),
        score=np.asarray(score, dtype=np.float64),
    )


@dataclass(frozen=True)
class JoinGroups:
    """The join on groups of labels identical after normalisation (``join(..., expand=False)``): what
    the pairs are, in a size a whole corpus affords. All 841,708 shared PyPI labels join into 35.5
    million pairs, 27.1 million of them between identical labels; here each label costs one group id
    and each matching pair of distinct texts one group pair.

    ``group``: each label's group (int64), numbered in order of first occurrence; a group never spans
    two scopes, and empty or missing labels have one too (in no pair). ``pairs``: the matching ordered
    group pairs ``(g, h)`` (int64, shape ``(m, 2)``, sorted): every label pair ``(i, j)``, ``i < j``,
    with ``i`` in ``g`` (stored) and ``j`` in ``h``, matches, and at least one such pair exists;
    ``(g, g)`` when ``g`` has two or more labels and they match each other. difflib's ratio depends
    on which label is stored, so ``(g, h)`` and ``(h, g)`` are decided apart. (At a threshold <= 0
    every pair of non-empty labels matches: then the group pairs are every realised pair of groups.)
    """

    group: np.ndarray
    pairs: np.ndarray

    def expand(self) -> np.ndarray:
        """Every label pair the groups stand for: exactly what :func:`join` returns for the same
        labels (an ``(n_pairs, 2)`` int64 array sorted by ``(i, j)``)."""
        raw = _impl.expand_groups(_u32_bytes(self.group), _u32_bytes(self.pairs))
        return _u32_array(raw).reshape(-1, 2).astype(np.int64)


def _u32_bytes(values: np.ndarray) -> bytes:
    """An index array as the core reads it: native-endian u32s."""
    return np.ascontiguousarray(values, dtype=np.uint32).tobytes()


def _u32_array(raw: Any) -> np.ndarray:
    """The core's native-endian u32s (bytes) or the reference's list, as a uint32 array."""
    return np.frombuffer(raw, dtype=np.uint32) if isinstance(raw, bytes) else np.asarray(raw, np.uint32)


@overload
def join(
    labels: Sequence[Any],
    *,
    threshold: float = ...,
    min_chars: int = ...,
    scopes: Sequence[Hashable] | None = ...,
    guards: Guards | str | None = ...,
    progress: Progress | None = ...,
    expand: Literal[True] = ...,
) -> np.ndarray: ...
@overload
def join(
    labels: Sequence[Any],
    *,
    threshold: float = ...,
    min_chars: int = ...,
    scopes: Sequence[Hashable] | None = ...,
    guards: Guards | str | None = ...,
    progress: Progress | None = ...,
    expand: Literal[False],
) -> JoinGroups: ...
def join(
    labels: Sequence[Any],
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    scopes: Sequence[Hashable] | None = None,
    guards: Guards | str | None = None,
    progress: Progress | None = None,
    expand: bool = True,
) -> np.ndarray | JoinGroups:
    """Every pair ``(i, j)``, ``i < j``, in the same scope, with ``labels_match(labels[i], labels[j])``
    and no prefix gate: exactly what brute force returns, as an ``(n_pairs, 2)`` int64 array sorted by
    ``(i, j)``. Defaults: ``threshold=0.85``, ``min_chars=16``, one scope, no guards (``guards`` drops
    the pairs :func:`memdedup.guards.guards_allow` blocks). A missing label is empty: in no pair.
    ``progress`` (a :class:`memdedup.progress.Progress`) shows the phase.

    ``expand=False`` returns the same join on groups of identical labels (:class:`JoinGroups`; its
    ``expand()`` gives the pairs): a label repeated k times costs one group, not k (k - 1) / 2 pairs.
    Guards decide each pair of labels apart, so they take the expanded join only."""
    _comparable(threshold, min_chars)
    if not expand and guards is not None and as_guards(guards):
        raise InvalidInputError(
            "guards decide each pair of labels on its own: join(..., expand=False) takes no guards"
        )
    labels = as_labels(labels)
    parts = _partitions(len(labels), scopes, None)
    groups: dict[int, list[int]] = {}
    for k, part in enumerate(parts):
        groups.setdefault(part, []).append(k)
    if not expand:
        return _join_groups(labels, list(groups.values()), threshold, min_chars, progress)
    found_arrays = []
    shown = progress if progress is not None else _NO_PROGRESS
    # One long core call per scope: a spinner for one scope, a bar over the labels for many.
    with (
        shown.spinner("join") if len(groups) <= 1 else shown.bar("join", len(labels), unit=" labels")
    ) as advance:
        for members in groups.values():
            sub = [labels[k] for k in members]
            # The core answers with native-endian u32 pairs as bytes (no object per pair); the reference
            # with a list of pairs.
            raw = _impl.join(sub, threshold=threshold, min_chars=min_chars)
            found = _u32_array(raw).reshape(-1, 2).astype(np.int64)
            found_arrays.append(np.asarray(members, dtype=np.int64)[found] if len(groups) > 1 else found)
            if advance is not None:
                advance(len(members))
    pairs = np.concatenate(found_arrays) if found_arrays else np.empty((0, 2), dtype=np.int64)
    if guards is not None and as_guards(guards) and len(pairs):
        allowed = [guards_allow(labels[i], labels[j], as_guards(guards)) for i, j in pairs.tolist()]
        pairs = pairs[np.asarray(allowed, dtype=bool)]
    if len(groups) > 1:
        pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
    return pairs.reshape(-1, 2)


def _join_groups(
    labels: list[Any],
    partitions: list[list[int]],
    threshold: float,
    min_chars: int,
    progress: Progress | None,
) -> JoinGroups:
    """:func:`join` on groups, one core call per partition; group ids offset per partition, then
    renumbered in order of first occurrence over all labels."""
    n = len(labels)
    group = np.zeros(n, dtype=np.int64)
    pair_arrays = []
    ngroups = 0
    shown = progress if progress is not None else _NO_PROGRESS
    with shown.spinner("join") if len(partitions) <= 1 else shown.bar("join", n, unit=" labels") as advance:
        for members in partitions:
            sub = labels if len(partitions) == 1 else [labels[k] for k in members]
            of, found = _impl.join_groups(sub, threshold=threshold, min_chars=min_chars)
            local = _u32_array(of).astype(np.int64)
            group[members] = local + ngroups
            pair_arrays.append(_u32_array(found).reshape(-1, 2).astype(np.int64) + ngroups)
            ngroups += int(local.max()) + 1 if len(local) else 0
            if advance is not None:
                advance(len(members))
    pairs = np.concatenate(pair_arrays) if pair_arrays else np.empty((0, 2), dtype=np.int64)
    if len(partitions) > 1:
        _, firsts = np.unique(group, return_index=True)
        rank = np.empty(ngroups, dtype=np.int64)
        rank[np.argsort(firsts, kind="stable")] = np.arange(ngroups)
        group = rank[group]
        pairs = rank[pairs]
        pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
    return JoinGroups(group, pairs.reshape(-1, 2))


@dataclass(frozen=True)
class ClusterResult:
    """Per label: its canonical index, and for each collapse the reason (``"ratio"``/``"containment"``,
    ``"new"`` for canonicals) and exact ratio against the label that justified it (``via``)."""

    canonical: np.ndarray
    via: list[int | None]
    reason: list[str]
    score: np.ndarray


def clusters(
    labels: Sequence[Any],
    pairs: np.ndarray | Sequence[tuple[int, int]] | JoinGroups | None = None,
    *,
    mode: str = "canonical",
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    scopes: Sequence[Hashable] | None = None,
    guards: Guards | str | None = None,
    progress: Progress | None = None,
) -> ClusterResult:
    """Clusters from the matching pairs (computed by :func:`join` when not given).

    Without ``pairs`` (and without guards, which decide label pairs) the clusters come from the join on
    groups of identical labels (``join(..., expand=False)``): duplicates settle by their group and no
    label pair is made, with the same answer (rust/cluster.rs proves the canonical mode's rule on
    groups). Its memory grows with the labels and the pairs of distinct labels, not with the pairs of
    duplicates, and its time is the join's (docs/perf.md has the figures on the whole corpus). ``pairs``
    may be that join already made (a :class:`JoinGroups` of these labels, e.g. from
    :func:`memdedup.dask.split_join`): the clusters come from it the same way.

    ``mode="canonical"`` (the default): in order, each label joins the earliest earlier canonical it
    matches, else becomes one; every member matches its canonical directly (no chains).
    ``mode="components"``: single linkage, canonical = the smallest index. Warning: single linkage
    chains, so A ~ B and B ~ C put A and C together even when A and C do not match at all; a long chain
    can merge unrelated facts. Prefer ``canonical`` unless you want that.

    Every collapsed label has the pair that put it in its cluster (``via``: the label it matched,
    earlier when there is one, else later) with that pair's reason and exact ratio; a canonical has
    reason ``"new"`` (``"empty"`` for a blank or missing label, which matches nothing), no ``via`` and
    a NaN score. Defaults: ``threshold=0.85``, ``min_chars=16``.
    """
    if mode not in ("canonical", "components"):
        raise InvalidInputError(f"mode must be 'canonical' or 'components', not {mode!r}")
    _comparable(threshold, min_chars)
    labels = as_labels(labels)
    shown = progress if progress is not None else _NO_PROGRESS
    group: np.ndarray | None = None
    if isinstance(pairs, JoinGroups):
        if len(pairs.group) != len(labels):
            raise InvalidInputError(f"the join has {len(pairs.group)} labels but there are {len(labels)}")
        group, group_pairs = pairs.group, pairs.pairs
    elif pairs is None and not (guards is not None and as_guards(guards)):
        # From the join on groups: duplicates settle by their group, and no label pair is made.
        joined = join(
            labels,
            threshold=threshold,
            min_chars=min_chars,
            scopes=scopes,
            progress=progress,
            expand=False,
        )
        group, group_pairs = joined.group, joined.pairs
    elif pairs is None:
        pairs = join(
            labels, threshold=threshold, min_chars=min_chars, scopes=scopes, guards=guards, progress=progress
        )
    with shown.spinner("cluster"):
        if group is not None:
            canonical, via = _impl.group_clusters(_u32_bytes(group), _u32_bytes(group_pairs), mode=mode)
            via = list(via)
        else:
            pair_array = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
            pair_list = [(int(i), int(j)) for i, j in pair_array.tolist()]
            canonical, via = _impl.clusters(len(labels), pair_list, mode=mode)
            via = list(via)
            # A member linked into its component only through later labels has no earlier partner: its
            # link is the smallest label it matched at all.
            unlinked = [j for j, c in enumerate(canonical) if c != j and via[j] is None]
            if unlinked:
                for j, partner in _smallest_partners(pair_array, unlinked).items():
                    via[j] = partner
        reason, score = _reasons(labels, via, group, threshold, min_chars)
    return ClusterResult(np.asarray(canonical, dtype=np.int64), via, reason, score)


def _reasons(
    labels: list[Any], via: list[int | None], group: np.ndarray | None, threshold: Any, min_chars: Any
) -> tuple[list[str], np.ndarray]:
    """Each label's reason and score: of the pair ``(via, label)`` (the earlier one stored) when it
    collapsed, else ``"new"`` (``"empty"`` for a blank or missing label, which matches nothing) and NaN.

    With ``group`` (labels identical after normalisation share one), each pair of groups is decided
    once: the decision depends on the two normalised texts alone."""
    reason = ["empty" if not _text_of(label).strip() else "new" for label in labels]
    score = np.full(len(labels), np.nan)
    collapsed = np.asarray([j for j, v in enumerate(via) if v is not None], dtype=np.int64)
    if not len(collapsed):
        return reason, score
    partners = np.asarray([via[j] for j in collapsed.tolist()], dtype=np.int64)
    stored, incoming = np.minimum(partners, collapsed), np.maximum(partners, collapsed)
    if group is None:
        picked, back = np.arange(len(collapsed)), np.arange(len(collapsed))
        sub, at_stored, at_incoming = labels, stored, incoming
    else:
        keys = group[stored].astype(np.uint64) * np.uint64(len(labels)) + group[incoming].astype(np.uint64)
        _, picked, back = np.unique(keys, return_index=True, return_inverse=True)
        needed = np.unique(np.concatenate([stored[picked], incoming[picked]]))
        sub = [labels[k] for k in needed.tolist()]
        at_stored = np.searchsorted(needed, stored)
        at_incoming = np.searchsorted(needed, incoming)
    ordered = list(zip(at_stored[picked].tolist(), at_incoming[picked].tolist(), strict=True))
    reasons, scores = _impl.pair_reasons(sub, ordered, threshold=threshold, min_chars=min_chars)
    decided = np.asarray(scores, dtype=np.float64)[back]
    for j, k, s in zip(collapsed.tolist(), back.tolist(), decided.tolist(), strict=True):
        reason[j] = reasons[k] or "unmatched"
        score[j] = s
    return reason, score


def _text_of(label: Any) -> str:
    """A label as the core reads it (``str(label or "")``) for the empty check."""
    return label if type(label) is str else str(label or "")


def _smallest_partners(pairs: np.ndarray, nodes: list[int]) -> dict[int, int]:
    """For each of ``nodes``, the smallest label it forms a pair with."""
    ends = np.concatenate([pairs[:, 0], pairs[:, 1]])
    partners = np.concatenate([pairs[:, 1], pairs[:, 0]])
    keep = np.isin(ends, np.asarray(nodes, dtype=np.int64))
    ends, partners = ends[keep], partners[keep]
    order = np.lexsort((partners, ends))
    ends, partners = ends[order], partners[order]
    first = np.ones(len(ends), dtype=bool)
    first[1:] = ends[1:] != ends[:-1]
    return dict(zip(ends[first].tolist(), partners[first].tolist(), strict=True))


# ---------------------------------------------------------------------------------------------------
# A whole table: what `memdedup dedup` runs
# ---------------------------------------------------------------------------------------------------
OUTPUT_COLUMNS = ("index", "label", "scope", "layer", "canonical", "canonical_label", "reason", "score")


@dataclass(frozen=True)
class DedupRun:
    """The outcome of a table's dedup: per label, its canonical index, reason and score, with the
    parameters it ran with (``parameters``) and how long the dedup took (``seconds``)."""

    table: LabelTable
    mode: str
    canonical: np.ndarray
    reason: list[str]
    score: np.ndarray
    seconds: float
    parameters: Mapping[str, Any] | None = None
    #: ``mode="join"`` with components: the label each row matched (:mod:`memdedup.components`).
    via: Sequence[int | None] | None = None

    @cached_property
    def components(self) -> Components | None:
        """What each row of a components run means (None for any other run)."""
        if self.via is None:
            return None
        params = self.parameters or {}
        return describe_components(
            self.table.labels,
            self.canonical,
            self.via,
            threshold=params.get("threshold", DEDUP_SIMILARITY_THRESHOLD),
            min_chars=params.get("min_chars", DEDUP_SUBSUME_MIN_CHARS),
        )

    def records(self) -> Iterable[dict[str, Any]]:
        """One row per label: ``index``, ``label``, ``scope`` and ``layer`` (when the table has them; a
        row without the field has none), ``canonical`` (the index it collapses into: its own when new
        or empty), ``canonical_label``, ``reason`` and ``score`` (None where nothing collapsed); a
        components run adds :data:`memdedup.components.COMPONENT_COLUMNS` (the reason and score are
        then the ``via`` pair's)."""
        labels, scopes, layers = self.table.labels, self.table.scopes, self.table.layers
        chains = self.components
        canonical = self.canonical.tolist()
        scores = self.score.tolist()
        for k, label in enumerate(labels):
            score = scores[k]
            row: dict[str, Any] = {"index": k, "label": label}
            if scopes is not None:
                row["scope"] = scopes[k]
            if layers is not None:
                row["layer"] = layers[k]
            c = canonical[k]
            row["canonical"] = c
            row["canonical_label"] = labels[c]
            row["reason"] = self.reason[k]
            row["score"] = None if math.isnan(score) else score
            if chains is not None:
                row.update(chains.row(k, labels))
            yield row

    def columns(self) -> tuple[str, ...]:
        """The columns :meth:`records` fills (scope and layer only when the table has them)."""
        return tuple(
            c
            for c in OUTPUT_COLUMNS
            if (c != "scope" or self.table.scopes is not None)
            and (c != "layer" or self.table.layers is not None)
        ) + (COMPONENT_COLUMNS if self.via is not None else ())

    def examples(self, count: int = 5) -> list[dict[str, Any]]:
        """Up to ``count`` collapses, one per reason in turn (ratio, containment, ...), as
        ``{"index", "label", "canonical", "canonical_label", "reason", "score"}``."""
        n = len(self.table.labels)
        collapsed = np.flatnonzero(self.canonical != np.arange(n)).tolist()
        by_reason: dict[str, list[int]] = {}
        for k in collapsed:
            by_reason.setdefault(self.reason[k], []).append(k)
        picked: list[int] = []
        queues = [list(v) for _, v in sorted(by_reason.items())]
        while len(picked) < count and any(queues):
            for queue in queues:
                if queue and len(picked) < count:
                    picked.append(queue.pop(0))
        labels = self.table.labels
        out = []
        for k in sorted(picked):
            c = int(self.canonical[k])
            score = float(self.score[k])
            out.append(
                {
                    "index": k,
                    "label": labels[k],
                    "canonical": c,
                    "canonical_label": labels[c],
                    "reason": self.reason[k],
                    "score": None if math.isnan(score) else score,
                    **({"via": self.via[k]} if self.via is not None else {}),
                }
            )
        return out

    def summary(self) -> dict[str, Any]:
        """Counts (labels, canonicals, collapsed, by reason), the seconds, the parameters and a few
        examples (:meth:`examples`)."""
        from collections import Counter

        n = len(self.table.labels)
        collapsed = int(np.count_nonzero(self.canonical != np.arange(n)))
        return {
            "input": self.table.source,
            "mode": self.mode,
            "parameters": dict(self.parameters or {}),
            "labels": n,
            "canonicals": n - collapsed,
            "collapsed": collapsed,
            "by_reason": dict(Counter(self.reason)),
            "scopes": _distinct(self.table.scopes),
            "layers": _distinct(self.table.layers),
            "examples": self.examples(),
            "seconds": round(self.seconds, 3),
            **({"components": self.components.summary()} if self.components is not None else {}),
        }


def _distinct(column: Sequence[Any] | None) -> int | None:
    if column is None:
        return None
    return len({_partition_key(v, "scope") for v in column})


def dedup_table(
    table: LabelTable,
    *,
    mode: str = "replay",
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    prefix: str = "raw",
    cluster: str = "canonical",
    progress: Progress | None = None,
) -> DedupRun:
    """Dedup a whole table: ``mode="replay"`` (the default: the write-time decisions, in order, with the
    ``prefix`` gate) or ``"join"`` (every matching pair, no prefix gate, then ``cluster`` clusters:
    ``"canonical"`` or ``"components"``). Defaults: ``threshold=0.85``, ``min_chars=16``,
    ``prefix="raw"``, ``cluster="canonical"``. Scope and layer are hard partitions."""
    import time

    threshold = _check_threshold(threshold)
    min_chars = check_min_chars(min_chars)
    shown = progress if progress is not None else _NO_PROGRESS
    parameters: dict[str, Any] = {"threshold": threshold, "min_chars": min_chars}
    via: Sequence[int | None] | None = None
    start = time.perf_counter()
    if mode == "replay":
        parameters["prefix"] = prefix
        with shown.spinner("replay"):
            r = replay(
                table.labels,
                scopes=table.scopes,
                layers=table.layers,
                threshold=threshold,
                min_chars=min_chars,
                prefix=prefix,
            )
        canonical, reason, score = r.canonical, r.reason, r.score
    elif mode == "join":
        parameters["cluster"] = cluster
        scopes = table.scopes
        if table.layers is not None:
            # (scope, layer) pairs: tuples, so no separator can make two partitions collide.
            scopes = list(zip(scopes or [None] * len(table.labels), table.layers, strict=True))
        c = clusters(
            table.labels,
            mode=cluster,
            threshold=threshold,
            min_chars=min_chars,
            scopes=scopes,
            progress=shown,
        )
        canonical, reason, score = c.canonical, c.reason, c.score
        via = c.via if cluster == "components" else None
    else:
        raise InvalidInputError(f"mode must be 'replay' or 'join', not {mode!r}")
    return DedupRun(table, mode, canonical, reason, score, time.perf_counter() - start, parameters, via)
