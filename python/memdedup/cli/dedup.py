"""``memdedup dedup``: which label of a file restates which (:func:`memdedup.batch.dedup_table`, or Dask)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, TextIO

from memdedup.cli._common import (
    Help,
    add_quiet,
    check_min_chars,
    counter_line,
    finite,
    message,
    min_chars_arg,
    shorten,
    table,
    unit_interval,
)
from memdedup.errors import InvalidInputError
from memdedup.inputs import display_name
from memdedup.progress import Progress

_DEDUP_EXAMPLES = """\
examples:
  memdedup dedup labels.txt --out decisions.csv
  memdedup dedup labels.parquet --mode join --cluster components --out clusters.parquet
  zcat labels.jsonl.gz | memdedup dedup - --input-format jsonl --out - | jq 'select(.reason != "new")'
"""


def add_dedup_parser(subparsers: Any) -> None:
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
        formatter_class=Help,
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
    parser.add_argument("--threshold", type=unit_interval, default=0.85, help="ratio threshold")
    parser.add_argument(
        "--min-chars", type=min_chars_arg, default=16, help="containment minimum length (0 or more)"
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
    add_quiet(parser)
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
        type=finite,
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
        shown = message(text, 40)
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
    check_min_chars(args.min_chars)
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
        f"  by reason: {counter_line(summary['by_reason']) or 'none'}\n"
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
                shorten(e["label"], 44),
                e["canonical"],
                shorten(e["canonical_label"], 44),
                *((e["via"],) if chained else ()),
                f"{e['reason']} {e['score']:.3f}" if e["score"] is not None else e["reason"],
            )
            for e in summary["examples"]
        ]
        headers = ("row", "label", "into", "canonical label", *(("via",) if chained else ()), "why")
        right = frozenset({0, 2, 4} if chained else {0, 2})
        out.write(table(headers, rows, right=right) + "\n")
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
            f"({shorten(item['canonical_label'], 40)!r}): {item['matching']} of {item['size'] - 1} members "
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
