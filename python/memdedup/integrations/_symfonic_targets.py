"""What :mod:`memdedup.integrations.symfonic` rebinds: the targets in each known symfonic-core version, the
shapes the replacements were proved against, the replacements that are not memdedup's public functions
as they are, and the errors a refusal raises."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memdedup import dedup as _dedup
from memdedup import difflib as _mdifflib
from memdedup._backend import impl as _impl
from memdedup.errors import MemdedupError

if TYPE_CHECKING:  # symfonic's annotations, as symfonic writes them
    from symfonic.memory.models.node import MemoryNode
    from symfonic.memory.types import MemoryLayer, TenantScope

#: The distribution whose modules are rebound.
DISTRIBUTION = "symfonic-core"
#: The symfonic-core versions whose shapes memdedup knows.
SUPPORTED_VERSIONS = ("9.12.0",)


_STANDARD_SEQUENCE_MATCHER = _mdifflib._STANDARD["SequenceMatcher"]


class SymfonicIntegrationError(MemdedupError, RuntimeError):
    """memdedup cannot be installed into symfonic-core as asked."""


class SymfonicVersionError(SymfonicIntegrationError):
    """symfonic-core is missing, or is a version or has a shape memdedup does not know: nothing was
    rebound."""


class SymfonicIntegrationWarning(UserWarning):
    """A symfonic-core module imported after :func:`install` did not have the known shape and was left
    as it is."""


_symfonic_dedup_logger = logging.getLogger("symfonic.memory.dedup")
_ratio = _impl.ratio


async def find_canonical_node(
    graph: Any,
    scope: TenantScope,
    *,
    layer: MemoryLayer,
    label: str,
    threshold: float = _dedup.DEDUP_SIMILARITY_THRESHOLD,
    requested_id: str | None = None,
) -> MemoryNode | None:
    """:func:`memdedup.dedup.find_canonical_node` with symfonic-core's signature exactly (no ``guards``),
    logging a swallowed lookup failure at DEBUG on symfonic's ``symfonic.memory.dedup`` logger: the
    function installed as ``symfonic.memory.dedup.find_canonical_node``."""
    found: MemoryNode | None = await _dedup._find_canonical_node(
        graph,
        scope,
        layer=layer,
        label=label,
        threshold=threshold,
        requested_id=requested_id,
        guards=None,
        log=_symfonic_dedup_logger,
    )
    return found


def similarity(a: str, b: str) -> float:
    """symfonic's ``janitor._similarity``: difflib's ratio of ``a.lower()`` and ``b.lower()``.

    Both texts are lower-cased by their own ``lower()`` in symfonic's order (``a`` first), so a ``str``
    subclass, or an object that is no ``str`` at all, sees the same calls and raises the same errors;
    two exact ``str`` results are answered by :func:`memdedup.ratio` (bit-identical to
    ``SequenceMatcher(None, a, b).ratio()``), anything else by :class:`memdedup.difflib.SequenceMatcher`.
    """
    a, b = a.lower(), b.lower()
    if type(a) is str and type(b) is str:
        score: float = _ratio(a, b)
        return score
    return _mdifflib.SequenceMatcher(None, a, b).ratio()


# --------------------------------------------------------------------------------------------------
# The targets in symfonic-core 9.12.0 and the shapes the replacements were proved against.
# --------------------------------------------------------------------------------------------------
_FUNCTION = "function"  # a function defined in the module: signature and source known
_ALIAS = "alias"  # a name bound by ``from symfonic.memory.dedup import ...``: must be that function
_CLASS = "class"  # a name bound by ``from difflib import SequenceMatcher``: must be difflib's class
_LOCAL_IMPORT = "local-import"  # a method whose body runs ``from difflib import SequenceMatcher``


@dataclass(frozen=True)
class _Target:
    module: str
    name: str
    kind: str
    signature: str | None = None
    source_sha256: str | None = None
    alias_of: str | None = None  # _ALIAS: the _FUNCTION target ("module.name") it must be

    @property
    def key(self) -> str:
        return f"{self.module}.{self.name}"

    @property
    def reported(self) -> tuple[str, str]:
        """The ``(module, name)`` pair :func:`installed` lists."""
        if self.kind == _LOCAL_IMPORT:
            return (self.module, f"{self.name}.<locals>.SequenceMatcher")
        return (self.module, self.name)


_DEDUP = "symfonic.memory.dedup"
_ENGINE = "symfonic.agent.engine"
_MERGE = "symfonic.core.learning.phases_semantic_merge"
_ENTITY = "symfonic.core.learning._phases_entity_helpers"
_JANITOR = "symfonic.memory.janitor"

_TARGETS_BY_VERSION: dict[str, tuple[_Target, ...]] = {
    "9.12.0": (
        _Target(
            _DEDUP,
            "labels_match",
            _FUNCTION,
            "(stored: 'str', incoming: 'str', *, threshold: 'float') -> 'bool'",
            "1bc1907172af5dfac12f6a296d02eb2d53a00cb5dc68d8e8cc101f5ae21d898e",
        ),
        _Target(
            _DEDUP,
            "normalise_label",
            _FUNCTION,
            "(label: 'str') -> 'str'",
            "77243d6838d4d2e49c6c9fea4b6bca55923fbfbec25c92de95ee3e981a142b0d",
        ),
        _Target(
            _DEDUP,
            "find_canonical_node",
            _FUNCTION,
            "(graph: 'Any', scope: 'TenantScope', *, layer: 'MemoryLayer', label: 'str', "
            "threshold: 'float' = 0.85, requested_id: 'str | None' = None) -> 'MemoryNode | None'",
            "31264a2c895c9ea1e68333fe8385a05ae1f7f3d74ea1b413cf396ad2be979664",
        ),
        _Target(_DEDUP, "SequenceMatcher", _CLASS),
        _Target(_ENGINE, "find_canonical_node", _ALIAS, alias_of=f"{_DEDUP}.find_canonical_node"),
        _Target(
            _ENGINE,
            "SymfonicAgent._retract_memory",
            _LOCAL_IMPORT,
            "(self, op: 'dict[str, Any]', payload: 'dict[str, Any]', op_layer: 'MemoryLayer', "
            "target: 'Any', memory_scope: 'Any') -> 'None'",
            "d87927cd7e1eb58ecff70d3a09510da97a072f28095a0d352df060c7f7f73f95",
        ),
        _Target(_MERGE, "normalise_label", _ALIAS, alias_of=f"{_DEDUP}.normalise_label"),
        _Target(_MERGE, "SequenceMatcher", _CLASS),
        _Target(_ENTITY, "SequenceMatcher", _CLASS),
        _Target(_JANITOR, "SequenceMatcher", _CLASS),
        _Target(
            _JANITOR,
            "_similarity",
            _FUNCTION,
            "(a: 'str', b: 'str') -> 'float'",
            "14e20ea11ae597c595ccf4796f3f29196366bdd5aa802d50649adc8ff71a56c7",
        ),
    ),
}


def _replacement(target: _Target) -> Any:
    """What memdedup binds for ``target`` (before any ``instrument``)."""
    if target.kind in (_CLASS, _LOCAL_IMPORT):
        return _mdifflib.SequenceMatcher
    name = target.alias_of.rsplit(".", 1)[1] if target.alias_of else target.name
    return {
        "labels_match": _dedup.labels_match,
        "normalise_label": _dedup.normalise_label,
        "find_canonical_node": find_canonical_node,
        "_similarity": similarity,
    }[name]
