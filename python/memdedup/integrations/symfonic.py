"""memdedup inside symfonic-core: one line at startup rebinds every name that computes the dedup contract
or a difflib ratio to memdedup's exact, faster equivalent.

symfonic-core binds its names when its modules are imported (``from symfonic.memory.dedup import
find_canonical_node`` in ``agent/engine.py``, ``from difflib import SequenceMatcher`` at module level in
three modules and inside one function), so installing memdedup alone changes nothing there. ::

    import memdedup.integrations.symfonic
    memdedup.integrations.symfonic.install()      # once, at startup: before or after symfonic is imported

What :func:`install` rebinds in symfonic-core 9.12.0 (:func:`installed` lists the ``(module, name)``
pairs actually rebound):

========================================================  =============================================
``symfonic.memory.dedup.labels_match``                    :func:`memdedup.dedup.labels_match`
``symfonic.memory.dedup.normalise_label``                 :func:`memdedup.dedup.normalise_label`
``symfonic.memory.dedup.find_canonical_node``             :func:`find_canonical_node` (below)
``symfonic.memory.dedup.SequenceMatcher``                 :class:`memdedup.difflib.SequenceMatcher`
``symfonic.agent.engine.find_canonical_node``             :func:`find_canonical_node` (below)
``symfonic.agent.engine.SymfonicAgent._retract_memory``   its ``from difflib import SequenceMatcher``
                                                          imports memdedup's class (see below)
``symfonic.core.learning.phases_semantic_merge``          ``normalise_label``, ``SequenceMatcher``
``symfonic.core.learning._phases_entity_helpers``         ``SequenceMatcher``
``symfonic.memory.janitor``                               ``SequenceMatcher``; ``_similarity`` by
                                                          :func:`similarity` (``memdedup.ratio`` on the
                                                          lower-cased texts)
========================================================  =============================================

``symfonic.tools.learning`` imports ``find_canonical_node`` and ``normalise_label`` inside a function, from
the dedup module, at call time: it gets memdedup's through the dedup module's rebound names.

Every replacement gives symfonic's answer for every input (the tests and ``scripts/symfonic-suite.py``,
which runs symfonic's own test suite with every swapped call shadow-compared, check it):
``find_canonical_node`` here is memdedup's lookup with symfonic's exact signature, logging a swallowed
lookup failure at DEBUG on symfonic's ``symfonic.memory.dedup`` logger (the one an adopter filters on);
:func:`similarity` lower-cases both texts exactly as symfonic's ``_similarity`` does (``a.lower()``, then
``b.lower()``, whatever those methods are) and answers with ``memdedup.ratio`` when both results are
exact ``str`` (bit-identical to difflib's ratio), else with :class:`memdedup.difflib.SequenceMatcher`
(itself exact for any sequence).

**Modules imported before or after.** Modules already imported are rebound at once. For the others a
finder on ``sys.meta_path`` wraps their loader: right after symfonic's module body has run, still inside
the import, the names are rebound, so no thread ever sees the module unpatched. The function-local
``from difflib import SequenceMatcher`` in ``SymfonicAgent._retract_memory`` is redirected without
touching :mod:`difflib` for the rest of the process: the function's code object gets a copy whose import
statement names :mod:`memdedup.integrations._symfonic_difflib` instead of ``difflib`` (checked
instruction by instruction first: that name is used by that one import and nothing else).

**Refusals.** :func:`install` raises :class:`SymfonicVersionError` (a :class:`memdedup.MemdedupError`) and
rebinds nothing when symfonic-core is missing, is not a version in :data:`SUPPORTED_VERSIONS`, or when a
target does not have the shape memdedup proved its replacement against: each replaced function must have
the known signature and the known source text (a SHA-256 of its ``def`` block, read from the imported
module, or from the installed distribution's file for a module not imported yet); each rebound
``SequenceMatcher`` must be the standard class; each alias must be the dedup module's function. A module
imported later whose shape differs after all (a different copy on ``sys.path``) is left unpatched with a
:class:`SymfonicIntegrationWarning`, never an error inside the adopter's import.

:func:`uninstall` restores every original object (and the engine function's original code object)
exactly, and removes the finder. Both are idempotent and thread-safe; :func:`enabled` is the context
manager.

**Processes the adopter does not start in code** (``symfonic`` CLI, a server started by a process
manager, workers): symfonic-core loads no entry points, and memdedup ships no ``.pth`` file, so the hook
is Python's own ``sitecustomize`` import at interpreter startup. ``memdedup-symfonic run COMMAND ...``
(or ``python -m memdedup.integrations.symfonic run ...``) runs ``COMMAND`` with
``MEMDEDUP_INSTALL_SYMFONIC=1`` and memdedup's bootstrap folder first on ``PYTHONPATH``; its
``sitecustomize`` calls :func:`install_from_environment` in that process and in every Python child that
inherits the environment, then runs the ``sitecustomize`` it shadows, if any. The same by hand:
``PYTHONPATH="$(memdedup-symfonic pythonpath):$PYTHONPATH" MEMDEDUP_INSTALL_SYMFONIC=1 COMMAND``. A
refusal there is a warning on stderr and the process runs on symfonic's own functions.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memdedup.integrations._symfonic_patching import (
    _MISSING,
    Instrument,
    _activate,
    _deactivate,
    _resolve,
    _settle_imports,
    _state,
)
from memdedup.integrations._symfonic_patching import _check_live as _check_live
from memdedup.integrations._symfonic_patching import _import_site as _import_site
from memdedup.integrations._symfonic_targets import (
    _LOCAL_IMPORT,
    SUPPORTED_VERSIONS,
    SymfonicIntegrationError,
    SymfonicIntegrationWarning,
    SymfonicVersionError,
    find_canonical_node,
    similarity,
)
from memdedup.integrations._symfonic_targets import _TARGETS_BY_VERSION as _TARGETS_BY_VERSION
from memdedup.integrations._symfonic_targets import _Target as _Target

if TYPE_CHECKING:  # symfonic's annotations, as symfonic writes them
    pass

__all__ = [
    "ENV_VAR",
    "SUPPORTED_VERSIONS",
    "SymfonicIntegrationError",
    "SymfonicIntegrationWarning",
    "SymfonicVersionError",
    "enabled",
    "find_canonical_node",
    "install",
    "install_from_environment",
    "installed",
    "similarity",
    "uninstall",
]

# The public names report this module as their home (what the docs, pickles and reprs name).
for _public in (
    find_canonical_node,
    similarity,
    SymfonicIntegrationError,
    SymfonicVersionError,
    SymfonicIntegrationWarning,
):
    _public.__module__ = __name__

#: Set to ``1`` (anything but empty or ``0``) to install at interpreter startup (see the module doc).
ENV_VAR = "MEMDEDUP_INSTALL_SYMFONIC"
#: The folder whose ``sitecustomize`` honours :data:`ENV_VAR`; put it first on ``PYTHONPATH``.
BOOTSTRAP_DIR = str(Path(__file__).resolve().parent / "bootstrap")


def install(*, instrument: Instrument | None = None) -> list[tuple[str, str]]:
    """Rebind symfonic-core's dedup and difflib-ratio names to memdedup's (see the module doc); return
    :func:`installed`. Idempotent and thread-safe.

    ``instrument(key, original, replacement)``, if given, returns the object actually bound for each
    target (``key`` is ``"module.name"``, ``original`` symfonic's object, ``replacement`` memdedup's):
    for counting calls or shadow-comparing answers, as :mod:`memdedup.integrations.symfonic_shadow`
    does. Installing again with another ``instrument`` needs :func:`uninstall` first.

    Raises :class:`SymfonicVersionError`, rebinding nothing, for a symfonic-core memdedup does not know.
    """
    _settle_imports()
    with _state.lock:
        if _state.active:
            if instrument is not None and instrument is not _state.instrument:
                raise SymfonicIntegrationError(
                    "memdedup is installed into symfonic-core with another instrument: uninstall() first"
                )
        else:
            _activate(instrument)
        _state.explicit = True
        return installed()


def uninstall() -> None:
    """Restore every object :func:`install` replaced (a name someone else rebound since is left alone)
    and stop rebinding modules imported later. Idempotent and thread-safe."""
    with _state.lock:
        _deactivate()


def installed() -> list[tuple[str, str]]:
    """The ``(module, name)`` pairs memdedup has rebound and that are still memdedup's."""
    with _state.lock:
        out = []
        for target in _state.targets:
            module = sys.modules.get(target.module)
            bound = _state.bound.get(target.key, _MISSING)
            if module is None or bound is _MISSING:
                continue
            current = _resolve(module, target.name)
            if target.kind == _LOCAL_IMPORT:
                current = getattr(current, "__code__", _MISSING)
            if current is bound:
                out.append(target.reported)
        return out


@contextlib.contextmanager
def enabled(*, instrument: Instrument | None = None) -> Iterator[list[tuple[str, str]]]:
    """``with enabled(): ...``: installed inside the block. Leaving the last such block uninstalls,
    unless :func:`install` was called (then it stays); :func:`uninstall` inside a block uninstalls."""
    _settle_imports()
    with _state.lock:
        if not _state.active:
            _activate(instrument)
        elif instrument is not None and instrument is not _state.instrument:
            raise SymfonicIntegrationError(
                "memdedup is installed into symfonic-core with another instrument: uninstall() first"
            )
        _state.holds += 1
        generation = _state.generation
        pairs = installed()
    try:
        yield pairs
    finally:
        with _state.lock:
            if _state.active and _state.generation == generation:
                _state.holds -= 1
                if _state.holds == 0 and not _state.explicit:
                    _deactivate()


def install_from_environment(environ: dict[str, str] | None = None) -> bool:
    """Install when :data:`ENV_VAR` is set (to anything but empty or ``0``); True when installed. A
    refusal is a warning (the process then runs on symfonic's own functions), never an error."""
    value = (os.environ if environ is None else environ).get(ENV_VAR, "").strip()
    if value in ("", "0"):
        return False
    try:
        install()
    except SymfonicIntegrationError as exc:
        warnings.warn(f"{ENV_VAR}={value}: {exc}", SymfonicIntegrationWarning, stacklevel=2)
        return False
    return True


def main(argv: Sequence[str] | None = None) -> int:
    """``memdedup-symfonic``: ``run COMMAND [ARGS...]`` (COMMAND with memdedup installed into every Python
    process it starts), ``pythonpath`` (the bootstrap folder to put first on ``PYTHONPATH``), ``check``
    (install here, print what was rebound or why not; exit 2 on a refusal)."""
    args = list(sys.argv[1:] if argv is None else argv)
    usage = "usage: memdedup-symfonic {run COMMAND [ARGS...] | pythonpath | check}"
    if not args or args[0] in ("-h", "--help"):
        print(usage)
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command == "pythonpath":
        print(BOOTSTRAP_DIR)
        return 0
    if command == "check":
        try:
            pairs = install()
        except SymfonicIntegrationError as exc:
            print(f"memdedup-symfonic: {exc}", file=sys.stderr)
            return 2
        pending = sorted({t.module for t in _state.targets} - {m for m, _ in pairs})
        for module, name in pairs:
            print(f"rebound {module}.{name}")
        for module in pending:
            print(f"pending {module} (rebound when imported)")
        uninstall()
        return 0
    if command == "run":
        if rest[:1] == ["--"]:
            rest = rest[1:]
        if not rest:
            print(usage, file=sys.stderr)
            return 2
        env = dict(os.environ)
        env[ENV_VAR] = env.get(ENV_VAR) or "1"
        env["PYTHONPATH"] = os.pathsep.join(p for p in (BOOTSTRAP_DIR, env.get("PYTHONPATH", "")) if p)
        try:
            os.execvpe(rest[0], rest, env)
        except OSError as exc:
            print(f"memdedup-symfonic: cannot run {rest[0]!r}: {exc.strerror}", file=sys.stderr)
            return 2
    print(usage, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
