"""One decision, written plainly: the prefix gate, then the match contract, then the guards, for one
pair (the oracle the vectorised paths are held to)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from memdedup._backend import impl as _impl
from memdedup._rules import DEDUP_PREFIX_LEN, DEDUP_SIMILARITY_THRESHOLD, DEDUP_SUBSUME_MIN_CHARS
from memdedup.errors import InvalidInputError
from memdedup.guards import Guards, as_guards

PREFIX_MODES = ("raw", "normalised", "none")


@dataclass(frozen=True)
class Setting:
    """One configuration of the write-time decision."""

    threshold: float = DEDUP_SIMILARITY_THRESHOLD
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS
    prefix: str = "raw"
    guards: Guards = field(default_factory=Guards)
    prefix_len: int = DEDUP_PREFIX_LEN

    def __post_init__(self) -> None:
        object.__setattr__(self, "prefix", _check_prefix(self.prefix))
        object.__setattr__(self, "guards", as_guards(self.guards))
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, int | float):
            raise InvalidInputError(f"threshold must be a number, not {self.threshold!r}")
        if math.isnan(self.threshold):
            raise InvalidInputError("threshold must not be NaN")
        object.__setattr__(self, "threshold", float(self.threshold))

    def to_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "min_chars": self.min_chars,
            "prefix": self.prefix,
            "guards": str(self.guards),
            "prefix_len": self.prefix_len,
        }


def _check_prefix(prefix: str) -> str:
    if prefix == "normalized":
        return "normalised"
    if prefix not in PREFIX_MODES:
        raise InvalidInputError(f"prefix must be one of {', '.join(PREFIX_MODES)}, not {prefix!r}")
    return prefix


def gate_passes(stored: Any, incoming: Any, prefix: str = "raw", prefix_len: int = DEDUP_PREFIX_LEN) -> bool:
    """Whether the write-time candidate fetch would return ``stored`` for ``incoming`` (see the module
    docstring). An incoming label that is blank (raw) or normalises to nothing (normalised) fetches
    nothing."""
    prefix = _check_prefix(prefix)
    if prefix == "none":
        return True
    if prefix == "raw":
        key, other = str(incoming or "").strip(), str(stored or "").strip()
    else:
        key, other = _impl.normalise_label(incoming), _impl.normalise_label(stored)
    return bool(key) and other.startswith(key[:prefix_len])


def decide(
    stored: Any,
    incoming: Any,
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    prefix: str = "raw",
    guards: Guards | str | None = None,
    prefix_len: int = DEDUP_PREFIX_LEN,
) -> bool:
    """Does ``incoming`` collapse into ``stored`` at write time: the gate, then ``labels_match`` with
    the guards."""
    if not gate_passes(stored, incoming, prefix, prefix_len):
        return False
    return bool(
        _impl.labels_match(
            stored, incoming, threshold=threshold, min_chars=min_chars, guards=as_guards(guards)
        )
    )
