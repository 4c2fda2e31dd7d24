"""Drop-in replacement for ``symfonic.memory.dedup``: same names, same signatures, same answers.

The match contract (a stored and an incoming label restate the same fact when, both normalised, the
difflib ratio with the stored label first is at least ``threshold``, or the shorter label has at least
``DEDUP_SUBSUME_MIN_CHARS`` characters and is a substring of the longer) is decided by the Rust core
(:mod:`memdedup._core`) with bounds that can only skip work, never change an answer.
"""

from __future__ import annotations

import logging
from typing import Any

from memdedup._backend import impl as _impl
from memdedup._reference import (
    DEDUP_PREFIX_LEN,
    DEDUP_QUERY_LIMIT,
    DEDUP_SIMILARITY_THRESHOLD,
    DEDUP_SUBSUME_MIN_CHARS,
)
from memdedup._reference import find_canonical_node as _sequential_find_canonical_node
from memdedup._reference import labels_match as _reference_labels_match
from memdedup.guards import Guards, as_guards, guards_allow
from memdedup.scope import stored_scope_path

__all__ = [
    "DEDUP_PREFIX_LEN",
    "DEDUP_QUERY_LIMIT",
    "DEDUP_SIMILARITY_THRESHOLD",
    "DEDUP_SUBSUME_MIN_CHARS",
    "find_canonical_node",
    "labels_match",
    "normalise_label",
    "stored_scope_path",
]

logger = logging.getLogger("memdedup.dedup")

normalise_label = _impl.normalise_label


# One call into the backend (the core's labels_match takes the guards itself; the reference's mirrors it).
labels_match = _impl.labels_match
_labels_match = _reference_labels_match  # the plain form, which tests compare the backend's against


async def find_canonical_node(
    graph: Any,
    scope: Any,
    *,
    layer: Any,
    label: str,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    requested_id: str | None = None,
    guards: Guards | str | None = None,
) -> Any:
    """Return the existing node the write should collapse into, if any.

    Exactly the seed's lookup: candidates are the first ``DEDUP_QUERY_LIMIT`` rows of
    ``graph.query_nodes(scope, layer=layer, label_prefix=label.strip()[:DEDUP_PREFIX_LEN])``; a candidate
    whose ``id`` equals ``requested_id`` is returned as is; otherwise the first candidate that matches
    and is owned by exactly ``scope`` (its stored ``scope_path``, or ``"tenant\\x1f" + tenant_id`` for a
    legacy row, equals ``scope.scope_path``). Every error is swallowed and logged at DEBUG on
    ``memdedup.dedup``: a dedup lookup failure must never break the write it guards.

    The candidates' labels are decided in one call to the core. Nodes of an unexpected shape (a
    ``label`` that cannot be read or turned into text) send the lookup down the sequential path, which
    fails, or not, exactly where the seed's loop would.

    ``guards`` (off by default, and then the lookup is exactly the seed's): a candidate must also pass
    :func:`memdedup.guards.guards_allow` to be chosen; the requested-id short-circuit is unchanged.
    """
    guards = as_guards(guards) or None
    label = (label or "").strip()
    if not label or graph is None or not hasattr(graph, "query_nodes"):
        return None
    try:
        candidates = list(await graph.query_nodes(scope, layer=layer, label_prefix=label[:DEDUP_PREFIX_LEN]))[
            :DEDUP_QUERY_LIMIT
        ]
        if requested_id:
            for node in candidates:
                if str(getattr(node, "id", "")) == str(requested_id):
                    return node
        write_path = scope.scope_path
        try:
            labels = [getattr(node, "label", "") or "" for node in candidates]
            matched = _impl.match_mask(label, labels, threshold=threshold)
        except Exception:
            if guards is not None:
                for node in candidates:  # the seed's loop, with the guards: fails where it would
                    node_label = getattr(node, "label", "") or ""
                    if labels_match(node_label, label, threshold=threshold, guards=guards) and (
                        stored_scope_path(getattr(node, "properties", None), getattr(node, "tenant_id", ""))
                        == write_path
                    ):
                        return node
                return None
            return await _sequential_find_canonical_node(
                _FixedCandidates(candidates),
                scope,
                layer=layer,
                label=label,
                threshold=threshold,
                requested_id=None,
            )
        for k, (node, is_match) in enumerate(zip(candidates, matched, strict=True)):
            if not is_match or (guards is not None and not guards_allow(labels[k], label, guards)):
                continue
            owner = stored_scope_path(getattr(node, "properties", None), getattr(node, "tenant_id", ""))
            if owner != write_path:
                # Visible but owned by an ancestor scope: not ours to collapse into.
                continue
            return node
    except Exception:
        logger.debug("dedup: lookup failed, skipping dedup", exc_info=True)
    return None


class _FixedCandidates:
    """A graph that answers with candidates already fetched, so the sequential path re-queries nothing."""

    def __init__(self, candidates: list[Any]) -> None:
        self._candidates = candidates

    async def query_nodes(self, *_args: Any, **_kwargs: Any) -> list[Any]:
        return self._candidates
