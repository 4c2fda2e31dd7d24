"""What every subcommand shares: the help format, the parser that names the closest option, argument
types, tables and scrubbed messages."""

from __future__ import annotations

import argparse
import difflib
import json
import math
import re
from collections.abc import Sequence
from typing import Any, NoReturn

from memdedup.errors import InvalidInputError, MemdedupError

TEXT_WIDTH = 64
REASON_WIDTH = 110


class Help(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """``--help`` shows every option's default and keeps the examples' line breaks (a help text that
    says its default itself, a flag and an option without a value are left as they are)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if (
            "default" in text
            or action.default in (None, False)
            or action.default is argparse.SUPPRESS
            or action.nargs == 0  # a flag (--no-collapse's default True says nothing useful)
        ):
            return text
        return super()._get_help_string(action)


class Parser(argparse.ArgumentParser):
    """An argument parser whose refusals suggest the closest valid word: ``invalid choice: 'dedpu'``
    ends with ``(did you mean 'dedup'?)``; unrecognized options are refused by the subcommand's own
    parser, with the closest of its options (:func:`refuse_unrecognized`)."""

    def error(self, message: str) -> NoReturn:
        found = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)$", message)
        if found:
            choices = re.findall(r"'([^']*)'", found.group(2))
            close = difflib.get_close_matches(found.group(1), choices, n=1, cutoff=0.6)
            if close:
                message += f" (did you mean {close[0]!r}?)"
        super().error(message)


def refuse_unrecognized(parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]) -> None:
    """Refuse arguments nobody recognised as the subcommand's parser would, naming the subcommand and
    the closest option to each unknown one (``--thresold``: did you mean ``--threshold``?)."""
    sub = parser
    command = str(getattr(args, "command", ""))
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            sub = action.choices[command]
    options = [o for action in sub._actions for o in action.option_strings if o.startswith("--")]
    hints = []
    for word in extra:
        if word.startswith("-"):
            close = difflib.get_close_matches(word.split("=", 1)[0], options, n=1, cutoff=0.6)
            if close:
                hints.append(close[0])
    hint = f" (did you mean {' or '.join(dict.fromkeys(hints))}?)" if hints else ""
    sub.error(f"unrecognized arguments: {' '.join(extra)}{hint}")


def shorten(text: str, width: int) -> str:
    """One line, at most ``width`` characters (an ellipsis marks a cut), scrubbed before it is cut
    (:func:`message`): what a report prints is never a secret's first characters."""
    return message(" ".join(str(text).split()), width)


def message(value: object, width: int | None = None) -> str:
    """An error's text as the command prints it: scrubbed, then cut (:func:`memdedup.scrub.redact`)."""
    from memdedup.scrub import redact

    return redact(value, width)


def table(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], *, right: frozenset[int] = frozenset()
) -> str:
    """A plain-text table: columns padded to their widest cell, numbers (``right``) right-aligned."""
    cells = [[str(cell) for cell in row] for row in rows]
    widths = [max(len(h), *(len(row[i]) for row in cells)) for i, h in enumerate(headers)]

    def line(row: Sequence[str]) -> str:
        parts = [cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]) for i, cell in enumerate(row)]
        return "  " + "  ".join(parts).rstrip()

    return "\n".join([line(list(headers)), *(line(row) for row in cells)])


def counter_line(counter: dict[str, int]) -> str:
    return ", ".join(
        f"{key} {count}" for key, count in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))
    )


def add_quiet(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-q",
        "--quiet",
        "--no-progress",
        dest="quiet",
        action="store_true",
        help="no progress bars (they show only when stderr and stdout are terminals anyway)",
    )


def min_chars_arg(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {message(text, 40)!r}") from None


def check_min_chars(value: int) -> None:
    """The one rule for ``--min-chars`` in every command (the library's)."""
    from memdedup.batch import check_min_chars

    check_min_chars(value, "--min-chars")


def unit_interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {message(text, 40)!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must lie in [0, 1], not {value}")
    return value


def finite(text: str) -> float:
    """A finite number (NaN compares false with everything: as a limit it would silently do nothing)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {message(text, 40)!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, not {value}")
    return value


def count_arg(text: str) -> int:
    """An integer, 0 or more."""
    value = min_chars_arg(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def thresholds_arg(text: str) -> Any:
    from memdedup.tuning import parse_thresholds

    try:
        return parse_thresholds(text)
    except InvalidInputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def guards_arg(text: str) -> Any:
    from memdedup.guards import Guards

    try:
        return Guards.parse(text)
    except InvalidInputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def scope_arg(text: str) -> Any:
    """``--scope``: the printed form (``org:acme/user:dana``), or JSON levels (``[["org", "acme"]]``) for
    ids that hold ``/`` or ``:``."""
    from memdedup.scope import Scope

    try:
        if text.lstrip()[:1] in "[{":
            return Scope.parse(json.loads(text))
        return Scope.from_readable(text)
    except (ValueError, MemdedupError) as exc:
        raise argparse.ArgumentTypeError(message(exc, 300)) from None


def add_db_and_scope(parser: argparse.ArgumentParser, *, scope_required: bool) -> None:
    parser.add_argument("--db", required=True, metavar="PATH", help="the SQLite memory store")
    parser.add_argument(
        "--scope",
        type=scope_arg,
        required=scope_required,
        metavar="SCOPE",
        help="the scope, as reports print it (org:acme/user:dana), or its levels as JSON "
        '([["org", "acme"], ["user", "dana"]]) when an id holds / or :',
    )
