"""Reading turns: a ``.jsonl`` file (or stream) of conversation turns, each into a
:class:`~memdedup.ingest_report.Turn` or the :class:`~memdedup.ingest_report.LineProblem` that says why
the line is none. The input side of :mod:`memdedup.ingest` (which re-exports these names); the write
side is there.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Generator, Mapping
from typing import Any, BinaryIO

from memdedup.errors import InputTypeError, InvalidInputError
from memdedup.ingest_report import LineProblem, Turn
from memdedup.inputs import UTF8_BOM, display_name, open_binary, utf8_error
from memdedup.operations import ProviderFamily
from memdedup.scope import Scope
from memdedup.scrub import CredentialScrubber

__all__ = ["MAX_TURN", "count_lines", "exception_text", "parse_turn", "read_turns"]

MAX_TURN = 2**63 - 1
"""The largest turn number: SQLite's largest INTEGER (the ledger stores it)."""


def read_turns(
    path: str | os.PathLike[str] | BinaryIO,
    *,
    scrubber: CredentialScrubber | None = None,
    name: str | None = None,
) -> Generator[Turn | LineProblem, None, None]:
    """The turns of a ``.jsonl`` file (``-`` for stdin; gzip read decompressed, as every input is read:
    :mod:`memdedup.inputs`) or of a binary stream, line by line; a line that is not a turn yields its
    reason (``name`` names the input in those reasons).

    Blank lines and a UTF-8 byte-order mark are skipped. An unreadable file raises
    :class:`~memdedup.errors.InvalidInputError`; a line that is not UTF-8 is an ``invalid_utf8`` line
    problem naming the file, the line and the byte offset, in the words ``memdedup`` uses when it
    refuses such a file.
    """
    scrubber = scrubber if scrubber is not None else CredentialScrubber()
    if isinstance(path, str | os.PathLike):
        label = name or display_name(path)
        with open_binary(path) as handle:
            yield from _turn_lines(handle, label, scrubber)
    else:
        yield from _turn_lines(path, name or "<stream>", scrubber)


def _turn_lines(
    handle: BinaryIO, name: str, scrubber: CredentialScrubber
) -> Generator[Turn | LineProblem, None, None]:
    offset = 0
    for number, raw in enumerate(handle, start=1):
        base = offset
        offset += len(raw)
        if number == 1 and raw.startswith(UTF8_BOM):
            raw = raw[len(UTF8_BOM) :]
            base += len(UTF8_BOM)
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield LineProblem(
                number, "invalid_utf8: " + utf8_error(name, raw, exc, first_line=number, base=base)
            )
            continue
        try:
            value = json.loads(text)
        except (ValueError, RecursionError) as exc:
            yield LineProblem(number, f"invalid_json: {exception_text(exc, scrubber)}")
            continue
        yield parse_turn(value, line=number, scrubber=scrubber)


def parse_turn(
    value: Any, *, line: int = 0, scrubber: CredentialScrubber | None = None
) -> Turn | LineProblem:
    """One turn from its JSON object, or the reason it is not one (scrubbed: it may quote the line)."""
    if isinstance(value, Turn):
        # A Turn built by a caller meets the same scope rule as a line of a file.
        return _credential_scope_problem(value.line or line) if _holds_a_credential(value.scope) else value
    scrubber = scrubber if scrubber is not None else CredentialScrubber()
    if not isinstance(value, Mapping):
        return LineProblem(line, f"invalid_turn: a turn is a JSON object, not a {type(value).__name__}")
    if "scope" not in value:
        return LineProblem(line, "invalid_scope: the turn has no 'scope'")
    try:
        scope = Scope.parse(value["scope"])
    except (InvalidInputError, InputTypeError) as exc:
        return LineProblem(line, f"invalid_scope: {exception_text(exc, scrubber, typed=False)}")
    if _holds_a_credential(scope):
        return _credential_scope_problem(line)
    number = value.get("turn")
    if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number <= MAX_TURN:
        if isinstance(number, int) and not isinstance(number, bool):
            got = str(number) if number.bit_length() <= 128 else f"an integer of {number.bit_length()} bits"
        else:
            got = f"a {type(number).__name__}" if number is not None else "missing"
        return LineProblem(
            line,
            f"invalid_turn: 'turn' must be an integer from 0 to 2**63-1 ({MAX_TURN}, the largest SQLite "
            f"stores), not {got}",
        )
    if "output" not in value:
        return LineProblem(
            line, "missing_output: the turn has no 'output' (the model's raw extraction output)"
        )
    messages = value.get("messages", ())
    if messages is None:
        messages = ()
    if not isinstance(messages, list | tuple):
        return LineProblem(line, f"invalid_turn: 'messages' must be a list, not a {type(messages).__name__}")
    return Turn(
        scope=scope,
        turn=number,
        output=value["output"],
        messages=tuple(message for message in messages if isinstance(message, Mapping)),
        family=ProviderFamily.parse(value.get("provider")),
        line=line,
    )


def _credential_scope_problem(line: int) -> LineProblem:
    """The policy for a scope kind or id the detector flags: refuse the turn, never scrub the id. A
    scope id is an owner's key, stored in every row's scope_path and printed in reports; scrubbing it
    would merge two owners whose ids hold different secrets of one kind into one scope, and a secret
    there is almost certainly a mistake (a token pasted where an id belongs)."""
    return LineProblem(
        line,
        "invalid_scope: a scope kind or id looks like a credential; scope ids are stored and "
        "reported as they are, so the turn was not ingested",
    )


_CREDENTIALS_ONLY = CredentialScrubber()


@functools.lru_cache(maxsize=4096)
def _holds_a_credential(scope: Scope) -> bool:
    """Whether a scope kind or id is something the credential scrubber would redact (cached: a file
    writes to a few scopes many times)."""
    return any(
        _CREDENTIALS_ONLY.scrub_text(part).redactions
        for level in scope.levels
        for part in (level.kind, level.id)
    )


_DETAIL_WIDTH = 300
"""The most characters of an exception's text a reason quotes (scrubbed first, then cut)."""


def exception_text(exc: BaseException, scrubber: CredentialScrubber, *, typed: bool = True) -> str:
    """An exception's message for a report: scrubbed (it may quote the input), then cut."""
    return scrubber.redact(f"{type(exc).__name__}: {exc}" if typed else exc, _DETAIL_WIDTH)


def count_lines(path: str | os.PathLike[str]) -> int:
    """The number of non-blank lines of a file (the progress bar's total; gzip read decompressed)."""
    with open_binary(path) as handle:
        return sum(1 for raw in handle if raw.strip())
