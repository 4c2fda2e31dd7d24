"""DedupStore over LangGraph's InMemoryStore and SqliteStore, beside the bare stores, on real labels.

    python benches/bench_langgraph.py [--corpus PATH] [--limit 100000] [--namespaces 1]
                                      [--searches 40] [--stores memory,sqlite] [--quick]

Each label becomes one memory, ``{"kind": "Memory", "content": {"content": LABEL}}`` (langmem's shape)
under a fresh key, put one call at a time (as langmem's manager writes), in corpus order, into
``--namespaces`` namespaces in turn, into the bare store and into ``DedupStore`` over a new store of the
same kind, the two taking turns every 500 labels, each call timed with ``time.perf_counter_ns``.
SqliteStore runs on a file in a temporary directory (WAL, ``synchronous=NORMAL``: a common production
setting, the same for both).

Reported per store kind: the cost per put (mean, p50, p99) bare and wrapped and their ratio; the share
collapsed (puts decided ``restated`` or ``updated``, i.e. items that left search) with the decision
counts; then search latency, bare and wrapped, over ``--searches`` calls of each shape on each side,
alternating (``search(ns, limit=10)`` at offsets 0, 10, 50 and 100, and
``search(ns, filter={"kind": "Memory"}, limit=10)``), where the wrapped store hides its superseded
items. No assertions on time: timings drift with the machine's load (the load average is printed at
the start and the end). ``--quick``: 2,000 labels, 10 searches of each shape.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import shlex
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _corpus import default_corpus, read_labels
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from memdedup.integrations.langgraph import DedupStore

SEARCHES = [
    {"limit": 10, "offset": 0},
    {"limit": 10, "offset": 10},
    {"limit": 10, "offset": 50},
    {"limit": 10, "offset": 100},
    {"limit": 10, "filter": {"kind": "Memory"}},
]


def percentile(values: Sequence[int], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return float(ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))])


def us(ns: float) -> str:
    return f"{ns / 1e3:,.1f} us"


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


class Kind:
    """Makes fresh stores of one kind, and cleans up after them."""

    def __init__(self, name: str, workdir: Path) -> None:
        self.name = name
        self.workdir = workdir
        self.made = 0
        self.conns: list[sqlite3.Connection] = []

    def make(self) -> BaseStore:
        if self.name == "memory":
            return InMemoryStore()
        from langgraph.store.sqlite import SqliteStore

        self.made += 1
        path = self.workdir / f"store-{self.made}.sqlite"
        conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        self.conns.append(conn)
        store = SqliteStore(conn)
        store.setup()
        return store

    def close(self) -> None:
        for conn in self.conns:
            conn.close()


def put_all(
    stores: list[BaseStore], labels: list[str], namespaces: list[tuple[str, ...]], chunk: int = 500
) -> list[list[int]]:
    """Put every label into each store, one call each, the stores taking turns every ``chunk`` labels (so
    each sees the machine's load of the same minutes); the time of each call in ns, per store."""
    times: list[list[int]] = [[] for _ in stores]
    clock = time.perf_counter_ns
    work = list(zip(range(len(labels)), labels, itertools.cycle(namespaces), strict=False))
    for start in range(0, len(work), chunk):
        for store, into in zip(stores, times, strict=True):
            for n, label, namespace in work[start : start + chunk]:
                value = {"kind": "Memory", "content": {"content": label}}
                started = clock()
                store.put(namespace, f"mem-{n}", value)
                into.append(clock() - started)
    return times


def search_times(
    bare: BaseStore, wrapped: BaseStore, namespaces: list[tuple[str, ...]], rounds: int
) -> dict[str, tuple[list[int], list[int]]]:
    """Alternating bare and wrapped calls of each search shape; the times of each in ns."""
    out: dict[str, tuple[list[int], list[int]]] = {}
    clock = time.perf_counter_ns
    for shape in SEARCHES:
        name = ", ".join(f"{k}={v}" for k, v in shape.items())
        mine: list[int] = []
        theirs: list[int] = []
        for n in range(max(1, rounds)):
            namespace = namespaces[n % len(namespaces)]
            for store, into in (
                ((bare, theirs), (wrapped, mine)) if n % 2 == 0 else ((wrapped, mine), (bare, theirs))
            ):
                started = clock()
                store.search(namespace, **shape)  # type: ignore[arg-type]
                into.append(clock() - started)
        out[name] = (theirs, mine)
    return out


def report(kind: str, bare_times: list[int], wrapped_times: list[int], store: DedupStore) -> None:
    decisions = Counter(d.kind for d in store.decisions())
    collapsed = decisions["restated"] + decisions["updated"]
    total = sum(decisions.values())
    print(f"\n== {kind}: {total:,} puts")
    print(f"  {'':18}{'mean':>12}{'p50':>12}{'p99':>12}")
    for name, times in (("bare", bare_times), ("DedupStore", wrapped_times)):
        mean = sum(times) / len(times)
        print(f"  {name:18}{us(mean):>12}{us(percentile(times, 0.5)):>12}{us(percentile(times, 0.99)):>12}")
    ratio = (sum(wrapped_times) / len(wrapped_times)) / (sum(bare_times) / len(bare_times))
    print(f"  cost per put: {ratio:.2f}x the bare store's (mean)")
    print(
        f"  collapsed: {collapsed:,} of {total:,} ({100 * collapsed / max(total, 1):.2f}%): "
        + ", ".join(f"{k} {decisions[k]:,}" for k in ("written", "restated", "updated", "passed"))
    )


def run(
    kind_name: str, labels: list[str], namespaces: list[tuple[str, ...]], rounds: int, workdir: Path
) -> None:
    kind = Kind(kind_name, workdir)
    try:
        bare, wrapped = kind.make(), DedupStore(kind.make())
        bare_times, wrapped_times = put_all([bare, wrapped], labels, namespaces)
        report(kind_name, bare_times, wrapped_times, wrapped)
        print(f"  search latency ({rounds} calls of each shape on each side, alternating):")
        for name, (theirs, mine) in search_times(bare, wrapped, namespaces, rounds).items():
            t_mean, m_mean = sum(theirs) / len(theirs), sum(mine) / len(mine)
            ratio = m_mean / t_mean
            print(f"    {name:36} bare {us(t_mean):>13}   DedupStore {us(m_mean):>13}   {ratio:5.2f}x")
    finally:
        kind.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=None, help="labels, one per line (gzip or text)")
    parser.add_argument("--limit", type=int, default=None, help="labels to put (default 100,000)")
    parser.add_argument("--namespaces", type=int, default=1, help="namespaces the puts go to, in turn")
    parser.add_argument("--searches", type=int, default=None, help="search calls of each shape, each side")
    parser.add_argument("--stores", default="memory,sqlite", help="store kinds: memory, sqlite")
    parser.add_argument("--quick", action="store_true", help="2,000 labels, 10 searches of each shape")
    args = parser.parse_args(argv)
    limit = args.limit or (2_000 if args.quick else 100_000)
    rounds = args.searches or (10 if args.quick else 40)
    corpus = args.corpus or default_corpus()
    labels = read_labels(corpus, limit)
    namespaces = [("bench", f"user-{n}", "memories") for n in range(max(1, args.namespaces))]
    print("$ python " + " ".join(shlex.quote(a) for a in [Path(__file__).name, *(argv or sys.argv[1:])]))
    print(f"{len(labels):,} labels from {corpus.name}, {len(namespaces)} namespace(s); load average {load()}")
    with tempfile.TemporaryDirectory(prefix="bench-langgraph-") as workdir:
        for kind in args.stores.split(","):
            run(kind.strip(), labels, namespaces, rounds, Path(workdir))
    print(f"\nload average {load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
