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

from memdedup.errors import InvalidInputError, MemdedupError

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
def _progress_bar(
    total: int, enabled: bool, *, unit: str = "turn", desc: str = "ingest"
) -> Iterator[Callable[[int], None] | None]:
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
    with tqdm(total=total or None, unit=unit, desc=desc, disable=None, leave=False, file=sys.stderr) as bar:
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
    """Exit 0: every line ingested; 1: finished, but some lines were not ingested or the database failed
    its integrity check; 2: the database cannot be used or failed mid-run (the partial report is printed:
    every turn it lists was written whole); 130: Ctrl-C, which stops at the next turn boundary and prints
    the partial report."""
    import warnings

    from memdedup.ingest import IngestInterrupted, IngestReport, count_lines, ingest_file
    from memdedup.scrub import CredentialScrubber
    from memdedup.store import StoreError, StoreIntegrityWarning

    try:
        total = count_lines(args.turns)
        with warnings.catch_warnings():
            # The run reports a failed integrity check itself (report.warnings), once, below.
            warnings.simplefilter("ignore", StoreIntegrityWarning)
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
    except KeyboardInterrupt as stopped:
        # At a turn boundary (IngestInterrupted), or before the first turn (counting, opening).
        if isinstance(stopped, IngestInterrupted):
            report = stopped.report
        else:
            report = IngestReport(source=args.turns, database=args.db, interrupted=True)
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
        print(f"memdedup ingest: error: {exc}", file=sys.stderr)
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
        print_ingest_summary(report, sys.stdout)
    sys.stdout.flush()


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
    if report.interrupted:
        out.write("  interrupted (Ctrl-C): stopped at a turn boundary; the turns below were written whole\n")
    if report.error:
        out.write(f"  stopped by a database error: {_shorten(report.error, _REASON_WIDTH)}\n")
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
# dedup
# ---------------------------------------------------------------------------------------------------
def _unit_interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must lie in [0, 1], not {value}")
    return value


def _add_dedup_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "dedup",
        help="find the restatements in a file of labels",
        description=(
            "Read INPUT (text: one label per line; .jsonl or .csv: a label column and optional scope and "
            "layer columns) and decide for every label which earlier label it restates. --mode replay "
            "replays the writes in order as the write-time lookup decides them (prefix gate, first match); "
            "--mode join finds every matching pair with no prefix gate and clusters them. Scope and layer "
            "are hard partitions."
        ),
    )
    parser.add_argument("input", metavar="INPUT", help="labels: .txt, .jsonl or .csv (optionally .gz)")
    parser.add_argument("--mode", choices=("replay", "join"), default="replay")
    parser.add_argument("--threshold", type=_unit_interval, default=0.85, help="ratio threshold (0.85)")
    parser.add_argument("--min-chars", type=int, default=16, help="containment minimum length (16)")
    parser.add_argument(
        "--prefix",
        choices=("raw", "normalised"),
        default="raw",
        help="replay's candidate gate: the raw label's prefix (the seed's) or the normalised label's",
    )
    parser.add_argument(
        "--cluster", choices=("canonical", "components"), default="canonical", help="join's clustering"
    )
    parser.add_argument("--label-column", default="label")
    parser.add_argument("--scope-column", default="scope")
    parser.add_argument("--layer-column", default="layer")
    parser.add_argument(
        "--out", metavar="PATH", help="write one JSON line per label (index, label, canonical, reason, score)"
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    parser.add_argument(
        "--engine",
        choices=("in-process", "dask"),
        default="in-process",
        help="in-process (default), or dask: partitioned by scope on a Dask cluster (memdedup[dask]); "
        "the same output. Dask also reads .parquet",
    )
    parser.add_argument(
        "--scheduler", metavar="ADDRESS", help="dask: an existing cluster's scheduler (default: a local one)"
    )
    parser.add_argument(
        "--workers", type=int, metavar="N", help="dask: the local cluster's worker processes (default: CPUs)"
    )
    parser.set_defaults(func=_run_dedup)


def _run_dedup(args: argparse.Namespace) -> int:
    from memdedup.batch import dedup_table, read_label_table

    if args.engine == "dask":
        run = _run_dedup_dask(args)
    else:
        if args.scheduler is not None or args.workers is not None:
            raise InvalidInputError("--scheduler and --workers apply to --engine dask only")
        with _progress_bar(0, not args.no_progress and not args.json, unit="label", desc="read") as progress:
            table = read_label_table(
                args.input,
                label_column=args.label_column,
                scope_column=args.scope_column,
                layer_column=args.layer_column,
                progress=progress,
            )
        run = dedup_table(
            table,
            mode=args.mode,
            threshold=args.threshold,
            min_chars=args.min_chars,
            prefix=args.prefix,
            cluster=args.cluster,
        )
    if args.out:
        try:
            with open(args.out, "w", encoding="utf-8", errors="surrogateescape") as out:
                for record in run.records():
                    out.write(json.dumps(record, ensure_ascii=False) + "\n")
        except OSError as exc:
            raise InvalidInputError(f"cannot write {args.out}: {exc.strerror or exc}") from exc
    summary = run.summary()
    if args.json:
        json.dump(summary, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    sys.stdout.write(
        f"memdedup dedup: {args.input} ({args.mode}"
        + (f", prefix {args.prefix}" if args.mode == "replay" else f", {args.cluster} clusters")
        + f", threshold {args.threshold})\n"
        f"  {summary['labels']} labels: {summary['canonicals']} canonical, {summary['collapsed']} collapsed"
        f" in {summary['seconds']:.2f} s\n"
        f"  by reason: {_counter_line(summary['by_reason'])}\n"
    )
    if args.out:
        sys.stdout.write(f"  wrote {args.out}\n")
    return 0


def _run_dedup_dask(args: argparse.Namespace) -> Any:
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
        prefix=args.prefix,
        cluster=args.cluster,
        scheduler=args.scheduler,
        workers=args.workers,
    )


# ---------------------------------------------------------------------------------------------------
# tune
# ---------------------------------------------------------------------------------------------------
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
            "and the false merges and misses at --threshold with their scores."
        ),
    )
    parser.add_argument("pairs", metavar="PAIRS.jsonl", nargs="?", help="labelled pairs (default: bundled)")
    parser.add_argument(
        "--thresholds",
        type=_thresholds_arg,
        default="0.70:0.95:0.01",
        help="A:B:STEP, inclusive (default 0.70:0.95:0.01), or comma-separated values",
    )
    parser.add_argument(
        "--threshold", type=_unit_interval, default=0.85, help="the threshold detailed (default 0.85)"
    )
    parser.add_argument("--min-chars", type=int, default=16, help="containment minimum length (16)")
    parser.add_argument(
        "--prefix",
        choices=("raw", "normalised", "none"),
        default="raw",
        help="candidate gate: the raw label's 20-char prefix (the seed's), the normalised one's, or none",
    )
    parser.add_argument(
        "--guards",
        type=_guards_arg,
        default="none",
        help="none, value, negation, all or value,negation (default none)",
    )
    parser.add_argument("--show", type=int, default=20, help="false merges and misses listed (0: all)")
    parser.add_argument("--json", action="store_true", help="print the full report as JSON")
    parser.add_argument(
        "--plot", metavar="FILE.png", help="draw precision/recall and a class heatmap (needs matplotlib)"
    )
    parser.set_defaults(func=_run_tune)


def _run_tune(args: argparse.Namespace) -> int:
    import importlib.util

    from memdedup.tuning import plot_sweep, tune

    if args.plot and importlib.util.find_spec("matplotlib") is None:
        print("memdedup tune: error: --plot needs matplotlib: pip install 'memdedup[plot]'", file=sys.stderr)
        return 2
    if args.min_chars < 0:
        raise InvalidInputError(f"--min-chars must not be negative, not {args.min_chars}")
    report = tune(
        args.pairs,
        thresholds=args.thresholds,
        threshold=args.threshold,
        min_chars=args.min_chars,
        prefix=args.prefix,
        guards=args.guards,
    )
    if args.plot:
        try:
            plot_sweep(
                report.sweep, args.plot, threshold=args.threshold, title=f"memdedup tune: {report.source}"
            )
        except OSError as exc:
            raise InvalidInputError(f"cannot write {args.plot}: {exc.strerror or exc}") from exc
    if args.json:
        out = report.to_dict()
        if args.plot:
            out["plot"] = args.plot
        json.dump(out, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    sys.stdout.write(report.text(show=args.show))
    if args.plot:
        sys.stdout.write(f"\nwrote {args.plot}\n")
    return 0


# ---------------------------------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------------------------------
_SUBCOMMANDS: tuple[Callable[[Any], None], ...] = (_add_ingest_parser, _add_dedup_parser, _add_tune_parser)


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
