"""Large-batch dedup: one-vs-many, pair decisions, replay of a store's writes, all-pairs join, clusters.

Every function gives, for every pair it decides, the answer :func:`memdedup.labels_match` gives (the
earlier label is the stored one). The decisions run in the Rust core without the GIL (reading the Python
labels holds it), in parallel across cores (rayon; ``RAYON_NUM_THREADS`` sizes the pool); thread counts
never change a result. Under ``MEMDEDUP_IMPLEMENTATION=python`` the same functions run on the pure-Python
reference.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from memdedup import _reference
from memdedup._backend import IMPLEMENTATION
from memdedup._backend import impl as _impl
from memdedup._reference import (
    DEDUP_PREFIX_LEN,
    DEDUP_QUERY_LIMIT,
    DEDUP_SIMILARITY_THRESHOLD,
    DEDUP_SUBSUME_MIN_CHARS,
)
from memdedup.errors import InputTypeError, InvalidInputError
from memdedup.guards import Guards, as_guards, guards_allow, replay_guarded

__all__ = [
    "ClusterResult",
    "ReplayResult",
    "cdist",
    "clusters",
    "extract",
    "join",
    "match_first",
    "match_pairs",
    "replay",
]

_RUST = IMPLEMENTATION == "rust"


# `threshold` (and `cdist`'s `score_cutoff`) and `min_chars` go to the backend as they were given:
# the contract compares `ratio >= threshold` and `len(shorter) >= min_chars` with whatever was
# passed, so any number Python can compare that way (an int of any size, a float, NaN, a bool, a
# Fraction, a Decimal, a numpy scalar) decides exactly as Python's `>=` does. The Rust core
# reduces each once, exactly, and refuses at once what Python cannot compare (`InputTypeError`);
# `_comparable` refuses the same on the reference backend, which would otherwise fail only at the
# first comparison it reaches.


def _comparable(threshold: Any, min_chars: Any = DEDUP_SUBSUME_MIN_CHARS) -> None:
    """Refuse, as the Rust core does, a threshold Python cannot compare with a float or a min_chars
    it cannot compare with an int (a comparison that raises anything else raises that)."""
    if _RUST:
        return  # the core checks them itself
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


def match_first(
    incoming: Any,
    candidates: Iterable[Any],
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
) -> int | None:
    """Index of the first candidate that ``labels_match(candidate, incoming)`` accepts (the write-time
    path: the incoming label is prepared once and the candidates decided in one call)."""
    return _impl.match_first(incoming, list(candidates), threshold=threshold, min_chars=min_chars)


def match_pairs(
    stored: Sequence[Any],
    incoming: Sequence[Any],
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
) -> np.ndarray:
    """``labels_match(stored[k], incoming[k])`` for every k, as a numpy bool array.

    Reading the labels needs the GIL and deciding them does not: from 8,192 pairs the decisions start
    on the pool's other threads while this one still reads, and this one joins them, without the GIL,
    once every label is read. In the Rust core a label's ``__str__`` that shortens the lists raises
    ``IndexError``.
    """
    _comparable(threshold, min_chars)
    if len(stored) != len(incoming):
        raise InvalidInputError(f"stored has {len(stored)} labels but incoming has {len(incoming)}")
    # Lists go as they are: copying one touches every str (a cache miss each in a large batch),
    # as many times again as the decisions' own reading of them.
    decided = _impl.match_pairs(
        _as_list(stored), _as_list(incoming), threshold=threshold, min_chars=min_chars
    )
    if isinstance(decided, bytes):  # the Rust core: one 0/1 byte per pair
        return np.frombuffer(decided, dtype=bool).copy()
    return np.asarray(decided, dtype=bool)


def _as_list(labels: Sequence[Any]) -> list[Any]:
    return labels if isinstance(labels, list) else list(labels)


def _choices(choices: Sequence[str] | Mapping[Hashable, str]) -> tuple[list[Hashable], list[str]]:
    if isinstance(choices, Mapping):
        return list(choices.keys()), list(choices.values())
    values = list(choices)
    return list(range(len(values))), values


def cdist(
    queries: Sequence[str],
    choices: Sequence[str],
    *,
    score_cutoff: float | None = None,
    normalise: bool = False,
    autojunk: bool = True,
    workers: int = -1,
) -> np.ndarray:
    """The matrix of exact difflib ratios ``ratio(queries[i], choices[j])`` (float64, shape
    ``(len(queries), len(choices))``), as rapidfuzz's ``process.cdist`` lays it out. Scores below
    ``score_cutoff`` are 0.0; a cell whose length bound or bit-parallel LCS bound (both ``>=`` the
    ratio) is already below the cutoff never gets its exact ratio computed. ``normalise=True``
    compares normalised labels.

    ``workers`` is accepted for rapidfuzz compatibility; the pool is rayon's (``RAYON_NUM_THREADS``).
    """
    del workers
    cutoff = 0.0 if score_cutoff is None else score_cutoff
    _comparable(cutoff)
    queries, choices = list(queries), list(choices)
    if _RUST:
        # A bytearray filled in place: numpy views it writable, without a copy.
        raw = _impl.cdist(queries, choices, autojunk=autojunk, cutoff=cutoff, normalise=normalise)
        return np.frombuffer(raw, dtype=np.float64).reshape(len(queries), len(choices))
    prep = _reference.normalise_label if normalise else (lambda s: s)
    out = np.zeros((len(queries), len(choices)))
    for i, q in enumerate(queries):
        for j, c in enumerate(choices):
            r = _reference.ratio(prep(q), prep(c), autojunk=autojunk)
            out[i, j] = r if r >= cutoff else 0.0
    return out


def extract(
    query: str,
    choices: Sequence[str] | Mapping[Hashable, str],
    *,
    score_cutoff: float | None = None,
    limit: int | None = 5,
    normalise: bool = False,
) -> list[tuple[str, float, Hashable]]:
    """The best ``limit`` choices by exact ratio ``ratio(query, choice)``, as ``(choice, score, key)``
    (key: the index, or the mapping's key, e.g. a memory id), best first, ties in input order."""
    keys, values = _choices(choices)
    scores = cdist([query], values, score_cutoff=score_cutoff, normalise=normalise)[0].tolist()
    # Compared as Python compares a float with the cutoff (exactly, for a Fraction or a Decimal).
    cutoff = 0.0 if score_cutoff is None else score_cutoff
    order = sorted(
        (k for k in range(len(values)) if scores[k] >= cutoff and (score_cutoff is None or scores[k] > 0)),
        key=lambda k: -scores[k],
    )
    if limit is not None:
        order = order[:limit]
    return [(values[k], float(scores[k]), keys[k]) for k in order]


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
        return self.canonical != np.arange(len(self.canonical))


def _partitions(n: int, scopes: Sequence[Hashable] | None, layers: Sequence[Hashable] | None) -> list[int]:
    for name, column in (("scopes", scopes), ("layers", layers)):
        if column is not None and len(column) != n:
            raise InvalidInputError(f"{name} has {len(column)} entries but there are {n} labels")
    if scopes is None and layers is None:
        return [0] * n  # one partition; the loop below took ~0.4 s a million labels
    ids: dict[tuple[Hashable, Hashable], int] = {}
    out = []
    for k in range(n):
        key = (scopes[k] if scopes is not None else None, layers[k] if layers is not None else None)
        out.append(ids.setdefault(key, len(ids)))
    return out


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
    too (it collapses more; it is not the seed's behaviour).

    An empty label (``""``, ``None``, whitespace only) is never looked up and never a candidate: the
    seed returns before querying. It stays its own canonical with reason ``"empty"``.

    ``guards`` (off by default): a candidate must also pass :func:`memdedup.guards.guards_allow`. A
    guarded replay runs in Python (:func:`memdedup.guards.replay_guarded`), several times slower.
    """
    _comparable(threshold, min_chars)
    if prefix_len < 0 or query_limit < 0:
        raise InvalidInputError("prefix_len and query_limit must not be negative")
    labels = list(labels)
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


def join(
    labels: Sequence[Any],
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    scopes: Sequence[Hashable] | None = None,
    guards: Guards | str | None = None,
) -> np.ndarray:
    """Every pair ``(i, j)``, ``i < j``, in the same scope, with ``labels_match(labels[i], labels[j])``
    and no prefix gate: exactly what brute force returns, as an ``(n_pairs, 2)`` int64 array sorted by
    ``(i, j)``. ``guards`` (off by default) drops the pairs :func:`memdedup.guards.guards_allow` blocks."""
    _comparable(threshold, min_chars)
    labels = list(labels)
    parts = _partitions(len(labels), scopes, None)
    groups: dict[int, list[int]] = {}
    for k, part in enumerate(parts):
        groups.setdefault(part, []).append(k)
    found_arrays = []
    for members in groups.values():
        sub = [labels[k] for k in members]
        if _RUST and hasattr(_impl, "join"):
            # The core's answer: native-endian u32 pairs, sorted, as bytes (no object per pair).
            raw = _impl.join(sub, threshold=threshold, min_chars=min_chars)
            found = np.frombuffer(raw, dtype=np.uint32)
        else:
            pairs_found = _reference.join(sub, threshold=threshold, min_chars=min_chars)
            found = np.asarray(pairs_found, dtype=np.uint32)
        found = found.reshape(-1, 2).astype(np.int64)
        found_arrays.append(np.asarray(members, dtype=np.int64)[found] if len(groups) > 1 else found)
    pairs = np.concatenate(found_arrays) if found_arrays else np.empty((0, 2), dtype=np.int64)
    if guards is not None and as_guards(guards) and len(pairs):
        allowed = [guards_allow(labels[i], labels[j], as_guards(guards)) for i, j in pairs.tolist()]
        pairs = pairs[np.asarray(allowed, dtype=bool)]
    if len(groups) > 1:
        pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
    return pairs.reshape(-1, 2)


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
    pairs: np.ndarray | Sequence[tuple[int, int]] | None = None,
    *,
    mode: str = "canonical",
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    scopes: Sequence[Hashable] | None = None,
    guards: Guards | str | None = None,
) -> ClusterResult:
    """Clusters from the matching pairs (computed by :func:`join` when not given).

    ``mode="canonical"``: in order, each label joins the earliest earlier canonical it matches, else
    becomes one; every member matches its canonical directly (no chains). ``mode="components"``:
    single linkage, canonical = the smallest index. Warning: single linkage chains, so A ~ B and
    B ~ C put A and C together even when A and C do not match at all; a long chain can merge
    unrelated facts. Prefer ``canonical`` unless you want that.
    """
    labels = list(labels)
    if pairs is None:
        pairs = join(labels, threshold=threshold, min_chars=min_chars, scopes=scopes, guards=guards)
    pair_list = [(int(i), int(j)) for i, j in np.asarray(pairs, dtype=np.int64).reshape(-1, 2)]
    canonical, via = _impl.clusters(len(labels), pair_list, mode=mode)
    collapsed = [(v, j) for j, v in enumerate(via) if v is not None]
    reason = ["new"] * len(labels)
    score = np.full(len(labels), np.nan)
    if collapsed:
        if _RUST:
            reasons, scores = _impl.pair_reasons(labels, collapsed, threshold=threshold, min_chars=min_chars)
        else:
            decided = [
                _reference.match_reason(labels[i], labels[j], threshold=threshold, min_chars=min_chars)
                for i, j in collapsed
            ]
            reasons = [d[0] if d else None for d in decided]
            scores = [d[1] if d else float("nan") for d in decided]
        for (_, j), r, s in zip(collapsed, reasons, scores, strict=True):
            reason[j] = r or "unmatched"
            score[j] = s
    return ClusterResult(np.asarray(canonical, dtype=np.int64), list(via), reason, score)


# ---------------------------------------------------------------------------------------------------
# Files: the front of `memdedup dedup`
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LabelTable:
    """Labels read from a file, with their scope and layer when the file has those columns."""

    labels: list[str]
    scopes: list[str] | None = None
    layers: list[str] | None = None


def read_label_table(
    path: str,
    *,
    label_column: str = "label",
    scope_column: str | None = "scope",
    layer_column: str | None = "layer",
    progress: Any = None,
) -> LabelTable:
    """Read labels from text (one per line), JSONL (objects with a label field) or CSV (a header row).

    The format follows the extension (``.jsonl``/``.ndjson``, ``.csv``, ``.gz`` on any of them);
    anything else is text. A scope or layer column is used when present; a label column that is
    missing from a JSONL object or CSV header is an error naming the line, never a silent skip.
    """
    import csv
    import gzip
    import io
    from pathlib import Path

    p = Path(path)
    suffixes = [s.lower() for s in p.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    kind = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}.get(
        suffixes[-1] if suffixes else "", "text"
    )
    try:
        raw = gzip.open(p, "rb").read() if p.suffix.lower() == ".gz" else p.read_bytes()
    except OSError as exc:
        raise InvalidInputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    text = raw.decode("utf-8", errors="surrogateescape")
    labels: list[str] = []
    scopes: list[str] = []
    layers: list[str] = []
    has_scope = has_layer = False
    if kind == "text":
        return LabelTable(_lines(text))
    if kind == "csv":
        reader = csv.DictReader(io.StringIO(text, newline=""))
        header = reader.fieldnames or []
        if label_column not in header:
            raise InvalidInputError(
                f"{path}: the CSV header has no {label_column!r} column (it has {header})"
            )
        has_scope = scope_column is not None and scope_column in header
        has_layer = layer_column is not None and layer_column in header
        rows: Iterable[dict[str, Any]] = reader
    else:
        rows_list = []
        for number, line in enumerate(_lines(text), 1):
            row = parse_jsonl_row(line, label_column, f"{path}:{number}")
            if row is not None:
                rows_list.append(row)
        has_scope = scope_column is not None and any(scope_column in r for r in rows_list)
        has_layer = layer_column is not None and any(layer_column in r for r in rows_list)
        rows = rows_list
    for row in rows:
        label = row.get(label_column)
        labels.append("" if label is None else str(label))
        if has_scope:
            scopes.append(_column_text(row.get(scope_column)))
        if has_layer:
            layers.append(_column_text(row.get(layer_column)))
        if progress is not None:
            progress(1)
    return LabelTable(labels, scopes if has_scope else None, layers if has_layer else None)


def parse_jsonl_row(line: str, label_column: str, where: str) -> dict[str, Any] | None:
    """One JSONL line as an object holding ``label_column``; None for a blank line; an error naming
    ``where`` for anything else (shared by both engines of ``memdedup dedup``)."""
    import json

    if not line.strip():
        return None
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{where}: not JSON ({exc.msg})") from exc
    if not isinstance(row, dict) or label_column not in row:
        raise InvalidInputError(f"{where}: no {label_column!r} field")
    return row


def _lines(text: str) -> list[str]:
    """Lines as Python's universal newlines read them (``\n``, ``\r\n``, ``\r``), and only those:
    ``str.splitlines`` would also split at U+2028, ``\x85`` and the other separators a label or a JSON
    string may hold. (Dask's ``read_text`` reads files the same way, so both engines see one input.)"""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _column_text(value: Any) -> str:
    import json

    if value is None or isinstance(value, str):
        return value or ""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


@dataclass(frozen=True)
class DedupRun:
    """The outcome of a file-level dedup: per label, its canonical index, reason and score."""

    table: LabelTable
    mode: str
    canonical: np.ndarray
    reason: list[str]
    score: np.ndarray
    seconds: float

    def records(self) -> Iterable[dict[str, Any]]:
        for k, label in enumerate(self.table.labels):
            score = float(self.score[k])
            yield {
                "index": k,
                "label": label,
                "canonical": int(self.canonical[k]),
                "reason": self.reason[k],
                "score": None if math.isnan(score) else score,
            }

    def summary(self) -> dict[str, Any]:
        from collections import Counter

        n = len(self.table.labels)
        collapsed = int(np.count_nonzero(self.canonical != np.arange(n)))
        return {
            "labels": n,
            "canonicals": n - collapsed,
            "collapsed": collapsed,
            "by_reason": dict(Counter(self.reason)),
            "seconds": round(self.seconds, 3),
            "mode": self.mode,
        }


def dedup_table(
    table: LabelTable,
    *,
    mode: str = "replay",
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    prefix: str = "raw",
    cluster: str = "canonical",
) -> DedupRun:
    """Dedup a whole table: ``replay`` (the write-time decisions, in order) or ``join`` (every matching
    pair, no prefix gate, then clusters)."""
    import time

    threshold = _check_threshold(threshold)
    start = time.perf_counter()
    if mode == "replay":
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
        scopes = table.scopes
        if table.layers is not None:
            # (scope, layer) pairs: tuples, so no separator can make two partitions collide.
            scopes = list(zip(scopes or [None] * len(table.labels), table.layers, strict=True))
        c = clusters(table.labels, mode=cluster, threshold=threshold, min_chars=min_chars, scopes=scopes)
        canonical, reason, score = c.canonical, c.reason, c.score
    else:
        raise InvalidInputError(f"mode must be 'replay' or 'join', not {mode!r}")
    return DedupRun(table, mode, canonical, reason, score, time.perf_counter() - start)
