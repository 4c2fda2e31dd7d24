"""``memdedup ingest``: model output into a SQLite memory store (:func:`memdedup.ingest.ingest_turns`)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any, TextIO

from memdedup.cli._common import (
    REASON_WIDTH,
    TEXT_WIDTH,
    Help,
    add_quiet,
    counter_line,
    finite,
    guards_arg,
    message,
    shorten,
    table,
    unit_interval,
)
from memdedup.inputs import display_name
from memdedup.progress import Progress

_INGEST_EXAMPLES = """\
examples:
  memdedup ingest examples/turns.jsonl --db memory.sqlite
  zcat turns.jsonl.gz | memdedup ingest - --db memory.sqlite --summary
  memdedup ingest turns.jsonl.gz --db memory.sqlite --json > report.json
  memdedup ingest turns.jsonl --db memory.sqlite --gate index
"""


def add_ingest_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "ingest",
        help="write a file of model extraction outputs into a SQLite memory store",
        description=(
            "Read TURNS (one JSON object per line: scope, turn, messages, output, provider), turn each "
            "model output into memories (credentials scrubbed); a memory that is the same fact as one its "
            "scope holds restates it (the stored text stays) or updates it (its text becomes current, the "
            "old one a revision: memdedup history shows them); write the rest to the database, and report "
            "what happened to every op. Re-running the same file writes nothing new."
        ),
        epilog=_INGEST_EXAMPLES,
        formatter_class=Help,
    )
    parser.add_argument(
        "turns",
        metavar="TURNS.jsonl",
        help="the turns to ingest, one JSON object per line (.gz read; - stdin)",
    )
    parser.add_argument(
        "--db", required=True, metavar="PATH", help="the SQLite database (created if missing)"
    )
    parser.add_argument(
        "--threshold",
        type=unit_interval,
        default=0.85,
        help="the dedup ratio threshold (containment applies at any threshold)",
    )
    parser.add_argument(
        "--min-importance", type=finite, default=3.0, help="ops below this importance are dropped"
    )
    parser.add_argument("--max-records", type=int, default=50, help="memories minted per turn at most")
    parser.add_argument(
        "--gate",
        choices=("prefix", "index"),
        default="prefix",
        help="the write-time lookup's candidate gate: prefix (the seed's: the first 20 memories sharing the "
        "label's first 20 characters) or index (none: every memory the scope owns, through a label index "
        "built when the database is opened), default: prefix",
    )
    parser.add_argument(
        "--guards",
        type=guards_arg,
        default=None,
        metavar="GUARDS",
        help="none, value, negation, value,negation or all: a statement that differs from a memory in a "
        "value or a negation is then another fact, stored beside it (default: none)",
    )
    parser.add_argument("--pii", action="store_true", help="also redact e-mail addresses and phone numbers")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the full report as JSON instead of tables")
    output.add_argument(
        "--summary",
        action="store_true",
        help="print the counts and the lines not ingested only (not one row per memory): for big files",
    )
    add_quiet(parser)
    parser.set_defaults(func=_run_ingest)


def _run_ingest(args: argparse.Namespace) -> int:
    """Exit 0: every line ingested; 1: finished, but some lines were not ingested or the database failed
    its integrity check; 2: the input or the database cannot be used, or the database failed mid-run
    (the partial report is printed: every turn it lists was written whole); 130: Ctrl-C, which stops at
    the next turn boundary and prints the partial report."""
    import io
    import warnings

    from memdedup.ingest import IngestInterrupted, IngestReport, ingest_turns, read_turns
    from memdedup.inputs import decode_utf8, read_bytes
    from memdedup.scrub import CredentialScrubber
    from memdedup.store import StoreError, StoreIntegrityWarning

    name = display_name(args.turns)
    progress = Progress.for_command(args.quiet or args.json)
    try:
        # The whole input is checked before the first turn is written: a file that is not UTF-8 is
        # refused as `dedup` and `tune` refuse it (the file, the line, the byte), with nothing written.
        data = read_bytes(args.turns)
        decode_utf8(data, name)
        total = sum(1 for raw in data.split(b"\n") if raw.strip())
        scrubber = CredentialScrubber(pii=args.pii)
        with warnings.catch_warnings():
            # The run reports a failed integrity check itself (report.warnings), once, below.
            warnings.simplefilter("ignore", StoreIntegrityWarning)
            with progress.bar("ingest", total, unit=" turns") as advance:
                report = ingest_turns(
                    read_turns(io.BytesIO(data), scrubber=scrubber, name=name),
                    args.db,
                    threshold=args.threshold,
                    min_importance=args.min_importance,
                    max_records=args.max_records,
                    scrubber=scrubber,
                    progress=advance,
                    source=name,
                    gate=args.gate,
                    guards=args.guards,
                )
    except KeyboardInterrupt as stopped:
        # At a turn boundary (IngestInterrupted), or before the first turn (reading, opening).
        if isinstance(stopped, IngestInterrupted):
            report = stopped.report
        else:
            report = IngestReport(source=name, database=display_name(args.db), interrupted=True)
        _print_ingest_report(report, args)
        print(
            f"memdedup ingest: interrupted after {report.turns} turns: every turn reported was "
            "written whole, nothing after it; run the same command again to finish",
            file=sys.stderr,
        )
        return 130
    except StoreError as exc:
        if exc.report is not None:
            _print_ingest_report(exc.report, args)
        print(f"memdedup ingest: error: {message(exc)}", file=sys.stderr)
        return 2
    _print_ingest_report(report, args)
    return 1 if report.problems or report.warnings else 0


def _print_ingest_report(report: Any, args: argparse.Namespace) -> None:
    for warning in report.warnings:
        print(f"memdedup ingest: warning: {warning}", file=sys.stderr)
    if args.json:
        json.dump(report.to_dict(), sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        print_ingest_summary(report, sys.stdout, detail=not getattr(args, "summary", False))
    sys.stdout.flush()


def print_ingest_summary(report: Any, out: TextIO, *, detail: bool = True) -> None:
    """The readable form of an :class:`~memdedup.ingest.IngestReport`: the counts, then (``detail``)
    one row per memory written, restated, updated or dropped; the lines not ingested are always listed."""
    from memdedup.scope import readable_scope_path

    counts = report.counts()
    out.write(f"memdedup ingest: {display_name(report.source)} -> {display_name(report.database)}\n")
    out.write(
        f"  {counts['lines']} lines, {counts['turns']} turns, {counts['ops']} ops: "
        f"{counts['written']} written, {counts['restated']} restated, {counts['updated']} updated, "
        f"{counts['already_ingested']} already ingested, {counts['dropped']} dropped "
        f"({counts['noops']} noop); {counts['degraded_outputs']} degraded outputs, "
        f"{counts['bad_lines']} bad lines\n"
        f"  {counts['transcript_rows']} transcript rows written (one per user and assistant message)\n"
    )
    if report.interrupted:
        out.write("  interrupted (Ctrl-C): stopped at a turn boundary; the turns below were written whole\n")
    if report.error:
        out.write(f"  stopped by a database error: {shorten(report.error, REASON_WIDTH)}\n")
    if detail:
        _print_ingest_detail(report, out, readable_scope_path)
    elif report.dropped:
        from collections import Counter

        by_code = Counter(d.code or "noop" for d in report.dropped)
        out.write(f"  dropped by reason: {counter_line(dict(by_code))}\n")
    if report.problems:
        out.write(f"\nLines not ingested ({len(report.problems)})\n")
        shown = report.problems if detail else report.problems[:20]
        rows = [(p.line, shorten(p.reason, REASON_WIDTH)) for p in shown]
        out.write(table(("line", "reason"), rows, right=frozenset({0})) + "\n")
        if len(shown) < len(report.problems):
            out.write(f"  ... and {len(report.problems) - len(shown)} more (--json lists them all)\n")
    redactions = dict(report.redactions)
    out.write(f"\nRedacted: {counter_line(redactions) if redactions else 'nothing'}\n")
    out.write(f"Forms read: {counter_line(dict(report.forms)) if report.forms else 'none'}\n")


def _print_ingest_detail(report: Any, out: TextIO, readable_scope_path: Callable[[str], str]) -> None:
    if report.written:
        out.write(f"\nWritten ({len(report.written)})\n")
        rows: list[tuple[Any, ...]] = [
            (
                r.line,
                readable_scope_path(r.scope_path),
                r.turn,
                r.layer,
                r.record_id,
                shorten(r.text, TEXT_WIDTH),
            )
            for r in report.written
        ]
        out.write(
            table(("line", "scope", "turn", "layer", "id", "memory"), rows, right=frozenset({0, 2})) + "\n"
        )
    if report.restated:
        out.write(f"\nRestated: the memory's text stays ({len(report.restated)})\n")
        rows = [
            (
                r.line,
                readable_scope_path(r.scope_path),
                r.turn,
                shorten(r.text, 40),
                r.node_id,
                shorten(r.stored_text, 40),
                r.why(),
            )
            for r in report.restated
        ]
        headers = ("line", "scope", "turn", "restatement", "memory", "its text", "why")
        out.write(table(headers, rows, right=frozenset({0, 2})) + "\n")
    if report.updated:
        out.write(f"\nUpdated: the new text is current, the old one a revision ({len(report.updated)})\n")
        rows = [
            (
                r.line,
                readable_scope_path(r.scope_path),
                r.turn,
                r.node_id,
                shorten(r.stored_text, 40),
                shorten(r.text, 40),
                r.why(),
            )
            for r in report.updated
        ]
        headers = ("line", "scope", "turn", "memory", "was", "now", "why")
        out.write(table(headers, rows, right=frozenset({0, 2})) + "\n")
    if report.already_ingested:
        out.write(f"\nAlready ingested by an earlier run ({len(report.already_ingested)}): nothing written\n")
    if report.dropped:
        out.write(f"\nNot remembered ({len(report.dropped)})\n")
        rows = [
            (
                d.line,
                d.turn,
                d.op,
                shorten(d.reason or "noop (the model said there is nothing to remember)", REASON_WIDTH),
            )
            for d in report.dropped
        ]
        out.write(table(("line", "turn", "op", "reason"), rows, right=frozenset({0, 1})) + "\n")
    if report.degraded:
        out.write(f"\nDegraded model outputs ({len(report.degraded)})\n")
        rows = [(d.line, d.turn, d.form, shorten(d.reason, REASON_WIDTH)) for d in report.degraded]
        out.write(table(("line", "turn", "form", "reason"), rows, right=frozenset({0, 1})) + "\n")
