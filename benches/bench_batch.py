"""Batch engine against peers, measured in one run: pair decisions, replay, all-pairs join.

    python benches/bench_batch.py [--corpus PATH] [--pairs N] [--replay N] [--join N] [--skip-peers]
                                  [--skip-clusters]

- decisions: ``batch.match_pairs`` on real label pairs sharing a 20-character prefix, against the
  pure-Python reference (``labels_match`` per pair) and difflib-fast's parallel batch ``ratio``;
- replay: ``batch.replay`` of N labels (the corpus, topped up with restatement edits of it);
- join: ``batch.join`` of the first N labels, against difflib-fast's ``cluster_canonicals`` (ratio only);
- clusters: ``batch.clusters`` (both modes) of the first 50,000, 200,000 and N labels, from the join on
  groups of identical labels (no label pairs), each in a fresh process: wall and CPU seconds, peak RSS;
- cdist: ``batch.cdist`` of 10 corpus labels against the first N labels at ``score_cutoff=0.6``, beside
  rapidfuzz's ``process.cdist`` with its Indel similarity (another metric: a speed reference only).

Every figure is measured here, now; ratios compare runs on the same inputs.
"""

from __future__ import annotations

import argparse
import importlib
import json
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import memdedup
from _corpus import default_corpus, prefix_pairs, read_labels
from _proc import peak_rss_mib
from memdedup import _reference, batch


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def restated(rnd: random.Random, label: str) -> str:
    """One restatement edit of the kinds extracted memories show."""
    edit = rnd.randrange(5)
    if edit == 0:
        return label + "."
    if edit == 1:
        return label.lower()
    if edit == 2:
        return label + " for every project"
    if edit == 3 and len(label) > 20:
        cut = rnd.randrange(len(label) // 2, len(label))
        return label[:cut]
    return label.replace(" ", "  ", 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", default=str(default_corpus()))
    parser.add_argument("--pairs", type=int, default=200_000)
    parser.add_argument("--replay", type=int, default=1_000_000)
    parser.add_argument("--join", type=int, default=50_000)
    parser.add_argument("--cdist", type=int, default=100_000, help="choices for the cdist row (0: skip)")
    parser.add_argument("--skip-peers", action="store_true", help="do not run difflib-fast's clustering")
    parser.add_argument("--skip-clusters", action="store_true", help="do not time batch.clusters")
    parser.add_argument("--clusters-child", nargs=2, metavar=("N", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.clusters_child:
        clusters_child(args.corpus, int(args.clusters_child[0]), args.clusters_child[1])
        return 0

    labels = read_labels(args.corpus)
    print(
        f"memdedup {memdedup.__version__} ({memdedup.IMPLEMENTATION}); "
        f"{len(labels)} labels from {args.corpus}\n"
    )

    # Pair decisions.
    pairs = prefix_pairs(labels, args.pairs)
    stored = [a for a, _ in pairs]
    incoming = [b for _, b in pairs]
    try:
        difflib_fast = importlib.import_module("difflib_fast")
    except ImportError:
        difflib_fast = None
    # One untimed call each (first calls fault in buffers and start thread pools), then the best of
    # five interleaved runs each: this machine's speed drifts over seconds.
    batch.match_pairs(stored, incoming)
    if difflib_fast is not None:
        difflib_fast.ratio(pairs)
    ours = peer = float("inf")
    for _ in range(5):
        decided, seconds = timed(batch.match_pairs, stored, incoming)
        ours = min(ours, seconds)
        if difflib_fast is not None:
            peer = min(peer, timed(difflib_fast.ratio, pairs)[1])
    sample = pairs[:3000]
    ref, ref_s = timed(lambda: [_reference.labels_match(a, b) for a, b in sample])
    assert decided[: len(sample)].tolist() == ref, "batch decisions differ from the reference"
    ours_us = ours / len(pairs) * 1e6
    ref_us = ref_s / len(sample) * 1e6
    print(f"pair decisions on {len(pairs)} real prefix-sharing pairs (best of 5, after a warm-up call)")
    print(f"  memdedup batch.match_pairs        {ours_us:8.3f} us/pair")
    print(f"  pure-Python labels_match          {ref_us:8.3f} us/pair   x{ref_us / ours_us:,.0f}")
    if difflib_fast is not None:
        peer_us = peer / len(pairs) * 1e6
        print(f"  difflib-fast ratio(pairs) batch   {peer_us:8.3f} us/pair   x{peer_us / ours_us:,.1f}")
    else:
        print("  (difflib-fast not installed)")

    # One-vs-many scores with a cutoff.
    if args.cdist:
        rnd = random.Random(3)
        choices = labels[: args.cdist]
        queries = [rnd.choice(choices) for _ in range(10)]
        ours = min(timed(batch.cdist, queries, choices, score_cutoff=0.6, workers=-1)[1] for _ in range(3))
        print(f"\ncdist of 10 queries x {len(choices):,} labels, score_cutoff=0.6 (best of 3)")
        print(f"  memdedup batch.cdist (exact difflib ratio)   {ours:8.3f} s")
        try:
            from rapidfuzz import process
            from rapidfuzz.distance import Indel

            peer = min(
                timed(
                    process.cdist,
                    queries,
                    choices,
                    scorer=Indel.normalized_similarity,
                    score_cutoff=0.6,
                    workers=-1,
                )[1]
                for _ in range(3)
            )
            print(f"  rapidfuzz process.cdist (Indel, other metric) {peer:8.3f} s   x{peer / ours:,.1f}")
        except ImportError:
            print("  (rapidfuzz not installed)")

    # Replay.
    rnd = random.Random(0)
    stream = list(labels[: args.replay])
    while len(stream) < args.replay:
        stream.append(restated(rnd, rnd.choice(labels)))
    result, seconds = timed(batch.replay, stream)
    collapsed = int(result.collapsed.sum())
    print(f"\nreplay of {len(stream):,} labels: {seconds:.2f} s ({collapsed:,} collapsed)")

    # Join.
    subset = labels[: args.join]
    found, seconds = timed(batch.join, subset)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"\njoin of {len(subset):,} labels: {seconds:.2f} s, {len(found):,} pairs (peak RSS {peak:,.0f} MiB)"
    )
    if not args.skip_peers:
        try:
            difflib_fast = importlib.import_module("difflib_fast")
            _groups, peer = timed(difflib_fast.cluster_canonicals, subset, 0.85)
            print(
                f"  difflib-fast cluster_canonicals (ratio only, autojunk=False): {peer:.2f} s  "
                f"x{peer / seconds:,.1f}"
            )
        except ImportError:
            print("  (difflib-fast not installed)")

    if not args.skip_clusters:
        clusters_growth(args.corpus, args.join, len(labels))
    return 0


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def clusters_growth(corpus: str, largest: int, total: int) -> None:
    """``batch.clusters`` of growing prefixes of the corpus, each mode, one run each in a fresh process
    (so its peak RSS is its own: the labels it read, the join on groups, the clusters): wall and CPU
    seconds, the peak RSS, and the size of the join on groups it clustered."""
    largest = min(largest, total)
    sizes = sorted({size for size in (50_000, 200_000, largest) if size <= largest})
    print("\nclusters from the join on groups (one run each, each in a fresh process)")
    print(f"  {'labels':>9} {'mode':<11} {'wall':>8} {'CPU':>8} {'peak RSS':>10}  join on groups; collapsed")
    for size in sizes:
        for mode in ("canonical", "components"):
            child = [sys.executable, __file__, "--corpus", corpus, "--clusters-child", str(size), mode]
            done = subprocess.run(child, capture_output=True, text=True, check=True)
            r = json.loads(done.stdout.strip().splitlines()[-1])
            print(
                f"  {size:>9,} {mode:<11} {r['wall']:7.2f}s {r['cpu']:7.2f}s {r['peak']:7,.0f} MiB  "
                f"{r['groups']:,} groups, {r['group_pairs']:,} group pairs; {r['collapsed']:,} collapsed"
            )


def clusters_child(corpus: str, size: int, mode: str) -> None:
    """One :func:`clusters_growth` row, measured in this process; a JSON line on stdout."""
    labels = read_labels(corpus, size)
    cpu = _cpu_seconds()
    result, seconds = timed(batch.clusters, labels, mode=mode)
    cpu = _cpu_seconds() - cpu
    peak = peak_rss_mib()  # before the join on groups below is taken again for its size
    joined = batch.join(labels, expand=False)
    row = {
        "wall": seconds,
        "cpu": cpu,
        "peak": peak,
        "collapsed": int((result.canonical != range(len(labels))).sum()),
        "groups": int(joined.group.max(initial=-1)) + 1,
        "group_pairs": len(joined.pairs),
    }
    print(json.dumps(row))


if __name__ == "__main__":
    raise SystemExit(main())
