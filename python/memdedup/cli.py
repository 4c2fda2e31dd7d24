"""The ``memdedup`` command: one subcommand per job (``memdedup ingest TURNS.jsonl --db memory.sqlite``).

Each subcommand is added by its own ``_add_<name>_parser(subparsers)`` function, listed in
``_SUBCOMMANDS``; it sets ``func`` (taking the parsed arguments, returning the exit status) as a default.

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
import difflib
import json
import math
import os
import re
import sqlite3
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TextIO

from memdedup.errors import InvalidInputError, MemdedupError
from memdedup.inputs import display_name
from memdedup.progress import Progress

__all__ = ["build_parser", "main"]

_TEXT_WIDTH = 64
_REASON_WIDTH = 110


class _Help(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
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


class _Parser(argparse.ArgumentParser):
    """An argument parser whose refusals suggest the closest valid word: ``invalid choice: 'dedpu'``
    ends with ``(did you mean 'dedup'?)``; unrecognized options are refused by the subcommand's own
    parser, with the closest of its options (:func:`_refuse_unrecognized`)."""

    def error(self, message: str) -> NoReturn:
        found = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)$", message)
        if found:
            choices = re.findall(r"'([^']*)'", found.group(2))
            close = difflib.get_close_matches(found.group(1), choices, n=1, cutoff=0.6)
            if close:
                message += f" (did you mean {close[0]!r}?)"
        super().error(message)


def _refuse_unrecognized(parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]) -> None:
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


def _shorten(text: str, width: int) -> str:
    """One line, at most ``width`` characters (an ellipsis marks a cut), scrubbed before it is cut
    (:func:`_message`): what a report prints is never a secret's first characters."""
    return _message(" ".join(str(text).split()), width)


def _message(value: object, width: int | None = None) -> str:
    """An error's text as the command prints it: scrubbed, then cut (:func:`memdedup.scrub.redact`)."""
    from memdedup.scrub import redact

    return redact(value, width)


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


def _add_quiet(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-q",
        "--quiet",
        "--no-progress",
        dest="quiet",
        action="store_true",
        help="no progress bars (they show only when stderr and stdout are terminals anyway)",
    )


def _min_chars(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {_message(text, 40)!r}") from None


def _check_min_chars(value: int) -> None:
    """The one rule for ``--min-chars`` in every command (the library's)."""
    from memdedup.batch import check_min_chars

    check_min_chars(value, "--min-chars")


def _unit_interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {_message(text, 40)!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must lie in [0, 1], not {value}")
    return value


def _finite(text: str) -> float:
    """A finite number (NaN compares false with everything: as a limit it would silently do nothing)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {_message(text, 40)!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, not {value}")
    return value


def _count(text: str) -> int:
    """An integer, 0 or more."""
    value = _min_chars(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


# ---------------------------------------------------------------------------------------------------
# ingest
# ---------------------------------------------------------------------------------------------------
_INGEST_EXAMPLES = """\
examples:
  memdedup ingest examples/turns.jsonl --db memory.sqlite
  zcat turns.jsonl.gz | memdedup ingest - --db memory.sqlite --summary
  memdedup ingest turns.jsonl.gz --db memory.sqlite --json > report.json
  memdedup ingest turns.jsonl --db memory.sqlite --gate index
"""


def _add_ingest_parser(subparsers: Any) -> None:
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
        formatter_class=_Help,
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
        type=_unit_interval,
        default=0.85,
        help="the dedup ratio threshold (containment applies at any threshold)",
    )
    parser.add_argument(
        "--min-importance", type=_finite, default=3.0, help="ops below this importance are dropped"
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
        type=_guards_arg,
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
    _add_quiet(parser)
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
        print(f"memdedup ingest: error: {_message(exc)}", file=sys.stderr)
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
        out.write(f"  stopped by a database error: {_shorten(report.error, _REASON_WIDTH)}\n")
    if detail:
        _print_ingest_detail(report, out, readable_scope_path)
    elif report.dropped:
        from collections import Counter

        by_code = Counter(d.code or "noop" for d in report.dropped)
        out.write(f"  dropped by reason: {_counter_line(dict(by_code))}\n")
    if report.problems:
        out.write(f"\nLines not ingested ({len(report.problems)})\n")
        shown = report.problems if detail else report.problems[:20]
        rows = [(p.line, _shorten(p.reason, _REASON_WIDTH)) for p in shown]
        out.write(_table(("line", "reason"), rows, right=frozenset({0})) + "\n")
        if len(shown) < len(report.problems):
            out.write(f"  ... and {len(report.problems) - len(shown)} more (--json lists them all)\n")
    redactions = dict(report.redactions)
    out.write(f"\nRedacted: {_counter_line(redactions) if redactions else 'nothing'}\n")
    out.write(f"Forms read: {_counter_line(dict(report.forms)) if report.forms else 'none'}\n")


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
                _shorten(r.text, _TEXT_WIDTH),
            )
            for r in report.written
        ]
        out.write(
            _table(("line", "scope", "turn", "layer", "id", "memory"), rows, right=frozenset({0, 2})) + "\n"
        )
    if report.restated:
        out.write(f"\nRestated: the memory's text stays ({len(report.restated)})\n")
        rows = [
            (
                r.line,
                readable_scope_path(r.scope_path),
                r.turn,
                _shorten(r.text, 40),
                r.node_id,
                _shorten(r.stored_text, 40),
                r.why(),
            )
            for r in report.restated
        ]
        headers = ("line", "scope", "turn", "restatement", "memory", "its text", "why")
        out.write(_table(headers, rows, right=frozenset({0, 2})) + "\n")
    if report.updated:
        out.write(f"\nUpdated: the new text is current, the old one a revision ({len(report.updated)})\n")
        rows = [
            (
                r.line,
                readable_scope_path(r.scope_path),
                r.turn,
                r.node_id,
                _shorten(r.stored_text, 40),
                _shorten(r.text, 40),
                r.why(),
            )
            for r in report.updated
        ]
        headers = ("line", "scope", "turn", "memory", "was", "now", "why")
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


# ---------------------------------------------------------------------------------------------------
# dedup
# ---------------------------------------------------------------------------------------------------
_DEDUP_EXAMPLES = """\
examples:
  memdedup dedup labels.txt --out decisions.csv
  memdedup dedup labels.parquet --mode join --cluster components --out clusters.parquet
  zcat labels.jsonl.gz | memdedup dedup - --input-format jsonl --out - | jq 'select(.reason != "new")'
"""


def _add_dedup_parser(subparsers: Any) -> None:
    from memdedup.tables import INPUT_FORMATS, OUTPUT_FORMATS

    parser = subparsers.add_parser(
        "dedup",
        help="find the restatements in a file of labels",
        description=(
            "Read INPUT (text: one label per line; .jsonl, .csv or .parquet: a label column and optional "
            "scope and layer columns; .gz on text formats; - for stdin) and decide for every label which "
            "earlier label it restates. --mode replay replays the writes in order as the write-time lookup "
            "decides them (prefix gate, first match); --mode join compares every pair with no prefix gate "
            "and clusters: with --cluster canonical each label joins the earliest canonical it matches, so "
            "every row matches its canonical label. Scope and layer are hard partitions, compared by type "
            "and value. Missing labels (null, NaN) are empty: never matched. No format is guessed: JSON "
            "read as text without --input-format is refused; pass --input-format jsonl or text."
        ),
        epilog=_DEDUP_EXAMPLES,
        formatter_class=_Help,
    )
    parser.add_argument(
        "input", metavar="INPUT", help="labels: .txt, .jsonl, .csv (optionally .gz) or .parquet; - stdin"
    )
    parser.add_argument(
        "--input-format",
        choices=INPUT_FORMATS,
        help="the input's format (default: by extension; text for - and other names)",
    )
    parser.add_argument("--mode", choices=("replay", "join"), default="replay", help="see above")
    parser.add_argument("--threshold", type=_unit_interval, default=0.85, help="ratio threshold")
    parser.add_argument(
        "--min-chars", type=_min_chars, default=16, help="containment minimum length (0 or more)"
    )
    parser.add_argument(
        "--prefix",
        choices=("raw", "normalised", "none"),
        help="replay only: the candidate gate, the raw label's 20-character prefix (the seed's), the "
        "normalised label's, or none (every earlier label of the partition: the gate-free lookup) "
        "(default: raw)",
    )
    parser.add_argument(
        "--cluster",
        choices=("canonical", "components"),
        help="join only: canonical (each label joins the earliest canonical it matches) or components "
        "(single linkage: chains, so a member may not match its canonical label at all; each row then "
        "names the label it matched: via, via_label, component_size, matches_canonical) "
        "(default: canonical)",
    )
    parser.add_argument("--label-column", default="label", help="the label column of .jsonl/.csv/.parquet")
    parser.add_argument(
        "--scope-column",
        default="scope",
        help="the scope column, used when present: a hard partition (nothing collapses across scopes)",
    )
    parser.add_argument(
        "--layer-column",
        default="layer",
        help="the layer column, used when present: a hard partition within each scope",
    )
    parser.add_argument(
        "--multiline",
        action="store_true",
        help="CSV: fields may hold line breaks (quoted); without it a field that spans lines is refused, "
        "naming the line where it opened (a stray quote would swallow the rows after it)",
    )
    parser.add_argument(
        "--json-columns",
        metavar="COLUMNS",
        type=_column_list,
        default=(),
        help="CSV and Parquet: the scope and/or layer columns (comma-separated) whose cells are JSON text, "
        "as --out writes a column whose values are not all strings: each cell is read as its JSON value",
    )
    parser.add_argument(
        "--out",
        metavar="PATH",
        help="write one row per label (index, label, scope, layer, canonical, canonical_label, reason, "
        "score): .jsonl, .csv (optionally .gz) or .parquet by extension; - for stdout (JSON lines)",
    )
    parser.add_argument(
        "--output-format", choices=OUTPUT_FORMATS, help="--out's format (default: by extension)"
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    _add_quiet(parser)
    parser.add_argument(
        "--engine",
        choices=("in-process", "dask"),
        default="in-process",
        help="in-process, or dask: partitioned by scope on a Dask cluster (memdedup[dask]); the same output",
    )
    parser.add_argument(
        "--scheduler", metavar="ADDRESS", help="dask: an existing cluster's scheduler (default: a local one)"
    )
    parser.add_argument(
        "--scheduler-timeout",
        type=_finite,
        default=10.0,
        metavar="SECONDS",
        help="dask: how long to try to reach --scheduler",
    )
    parser.add_argument(
        "--workers", type=int, metavar="N", help="dask: the local cluster's worker processes (default: CPUs)"
    )
    parser.set_defaults(func=_run_dedup)


def _column_list(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(","))
    if not all(names):
        shown = _message(text, 40)
        raise argparse.ArgumentTypeError(f"a comma-separated list of column names, not {shown!r}")
    return names


def _check_dedup_args(args: argparse.Namespace) -> str | None:
    """Refuse what would do nothing or cannot work, before anything is read; the output format."""
    from memdedup.outputs import check_writable
    from memdedup.tables import output_format

    if args.mode == "replay" and args.cluster is not None:
        raise InvalidInputError("--cluster applies to --mode join only (replay does not cluster)")
    if args.mode == "join" and args.prefix is not None:
        raise InvalidInputError("--prefix applies to --mode replay only (join has no prefix gate)")
    _check_min_chars(args.min_chars)
    if args.engine != "dask":
        if args.scheduler is not None or args.workers is not None:
            raise InvalidInputError("--scheduler and --workers apply to --engine dask only")
    elif args.scheduler is not None and args.workers is not None:
        raise InvalidInputError("--workers sizes a local cluster; it does not apply with --scheduler")
    if args.scheduler_timeout <= 0:
        raise InvalidInputError(f"--scheduler-timeout must be positive, not {args.scheduler_timeout}")
    if args.out is None:
        if args.output_format is not None:
            raise InvalidInputError("--output-format applies to --out only")
        return None
    kind = output_format(args.out, args.output_format)
    check_writable(args.out)
    if args.out != "-" and args.input != "-" and os.path.exists(args.out):
        try:
            if os.path.samefile(args.out, args.input):
                raise InvalidInputError(
                    f"--out {display_name(args.out)} is the input file: it would be overwritten"
                )
        except OSError:
            pass
    return kind


def _run_dedup(args: argparse.Namespace) -> int:
    from memdedup.batch import dedup_table
    from memdedup.tables import read_label_table, write_records

    out_format = _check_dedup_args(args)
    to_stdout = args.out == "-"
    progress = Progress.for_command(args.quiet)
    if args.engine == "dask":
        run = _run_dedup_dask(args, progress)
    else:
        table = read_label_table(
            args.input,
            label_column=args.label_column,
            scope_column=args.scope_column,
            layer_column=args.layer_column,
            fmt=args.input_format,
            progress=progress,
            multiline=args.multiline,
            json_columns=args.json_columns,
        )
        run = dedup_table(
            table,
            mode=args.mode,
            threshold=args.threshold,
            min_chars=args.min_chars,
            prefix=args.prefix or "raw",
            cluster=args.cluster or "canonical",
            progress=progress,
        )
    as_json: list[str] = []
    if args.out is not None:
        as_json = write_records(
            args.out,
            run.records(),
            run.columns(),
            fmt=out_format,
            total=len(run.table.labels),
            progress=progress,
            typed={"scope": run.table.scopes, "layer": run.table.layers},
        )
    summary = run.summary()
    summary["parameters"] = _dedup_parameters(args, summary["parameters"], out_format)
    if args.out is not None:
        summary["json_text_columns"] = as_json
    # With the rows on stdout, the summary goes to stderr so that the two never mix.
    stream = sys.stderr if to_stdout else sys.stdout
    if args.json:
        json.dump(summary, stream, indent=2, ensure_ascii=False)
        stream.write("\n")
    else:
        _print_dedup_summary(summary, args, stream)
    stream.flush()
    return 0


def _dedup_parameters(
    args: argparse.Namespace, used: dict[str, Any], out_format: str | None
) -> dict[str, Any]:
    """Every parameter of the run, as given or defaulted (the ``--json`` summary's ``parameters``; a
    path or an address shown as every path is: :func:`memdedup.inputs.display_name`)."""

    return {
        **used,
        "mode": args.mode,
        "input_format": args.input_format,
        "label_column": args.label_column,
        "scope_column": args.scope_column,
        "layer_column": args.layer_column,
        "multiline": args.multiline,
        "json_columns": list(args.json_columns),
        "engine": args.engine,
        "scheduler": display_name(args.scheduler) if args.scheduler is not None else None,
        "workers": args.workers,
        "out": args.out if args.out in (None, "-") else display_name(args.out),
        "output_format": out_format,
    }


def _print_dedup_summary(summary: dict[str, Any], args: argparse.Namespace, out: TextIO) -> None:

    params = summary["parameters"]
    how = f"prefix {params['prefix']}" if args.mode == "replay" else f"{params['cluster']} clusters"
    out.write(
        f"memdedup dedup: {summary['input']} ({args.mode}, {how}, threshold {params['threshold']}, "
        f"min-chars {params['min_chars']})\n"
        f"  {summary['labels']} labels: {summary['canonicals']} canonical, {summary['collapsed']} collapsed"
        f" in {summary['seconds']:.2f} s\n"
        f"  by reason: {_counter_line(summary['by_reason']) or 'none'}\n"
    )
    partitions = [f"{summary[k]} {k}" for k in ("scopes", "layers") if summary.get(k) is not None]
    if partitions:
        out.write(f"  partitions: {', '.join(partitions)} (nothing collapses across them)\n")
    if summary.get("components") is not None:
        _print_components(summary["components"], out)
    if summary["examples"]:
        out.write("\nExamples of collapses\n")
        chained = any("via" in e for e in summary["examples"])
        rows = [
            (
                e["index"],
                _shorten(e["label"], 44),
                e["canonical"],
                _shorten(e["canonical_label"], 44),
                *((e["via"],) if chained else ()),
                f"{e['reason']} {e['score']:.3f}" if e["score"] is not None else e["reason"],
            )
            for e in summary["examples"]
        ]
        headers = ("row", "label", "into", "canonical label", *(("via",) if chained else ()), "why")
        right = frozenset({0, 2, 4} if chained else {0, 2})
        out.write(_table(headers, rows, right=right) + "\n")
        if chained:
            out.write("  (why: the reason and score of row ~ via, the pair that linked the row in)\n")
    if args.out is not None and args.out != "-":
        out.write(f"\nwrote {display_name(args.out)} ({summary['labels']} rows, {params['output_format']})\n")
    for column in summary.get("json_text_columns", ()):
        where = "cell" if params["output_format"] == "csv" else "value"
        out.write(
            f"  {column}: written as JSON text, every {where} (its values are not all strings, or not all "
            f"of one type Parquet holds exactly): read it back with --json-columns {column}\n"
        )


def _print_components(components: dict[str, Any], out: TextIO, shown: int = 10) -> None:
    """A components run's chains: how many collapsed rows do not match their canonical label, and the
    components where fewer than half of the members do (the largest ``shown``)."""
    out.write(
        f"  components: {components['components']} (largest {components['largest']} labels); "
        f"{components['not_matching_canonical']} collapsed rows do not match their canonical label "
        "(single linkage chains: see via)\n"
    )
    loose = components["loose"]
    for item in loose[:shown]:
        out.write(
            f"  component of {item['size']} labels at row {item['canonical']} "
            f"({_shorten(item['canonical_label'], 40)!r}): {item['matching']} of {item['size'] - 1} members "
            f"({item['share']:.0%}) match its canonical label\n"
        )
    if len(loose) > shown:
        out.write(f"  ... and {len(loose) - shown} more such components (--json lists them all)\n")


def _run_dedup_dask(args: argparse.Namespace, progress: Progress) -> Any:
    """``--engine dask``: the same :class:`~memdedup.batch.DedupRun`, computed on a Dask cluster."""
    try:
        from memdedup.dask import dedup_file
    except ImportError as exc:
        raise InvalidInputError(f"--engine dask: {exc}") from exc
    return dedup_file(
        args.input,
        mode=args.mode,
        label=args.label_column,
        scope=args.scope_column,
        layer=args.layer_column,
        threshold=args.threshold,
        min_chars=args.min_chars,
        prefix=args.prefix or "raw",
        cluster=args.cluster or "canonical",
        scheduler=args.scheduler,
        workers=args.workers,
        fmt=args.input_format,
        timeout=args.scheduler_timeout,
        progress=progress,
        multiline=args.multiline,
        json_columns=args.json_columns,
    )


# ---------------------------------------------------------------------------------------------------
# tune
# ---------------------------------------------------------------------------------------------------
_TUNE_EXAMPLES = """\
examples:
  memdedup tune                                        # the bundled restatement corpus
  memdedup tune my-pairs.jsonl --thresholds 0.70:0.95:0.01 --plot tune.png
  memdedup tune --guards value,negation --prefix none --json > tune.json
"""


def _thresholds_arg(text: str) -> Any:
    from memdedup.tuning import parse_thresholds

    try:
        return parse_thresholds(text)
    except InvalidInputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _guards_arg(text: str) -> Any:
    from memdedup.guards import Guards

    try:
        return Guards.parse(text)
    except InvalidInputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_tune_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "tune",
        help="measure which restatement classes collapse or slip through at each threshold",
        description=(
            "Decide labelled pairs (JSONL: stored, incoming, same_fact, optional class; default: the bundled "
            "restatement corpus) as the write-time path does (prefix gate, ratio OR containment, guards) at "
            "every threshold of --thresholds, and report precision, recall and F1, the collapses per class, "
            "the false merges and misses at --threshold with their scores, and what each gate (raw, "
            "normalised, none: the gate-free lookup) costs in recall and false merges at --threshold and at "
            "its own best-F1 threshold."
        ),
        epilog=_TUNE_EXAMPLES,
        formatter_class=_Help,
    )
    parser.add_argument(
        "pairs", metavar="PAIRS.jsonl", nargs="?", help="labelled pairs (.gz read; - stdin; default: bundled)"
    )
    parser.add_argument(
        "--thresholds",
        type=_thresholds_arg,
        default="0.70:0.95:0.01",
        help="A:B:STEP, inclusive, or comma-separated values",
    )
    parser.add_argument("--threshold", type=_unit_interval, default=0.85, help="the threshold detailed")
    parser.add_argument(
        "--min-chars", type=_min_chars, default=16, help="containment minimum length (0 or more)"
    )
    parser.add_argument(
        "--prefix",
        choices=("raw", "normalised", "none"),
        default="raw",
        help="candidate gate: the raw label's 20-char prefix (the seed's), the normalised one's, or none",
    )
    parser.add_argument(
        "--guards", type=_guards_arg, default="none", help="none, value, negation, all or value,negation"
    )
    parser.add_argument("--show", type=_count, default=20, help="false merges and misses listed (0: all)")
    parser.add_argument("--json", action="store_true", help="print the full report as JSON")
    parser.add_argument(
        "--plot",
        metavar="FILE.png",
        help="draw precision/recall, a class heatmap and each gate's cost (needs matplotlib; .png, .pdf...)",
    )
    _add_quiet(parser)
    parser.set_defaults(func=_run_tune)


def _run_tune(args: argparse.Namespace) -> int:
    from memdedup.tuning import check_plot_path, plot_sweep, tune

    _check_min_chars(args.min_chars)
    if args.plot:
        check_plot_path(args.plot)
    progress = Progress.for_command(args.quiet or args.json)
    with progress.spinner("tune"):
        report = tune(
            args.pairs,
            thresholds=args.thresholds,
            threshold=args.threshold,
            min_chars=args.min_chars,
            prefix=args.prefix,
            guards=args.guards,
        )
    if args.plot:
        with progress.spinner("plot"):
            plot_sweep(
                report.sweep,
                args.plot,
                threshold=args.threshold,
                title=f"memdedup tune: {report.source}",
                gates=report.gates,
                best=report.gates_best,
            )
    if args.json:
        out = report.to_dict()
        if args.plot:
            out["plot"] = display_name(args.plot)
        json.dump(out, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    sys.stdout.write(report.text(show=args.show))
    if args.plot:
        sys.stdout.write(f"\nwrote {display_name(args.plot)}\n")
    return 0


# ---------------------------------------------------------------------------------------------------
# history, consolidate, recall: reading (and consolidating) a store
# ---------------------------------------------------------------------------------------------------
def _scope_arg(text: str) -> Any:
    """``--scope``: the printed form (``org:acme/user:dana``), or JSON levels (``[["org", "acme"]]``) for
    ids that hold ``/`` or ``:``."""
    from memdedup.scope import Scope

    try:
        if text.lstrip()[:1] in "[{":
            return Scope.parse(json.loads(text))
        return Scope.from_readable(text)
    except (ValueError, MemdedupError) as exc:
        raise argparse.ArgumentTypeError(_message(exc, 300)) from None


def _add_db_and_scope(parser: argparse.ArgumentParser, *, scope_required: bool) -> None:
    parser.add_argument("--db", required=True, metavar="PATH", help="the SQLite memory store")
    parser.add_argument(
        "--scope",
        type=_scope_arg,
        required=scope_required,
        metavar="SCOPE",
        help="the scope, as reports print it (org:acme/user:dana), or its levels as JSON "
        '([["org", "acme"], ["user", "dana"]]) when an id holds / or :',
    )


_HISTORY_EXAMPLES = """\
examples:
  memdedup history --db memory.sqlite --scope org:acme/user:dana
  memdedup history --db memory.sqlite --scope org:acme/user:dana x1.1.d3792a54e000 --json
"""


def _add_history_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "history",
        help="print every version of the memories a scope owns, oldest first",
        description=(
            "Print a memory's history: every text it held before a newer statement updated it, every "
            "restatement that kept its text, then its current text; with no ID, of every memory the scope "
            "owns (retracted ones included). Reads the store without writing to it."
        ),
        epilog=_HISTORY_EXAMPLES,
        formatter_class=_Help,
    )
    _add_db_and_scope(parser, scope_required=True)
    parser.add_argument(
        "id", nargs="?", metavar="ID", help="the memory's id (default: every memory of the scope)"
    )
    parser.add_argument("--json", action="store_true", help="print the histories as JSON")
    parser.set_defaults(func=_run_history)


def _run_history(args: argparse.Namespace) -> int:
    from memdedup.store import SQLiteGraphStore

    with SQLiteGraphStore(args.db, readonly=True) as store:
        if args.id is not None:
            node = store.owned_node(args.scope, args.id)
            if node is None:
                raise InvalidInputError(f"{args.scope} owns no memory {_message(args.id, 60)!r}")
            nodes = [node]
        else:
            nodes = store.owned_nodes(args.scope.scope_path, include_retracted=True)
        histories = [(node, store.history(args.scope, node.id)) for node in nodes]
    if args.json:
        data = [
            {"id": node.id, "scope": node.scope, "layer": node.layer, "retracted": node.retracted,
             "history": [entry.to_dict() for entry in history]}
            for node, history in histories
        ]  # fmt: skip
        json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    count = f"{len(histories)} memor{'y' if len(histories) == 1 else 'ies'}"
    print(f"memdedup history: {args.scope} in {display_name(args.db)}: {count}")
    for node, history in histories:
        state = f", retracted ({_shorten(node.retraction_reason, 80)})" if node.retracted else ""
        print(f"\n{node.id} ({node.layer}, {node.mentions} mentions{state})")
        rows = [
            (
                entry.kind,
                "" if entry.turn is None else entry.turn,
                entry.stated_at[:19],
                _shorten(entry.text, 60),
                _shorten(entry.reason, 50),
            )
            for entry in history
        ]
        print(_table(("kind", "turn", "stated at", "text", "reason"), rows))
    return 0


_CONSOLIDATE_EXAMPLES = """\
examples:
  memdedup consolidate --db memory.sqlite                  # a dry run: every merge, nothing written
  memdedup consolidate --db memory.sqlite --apply          # write them, one transaction per scope
  memdedup consolidate --db memory.sqlite --guards value,negation --scope org:acme/user:dana --json
"""


def _add_consolidate_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "consolidate",
        help="fold the restatements a store already holds into the memories they restate",
        description=(
            "Apply the write path's rule to the memories a store already holds: in each scope and layer, "
            "in store order, with no prefix gate, a memory that is the same fact as an earlier current one "
            "becomes a revision of it (restated: the earlier text stays; updated: its text becomes the "
            "current one), never deleted. A dry run by default, printing every merge with its reason and "
            "score; --apply writes them, one transaction per scope (a second --apply changes nothing)."
        ),
        epilog=_CONSOLIDATE_EXAMPLES,
        formatter_class=_Help,
    )
    _add_db_and_scope(parser, scope_required=False)
    parser.add_argument("--threshold", type=_unit_interval, default=0.85, help="the dedup ratio threshold")
    parser.add_argument(
        "--min-chars", type=_min_chars, default=16, help="the containment rule's shortest label"
    )
    parser.add_argument(
        "--guards",
        type=_guards_arg,
        default=None,
        metavar="GUARDS",
        help="none, value, negation, value,negation or all (default: none)",
    )
    parser.add_argument("--apply", action="store_true", help="write the merges (default: a dry run)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    _add_quiet(parser)
    parser.set_defaults(func=_run_consolidate)


def _run_consolidate(args: argparse.Namespace) -> int:
    from memdedup.consolidate import consolidate
    from memdedup.store import SQLiteGraphStore

    _check_min_chars(args.min_chars)
    progress = Progress.for_command(args.quiet or args.json)
    with SQLiteGraphStore(args.db, readonly=not args.apply) as store:
        total = store.count_nodes(include_retracted=False)
        with progress.bar("consolidate", total, unit=" rows") as advance:
            report = consolidate(
                store,
                threshold=args.threshold,
                min_chars=args.min_chars,
                guards=args.guards,
                scope=args.scope,
                apply=args.apply,
                progress=advance,
            )
    if args.json:
        json.dump(report.to_dict(), sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    counts = report.counts()
    print(
        f"memdedup consolidate: {display_name(args.db)}: {counts['rows']} memories in {counts['scopes']} "
        "scopes "
        f"(threshold {report.threshold}, min-chars {report.min_chars}, guards {report.guards}): "
        f"{counts['merges']} merges ({counts['restated']} restated, {counts['updated']} updated)"
    )
    if report.merges:
        rows = [
            (m.scope, m.layer, m.node_id, m.merged_id, m.kind, _shorten(m.current, 36), _shorten(m.text, 36),
             m.reason)
            for m in report.merges
        ]  # fmt: skip
        print(_table(("scope", "layer", "into", "merged", "kind", "was", "merged text", "why"), rows))
    if report.applied:
        print(f"applied: {counts['merges']} merges written; memdedup history shows every version")
    elif report.merges:
        print("dry run: nothing was written; --apply writes these merges")
    return 0


_RECALL_EXAMPLES = """\
examples:
  memdedup recall --db memory.sqlite --scope org:acme/user:dana
  memdedup recall --db memory.sqlite --scope org:acme/user:dana --char-ceiling 400 --json
"""


def _add_recall_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "recall",
        help="print the memory block a scope recalls: each fact once, in its current form",
        description=(
            "Print the memory block a scope recalls from the store: its own and its ancestors' memories, "
            "each group of restatements shown once (the nearest scope's, then the most recently stated), "
            "admitted by salience, then recency, under the ceiling. Reads the store without writing to it."
        ),
        epilog=_RECALL_EXAMPLES,
        formatter_class=_Help,
    )
    _add_db_and_scope(parser, scope_required=True)
    parser.add_argument(
        "--char-ceiling", type=_count, default=None, help="the block's size in characters at most"
    )
    parser.add_argument("--layer", default=None, help="only memories of this layer")
    parser.add_argument(
        "--no-collapse", dest="collapse", action="store_false", help="show every row, restatements too"
    )
    parser.add_argument("--json", action="store_true", help="print the block and what happened to every row")
    parser.set_defaults(func=_run_recall)


def _run_recall(args: argparse.Namespace) -> int:
    from memdedup.store import SQLiteGraphStore

    with SQLiteGraphStore(args.db, readonly=True) as store:
        block = store.recall(
            args.scope, char_ceiling=args.char_ceiling, layer=args.layer, collapse=args.collapse
        )
    if args.json:
        data = {
            "text": block.text,
            "admitted": list(block.admitted),
            "dropped": [list(d) for d in block.dropped],
        }
        json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    elif block.text:
        print(block.text)
    return 0


# ---------------------------------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------------------------------
_SUBCOMMANDS: tuple[Callable[[Any], None], ...] = (
    _add_ingest_parser,
    _add_dedup_parser,
    _add_tune_parser,
    _add_recall_parser,
    _add_history_parser,
    _add_consolidate_parser,
)


def build_parser() -> argparse.ArgumentParser:
    """The ``memdedup`` argument parser, with every subcommand in ``_SUBCOMMANDS``."""
    from memdedup import __version__

    parser = _Parser(
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
        _refuse_unrecognized(parser, args, extra)
    try:
        status = int(args.func(args))
        # Flushed here, not at exit: a reader that went away (``| head``) is answered below.
        sys.stdout.flush()
        return status
    except MemdedupError as exc:
        print(f"memdedup {args.command}: error: {_message(exc)}", file=sys.stderr)
        return 2
    except sqlite3.Error as exc:  # the database failed mid-run (disk full, I/O error): committed turns stay
        print(f"memdedup {args.command}: database error: {_message(exc)}", file=sys.stderr)
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
        where = f" {_message(exc.filename)}" if exc.filename else ""
        print(f"memdedup {args.command}: error:{where} {_message(exc.strerror or exc)}", file=sys.stderr)
        return 2
    except Exception as exc:  # the last resort: a bug or a broken environment, still one line
        return _unexpected(args.command, exc)


def _unexpected(command: str, exc: Exception) -> int:
    """One line on stderr naming the command and the exception type, its message scrubbed and cut
    (:func:`_message`: no input reaches the terminal unscrubbed), exit 1; ``MEMDEDUP_DEBUG=1`` prints
    the traceback first."""
    import traceback

    if os.environ.get("MEMDEDUP_DEBUG", "").strip() not in ("", "0"):
        traceback.print_exception(exc, file=sys.stderr)
    try:
        detail = _message(exc, 300)
    except Exception:  # scrubbing failed too: say nothing of the message rather than risk it
        detail = "(message withheld)"
    print(
        f"memdedup {command}: unexpected error ({type(exc).__name__}): {detail} "
        "(a bug or a broken environment; MEMDEDUP_DEBUG=1 shows the traceback)",
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
