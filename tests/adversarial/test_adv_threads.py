"""The same functions called from several Python threads at once, on shared inputs, while another thread
keeps replacing the inputs' items with fresh, equal objects (freeing the old ones).

The switch interval is cut to 10 microseconds, and the collector runs at almost every allocation with a
finalizer to run, so threads interleave at every chance the bindings give them (a label's ``__str__``, a
``lower()`` through Python, an exception raised inside the binding, a released GIL). The values never
change, so the expected outcome is exactly the reference's answer, in every thread, every time.
"""

from __future__ import annotations

import pytest
from _probe import run_and_expect
from profiles import sampled

SCRIPT = """
import difflib, sys, threading
import memdedup
from memdedup import _core, _reference, batch
from memdedup import difflib as md
sys.setswitchinterval(1e-5)
{setup}
stop = threading.Event()
def mutate():
    while not stop.is_set():
        for lst in shared:
            lst[:] = fresh_all(lst)
def run_all():
    results, errors = [[] for _ in range({threads})], []
    def worker(k):
        try:
            for _ in range({rounds}):
                results[k].append(plain(call()))
        except BaseException as exc:
            errors.append(exc)
    # Python code inside the bindings' allocations too: a collector run at almost every allocation, with
    # a finalizer (a no-op) that gives the switch interval its chance to hand the GIL to the mutator.
    arm(lambda: None, limit=20_000)
    mutator = threading.Thread(target=mutate)
    workers = [threading.Thread(target=worker, args=(k,)) for k in range({threads})]
    mutator.start()
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    stop.set()
    mutator.join()
    disarm()
    if errors:
        raise errors[0]
    return results
want = plain(expected)
def check(results):
    bad = [(k, r) for k, rs in enumerate(results) for r in rs if r != want]
    return not bad or f"{{len(bad)}} answers differ, e.g. thread {{bad[0][0]}}: {{short(bad[0][1])}}"
report(run_all, check)
"""

# name -> setup (defines ``shared``: the lists the mutator refreshes, ``call`` and ``expected``)
PROBES: dict[str, str] = {
    "batch.match_pairs/pipelined": """
stored = attack_labels(9_000, tag="s", every=53)
incoming = attack_labels(9_000, tag="i", every=59)
shared = [stored, incoming]
expected = [bool(x) for x in _reference.match_pairs(stored, incoming)]
call = lambda: batch.match_pairs(stored, incoming)
""",
    "core.match_pairs/small": """
stored = attack_labels(300, tag="s", every=5)
incoming = attack_labels(300, tag="i", every=7)
shared = [stored, incoming]
expected = [int(x) for x in _reference.match_pairs(stored, incoming)]
call = lambda: list(_core.match_pairs(stored, incoming))
""",
    "core.match_mask": """
candidates = attack_labels(400, tag="s", every=5)
shared = [candidates]
incoming = "uses pytest and ruff for s project number 4"
expected = _reference.match_mask(incoming, candidates)
call = lambda: _core.match_mask(incoming, candidates)
""",
    "batch.cdist/normalise": """
queries = attack_labels(20, tag="q", every=3)
choices = attack_labels(60, tag="c", every=4)
shared = [queries, choices]
norm = _reference.normalise_label
expected = [[difflib.SequenceMatcher(None, norm(q), norm(c)).ratio() for c in choices] for q in queries]
call = lambda: batch.cdist(queries, choices, normalise=True)
""",
    "batch.replay": """
labels = attack_labels(300, tag="l", every=7)
shared = [labels]
expected = _reference.replay(labels, [0] * len(labels))[0]
call = lambda: _core.replay(labels, [0] * 300)[0]
""",
    "core.join": """
labels = attack_labels(120, tag="l", every=5)
shared = [labels]
expected = [x for pair in _reference.join(labels) for x in pair]
call = lambda: u32s(_core.join(labels))
""",
    "difflib.get_close_matches": """
possibilities = [str(x) for x in attack_labels(400, tag="p", every=3)]
shared = [possibilities]
word = "uses pytest and ruff for p project number 3"
expected = difflib.get_close_matches(word, list(possibilities), 5, 0.3)
call = lambda: md.get_close_matches(word, possibilities, 5, 0.3)
""",
    "difflib.SequenceMatcher/lines": """
a = [str(x) + "\\n" for x in attack_labels(2000, tag="a", every=13)]
b = [str(x) + "\\n" for x in attack_labels(2000, tag="a", every=11)]
shared = [a, b]
expected = difflib.SequenceMatcher(None, fresh_all(a), fresh_all(b)).get_opcodes()
call = lambda: md.SequenceMatcher(None, a, b).get_opcodes()
""",
    "one-pair functions": """
labels = attack_labels(40, tag="l", every=2)
texts = [str(x) for x in labels]
shared = [labels, texts]
def both(m):
    return [
        (m.normalise_label(x), m.labels_match(x, y), m.match_reason(x, y), m.ratio(s, t),
         m.matching_blocks(s, t))
        for x, y, s, t in zip(list(labels), list(labels)[1:], list(texts), list(texts)[1:])
    ]
expected = both(_reference)
call = lambda: both(_core)
""",
}


@pytest.mark.parametrize("name", sampled(sorted(PROBES), 2))
def test_concurrent_calls_with_a_mutating_thread(name: str) -> None:
    """Expected: the reference's answer in every thread, every round."""
    run_and_expect(SCRIPT.format(setup=PROBES[name], threads=4, rounds=3), "reference", timeout=300)
