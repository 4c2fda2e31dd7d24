"""One call from Python, one pair: memdedup's ratio and labels_match against the peers, in one run.

    python benches/bench_core.py [--corpus PATH] [--pairs N] [--rounds R] [--min-seconds S]

Pairs are real labels sharing a 20-character prefix (the write-time candidate path), from the shared
PyPI corpus when present, else the bundled sample. Every figure is a time per pair (the best of R
interleaved rounds, each timing whole passes over the pairs for at least --min-seconds) and a ratio
to memdedup measured in the same run; a peer that is not installed is skipped and said so. Results
are also checked for equality with difflib (difflib-fast only with autojunk=False, the one mode it
has).
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


def timed(fn: Callable[[str, str], object], pairs: list[tuple[str, str]], min_seconds: float) -> float:
    """Passes over ``pairs`` until ``min_seconds`` have gone by, in microseconds per pair (the mean).

    A single pass of a fast contender lasts a few milliseconds, so it was timed cold (caches and
    branch predictors just used by the previous contender's slow pass) and at the timer's noise; a
    pass of a pure-Python peer already lasts longer than ``min_seconds``, so it still runs once.
    """
    passes, start = 0, time.perf_counter()
    while True:
        for a, b in pairs:
            fn(a, b)
        passes += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return elapsed / (passes * len(pairs)) * 1e6


def interleaved(
    contenders: dict[str, tuple[Callable[[str, str], object], list[tuple[str, str]]]],
    rounds: int,
    min_seconds: float,
) -> dict[str, float]:
    """Best round of each contender over ``rounds`` rounds, contenders taking turns within a round.

    This machine's speed drifts by tens of percent over seconds; measuring every contender in each
    round, and keeping each one's best, keeps a slow spell from landing on one of them only.
    """
    best = {name: float("inf") for name in contenders}
    for _ in range(rounds):
        for name, (fn, subset) in contenders.items():
            best[name] = min(best[name], timed(fn, subset, min_seconds))
    return best


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
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; each keeps its best")
    parser.add_argument(
        "--min-seconds", type=float, default=0.2, help="each contender's least time in a round (whole passes)"
    )
    args = parser.parse_args(argv)

    labels = read_labels(args.corpus, limit=400_000)
    pairs = prefix_pairs(labels, args.pairs)
    # The pure-Python peers take a sample spread over all pairs (the first pairs are not typical:
    # a quarter of them hold non-ASCII text); memdedup is timed on that sample too, so every
    # ratio compares the same pairs.
    slow = pairs[:: max(1, len(pairs) // args.slow_pairs)][: args.slow_pairs]
    mean_len = sum(len(a) + len(b) for a, b in pairs) / (2 * len(pairs))
    print(f"memdedup {memdedup.__version__} ({memdedup.IMPLEMENTATION}); corpus {args.corpus}")
    print(f"{len(pairs)} label pairs sharing a 20-character prefix, mean length {mean_len:.1f}\n")

    mismatches = sum(memdedup.ratio(a, b) != difflib.SequenceMatcher(None, a, b).ratio() for a, b in slow)
    mismatches += sum(memdedup.labels_match(a, b) != _reference.labels_match(a, b) for a, b in slow)
    print(f"parity check on {len(slow)} pairs: {mismatches} mismatches\n")

    contenders = {
        "memdedup.ratio": (memdedup.ratio, pairs),
        "memdedup.ratio (sample)": (memdedup.ratio, slow),
    }
    for name, fn in peers().items():
        contenders[name] = (fn, slow if name.startswith(("difflib (", "cdifflib")) else pairs)
    times = interleaved(contenders, args.rounds, args.min_seconds)
    print(f"{'ratio(a, b), one call':34s} {'us/pair':>9s} {'x memdedup':>11s} {'pairs':>7s}")
    for name, (_fn, subset) in contenders.items():
        ours = times["memdedup.ratio (sample)" if subset is slow else "memdedup.ratio"]
        print(f"{name:34s} {times[name]:9.3f} {times[name] / ours:11.1f} {len(subset):7d}")

    times = interleaved(
        {"ours": (memdedup.labels_match, slow), "reference": (_reference.labels_match, slow)},
        args.rounds,
        args.min_seconds,
    )
    ours_match, ref_match = times["ours"], times["reference"]
    print(f"\n{'labels_match(stored, incoming)':34s} {'us/pair':>9s} {'x memdedup':>11s} {'pairs':>7s}")
    print(f"{'memdedup.labels_match':34s} {ours_match:9.3f} {1.0:11.1f} {len(slow):7d}")
    print(f"{'pure-Python reference':34s} {ref_match:9.3f} {ref_match / ours_match:11.1f} {len(slow):7d}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    raise SystemExit(main())
