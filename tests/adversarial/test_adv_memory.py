"""Sizes the machine cannot hold, and parameters no allocation can honour.

Each probe caps the child's address space (``resource.setrlimit(RLIMIT_AS)``: what it has mapped once its
inputs exist, plus 768 MiB, or for the huge strs plus 200 MiB, less than one more copy of them as code
points) and asks for far more. Expected, per probe: a ``MemoryError`` or a typed
``InvalidInputError`` (memdedup.errors), or, where the answer is small and the reference can give it,
exactly the reference's answer. Never an abort ("memory allocation of N bytes failed", returncode 134),
a signal, or a ``PanicException`` ("capacity overflow"). numpy and rapidfuzz, under the same cap, raise
``MemoryError`` for the same matrix: the reference for what a library should do.
"""

from __future__ import annotations

import sys

import pytest
from _probe import run_and_expect
from profiles import sampled

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS and /proc/self/status: Linux")

CAP = """
import resource
def mapped():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
import numpy as np
import memdedup
from memdedup import _core, _reference, batch
batch.match_pairs(["warm up"] * 10, ["the thread pool"] * 10)  # rayon's threads exist before the cap

def cap(headroom):
    # Called once the probe's inputs exist: what is mapped now, plus ``headroom`` bytes.
    limit = mapped() + headroom
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

"""

# name -> (probe, allowed outcomes)
PROBES: dict[str, tuple[str, tuple[str, ...]]] = {
    "sanity/numpy": (
        "cap(768 * 2**20)\n"
        "report(lambda: np.empty((100_000, 100_000)), lambda got: 'allocated 80 GB under a 768 MiB cap')",
        ("MemoryError",),
    ),
    "batch.cdist/100k-x-100k": (
        "cap(768 * 2**20)\n"
        "report(lambda: batch.cdist(['abc'] * 100_000, ['abd'] * 100_000), lambda got: 'no 80 GB matrix')",
        ("MemoryError", "InvalidInputError"),
    ),
    "core.cdist/100k-x-100k": (
        "cap(768 * 2**20)\n"
        "report(lambda: _core.cdist(['abc'] * 100_000, ['abd'] * 100_000), lambda got: 'no 80 GB matrix')",
        ("MemoryError", "InvalidInputError"),
    ),
    "batch.join/30k-identical": (
        # 449,985,000 pairs: 3.6 GB of u32 pairs, more as int64
        "cap(768 * 2**20)\n"
        "report(lambda: batch.join(['the same label for everyone'] * 30_000), lambda got: 'no 3.6 GB')",
        ("MemoryError", "InvalidInputError"),
    ),
    "core.clusters/n=10**12": (
        "cap(768 * 2**20)\nreport(lambda: _core.clusters(10**12, []), lambda got: 'no 12 TB of cluster ids')",
        ("MemoryError", "InvalidInputError"),
    ),
    "core.clusters/n=2**64": (
        "cap(768 * 2**20)\nreport(lambda: _core.clusters(2**64, []), lambda got: 'n does not fit')",
        ("MemoryError", "InvalidInputError"),
    ),
    "batch.replay/prefix_len=2**62": (
        # A prefix longer than any label is the whole key: the reference answers, with no memory at all.
        "labels = ['abc', 'abcd', 'ab', 'abc']\n"
        "expected = _reference.replay(labels, [0] * 4, prefix_len=2**62)\n"
        "cap(768 * 2**20)\n"
        "report(lambda: batch.replay(labels, prefix_len=2**62), equals(expected))",
        ("reference", "InvalidInputError"),
    ),
    "batch.replay/prefix_len=2**63": (
        "labels = ['abc', 'abcd', 'ab', 'abc']\n"
        "expected = _reference.replay(labels, [0] * 4, prefix_len=2**63)\n"
        "cap(768 * 2**20)\n"
        "report(lambda: batch.replay(labels, prefix_len=2**63), equals(expected))",
        ("reference", "InvalidInputError"),
    ),
    "batch.replay/prefix_len=2**64": (
        "labels = ['abc', 'abcd', 'ab', 'abc']\n"
        "expected = _reference.replay(labels, [0] * 4, prefix_len=2**64)\n"
        "cap(768 * 2**20)\n"
        "report(lambda: batch.replay(labels, prefix_len=2**64), equals(expected))",
        ("reference", "InvalidInputError"),
    ),
    "batch.replay/query_limit=2**63": (
        "labels = ['abc', 'abcd', 'ab', 'abc'] * 10\n"
        "expected = _reference.replay(labels, [0] * 40, query_limit=2**63)\n"
        "cap(768 * 2**20)\n"
        "report(lambda: batch.replay(labels, query_limit=2**63), equals(expected))",
        ("reference", "InvalidInputError"),
    ),
    "normalise_label/huge-wide-str": (
        # 60 M CJK code points: 120 MB as a str, 240 MB as u32 code points (and again lowered, collapsed)
        "s = '\\u4e00' * 60_000_000\n"
        "cap(200 * 2**20)\n"
        "report(lambda: memdedup.normalise_label(s) == s, lambda got: got is True or 'wrong answer')",
        ("reference", "MemoryError"),
    ),
    "labels_match/huge-wide-strs": (
        "s = '\\u4e00' * 60_000_000\n"
        "cap(200 * 2**20)\n"
        "report(lambda: memdedup.labels_match(s, s), lambda got: got is True or 'wrong answer')",
        ("reference", "MemoryError"),
    ),
    "ratio/huge-wide-strs": (
        "s = '\\u4e00\\u4e01' * 30_000_000\n"
        "cap(200 * 2**20)\n"
        "report(lambda: memdedup.ratio(s, s), lambda got: got == 1.0 or 'wrong answer')",
        ("reference", "MemoryError"),
    ),
    "matching_blocks/huge-wide-strs": (
        "s = '\\u4e00\\u4e01' * 30_000_000\n"
        "whole = [(0, 0, len(s)), (len(s), len(s), 0)]\n"
        "cap(200 * 2**20)\n"
        "report(lambda: memdedup.matching_blocks(s, s), lambda got: got == whole or 'wrong answer')",
        ("reference", "MemoryError"),
    ),
    "index.LabelIndex/huge-wide-label": (
        "from memdedup.index import LabelIndex\n"
        "s = '\\u4e00' * 60_000_000\n"
        "index = LabelIndex()\n"
        "cap(200 * 2**20)\n"
        "def run():\n"
        "    index.insert(s, 'huge')\n"
        "    return [m.id for m in index.query(s)]\n"
        "report(run, lambda got: got == ['huge'] or 'wrong answer')",
        ("reference", "MemoryError"),
    ),
    "core.LabelIndex.insert_many/huge-labels": (
        "s = '\\u4e00' * 60_000_000\n"
        "index = _core.LabelIndex()\n"
        "cap(200 * 2**20)\n"
        "report(lambda: index.insert_many([s, s, 'a'], [0, 0, 0]), lambda got: got == 0 or 'wrong answer')",
        ("reference", "MemoryError"),
    ),
    "batch.match_pairs/huge-labels": (
        "s = '\\u4e00' * 60_000_000\n"
        "cap(200 * 2**20)\n"
        "report(lambda: batch.match_pairs([s, 'a'], [s, 'b']).tolist(), lambda got: got == [True, False])",
        ("reference", "MemoryError"),
    ),
    "quick_ratio/huge-wide-strs": (
        "s = '\\u4e00\\u4e01' * 30_000_000\n"
        "cap(200 * 2**20)\n"
        "report(lambda: memdedup.quick_ratio(s, s), lambda got: got == 1.0 or 'wrong answer')",
        ("reference", "MemoryError"),
    ),
    "batch.cdist/huge-labels": (
        "s = '\\u4e00' * 60_000_000\n"
        "cap(200 * 2**20)\n"
        "report(lambda: batch.cdist([s], [s, 'b']).tolist(), lambda got: got[0][0] == 1.0 or 'wrong answer')",
        ("reference", "MemoryError"),
    ),
    "difflib.SequenceMatcher/huge-wide-strs": (
        "from memdedup import difflib as md\n"
        "s = '\\u4e00\\u4e01' * 30_000_000\n"
        "cap(200 * 2**20)\n"
        "report(lambda: md.SequenceMatcher(None, s, s).ratio(), lambda got: got == 1.0 or 'wrong answer')",
        ("reference", "MemoryError"),
    ),
    "difflib.get_close_matches/huge-word": (
        "from memdedup import difflib as md\n"
        "s = '\\u4e00\\u4e01' * 30_000_000\n"
        "cap(200 * 2**20)\n"
        "report(lambda: md.get_close_matches(s, [s, 'b']), lambda got: got == [s] or 'wrong answer')",
        ("reference", "MemoryError"),
    ),
    "difflib.SequenceMatcher/huge-line-lists": (
        "from memdedup import difflib as md\n"
        "a = [str(k) for k in range(6_000_000)]\n"
        "cap(200 * 2**20)\n"
        "report(lambda: md.SequenceMatcher(None, a, a).ratio(), lambda got: got == 1.0 or 'wrong answer')",
        ("reference", "MemoryError"),
    ),
}


@pytest.mark.parametrize("name", sampled(sorted(PROBES), 3))
def test_allocation_limit(name: str) -> None:
    body, allowed = PROBES[name]
    run_and_expect(CAP + body + "\n", *allowed, timeout=300)


def test_rapidfuzz_raises_memory_error_under_the_same_cap() -> None:
    """The sanity reference: a field library's cdist under the same cap raises MemoryError."""
    pytest.importorskip("rapidfuzz", reason="rapidfuzz is in the test extra; install '.[test]'")
    body = (
        "from rapidfuzz import process\n"
        "cap(768 * 2**20)\n"
        "report(lambda: process.cdist(['abc'] * 100_000, ['abd'] * 100_000), lambda got: 'no 40 GB matrix')"
    )
    run_and_expect(CAP + body + "\n", "MemoryError", timeout=300)
