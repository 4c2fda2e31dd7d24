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
import dis
import hashlib
import importlib
import importlib.metadata
import inspect
import logging
import os
import re
import sys
import threading
import types
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from memdedup import dedup as _dedup
from memdedup import difflib as _mdifflib
from memdedup._backend import impl as _impl
from memdedup.errors import MemdedupError
from memdedup.integrations import _symfonic_difflib as _shim

if TYPE_CHECKING:  # symfonic's annotations, as symfonic writes them
    from symfonic.memory.models.node import MemoryNode
    from symfonic.memory.types import MemoryLayer, TenantScope

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

#: The distribution whose modules are rebound.
DISTRIBUTION = "symfonic-core"
#: The symfonic-core versions whose shapes memdedup knows.
SUPPORTED_VERSIONS = ("9.12.0",)
#: Set to ``1`` (anything but empty or ``0``) to install at interpreter startup (see the module doc).
ENV_VAR = "MEMDEDUP_INSTALL_SYMFONIC"
#: The folder whose ``sitecustomize`` honours :data:`ENV_VAR`; put it first on ``PYTHONPATH``.
BOOTSTRAP_DIR = str(Path(__file__).resolve().parent / "bootstrap")

_STANDARD_SEQUENCE_MATCHER = _mdifflib._STANDARD["SequenceMatcher"]


class SymfonicIntegrationError(MemdedupError, RuntimeError):
    """memdedup cannot be installed into symfonic-core as asked."""


class SymfonicVersionError(SymfonicIntegrationError):
    """symfonic-core is missing, or is a version or has a shape memdedup does not know: nothing was
    rebound."""


class SymfonicIntegrationWarning(UserWarning):
    """A symfonic-core module imported after :func:`install` did not have the known shape and was left
    as it is."""


# --------------------------------------------------------------------------------------------------
# The replacements that are not memdedup's public functions as they are.
# --------------------------------------------------------------------------------------------------
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


# --------------------------------------------------------------------------------------------------
# Shapes: signatures, source digests, the local import's instructions.
# --------------------------------------------------------------------------------------------------
def _symfonic_version() -> str:
    """The installed symfonic-core's version (:class:`SymfonicVersionError` when it is not installed)."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise SymfonicVersionError(
            f"{DISTRIBUTION} is not installed: memdedup.integrations.symfonic has nothing to install into"
        ) from None


def _digest(lines: Sequence[str], start: int) -> str:
    """SHA-256 of the ``def`` block starting at ``lines[start]`` (as :func:`inspect.getsource` cuts it)."""
    return hashlib.sha256("".join(inspect.getblock(lines[start:])).encode("utf-8")).hexdigest()


def _def_line(lines: Sequence[str], qualname: str) -> int | None:
    """The index of the ``def`` of ``qualname`` (``name`` or ``Class.name``) in a module's source lines."""
    start, indent = 0, ""
    parts = qualname.split(".")
    for depth, part in enumerate(parts):
        if depth == len(parts) - 1:
            pattern = re.compile(rf"{indent}(?:async\s+)?def\s+{re.escape(part)}\s*\(")
        else:
            pattern = re.compile(rf"{indent}class\s+{re.escape(part)}\b")
        for i in range(start, len(lines)):
            if pattern.match(lines[i]):
                start = i
                break
        else:
            return None
        indent += "    "
    return start


def _live_digest(obj: Any) -> str | None:
    """The digest of a live function's ``def`` block, read from its module's source file."""
    try:
        lines, lnum = inspect.findsource(obj)
    except (OSError, TypeError):
        return None
    return _digest(lines, lnum)


def _resolve(module: types.ModuleType, name: str) -> Any:
    obj: Any = module
    for part in name.split("."):
        obj = vars(obj).get(part, _MISSING) if isinstance(obj, type) else getattr(obj, part, _MISSING)
        if obj is _MISSING:
            return _MISSING
    return obj


_MISSING: Any = object()


def _import_site(code: types.CodeType) -> int:
    """The index in ``code.co_names`` of ``difflib`` as used by exactly one ``from difflib import
    SequenceMatcher`` and by nothing else (-1 when the code is not of that shape)."""
    uses = [
        ins for ins in dis.get_instructions(code) if ins.opcode in dis.hasname and ins.argval == "difflib"
    ]
    if len(uses) != 1 or uses[0].opname != "IMPORT_NAME":
        return -1
    instructions = list(dis.get_instructions(code))
    at = next(k for k, ins in enumerate(instructions) if ins.offset == uses[0].offset)
    following = instructions[at + 1] if at + 1 < len(instructions) else None
    if following is None or following.opname != "IMPORT_FROM" or following.argval != "SequenceMatcher":
        return -1
    if instructions[at - 1].argval != ("SequenceMatcher",) or instructions[at - 2].argval != 0:
        return -1  # a fromlist of exactly SequenceMatcher, level 0 (absolute)
    if any(isinstance(const, types.CodeType) and "difflib" in const.co_names for const in code.co_consts):
        return -1
    return code.co_names.index("difflib")


def _check_live(target: _Target, module: types.ModuleType) -> str | None:
    """Why ``target`` in the imported ``module`` is not the shape memdedup knows (None when it is)."""
    obj = _resolve(module, target.name)
    if obj is _MISSING:
        return f"{target.key} does not exist"
    if target.key in _state.bound and (
        obj is _state.bound[target.key] or getattr(obj, "__code__", None) is _state.bound[target.key]
    ):
        return None  # ours already
    if target.kind == _CLASS:
        if obj is _STANDARD_SEQUENCE_MATCHER or obj is _mdifflib.SequenceMatcher:
            return None
        return f"{target.key} is {obj!r}, not difflib.SequenceMatcher"
    if target.kind == _ALIAS:
        assert target.alias_of is not None
        if target.alias_of in _state.originals:  # the dedup module is rebound: its original or ours
            if obj is _state.originals[target.alias_of] or obj is _state.bound[target.alias_of]:
                return None
        else:
            dedup = sys.modules.get(_DEDUP)
            if dedup is not None and obj is _resolve(dedup, target.alias_of.rsplit(".", 1)[1]):
                return None
        return f"{target.key} is not {target.alias_of}"
    if not isinstance(obj, types.FunctionType):
        return f"{target.key} is {type(obj).__name__}, not a function"
    if obj.__module__ != target.module or obj.__qualname__ != target.name:
        return f"{target.key} is {obj.__module__}.{obj.__qualname__}"
    try:
        signature = str(inspect.signature(obj))
    except (TypeError, ValueError):
        signature = "?"
    if signature != target.signature:
        return f"{target.key} has the signature {signature}, not {target.signature}"
    if target.kind == _LOCAL_IMPORT:
        code = _state.originals.get(target.key, obj.__code__)
        if _import_site(code) < 0:
            return f"{target.key} does not run exactly one `from difflib import SequenceMatcher`"
    digest = _live_digest(obj)
    if digest != target.source_sha256:
        return f"{target.key}'s source is not {DISTRIBUTION} {_state.version}'s" + (
            " (no source to read)" if digest is None else ""
        )
    return None


def _check_on_disk(target: _Target) -> str | None:
    """Why ``target`` in its not-yet-imported module's file (in the installed distribution) is not the
    shape memdedup knows (None when it is). The import re-checks the live objects."""
    path = Path(
        str(
            importlib.metadata.distribution(DISTRIBUTION).locate_file(target.module.replace(".", "/") + ".py")
        )
    )
    try:
        with path.open(encoding="utf-8") as fh:  # universal newlines, as linecache reads it
            lines = fh.readlines()
    except OSError:
        return f"{target.module} has no source file at {path}"
    text = "".join(lines)
    if target.kind == _CLASS:
        if re.search(r"^from difflib import SequenceMatcher$", text, re.M):
            return None
        return f"{target.module} does not run `from difflib import SequenceMatcher`"
    if target.kind == _ALIAS:
        name = target.name
        if re.search(
            rf"^from symfonic\.memory\.dedup import (?:\([^)]*\b{name}\b[^)]*\)|[^\n]*\b{name}\b)", text, re.M
        ):
            return None
        return f"{target.module} does not import {name} from {_DEDUP}"
    start = _def_line(lines, target.name)
    if start is None:
        return f"{target.key} is not defined in {path}"
    if _digest(lines, start) != target.source_sha256:
        return f"{target.key}'s source is not {DISTRIBUTION} {_state.version}'s"
    return None


# --------------------------------------------------------------------------------------------------
# State, patching, the post-import hook.
# --------------------------------------------------------------------------------------------------
Instrument = Callable[[str, Any, Any], Any]


class _State:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.reset()

    def reset(self) -> None:
        self.active = False
        self.explicit = False
        self.holds = 0
        self.version = ""
        self.targets: tuple[_Target, ...] = ()
        self.instrument: Instrument | None = None
        self.originals: dict[str, Any] = {}  # target key -> original object (the original code object)
        self.bound: dict[str, Any] = {}  # target key -> what memdedup bound (the patched code object)
        self.finder: _Finder | None = None
        self.wrapped_loaders: dict[str, _PatchingLoader] = {}
        self.generation = getattr(self, "generation", 0) + 1


_state = _State()


def _patch(target: _Target, module: types.ModuleType) -> None:
    """Rebind ``target`` in ``module`` (shape already checked; the state lock held)."""
    obj = _resolve(module, target.name)
    if obj is _state.bound.get(target.key):
        return
    if target.kind == _LOCAL_IMPORT:
        code = obj.__code__
        if code is _state.bound.get(target.key):
            return
        original = _STANDARD_SEQUENCE_MATCHER
        replacement = _replacement(target)
        if _state.instrument is not None:
            replacement = _state.instrument(target.key, original, replacement)
        _shim.SequenceMatcher = replacement
        names = list(code.co_names)
        names[_import_site(code)] = _shim.__name__
        patched = code.replace(co_names=tuple(names))
        obj.__code__ = patched
        _state.originals[target.key] = code
        _state.bound[target.key] = patched
        return
    if target.kind == _ALIAS:
        # symfonic's own function, whether this module was imported before the dedup module was
        # rebound (obj is that original) or after (obj is the dedup module's replacement).
        assert target.alias_of is not None
        original = _state.originals[target.alias_of]
    else:
        original = obj
    replacement = _replacement(target)
    if _state.instrument is not None:
        replacement = _state.instrument(target.key, original, replacement)
    setattr(module, target.name, replacement)
    _state.originals[target.key] = original
    _state.bound[target.key] = replacement


def _unpatch(target: _Target) -> None:
    module = sys.modules.get(target.module)
    bound = _state.bound.get(target.key, _MISSING)
    if module is None or bound is _MISSING:
        return
    original = _state.originals[target.key]
    if target.kind == _LOCAL_IMPORT:
        func = _resolve(module, target.name)
        if func is not _MISSING and func.__code__ is bound:
            func.__code__ = original
        _shim.SequenceMatcher = _mdifflib.SequenceMatcher
        return
    if getattr(module, target.name, _MISSING) is bound:  # a name someone rebound since is left alone
        setattr(module, target.name, original)


def _patch_module(module: types.ModuleType) -> list[str]:
    """Check, then rebind, every target of an imported ``module``; the problems found (then nothing in
    it is rebound)."""
    targets = [t for t in _state.targets if t.module == module.__name__]
    problems = [p for t in targets if (p := _check_live(t, module)) is not None]
    problems += [
        f"{t.key}: {t.alias_of} was not rebound"
        for t in targets
        if t.kind == _ALIAS and t.alias_of not in _state.bound
    ]
    if not problems:
        for target in targets:
            _patch(target, module)
    return problems


class _PatchingLoader:
    """A target module's loader: runs it, then rebinds its names (inside the import, under its lock)."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self.loader.exec_module(module)
        _after_import(module)

    def __getattr__(self, name: str) -> Any:
        if name == "loader":  # not set yet (a copy being built): no recursion through __getattr__
            raise AttributeError(name)
        return getattr(self.loader, name)


class _Finder:
    """On ``sys.meta_path`` while installed: finds target modules with the finders after it and wraps
    their loaders."""

    def __init__(self, modules: frozenset[str]) -> None:
        self.modules = modules

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in self.modules:
            return None
        for finder in list(sys.meta_path):
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            loader = _PatchingLoader(spec.loader)
            spec.loader = cast(Any, loader)
            with _state.lock:
                _state.wrapped_loaders[fullname] = loader
        return spec

    def invalidate_caches(self) -> None:
        pass


def _after_import(module: types.ModuleType) -> None:
    with _state.lock:
        if not _state.active:
            return
        for target in _state.targets:
            # A module executed again (importlib.reload) holds fresh objects: they are the originals now.
            if target.module == module.__name__ and target.key in _state.bound:
                current = _resolve(module, target.name)
                if current is not _state.bound[target.key] and (
                    getattr(current, "__code__", None) is not _state.bound[target.key]
                ):
                    del _state.bound[target.key]
                    _state.originals.pop(target.key, None)
        problems = _patch_module(module)
    if problems:
        warnings.warn(
            f"memdedup left {module.__name__} as it is: " + "; ".join(problems),
            SymfonicIntegrationWarning,
            stacklevel=2,
        )


def _activate(instrument: Instrument | None) -> None:
    """Check everything, then rebind (the state lock held). Raises before rebinding anything."""
    version = _symfonic_version()
    if version not in _TARGETS_BY_VERSION:
        raise SymfonicVersionError(
            f"{DISTRIBUTION} {version} is not a version memdedup knows the shapes of "
            f"(it supports {', '.join(SUPPORTED_VERSIONS)}): nothing was rebound"
        )
    _state.version = version
    _state.targets = _TARGETS_BY_VERSION[version]
    problems = []
    for target in _state.targets:
        module = sys.modules.get(target.module)
        problem = _check_live(target, module) if module is not None else _check_on_disk(target)
        if problem is not None:
            problems.append(problem)
    if problems:
        _state.reset()
        raise SymfonicVersionError(
            f"{DISTRIBUTION} {version} does not have the shapes memdedup knows: "
            + "; ".join(problems)
            + ": nothing was rebound"
        )
    _state.instrument = instrument
    _state.active = True
    for name in dict.fromkeys(t.module for t in _state.targets):
        module = sys.modules.get(name)
        if module is not None:
            _patch_module(module)  # checked above: no problems
    _state.finder = _Finder(frozenset(t.module for t in _state.targets))
    sys.meta_path.insert(0, _state.finder)


def _deactivate() -> None:
    """Restore every original and remove the finder (the state lock held)."""
    if not _state.active:
        return
    if _state.finder is not None:
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(_state.finder)
    for name, loader in _state.wrapped_loaders.items():
        module = sys.modules.get(name)
        spec = getattr(module, "__spec__", None)
        if spec is not None and spec.loader is loader:
            spec.loader = loader.loader
        if module is not None and getattr(module, "__loader__", None) is loader:
            module.__loader__ = loader.loader
    for target in reversed(_state.targets):
        _unpatch(target)
    _state.reset()


def _settle_imports() -> None:
    """Wait for target modules another thread is importing right now (before taking the state lock:
    that thread's post-import hook needs it)."""
    for name in (_DEDUP, _ENGINE, _MERGE, _ENTITY, _JANITOR):
        if sys.modules.get(name) is not None:
            with contextlib.suppress(ImportError):
                importlib.import_module(name)


# --------------------------------------------------------------------------------------------------
# The public surface.
# --------------------------------------------------------------------------------------------------
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
