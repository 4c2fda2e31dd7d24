"""Ctrl-C during a long core call: the call must raise KeyboardInterrupt promptly, and the interpreter
must still work after it.

Each probe builds its inputs in a child ``python -X dev``, says it is ready, and starts a call that runs
for minutes (stdlib difflib's equivalent can be interrupted at any time). The parent sends SIGINT about a
second later. Expected: the call raises ``KeyboardInterrupt`` and the child then makes a small call of the
same function and gets the reference's answer, all within a generous bound (20 s: no timing is asserted
beyond "not minutes"). A child that is still busy after the bound is killed and the test fails.
"""

from __future__ import annotations

import select
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from _probe import PRELUDE, Child, child_env, expect, parse

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

#: Seconds the child gets, after SIGINT, to raise KeyboardInterrupt, make its small call and exit.
BOUND = 20.0

# name -> (setup: inputs built before the call, long call, small follow-up call, its expected answer)
PROBES: dict[str, tuple[str, str, str, str]] = {
    # The harness itself: the standard library's pure-Python matcher answers Ctrl-C at once.
    "sanity/stdlib-difflib": (
        "import random\n"
        "rnd = random.Random(0)\n"
        "a = ''.join(rnd.choices('ab', k=200_000))\n"
        "b = ''.join(rnd.choices('ab', k=200_000))",
        "difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()",
        "difflib.SequenceMatcher(None, 'abcd', 'bcde').ratio()",
        "0.75",
    ),
    "ratio/4MB-no-autojunk": (
        "import random\n"
        "rnd = random.Random(1)\n"
        "a = ''.join(rnd.choices('ab', k=4_000_000))\n"
        "b = ''.join(rnd.choices('ab', k=4_000_000))",
        "memdedup.ratio(a, b, autojunk=False)",
        "memdedup.ratio('abcd', 'bcde', autojunk=False)",
        "difflib.SequenceMatcher(None, 'abcd', 'bcde', autojunk=False).ratio()",
    ),
    "matching_blocks/4MB-no-autojunk": (
        "import random\n"
        "rnd = random.Random(2)\n"
        "a = ''.join(rnd.choices('ab', k=4_000_000))\n"
        "b = ''.join(rnd.choices('ab', k=4_000_000))",
        "memdedup.matching_blocks(a, b, autojunk=False)",
        "memdedup.matching_blocks('abxcd', 'abcd')",
        "[tuple(m) for m in difflib.SequenceMatcher(None, 'abxcd', 'abcd').get_matching_blocks()]",
    ),
    "batch.join/50k": (
        "import random\n"
        "rnd = random.Random(3)\n"
        "labels = [''.join(rnd.choices('ab', k=40)) for _ in range(50_000)]\n"
        "small = ['Uses pytest and ruff', 'uses pytest and ruff.', 'Prefers dark mode', 'dark mode!']",
        "batch.join(labels)",
        "batch.join(small).tolist()",
        "[list(p) for p in _reference.join(small)]",
    ),
    "batch.cdist/4000x4000": (
        "import random\n"
        "rnd = random.Random(4)\n"
        "base = ''.join(rnd.choices('abcdefghij', k=1_000_000))\n"
        "texts = [base[k * 200 : k * 200 + 1000] for k in range(4000)]",
        "batch.cdist(texts, texts)",
        "batch.cdist(['abcd', 'xyz'], ['bcde']).tolist()",
        "[[difflib.SequenceMatcher(None, q, 'bcde').ratio()] for q in ['abcd', 'xyz']]",
    ),
    "index.LabelIndex.query/200k-one-window": (
        # Every stored label in the query's length window, most passing every bound: a long query.
        "import random\n"
        "from memdedup.index import LabelIndex\n"
        "rnd = random.Random(9)\n"
        "labels = ['ab' * 60 + ''.join(rnd.choices('ab', k=80)) for _ in range(200_000)]\n"
        "index = LabelIndex.build(labels, threshold=0.5)\n"
        "small = LabelIndex.build(['Uses pytest and ruff', 'Prefers dark mode'])",
        "index.query('ab' * 100, threshold=0.5)",
        "[m.id for m in small.query('uses pytest and ruff.')]",
        "[0]",
    ),
    "batch.replay/gate-free-20k": (
        "import random\n"
        "rnd = random.Random(10)\n"
        "labels = [''.join(rnd.choices('ab', k=60)) for _ in range(20_000)]\n"
        "small = ['Uses pytest and ruff', 'uses pytest and ruff.', 'Prefers dark mode', 'dark mode!']",
        "batch.replay(labels, prefix='none', threshold=0.8)",
        "batch.replay(small, prefix='none').canonical.tolist()",
        "_reference.replay(small, [0] * 4, prefix='none')[0]",
    ),
    "batch.replay/25k-shared-prefix": (
        "import random\n"
        "rnd = random.Random(5)\n"
        "tails = [''.join(rnd.choices('abcdefghij', k=60)) for _ in range(25_000)]\n"
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
        "base = ''.join(rnd.choices(alphabet, k=1_000_000))\n"
        "word = base[:2000]\n"
        "possibilities = [base[k * 19 : k * 19 + 2000] for k in range(1, 50_001)]",
        "md.get_close_matches(word, possibilities, 3, 0.0)",
        "md.get_close_matches('appel', ['ape', 'apple', 'peach', 'puppy'])",
        "difflib.get_close_matches('appel', ['ape', 'apple', 'peach', 'puppy'])",
    ),
    # One line repeated: every row of the match search meets a match in every column, each extended
    # across the whole sequences. (Two wholly equal sequences are answered in milliseconds: the last
    # line differs so that the call stays long.)
    "difflib.SequenceMatcher/400k-equal-lines-no-autojunk": (
        "a = ['x\\n'] * 400_000\nb = a[:-1] + ['y\\n']",
        "md.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()",
        "md.SequenceMatcher(None, ['a\\n', 'b\\n'], ['b\\n']).get_opcodes()",
        "difflib.SequenceMatcher(None, ['a\\n', 'b\\n'], ['b\\n']).get_opcodes()",
    ),
    "difflib.SequenceMatcher.ratio/400k-rotated-lines-no-autojunk": (
        "a = ['x\\n'] * 400_000 + ['y\\n']\nb = ['y\\n'] + ['x\\n'] * 400_000",
        "md.SequenceMatcher(None, a, b, autojunk=False).ratio()",
        "md.SequenceMatcher(None, ['a\\n', 'b\\n'], ['b\\n']).ratio()",
        "difflib.SequenceMatcher(None, ['a\\n', 'b\\n'], ['b\\n']).ratio()",
    ),
    "difflib.SequenceMatcher.find_longest_match/400k-swapped-halves": (
        "a = ['x\\n'] * 200_000 + ['y\\n'] * 200_000\nb = a[200_000:] + a[:200_000]",
        "md.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()",
        "tuple(md.SequenceMatcher(None, 'abxcd', 'abcd').find_longest_match(0, 5, 0, 4))",
        "tuple(difflib.SequenceMatcher(None, 'abxcd', 'abcd').find_longest_match(0, 5, 0, 4))",
    ),
    "ratio/4MB-one-byte-repeated": (
        "a = 'a' * 4_000_000\nb = a[:-1] + 'b'",
        "memdedup.ratio(a, b, autojunk=False)",
        "memdedup.ratio('abcd', 'bcde', autojunk=False)",
        "difflib.SequenceMatcher(None, 'abcd', 'bcde', autojunk=False).ratio()",
    ),
    "ratio/4M-wide-repeated": (
        "a = '\\u4e00' * 4_000_000\nb = a[:-1] + 'b'",
        "memdedup.ratio(a, b, autojunk=False)",
        "memdedup.ratio('abcd', 'bcde', autojunk=False)",
        "difflib.SequenceMatcher(None, 'abcd', 'bcde', autojunk=False).ratio()",
    ),
}

SCRIPT = """
import difflib, time
import memdedup
from memdedup import _reference, batch
from memdedup import difflib as md
{setup}
emit({{"kind": "ready"}})
start = time.monotonic()
try:
    {call}
except KeyboardInterrupt as exc:
    result = describe_exception(exc)
else:
    result = {{"kind": "value", "equal": False, "why": "the long call finished: it was never interrupted"}}
result["seconds"] = time.monotonic() - start
emit(result)
report(lambda: {small}, equals({expected}))
"""


def interrupt(script: str, *, after: float = 1.0) -> Child:
    """Run ``script``; once it reports ready, wait ``after`` seconds and send SIGINT; give it ``BOUND``
    seconds to finish."""
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-X", "dev", "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        errors="replace",
        env=child_env(),
    )
    assert proc.stdout is not None
    head = []
    try:
        while True:  # inputs take a few seconds to build
            ready, _, _ = select.select([proc.stdout], [], [], 120)
            line = proc.stdout.readline() if ready else ""
            if not line:
                break
            head.append(line)
            if '"kind": "ready"' in line:
                break
        time.sleep(after)
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        try:
            out, err = proc.communicate(timeout=BOUND)
            timed_out = False
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            timed_out = True
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stdout = "".join(head) + out
    seconds = time.monotonic() - sent if timed_out else time.monotonic() - started
    reports = [r for r in parse(stdout) if r.get("kind") != "ready"]
    return Child(script, proc.returncode, stdout, err, seconds, timed_out, reports)


@pytest.mark.parametrize("name", sorted(PROBES))
def test_ctrl_c_interrupts_a_long_call(name: str) -> None:
    setup, call, small, expected = PROBES[name]
    script = PRELUDE + textwrap.dedent(SCRIPT).format(setup=setup, call=call, small=small, expected=expected)
    child = interrupt(script)
    assert not child.timed_out, f"no KeyboardInterrupt within {BOUND:.0f} s of SIGINT\n" + child.describe()
    expect(child, "reference", "KeyboardInterrupt")
    assert len(child.reports) == 2, child.describe()
    interrupted, after = child.reports
    assert interrupted["kind"] == "raise" and "KeyboardInterrupt" in interrupted["mro"], child.describe()
    assert after["kind"] == "value" and after["equal"], (
        "the interpreter did not work after Ctrl-C\n" + child.describe()
    )
