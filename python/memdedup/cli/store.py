"""``memdedup recall``, ``history`` and ``consolidate``: reading a memory store, and folding the duplicates
it already holds (:meth:`memdedup.store.SQLiteGraphStore.recall`, ``.history``,
:func:`memdedup.consolidate.consolidate`)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from memdedup.cli._common import (
    Help,
    add_db_and_scope,
    add_quiet,
    check_min_chars,
    count_arg,
    guards_arg,
    message,
    min_chars_arg,
    shorten,
    table,
    unit_interval,
)
from memdedup.errors import InvalidInputError
from memdedup.inputs import display_name
from memdedup.progress import Progress

_HISTORY_EXAMPLES = """\
examples:
  memdedup history --db memory.sqlite --scope org:acme/user:dana
  memdedup history --db memory.sqlite --scope org:acme/user:dana x1.1.d3792a54e000 --json
"""


def add_history_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "history",
        help="print every version of the memories a scope owns, oldest first",
        description=(
            "Print a memory's history: every text it held before a newer statement updated it, every "
            "restatement that kept its text, then its current text; with no ID, of every memory the scope "
            "owns (retracted ones included). Reads the store without writing to it."
        ),
        epilog=_HISTORY_EXAMPLES,
        formatter_class=Help,
    )
    add_db_and_scope(parser, scope_required=True)
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
                raise InvalidInputError(f"{args.scope} owns no memory {message(args.id, 60)!r}")
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
        state = f", retracted ({shorten(node.retraction_reason, 80)})" if node.retracted else ""
        print(f"\n{node.id} ({node.layer}, {node.mentions} mentions{state})")
        rows = [
            (
                entry.kind,
                "" if entry.turn is None else entry.turn,
                entry.stated_at[:19],
                shorten(entry.text, 60),
                shorten(entry.reason, 50),
            )
            for entry in history
        ]
        print(table(("kind", "turn", "stated at", "text", "reason"), rows))
    return 0


_CONSOLIDATE_EXAMPLES = """\
examples:
  memdedup consolidate --db memory.sqlite                  # a dry run: every merge, nothing written
  memdedup consolidate --db memory.sqlite --apply          # write them, one transaction per scope
  memdedup consolidate --db memory.sqlite --guards value,negation --scope org:acme/user:dana --json
"""


def add_consolidate_parser(subparsers: Any) -> None:
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
        formatter_class=Help,
    )
    add_db_and_scope(parser, scope_required=False)
    parser.add_argument("--threshold", type=unit_interval, default=0.85, help="the dedup ratio threshold")
    parser.add_argument(
        "--min-chars", type=min_chars_arg, default=16, help="the containment rule's shortest label"
    )
    parser.add_argument(
        "--guards",
        type=guards_arg,
        default=None,
        metavar="GUARDS",
        help="none, value, negation, value,negation or all (default: none)",
    )
    parser.add_argument("--apply", action="store_true", help="write the merges (default: a dry run)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    add_quiet(parser)
    parser.set_defaults(func=_run_consolidate)


def _run_consolidate(args: argparse.Namespace) -> int:
    from memdedup.consolidate import consolidate
    from memdedup.store import SQLiteGraphStore

    check_min_chars(args.min_chars)
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
                phases=progress,
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
            (m.scope, m.layer, m.node_id, m.merged_id, m.kind, shorten(m.current, 36), shorten(m.text, 36),
             m.reason)
            for m in report.merges
        ]  # fmt: skip
        print(table(("scope", "layer", "into", "merged", "kind", "was", "merged text", "why"), rows))
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


def add_recall_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "recall",
        help="print the memory block a scope recalls: each fact once, in its current form",
        description=(
            "Print the memory block a scope recalls from the store: its own and its ancestors' memories, "
            "each group of restatements shown once (the nearest scope's, then the most recently stated), "
            "admitted by salience, then recency, under the ceiling. Reads the store without writing to it."
        ),
        epilog=_RECALL_EXAMPLES,
        formatter_class=Help,
    )
    add_db_and_scope(parser, scope_required=True)
    parser.add_argument(
        "--char-ceiling", type=count_arg, default=None, help="the block's size in characters at most"
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
