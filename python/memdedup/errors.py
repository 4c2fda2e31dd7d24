"""The package's exceptions: one family, each also a builtin so existing ``except`` clauses still catch it."""

from __future__ import annotations


class MemdedupError(Exception):
    """Base class of every error memdedup raises on purpose."""


class InvalidInputError(MemdedupError, ValueError):
    """An argument has the right type but a value the operation cannot honour (a bad threshold, a
    mismatched length, an unreadable file)."""


class InputTypeError(MemdedupError, TypeError):
    """An argument has a type the operation does not accept."""


class BackendUnavailableError(MemdedupError, ImportError):
    """``MEMDEDUP_IMPLEMENTATION=rust`` was asked for but the compiled extension could not be loaded."""
