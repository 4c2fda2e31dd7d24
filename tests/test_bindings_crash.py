"""No input from Python crashes, aborts or panics the Rust bindings (issue 22, items 1 and 2).

Each probe runs in a child interpreter (``python -X dev``, the Rust backend forced; see
``test_bindings_child``), so a segfault, an abort or a Rust panic fails the test instead of the run:

- the garbage-collector finalizer attack against every entry point that reads Python objects: lists
  of strs holding lone surrogates (whose UTF-8 conversion raises, and raising allocates, and
  allocating can run the collector), a low collection threshold, and finalizers that overwrite the
  lists being read, so that every str read so far is freed;
- allocation limits (``RLIMIT_AS``): a result too large for memory is a ``MemoryError``, as numpy and
  rapidfuzz give, never an abort;
- absurd sizes and numbers (huge, negative, non-integral, sequences whose ``__len__`` lies): a
  typed error or the reference's own answer, never ``PanicException``.
"""

from __future__ import annotations

import pytest
from profiles import sampled
from test_bindings_child import assert_clean, requires_rust, run_child

pytestmark = requires_rust

# ----------------------------------------------------------------------------------------------------
# Item 1: finalizers that free what the binding is reading
# ----------------------------------------------------------------------------------------------------

ATTACK = r"""
import gc
from memdedup import _core, batch

N = 20_000

def labels(tag, n=N):
    # Lone surrogates: no UTF-8, so reading them through UTF-8 raises (and allocates).
    return ["\ud800 %s label %d" % (tag, i) for i in range(n)]

victims = []
rounds = [400]
live = [False]  # the finalizers strike only inside the call (set without allocating just before it)

class Bomb:
    # A garbage cycle whose finalizer overwrites every list under attack (freeing the strs read so
    # far: the one short str put in their place leaves their memory unused, so a read of it shows)
    # and re-arms itself, a few hundred times.
    def __init__(self):
        self.me = self
    def __del__(self):
        if live[0]:
            rounds[0] -= 1
            for v in victims:
                v[:] = ["x"] * len(v)
        if rounds[0] > 0:
            Bomb()


class Stringy:
    # A non-str label: str() runs Python code (and allocates).
    def __init__(self, k):
        self.k = k
    def __str__(self):
        [object() for _ in range(3)]
        return "\ud800 stringy %d" % self.k

def mixed(tag, n=N):
    out = labels(tag, n)
    for k in range(0, n, 97):
        out[k] = Stringy(k)
    return out

def probe(call, *lists):
    # Garbage bombs, then a collection threshold of 1: the first allocation inside `call` collects
    # (nothing allocates between here and the call: the lambda exists already).
    victims[:] = lists
    for _ in range(10):
        Bomb()
    try:
        gc.set_threshold(1)
        live[0] = True
        result = call()
    except Exception as exc:  # a typed error is an answer; a crash or a panic is not
        live[0] = False
        gc.set_threshold(700)
        print("raised", type(exc).__name__, "struck", 400 - rounds[0])
    else:
        live[0] = False
        gc.set_threshold(700)
        print("ok", type(result).__name__, "struck", 400 - rounds[0])
"""

FINALIZER_PROBES = {
    "match_pairs pipelined (the issue's case)": """
        stored, incoming = labels("s"), labels("i")
        probe(lambda: _core.match_pairs(stored, incoming), stored, incoming)
    """,
    "match_pairs pipelined, mixed labels": """
        stored, incoming = mixed("s"), mixed("i")
        probe(lambda: batch.match_pairs(stored, incoming), stored, incoming)
    """,
    "match_pairs read then decided": """
        stored, incoming = labels("s", 5000), labels("i", 5000)
        probe(lambda: _core.match_pairs(stored, incoming), stored, incoming)
    """,
    "match_mask": """
        candidates = mixed("c")
        probe(lambda: _core.match_mask("\ud800 c label 7", candidates), candidates)
    """,
    "match_first": """
        candidates = mixed("c")
        probe(lambda: _core.match_first("zzz", candidates), candidates)
    """,
    "close_matches": """
        possibilities = labels("p")
        probe(lambda: _core.close_matches("\ud800 p label 12", possibilities, 0.6), possibilities)
    """,
    "cdist": """
        choices = labels("c", 3000)
        queries = ["\ud800 c label 1"]
        probe(lambda: _core.cdist(queries, choices, cutoff=0.5), choices)
    """,
    "cdist normalise": """
        choices = mixed("c", 3000)
        queries = ["\ud800 c label 1"]
        probe(lambda: _core.cdist(queries, choices, cutoff=0.5, normalise=True), choices)
    """,
    "replay": """
        items = mixed("r")
        partitions = [0] * N
        probe(lambda: _core.replay(items, partitions), items)
    """,
    "join": """
        items = mixed("j", 5000)
        probe(lambda: _core.join(items), items)
    """,
    "pair_reasons": """
        items = mixed("p", 5000)
        pairs = [(k, k + 1) for k in range(4999)]
        probe(lambda: _core.pair_reasons(items, pairs), items)
    """,
    "clusters": """
        pairs = [(k, k + 1) for k in range(N - 1)]
        probe(lambda: _core.clusters(N, pairs), pairs)
    """,
    "normalise_label": """
        items = mixed("n", 2000)
        probe(lambda: [_core.normalise_label(x) for x in items], items)
    """,
    "labels_match": """
        items = mixed("m", 2000)
        probe(lambda: [_core.labels_match(x, "\ud800 m label 5") for x in items], items)
    """,
    "SequenceIndex of lines": """
        b = labels("b")
        a = labels("b")
        def diff():
            index = _core.SequenceIndex.of_elements(b, isjunk=lambda line: [object()] and False)
            codes = index.encode(a)
            return index.opcodes(codes)
        probe(diff, a, b)
    """,
    "SequenceIndex of bytes lines": """
        b = [("line %d" % (i % 500)).encode() for i in range(N)]
        a = list(reversed(b))
        def diff():
            index = _core.SequenceIndex.of_elements(b)
            return index.matching_blocks(index.encode(a))
        probe(diff, a, b)
    """,
    "SequenceIndex of ints": """
        b = [i % 300 for i in range(N)]
        junk, a = b[:50], b[::-1]
        probe(lambda: _core.SequenceIndex(b, junk=junk).matching_blocks(a), b, a)
    """,
}


@pytest.mark.parametrize("name", sampled(list(FINALIZER_PROBES), 3))
def test_finalizers_cannot_free_what_is_being_read(name: str) -> None:
    proc = run_child(ATTACK + "\n" + _dedent(FINALIZER_PROBES[name]))
    lines = assert_clean(proc)
    assert lines and lines[-1].split()[0] in {"ok", "raised"}, lines
    if lines[-1].startswith("raised"):
        # A list shortened while it is read, or ints overwritten by strs: typed errors.
        assert lines[-1].split()[1] in {"IndexError", "TypeError", "InputTypeError"}, lines


def _dedent(code: str) -> str:
    import textwrap

    return textwrap.dedent(code)


# ----------------------------------------------------------------------------------------------------
# Item 2: sizes checked before allocating; out of memory is MemoryError
# ----------------------------------------------------------------------------------------------------

LIMITED = """
import resource
from memdedup import _core, batch
from memdedup.errors import InvalidInputError, InputTypeError
_core.match_pairs(["a"] * 10, ["b"] * 10)  # the thread pool exists before the limit
with open("/proc/self/statm") as f:
    used = int(f.read().split()[0]) * resource.getpagesize()
limit = used + 2 * 1024**3
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

def expect(error, call):
    try:
        call()
    except error as exc:
        print("raised", error.__name__)
    except Exception as exc:
        print("raised other", type(exc).__name__, exc)
    else:
        print("no error")
"""

LIMIT_PROBES = {
    "cdist of 100,000 x 100,000": (
        """expect(MemoryError, lambda: batch.cdist(["label %d" % i for i in range(100_000)],
                                                   ["other %d" % i for i in range(100_000)]))""",
        "raised MemoryError",
    ),
    "cdist of 100,000 x 100,000 in the core": (
        """expect(MemoryError, lambda: _core.cdist(["q"] * 100_000, ["c"] * 100_000))""",
        "raised MemoryError",
    ),
    "join of 30,000 identical labels": (
        """expect(MemoryError, lambda: batch.join(["uses pytest and ruff"] * 30_000))""",
        "raised MemoryError",
    ),
    "join of 30,000 distinct labels at threshold 0": (
        """expect(MemoryError, lambda: _core.join(["label %d" % i for i in range(30_000)], threshold=0.0))""",
        "raised MemoryError",
    ),
    "clusters of 2**32 - 2 labels": (
        """expect(MemoryError, lambda: _core.clusters(2**32 - 2, []))""",
        "raised MemoryError",
    ),
    "an endless candidate iterator": (
        """import itertools
expect(MemoryError, lambda: _core.match_mask("x", itertools.repeat("y")))""",
        "raised MemoryError",
    ),
    "endless pairs": (
        """import itertools
expect(MemoryError, lambda: _core.clusters(2, itertools.repeat((0, 1))))""",
        "raised MemoryError",
    ),
}


@pytest.mark.parametrize("name", sampled(list(LIMIT_PROBES), 2))
def test_out_of_memory_is_memory_error(name: str) -> None:
    code, expected = LIMIT_PROBES[name]
    assert_clean(run_child(LIMITED + "\n" + code), expected)


ABSURD = """
import math
from fractions import Fraction
from memdedup import _core, _reference, batch
from memdedup.errors import InvalidInputError, InputTypeError

def outcome(call):
    try:
        return ("ok", call())
    except Exception as exc:
        return ("raised", type(exc))

def same(name, ours, theirs):
    # The reference's answer (NaN scores compared as NaN), or a typed memdedup error where the
    # reference fails as well.
    got, want = outcome(ours), outcome(theirs)
    if repr(got) == repr(want) or (got[0] == want[0] == "raised" and issubclass(got[1], want[1])):
        print(name, "same")
    else:
        print(name, "differs", got, want)

def typed(name, call, error=InvalidInputError):
    got = outcome(call)
    print(name, "typed" if got[0] == "raised" and issubclass(got[1], error) else f"untyped {got}")

class Lying:
    # A sequence whose __len__ claims 2**60 items and that has none.
    def __len__(self):
        return 2**60
    def __getitem__(self, k):
        raise IndexError(k)
"""

LABELS = (
    '["uses pytest and ruff", "  Uses pytest and ruff.", "uses pytest", "x", "", "uses pytest and ruff now"]'
)

ABSURD_PROBES = {
    "replay prefix_len=2**62": (
        f"same('p', lambda: _core.replay({LABELS}, [0] * 6, prefix_len=2**62), "
        f"lambda: _reference.replay({LABELS}, [0] * 6, prefix_len=2**62))",
        "p same",
    ),
    "replay prefix_len=2**63": (
        f"same('p', lambda: _core.replay({LABELS}, [0] * 6, prefix_len=2**63), "
        f"lambda: _reference.replay({LABELS}, [0] * 6, prefix_len=2**63))",
        "p same",
    ),
    "batch.replay prefix_len=2**63": (
        f"same('p', lambda: batch.replay({LABELS}, prefix_len=2**63).canonical.tolist(), "
        f"lambda: _reference.replay({LABELS}, [0] * 6, prefix_len=2**63)[0])",
        "p same",
    ),
    "replay prefix_len=10**40": (
        f"same('p', lambda: _core.replay({LABELS}, [0] * 6, prefix_len=10**40), "
        f"lambda: _reference.replay({LABELS}, [0] * 6, prefix_len=10**40))",
        "p same",
    ),
    "replay query_limit=2**64": (
        f"same('q', lambda: _core.replay({LABELS}, [0] * 6, query_limit=2**64), "
        f"lambda: _reference.replay({LABELS}, [0] * 6, query_limit=2**64))",
        "q same",
    ),
    "replay negative prefix_len": (
        f"typed('n', lambda: _core.replay({LABELS}, [0] * 6, prefix_len=-1))",
        "n typed",
    ),
    "replay lying partitions": (
        f"typed('l', lambda: _core.replay({LABELS}, Lying()))",
        "l typed",
    ),
    "clusters n=10**12": ("typed('c', lambda: _core.clusters(10**12, []))", "c typed"),
    "clusters n=2**64": ("typed('c', lambda: _core.clusters(2**64, []))", "c typed"),
    "clusters n=-1": ("typed('c', lambda: _core.clusters(-1, []))", "c typed"),
    "clusters n=1.5": ("typed('c', lambda: _core.clusters(1.5, []), InputTypeError)", "c typed"),
    "clusters lying pairs": (
        "same('c', lambda: _core.clusters(3, Lying()), lambda: _reference.clusters(3, Lying()))",
        "c same",
    ),
    "clusters pair of huge ints": (
        "same('c', lambda: _core.clusters(3, [(0, 2**70), (-1, 2), (0, 1)]), "
        "lambda: _reference.clusters(3, [(0, 2**70), (-1, 2), (0, 1)]))",
        "c same",
    ),
    "pair_reasons lying pairs": (
        "same('p', lambda: _core.pair_reasons(['a', 'b'], Lying()), lambda: ([], []))",
        "p same",
    ),
    "pair_reasons negative index": (
        "typed('p', lambda: _core.pair_reasons(['a', 'b'], [(-1, 0)]))",
        "p typed",
    ),
    "SequenceIndex of a lying sequence": (
        "same('s', lambda: len(_core.SequenceIndex(Lying())), lambda: 0)",
        "s same",
    ),
    "SequenceIndex lying junk": (
        "same('s', lambda: len(_core.SequenceIndex('abc', junk=Lying())), lambda: 3)",
        "s same",
    ),
    "of_elements lying junk": (
        "same('s', lambda: len(_core.SequenceIndex.of_elements(['a', 'b'], junk=Lying())), lambda: 2)",
        "s same",
    ),
    "find_longest_match negative": (
        "typed('f', lambda: _core.SequenceIndex('abc').find_longest_match('abc', -1, 3, 0, 3))",
        "f typed",
    ),
    "find_longest_match huge": (
        "typed('f', lambda: _core.SequenceIndex('abc').find_longest_match('abc', 0, 2**64, 0, 3))",
        "f typed",
    ),
    "matching_blocks of ints past 2**32": (
        "typed('m', lambda: _core.SequenceIndex([1, 2]).matching_blocks([2**40]), InputTypeError)",
        "m typed",
    ),
    "cdist cutoff nan": (
        "typed('c', lambda: batch.cdist(['ab'], ['ab', 'cd'], score_cutoff=math.nan))",
        "c typed",
    ),
    "core cdist cutoff nan": (
        "same('c', lambda: list(__import__('struct').iter_unpack('d', _core.cdist(['ab'], ['ab', 'cd'], "
        "cutoff=math.nan))), lambda: [(0.0,), (0.0,)])",
        "c same",
    ),
}


@pytest.mark.parametrize("name", sampled(list(ABSURD_PROBES), 4))
def test_absurd_arguments_get_an_answer_or_a_typed_error(name: str) -> None:
    code, expected = ABSURD_PROBES[name]
    assert_clean(run_child(ABSURD + "\n" + code), expected)


def test_no_argument_reaches_a_rust_panic() -> None:
    # Every entry point with odd values in every argument position: each call must return or raise
    # an ordinary exception. `PanicException` derives from BaseException, so it escapes `except
    # Exception` and fails the child.
    code = """
import math, itertools
from fractions import Fraction
from decimal import Decimal
from memdedup import _core

ODD = [None, -1, 0, 2**64, -(2**64), 10**100, math.nan, math.inf, -math.inf, 1.5, "", "\\ud800",
       b"x", [], [None], [(1, 2**40)], [(-1, 0)], [2**33], [-1], Fraction(1, 3), Decimal("NaN"),
       object(), ("a", "b"), ["a", 3], [("a", "b")]]
calls = 0
def attempt(f, *args, **kwargs):
    global calls
    calls += 1
    try:
        f(*args, **kwargs)
    except Exception:
        pass

base = {
    "normalise_label": ("a",),
    "ratio": ("a", "b"), "quick_ratio": ("a", "b"), "real_quick_ratio": ("a", "b"),
    "matching_blocks": ("a", "b"),
    "labels_match": ("a", "b"), "match_reason": ("a", "b"),
    "match_mask": ("a", ["b"]), "match_first": ("a", ["b"]),
    "match_pairs": (["a"], ["b"]),
    "close_matches": ("a", ["b"], 0.5),
    "cdist": (["a"], ["b"]),
    "replay": (["a"], [0]),
    "join": (["a", "b"],),
    "clusters": (2, [(0, 1)]),
    "pair_reasons": (["a", "b"], [(0, 1)]),
}
keywords = {
    "labels_match": ["threshold", "min_chars"], "match_reason": ["threshold", "min_chars"],
    "match_mask": ["threshold", "min_chars"], "match_first": ["threshold", "min_chars"],
    "match_pairs": ["threshold", "min_chars"], "cdist": ["cutoff", "autojunk", "normalise"],
    "replay": ["threshold", "min_chars", "prefix", "prefix_len", "query_limit"],
    "join": ["threshold", "min_chars"], "clusters": ["mode"],
    "pair_reasons": ["threshold", "min_chars"], "ratio": ["autojunk"],
    "close_matches": ["autojunk"],
}
for name, args in base.items():
    f = getattr(_core, name)
    for position in range(len(args)):
        for odd in ODD:
            attempt(f, *args[:position], odd, *args[position + 1:])
    for key in keywords.get(name, []):
        for odd in ODD:
            attempt(f, *args, **{key: odd})
index = _core.SequenceIndex("abcab")
for method in ["matching_blocks", "matches", "quick_matches", "opcodes"]:
    for odd in ODD:
        attempt(getattr(index, method), odd)
for args in itertools.product([-1, 0, 3, 2**64, 1.5, None], repeat=4):
    attempt(index.find_longest_match, "abc", *args)
for odd in ODD:
    attempt(_core.SequenceIndex, odd)
    attempt(_core.SequenceIndex, "abc", junk=odd)
    attempt(_core.SequenceIndex.of_elements, odd)
    attempt(_core.SequenceIndex.of_elements, ["a"], junk=odd)
    attempt(_core.SequenceIndex.of_elements, ["a"], isjunk=odd)
    lines = _core.SequenceIndex.of_elements(["a", "b"])
    attempt(lines.encode, odd)
print("calls", calls > 1000)
"""
    assert_clean(run_child(code), "calls True")
