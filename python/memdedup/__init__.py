"""memdedup: exact, fast write and recall hygiene for LLM-agent memory.

``normalise_label``, ``labels_match`` and ``ratio`` give, for every ``str``, exactly the answers of the
pure-Python contract (``str`` methods and :mod:`difflib`), computed by a Rust core.
"""

from __future__ import annotations

from memdedup._backend import IMPLEMENTATION
from memdedup._backend import impl as _impl
from memdedup.batch import match_reason
from memdedup.dedup import labels_match_ext as labels_match
from memdedup.dedup import normalise_label
from memdedup.errors import BackendUnavailableError, InputTypeError, InvalidInputError, MemdedupError

ratio = _impl.ratio
quick_ratio = _impl.quick_ratio
real_quick_ratio = _impl.real_quick_ratio
matching_blocks = _impl.matching_blocks

__version__ = "0.1.0"

__all__ = [
    "IMPLEMENTATION",
    "BackendUnavailableError",
    "InputTypeError",
    "InvalidInputError",
    "MemdedupError",
    "labels_match",
    "match_reason",
    "matching_blocks",
    "normalise_label",
    "quick_ratio",
    "ratio",
    "real_quick_ratio",
]
