"""How often recall shows a changed fact's current value: the fact-update corpus (benches/_facts_corpus.py),
ingested and recalled with the library's defaults, per class.

    python benches/bench_facts.py [--seeds 5]

For each seed, the corpus is ingested three ways (the defaults; ``guards="value,negation"``; the index
gate), each store recalled at every case's scope, and a case counts as right when its block shows the
fact's current text exactly once, no stale text, and the other scopes it names (the org, a sibling) still
show theirs. The script uses only what older builds have too (``ingest_file``, the store's ``recall``), so
running it with an older memdedup on ``PYTHONPATH`` gives the "before" column (an option an older build
lacks prints n/a).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _facts_corpus as facts  # benches/: the corpus and its check
import memdedup
from memdedup.ingest import ingest_file
from memdedup.scope import Scope
from memdedup.store import SQLiteGraphStore

VARIANTS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "guards": {"guards": "value,negation"},
    "index gate": {"gate": "index"},
}


def run(seed: int, options: dict[str, Any], where: Path) -> dict[str, tuple[int, int]] | None:
    """Per class, (cases right, cases) for one seed and one way of ingesting; None when this build lacks
    an option."""
    corpus = where / f"turns-{seed}.jsonl"
    cases = facts.write_corpus(str(corpus), seed=seed)
    db = where / f"m-{seed}-{'-'.join(map(str, options.values())) or 'defaults'}.sqlite"
    try:
        ingest_file(corpus, db, **options)
    except TypeError:
        return None
    with SQLiteGraphStore(db) as store:
        problems = facts.check(cases, lambda scope: store.recall(Scope.from_path(scope)).text)
    totals = {cls: sum(1 for case in cases if case.cls == cls) for cls in facts.CLASSES}
    wrong = {cls: len({p.split(":")[0] for p in found}) for cls, found in problems.items()}
    return {cls: (totals[cls] - wrong[cls], totals[cls]) for cls in facts.CLASSES}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, default=5, help="corpora to draw (default 5)")
    args = parser.parse_args()
    print(f"memdedup {memdedup.__version__} from {Path(memdedup.__file__).parent}")
    results: dict[str, dict[str, list[int]] | None] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, options in VARIANTS.items():
            total: dict[str, list[int]] | None = {cls: [0, 0] for cls in facts.CLASSES}
            for seed in range(args.seeds):
                found = run(seed, options, Path(tmp))
                if found is None or total is None:
                    total = None
                    break
                for cls, (right, count) in found.items():
                    total[cls][0] += right
                    total[cls][1] += count
            results[name] = total
    width = max(map(len, facts.CLASSES))
    print(f"{'class':<{width}}  " + "  ".join(f"{name:>12}" for name in VARIANTS))
    for cls in (*facts.CLASSES, "all"):
        cells = []
        for name in VARIANTS:
            total = results[name]
            if total is None:
                cells.append(f"{'n/a':>12}")
                continue
            right, count = (
                [sum(v[0] for v in total.values()), sum(v[1] for v in total.values())]
                if cls == "all"
                else total[cls]
            )
            cells.append(f"{f'{right}/{count}':>12}")
        print(f"{cls:<{width}}  " + "  ".join(cells))


if __name__ == "__main__":
    main()
