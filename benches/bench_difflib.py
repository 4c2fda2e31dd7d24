"""Times ``memdedup.difflib`` against the standard library's ``difflib`` and ``cydifflib``, in one run.

Two workloads, as issue 6 states them:

- ``get_close_matches(word, labels)`` for ~20 query words over 100,000 real labels (the shared corpus of
  package summaries): corpus labels with a few typos (the "did you mean" case), plus short words;
- ``SequenceMatcher(None, lines_a, lines_b)`` on line diffs of real source files (the standard library's
  own largest ``.py`` files against copies edited by deleting, inserting and changing lines):
  ``get_opcodes()`` and ``ratio()``, each on a fresh matcher. Three ways: the edited list shares its
  unchanged line objects with the original (a list edited in place); "read separately", where
  every line of the edited text is a new object, as when two files are read (each equal line is then
  compared, not found by identity), diffed again and again (from the second call on, every line's
  hash is cached in it); and "read, first diff", where each call gets both files' lines split anew
  (objects nobody hashed yet: a one-off diff of two files read from disk).

Every answer is checked against difflib's before its time is reported. Usage::

    python benches/bench_difflib.py [--corpus PATH] [--labels 100000] [--queries 20] [--repeat 3]

``--corpus`` defaults to ``../shared/data/pypi-summaries.txt.gz`` next to the repository, then
``benches/data/labels_sample.txt``, else generated labels. Timings are never asserted anywhere.
"""

from __future__ import annotations

import argparse
import difflib
import gzip
import os
import platform
import random
import sys
import sysconfig
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from memdedup import IMPLEMENTATION
from memdedup import difflib as md

try:
    import cydifflib
except ImportError:  # reported as missing in the table
    cydifflib = None

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = REPO.parent / "shared" / "data" / "pypi-summaries.txt.gz"
SAMPLE_CORPUS = REPO / "benches" / "data" / "labels_sample.txt"
SOURCE_FILES = (
    "_pydecimal.py",
    "typing.py",
    "inspect.py",
    "tarfile.py",
    "pydoc.py",
    "doctest.py",
    "argparse.py",
    "subprocess.py",
    "difflib.py",
    "textwrap.py",
)
WORDS = ["tensorflow", "django rest", "python client library", "async http", "pytest plugin", "aws cdk"]


# --------------------------------------------------------------------------------------------------
# Data.
# --------------------------------------------------------------------------------------------------
def read_labels(path: Path | None, count: int) -> tuple[list[str], str]:
    """Up to ``count`` non-empty lines of the corpus, or generated labels when there is none."""
    candidates = [path] if path else [DEFAULT_CORPUS, SAMPLE_CORPUS]
    for candidate in candidates:
        if candidate and candidate.exists():
            opener: Any = gzip.open if candidate.suffix == ".gz" else open
            labels: list[str] = []
            with opener(candidate, "rt", encoding="utf-8", errors="surrogateescape") as fh:
                for line in fh:
                    line = line.strip()
                    if line:
                        labels.append(line)
                        if len(labels) == count:
                            break
            return labels, str(candidate)
    if path:
        raise SystemExit(f"no corpus at {path}")
    rng = random.Random(0)
    vocab = "python library client async http tool for the data api wrapper simple fast django plugin".split()
    labels = [" ".join(rng.choice(vocab) for _ in range(rng.randint(2, 12))) for _ in range(count)]
    return labels, "generated"


def typo(text: str, rng: random.Random) -> str:
    """``text`` with a few character deletions, substitutions and transpositions."""
    chars = list(text)
    for _ in range(max(1, len(chars) // 15)):
        if len(chars) < 2:
            break
        i = rng.randrange(len(chars) - 1)
        op = rng.random()
        if op < 0.4:
            del chars[i]
        elif op < 0.7:
            chars[i] = rng.choice("abcdefghijklmnopqrstuvwxyz ")
        else:
            chars[i], chars[i + 1] = chars[i + 1], chars[i]
    return "".join(chars)


def queries(labels: Sequence[str], total: int, rng: random.Random) -> list[str]:
    """Corpus labels with typos (most of the work), then short words."""
    words = WORDS[: max(0, min(len(WORDS), total // 3))]
    picked = [typo(rng.choice(labels), rng) for _ in range(total - len(words))]
    return picked + words


def edited(lines: list[str], rng: random.Random, fraction: float) -> list[str]:
    """``lines`` with about ``fraction`` of them deleted, inserted or changed, in runs of 1-4 lines."""
    out = list(lines)
    for _ in range(max(1, int(len(lines) * fraction / 2.5))):
        i = rng.randrange(len(out))
        run = rng.randint(1, 4)
        op = rng.random()
        if op < 0.3:
            del out[i : i + run]
        elif op < 0.6:
            out[i:i] = [f"    # note {rng.randrange(10**6)}\n" for _ in range(run)]
        else:
            out[i : i + run] = [line.replace("e", "E", 1) + "" for line in out[i : i + run]]
    return out


def source_pairs(rng: random.Random, fraction: float) -> Iterator[tuple[str, list[str], list[str]]]:
    root = Path(sysconfig.get_paths()["stdlib"])
    for name in SOURCE_FILES:
        path = root / name
        if path.exists():
            lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
            yield name, lines, edited(lines, rng, fraction)


# --------------------------------------------------------------------------------------------------
# Timing.
# --------------------------------------------------------------------------------------------------
def best_of(repeat: int, run: Callable[[], Any]) -> tuple[float, Any]:
    """Best wall time over ``repeat`` runs, and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    return best, result


Row = tuple[str, float, float | None, float]


def close_matches_rows(labels: list[str], words: list[str], repeat: int, n_short: int) -> list[Row]:
    impls: dict[str, Any] = {"difflib": difflib.get_close_matches, "memdedup": md.get_close_matches}
    if cydifflib is not None:
        impls["cydifflib"] = cydifflib.get_close_matches
    groups = {"label queries": words[: len(words) - n_short], "short words": words[len(words) - n_short :]}
    rows: list[Row] = []
    totals = {name: 0.0 for name in impls}
    for group, group_words in groups.items():
        if not group_words:
            continue
        times = {name: 0.0 for name in impls}
        for word in group_words:
            expected = None
            for name, fn in impls.items():
                # difflib and cydifflib once (seconds per query); memdedup best of ``repeat``.
                seconds, got = best_of(
                    repeat if name == "memdedup" else 1, lambda fn=fn, word=word: fn(word, labels)
                )
                times[name] += seconds
                if expected is None:
                    expected = got
                elif name == "memdedup":
                    assert got == expected, (word, got, expected)
        for name in impls:
            totals[name] += times[name]
        rows.append(
            (
                f"get_close_matches: {len(group_words)} {group}",
                times["difflib"],
                times.get("cydifflib"),
                times["memdedup"],
            )
        )
        print(f"  ... {rows[-1][0]} done", file=sys.stderr, flush=True)
    rows.append(
        (
            f"get_close_matches: all {len(words)} queries",
            totals["difflib"],
            totals.get("cydifflib"),
            totals["memdedup"],
        )
    )
    return rows


def line_diff_rows(
    pairs: list[tuple[str, list[str], list[str]]], repeat: int, label: str, first_diff: bool = False
) -> list[Row]:
    """``get_opcodes()`` and ``ratio()`` rows. With ``first_diff``, every call gets lines just split
    from the two texts (new objects whose hashes nobody computed yet, as in the first diff of two
    files read from disk); the split is not timed. Otherwise the same line objects serve every call,
    so from the second call on their hashes are cached (as in a loop diffing the same lists)."""
    classes: dict[str, Any] = {"difflib": difflib.SequenceMatcher, "memdedup": md.SequenceMatcher}
    if cydifflib is not None:
        classes["cydifflib"] = cydifflib.SequenceMatcher
    rows: list[Row] = []
    for what in ("get_opcodes", "ratio"):
        times = {name: 0.0 for name in classes}
        for _, a, b in pairs:
            texts = ("".join(a), "".join(b))
            # Rounds interleave the contenders, so the machine's drift (tens of percent over seconds
            # here) reaches each one alike; each keeps its best round. Within a round a contender
            # runs twice in a row, keeping the better: the second call finds the caches holding its
            # own data, as in the hot loops this drop-in is for, not the previous contender's.
            best = {name: float("inf") for name in classes}
            results: dict[str, Any] = {}
            for _ in range(repeat):
                for name, cls in classes.items():
                    for _ in range(2):
                        if first_diff:
                            a, b = (text.splitlines(keepends=True) for text in texts)
                        start = time.perf_counter()
                        results[name] = getattr(cls(None, a, b), what)()
                        best[name] = min(best[name], time.perf_counter() - start)
            assert results["memdedup"] == results["difflib"]
            for name in classes:
                times[name] += best[name]
        rows.append(
            (
                f"lines {what}: {label}",
                times["difflib"],
                times.get("cydifflib"),
                times["memdedup"],
            )
        )
    return rows


def print_table(rows: list[Row]) -> None:
    head = (
        f"{'workload':<72} {'difflib s':>10} {'cydifflib s':>12} {'memdedup s':>11} {'x difflib':>10} "
        f"{'x cydifflib':>12}"
    )
    print(head)
    print("-" * len(head))
    for name, std, cy, ours in rows:
        cy_s = f"{cy:12.3f}" if cy is not None else f"{'n/a':>12}"
        cy_x = f"{cy / ours:12.1f}" if cy is not None else f"{'n/a':>12}"
        print(f"{name:<72} {std:10.3f} {cy_s} {ours:11.4f} {std / ours:10.1f} {cy_x}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--corpus", type=Path, default=None, help=f"labels, one a line (default {DEFAULT_CORPUS})"
    )
    parser.add_argument("--labels", type=int, default=100_000, help="how many labels to search")
    parser.add_argument("--queries", type=int, default=20, help="how many query words")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs (memdedup; line diffs)")
    parser.add_argument("--seed", type=int, default=6)
    args = parser.parse_args(argv)

    rng = random.Random(args.seed)
    labels, source = read_labels(args.corpus, args.labels)
    words = queries(labels, args.queries, rng)
    n_short = sum(1 for w in words if w in WORDS)
    print(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs; "
        f"memdedup backend: {IMPLEMENTATION}; cydifflib: {'yes' if cydifflib else 'not installed'}"
    )
    print(f"corpus: {source} ({len(labels)} labels, mean {sum(map(len, labels)) / len(labels):.0f} chars)")
    rows = close_matches_rows(labels, words, args.repeat, n_short)
    for fraction in (0.02, 0.10):
        pairs = list(source_pairs(random.Random(args.seed), fraction))
        nlines = sum(len(a) for _, a, _ in pairs)
        label = f"{len(pairs)} files, {nlines} lines, {fraction:.0%} edited"
        rows += line_diff_rows(pairs, args.repeat, label)
        separate = [(name, a, "".join(b).splitlines(keepends=True)) for name, a, b in pairs]
        rows += line_diff_rows(separate, args.repeat, f"{label}, read separately")
        rows += line_diff_rows(separate, args.repeat, f"{label}, read, first diff", first_diff=True)
    print()
    print_table(rows)


if __name__ == "__main__":
    main()
