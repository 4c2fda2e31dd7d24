"""The garbage-collector finalizer attack against every entry point that reads Python objects.

A binding that reads a list item through a borrowed pointer and then calls into the C API in a way that
can run Python code (raising an exception allocates; allocating runs the collector; a collected
object's ``__del__`` runs arbitrary Python) can have that item freed under it. Each probe here plants a
self-referencing object whose ``__del__`` changes the input lists, sets ``gc.set_threshold(1, 1, 1)`` so
the collector runs at almost every allocation, and feeds labels that make the binding allocate (lone
surrogates, whose UTF-8 raises), run Python code (non-str labels with ``__str__``) or lower-case through
Python (non-ASCII), at sizes on both sides of the binding's thresholds (4,096 elements before the GIL is
released, 8,192 pairs before ``match_pairs`` decides while it reads, with rayon's 2+ threads).

Two kinds of finalizer:

- *refreshing*: it replaces every str of the inputs by a fresh, equal str (freeing the old objects) and
  plants itself again. The values never change, so the expected outcome is exactly the reference's
  answer (``_reference`` / the standard library on a copy taken before the call). A binding that kept a
  borrowed item reads freed memory, which ``-X dev``'s debug allocator poisons: a crash or a wrong answer.
- *destructive* (once): ``lst[:] = ['x'] * len(lst)`` or ``del lst[:]`` in the middle of the read. The
  expected outcome is the reference's answer on a state the list passed through (items read before the
  change are the originals, those after it are the new ones; an emptied list ends the read), or a typed
  exception (``IndexError`` for a list that got shorter, ``InvalidInputError``).
"""

from __future__ import annotations

import pytest
from _probe import run_and_expect
from profiles import sampled

# Every probe script starts with the inputs in ``stored``/``incoming``/``labels``... and the oracle's
# answer computed *before* the attack is armed.

PAIRS_SETUP = """
from memdedup import _core, _reference, batch
n = {n}
stored = attack_labels(n, tag="stored", every={every}, first={first})
incoming = attack_labels(n, tag="incoming", every={every} + 2, first={first})
expected = [int(_reference.labels_match(a, b)) for a, b in zip(stored, incoming)]
"""

# name -> (script, allowed outcomes)
REFRESHING: dict[str, str] = {
    # --- match_pairs: the pipelined reader (>= 8,192 pairs of two lists, 2+ rayon threads) and the other path
    "core.match_pairs/pipelined": PAIRS_SETUP.format(n=12_000, every=97, first=0)
    + """
report(lambda: list(_core.match_pairs(stored, incoming)), equals(expected), refresher(stored, incoming))
""",
    "core.match_pairs/small": PAIRS_SETUP.format(n=300, every=7, first=0)
    + """
report(lambda: list(_core.match_pairs(stored, incoming)), equals(expected), refresher(stored, incoming))
""",
    "core.match_pairs/tuples": PAIRS_SETUP.format(n=9_000, every=97, first=0)
    + """
pair = (stored, incoming)
report(lambda: list(_core.match_pairs(*map(tuple, pair))), equals(expected), refresher(stored, incoming))
""",
    "batch.match_pairs/pipelined": PAIRS_SETUP.format(n=12_000, every=97, first=0)
    + """
report(lambda: batch.match_pairs(stored, incoming).astype(int), equals(expected), refresher(stored, incoming))
""",
    # --- one incoming label against many candidates
    "core.match_mask": """
from memdedup import _core, _reference
candidates = attack_labels(600, tag="stored", every=5)
incoming = "\\ud800 stored label 10 with a lone surrogate"
expected = _reference.match_mask(incoming, candidates)
report(lambda: _core.match_mask(incoming, candidates), equals(expected), refresher(candidates))
""",
    "core.match_first": """
from memdedup import _core, _reference
candidates = attack_labels(600, tag="stored", every=5)
incoming = "İstanbul ẞtraße stored label 590 é"
expected = _reference.match_first(incoming, candidates)
report(lambda: _core.match_first(incoming, candidates), equals(expected), refresher(candidates))
""",
    "batch.match_first": """
from memdedup import _reference, batch
candidates = attack_labels(600, tag="stored", every=5)
incoming = "İstanbul ẞtraße stored label 590 é"
expected = _reference.match_first(incoming, candidates)
report(lambda: batch.match_first(incoming, candidates), equals(expected), refresher(candidates))
""",
    # --- cdist / extract: exact strs (normalise=False) and any labels (normalise=True)
    "core.cdist": """
import difflib
from memdedup import _core
queries = [str(x) for x in attack_labels(30, tag="q", every=3)]
choices = [str(x) for x in attack_labels(50, tag="c", every=4)]
expected = [difflib.SequenceMatcher(None, q, c).ratio() for q in queries for c in choices]
report(lambda: f64s(_core.cdist(queries, choices)), equals(expected), refresher(queries, choices))
""",
    "core.cdist/normalise": """
import difflib
from memdedup import _core, _reference
queries = attack_labels(30, tag="q", every=3)
choices = attack_labels(50, tag="c", every=4)
norm = _reference.normalise_label
expected = [difflib.SequenceMatcher(None, norm(q), norm(c)).ratio() for q in queries for c in choices]
report(
    lambda: f64s(_core.cdist(queries, choices, normalise=True)),
    equals(expected),
    refresher(queries, choices),
)
""",
    "batch.extract": """
import difflib
from memdedup import batch
choices = [str(x) for x in attack_labels(80, tag="c", every=4)]
query = "uses pytest and ruff for c project number 7"
scores = [difflib.SequenceMatcher(None, query, c).ratio() for c in choices]
order = sorted(range(len(choices)), key=lambda k: -scores[k])[:5]
expected = [(choices[k], scores[k], k) for k in order]
report(lambda: batch.extract(query, choices), equals(expected), refresher(choices))
""",
    # --- replay, join, clusters, pair_reasons
    "core.replay": """
from memdedup import _core, _reference
labels = attack_labels(400, tag="l", every=9)
parts = [k % 3 for k in range(len(labels))]
expected = _reference.replay(labels, parts)
report(lambda: _core.replay(labels, parts), equals(expected), refresher(labels))
""",
    "core.LabelIndex": """
from memdedup import _core, _reference
labels = attack_labels(400, tag="l", every=9)
parts = [k % 3 for k in range(len(labels))]
queries, query_parts = labels[:60], parts[:60]
ref = _reference.LabelIndex()
ref.insert_many(labels, parts)
expected = [ref.query(q, p) for q, p in zip(queries, query_parts)]
def run():
    index = _core.LabelIndex()
    index.insert_many(labels, parts)
    return [index.query(q, p) for q, p in zip(queries, query_parts)]
report(run, equals(expected), refresher(labels, queries))
""",
    "index.LabelIndex": """
from memdedup import _reference
from memdedup.index import LabelIndex
labels = attack_labels(300, tag="l", every=7)
queries = labels[:40]
ref = _reference.LabelIndex()
ref.insert_many(labels, [0] * len(labels))
expected = [[(slot, reason, score) for slot, reason, score in ref.query(q, 0)] for q in queries]
def run():
    index = LabelIndex.build(labels)
    return [[tuple(m) for m in index.query(q)] for q in queries]
report(run, equals(expected), refresher(labels, queries))
""",
    "batch.replay": """
from memdedup import _reference, batch
labels = attack_labels(400, tag="l", every=9)
expected = _reference.replay(labels, [0] * len(labels))
report(lambda: batch.replay(labels), equals(expected), refresher(labels))
""",
    "core.join": """
from memdedup import _core, _reference
labels = attack_labels(160, tag="l", every=5)
expected = [x for pair in _reference.join(labels) for x in pair]
report(lambda: u32s(_core.join(labels)), equals(expected), refresher(labels))
""",
    "batch.join": """
from memdedup import _reference, batch
labels = attack_labels(160, tag="l", every=5)
expected = [list(p) for p in _reference.join(labels)]
report(lambda: batch.join(labels), equals(expected), refresher(labels))
""",
    "core.pair_reasons": """
from memdedup import _core, _reference
labels = attack_labels(120, tag="l", every=5)
pairs = [(i, j) for i in range(0, 120, 7) for j in range(i + 1, 120, 11)]
decided = [_reference.match_reason(labels[i], labels[j]) for i, j in pairs]
expected = ([d[0] if d else None for d in decided], [d[1] if d else None for d in decided])
def call():
    reasons, scores = _core.pair_reasons(labels, pairs)
    return reasons, [s if r else None for r, s in zip(reasons, scores)]
report(call, equals(expected), refresher(labels))
""",
    "batch.clusters": """
from memdedup import _reference, batch
labels = attack_labels(120, tag="l", every=5)
pairs = _reference.join(labels)
canonical, via = _reference.clusters(len(labels), pairs)
expected = canonical
report(lambda: batch.clusters(labels).canonical, equals(expected), refresher(labels))
""",
    # --- get_close_matches' scoring pass and the drop-in itself
    "core.close_matches": """
import difflib
from memdedup import _core
possibilities = [str(x) for x in attack_labels(300, tag="p", every=3)]
word = "uses pytest and ruff for p project number 3"
def scored(word, poss, cutoff):
    out = []
    for k, x in enumerate(poss):
        sm = difflib.SequenceMatcher(None, x, word)
        if sm.real_quick_ratio() >= cutoff and sm.quick_ratio() >= cutoff and sm.ratio() >= cutoff:
            out.append((sm.ratio(), k))
    return out
expected = scored(word, possibilities, 0.3)
report(lambda: _core.close_matches(word, possibilities, 0.3), equals(expected), refresher(possibilities))
""",
    "difflib.get_close_matches": """
import difflib
from memdedup import difflib as md
possibilities = [str(x) for x in attack_labels(300, tag="p", every=3)]
word = "\\ud800 p label 3 with a lone surrogate"
expected = difflib.get_close_matches(word, possibilities, 10, 0.2)
report(lambda: md.get_close_matches(word, possibilities, 10, 0.2), equals(expected), refresher(possibilities))
""",
    "difflib.SequenceMatcher/lines": """
import difflib
from memdedup import difflib as md
a = [str(x) + "\\n" for x in attack_labels(3000, tag="a", every=13)]
b = [str(x) + "\\n" for x in attack_labels(3000, tag="a", every=11)]
a_copy, b_copy = fresh_all(a), fresh_all(b)
ref = difflib.SequenceMatcher(None, a_copy, b_copy)
expected = (ref.get_opcodes(), ref.ratio(), ref.quick_ratio(), ref.get_matching_blocks())
def call():
    sm = md.SequenceMatcher(None, a, b)
    ops = sm.get_opcodes()
    sm2 = md.SequenceMatcher(None, a, b)
    return ops, sm2.ratio(), sm2.quick_ratio(), sm2.get_matching_blocks()
report(call, equals(expected), refresher(a, b))
""",
    "difflib.SequenceMatcher/objects": """
import difflib
from memdedup import difflib as md
# b is lines (the Rust element table); a mixes in other objects (coded with a dict over b's elements)
b = [str(x) + "\\n" for x in attack_labels(800, tag="a", every=13)]
a = [x if k % 5 else k for k, x in enumerate(b)]
a_copy, b_copy = fresh_all(a), fresh_all(b)
ref = difflib.SequenceMatcher(None, a_copy, b_copy)
expected = (ref.get_opcodes(), ref.ratio())
def call():
    sm = md.SequenceMatcher(None, a, b)
    return sm.get_opcodes(), md.SequenceMatcher(None, a, b).ratio()
report(call, equals(expected), refresher(a, b))
""",
    "core.SequenceIndex": """
import difflib
from memdedup import _core
b = [str(x) for x in attack_labels(900, tag="a", every=13)]
a = [str(x) for x in attack_labels(900, tag="a", every=7)]
ref = difflib.SequenceMatcher(None, fresh_all(a), fresh_all(b))
expected = [tuple(m) for m in ref.get_matching_blocks()][:-1]
def call():
    index = _core.SequenceIndex.of_elements(b, isjunk=lambda x: False)
    return index.matching_blocks(index.encode(a))
report(call, equals(expected), refresher(a, b))
""",
    # --- the one-pair functions: nothing borrowed, but run under the same pressure
    "core.one_pair": """
import difflib
from memdedup import _core, _reference
labels = attack_labels(60, tag="l", every=2)
texts = [str(x) for x in labels]
expected = [
    (_reference.normalise_label(x), _reference.labels_match(x, y), _reference.match_reason(x, y),
     difflib.SequenceMatcher(None, s, t).ratio(), difflib.SequenceMatcher(None, s, t).quick_ratio(),
     difflib.SequenceMatcher(None, s, t).real_quick_ratio(),
     [tuple(m) for m in difflib.SequenceMatcher(None, s, t).get_matching_blocks()])
    for x, y, s, t in zip(labels, labels[1:], texts, texts[1:])
]
def call():
    return [
        (_core.normalise_label(x), _core.labels_match(x, y), _core.match_reason(x, y), _core.ratio(s, t),
         _core.quick_ratio(s, t), _core.real_quick_ratio(s, t), _core.matching_blocks(s, t))
        for x, y, s, t in zip(labels, labels[1:], texts, texts[1:])
    ]
report(call, equals(expected), refresher(labels, texts))
""",
    "dedup.find_canonical_node": """
import asyncio
from memdedup import dedup, _reference
from types import SimpleNamespace
labels = attack_labels(20, tag="l", every=2)
nodes = [SimpleNamespace(id=str(k), label=x, properties={"scope_path": "s"}, tenant_id="t")
         for k, x in enumerate(labels)]
class Graph:
    async def query_nodes(self, scope, *, layer, label_prefix):
        return list(nodes)
scope = SimpleNamespace(scope_path="s")
incoming = "uses pytest and ruff for l project number 3!"
def find(impl):
    node = asyncio.run(impl(Graph(), scope, layer="semantic", label=incoming))
    return None if node is None else node.id
expected = find(_reference.find_canonical_node)
def refresh_nodes():
    for node in nodes:
        if type(node.label) is str:
            node.label = fresh(node.label)
report(lambda: find(dedup.find_canonical_node), equals(expected), refresh_nodes)
""",
}


@pytest.mark.parametrize("name", sampled(sorted(REFRESHING), 3))
def test_refreshing_finalizer(name: str) -> None:
    """Expected: exactly the reference's answer (the finalizer changes no value)."""
    child = run_and_expect(REFRESHING[name], "reference")
    assert child.report is not None and child.report["fired"] > 0, "the finalizer never fired: nothing proved"


# ---------------------------------------------------------------------------------------------------
# Destructive finalizers: the list changes once, in the middle of the read.
# ---------------------------------------------------------------------------------------------------

ELEMENTWISE_PAIRS = """
from memdedup import _core, _reference
n = {n}
# ASCII up to the middle, so the first allocation inside the binding (a lone surrogate's UTF-8) comes
# there, in the list under attack (the pipelined reader takes a chunk of stored, then of incoming)
stored = attack_labels(n, tag="stored", every=3, first=n // 2 + (0 if "{target}" == "stored" else 2100))
incoming = attack_labels(n, tag="incoming", every=5, first=n // 2)
original = fresh_all({target})
ok_orig = [_reference.labels_match(a, b) for a, b in zip(stored, incoming)]
ok_x = [_reference.labels_match("x", b) if {target} is stored else _reference.labels_match(a, "x")
        for a, b in zip(stored, incoming)]
def check(got):
    got = list(got)
    if len(got) != n:
        return f"{{len(got)}} answers for {{n}} pairs"
    bad = [k for k in range(n) if got[k] not in (ok_orig[k], ok_x[k])]
    return f"pairs {{bad[:10]}} match neither the original nor the replaced label" if bad else True
report(lambda: _core.match_pairs(stored, incoming), check, {action}({target}), rearm=False)
"""

# The index's bulk insert, its list replaced or cleared mid-read: the queries answer as the reference's
# index built from a state the list passed through.
INDEX_INSERT_MANY = """
from memdedup import _core, _reference
labels = attack_labels(40, tag="l", every=3, first=20)
probe = fresh_all(labels)[:12]
def ref(state):
    index = _reference.LabelIndex()
    index.insert_many(state, [0] * len(state))
    return [index.query(q, 0) for q in probe]
def run():
    index = _core.LabelIndex()
    index.insert_many(labels, [0] * 40)
    return [index.query(q, 0) for q in probe]
check = one_of_states(ref, fresh_all(labels), {state})
report(run, check, {action}(labels), rearm=False)
"""

DESTRUCTIVE: dict[str, tuple[str, tuple[str, ...]]] = {
    # Each pair k is labels_match of the original or of the replacement: never anything else.
    "core.match_pairs/pipelined/replace-stored": (
        ELEMENTWISE_PAIRS.format(n=12_000, target="stored", action="replacer"),
        ("reference",),
    ),
    "core.match_pairs/pipelined/replace-incoming": (
        ELEMENTWISE_PAIRS.format(n=12_000, target="incoming", action="replacer"),
        ("reference",),
    ),
    "core.match_pairs/small/replace-stored": (
        ELEMENTWISE_PAIRS.format(n=400, target="stored", action="replacer"),
        ("reference",),
    ),
    # A list emptied under the reader: documented as IndexError; an answer would have to be complete.
    "core.match_pairs/pipelined/clear-stored": (
        ELEMENTWISE_PAIRS.format(n=12_000, target="stored", action="clearer"),
        ("reference", "IndexError", "InvalidInputError"),
    ),
    "core.match_pairs/small/clear-incoming": (
        ELEMENTWISE_PAIRS.format(n=400, target="incoming", action="clearer"),
        ("reference", "IndexError", "InvalidInputError"),
    ),
    "core.match_mask/replace": (
        """
from memdedup import _core, _reference
candidates = attack_labels(60, tag="c", every=4, first=30)
incoming = "uses pytest and ruff for c project number 7"
ref = lambda state: _reference.match_mask(incoming, state)
check = one_of_states(ref, fresh_all(candidates), ["x"] * len(candidates))
report(lambda: _core.match_mask(incoming, candidates), check, replacer(candidates), rearm=False)
""",
        ("reference", "IndexError"),
    ),
    "core.match_mask/clear": (
        """
from memdedup import _core, _reference
candidates = attack_labels(60, tag="c", every=4, first=30)
incoming = "uses pytest and ruff for c project number 7"
ref = lambda state: _reference.match_mask(incoming, state)
check = one_of_states(ref, fresh_all(candidates), None)
report(lambda: _core.match_mask(incoming, candidates), check, clearer(candidates), rearm=False)
""",
        ("reference", "IndexError"),
    ),
    "core.join/replace": (
        """
from memdedup import _core, _reference
labels = attack_labels(40, tag="l", every=3, first=20)
ref = lambda state: [x for pair in _reference.join(state) for x in pair]
check = one_of_states(ref, fresh_all(labels), ["x"] * len(labels))
report(lambda: u32s(_core.join(labels)), check, replacer(labels), rearm=False)
""",
        ("reference", "IndexError"),
    ),
    "core.join/clear": (
        """
from memdedup import _core, _reference
labels = attack_labels(40, tag="l", every=3, first=20)
ref = lambda state: [x for pair in _reference.join(state) for x in pair]
check = one_of_states(ref, fresh_all(labels), None)
report(lambda: u32s(_core.join(labels)), check, clearer(labels), rearm=False)
""",
        ("reference", "IndexError"),
    ),
    "core.replay/replace": (
        """
from memdedup import _core, _reference
labels = attack_labels(40, tag="l", every=3, first=20)
parts = [0] * len(labels)
check = one_of_states(lambda state: _reference.replay(state, parts), fresh_all(labels), ["x"] * len(labels))
report(lambda: _core.replay(labels, parts), check, replacer(labels), rearm=False)
""",
        ("reference", "IndexError", "InvalidInputError"),
    ),
    "core.replay/clear": (
        """
from memdedup import _core, _reference
labels = attack_labels(40, tag="l", every=3, first=20)
parts = [0] * len(labels)
check = one_of_states(lambda state: _reference.replay(state, parts[: len(state)]), fresh_all(labels), None)
report(lambda: _core.replay(labels, parts), check, clearer(labels), rearm=False)
""",
        ("reference", "IndexError", "InvalidInputError"),
    ),
    "core.LabelIndex.insert_many/replace": (
        INDEX_INSERT_MANY.format(action="replacer", state='["x"] * len(labels)'),
        ("reference", "IndexError", "InvalidInputError"),
    ),
    "core.LabelIndex.insert_many/clear": (
        INDEX_INSERT_MANY.format(action="clearer", state="None"),
        ("reference", "IndexError", "InvalidInputError"),
    ),
    "core.pair_reasons/clear": (
        """
from memdedup import _core, _reference
labels = attack_labels(40, tag="l", every=3, first=20)
pairs = [(i, i + 1) for i in range(39)]
def ref(state):
    decided = [_reference.match_reason(state[i], state[j]) for i, j in pairs]
    return [d[0] if d else None for d in decided]
check = one_of_states(ref, fresh_all(labels), ["x"] * len(labels))
report(lambda: _core.pair_reasons(labels, pairs)[0], check, replacer(labels), rearm=False)
""",
        ("reference", "IndexError", "InvalidInputError"),
    ),
    "core.close_matches/replace": (
        """
import difflib
from memdedup import _core
possibilities = [str(x) for x in attack_labels(40, tag="p", every=3, first=20)]
word = "uses pytest and ruff for p project number 3"
def ref(state):
    out = []
    for k, x in enumerate(state):
        sm = difflib.SequenceMatcher(None, x, word)
        if sm.real_quick_ratio() >= 0.3 and sm.quick_ratio() >= 0.3 and sm.ratio() >= 0.3:
            out.append((sm.ratio(), k))
    return out
check = one_of_states(ref, fresh_all(possibilities), ["x"] * len(possibilities))
# An exact list is read in place, running no Python code: no finalizer can run during that read. An
# iterable runs Python code between items (here an allocation each, so the collector runs), and the
# finalizer then frees every item read so far unless the binding holds its own reference to it.
steps = Stepping(possibilities, quiet=10)
report(
    lambda: _core.close_matches(word, steps, 0.3),
    check,
    replacer(possibilities),
    rearm=False,
)
""",
        ("reference", "IndexError"),
    ),
    "core.cdist/normalise/replace": (
        """
import difflib
from memdedup import _core, _reference
choices = attack_labels(40, tag="c", every=3, first=20)
query = ["uses pytest and ruff for c project number 3"]
norm = _reference.normalise_label
ref = lambda state: [difflib.SequenceMatcher(None, norm(query[0]), norm(c)).ratio() for c in state]
check = one_of_states(ref, fresh_all(choices), ["x"] * len(choices))
report(lambda: f64s(_core.cdist(query, choices, normalise=True)), check, replacer(choices), rearm=False)
""",
        ("reference", "IndexError"),
    ),
}


@pytest.mark.parametrize("name", sampled(sorted(DESTRUCTIVE), 2))
def test_destructive_finalizer(name: str) -> None:
    """Expected: the reference's answer on a state the list passed through, or the typed exceptions
    listed with the probe."""
    script, allowed = DESTRUCTIVE[name]
    child = run_and_expect(script, *allowed)
    assert child.report is not None and child.report["fired"] > 0, "the finalizer never fired: nothing proved"
