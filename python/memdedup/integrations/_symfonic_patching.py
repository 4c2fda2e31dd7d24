"""How :mod:`memdedup.integrations.symfonic` rebinds: each target's live or on-disk shape checked, the
state of what is bound, the patching and unpatching, and the post-import hook (a finder on
``sys.meta_path`` that wraps symfonic's loaders)."""

from __future__ import annotations

import contextlib
import dis
import hashlib
import importlib
import importlib.metadata
import inspect
import re
import sys
import threading
import types
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

from memdedup import difflib as _mdifflib
from memdedup.integrations import _symfonic_difflib as _shim
from memdedup.integrations._symfonic_targets import (
    _ALIAS,
    _CLASS,
    _DEDUP,
    _ENGINE,
    _ENTITY,
    _JANITOR,
    _LOCAL_IMPORT,
    _MERGE,
    _STANDARD_SEQUENCE_MATCHER,
    _TARGETS_BY_VERSION,
    DISTRIBUTION,
    SUPPORTED_VERSIONS,
    SymfonicIntegrationWarning,
    SymfonicVersionError,
    _replacement,
    _Target,
)


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
