"""Drop-in replacement for ``symfonic.memory.dedup``: same names, same signatures, same answers.

The match contract (a stored and an incoming label restate the same fact when, both normalised, the
difflib ratio with the stored label first is at least ``threshold``, or the shorter label has at least
``DEDUP_SUBSUME_MIN_CHARS`` characters and is a substring of the longer) is decided by the Rust core
(:mod:`memdedup._core`) with bounds that can only skip work, never change an answer.

The surface is symfonic-core 9.12.0's: ``labels_match(stored, incoming, *, threshold)`` (``threshold``
keyword-only and required), ``normalise_label``, ``find_canonical_node``, ``materialise_scope_path``,
``stored_scope_path``, ``SequenceMatcher`` (here :mod:`memdedup.difflib`'s), the ``DEDUP_*`` constants and
``logger``. memdedup's own extensions (the defaults, ``min_chars``, the opt-in ``guards``) are on
:func:`labels_match_ext`, which is also ``memdedup.labels_match``, and on ``find_canonical_node``'s
keyword-only ``guards`` (off by default). :mod:`memdedup.integrations.symfonic` installs these functions
into symfonic-core itself.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from memdedup import _reference
from memdedup._backend import impl as _impl
from memdedup._reference import (
    DEDUP_PREFIX_LEN,
    DEDUP_QUERY_LIMIT,
    DEDUP_SIMILARITY_THRESHOLD,
    DEDUP_SUBSUME_MIN_CHARS,
)
from memdedup.difflib import SequenceMatcher
from memdedup.errors import InputTypeError
from memdedup.guards import as_guards, guards_allow
from memdedup.scope import materialise_scope_path, stored_scope_path

if TYPE_CHECKING:
    from memdedup.guards import Guards

__all__ = [
    "DEDUP_PREFIX_LEN",
    "DEDUP_QUERY_LIMIT",
    "DEDUP_SIMILARITY_THRESHOLD",
    "DEDUP_SUBSUME_MIN_CHARS",
    "SequenceMatcher",
    "find_canonical_node",
    "labels_match",
    "labels_match_ext",
    "materialise_scope_path",
    "normalise_label",
    "stored_scope_path",
]

#: Where a swallowed lookup failure is logged (at DEBUG). Installed into symfonic-core, the lookup logs
#: on symfonic's own ``symfonic.memory.dedup`` logger instead (see :mod:`memdedup.integrations.symfonic`).
logger = logging.getLogger("memdedup.dedup")

normalise_label = _impl.normalise_label


# One call into the backend: the core's labels_match takes min_chars and the guards itself, and the
# reference's mirrors it.
labels_match_ext = _impl.labels_match


def labels_match(stored: str, incoming: str, *, threshold: float) -> bool:
    """The shared same-fact criterion: fuzzy ratio OR subsumption.

    symfonic-core's signature exactly: ``threshold`` is keyword-only and required; no ``min_chars``, no
    ``guards`` (those are :func:`labels_match_ext`'s).

    A threshold the core cannot compare with a ratio (a str, None) is refused by the core up front;
    the seed compares it only when both labels are non-empty, so such a call takes the reference,
    which fails (or answers) exactly where the seed does.
    """
    try:
        matched: bool = _impl.labels_match(stored, incoming, threshold=threshold, missing=False)
    except InputTypeError:
        matched = _reference.labels_match(stored, incoming, threshold=threshold, missing=False)
    return matched


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
    legacy row, equals ``materialise_scope_path(scope)``). Every error is swallowed and logged at DEBUG on
    :data:`logger`: a dedup lookup failure must never break the write it guards.

    The candidates' labels are decided in one call to the core. Nodes of an unexpected shape (a
    ``label`` that cannot be read or turned into text) send the lookup down the seed's own loop, which
    fails, or not, exactly where the seed's would.

    ``guards`` (memdedup's extension, off by default, and then the lookup is exactly the seed's): a
    candidate must also pass :func:`memdedup.guards.guards_allow` to be chosen; the requested-id
    short-circuit is unchanged.
    """
    return await _find_canonical_node(
        graph,
        scope,
        layer=layer,
        label=label,
        threshold=threshold,
        requested_id=requested_id,
        guards=guards,
        log=logger,
    )


async def _find_canonical_node(
    graph: Any,
    scope: Any,
    *,
    layer: Any,
    label: str,
    threshold: float,
    requested_id: str | None,
    guards: Guards | str | None,
    log: logging.Logger,
) -> Any:
    """:func:`find_canonical_node`, logging a swallowed failure on ``log`` (the one body behind both
    memdedup's function and the one installed into symfonic-core)."""
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
        write_path = materialise_scope_path(scope)
        try:
            labels = [getattr(node, "label", "") or "" for node in candidates]
            matched = _impl.match_mask(label, labels, threshold=threshold, missing=False)
        except Exception:
            # The seed's loop, label by label: it fails (or not) exactly where the seed's would.
            for node in candidates:
                node_label = getattr(node, "label", "") or ""
                if not labels_match_ext(node_label, label, threshold=threshold, guards=guards):
                    continue
                owner = stored_scope_path(getattr(node, "properties", None), getattr(node, "tenant_id", ""))
                if owner != write_path:
                    continue
                return node
            return None
        for k, (node, is_match) in enumerate(zip(candidates, matched, strict=True)):
            if not is_match or (guards is not None and not guards_allow(labels[k], label, guards)):
                continue
            owner = stored_scope_path(getattr(node, "properties", None), getattr(node, "tenant_id", ""))
            if owner != write_path:
                # Visible but owned by an ancestor scope: not ours to collapse into.
                continue
            return node
    except Exception:
        log.debug("dedup: lookup failed, skipping dedup", exc_info=True)
    return None
