"""``memdedup consolidate`` at scale: a store holding real labels as one scope's memories, consolidated (a
dry run) with the library's defaults.

    python benches/bench_consolidate.py [--corpus PATH] [--limit N ...]

For each size, the store is built from the first N labels of the corpus (the shared PyPI corpus when present,
else the bundled sample), every label a semantic memory of one scope, each stated once in corpus order; then
``consolidate`` runs as ``memdedup consolidate --db PATH`` does without ``--apply`` (the file opened
read-only, every merge planned). It prints the merges, the passes, the time and the rows per second.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _corpus import default_corpus, read_labels  # benches/: the corpus reader
from memdedup.consolidate import consolidate
from memdedup.scope import Scope
from memdedup.store import SQLiteGraphStore

DANA = Scope.root("org", "acme").child("user", "dana")


def build(path: Path, labels: list[str]) -> float:
    """A store of ``labels`` as Dana's semantic memories; the seconds it took."""
    began = time.perf_counter()
    with SQLiteGraphStore(path, check="off") as store, store.transaction():
        for k, label in enumerate(labels):
            if label.strip():
                store.insert_node(DANA, node_id=f"n{k}", layer="semantic", label=label, turn=k)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", default=str(default_corpus()), help="labels, one per line (.gz read)")
    parser.add_argument("--limit", type=int, nargs="+", default=[100_000, 841_708], help="store sizes")
    args = parser.parse_args()
    labels = read_labels(args.corpus)
    print(f"corpus: {args.corpus} ({len(labels):,} labels)")
    print(f"{'rows':>9}  {'build s':>8}  {'merges':>8}  {'restated':>8}  {'updated':>8}  {'passes':>6}  "
          f"{'dry run s':>9}  {'rows/s':>8}")  # fmt: skip
    for limit in args.limit:
        chosen = labels[:limit]
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "store.sqlite"
            built = build(db, chosen)
            began = time.perf_counter()
            report = consolidate(db)
            seconds = time.perf_counter() - began
        counts = report.counts()
        rate = counts["rows"] / seconds
        print(
            f"{counts['rows']:>9,}  {built:>8.1f}  {counts['merges']:>8,}  {counts['restated']:>8,}  "
            f"{counts['updated']:>8,}  {counts['rounds']:>6}  {seconds:>9.1f}  {rate:>8,.0f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
