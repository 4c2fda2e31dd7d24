"""memdedup's interpreter-startup hook for symfonic-core (no ``.pth`` file involved).

Python imports the first ``sitecustomize`` on ``sys.path`` when it starts. With this folder first on
``PYTHONPATH`` (``memdedup-symfonic run COMMAND`` puts it there) and ``MEMDEDUP_INSTALL_SYMFONIC=1``,
every Python process of that environment calls
:func:`memdedup.integrations.symfonic.install_from_environment` at startup, then runs the
``sitecustomize`` this one shadows (the next one on ``sys.path``), if there is one.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys


def _run_shadowed_sitecustomize() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


def _install() -> None:
    if os.environ.get("MEMDEDUP_INSTALL_SYMFONIC", "").strip() in ("", "0"):
        return
    try:
        from memdedup.integrations.symfonic import install_from_environment

        install_from_environment()  # a refusal is a warning there
    except Exception as exc:  # memdedup itself cannot be imported: say so, start anyway
        reason = f"{type(exc).__name__}: {exc}"
        print(f"MEMDEDUP_INSTALL_SYMFONIC: memdedup not installed: {reason}", file=sys.stderr)


try:
    _install()
finally:
    _run_shadowed_sitecustomize()
