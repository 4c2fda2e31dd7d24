"""The ``memdedup`` command: one subcommand per job (``memdedup ingest TURNS.jsonl --db memory.sqlite``).

Each subcommand is added by its own ``add_<name>_parser(subparsers)`` function (``ingest``, ``dedup``,
``tune``: a module of this package each; ``recall``, ``history``, ``consolidate``: :mod:`memdedup.cli.store`),
listed in ``_SUBCOMMANDS``; it sets ``func`` (taking the parsed arguments, returning the exit status) as a
default. What they share (the help format, argument types, tables, scrubbed messages) is
:mod:`memdedup.cli._common`.

Every command reads its input as :mod:`memdedup.inputs` opens files (``-`` is stdin, gzip by its magic
bytes, strict UTF-8 with the line and byte of the first bad byte), shows its phases on stderr only when
stderr and stdout are terminals (:mod:`memdedup.progress`; ``--quiet`` turns them off), and refuses an
option that would do nothing.

Exit status: 0 when the run finished and every input line was read; 1 when ``ingest`` finished but some
input lines were not ingestible (each is listed with its reason); 2 for a usage error or an input,
output or database that cannot be used (a message, never a traceback); 130 when interrupted (Ctrl-C);
141 when the reader of the output went away.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
from collections.abc import Callable, Sequence
from typing import Any

from memdedup.cli._common import Parser, message, refuse_unrecognized
from memdedup.cli.dedup import add_dedup_parser
from memdedup.cli.ingest import add_ingest_parser, print_ingest_summary
from memdedup.cli.store import add_consolidate_parser, add_history_parser, add_recall_parser
from memdedup.cli.tune import add_tune_parser
from memdedup.errors import MemdedupError

__all__ = ["build_parser", "main", "print_ingest_summary"]

_SUBCOMMANDS: tuple[Callable[[Any], None], ...] = (
    add_ingest_parser,
    add_dedup_parser,
    add_tune_parser,
    add_recall_parser,
    add_history_parser,
    add_consolidate_parser,
)


def build_parser() -> argparse.ArgumentParser:
    """The ``memdedup`` argument parser, with every subcommand in ``_SUBCOMMANDS``."""
    from memdedup import __version__

    parser = Parser(
        prog="memdedup",
        description="Exact, fast write and recall hygiene for LLM-agent memory.",
        epilog="Run 'memdedup COMMAND --help' for a command's options, defaults and examples.",
    )
    parser.add_argument("--version", action="version", version=f"memdedup {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in _SUBCOMMANDS:
        add(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``memdedup`` with ``argv`` (default: the process arguments); returns the exit status."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        refuse_unrecognized(parser, args, extra)
    try:
        status = int(args.func(args))
        # Flushed here, not at exit: a reader that went away (``| head``) is answered below.
        sys.stdout.flush()
        return status
    except MemdedupError as exc:
        print(f"memdedup {args.command}: error: {message(exc)}", file=sys.stderr)
        return 2
    except sqlite3.Error as exc:  # the database failed mid-run (disk full, I/O error): committed turns stay
        print(f"memdedup {args.command}: database error: {message(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"memdedup {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (``| head``): send the rest of the output nowhere, exit as SIGPIPE would.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except OSError as exc:  # a file the command writes (a plot, an output) that the system refused
        where = f" {message(exc.filename)}" if exc.filename else ""
        print(f"memdedup {args.command}: error:{where} {message(exc.strerror or exc)}", file=sys.stderr)
        return 2
    except Exception as exc:  # the last resort: a bug or a broken environment, still one line
        return _unexpected(args.command, exc)


def _unexpected(command: str, exc: Exception) -> int:
    """One line on stderr naming the command and the exception type, its message scrubbed and cut
    (:func:`message`: no input reaches the terminal unscrubbed), exit 1; ``MEMDEDUP_DEBUG=1`` prints
    the traceback first."""
    import traceback

    if os.environ.get("MEMDEDUP_DEBUG", "").strip() not in ("", "0"):
        traceback.print_exception(exc, file=sys.stderr)
    try:
        detail = message(exc, 300)
    except Exception:  # scrubbing failed too: say nothing of the message rather than risk it
        detail = "(message withheld)"
    print(
        f"memdedup {command}: unexpected error ({type(exc).__name__}): {detail} "
        "(a bug or a broken environment; MEMDEDUP_DEBUG=1 shows the traceback)",
        file=sys.stderr,
    )
    return 1
