"""Hierarchical memory scopes: root-first levels, a materialised ``scope_path``, ancestor visibility.

A scope is a root-first tuple of ``(kind, id)`` levels (``org:acme`` then ``user:dana``). Its
``scope_path`` joins every kind and id with the unit separator ``\\x1f``, exactly as symfonic-core's
``TenantScope.scope_path`` does, so rows written by either system read the same. A query at path P sees
a row stored at path Q iff Q is one of P's :meth:`Scope.ancestor_prefix_paths` (exact set membership,
never a string-prefix scan, which would leak ``acme-corp`` into ``acme``).

Error messages never quote a kind or id (it may be anything a caller passed, a secret included).

A level's kind or id may hold ``/``, ``:`` or ``-`` but never the separator itself: ``\\x1f`` inside an
id would forge a level boundary (``id="a\\x1fuser\\x1fdana"`` would claim another user's path).

Kinds and ids are strings, as symfonic-core's ``ScopeLevel`` has them. A number or a boolean is refused
(:class:`~memdedup.errors.InputTypeError`), never turned into text: ``1``, ``True`` and ``"1"`` would
otherwise name one scope and merge three owners' memories.

Ownership (this module is its one owner): a row is owned by exactly one scope path, its stored
``scope_path`` (:func:`stored_scope_path`; a row written before scope paths existed belongs to its
tenant's root, ``"tenant\\x1f" + tenant_id``). Visibility is wider than ownership: a child sees its
ancestors' rows but owns none of them, so existence checks, dedup collapses and window identity are keyed
by the owner, never by what a scope can see.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from memdedup.errors import InputTypeError, InvalidInputError

__all__ = [
    "LEGACY_SCOPE_PREFIX",
    "SCOPE_PATH_DELIMITER",
    "SCOPE_PATH_KEY",
    "Scope",
    "ScopeLevel",
    "legacy_scope_path",
    "materialise_scope_path",
    "owner_of",
    "readable_scope_path",
    "stored_scope_path",
]

SCOPE_PATH_DELIMITER = "\x1f"
SCOPE_PATH_KEY = "scope_path"
"""The property a stored row's owning scope path is read from (symfonic-core's key)."""
LEGACY_SCOPE_PREFIX = "tenant" + SCOPE_PATH_DELIMITER


def _check_part(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise InputTypeError(
            f"scope level {name} must be a string, not {type(value).__name__} "
            '(scope ids are text: the number 1 and the string "1" would otherwise be one scope)'
        )
    text = str.__str__(value)
    if not text.strip():
        raise InvalidInputError(f"scope level {name} must be a non-empty string")
    if SCOPE_PATH_DELIMITER in text:
        raise InvalidInputError(
            f"scope level {name} contains the path delimiter \\x1f (at position "
            f"{text.index(SCOPE_PATH_DELIMITER)}), which would forge a level boundary"
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"scope level {name} is not valid Unicode text (a lone surrogate at position {exc.start})"
        ) from None
    return text


@dataclass(frozen=True, slots=True)
class ScopeLevel:
    """One level of a scope path: an adopter-defined ``kind`` (``org``, ``user``) and its ``id``."""

    kind: str
    id: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", _check_part("kind", self.kind))
        object.__setattr__(self, "id", _check_part("id", self.id))


@dataclass(frozen=True, slots=True)
class Scope:
    """An immutable root-first scope path; ``levels[0]`` is the broadest, ``levels[-1]`` the write scope."""

    levels: tuple[ScopeLevel, ...]

    def __post_init__(self) -> None:
        levels = tuple(self.levels)
        if not levels:
            raise InvalidInputError("a scope needs at least one level")
        for level in levels:
            if not isinstance(level, ScopeLevel):
                raise InputTypeError(f"scope levels must be ScopeLevel, not {type(level).__name__}")
        kinds = [level.kind for level in levels]
        if len(set(kinds)) != len(kinds):
            # The same rule as symfonic-core's TenantScope: a kind names one level of the hierarchy.
            raise InvalidInputError(f"scope levels must have distinct kinds, got {kinds}")
        object.__setattr__(self, "levels", levels)

    # -- construction ---------------------------------------------------------------------------------

    @classmethod
    def from_path(cls, levels: Iterable[ScopeLevel | tuple[str, str] | Mapping[str, Any]]) -> Scope:
        """A scope from root-first levels given as ``ScopeLevel``, ``(kind, id)`` or ``{"kind", "id"}``."""
        built: list[ScopeLevel] = []
        for level in levels:
            if isinstance(level, ScopeLevel):
                built.append(level)
            elif isinstance(level, Mapping):
                if "kind" not in level or "id" not in level:
                    raise InvalidInputError("a scope level object needs both 'kind' and 'id'")
                built.append(ScopeLevel(level["kind"], level["id"]))
            elif isinstance(level, list | tuple) and len(level) == 2:
                built.append(ScopeLevel(level[0], level[1]))
            else:
                raise InputTypeError(
                    "a scope level must be {'kind', 'id'} or a [kind, id] pair, "
                    f"not a {type(level).__name__}"
                )
        return cls(tuple(built))

    @classmethod
    def root(cls, kind: str, id: str) -> Scope:
        """A one-level scope."""
        return cls((ScopeLevel(kind, id),))

    def child(self, kind: str, id: str) -> Scope:
        """This scope with one more, deeper level."""
        return Scope((*self.levels, ScopeLevel(kind, id)))

    @classmethod
    def parse(cls, value: Any) -> Scope:
        """A scope from its JSON forms: a list of levels, or an ordered ``{kind: id}`` object.

        Also accepts a :class:`Scope` and anything shaped like symfonic-core's ``TenantScope`` (a
        ``path`` of objects with ``kind`` and ``id``).
        """
        if isinstance(value, Scope):
            return value
        if isinstance(value, Mapping):
            if set(value) == {"path"}:
                return cls.parse(value["path"])
            return cls.from_path((kind, id_) for kind, id_ in value.items())
        if isinstance(value, list | tuple):
            return cls.from_path(value)
        path = getattr(value, "path", None)
        if isinstance(path, tuple | list) and all(hasattr(level, "kind") for level in path):
            return cls.from_path((level.kind, level.id) for level in path)
        raise InputTypeError(
            "a scope must be a list of {'kind', 'id'} levels or a {kind: id} object, "
            f"not {type(value).__name__}"
        )

    @classmethod
    def from_readable(cls, text: str) -> Scope:
        """The scope a printed form names (``"org:acme/user:dana"``, what :meth:`readable` and every
        report print): ``/``-separated levels, each ``kind:id``. A form whose kinds or ids hold ``/`` or
        ``:`` cannot be read back unambiguously and is refused (give the levels as pairs instead)."""
        if not isinstance(text, str):
            raise InputTypeError(f"a printed scope is a str, not {type(text).__name__}")
        levels = []
        for part in str.__str__(text).split("/"):
            kind, colon, id_ = part.partition(":")
            if not colon or ":" in id_ or not kind.strip() or not id_.strip():
                raise InvalidInputError(
                    "a printed scope is kind:id levels joined by '/' (org:acme/user:dana), each with "
                    "exactly one ':'; a kind or id holding '/' or ':' is ambiguous in that form: give "
                    "the scope as a list of (kind, id) pairs"
                )
            levels.append((kind, id_))
        return cls.from_path(levels)

    @classmethod
    def coerce(cls, value: Any) -> Scope:
        """A scope from any form a caller holds: a :class:`Scope` (or anything with the scope protocol:
        ``scope_path`` and ``ancestor_prefix_paths``, such as symfonic-core's ``TenantScope``), its
        printed form (``"org:acme/user:dana"``, :meth:`from_readable`), or the JSON forms of
        :meth:`parse` (a list of ``(kind, id)`` pairs or ``{"kind", "id"}`` objects, a ``{kind: id}``
        object). Anything else is an :class:`~memdedup.errors.InputTypeError` naming these forms."""
        if isinstance(value, Scope):
            return value
        if isinstance(value, str):
            return cls.from_readable(value)
        if hasattr(value, "scope_path") and hasattr(value, "ancestor_prefix_paths"):
            return value  # type: ignore[no-any-return]
        if isinstance(value, Mapping | list | tuple) or hasattr(value, "path"):
            return cls.parse(value)
        raise InputTypeError(
            "a scope must be a Scope, its printed form ('org:acme/user:dana'), a list of (kind, id) "
            f"pairs or a {{kind: id}} object, not {type(value).__name__}"
        )

    @classmethod
    def from_scope_path(cls, scope_path: str) -> Scope:
        """The scope a materialised ``scope_path`` string names."""
        parts = scope_path.split(SCOPE_PATH_DELIMITER)
        if len(parts) % 2:
            raise InvalidInputError("not a scope path (an odd number of parts)")
        return cls.from_path(zip(parts[0::2], parts[1::2], strict=True))

    # -- the isolation primitives ----------------------------------------------------------------------

    @property
    def scope_path(self) -> str:
        """``kind\\x1fid\\x1fkind\\x1fid...``, root first: the stored owner of a row."""
        return SCOPE_PATH_DELIMITER.join(part for level in self.levels for part in (level.kind, level.id))

    def ancestor_prefix_paths(self) -> list[str]:
        """The ``scope_path`` of every prefix of this scope, root first, this scope included."""
        return [Scope(self.levels[: i + 1]).scope_path for i in range(len(self.levels))]

    @property
    def tenant_id(self) -> str:
        """The root level's id (symfonic-core's ``tenant_id``)."""
        return self.levels[0].id

    @property
    def depth(self) -> int:
        return len(self.levels)

    @property
    def parent(self) -> Scope | None:
        return Scope(self.levels[:-1]) if len(self.levels) > 1 else None

    def sees(self, scope_path: str) -> bool:
        """Whether a row stored at ``scope_path`` is visible from this scope."""
        return scope_path in self.ancestor_prefix_paths()

    def readable(self) -> str:
        """``org:acme/user:dana``: for people, not for keys (ids may contain ``/`` or ``:``)."""
        return "/".join(f"{level.kind}:{level.id}" for level in self.levels)

    def to_json(self) -> list[dict[str, str]]:
        """The canonical JSON form, which :meth:`parse` reads back."""
        return [{"kind": level.kind, "id": level.id} for level in self.levels]

    def __str__(self) -> str:
        return self.readable()


def readable_scope_path(scope_path: str) -> str:
    """A stored ``scope_path`` for display: ``org:acme/user:dana`` (a malformed path is shown escaped)."""
    parts = scope_path.split(SCOPE_PATH_DELIMITER)
    if len(parts) % 2:
        return scope_path.replace(SCOPE_PATH_DELIMITER, "/")
    return "/".join(f"{kind}:{id_}" for kind, id_ in zip(parts[0::2], parts[1::2], strict=True))


# ---------------------------------------------------------------------------------------------------
# Ownership
# ---------------------------------------------------------------------------------------------------
def materialise_scope_path(scope: Any) -> str:
    """The ``scope_path`` a write at ``scope`` stores as the row's owner (symfonic-core's name)."""
    return scope.scope_path  # type: ignore[no-any-return]


def legacy_scope_path(tenant_id: Any) -> str:
    """The 1-level root path a pre-scope-path row reads as: ``"tenant\\x1f" + tenant_id``.

    The id must be a non-blank ``str`` without the path delimiter, as symfonic-core's ``ScopeLevel``
    validates it (``bytes`` are read as UTF-8); anything else raises, which the dedup lookup swallows
    (and so stops), as the seed's does.
    """
    if isinstance(tenant_id, bytes | bytearray):
        tenant_id = bytes(tenant_id).decode("utf-8")
    if not isinstance(tenant_id, str):
        raise TypeError(f"a legacy row's tenant_id must be str, not {type(tenant_id).__name__}")
    if not tenant_id.strip():
        raise ValueError("a legacy row's tenant_id must be a non-empty string")
    if SCOPE_PATH_DELIMITER in tenant_id:
        raise ValueError("a legacy row's tenant_id must not contain the scope path delimiter")
    return f"{LEGACY_SCOPE_PREFIX}{tenant_id}"


def stored_scope_path(properties: Any, tenant_id: Any) -> str:
    """A stored row's owning scope path: ``properties["scope_path"]`` when it is a non-empty ``str``,
    else the legacy root path of ``tenant_id`` (symfonic-core's dual read)."""
    raw = (properties or {}).get(SCOPE_PATH_KEY)
    if isinstance(raw, str) and raw:
        return raw
    return legacy_scope_path(tenant_id)


def owner_of(node: Any) -> str:
    """The scope path that owns ``node`` (any object with ``properties`` and ``tenant_id``)."""
    return stored_scope_path(getattr(node, "properties", None), getattr(node, "tenant_id", ""))
