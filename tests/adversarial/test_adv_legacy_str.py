"""CPython 3.11's legacy strings: the bindings' ``cfg(not Py_3_12)`` branches.

Before 3.12 a str could exist in a "not ready" form (``PyUnicode_FromUnicode(NULL, n)`` and its
``wstr`` buffer), whose length, kind, data and hash fields are not filled in yet. The bindings read strs
in place and, on 3.11 only, check ``PyUnicode_IS_READY`` first (``str_equal``, ``str_units``, ``str_len``)
or ready them (``PyUnicode_READY``). Nothing in Python makes such a string, so no other test reaches
those branches: here ctypes does, on 3.11, and each probe checks the strs are still not ready right
before the call (else it would prove nothing). Expected: exactly the reference's answer, computed on
ordinary equal strs. (On 3.12+ the API is gone and so are the branches; CI runs this on 3.11.)
"""

from __future__ import annotations

import sys

import pytest
from _probe import run_and_expect
from profiles import sampled

pytestmark = pytest.mark.skipif(
    sys.version_info[:2] != (3, 11) or sys.implementation.name != "cpython",
    reason="legacy (not ready) strs exist only in CPython 3.11 and earlier",
)

LEGACY = """
import ctypes, difflib
import memdedup
from memdedup import _core, _reference, batch
from memdedup import difflib as md
_api = ctypes.pythonapi
_new = _api.PyUnicode_FromUnicode
_new.argtypes, _new.restype = [ctypes.c_void_p, ctypes.c_ssize_t], ctypes.py_object
_wstr = _api.PyUnicode_AsUnicode
_wstr.argtypes, _wstr.restype = [ctypes.py_object], ctypes.c_void_p
assert ctypes.sizeof(ctypes.c_wchar) == 4, "this probe fills a UCS-4 wstr"

def legacy(text):
    # A not-ready str equal to text: PyUnicode_FromUnicode(NULL, n), its wstr filled in place.
    s = _new(None, len(text))
    data = text.encode("utf-32-le", "surrogatepass")
    ctypes.memmove(_wstr(s), data, len(data))
    return s

def is_ready(s):
    # PyASCIIObject.state, after ob_refcnt, ob_type, length and hash: the `ready` bit is bit 7.
    return bool(ctypes.c_uint32.from_address(id(s) + 4 * ctypes.sizeof(ctypes.c_ssize_t)).value & 0x80)

def legacy_all(texts):
    return [legacy(t) for t in texts]

def probe(call, expected, *legacy_lists):
    not_ready = all(not is_ready(s) for lst in legacy_lists for s in lst)
    assert not_ready, "the legacy strs were readied before the call: the probe would prove nothing"
    report(call, equals(expected))

TEXTS = [f"line {k % 37} of a file, {'wörld' if k % 3 else 'world'} {'一' if k % 5 == 0 else ''}\\n"
         for k in range(600)]
OTHER = [t.replace("7", "8") for t in TEXTS]
"""

PROBES: dict[str, str] = {
    # ElementTable: foldhash of units (str_units readies), guesses (str_equal -> PyUnicode_Compare)
    "difflib.SequenceMatcher/both-legacy": """
expected = difflib.SequenceMatcher(None, TEXTS, OTHER).get_opcodes()
a, b = legacy_all(TEXTS), legacy_all(OTHER)
probe(lambda: md.SequenceMatcher(None, a, b).get_opcodes(), expected, a, b)
""",
    # b hashed and ready (Python hashing); a legacy: its hashes computed, its strs compared unready
    "difflib.SequenceMatcher/a-legacy": """
b = [t[:-1] + t[-1] for t in OTHER]
for t in b:
    hash(t)
expected = difflib.SequenceMatcher(None, TEXTS, b).get_opcodes()
a = legacy_all(TEXTS)
probe(lambda: md.SequenceMatcher(None, a, b).get_opcodes(), expected, a)
""",
    "difflib.SequenceMatcher/b-legacy-ratio": """
expected = difflib.SequenceMatcher(None, TEXTS, OTHER).ratio()
b = legacy_all(OTHER)
probe(lambda: md.SequenceMatcher(None, TEXTS, b).ratio(), expected, b)
""",
    # close_matches: str_len of an unready str
    "difflib.get_close_matches": """
word = "line 7 of a file, wörld"
expected = difflib.get_close_matches(word, TEXTS, 5, 0.5)
poss = legacy_all(TEXTS)
probe(lambda: md.get_close_matches(word, poss, 5, 0.5), expected, poss)
""",
    # LabelBatch's UTF-8 of a borrowed list item
    "batch.match_pairs/pipelined": """
stored, incoming = (TEXTS * 15)[:9000], (OTHER * 15)[:9000]
expected = [bool(x) for x in _reference.match_pairs(stored, incoming)]
s, i = legacy_all(stored), legacy_all(incoming)
probe(lambda: batch.match_pairs(s, i), expected, s, i)
""",
    "core.match_mask": """
expected = _reference.match_mask(OTHER[7], TEXTS[:200])
cands = legacy_all(TEXTS[:200])
probe(lambda: _core.match_mask(OTHER[7], cands), expected, cands)
""",
    "batch.join": """
expected = [list(p) for p in _reference.join(TEXTS[:150])]
labels = legacy_all(TEXTS[:150])
probe(lambda: batch.join(labels), expected, labels)
""",
    "batch.replay": """
expected = _reference.replay(TEXTS, [0] * len(TEXTS))
labels = legacy_all(TEXTS)
probe(lambda: batch.replay(labels), expected, labels)
""",
    "batch.cdist": """
expected = [[difflib.SequenceMatcher(None, q, c).ratio() for c in OTHER[:40]] for q in TEXTS[:10]]
q, c = legacy_all(TEXTS[:10]), legacy_all(OTHER[:40])
probe(lambda: batch.cdist(q, c), expected, q, c)
""",
    "one-pair functions": """
pairs = list(zip(TEXTS[:40], OTHER[:40]))
def calls(m, pairs):
    return [(m.normalise_label(x), m.labels_match(x, y), m.ratio(x, y), m.quick_ratio(x, y),
             m.real_quick_ratio(x, y), m.matching_blocks(x, y)) for x, y in pairs]
expected = calls(_reference, pairs)
xs, ys = legacy_all(TEXTS[:40]), legacy_all(OTHER[:40])
probe(lambda: calls(_core, list(zip(xs, ys))), expected, xs, ys)
""",
}


@pytest.mark.parametrize("name", sampled(sorted(PROBES), 2))
def test_legacy_strs(name: str) -> None:
    """Expected: the reference's answer on ordinary equal strs."""
    run_and_expect(LEGACY + PROBES[name], "reference")
