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

import inspect
import logging
from typing import TYPE_CHECKING, Any

from memdedup import _reference
from memdedup._backend import impl as _impl
from memdedup._rules import (
    DEDUP_PREFIX_LEN,
    DEDUP_QUERY_LIMIT,
    DEDUP_SIMILARITY_THRESHOLD,
    DEDUP_SUBSUME_MIN_CHARS,
)
from memdedup.difflib import SequenceMatcher
from memdedup.errors import InputTypeError, InvalidInputError
from memdedup.guards import as_guards, guards_allow
from memdedup.scope import materialise_scope_path, stored_scope_path

if TYPE_CHECKING:
    from memdedup.guards import Guards

__all__ = [
    "DEDUP_PREFIX_LEN",
    "DEDUP_QUERY_LIMIT",
    "DEDUP_SIMILARITY_THRESHOLD",
    "DEDUP_SUBSUME_MIN_CHARS",
    "GATES",
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

GATES = ("prefix", "index")
"""The write-time candidate gates of :func:`find_canonical_node`: ``prefix`` (the seed's: the first
``DEDUP_QUERY_LIMIT`` rows sharing the stripped label's first ``DEDUP_PREFIX_LEN`` characters) and
``index`` (none: every row the write scope owns, through the graph's label index)."""


def check_gate(gate: Any) -> str:
    """``gate`` when it is one of :data:`GATES`; else an :class:`~memdedup.errors.InvalidInputError`
    (a caller's bug, raised, never swallowed as a lookup failure is)."""
    if not isinstance(gate, str) or gate not in GATES:
        from memdedup.scrub import redact

        shown = repr(redact(gate, 40)) if isinstance(gate, str) else f"a {type(gate).__name__}"
        raise InvalidInputError(f"gate must be one of {', '.join(GATES)}, not {shown}")
    return gate


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
    gate: str = "prefix",
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

    ``gate`` (memdedup's extension, keyword-only): ``"prefix"`` (the default) is the seed's lookup above,
    exactly. ``"index"`` drops the gate: the answer is the *oldest* node owned by exactly ``scope``, of
    ``layer``, not retracted, that :func:`labels_match_ext` accepts (and ``guards`` allow), however its
    label begins and however many rows come before it. Anything else is an
    :class:`~memdedup.errors.InvalidInputError` (raised: a caller's bug, not a lookup failure).

    The index gate's graph protocol (:class:`~memdedup.store.SQLiteGraphStore` with ``label_index=True``
    implements it; either method may be a coroutine):

    * ``graph.label_index(scope, layer)``: a :class:`memdedup.index.LabelIndex` holding the live nodes
      ``scope`` owns in ``layer`` (no ancestor's, no sibling's) under their ids, in store order, or None
      when the graph keeps none;
    * ``graph.owned_node(scope, node_id)``: the node ``scope`` owns under that id, or None.

    ``requested_id`` with the index gate: the live node ``scope`` owns in ``layer`` under that id is
    returned as is, whatever its label (the seed returns it only when its label shares the prefix, and
    also returns an ancestor's node of that id, which is not the write scope's to collapse into).

    A graph without ``label_index``, one that answers None, or any failure of the index lookup (an
    index out of step with the graph included) is logged at DEBUG on :data:`logger` and answered by the
    prefix gate: a lookup failure never breaks the write.
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
        gate=gate,
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
    gate: str = "prefix",
) -> Any:
    """:func:`find_canonical_node`, logging a swallowed failure on ``log`` (the one body behind both
    memdedup's function and the one installed into symfonic-core)."""
    guards = as_guards(guards) or None
    check_gate(gate)
    label = (label or "").strip()
    if not label or graph is None:
        return None
    if gate == "index":
        found = await _index_lookup(
            graph,
            scope,
            layer=layer,
            label=label,
            threshold=threshold,
            requested_id=requested_id,
            guards=guards,
            log=log,
        )
        if found is not _USE_PREFIX_GATE:
            return found
    if not hasattr(graph, "query_nodes"):
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


_USE_PREFIX_GATE = object()
"""What :func:`_index_lookup` answers when the index cannot: the prefix gate decides instead."""


async def _resolved(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


async def _index_lookup(
    graph: Any,
    scope: Any,
    *,
    layer: Any,
    label: str,
    threshold: float,
    requested_id: str | None,
    guards: Guards | None,
    log: logging.Logger,
) -> Any:
    """The index gate (see :func:`find_canonical_node`): the node, None, or :data:`_USE_PREFIX_GATE`."""
    if not callable(getattr(graph, "label_index", None)):
        log.debug("dedup: the graph keeps no label index; using the prefix gate")
        return _USE_PREFIX_GATE
    try:
        index = await _resolved(graph.label_index(scope, layer))
        if index is None:
            log.debug("dedup: the graph keeps no label index for this scope and layer; using the prefix gate")
            return _USE_PREFIX_GATE
        write_path = materialise_scope_path(scope)

        async def owned(node_id: Any) -> Any:
            node = await _resolved(graph.owned_node(scope, node_id))
            if (
                node is None
                or getattr(node, "retracted", False)
                or stored_scope_path(getattr(node, "properties", None), getattr(node, "tenant_id", ""))
                != write_path
                or getattr(node, "label", None) != index.label(node_id)
            ):
                raise LookupError("the label index is out of step with the graph")
            return node

        if requested_id and str(requested_id) in index:
            return await owned(str(requested_id))
        match = index.first_match(label, threshold=threshold, guards=guards)
        return None if match is None else await owned(match.id)
    except Exception:
        log.debug("dedup: index lookup failed; using the prefix gate", exc_info=True)
        return _USE_PREFIX_GATE
