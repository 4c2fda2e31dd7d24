"""A whole table: what ``memdedup dedup`` runs (a replay, or a join and its clusters) and its outcome,
row by row (see :mod:`memdedup.batch`)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from memdedup._rules import (
    DEDUP_SIMILARITY_THRESHOLD,
    DEDUP_SUBSUME_MIN_CHARS,
    check_min_chars,
    check_threshold,
    partition_key,
)
from memdedup.batch._clusters import clusters
from memdedup.batch._components import COMPONENT_COLUMNS, Components
from memdedup.batch._components import describe as describe_components
from memdedup.batch._replay import replay
from memdedup.errors import InvalidInputError
from memdedup.progress import Progress
from memdedup.tables import LabelTable

_NO_PROGRESS = Progress()

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
    #: ``mode="join"`` with components: the label each row matched (:mod:`memdedup.batch._components`).
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
        components run adds :data:`memdedup.batch._components.COMPONENT_COLUMNS` (the reason and score are
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
    return len({partition_key(v, "scope") for v in column})


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

    threshold = check_threshold(threshold)
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
