"""Labels whose Python methods fight back: ``__str__``, ``__bool__``, ``__len__`` and ``lower()`` that
raise, return odd things or change the input list while the binding reads it; str subclasses.

The reference coerces a label as ``str(label or "")`` and lower-cases the result with its own
``lower()``, so each of those methods is observable. Each probe builds the same inputs twice (fresh
objects each time), runs the reference (:mod:`memdedup._reference`) on one and the entry point on the
other, in a child ``python -X dev``. Expected: the same outcome as the reference (the same answer, or the
same exception class). A label that changes the list being read may also end the read with a typed
``IndexError`` (the list got shorter under the reader); nothing else.
"""

from __future__ import annotations

import pytest
from _probe import run_and_expect
from profiles import diagonal

#: Label classes, defined in the child. Each ``make(kind)`` builds a fresh list of labels with the odd one
#: at ``at`` (so it can reach the list it sits in).
KINDS = """
class Boom(Exception):
    pass

class StrRaises:
    def __str__(self):
        raise Boom("no text")

class BoolRaises:
    def __bool__(self):
        raise Boom("no truth")
    def __str__(self):
        return "never read"

class LenRaises:
    def __len__(self):
        raise Boom("no length")
    def __str__(self):
        return "never read"

class StrNotStr:
    def __str__(self):
        return 5

class Lowered(str):
    def lower(self):
        return "  Lowered BY The SUBCLASS.  "

class LowerRaises(str):
    def lower(self):
        raise Boom("no lower")

class StrGivesLowered:
    def __str__(self):
        return Lowered("Uses PYTEST and ruff for Python projects")

class StrGivesLowerRaises:
    def __str__(self):
        return LowerRaises("Uses PYTEST and ruff")

class SubWithStr(str):
    def __str__(self):
        return "  Uses pytest and ruff, overridden.  "

class SubFalsyLen(str):
    def __len__(self):
        return 0

class SubWithLower(str):
    def lower(self):
        return "never used: str() of a subclass is an exact copy"

MUTATOR_TEXT = "uses pytest and ruff for python projects"
APPENDED = "uses pytest and ruff appended later"

class Mutator:
    def __init__(self, lst, how):
        self.lst, self.how = lst, how
    def __str__(self):
        if self.how == "clear":
            del self.lst[:]
        elif self.how == "append":
            self.lst.extend(fresh(APPENDED) for _ in range(50))
        elif self.how == "replace":
            self.lst[:] = [fresh("x" * 20) for _ in self.lst]
        return fresh(MUTATOR_TEXT)

# The entry point's answer must be the reference's on a state the mutated list passed through (the odd
# label read as the text its __str__ returns), or a typed exception (the parent says which).
def report_states(make, impl, ref):
    args = make()
    has_mutator = lambda a: isinstance(a, list) and any(isinstance(x, Mutator) for x in a)
    k, lst = next((k, a) for k, a in enumerate(args) if has_mutator(a))
    how = next(x.how for x in lst if isinstance(x, Mutator))
    plain_list = [fresh(MUTATOR_TEXT) if isinstance(x, Mutator) else x for x in lst]
    if how == "clear":
        states = list(prefix_states(plain_list, None))
    elif how == "replace":
        states = list(prefix_states(plain_list, ["x" * 20] * len(plain_list)))
    else:
        states = [plain_list, plain_list + [APPENDED] * 50]
    answers = [reference_outcome(lambda: ref(*args[:k], list(state), *args[k + 1:])) for state in states]
    def check(got):
        return ("ok", plain(got)) in answers or "equals the reference of no state the list passed through"
    report(lambda: impl(*args), check)

def odd(kind, lst):
    simple = {
        "str-raises": StrRaises, "bool-raises": BoolRaises, "len-raises": LenRaises,
        "str-returns-int": StrNotStr, "str-returns-lower-subclass": StrGivesLowered,
        "str-returns-raising-lower-subclass": StrGivesLowerRaises,
    }
    if kind in simple:
        return simple[kind]()
    if kind == "subclass-with-str":
        return SubWithStr("Uses pytest and ruff")
    if kind == "subclass-falsy-len":
        return SubFalsyLen("Uses pytest and ruff")
    if kind == "subclass-with-lower":
        return SubWithLower("Uses PYTEST and ruff for Python")
    if kind == "subclass-lone-surrogate":
        return SubWithLower("Uses pytest \\ud800 and ruff")
    how = kind.removeprefix("str-").removesuffix("s-list")
    return Mutator(lst, how)

def make_list(kind, n, at):
    lst = attack_labels(n, tag="l", every=7, first=3)
    lst[at] = odd(kind, lst)
    return lst
"""

SIMPLE_KINDS = [
    "str-raises",
    "bool-raises",
    "len-raises",
    "str-returns-int",
    "str-returns-lower-subclass",
    "str-returns-raising-lower-subclass",
    "subclass-with-str",
    "subclass-falsy-len",
    "subclass-with-lower",
    "subclass-lone-surrogate",
]
MUTATING_KINDS = ["str-clears-list", "str-appends-list", "str-replaces-list"]

#: entry point -> (make, impl, ref): the inputs, the call under test and the reference call.
ENTRY_POINTS: dict[str, str] = {
    "normalise_label": """
make = lambda: (make_list(KIND, 3, 1)[1],)
impl = memdedup.normalise_label
ref = _reference.normalise_label
""",
    "labels_match/stored": """
make = lambda: (make_list(KIND, 3, 1)[1], "uses pytest and ruff for python projects")
impl = lambda a, b: memdedup.labels_match(a, b)
ref = lambda a, b: _reference.labels_match(a, b)
""",
    "labels_match/incoming": """
make = lambda: ("Uses pytest and ruff", make_list(KIND, 3, 1)[1])
impl = lambda a, b: memdedup.labels_match(a, b, threshold=0.5, min_chars=4)
ref = lambda a, b: _reference.labels_match(a, b, threshold=0.5, min_chars=4)
""",
    "match_reason": """
make = lambda: (make_list(KIND, 3, 1)[1], "uses pytest and ruff")
impl = _core.match_reason
ref = _reference.match_reason
""",
    "core.match_mask": """
make = lambda: ("uses pytest and ruff for l project number 9", make_list(KIND, 40, 20))
impl = _core.match_mask
ref = _reference.match_mask
""",
    "core.match_pairs/small": """
make = lambda: (make_list(KIND, 60, 30), attack_labels(60, tag="l", every=5))
impl = lambda a, b: list(_core.match_pairs(a, b))
ref = lambda a, b: [int(x) for x in _reference.match_pairs(a, b)]
""",
    "core.match_pairs/pipelined": """
make = lambda: (make_list(KIND, 9_000, 5_000), attack_labels(9_000, tag="l", every=5))
impl = lambda a, b: list(_core.match_pairs(a, b))
ref = lambda a, b: [int(x) for x in _reference.match_pairs(a, b)]
""",
    "core.replay": """
make = lambda: (make_list(KIND, 40, 20),)
impl = lambda labels: _core.replay(labels, [0] * 40)
ref = lambda labels: _reference.replay(labels, [0] * 40)
""",
    "core.join": """
make = lambda: (make_list(KIND, 40, 20),)
impl = lambda labels: u32s(_core.join(labels))
ref = lambda labels: [x for pair in _reference.join(labels) for x in pair]
""",
    "core.pair_reasons": """
pairs = [(i, j) for i in range(40) for j in range(i + 1, 40, 3)]
make = lambda: (make_list(KIND, 40, 20),)
impl = lambda labels: _core.pair_reasons(labels, pairs)[0]
ref = lambda labels: [(lambda d: d and d[0])(_reference.match_reason(labels[i], labels[j])) for i, j in pairs]
""",
    "core.cdist/normalise": """
import difflib
make = lambda: (["uses pytest and ruff"], make_list(KIND, 40, 20))
impl = lambda q, c: f64s(_core.cdist(q, c, normalise=True))
norm = _reference.normalise_label
ref = lambda q, c: [difflib.SequenceMatcher(None, norm(q[0]), norm(x)).ratio() for x in c]
""",
}

PROBE = """
import memdedup
from memdedup import _core, _reference
{kinds}
KIND = {kind!r}
{entry}
{call}(make, impl, ref)
"""


# Every entry point with one kind and every kind with one entry point in the default profile.
@pytest.mark.parametrize(("entry", "kind"), diagonal(sorted(ENTRY_POINTS), SIMPLE_KINDS))
def test_odd_label(entry: str, kind: str) -> None:
    """Expected: the reference's outcome (its answer, or the same exception class)."""
    script = PROBE.format(kinds=KINDS, kind=kind, entry=ENTRY_POINTS[entry], call="report_vs")
    run_and_expect(script, "reference")


CORE_ENTRIES = sorted(k for k in ENTRY_POINTS if k.startswith("core.") and "pipelined" not in k)


# (The pipelined match_pairs reader under a changing list: test_adv_finalizers' destructive probes, which
# check each pair on its own; here every state's reference answer is computed, too many for 9,000 pairs.)
@pytest.mark.parametrize(
    ("entry", "kind"),
    diagonal(
        sorted(k for k in ENTRY_POINTS if k.startswith("core.") and "pipelined" not in k), MUTATING_KINDS
    ),
)
def test_label_that_changes_the_list(entry: str, kind: str) -> None:
    """Expected: the reference's answer on a state the list passed through (items read before the change
    are the originals, those after it the new ones), or IndexError (the list got shorter under the
    reader) or InvalidInputError (a count no longer agrees)."""
    script = PROBE.format(kinds=KINDS, kind=kind, entry=ENTRY_POINTS[entry], call="report_states")
    run_and_expect(script, "reference", "IndexError", "InvalidInputError")
