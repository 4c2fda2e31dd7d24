"""Ctrl-C during a long core call: the call must raise KeyboardInterrupt promptly, and the interpreter
must still work after it.

Each probe builds its inputs in a child ``python -X dev`` at ``SCALE`` 1, measures that the call lasts
long enough to outlast the signal and scales the input up until it does (see :mod:`interrupt_support`:
no probe depends on the machine being slow), says it is ready, and starts the call (stdlib difflib's
equivalent can be interrupted at any time). The parent sends SIGINT a fraction of the measured time
later. Expected: the call raises ``KeyboardInterrupt`` and the child then makes a small call of the same
function and gets the reference's answer, all within a generous hang bound. A child still busy after
it is killed and the test fails.
"""

from __future__ import annotations

import sys

import interrupt_support  # tests/ (conftest.py puts it on the path)
import pytest
from _probe import PRELUDE, child_env
from profiles import sampled

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

# name -> (setup: inputs built before the call, long call, small follow-up call, its expected answer)
PROBES: dict[str, tuple[str, str, str, str]] = {
    # The harness itself: the standard library's pure-Python matcher answers Ctrl-C at once.
    "sanity/stdlib-difflib": (
        "import random\n"
        "rnd = random.Random(0)\n"
        "a = ''.join(rnd.choices('ab', k=200_000 * SCALE))\n"
        "b = ''.join(rnd.choices('ab', k=200_000 * SCALE))",
        "difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()",
        "difflib.SequenceMatcher(None, 'abcd', 'bcde').ratio()",
        "0.75",
    ),
    "ratio/4MB-no-autojunk": (
        "import random\n"
        "rnd = random.Random(1)\n"
        "a = ''.join(rnd.choices('ab', k=4_000_000 * SCALE))\n"
        "b = ''.join(rnd.choices('ab', k=4_000_000 * SCALE))",
        "memdedup.ratio(a, b, autojunk=False)",
        "memdedup.ratio('abcd', 'bcde', autojunk=False)",
        "difflib.SequenceMatcher(None, 'abcd', 'bcde', autojunk=False).ratio()",
    ),
    "matching_blocks/4MB-no-autojunk": (
        "import random\n"
        "rnd = random.Random(2)\n"
        "a = ''.join(rnd.choices('ab', k=4_000_000 * SCALE))\n"
        "b = ''.join(rnd.choices('ab', k=4_000_000 * SCALE))",
        "memdedup.matching_blocks(a, b, autojunk=False)",
        "memdedup.matching_blocks('abxcd', 'abcd')",
        "[tuple(m) for m in difflib.SequenceMatcher(None, 'abxcd', 'abcd').get_matching_blocks()]",
    ),
    "batch.join/50k": (
        "import random\n"
        "rnd = random.Random(3)\n"
        "labels = [''.join(rnd.choices('ab', k=40)) for _ in range(50_000 * SCALE)]\n"
        "small = ['Uses pytest and ruff', 'uses pytest and ruff.', 'Prefers dark mode', 'dark mode!']",
        "batch.join(labels)",
        "batch.join(small).tolist()",
        "[list(p) for p in _reference.join(small)]",
    ),
    "batch.cdist/4000x4000": (
        "import random\n"
        "rnd = random.Random(4)\n"
        "base = ''.join(rnd.choices('abcdefghij', k=1_000_000 * SCALE))\n"
        "texts = [base[k * 200 : k * 200 + 1000] for k in range(4000 * SCALE)]",
        "batch.cdist(texts, texts)",
        "batch.cdist(['abcd', 'xyz'], ['bcde']).tolist()",
        "[[difflib.SequenceMatcher(None, q, 'bcde').ratio()] for q in ['abcd', 'xyz']]",
    ),
    "index.LabelIndex.query/200k-one-window": (
        # Every stored label in the query's length window, most passing every bound: a long query.
        "import random\n"
        "from memdedup.index import LabelIndex\n"
        "rnd = random.Random(9)\n"
        "labels = ['ab' * 60 + ''.join(rnd.choices('ab', k=80)) for _ in range(200_000 * SCALE)]\n"
        "index = LabelIndex.build(labels, threshold=0.5)\n"
        "small = LabelIndex.build(['Uses pytest and ruff', 'Prefers dark mode'])",
        "index.query('ab' * 100, threshold=0.5)",
        "[m.id for m in small.query('uses pytest and ruff.')]",
        "[0]",
    ),
    "batch.replay/gate-free-20k": (
        "import random\n"
        "rnd = random.Random(10)\n"
        "labels = [''.join(rnd.choices('ab', k=60)) for _ in range(20_000 * SCALE)]\n"
        "small = ['Uses pytest and ruff', 'uses pytest and ruff.', 'Prefers dark mode', 'dark mode!']",
        "batch.replay(labels, prefix='none', threshold=0.8)",
        "batch.replay(small, prefix='none').canonical.tolist()",
        "_reference.replay(small, [0] * 4, prefix='none')[0]",
    ),
    "batch.replay/25k-shared-prefix": (
        "import random\n"
        "rnd = random.Random(5)\n"
        "tails = [''.join(rnd.choices('abcdefghij', k=60)) for _ in range(25_000 * SCALE)]\n"
        "labels = ['the same prefix here ' + tail for tail in tails]\n"
        "small = ['Uses pytest and ruff', 'uses pytest and ruff.', 'Prefers dark mode', 'dark mode!']",
        "batch.replay(labels, query_limit=10**9)",
        "batch.replay(small).canonical.tolist()",
        "_reference.replay(small, [0] * 4)[0]",
    ),
    "difflib.get_close_matches/50k-x-2000-chars": (
        "import random\n"
        "rnd = random.Random(6)\n"
        "alphabet = [chr(0x4E00 + k) for k in range(100)]\n"
        "base = ''.join(rnd.choices(alphabet, k=1_000_000 * SCALE))\n"
        "word = base[:2000]\n"
        "possibilities = [base[k * 19 : k * 19 + 2000] for k in range(1, 50_000 * SCALE + 1)]",
        "md.get_close_matches(word, possibilities, 3, 0.0)",
        "md.get_close_matches('appel', ['ape', 'apple', 'peach', 'puppy'])",
        "difflib.get_close_matches('appel', ['ape', 'apple', 'peach', 'puppy'])",
    ),
    # One line repeated: every row of the match search meets a match in every column, each extended
    # across the whole sequences. (Two wholly equal sequences are answered in milliseconds: the last
    # line differs so that the call stays long.)
    "difflib.SequenceMatcher/400k-equal-lines-no-autojunk": (
        "a = ['x\\n'] * (400_000 * SCALE)\nb = a[:-1] + ['y\\n']",
        "md.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()",
        "md.SequenceMatcher(None, ['a\\n', 'b\\n'], ['b\\n']).get_opcodes()",
        "difflib.SequenceMatcher(None, ['a\\n', 'b\\n'], ['b\\n']).get_opcodes()",
    ),
    "difflib.SequenceMatcher.ratio/400k-rotated-lines-no-autojunk": (
        "a = ['x\\n'] * (400_000 * SCALE) + ['y\\n']\nb = ['y\\n'] + ['x\\n'] * (400_000 * SCALE)",
        "md.SequenceMatcher(None, a, b, autojunk=False).ratio()",
        "md.SequenceMatcher(None, ['a\\n', 'b\\n'], ['b\\n']).ratio()",
        "difflib.SequenceMatcher(None, ['a\\n', 'b\\n'], ['b\\n']).ratio()",
    ),
    "difflib.SequenceMatcher.find_longest_match/400k-swapped-halves": (
        "a = ['x\\n'] * (200_000 * SCALE) + ['y\\n'] * (200_000 * SCALE)\n"
        "b = a[len(a) // 2 :] + a[: len(a) // 2]",
        "md.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()",
        "tuple(md.SequenceMatcher(None, 'abxcd', 'abcd').find_longest_match(0, 5, 0, 4))",
        "tuple(difflib.SequenceMatcher(None, 'abxcd', 'abcd').find_longest_match(0, 5, 0, 4))",
    ),
    "ratio/4MB-one-byte-repeated": (
        "a = 'a' * (4_000_000 * SCALE)\nb = a[:-1] + 'b'",
        "memdedup.ratio(a, b, autojunk=False)",
        "memdedup.ratio('abcd', 'bcde', autojunk=False)",
        "difflib.SequenceMatcher(None, 'abcd', 'bcde', autojunk=False).ratio()",
    ),
    "ratio/4M-wide-repeated": (
        "a = '\\u4e00' * (4_000_000 * SCALE)\nb = a[:-1] + 'b'",
        "memdedup.ratio(a, b, autojunk=False)",
        "memdedup.ratio('abcd', 'bcde', autojunk=False)",
        "difflib.SequenceMatcher(None, 'abcd', 'bcde', autojunk=False).ratio()",
    ),
}

PRELUDE_IMPORTS = """
import difflib, time
import memdedup
from memdedup import _reference, batch
from memdedup import difflib as md
"""

#: After the interruption: a small call of the same function gives the oracle's answer.
FOLLOW_UP = """
_got, _want = plain({small}), plain({expected})
print("alive" if _got == _want else f"wrong answer after Ctrl-C: {{_got!r}} != {{_want!r}}", flush=True)
"""


@pytest.mark.parametrize("name", sampled(sorted(PROBES), 1))
def test_ctrl_c_interrupts_a_long_call(name: str) -> None:
    setup, call, small, expected = PROBES[name]
    source = interrupt_support.script(
        setup,
        call,
        prelude=PRELUDE + PRELUDE_IMPORTS,
        follow_up=FOLLOW_UP.format(small=small, expected=expected),
    )
    interrupt_support.interrupt(source, env=child_env()).check()
