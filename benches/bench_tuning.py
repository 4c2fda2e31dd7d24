"""A 100-threshold sweep over 100,000 labelled pairs against a single-threshold pass.

The pairs are generated from real one-line labels (the shared PyPI corpus, or the bundled sample) by applying
the restatement corpus's edits: case, spacing and trailing punctuation, tail rewording, extra detail,
terser and too-short restatements, a reworded opening, value and name substitutions, negations, a different
fact with a shared opening, long labels and non-ASCII spellings. Each class is labelled same-fact or not as
in the corpus.

    python benches/bench_tuning.py [--pairs 100000] [--thresholds 100] [--guards none] [--corpus PATH]

Prints the time of one threshold (prepare the pairs, decide, count) and of the sweep (prepare, then every
threshold), and their ratio; the target is a sweep within 2x of the single pass. No assertions: timings drift.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _corpus import read_labels
from memdedup import tuning
from memdedup.guards import Guards

NAMES = ["Alpha", "Beta", "Orion", "Atlas", "Priya", "Jonas", "Lisbon", "Berlin", "Snowflake", "Okta"]
WORDS = ["tools", "library", "helpers", "utilities", "package", "client", "framework", "wrapper", "toolkit"]
DETAILS = [
    "for Python 3 projects",
    "with async support",
    "and a command-line interface",
    "built on top of NumPy",
    "used in production at scale",
]
ACCENTS = str.maketrans({"e": "é", "a": "á", "o": "ö", "u": "ü", "n": "ñ"})
NEGATABLE = re.compile(r"\b(is|are|can|does|will|has)\b")


def _word_cut(text: str, keep: float) -> str:
    words = text.split()
    return " ".join(words[: max(1, int(len(words) * keep))])


def _edits(rnd: random.Random, pool: list[str]) -> dict[str, tuple[bool, Callable[[str], tuple[str, str]]]]:
    def case_space(s: str) -> tuple[str, str]:
        words = s.split()
        k = rnd.randrange(len(words))
        words[k] = words[k].swapcase()
        return s, "  ".join(words) if rnd.random() < 0.5 else " ".join(words)

    def tail_reword(s: str) -> tuple[str, str]:
        words = s.split()
        words[-1] = rnd.choice(WORDS)
        return s, " ".join(words)

    def value_change(s: str) -> tuple[str, str]:
        digits = [m.start() for m in re.finditer(r"\d", s)]
        if digits:
            k = rnd.choice(digits)
            return s, s[:k] + str((int(s[k]) + rnd.randint(1, 8)) % 10) + s[k + 1 :]
        n = rnd.randint(1, 40)
        return f"{s} v{n}", f"{s} v{n + rnd.randint(1, 9)}"

    def name_change(s: str) -> tuple[str, str]:
        a, b = rnd.sample(NAMES, 2)
        words = s.split()
        k = rnd.randint(1, max(1, len(words) - 1))
        return " ".join([*words[:k], a, *words[k:]]), " ".join([*words[:k], b, *words[k:]])

    def negation(s: str) -> tuple[str, str]:
        if NEGATABLE.search(s):
            return s, NEGATABLE.sub(lambda m: m.group(1) + " not", s, count=1)
        words = s.split()
        k = min(len(words), rnd.randint(1, 4))
        return s, " ".join([*words[:k], "without", *words[k:]])

    def shared_opening(s: str) -> tuple[str, str]:
        other = rnd.choice(pool)
        return s, s[:24] + other[len(other) // 2 :]

    def long_label(s: str) -> tuple[str, str]:
        text = s
        while len(text) <= 210:
            text += "; " + rnd.choice(pool)
        return text, text.replace(";", ",", 1) + " " + rnd.choice(DETAILS)

    return {
        "identical": (True, lambda s: (s, s)),
        "case_space_punct": (True, case_space),
        "case_at_start": (True, lambda s: (s, s[:1].swapcase() + s[1:])),
        "trailing_punct": (True, lambda s: (s, s + rnd.choice([".", "!", "..."]))),
        "tail_reword": (True, tail_reword),
        "extra_detail": (True, lambda s: (s, f"{s} {rnd.choice(DETAILS)}")),
        "terser": (True, lambda s: (s, _word_cut(s, 0.7))),
        "terser_short": (True, lambda s: (s, s.split()[0][:12])),
        "opening_reworded": (True, lambda s: (s, "It is " + s[:1].lower() + s[1:])),
        "value_number": (False, value_change),
        "value_name": (False, name_change),
        "negation": (False, negation),
        "shared_opening": (False, shared_opening),
        "long_labels": (True, long_label),
        "non_ascii": (True, lambda s: (s, s[: len(s) // 2] + s[len(s) // 2 :].translate(ACCENTS))),
    }


def generate(n: int, corpus: str | None = None, seed: int = 0) -> list[tuning.LabelledPair]:
    """``n`` labelled pairs, the classes in turn, from labels of 20 to 120 characters."""
    rnd = random.Random(seed)
    pool = [s for s in read_labels(corpus, limit=max(20_000, n // 2)) if 20 <= len(s) <= 120]
    edits = _edits(rnd, pool)
    classes = list(edits)
    pairs = []
    for k in range(n):
        cls = classes[k % len(classes)]
        same, edit = edits[cls]
        stored, incoming = edit(rnd.choice(pool))
        pairs.append(tuning.LabelledPair(stored, incoming, cls, same))
    return pairs


def _best(repeat: int, func: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pairs", type=int, default=100_000)
    parser.add_argument("--thresholds", type=int, default=100)
    parser.add_argument("--guards", default="none", help="none, value, negation or all")
    parser.add_argument("--corpus", help="one label per line (.gz or text); default: shared or bundled")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    guards = Guards.parse(args.guards)

    start = time.perf_counter()
    pairs = generate(args.pairs, args.corpus)
    print(f"generated {len(pairs):,} labelled pairs in {time.perf_counter() - start:.2f} s")
    thresholds = np.linspace(0.5, 0.99, args.thresholds)
    setting = tuning.Setting(0.85, 16, "raw", guards)

    def single() -> object:
        prepared = tuning.prepare(pairs)
        collapsed = prepared.collapsed(setting)
        return np.bincount(prepared.class_ids[collapsed] * 2 + prepared.same[collapsed])

    def sweep() -> object:
        return tuning.sweep(tuning.prepare(pairs), thresholds, guards=guards)

    t_prepare = _best(args.repeat, lambda: tuning.prepare(pairs))
    t_single = _best(args.repeat, single)
    t_sweep = _best(args.repeat, sweep)
    prepared = tuning.prepare(pairs)
    t_evaluate = _best(1, lambda: tuning.evaluate(prepared, guards=guards))
    sample = pairs[:2_000]
    t_plain = _best(1, lambda: [tuning.decide(p.stored, p.incoming, guards=guards) for p in sample])
    per_pass_plain = t_plain * len(pairs) / len(sample)

    print(
        f"guards {guards}; {args.thresholds} thresholds {thresholds[0]:.2f}..{thresholds[-1]:.2f}; "
        f"best of {args.repeat}"
    )
    print(f"  prepare (normalise, gates, containment, bounds):      {t_prepare:8.3f} s")
    print(f"  single threshold (prepare + decide + count):          {t_single:8.3f} s")
    print(f"  {args.thresholds}-threshold sweep (prepare + sweep):              {t_sweep:8.3f} s")
    print(
        f"  sweep / single pass:                                  {t_sweep / t_single:8.2f}x (target <= 2x)"
    )
    print(
        f"  for scale: decide() pair by pair, one threshold (est.): {per_pass_plain:8.3f} s"
        f" ({args.thresholds} thresholds that way ~ {per_pass_plain * args.thresholds:.0f} s)"
    )
    print(f"  evaluate() at 0.85, listing every miss and false merge: {t_evaluate:8.3f} s")
    sw = tuning.sweep(prepared, thresholds, guards=guards)
    k = int(np.argmin(np.abs(thresholds - 0.85)))
    print(
        f"  at {thresholds[k]:.3f}: precision {sw.precision[k]:.3f}, recall {sw.recall[k]:.3f}, "
        f"F1 {sw.f1[k]:.3f}; best F1 at {sw.best('f1'):.3f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
