"""Chooses the implementation: the Rust extension when it loads, else the pure-Python reference.

``MEMDEDUP_IMPLEMENTATION=rust`` makes a missing or broken extension an error;
``MEMDEDUP_IMPLEMENTATION=python`` runs everything on :mod:`memdedup._reference`. Unset (or ``auto``),
the extension is used when it imports and the reference otherwise, with a warning.
"""

from __future__ import annotations

import os
import warnings
from types import ModuleType

from memdedup.errors import BackendUnavailableError

_REQUESTED = os.environ.get("MEMDEDUP_IMPLEMENTATION", "auto").strip().lower() or "auto"
if _REQUESTED not in {"auto", "rust", "python"}:
    raise BackendUnavailableError(
        f"MEMDEDUP_IMPLEMENTATION must be 'rust', 'python' or 'auto', not {_REQUESTED!r}"
    )


def _load() -> tuple[str, ModuleType]:
    if _REQUESTED == "python":
        from memdedup import _reference

        return "python", _reference
    try:
        from memdedup import _core
    except ImportError as exc:
        if _REQUESTED == "rust":
            raise BackendUnavailableError(
                f"MEMDEDUP_IMPLEMENTATION=rust but the compiled extension memdedup._core did not load: {exc}"
            ) from exc
        warnings.warn(
            f"memdedup: the compiled extension did not load ({exc}); using the pure-Python reference",
            RuntimeWarning,
            stacklevel=3,
        )
        from memdedup import _reference

        return "python", _reference
    return "rust", _core


IMPLEMENTATION, impl = _load()
REQUESTED = _REQUESTED
"""What ``MEMDEDUP_IMPLEMENTATION`` asked for (``auto``, ``rust`` or ``python``): this module is the one
reader of the variable; a module that picks a twin of its own (the credential detector) asks here."""


def has_feature(name: str) -> bool:
    """Whether the compiled core loads and exports ``name`` (an extension built before a function
    existed lacks it): what a module with a pure-Python twin checks before it uses the core's."""
    try:
        from memdedup import _core
    except ImportError:
        return False
    return hasattr(_core, name)
