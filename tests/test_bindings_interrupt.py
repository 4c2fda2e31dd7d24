"""Long calls into the Rust core answer Ctrl-C.

Each probe builds, in a child interpreter, an input whose call is measured to last long enough and
scaled up until it does (``SCALE``; see :mod:`interrupt_support`), starts the call, sends SIGINT a
fraction of that time in, and requires the call to raise ``KeyboardInterrupt`` and the child to carry
on. No timing is asserted beyond a hang bound.
"""

from __future__ import annotations

import pytest
from profiles import sampled
from test_bindings_child import requires_rust, run_interrupted

pytestmark = requires_rust

DATA = """
import itertools, random
from memdedup import _core, batch
rng = random.Random(5)

def text(n, alphabet="abcdefgh"):
    table = bytes(ord(alphabet[k % len(alphabet)]) for k in range(256))
    return rng.randbytes(n).translate(table).decode("latin-1")

def texts(count, n, alphabet="abcdefgh"):
    return [text(n, alphabet) for _ in range(count)]

WIDE = {k: 0x4E00 + k for k in range(256)}

def wide(n):
    # 256 distinct code points, none of them "popular" to difflib's autojunk.
    return rng.randbytes(n).decode("latin-1").translate(WIDE)
"""

PROBES = {
    # One pair: difflib's search over two 1 MB strings without autojunk (hours, not minutes).
    "ratio": ("a, b = text(1_000_000 * SCALE), text(1_000_000 * SCALE)", "_core.ratio(a, b, autojunk=False)"),
    "matching_blocks": (
        "a, b = text(1_000_000 * SCALE), text(1_000_000 * SCALE)",
        "_core.matching_blocks(a, b, autojunk=False)",
    ),
    # The contract's calls run with autojunk: labels of 2M code points, none popular.
    "match_reason": ("a, b = wide(2_000_000 * SCALE), wide(2_000_000 * SCALE)", "_core.match_reason(a, b)"),
    "labels_match of long labels": (
        "a, b = wide(2_000_000 * SCALE), wide(2_000_000 * SCALE)",
        "_core.labels_match(a, b, threshold=0.3)",
    ),
    # Line diffs: a million lines of fifty distinct ones, without autojunk.
    "line diff of ints": (
        "b = [rng.randrange(50) for _ in range(1_000_000 * SCALE)]; a = b[::-1]\n"
        "index = _core.SequenceIndex(b, autojunk=False)",
        "index.matching_blocks(a)",
    ),
    "line diff of strs": (
        "lines = ['line %d\\n' % k for k in range(50)]\n"
        "b = [rng.choice(lines) for _ in range(1_000_000 * SCALE)]\n"
        "a = [rng.choice(lines) for _ in range(1_000_000 * SCALE)]\n"
        "index = _core.SequenceIndex.of_elements(b, autojunk=False)",
        "index.opcodes(index.encode(a))",
    ),
    "join": ("labels = texts(100_000 * SCALE, 40, 'ab')", "_core.join(labels, threshold=0.95)"),
    "batch.join": ("labels = texts(100_000 * SCALE, 40, 'ab')", "batch.join(labels, threshold=0.95)"),
    "cdist": (
        "q = texts(3000, 40, 'abcdefghij'); c = texts(100_000 * SCALE, 40, 'abcdefghij')",
        "_core.cdist(q, c)",
    ),
    "replay": (
        "labels = texts(200_000 * SCALE, 30, 'abcdefghijklmnopqrstuvwxyz')",
        "_core.replay(labels, [0] * len(labels), prefix_len=0, query_limit=10**6)",
    ),
    # Pairs of 5,000-code-point labels (about 10 ms each to decide): 10,000 of them.
    "match_pairs": (
        "s = [wide(5000) for _ in range(10_000 * SCALE)]; i = [wide(5000) for _ in range(10_000 * SCALE)]",
        "_core.match_pairs(s, i, threshold=0.3)",
    ),
    "match_pairs of tuples": (
        "s = tuple(wide(5000) for _ in range(10_000 * SCALE))\n"
        "i = tuple(wide(5000) for _ in range(10_000 * SCALE))",
        "_core.match_pairs(s, i, threshold=0.3)",
    ),
    "pair_reasons": (
        "labels = [wide(5000) for _ in range(10_000 * SCALE)]",
        "_core.pair_reasons(labels, [(k, k + 1) for k in range(len(labels) - 1)])",
    ),
    "close_matches over a huge list": (
        "word = wide(5000); pool = [wide(5000) for _ in range(10_000 * SCALE)]",
        "_core.close_matches(word, pool, 0.0)",
    ),
    "match_mask over an endless iterator": ("", "_core.match_mask('x', itertools.repeat('y'))"),
    "clusters of endless pairs": ("", "_core.clusters(2, itertools.repeat((0, 1)))"),
}


@pytest.mark.parametrize("name", sampled(list(PROBES), ["match_mask over an endless iterator"]))
def test_long_calls_raise_keyboard_interrupt(name: str) -> None:
    setup, call = PROBES[name]
    run_interrupted(DATA + setup, call)
