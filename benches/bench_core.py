"""One call from Python, one pair: memdedup's ratio and labels_match against the peers, in one run.

    python benches/bench_core.py [--corpus PATH] [--pairs N]

Pairs are real labels sharing a 20-character prefix (the write-time candidate path), from the shared
PyPI corpus when present, else the bundled sample. Every figure is a time per pair and a ratio to
memdedup measured in the same run; a peer that is not installed is skipped and said so. Results are
also checked for equality with difflib (difflib-fast only with autojunk=False, the one mode it has).
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import memdedup
from _corpus import default_corpus, prefix_pairs, read_labels
from memdedup import _reference


def per_pair(fn: Callable[[str, str], object], pairs: list[tuple[str, str]], repeat: int = 3) -> float:
    """Best of ``repeat`` passes, in microseconds per pair."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for a, b in pairs:
            fn(a, b)
        best = min(best, time.perf_counter() - start)
    return best / len(pairs) * 1e6


def peers() -> dict[str, Callable[[str, str], float]]:
    found: dict[str, Callable[[str, str], float]] = {
        "difflib (stdlib)": lambda a, b: difflib.SequenceMatcher(None, a, b).ratio(),
    }
    for name, module, build in [
        ("cydifflib 1.2", "cydifflib", lambda m: lambda a, b: m.SequenceMatcher(None, a, b).ratio()),
        ("cdifflib 1.2", "cdifflib", lambda m: lambda a, b: m.CSequenceMatcher(None, a, b).ratio()),
        ("difflib-fast (autojunk=False)", "difflib_fast", lambda m: m.ratio),
        ("rapidfuzz Indel (other metric)", "rapidfuzz.distance.Indel", lambda m: m.normalized_similarity),
    ]:
        try:
            found[name] = build(importlib.import_module(module))
        except ImportError:
            print(f"  (skipped {name}: not installed)")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", default=str(default_corpus()))
    parser.add_argument("--pairs", type=int, default=20_000)
    parser.add_argument("--slow-pairs", type=int, default=2_000, help="pairs for the pure-Python peers")
    args = parser.parse_args(argv)

    labels = read_labels(args.corpus, limit=400_000)
    pairs = prefix_pairs(labels, args.pairs)
    slow = pairs[: args.slow_pairs]
    mean_len = sum(len(a) + len(b) for a, b in pairs) / (2 * len(pairs))
    print(f"memdedup {memdedup.__version__} ({memdedup.IMPLEMENTATION}); corpus {args.corpus}")
    print(f"{len(pairs)} label pairs sharing a 20-character prefix, mean length {mean_len:.1f}\n")

    mismatches = sum(memdedup.ratio(a, b) != difflib.SequenceMatcher(None, a, b).ratio() for a, b in slow)
    mismatches += sum(memdedup.labels_match(a, b) != _reference.labels_match(a, b) for a, b in slow)
    print(f"parity check on {len(slow)} pairs: {mismatches} mismatches\n")

    ours_ratio = per_pair(memdedup.ratio, pairs)
    rows = [("memdedup.ratio", ours_ratio, len(pairs))]
    for name, fn in peers().items():
        subset = slow if name.startswith(("difflib (", "cdifflib")) else pairs
        rows.append((name, per_pair(fn, subset), len(subset)))
    print(f"{'ratio(a, b), one call':34s} {'us/pair':>9s} {'x memdedup':>11s} {'pairs':>7s}")
    for name, us, n in rows:
        print(f"{name:34s} {us:9.3f} {us / ours_ratio:11.1f} {n:7d}")

    ours_match = per_pair(memdedup.labels_match, pairs)
    ref_match = per_pair(_reference.labels_match, slow)
    print(f"\n{'labels_match(stored, incoming)':34s} {'us/pair':>9s} {'x memdedup':>11s} {'pairs':>7s}")
    print(f"{'memdedup.labels_match':34s} {ours_match:9.3f} {1.0:11.1f} {len(pairs):7d}")
    print(f"{'pure-Python reference':34s} {ref_match:9.3f} {ref_match / ours_match:11.1f} {len(slow):7d}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    raise SystemExit(main())
