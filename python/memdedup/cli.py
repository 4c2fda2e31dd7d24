"""The ``memdedup`` command: one subcommand per job (``memdedup ingest TURNS.jsonl --db memory.sqlite``).

Each subcommand is added by its own ``_add_<name>_parser(subparsers)`` function, listed in
``_SUBCOMMANDS``; it sets ``func`` (taking the parsed arguments, returning the exit status) as a default.

Exit status: 0 when the run finished and every input line was read; 1 when it finished but some input
lines were not ingestible (each is listed with its reason); 2 for a usage error or an input or database
that cannot be used at all; 130 when interrupted; 141 when the reader of the output went away.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TextIO

from memdedup.errors import MemdedupError

__all__ = ["build_parser", "main"]

_TEXT_WIDTH = 64
_REASON_WIDTH = 110


def _shorten(text: str, width: int) -> str:
    """One line, at most ``width`` characters (an ellipsis marks a cut)."""
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _table(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], *, right: frozenset[int] = frozenset()
) -> str:
    """A plain-text table: columns padded to their widest cell, numbers (``right``) right-aligned."""
    cells = [[str(cell) for cell in row] for row in rows]
    widths = [max(len(h), *(len(row[i]) for row in cells)) for i, h in enumerate(headers)]

    def line(row: Sequence[str]) -> str:
        parts = [cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]) for i, cell in enumerate(row)]
        return "  " + "  ".join(parts).rstrip()

    return "\n".join([line(list(headers)), *(line(row) for row in cells)])


def _counter_line(counter: dict[str, int]) -> str:
    return ", ".join(
        f"{key} {count}" for key, count in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))
    )


@contextmanager
def _progress_bar(total: int, enabled: bool) -> Iterator[Callable[[int], None] | None]:
    """A tqdm bar on stderr when tqdm is installed and ``enabled``; otherwise no bar at all."""
    if not enabled:
        yield None
        return
    try:
        from tqdm import tqdm  # optional: the command works, without a bar, when it is not installed
    except ImportError:
        yield None
        return
    # disable=None: tqdm shows the bar only when stderr is a terminal.
    with tqdm(total=total, unit="turn", desc="ingest", disable=None, leave=False, file=sys.stderr) as bar:
        yield bar.update


# ---------------------------------------------------------------------------------------------------
# ingest
# ---------------------------------------------------------------------------------------------------
def _add_ingest_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "ingest",
        help="write a file of model extraction outputs into a SQLite memory store",
        description=(
            "Read TURNS (one JSON object per line: scope, turn, messages, output, provider), turn each "
            "model output into memories (credentials scrubbed), collapse restatements into the memory "
            "they restate, write the rest to the database, and report what happened to every op. "
            "Re-running the same file writes nothing new."
        ),
    )
    parser.add_argument("turns", metavar="TURNS.jsonl", help="the turns to ingest, one JSON object per line")
    parser.add_argument(
        "--db", required=True, metavar="PATH", help="the SQLite database (created if missing)"
    )
    parser.add_argument(
        "--threshold",
        type=float,
        default=0.85,
        help="the dedup ratio threshold (default 0.85; containment applies at any threshold)",
    )
    parser.add_argument(
        "--min-importance", type=float, default=3.0, help="ops below this importance are dropped (default 3)"
    )
    parser.add_argument(
        "--max-records", type=int, default=50, help="memories minted per turn at most (default 50)"
    )
    parser.add_argument("--pii", action="store_true", help="also redact e-mail addresses and phone numbers")
    parser.add_argument("--json", action="store_true", help="print the full report as JSON instead of tables")
    parser.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    parser.set_defaults(func=_run_ingest)


def _run_ingest(args: argparse.Namespace) -> int:
    from memdedup.ingest import count_lines, ingest_file
    from memdedup.scrub import CredentialScrubber

    total = count_lines(args.turns)
    with _progress_bar(total, not args.no_progress and not args.json) as progress:
        report = ingest_file(
            args.turns,
            args.db,
            threshold=args.threshold,
            min_importance=args.min_importance,
            max_records=args.max_records,
            scrubber=CredentialScrubber(pii=args.pii),
            progress=progress,
        )
    if args.json:
        json.dump(report.to_dict(), sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        print_ingest_summary(report, sys.stdout)
    return 1 if report.problems else 0


def print_ingest_summary(report: Any, out: TextIO) -> None:
    """The readable form of an :class:`~memdedup.ingest.IngestReport`."""
    from memdedup.scope import readable_scope_path

    counts = report.counts()
    out.write(f"memdedup ingest: {report.source} -> {report.database}\n")
    out.write(
        f"  {counts['lines']} lines, {counts['turns']} turns, {counts['ops']} ops: "
        f"{counts['written']} written, {counts['collapsed']} collapsed, "
        f"{counts['already_ingested']} already ingested, {counts['dropped']} dropped "
        f"({counts['noops']} noop); {counts['degraded_outputs']} degraded outputs, "
        f"{counts['bad_lines']} bad lines\n"
    )
    if report.written:
        out.write(f"\nWritten ({len(report.written)})\n")
        rows = [
            (
                r.line,
                readable_scope_path(r.scope_path),
                r.turn,
                r.layer,
                r.record_id,
                _shorten(r.text, _TEXT_WIDTH),
            )
            for r in report.written
        ]
        out.write(
            _table(("line", "scope", "turn", "layer", "id", "memory"), rows, right=frozenset({0, 2})) + "\n"
        )
    if report.collapsed:
        out.write(f"\nCollapsed into an existing memory ({len(report.collapsed)})\n")
        rows = [
            (
                r.line,
                readable_scope_path(r.scope_path),
                r.turn,
                _shorten(r.text, 40),
                r.node_id,
                _shorten(r.canonical_label, 40),
                r.why(),
            )
            for r in report.collapsed
        ]
        headers = ("line", "scope", "turn", "restatement", "into", "memory", "why")
        out.write(_table(headers, rows, right=frozenset({0, 2})) + "\n")
    if report.already_ingested:
        out.write(f"\nAlready ingested by an earlier run ({len(report.already_ingested)}): nothing written\n")
    if report.dropped:
        out.write(f"\nNot remembered ({len(report.dropped)})\n")
        rows = [
            (
                d.line,
                d.turn,
                d.op,
                _shorten(d.reason or "noop (the model said there is nothing to remember)", _REASON_WIDTH),
            )
            for d in report.dropped
        ]
        out.write(_table(("line", "turn", "op", "reason"), rows, right=frozenset({0, 1})) + "\n")
    if report.degraded:
        out.write(f"\nDegraded model outputs ({len(report.degraded)})\n")
        rows = [(d.line, d.turn, d.form, _shorten(d.reason, _REASON_WIDTH)) for d in report.degraded]
        out.write(_table(("line", "turn", "form", "reason"), rows, right=frozenset({0, 1})) + "\n")
    if report.problems:
        out.write(f"\nLines not ingested ({len(report.problems)})\n")
        rows = [(p.line, _shorten(p.reason, _REASON_WIDTH)) for p in report.problems]
        out.write(_table(("line", "reason"), rows, right=frozenset({0})) + "\n")
    redactions = dict(report.redactions)
    out.write(f"\nRedacted: {_counter_line(redactions) if redactions else 'nothing'}\n")
    out.write(f"Forms read: {_counter_line(dict(report.forms)) if report.forms else 'none'}\n")


# ---------------------------------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------------------------------
_SUBCOMMANDS: tuple[Callable[[Any], None], ...] = (_add_ingest_parser,)


def build_parser() -> argparse.ArgumentParser:
    """The ``memdedup`` argument parser, with every subcommand in ``_SUBCOMMANDS``."""
    from memdedup import __version__

    parser = argparse.ArgumentParser(
        prog="memdedup", description="Exact, fast write and recall hygiene for LLM-agent memory."
    )
    parser.add_argument("--version", action="version", version=f"memdedup {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in _SUBCOMMANDS:
        add(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``memdedup`` with ``argv`` (default: the process arguments); returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except MemdedupError as exc:
        print(f"memdedup {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except sqlite3.Error as exc:  # the database failed mid-run (disk full, I/O error): committed turns stay
        print(f"memdedup {args.command}: database error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"memdedup {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (``| head``): send the rest of the output nowhere, exit as SIGPIPE would.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    raise SystemExit(main())
