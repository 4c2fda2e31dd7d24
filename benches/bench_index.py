"""The exact candidate index (``memdedup.index.LabelIndex``) as it grows to the whole corpus, beside the
seed's prefix gate.

    python benches/bench_index.py [--corpus PATH] [--limit N] [--checkpoints 100000,400000,841708]
                                  [--queries 2000] [--exact 20] [--seed 0] [--quick] [--service]

1. Build: ``LabelIndex.build`` of every label (and the core's ``insert_many`` alone): wall time, the
   index's ``memory_bytes()`` and the process's resident-set growth (VmRSS from /proc/self/status,
   before and after; the peak, VmHWM, beside it).
2. Growth: the labels inserted one at a time in corpus order into the wrapper (``LabelIndex.insert``,
   what users call) and into a core index (``_core.LabelIndex.insert``) side by side. At each checkpoint:
   insert latency over the segment since the previous one; then Q queries (a fixed-seed mix: stored
   labels, and unseen restatements of stored labels: a word dropped, case changed, punctuation changed),
   each through the wrapper, the core and the seed's gate in turn, timed per call with
   ``time.perf_counter_ns``; the first few queries of each checkpoint run once untimed as a warm-up.
3. The seed's gate, for comparison: the candidates are the stored labels whose stripped text starts
   with the incoming label's stripped first 20 characters, the oldest 20 of them, decided by
   ``match_mask`` (``labels_match`` per candidate). The fetch is one dict lookup: labels whose stripped
   text has 20 characters or more are listed under those 20 characters (the first 20 of each, oldest
   first); an incoming label shorter than 20 characters (stripped) has its whole stripped text as the
   prefix, and every stored label starting with it (short or long) is a candidate, so for those keys a
   second dict lists the first 20 stored labels starting with the key. That second dict holds only the
   short keys this run queries (known before the run starts), as a 20-capped prefix trie would hold
   them; building it is not timed. So the gate's timed work is the lookup, the candidate list and the
   decision: its best case. Its matches are a subset of the index's (same predicate, fewer
   candidates); "matches found by the gate / by the index" counts them.
   Latency is printed as mean, p50, p99 and p99.9 (nearest rank).
   Exactness: at each checkpoint, ``--exact`` of the queries are also answered by brute force (every
   stored label decided by ``match_mask``, the reasons and ratios by ``match_reason``) and compared with
   the wrapper's and the core's answers.
4. A summary against the issue's targets (stated for 841,708 labels on 2 cores), "met" or "not met"
   with the measured figure, and the load average at the start and the end (the machine may be shared).
5. ``--service`` (issue 37's figures for a long-running index; this section alone with ``--service-only``):
   long labels (insert and query of 200k and 400k characters and the ratio, two 2 MB labels through the
   index beside the prefix gate's decision of the same pair), removals (all N copies of one label, and N
   labels sharing a phrase, removed: time per removal as N doubles), and churn (one label inserted and
   removed 2 M times with no live label: RSS and ``memory_bytes()`` before and after, ``stats()``).

No assertions on time: timings drift with the machine's load. ``--quick``: 50,000 labels, checkpoints
10,000 and 50,000, 300 queries, and a tenth of the service section's churn (each overridable).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import random
import resource
import sys
import tempfile
import time
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import memdedup
from _corpus import default_corpus, read_labels
from _proc import status_kib
from memdedup._backend import impl as core
from memdedup.index import LabelIndex
from memdedup.ingest import ingest_turns

PREFIX_LEN = 20  # the seed's DEDUP_PREFIX_LEN
QUERY_LIMIT = 20  # the seed's DEDUP_QUERY_LIMIT
WARM_UP = 20
FULL_CORPUS = 841_708
TARGETS = {
    "query mean": 100e3,  # ns
    "query p99": 2e6,
    "insert mean": 50e3,
    "build": 10e9,
    "memory": 2**30,  # bytes
}
SERVICE_TARGETS = {
    "long insert x (200k -> 400k chars)": 2.6,
    "churn RSS growth (MiB)": 16.0,
}
EDITS = ("drop a word", "case", "punctuation")
TERMINAL = ".!?;:,"


# -- measuring


def rss_bytes() -> tuple[int, str]:
    """The current resident set (VmRSS), or the peak from getrusage where /proc is missing."""
    kib = status_kib("VmRSS")
    if kib is not None:
        return kib * 1024, "VmRSS"
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, "ru_maxrss (peak)"


def percentile(sorted_ns: Sequence[int], q: float) -> float:
    """Nearest-rank percentile of an ascending sequence."""
    if not sorted_ns:
        return math.nan
    return float(sorted_ns[min(len(sorted_ns) - 1, max(0, math.ceil(q * len(sorted_ns)) - 1))])


@dataclass
class Stats:
    mean: float
    p50: float
    p99: float
    p999: float
    max: float
    n: int

    @classmethod
    def of(cls, ns: Sequence[int]) -> Stats:
        s = sorted(ns)
        if not s:
            return cls(math.nan, math.nan, math.nan, math.nan, math.nan, 0)
        return cls(
            sum(s) / len(s),
            percentile(s, 0.5),
            percentile(s, 0.99),
            percentile(s, 0.999),
            float(s[-1]),
            len(s),
        )


def us(ns: float) -> str:
    return f"{ns / 1e3:,.1f} us" if not math.isnan(ns) else "n/a"


def mib(n: float) -> str:
    return f"{n / 2**20:,.1f} MiB"


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f} (1, 5, 15 min)"


# -- queries


def restate(rnd: random.Random, label: str, edit: str) -> str:
    """One restatement of ``label`` of the kind ``edit``; may return ``label`` itself (then retried)."""
    if edit == "drop a word":
        words = label.split()
        if len(words) < 2:
            return label
        del words[rnd.randrange(len(words))]
        return " ".join(words)
    if edit == "case":
        k = rnd.randrange(3)
        if k == 0:
            return label.lower()
        if k == 1:
            return label.upper()
        return label[:1].swapcase() + label[1:]
    stripped = label.rstrip(TERMINAL)
    if stripped != label and rnd.random() < 0.5:
        return stripped
    return stripped + rnd.choice([".", "!", "...", ";"])


@dataclass
class Query:
    text: str
    kind: str  # "stored" or "restated"
    edit: str  # "" for stored


def draw_queries(
    rnd: random.Random, labels: list[str], stored: int, n: int, first_seen: dict[str, int]
) -> list[Query]:
    """``n`` queries at ``stored`` labels: half stored labels, half unseen restatements of stored ones."""
    out = []
    for k in range(n):
        if k % 2 == 0:
            out.append(Query(labels[rnd.randrange(stored)], "stored", ""))
            continue
        edit = EDITS[(k // 2) % len(EDITS)]
        for _ in range(100):
            text = restate(rnd, labels[rnd.randrange(stored)], edit)
            if text.strip() and first_seen.get(text, stored) >= stored:
                break
        else:  # a corpus of one-word labels all already restated: fall back to a stored label
            out.append(Query(labels[rnd.randrange(stored)], "stored", ""))
            continue
        out.append(Query(text, "restated", edit))
    return out


# -- the seed's gate


class PrefixGate:
    """The seed's candidate fetch: the oldest 20 stored labels whose stripped text starts with the
    incoming stripped label's first 20 characters (see the module docstring for the two dicts)."""

    def __init__(self, short_keys: set[str]) -> None:
        self.long: dict[str, list[int]] = {}
        self.short: dict[str, list[int]] = {k: [] for k in short_keys}
        self.short_lengths = sorted({len(k) for k in short_keys})

    def insert(self, slot: int, label: str) -> None:
        text = label.strip()
        if len(text) >= PREFIX_LEN:
            listed = self.long.setdefault(text[:PREFIX_LEN], [])
            if len(listed) < QUERY_LIMIT:
                listed.append(slot)
        for n in self.short_lengths:
            if n > len(text):
                break
            short = self.short.get(text[:n])
            if short is not None and len(short) < QUERY_LIMIT:
                short.append(slot)

    def candidates(self, text: str) -> list[int]:
        key = text[:PREFIX_LEN]
        return self.long.get(key, []) if len(key) == PREFIX_LEN else self.short[key]


# -- growth


@dataclass
class Checkpoint:
    stored: int
    insert_wrapper: Stats
    insert_core: Stats
    # per query kind ("all", "stored", "restated"): latencies of wrapper, core, gate
    query: dict[str, dict[str, Stats]] = field(default_factory=dict)
    matches: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # kind -> (index, gate, n)
    decided: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # kind -> (index, gate, same)
    per_edit: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    memory_wrapper: int = 0
    memory_core: int = 0
    exact: tuple[int, int] = (0, 0)  # (queries checked against brute force, mismatches)


def run_queries(
    queries: list[Query], wrapper: LabelIndex, index: object, gate: PrefixGate, labels: list[str]
) -> tuple[dict[str, dict[str, Stats]], dict[str, tuple[int, int, int]], dict[str, tuple[int, int, int]]]:
    ns = time.perf_counter_ns
    match_mask: Callable[..., list[bool]] = core.match_mask
    query_core = index.query  # type: ignore[attr-defined]
    for q in queries[:WARM_UP]:
        wrapper.query(q.text)
        wrapper.first_match(q.text)
        query_core(q.text, 0)
        match_mask(q.text.strip(), [labels[j] for j in gate.candidates(q.text.strip())])
    times: dict[str, dict[str, list[int]]] = {
        kind: {"wrapper": [], "first": [], "core": [], "gate": [], "matches": []}
        for kind in ("all", "stored", "restated")
    }
    counts: dict[str, list[int]] = {kind: [0, 0, 0] for kind in ("all", "stored", "restated", *EDITS)}
    decided: dict[str, list[int]] = {kind: [0, 0, 0] for kind in ("all", "stored", "restated")}
    mismatches = 0
    for q in queries:
        t0 = ns()
        found = wrapper.query(q.text)
        t1 = ns()
        first = wrapper.first_match(q.text)
        t1b = ns()
        found_core = query_core(q.text, 0)
        t2 = ns()
        text = q.text.strip()
        slots = gate.candidates(text)
        mask = match_mask(text, [labels[j] for j in slots])
        t3 = ns()
        gate_ids = [j for j, hit in zip(slots, mask, strict=True) if hit]
        index_ids = [m.id for m in found]
        first_id = first.id if first is not None else None
        if (
            [s for s, _, _ in found_core] != index_ids
            or first_id != (index_ids[0] if index_ids else None)
            or not set(gate_ids) <= set(index_ids)
        ):
            mismatches += 1
        for kind in ("all", q.kind):
            times[kind]["wrapper"].append(t1 - t0)
            times[kind]["first"].append(t1b - t1)
            times[kind]["core"].append(t2 - t1b)
            times[kind]["matches"].append(len(index_ids))
            times[kind]["gate"].append(t3 - t2)
            decided[kind][0] += bool(index_ids)
            decided[kind][1] += bool(gate_ids)
            decided[kind][2] += bool(index_ids) and bool(gate_ids) and index_ids[0] == gate_ids[0]
        for kind in {"all", q.kind, q.edit} - {""}:
            counts[kind][0] += len(index_ids)
            counts[kind][1] += len(gate_ids)
            counts[kind][2] += 1
    if mismatches:
        print(f"  WARNING: {mismatches} queries where the core, the wrapper and the gate disagree")
    # "matches" holds counts, not times: its Stats are match counts per query.
    stats = {kind: {k: Stats.of(v) for k, v in by.items()} for kind, by in times.items()}
    return (
        stats,
        {k: (v[0], v[1], v[2]) for k, v in counts.items()},
        {k: (v[0], v[1], v[2]) for k, v in decided.items()},
    )


def brute_force(text: str, labels: Sequence[str], stored: int) -> list[tuple[int, str, float]]:
    """Every stored label decided (``match_mask`` in the core, in order), each match's reason and ratio
    by ``match_reason``: what the index must answer, without it."""
    mask = core.match_mask(text, labels[:stored])
    out = []
    for k, hit in enumerate(mask):
        if hit:
            found = memdedup.match_reason(labels[k], text)
            assert found is not None
            out.append((k, found[0], found[1]))
    return out


def check_exact(
    queries: list[Query], wrapper: LabelIndex, index: object, labels: list[str], stored: int
) -> tuple[int, int]:
    """The sampled queries against brute force: (checked, mismatches)."""
    wrong = 0
    for q in queries:
        want = brute_force(q.text, labels, stored)
        got_wrapper = [tuple(m) for m in wrapper.query(q.text)]
        got_core = [tuple(m) for m in index.query(q.text, 0)]  # type: ignore[attr-defined]
        if got_wrapper != want or got_core != want:
            wrong += 1
            print(f"  MISMATCH on {q.text[:60]!r}: {len(want)} by brute force, {len(got_wrapper)} found")
    return len(queries), wrong


def print_checkpoint(cp: Checkpoint, previous: int) -> None:
    print(f"\n-- {cp.stored:,} stored labels")
    print(f"  inserts {previous + 1:,}..{cp.stored:,}, one call each:")
    for name, st in (("LabelIndex.insert (wrapper)", cp.insert_wrapper), ("core insert", cp.insert_core)):
        print(
            f"    {name:30s} mean {us(st.mean):>11s}   p50 {us(st.p50):>11s}   p99 {us(st.p99):>11s}"
            f"   max {us(st.max):>11s}"
        )
    print(f"  memory_bytes(): wrapper {mib(cp.memory_wrapper)}, core {mib(cp.memory_core)}")
    checked, wrong = cp.exact
    print(f"  exact against brute force: {checked - wrong:,} of {checked:,} sampled queries agree")
    n_all = cp.query["all"]["wrapper"].n
    print(f"  {n_all:,} queries (after {WARM_UP} untimed), latency per call:")
    print(f"    {'':40s} {'mean':>12s} {'p50':>12s} {'p99':>12s} {'p99.9':>12s} {'max':>12s}")
    for kind in ("all", "stored", "restated"):
        for name, who in (
            ("LabelIndex.query", "wrapper"),
            ("LabelIndex.first_match", "first"),
            ("core query", "core"),
            ("prefix gate", "gate"),
        ):
            st = cp.query[kind][who]
            label = f"{kind} ({st.n}): {name}"
            print(
                f"    {label:40s} {us(st.mean):>12s} {us(st.p50):>12s} {us(st.p99):>12s} {us(st.p999):>12s}"
                f" {us(st.max):>12s}"
            )
    print("  matches per query (mean), and matches found by the gate / by the index:")
    for kind in ("all", "stored", "restated", *EDITS):
        index_n, gate_n, n = cp.matches[kind]
        if not n:
            continue
        share = f"{gate_n / index_n:.1%}" if index_n else "n/a"
        print(
            f"    {kind + ' (' + str(n) + ')':24s} index {index_n / n:8.2f}   gate {gate_n / n:8.2f}   "
            f"matches found by the gate / by the index: {gate_n:,} / {index_n:,} = {share}"
        )
    print("  index matches per query (the query's answer size):")
    for kind in ("all", "stored", "restated"):
        st = cp.query[kind]["matches"]
        print(
            f"    {kind:10s} mean {st.mean:8.2f}   p50 {st.p50:6.0f}   p99 {st.p99:6.0f}   max {st.max:6.0f}"
        )
    print("  queries with some match (the write-time decision: collapse or insert):")
    for kind in ("all", "stored", "restated"):
        index_n, gate_n, same = cp.decided[kind]
        print(
            f"    {kind:10s} index {index_n:,}, gate {gate_n:,}; "
            f"same first (oldest) match {same:,}; the gate misses {index_n - gate_n:,}"
        )


# -- 5. the service figures


def _long_label(rnd: random.Random, n: int) -> str:
    """About ``n`` characters of random words (many distinct minimisers: the minimiser pass's worst
    case for a label, not a repetitive one)."""
    words = ["".join(rnd.choices("abcdefghijklmnopqrstuvwxyz", k=rnd.randint(2, 9))) for _ in range(5000)]
    out: list[str] = []
    size = 0
    while size < n:
        word = rnd.choice(words)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)[:n]


def _seconds(call: Callable[[], object], repeat: int = 3) -> float:
    """The least of ``repeat`` wall times of ``call`` (the least is the least disturbed by the load)."""
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - t0)
    return best


def _turn(number: int, label: str) -> dict[str, Any]:
    """A turn whose model output writes one memory with ``label``."""
    op = {
        "action": "upsert_node",
        "layer": "semantic",
        "label": label,
        "properties": {"memory_category": "preference", "subject": "user"},
        "importance": 6,
    }
    output = "```json\n" + json.dumps({"ops": [op]}) + "\n```"
    scope = [{"kind": "org", "id": "acme"}, {"kind": "user", "id": "dana"}]
    return {"scope": scope, "turn": number, "messages": [], "output": output, "provider": "openai"}


def service(quick: bool) -> None:
    """Issue 37's figures for a long-running index, each with its target where the issue states one."""
    rnd = random.Random(37)
    print("\n5. the index as a long-running service")
    # Long labels.
    times = {}
    for n in (200_000, 400_000, 1_000_000, 2_000_000):
        label = _long_label(rnd, n)
        index = LabelIndex()
        index.insert(label[: n // 2] + " and more", "half")
        times[n] = (
            _seconds(lambda index=index, label=label: (index.insert(label, "x"), index.remove("x"))),
            _seconds(lambda index=index, label=label: index.query(label)),
        )
        insert_ms, query_ms = times[n][0] * 1e3, times[n][1] * 1e3
        print(f"  a {n:>9,}-character label: insert {insert_ms:8.1f} ms, query {query_ms:8.1f} ms")
    ratio = times[400_000][0] / times[200_000][0]
    target = SERVICE_TARGETS["long insert x (200k -> 400k chars)"]
    print(
        f"  insert time 200k -> 400k characters: x{ratio:.2f} (target x{target} or less: "
        f"{'met' if ratio <= target else 'not met'}); query x{times[400_000][1] / times[200_000][1]:.2f}"
    )
    a = _long_label(rnd, 2_000_000)
    b = a[:1_000_000] + " restated " + a[1_000_000:]
    index = LabelIndex()
    t_index = _seconds(lambda: (index.insert(a, "a"), index.query(b), index.remove("a")), repeat=2)
    t_gate = _seconds(lambda: core.match_mask(b, [a]), repeat=2)
    print(
        f"  two 2 MB labels: the index (insert, query, remove) {t_index:.2f} s; the prefix gate's decision "
        f"of the same pair (match_mask) {t_gate:.2f} s"
    )
    turns = [_turn(1, a), _turn(2, b)]
    with tempfile.TemporaryDirectory() as tmp:
        t_ingest = {
            gate: _seconds(
                lambda gate=gate: ingest_turns(
                    turns, Path(tmp) / f"{gate}{time.time_ns()}.sqlite", gate=gate
                ),
                repeat=2,
            )
            for gate in ("prefix", "index")
        }
    print(
        f"  ingest of two turns with 2 MB labels: --gate index {t_ingest['index']:.2f} s, --gate prefix "
        f"{t_ingest['prefix']:.2f} s (x{t_ingest['index'] / t_ingest['prefix']:.2f})"
    )
    # Removals.
    for name, make in (
        ("N copies of one label", lambda k: "the user prefers dark mode in every editor they use"),
        ("N labels sharing a phrase", lambda k: f"label {k}: the user prefers dark mode in every editor"),
    ):
        per = []
        for n in (20_000, 40_000, 80_000):
            index = LabelIndex()
            index.insert_many([make(k) for k in range(n)], range(n))
            t0 = time.perf_counter()
            for k in range(n):
                index.remove(k)
            per.append((n, (time.perf_counter() - t0) / n))
        steps = ", ".join(f"{n:,}: {t * 1e6:.1f} us" for n, t in per)
        print(f"  removing all {name}: per removal {steps} (x{per[-1][1] / per[0][1]:.2f} from 20k to 80k)")
    # Churn.
    cycles = 200_000 if quick else 2_000_000
    index = LabelIndex()
    label = "the user prefers dark mode in every editor they use"
    for k in range(1000):  # the tables' first growth
        index.insert(label, k)
        index.remove(k)
    gc.collect()
    rss0, rss_name = rss_bytes()
    bytes0 = index.memory_bytes()
    t0 = time.perf_counter()
    for k in range(cycles):
        index.insert(label, k)
        index.remove(k)
    elapsed = time.perf_counter() - t0
    gc.collect()
    rss1, _ = rss_bytes()
    growth = (rss1 - rss0) / 2**20
    target = SERVICE_TARGETS["churn RSS growth (MiB)"]
    print(
        f"  churn, {cycles:,} insert/remove cycles of one label ({elapsed / cycles * 1e6:.1f} us a cycle): "
        f"{rss_name} {growth:+.1f} MiB (target +{target:.0f} MiB or less: "
        f"{'met' if growth <= target else 'not met'}), "
        f"memory_bytes() {bytes0:,} -> {index.memory_bytes():,}"
    )
    print(f"  stats() after the churn: {index.stats()}")


# -- arguments


def _positive(text: str) -> int:
    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _checkpoints(text: str) -> list[int]:
    parts = [part for part in text.split(",") if part.strip()]
    if not parts:
        raise argparse.ArgumentTypeError("no checkpoint given")
    return sorted({_positive(part) for part in parts})


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", default=str(default_corpus()), help="one label per line (.gz or text)")
    parser.add_argument("--limit", type=_positive, help="the first N labels (default: all; --quick: 50,000)")
    parser.add_argument(
        "--checkpoints",
        type=_checkpoints,
        help="stored-label counts to measure at, comma-separated (default 100000,400000,841708; "
        "--quick: 10000,50000); counts past the corpus are dropped and its size always measured",
    )
    parser.add_argument(
        "--queries", type=_positive, help="queries per checkpoint (default 2,000; --quick: 300)"
    )
    parser.add_argument(
        "--exact",
        type=int,
        default=20,
        help="queries per checkpoint checked against brute force (default 20)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="50,000 labels, 300 queries")
    parser.add_argument("--service", action="store_true", help="also the long-running service figures (5.)")
    parser.add_argument("--service-only", action="store_true", help="only the service figures (5.)")
    args = parser.parse_args(argv)
    if not Path(args.corpus).is_file():
        parser.error(f"no corpus at {args.corpus}")
    if args.limit is None and args.quick:
        args.limit = 50_000
    if args.queries is None:
        args.queries = 300 if args.quick else 2_000
    if args.checkpoints is None:
        args.checkpoints = [10_000, 50_000] if args.quick else [100_000, 400_000, FULL_CORPUS]
    return args


# -- main


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    print(f"load average at start: {load()}")
    if args.service_only:
        service(args.quick)
        print(f"load average at end: {load()}")
        return 0
    labels = read_labels(args.corpus, args.limit)
    n = len(labels)
    checkpoints = sorted({c for c in args.checkpoints if c < n} | {n})
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(
        f"memdedup {memdedup.__version__} ({memdedup.IMPLEMENTATION}); {n:,} labels from {args.corpus}; "
        f"{cpus} CPUs; checkpoints {', '.join(f'{c:,}' for c in checkpoints)}; "
        f"{args.queries:,} queries each (seed {args.seed})"
    )
    if n == 0:
        print("no labels: nothing to measure")
        return 0

    # 1. Build.
    gc.collect()
    rss0, rss_name = rss_bytes()
    hwm0 = status_kib("VmHWM")
    t0 = time.perf_counter_ns()
    built = LabelIndex.build(labels)
    build_ns = time.perf_counter_ns() - t0
    rss1, _ = rss_bytes()
    hwm1 = status_kib("VmHWM")
    build_memory = built.memory_bytes()
    build_rss = rss1 - rss0
    del built
    gc.collect()
    print(f"\n1. build of {n:,} labels")
    print(f"  LabelIndex.build (wrapper)      {build_ns / 1e9:8.2f} s")
    print(f"    memory_bytes()                {mib(build_memory):>12s}")
    print(f"    process RSS growth ({rss_name}) {mib(build_rss):>12s}", end="")
    if hwm0 is not None and hwm1 is not None:
        print(f"   (peak VmHWM {mib(hwm0 * 1024)} -> {mib(hwm1 * 1024)})")
    else:
        print()
    index = core.LabelIndex(LabelIndex().min_chars)
    t0 = time.perf_counter_ns()
    index.insert_many(labels, [0] * n)
    core_build_ns = time.perf_counter_ns() - t0
    print(
        f"  core insert_many alone          {core_build_ns / 1e9:8.2f} s"
        f"   memory_bytes() {mib(index.memory_bytes())}"
    )
    del index
    gc.collect()

    # 2 and 3. Growth, with the gate alongside.
    rnd = random.Random(args.seed)
    first_seen: dict[str, int] = {}
    for k, label in enumerate(labels):
        first_seen.setdefault(label, k)
    queries = {c: draw_queries(rnd, labels, c, args.queries, first_seen) for c in checkpoints}
    del first_seen
    short_keys = {
        q.text.strip()[:PREFIX_LEN] for qs in queries.values() for q in qs if len(q.text.strip()) < PREFIX_LEN
    }
    gate = PrefixGate(short_keys)
    wrapper = LabelIndex()
    index = core.LabelIndex(wrapper.min_chars)
    print("\n2-3. growth: one insert at a time in corpus order; queries at each checkpoint")
    ns = time.perf_counter_ns
    wrapper_insert, core_insert = wrapper.insert, index.insert
    results = []
    start = 0
    for stop in checkpoints:
        t_wrapper = array("q", bytes(8 * (stop - start)))
        t_core = array("q", bytes(8 * (stop - start)))
        for k in range(start, stop):
            label = labels[k]
            t0 = ns()
            wrapper_insert(label, k)
            t1 = ns()
            core_insert(label, 0)
            t2 = ns()
            t_wrapper[k - start] = t1 - t0
            t_core[k - start] = t2 - t1
            gate.insert(k, label)
        query_stats, matches, decided = run_queries(queries[stop], wrapper, index, gate, labels)
        exact = check_exact(queries[stop][: args.exact], wrapper, index, labels, stop)
        cp = Checkpoint(
            stop,
            Stats.of(t_wrapper),
            Stats.of(t_core),
            query_stats,
            matches,
            decided,
            memory_wrapper=wrapper.memory_bytes(),
            memory_core=index.memory_bytes(),
            exact=exact,
        )
        print_checkpoint(cp, start)
        results.append(cp)
        start = stop

    # 4. Summary.
    last = results[-1]
    memory = max(build_memory, build_rss)
    rows = [
        ("query mean", last.query["all"]["wrapper"].mean, last.query["all"]["core"].mean, us),
        ("query p50", last.query["all"]["wrapper"].p50, last.query["all"]["core"].p50, us),
        ("query p99", last.query["all"]["wrapper"].p99, last.query["all"]["core"].p99, us),
        ("query p99.9", last.query["all"]["wrapper"].p999, last.query["all"]["core"].p999, us),
        ("first_match mean", last.query["all"]["first"].mean, math.nan, us),
        ("first_match p99", last.query["all"]["first"].p99, math.nan, us),
        ("insert mean", last.insert_wrapper.mean, last.insert_core.mean, us),
        ("build", float(build_ns), float(core_build_ns), lambda v: f"{v / 1e9:.2f} s"),
        ("memory", float(memory), float(last.memory_core), mib),
    ]
    print(
        f"\n4. summary at {n:,} labels (the targets are stated for {FULL_CORPUS:,} labels on 2 cores; "
        f"{cpus} CPUs here)"
    )
    print(f"  {'':16s} {'target':>12s} {'measured':>14s}  {'status':9s} {'core alone':>14s}")
    for name, measured, core_figure, fmt in rows:
        target = TARGETS.get(name.replace("first_match", "query"), math.nan)
        status = "met" if measured <= target else "not met" if target == target else ""
        if name.startswith("first_match"):
            status = f"({status})"
        print(f"  {name:16s} {fmt(target):>12s} {fmt(measured):>14s}  {status:9s} {fmt(core_figure):>14s}")
    for note in (
        "query: LabelIndex.query (every match) over all queries at the last checkpoint;",
        "first_match: the write path's call (first=True), beside the targets, not one of them;",
        "insert: LabelIndex.insert over the last segment; build: LabelIndex.build;",
        f"memory: the larger of the build's memory_bytes() and its process RSS growth ({rss_name});",
        "core alone: the same through memdedup._core (memory: its memory_bytes() after growth).",
    ):
        print(f"  {note}")
    checked = sum(cp.exact[0] for cp in results)
    wrong = sum(cp.exact[1] for cp in results)
    print(f"  exact against brute force: {checked - wrong:,} of {checked:,} sampled queries agree")
    if args.service:
        service(args.quick)
    print(f"load average at end: {load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
