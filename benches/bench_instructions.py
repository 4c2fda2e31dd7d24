"""Instructions per call, counted by valgrind's callgrind: a measure this noisy machine cannot skew.

    python benches/bench_instructions.py [--corpus PATH] [--pairs N] [--only NAME ...]

Each contender runs over the same real label pairs (sharing a 20-character prefix: bench_core.py's
sample spread over 20,000 such pairs) once and twice under callgrind; the difference over the pair
count is the cost of one call from Python, the loop's own bytecode included, the interpreter's
start-up and the corpus loading excluded. Needs ``valgrind`` on PATH (Debian: ``apt-get install
valgrind``); the slow peers take about a minute each. Times (bench_core.py) remain the targets;
this says where they stand without the machine's drift, and memory stalls (which callgrind does
not count) are the gap.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _corpus import default_corpus

CONTENDERS = {
    "memdedup.ratio": "import memdedup; fn = memdedup.ratio",
    "memdedup.labels_match": "import memdedup; fn = memdedup.labels_match",
    "difflib-fast ratio": "import difflib_fast; fn = difflib_fast.ratio",
    "cydifflib ratio": "import cydifflib; fn = lambda a, b: cydifflib.SequenceMatcher(None, a, b).ratio()",
    "difflib ratio": "import difflib; fn = lambda a, b: difflib.SequenceMatcher(None, a, b).ratio()",
    "reference labels_match": "from memdedup import _reference; fn = _reference.labels_match",
}

RUNNER = """
import sys
sys.path.insert(0, {benches!r})
from _corpus import prefix_pairs, read_labels
# The same spread sample as bench_core.py's pure-Python peers (the first pairs are not typical).
pairs = prefix_pairs(read_labels({corpus!r}, limit=400_000), 20_000)
pairs = pairs[:: max(1, len(pairs) // {pairs})][: {pairs}]
{setup}
def run(fn, pairs, rounds):
    for _ in range(rounds):
        for a, b in pairs:
            fn(a, b)
run(fn, pairs, int(sys.argv[1]))
print(len(pairs))  # what the parent divides by: the sample can hold fewer pairs than --pairs asked
"""


def instructions(script: str, rounds: int) -> tuple[int, int]:
    """Total instructions callgrind counts for ``script`` run with ``rounds``, and the pairs it ran."""
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    out = subprocess.run(
        [*command, sys.executable, script, str(rounds)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    found = re.search(r"Collected\s*:\s*([\d,]+)|I\s+refs:\s+([\d,]+)", out.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in callgrind's output:\n{out.stderr[-2000:]}")
    return int((found.group(1) or found.group(2)).replace(",", "")), int(out.stdout.split()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", default=str(default_corpus()))
    parser.add_argument("--pairs", type=int, default=2_000)
    parser.add_argument("--only", nargs="*", choices=sorted(CONTENDERS), help="contenders to count")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind)")
        return 2
    per_call: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, setup in CONTENDERS.items():
            if args.only and name not in args.only:
                continue
            script = Path(tmp) / "run.py"
            script.write_text(
                RUNNER.format(
                    benches=str(Path(__file__).resolve().parent),
                    corpus=args.corpus,
                    pairs=args.pairs,
                    setup=setup,
                )
            )
            try:
                (once, pairs), (twice, _) = instructions(str(script), 1), instructions(str(script), 2)
            except subprocess.CalledProcessError as err:
                print(f"  (skipped {name}: {err.stderr.strip().splitlines()[-1] if err.stderr else err})")
                continue
            per_call[name] = (twice - once) / pairs
            print(f"  {name:28s} {per_call[name]:12,.0f} instructions/call ({pairs:,} pairs)", flush=True)
    print()
    for ours, peers in (
        ("memdedup.ratio", ("difflib ratio", "cydifflib ratio", "difflib-fast ratio")),
        ("memdedup.labels_match", ("reference labels_match",)),
    ):
        for peer in peers:
            if ours in per_call and peer in per_call:
                print(f"  {peer} / {ours}: x{per_call[peer] / per_call[ours]:,.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
