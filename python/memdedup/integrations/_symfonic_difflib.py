"""The ``difflib`` that symfonic-core's engine imports from inside its retract-by-label path while
memdedup is installed into symfonic-core.

``SymfonicAgent._retract_memory`` runs ``from difflib import SequenceMatcher`` at call time, inside the
function. :func:`memdedup.integrations.symfonic.install` points that one import statement at this module
(the function's code object names this module instead of ``difflib``; nothing else in the process
changes), and :func:`~memdedup.integrations.symfonic.uninstall` points it back. ``SequenceMatcher`` here
is :class:`memdedup.difflib.SequenceMatcher` (or what the installer's ``instrument`` made of it); every
other name is the standard module's.
"""

from __future__ import annotations

import difflib as _difflib
from typing import Any

from memdedup.difflib import SequenceMatcher as _SequenceMatcher

#: Set by :func:`memdedup.integrations.symfonic.install`.
SequenceMatcher: Any = _SequenceMatcher


def __getattr__(name: str) -> Any:
    return getattr(_difflib, name)
