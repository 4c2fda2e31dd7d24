"""``memdedup tune``: thresholds, gates and guards measured on labelled pairs
(:func:`memdedup.tuning.tune`)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from memdedup.cli._common import (
    Help,
    add_quiet,
    check_min_chars,
    count_arg,
    guards_arg,
    min_chars_arg,
    thresholds_arg,
    unit_interval,
)
from memdedup.inputs import display_name
from memdedup.progress import Progress

_TUNE_EXAMPLES = """\
examples:
  memdedup tune                                        # the bundled restatement corpus
  memdedup tune my-pairs.jsonl --thresholds 0.70:0.95:0.01 --plot tune.png
  memdedup tune --guards value,negation --prefix none --json > tune.json
"""


def add_tune_parser(subparsers: Any) -> None:
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
        formatter_class=Help,
    )
    parser.add_argument(
        "pairs", metavar="PAIRS.jsonl", nargs="?", help="labelled pairs (.gz read; - stdin; default: bundled)"
    )
    parser.add_argument(
        "--thresholds",
        type=thresholds_arg,
        default="0.70:0.95:0.01",
        help="A:B:STEP, inclusive, or comma-separated values",
    )
    parser.add_argument("--threshold", type=unit_interval, default=0.85, help="the threshold detailed")
    parser.add_argument(
        "--min-chars", type=min_chars_arg, default=16, help="containment minimum length (0 or more)"
    )
    parser.add_argument(
        "--prefix",
        choices=("raw", "normalised", "none"),
        default="raw",
        help="candidate gate: the raw label's 20-char prefix (the seed's), the normalised one's, or none",
    )
    parser.add_argument(
        "--guards", type=guards_arg, default="none", help="none, value, negation, all or value,negation"
    )
    parser.add_argument("--show", type=count_arg, default=20, help="false merges and misses listed (0: all)")
    parser.add_argument("--json", action="store_true", help="print the full report as JSON")
    parser.add_argument(
        "--plot",
        metavar="FILE.png",
        help="draw precision/recall, a class heatmap and each gate's cost (needs matplotlib; .png, .pdf...)",
    )
    add_quiet(parser)
    parser.set_defaults(func=_run_tune)


def _run_tune(args: argparse.Namespace) -> int:
    from memdedup.tuning import check_plot_path, plot_sweep, tune

    check_min_chars(args.min_chars)
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
