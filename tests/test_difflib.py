"""Parity of :mod:`memdedup.difflib` with the standard library's :mod:`difflib`, method by method.

Every test runs the same calls on ``memdedup.difflib.SequenceMatcher`` and on ``difflib.SequenceMatcher``
and compares everything observable: results (floats bit for bit), result types (``Match``), the
attributes difflib exposes (``b2j`` with its key order and key objects, ``bjunk``, ``bpopular``,
``fullbcount``, the ``matching_blocks``/``opcodes`` caches), the calls made to ``isjunk``, and the
exceptions raised. Inputs: arbitrary text (every category, lone surrogates included), long text over
small alphabets (the autojunk "popular" rule), lists of lines from small vocabularies, mixed hashables
(``1 == 1.0 == True``), mixed kinds (a ``str`` against a list of characters), and the inputs that must
fall back to the standard library. With the Rust backend the tests also check the fast path was taken.
"""

from __future__ import annotations

import copy
import difflib
import gzip
import pickle
import random
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Iterator
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import cli_support
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from memdedup import difflib as md
from strategies import ANY_CHAR, n_examples, near_duplicate_pairs

REPO = Path(__file__).resolve().parent.parent
SLOW = [HealthCheck.too_slow, HealthCheck.large_base_example, HealthCheck.data_too_large]
FAST = md.SequenceMatcher is not difflib.SequenceMatcher
rust_only = pytest.mark.skipif(not FAST, reason="pure-Python backend: memdedup.difflib is difflib itself")

# --------------------------------------------------------------------------------------------------
# Comparing two matchers.
# --------------------------------------------------------------------------------------------------


def outcome(call: Callable[[], Any]) -> tuple[Any, ...]:
    """``("ok", value)`` or ``("raise", type, message)``: what a call did, comparable across matchers."""
    try:
        value = call()
    except Exception as exc:
        return ("raise", type(exc), str(exc))
    return ("ok", value)


def typed(value: Any) -> Any:
    """``value`` with the types of its parts, so ``1``, ``1.0`` and ``True`` (equal) compare unequal and
    a ``Match`` unequal to a plain tuple; floats by their exact bits."""
    if isinstance(value, float):
        return ("float", value.hex())
    if isinstance(value, dict):
        return ("dict", [(typed(k), typed(v)) for k, v in value.items()])
    if isinstance(value, (set, frozenset)):
        return (type(value).__name__, sorted(map(repr, map(typed, value))))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [typed(v) for v in value])
    return (type(value).__name__, value)


class JunkLog:
    """An ``isjunk`` that records its calls (argument objects and their order)."""

    def __init__(self, rule: Callable[[Any], Any]) -> None:
        self.rule = rule
        self.calls: list[Any] = []

    def __call__(self, element: Any) -> Any:
        self.calls.append(element)
        return self.rule(element)


def make_pair(
    a: Any, b: Any, rule: Callable[[Any], Any] | None, autojunk: bool
) -> tuple[Any, Any, JunkLog | None, JunkLog | None]:
    """The drop-in and the standard matcher on the same arguments, each with its own ``isjunk`` log."""
    ours_log = JunkLog(rule) if rule else None
    std_log = JunkLog(rule) if rule else None
    ours = md.SequenceMatcher(ours_log, a, b, autojunk=autojunk)
    ref = difflib.SequenceMatcher(std_log, a, b, autojunk=autojunk)
    return ours, ref, ours_log, std_log


def index_attributes(sm: Any) -> Any:
    return typed({"b2j": sm.b2j, "bjunk": sm.bjunk, "bpopular": sm.bpopular})


def assert_same(ours: Any, ref: Any, bounds: list[tuple[int, ...]] = (), ratio_first: bool = True) -> None:
    """Every method and attribute of the two matchers agree (the same calls made on both, in order)."""
    assert ours.a is ref.a and ours.b is ref.b
    assert ours.autojunk == ref.autojunk
    assert typed(ours.fullbcount) == typed(ref.fullbcount)  # None: quick_ratio not called yet
    steps: list[tuple[str, Callable[[Any], Any]]] = [
        ("real_quick_ratio", lambda sm: sm.real_quick_ratio()),
        ("quick_ratio", lambda sm: sm.quick_ratio()),
        ("fullbcount", lambda sm: sm.fullbcount),
        ("find_longest_match()", lambda sm: sm.find_longest_match()),
    ]
    for args in bounds:
        steps.append((f"find_longest_match{args}", lambda sm, args=args: sm.find_longest_match(*args)))
    if ratio_first:
        steps.append(("ratio", lambda sm: sm.ratio()))
    else:
        # Opcodes before blocks: memdedup then derives the cached blocks from its opcodes.
        steps.append(("get_opcodes first", lambda sm: sm.get_opcodes()))
        steps.append(("matching_blocks from opcodes", lambda sm: sm.matching_blocks))
    steps += [
        ("get_matching_blocks", lambda sm: sm.get_matching_blocks()),
        ("matching_blocks", lambda sm: sm.matching_blocks),
        ("ratio again", lambda sm: sm.ratio()),
        ("get_opcodes", lambda sm: sm.get_opcodes()),
        ("opcodes", lambda sm: sm.opcodes),
        ("grouped 0", lambda sm: list(sm.get_grouped_opcodes(0))),
        ("grouped 1", lambda sm: list(sm.get_grouped_opcodes(1))),
        ("grouped 3", lambda sm: list(sm.get_grouped_opcodes())),
        ("index", index_attributes),
    ]
    for label, step in steps:
        got, want = outcome(lambda step=step: step(ours)), outcome(lambda step=step: step(ref))
        assert typed(got) == typed(want), (label, got, want)
    # The cached blocks are Match objects and the ratio is difflib's expression on them.
    if ref.matching_blocks is not None:
        assert all(type(m) is difflib.Match for m in ours.matching_blocks)


def check_pair(
    a: Any,
    b: Any,
    rule: Callable[[Any], Any] | None = None,
    autojunk: bool = True,
    bounds: list[tuple[int, ...]] = (),
    ratio_first: bool = True,
    mode: str | tuple[str, ...] | None = None,
) -> Any:
    """Build both matchers (or see both fail alike) and compare them; returns ours."""
    built = outcome(lambda: make_pair(a, b, rule, autojunk))
    if built[0] == "raise":
        std = outcome(lambda: difflib.SequenceMatcher(rule, a, b, autojunk=autojunk))
        assert std[0] == "raise" and built[1:] == std[1:], (built, std)
        return None
    ours, ref, ours_log, std_log = built[1]
    assert ref.isjunk is std_log
    if ours_log is not None:
        assert typed(ours_log.calls) == typed(std_log.calls)
    if mode is not None and FAST:
        assert ours._mode in (mode if isinstance(mode, tuple) else (mode,))
    assert_same(ours, ref, bounds, ratio_first)
    return ours


# --------------------------------------------------------------------------------------------------
# Strategies.
# --------------------------------------------------------------------------------------------------
any_text = st.text(alphabet=ANY_CHAR, max_size=60)
small_text = st.text(alphabet=st.sampled_from("ab \t"), max_size=40)
#: Long enough (>= 200) for the popular rule, over alphabets where elements repeat.
long_text = st.text(alphabet=st.sampled_from("abcab  \txyz\n"), min_size=195, max_size=420)

LINES = [
    "def f(x):\n",
    "    return x\n",
    "\n",
    "    \n",
    "\t\n",
    "    pass\n",
    "# comment\n",
    "}\n",
    "import os\n",
    "x = 1\n",
    "",
    # Non-ASCII lines of each storage kind (1, 2 and 4 bytes a character), same-length lines of
    # different kinds, a lone surrogate and Python-only whitespace: the core compares strs itself.
    "café\n",
    "é\n",
    "☃\n",
    "\U0001d518\n",
    "x = '\ud800'\n",
    "\u2028\x85\n",
    # The same code-unit bytes in two kinds ("ab" and U+6261 are both b"ab" in memory): a hash of
    # the units puts them together, and only the compare tells them apart.
    "ab",
    "\u6261",
]
line_lists = st.lists(st.sampled_from(LINES), max_size=60) | st.lists(
    st.sampled_from(LINES), min_size=195, max_size=320
)

#: Hashables with cross-type equalities (1 == 1.0 == True, 0 == False == 0j), tuples and frozensets.
HASHABLES = [0, 1, 2, -1, 1.0, 2.5, True, False, 0j, 1 + 0j, None, "a", "b", "", b"a", (1, "a"), (1.0, "a")]
HASHABLES += [frozenset({1}), frozenset({1.0}), (), ((1,),)]
mixed_lists = st.lists(st.sampled_from(HASHABLES), max_size=50) | st.lists(
    st.sampled_from(HASHABLES[:6]), min_size=200, max_size=260
)

CHAR_JUNK: list[Callable[[Any], Any] | None] = [
    None,
    lambda c: c in " \t",
    lambda c: c == "a",
    difflib.IS_CHARACTER_JUNK,
    lambda c: "yes" if c in "xb" else "",  # truthy, not bool
]
LINE_JUNK: list[Callable[[Any], Any] | None] = [
    None,
    lambda line: line.strip() == "",
    difflib.IS_LINE_JUNK,
    lambda line: line.startswith("#"),
]
ANY_JUNK: list[Callable[[Any], Any] | None] = [
    None,
    lambda e: e in {None, 0, "a"},
    lambda e: [1] if e == 1 else [],
]


@st.composite
def edited(draw: st.DrawFn, base: list[Any], pool: st.SearchStrategy[Any], max_edits: int = 8) -> list[Any]:
    """``base`` with up to ``max_edits`` element inserts, deletes and replacements."""
    out = list(base)
    for op, pos, elt in draw(
        st.lists(st.tuples(st.sampled_from("idr"), st.integers(0, 1 << 16), pool), max_size=max_edits)
    ):
        if op == "i":
            out.insert(pos % (len(out) + 1), elt)
        elif out:
            if op == "d":
                del out[pos % len(out)]
            else:
                out[pos % len(out)] = elt
    return out


@st.composite
def text_pairs(draw: st.DrawFn) -> tuple[str, str]:
    kind = draw(st.sampled_from(["any", "small", "long", "near", "near-long"]))
    if kind == "any":
        return draw(any_text), draw(any_text)
    if kind == "small":
        return draw(small_text), draw(small_text)
    if kind == "long":
        return draw(long_text), draw(long_text)
    if kind == "near":
        return draw(near_duplicate_pairs(ANY_CHAR, max_size=60))
    base = draw(long_text)
    return base, "".join(draw(edited(list(base), st.sampled_from("abxz \t"), 12)))


@st.composite
def line_pairs(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    a = draw(line_lists)
    b = draw(edited(a, st.sampled_from(LINES))) if draw(st.booleans()) else draw(line_lists)
    return (a, b) if draw(st.booleans()) else (b, a)


@st.composite
def bounds_for(draw: st.DrawFn, la: int, lb: int) -> list[tuple[int, ...]]:
    """Valid ``find_longest_match`` bounds, full and partial (Python 3.9+ defaults)."""
    out: list[tuple[int, ...]] = []
    for _ in range(draw(st.integers(0, 3))):
        alo = draw(st.integers(0, la))
        ahi = draw(st.integers(alo, la))
        blo = draw(st.integers(0, lb))
        bhi = draw(st.integers(blo, lb))
        out.append((alo, ahi, blo, bhi))
        out.append((alo,))
        out.append((alo, None, blo))
        out.append((0, ahi, blo, None))
    return out


# --------------------------------------------------------------------------------------------------
# The drop-in itself.
# --------------------------------------------------------------------------------------------------
def test_drop_in_surface() -> None:
    assert issubclass(md.SequenceMatcher, difflib.SequenceMatcher)
    assert md.SequenceMatcher.__name__ == "SequenceMatcher"
    assert md.get_close_matches.__name__ == "get_close_matches"
    for name in difflib.__all__:
        assert hasattr(md, name), name
    assert set(md.__all__) == set(difflib.__all__)
    sm = md.SequenceMatcher()
    assert (sm.a, sm.b, sm.isjunk, sm.autojunk) == ("", "", None, True)
    assert sm.ratio() == 1.0 and sm.get_opcodes() == [] and list(sm.get_grouped_opcodes()) == []
    assert md.SequenceMatcher[str] is not None  # difflib's generic alias still works


def test_pure_python_backend_is_the_standard_library() -> None:
    # The same memdedup this process imported (an editable install, a wheel or PYTHONPATH alike).
    env = cli_support.env(MEMDEDUP_IMPLEMENTATION="python")
    code = (
        "import difflib; from memdedup import difflib as md; "
        "assert md.SequenceMatcher is difflib.SequenceMatcher; "
        "assert md.get_close_matches is difflib.get_close_matches; "
        "assert md.SequenceMatcher(None, 'abc', 'abd').ratio() == 0.6666666666666666"
    )
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)


@rust_only
def test_fast_paths_are_taken() -> None:
    assert md.SequenceMatcher(None, "abc", "abd")._mode == md._STR
    assert md.SequenceMatcher(None, ["a\n"], ["a\n", "b\n"])._mode == md._ELEMS
    assert md.SequenceMatcher(None, "abc", ["a", "b"])._mode == md._ELEMS
    assert md.SequenceMatcher(None, [b"a"], (b"a", b"b"))._mode == md._ELEMS
    assert md.SequenceMatcher(None, "ab", ["a", b"b"])._mode == md._IDS  # mixed kinds: a dict
    assert md.SequenceMatcher(None, "ab", [1, 2])._mode == md._IDS
    lines = md.SequenceMatcher(None, ["a\n", "c\n"], ["a\n", "b\n"])
    assert type(lines._a_codes()).__name__ == "Codes"  # coded in Rust, no dict
    assert md.SequenceMatcher(None, [1, 2], b"ab")._mode == md._IDS
    assert md.SequenceMatcher(None, (1.0, True), (1, 2))._mode == md._IDS
    sm = md.SequenceMatcher(None, "abc", "xabc")
    assert sm._index is not None and sm._a_codes() == "abc"
    assert md.SequenceMatcher(None, ["a", "b"], "xab")._a_codes() is not None


@rust_only
def test_index_is_kept_across_set_seq1() -> None:
    sm = md.SequenceMatcher(None, "", "some reference text")
    index = sm._index
    for a in ["some text", "reference", "other", ""]:
        sm.set_seq1(a)
        assert sm._index is index
        assert sm.ratio() == difflib.SequenceMatcher(None, a, "some reference text").ratio()
    sm.set_seq2("another b")
    assert sm._index is not index


# --------------------------------------------------------------------------------------------------
# Hypothesis parity.
# --------------------------------------------------------------------------------------------------
@settings(max_examples=n_examples(300), suppress_health_check=SLOW)
@given(pair=text_pairs(), junk=st.sampled_from(CHAR_JUNK), autojunk=st.booleans(), data=st.data())
@example(pair=("b" * 200, "a" + "b" * 200), junk=None, autojunk=True, data=None)
@example(pair=("dabcd", "d" * 100 + "abc" + "d" * 100), junk=None, autojunk=True, data=None)
@example(pair=("a b c d", "a  b c d"), junk=CHAR_JUNK[1], autojunk=True, data=None)
@example(pair=("\ud800x\udfff", "x\ud800\udfff"), junk=None, autojunk=False, data=None)
def test_strings(pair: tuple[str, str], junk: Any, autojunk: bool, data: Any) -> None:
    a, b = pair
    bounds = data.draw(bounds_for(len(a), len(b))) if data is not None else [(0, len(a), 0, len(b))]
    ratio_first = data.draw(st.booleans()) if data is not None else True
    check_pair(a, b, junk, autojunk, bounds, ratio_first, mode=md._STR)


@settings(max_examples=n_examples(200), suppress_health_check=SLOW)
@given(pair=line_pairs(), junk=st.sampled_from(LINE_JUNK), autojunk=st.booleans(), data=st.data())
def test_lines(pair: tuple[list[str], list[str]], junk: Any, autojunk: bool, data: Any) -> None:
    a, b = pair
    if data.draw(st.booleans()):
        # Equal lines as distinct objects, as two files read separately give them (the core then
        # compares them instead of finding the same object).
        a = [(line + ".")[:-1] for line in a]
    if data.draw(st.booleans()):
        # Lines nobody hashed yet (new objects; ours is built first), as in the first diff of files
        # just read: the core then hashes their code units itself instead of reading hash().
        b = [(line + ".")[:-1] for line in b]
    if data.draw(st.booleans()):
        a, b = (
            [line.encode(errors="surrogatepass") for line in a],
            [line.encode(errors="surrogatepass") for line in b],
        )
        junk = None if junk is None else lambda line, rule=junk: rule(line.decode(errors="surrogatepass"))
    if data.draw(st.booleans()):
        a, b = tuple(a), tuple(b)
    bounds = data.draw(bounds_for(len(a), len(b)))
    check_pair(a, b, junk, autojunk, bounds, data.draw(st.booleans()), mode=md._ELEMS)


@settings(max_examples=n_examples(200), suppress_health_check=SLOW)
@given(a=mixed_lists, b=mixed_lists, junk=st.sampled_from(ANY_JUNK), autojunk=st.booleans(), data=st.data())
def test_mixed_hashables(a: list[Any], b: list[Any], junk: Any, autojunk: bool, data: Any) -> None:
    if data.draw(st.booleans()):
        b = data.draw(edited(a, st.sampled_from(HASHABLES)))
    check_pair(a, b, junk, autojunk, data.draw(bounds_for(len(a), len(b))), mode=(md._IDS, md._ELEMS))


@settings(max_examples=n_examples(150), suppress_health_check=SLOW)
@given(
    pair=text_pairs(),
    junk=st.sampled_from(CHAR_JUNK),
    autojunk=st.booleans(),
    how=st.sampled_from(["a-list", "b-list", "a-tuple", "b-tuple", "both-list"]),
)
def test_mixed_kinds(pair: tuple[str, str], junk: Any, autojunk: bool, how: str) -> None:
    """A ``str`` against a list or tuple of its characters: difflib compares elements, so do we."""
    a, b = pair
    if how.startswith("a") or how.startswith("both"):
        a = tuple(a) if how.endswith("tuple") else list(a)  # type: ignore[assignment]
    if how.startswith("b") or how.startswith("both"):
        b = tuple(b) if how.endswith("tuple") else list(b)  # type: ignore[assignment]
    check_pair(a, b, junk, autojunk, [(0, len(a), 0, len(b))])


@settings(max_examples=n_examples(100), suppress_health_check=SLOW)
@given(
    b=st.one_of(any_text, long_text, line_lists),
    firsts=st.lists(st.one_of(any_text, long_text, line_lists, mixed_lists), max_size=6),
    junk=st.sampled_from([None, lambda e: e in (" ", "\n", "    \n")]),
    autojunk=st.booleans(),
)
def test_set_seq1_reuses_the_index(b: Any, firsts: list[Any], junk: Any, autojunk: bool) -> None:
    """One matcher, ``b`` set once, many ``a`` in turn (difflib's recommended use), against a standard
    matcher taken through the same calls (and so the same cached state)."""
    ours = md.SequenceMatcher(junk, "", b, autojunk=autojunk)
    ref = difflib.SequenceMatcher(junk, "", b, autojunk=autojunk)
    index = getattr(ours, "_index", None)
    for a in [*firsts, *firsts[:1]]:
        ours.set_seq1(a)
        ref.set_seq1(a)
        assert_same(ours, ref, [(0, len(a), 0, len(b))])
        assert getattr(ours, "_index", None) is index
        assert ours.ratio() == difflib.SequenceMatcher(junk, a, b, autojunk=autojunk).ratio()
    ours.set_seqs(b, b)
    ref.set_seqs(b, b)
    assert_same(ours, ref)
    a, b_list = (firsts[0] if firsts else ""), list(b)
    ours.set_seqs(a, b_list)
    ref.set_seqs(a, b_list)
    assert_same(ours, ref)


# --------------------------------------------------------------------------------------------------
# Fallbacks: the same answers (or the same exceptions) through the standard library.
# --------------------------------------------------------------------------------------------------
class AlwaysEqual:
    """Equal to everything, one hash: an ``==`` no dict-based mapping could reproduce."""

    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return 1


class Text(str):
    """A ``str`` subclass (not on the fast path)."""


NAN = float("nan")


@pytest.mark.parametrize(
    ("a", "b", "mode"),
    [
        ([NAN, 1.0, NAN], [1.0, NAN, NAN, 2.0], md._STD),  # NaN: == is not reflexive
        ([1, (NAN,)], [(NAN,), 1], md._STD),
        ([complex(NAN, 0), 1], [complex(NAN, 0), 1], md._STD),
        ([AlwaysEqual(), 1, 2], [3, AlwaysEqual(), 1], md._STD),
        (["x", 1], [AlwaysEqual(), "x"], md._STD),
        (Text("abcd"), Text("bcde"), md._STD),
        ("abcd", Text("bcde"), md._STD),
        (Text("abcd"), "bcde", md._STR),
        (range(5), range(2, 9), md._IDS),
        (b"abcd", bytearray(b"bcde"), md._IDS),
        ([[1], 2], [2, 3], md._IDS),  # unhashable element of a: difflib's TypeError, from difflib
        ([[1], "x"], ["x", "y"], md._ELEMS),
        ([AlwaysEqual(), "x", 1], ["x", "y"], md._ELEMS),  # a's odd elements: looked up by a dict
        (["x", "y"], ["x", "y", AlwaysEqual()], md._STD),
        (["x", "y"], ("x", "y"), md._ELEMS),
        ("xy", ["x", "y"], md._ELEMS),
        ([2, 3], [[1], 2], None),  # unhashable element of b: raised by the constructor, as difflib does
        ([1, 2], [{1: 2}], None),
        ("abc", ["a", ["b"]], None),
        ([["a"]], "abc", md._STR),
        (["a", None, 3], "abc", md._STR),
    ],
)
def test_fallbacks_agree(a: Any, b: Any, mode: str | None) -> None:
    for autojunk in (True, False):
        for junk in (None, lambda e: e == 1):
            check_pair(a, b, junk, autojunk, [(0, len(a), 0, len(b))], mode=mode)


@pytest.mark.parametrize(
    "args",
    [
        (-1,),
        (0, -1),
        (0, None, -2),
        (0, None, 0, -1),
        (0, 99),
        (0, None, 0, 99),
        (3, 1),
        (0, 2, 3, 1),
        (True,),
        (0, 2.0),
        ("1",),
        (-3, -1, -3, -1),
        (5, 5, 6, 6),
    ],
)
@pytest.mark.parametrize(("a", "b"), [("abcab", "bcabx"), (["a", "b", "c"], ["b", "c", "a", "b"])])
def test_find_longest_match_odd_bounds(args: tuple[Any, ...], a: Any, b: Any) -> None:
    """Bounds difflib would index with as given (negative, too large, crossed, not ints): its answer."""
    ours = md.SequenceMatcher(None, a, b)
    ref = difflib.SequenceMatcher(None, a, b)
    assert typed(outcome(lambda: ours.find_longest_match(*args))) == typed(
        outcome(lambda: ref.find_longest_match(*args))
    )


def test_unhashable_b_raises_like_difflib() -> None:
    for b in ([[1]], [{}], [1, [2]], ([1],)):
        with pytest.raises(TypeError, match="unhashable") as ours:
            md.SequenceMatcher(None, "a", b)
        with pytest.raises(TypeError) as ref:
            difflib.SequenceMatcher(None, "a", b)
        assert str(ours.value) == str(ref.value)


def test_isjunk_errors_propagate() -> None:
    def boom(element: Any) -> bool:
        raise RuntimeError(f"isjunk({element!r})")

    for b in ("xyz", ["x", "y"]):
        with pytest.raises(RuntimeError, match=r"isjunk\('x'\)"):
            md.SequenceMatcher(boom, "a", b)


def test_subclass_overrides_are_honoured() -> None:
    calls: list[tuple[int, ...]] = []

    class Counting(md.SequenceMatcher):  # type: ignore[misc,valid-type]
        def find_longest_match(self, alo=0, ahi=None, blo=0, bhi=None):  # type: ignore[no-untyped-def]
            calls.append((alo, ahi, blo, bhi))
            return super().find_longest_match(alo, ahi, blo, bhi)

    a, b = "private Thread currentThread;", "private volatile Thread currentThread;"
    sm = Counting(None, a, b)
    assert sm.get_matching_blocks() == difflib.SequenceMatcher(None, a, b).get_matching_blocks()
    assert calls, "get_matching_blocks must go through the overridden find_longest_match"
    calls.clear()
    sm.set_seq1(a + "!")
    assert sm.ratio() == difflib.SequenceMatcher(None, a + "!", b).ratio()
    assert calls


def test_mutated_list_is_reread() -> None:
    """difflib reads a list ``a`` afresh on every call; so do we (only immutable ``a`` is cached)."""
    a, b = ["x", "y", "z"], ["y", "z", "w"]
    ours, ref = md.SequenceMatcher(None, a, b), difflib.SequenceMatcher(None, a, b)
    assert ours.find_longest_match() == ref.find_longest_match()
    a[:] = ["w", "q", "q"]
    assert ours.find_longest_match() == ref.find_longest_match() == (0, 2, 1)
    assert ours.quick_ratio() == ref.quick_ratio()


@pytest.mark.parametrize(
    ("a", "b", "junk"),
    [
        (
            "private Thread currentThread;",
            "private volatile Thread currentThread;",
            difflib.IS_CHARACTER_JUNK,
        ),
        (["a\n", "\n", "b\n"] * 80, ["a\n", "b\n", "#\n", "\n"] * 80, difflib.IS_LINE_JUNK),
        ([1, 1.0, True, "x"] * 60, [True, 2, 1] * 70, None),
    ],
)
@pytest.mark.parametrize("quick_first", [False, True])
def test_pickle_and_copy(a: Any, b: Any, junk: Any, quick_first: bool) -> None:
    ours = md.SequenceMatcher(junk, a, b)
    if quick_first:
        ours.quick_ratio()  # fullbcount is then pending (built when read): clones must keep that state
    for clone in (copy.copy(ours), copy.deepcopy(ours), pickle.loads(pickle.dumps(ours))):
        assert type(clone) is type(ours)
        assert getattr(clone, "_mode", None) == getattr(ours, "_mode", None)
        ref = difflib.SequenceMatcher(junk, clone.a, clone.b)
        if quick_first:
            ref.quick_ratio()
        assert_same(clone, ref)


# --------------------------------------------------------------------------------------------------
# get_close_matches.
# --------------------------------------------------------------------------------------------------
cutoffs = st.one_of(
    st.floats(min_value=0.0, max_value=1.0),
    st.sampled_from([0.0, 0.1, 0.5, 0.6, 0.75, 0.8, 0.9, 1.0, 0, 1]),
    st.fractions(min_value=0, max_value=1),
    st.decimals(min_value=0, max_value=1, allow_nan=False, places=3),
)
word_alphabet = st.sampled_from("abcde fg")


@st.composite
def close_match_cases(draw: st.DrawFn) -> tuple[str, list[str]]:
    word = draw(st.text(alphabet=word_alphabet, max_size=30) | any_text)
    similar = st.builds(
        "".join, edited(list(word), st.sampled_from("abcdxyz \u00e9\ud800"), draw(st.integers(0, 6)))
    )
    pool = draw(st.lists(similar | st.text(alphabet=word_alphabet, max_size=40) | any_text, max_size=40))
    return word, pool + draw(st.lists(st.sampled_from(pool), max_size=5)) if pool else pool


@settings(max_examples=n_examples(300), suppress_health_check=SLOW)
@given(case=close_match_cases(), n=st.integers(1, 6), cutoff=cutoffs)
@example(case=("appel", ["ape", "apple", "peach", "puppy"]), n=3, cutoff=0.6)
@example(case=("", ["", "a", ""]), n=2, cutoff=0.0)
@example(case=("ab", ["ba", "ab", "ab", "ba"]), n=3, cutoff=0.5)
def test_get_close_matches(case: tuple[str, list[str]], n: int, cutoff: Any) -> None:
    word, possibilities = case
    assert typed(outcome(lambda: md.get_close_matches(word, possibilities, n, cutoff))) == typed(
        outcome(lambda: difflib.get_close_matches(word, possibilities, n, cutoff))
    )


@settings(max_examples=n_examples(150), suppress_health_check=SLOW)
@given(
    word=st.text(alphabet=word_alphabet, max_size=20),
    pool=st.lists(
        st.text(alphabet=word_alphabet, max_size=20)
        | st.lists(st.sampled_from("abcde"), max_size=10)
        | st.tuples(st.sampled_from("abc"), st.sampled_from("abc")),
        max_size=20,
    ),
    as_list=st.booleans(),
    n=st.integers(1, 4),
    cutoff=cutoffs,
    container=st.sampled_from(["list", "tuple", "generator"]),
)
def test_get_close_matches_any_sequences(
    word: str, pool: list[Any], as_list: bool, n: int, cutoff: Any, container: str
) -> None:
    """Non-``str`` words and possibilities, any iterable of possibilities: difflib's loop, same answers."""
    w: Any = list(word) if as_list else word

    def possibilities() -> Any:
        if container == "list":
            return list(pool)
        if container == "tuple":
            return tuple(pool)
        return (x for x in pool)

    assert typed(outcome(lambda: md.get_close_matches(w, possibilities(), n, cutoff))) == typed(
        outcome(lambda: difflib.get_close_matches(w, possibilities(), n, cutoff))
    )


@pytest.mark.parametrize(
    ("word", "possibilities", "n", "cutoff"),
    [
        ("abc", ["abc"], 0, 0.6),
        ("abc", ["abc"], -1, 0.6),
        ("abc", ["abc"], 3, -0.1),
        ("abc", ["abc"], 3, 1.1),
        ("abc", ["abc"], 3, float("nan")),
        ("abc", ["abc", None], 3, 0.6),
        ("abc", ["abc", 5], 3, 0.6),
        ("abc", [["a", ["b"]]], 3, 0.0),
        ("abc", ["abd", ("a", "b", "c")], 3, 0.5),  # a str and a tuple scoring equally: not comparable
        (None, ["abc"], 3, 0.6),
        ("abc", ["abc"], 2.5, 0.6),
        ("abc", ["abc"], "3", 0.6),
    ],
)
def test_get_close_matches_errors(word: Any, possibilities: Any, n: Any, cutoff: Any) -> None:
    assert typed(outcome(lambda: md.get_close_matches(word, possibilities, n, cutoff))) == typed(
        outcome(lambda: difflib.get_close_matches(word, possibilities, n, cutoff))
    )


class UpperItems(str):
    """A ``str`` whose items read upper-cased: difflib's matcher indexes ``a[i]``, so it scores this
    differently from its text, and only difflib's own loop may decide it."""

    def __getitem__(self, index: Any) -> str:
        return str.__getitem__(self, index).upper()


@pytest.mark.parametrize("cutoff", [0.6, Fraction(3, 5)])
@pytest.mark.parametrize("at", [0, 57, 99])
@pytest.mark.parametrize("container", [list, tuple, iter])
def test_get_close_matches_str_subclass_anywhere(cutoff: Any, at: int, container: Any) -> None:
    """One ``str`` subclass among exact strs (first, middle, last) sends the whole call to difflib's
    loop: the fast path checks types as it reads, so it must give up even after many exact strs."""
    pool: list[str] = [f"abcd{k % 7}" for k in range(99)]
    pool.insert(at, UpperItems("abcd"))
    got = md.get_close_matches("abcd", container(pool), 200, cutoff)
    assert got == difflib.get_close_matches("abcd", list(pool), 200, cutoff)
    assert not any(type(x) is UpperItems for x in got)  # difflib scores it 0 (its items are "A", ...)


@pytest.mark.parametrize(
    "cutoff",
    [0, 0.0, 1e-300, 5e-324, 0.1, 0.5, 0.6, 2 / 3, 0.7, 0.99, 1.0, 1, Fraction(2, 3), Decimal("0.6")],
)
def test_length_window_is_real_quick_ratio(cutoff: Any) -> None:
    """The length screen accepts exactly the lengths difflib's ``real_quick_ratio()`` accepts."""
    for lw in [*range(0, 40), 57, 100, 199, 200, 1000]:
        lo, hi = md._length_window(lw, cutoff)
        for lx in [*range(0, 3 * lw + 40), 10 * lw + 7, 10**6]:
            sm = difflib.SequenceMatcher(None, "x" * lx, "y" * lw)
            assert (lo <= lx <= hi) == (sm.real_quick_ratio() >= cutoff), (lw, lx, lo, hi)


# --------------------------------------------------------------------------------------------------
# Real data: labels from the shared corpus, diffs of the standard library's own sources.
# --------------------------------------------------------------------------------------------------
CORPUS = REPO.parent / "shared" / "data" / "pypi-summaries.txt.gz"


def real_labels(count: int) -> list[str]:
    if not CORPUS.exists():
        pytest.skip(f"no shared corpus at {CORPUS}")
    out: list[str] = []
    with gzip.open(CORPUS, "rt", encoding="utf-8", errors="surrogateescape") as fh:
        for line in fh:
            line = line.rstrip("\n")
            if line:
                out.append(line)
                if len(out) == count:
                    break
    return out


def test_get_close_matches_on_real_labels() -> None:
    labels = real_labels(3000)
    rng = random.Random(6)
    queries = [rng.choice(labels) for _ in range(6)] + ["python client", "tensorflow", "A Python library"]
    queries += ["".join(c for c in q if rng.random() > 0.1) for q in queries[:4]]
    for word in queries:
        for n, cutoff in ((3, 0.6), (10, 0.3), (1, 0.9)):
            assert md.get_close_matches(word, labels, n, cutoff) == difflib.get_close_matches(
                word, labels, n, cutoff
            )


def stdlib_sources() -> Iterator[list[str]]:
    root = Path(sysconfig.get_paths()["stdlib"])
    for name in ("difflib.py", "textwrap.py", "heapq.py", "argparse.py"):
        path = root / name
        if path.exists():
            yield path.read_text(encoding="utf-8").splitlines(keepends=True)


@pytest.mark.parametrize("junk", [None, difflib.IS_LINE_JUNK])
def test_line_diffs_of_real_sources(junk: Any) -> None:
    rng = random.Random(7)
    sources = list(stdlib_sources())
    if not sources:
        pytest.skip("no standard-library sources on this interpreter")
    for lines in sources:
        edited_lines = list(lines)
        for _ in range(40):
            i = rng.randrange(len(edited_lines))
            op = rng.random()
            if op < 0.3:
                del edited_lines[i]
            elif op < 0.6:
                edited_lines.insert(i, rng.choice(lines))
            else:
                edited_lines[i] = edited_lines[i].replace("e", "E", 1)
        check_pair(lines, edited_lines, junk, True, [(0, len(lines), 0, len(edited_lines))], mode=md._ELEMS)
        check_pair("".join(lines[:60]), "".join(edited_lines[:60]), None, True, mode=md._STR)
        # unified_diff on top of the drop-in's opcodes: the same text.
        ours = md.SequenceMatcher(junk, lines, edited_lines)
        ref = difflib.SequenceMatcher(junk, lines, edited_lines)
        assert list(ours.get_grouped_opcodes(3)) == list(ref.get_grouped_opcodes(3))


# --------------------------------------------------------------------------------------------------
# Elements whose ``==`` disagrees with their hash, in either sequence (issue 22, item 4): difflib
# compares ``a[i] == b[j]`` directly when it extends a match, so no dict over ``b`` can stand in for it.
# --------------------------------------------------------------------------------------------------
class HashEqualStr(str):
    """Hashes as its text (so a dict folds it into an equal ``str`` key) but equals everything."""

    __hash__ = str.__hash__

    def __eq__(self, other: object) -> bool:
        return True


class OwnHashStr(str):
    """Equal case-insensitively to any ``str``, with a hash of its own."""

    def __hash__(self) -> int:
        return 7

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and str.lower(self) == str.lower(other)


SHARED_NAN = float("nan")
PLAIN_ELEMENTS = st.sampled_from(["a", "b", "c", "A", 1, 1.0, True, 2])
ODD_ELEMENTS = st.one_of(
    st.sampled_from([AlwaysEqual(), HashEqualStr("a"), HashEqualStr("z"), OwnHashStr("A"), SHARED_NAN]),
    st.sampled_from(["a", "A", "z"]).map(HashEqualStr),
    st.sampled_from(["a", "b", "Q"]).map(OwnHashStr),
    st.just("nan").map(float),  # a new NaN object each time: not even identical to itself elsewhere
    st.just(None).map(lambda _: AlwaysEqual()),
    st.just(None).map(lambda _: (1, float("nan"))),
    st.just(None).map(lambda _: [1]),  # unhashable
)


@st.composite
def odd_sequences(draw: st.DrawFn, odd_in: str) -> tuple[Any, Any]:
    """Two sequences of plain elements, with odd ones spliced into ``a``, ``b`` or both."""
    a = draw(st.lists(PLAIN_ELEMENTS, max_size=12))
    b = (
        draw(edited(a, PLAIN_ELEMENTS, 4))
        if draw(st.booleans())
        else draw(st.lists(PLAIN_ELEMENTS, max_size=12))
    )
    for seq, side in ((a, "a"), (b, "b")):
        if odd_in in (side, "both"):
            for pos, elt in draw(
                st.lists(st.tuples(st.integers(0, 99), ODD_ELEMENTS), min_size=1, max_size=4)
            ):
                seq.insert(pos % (len(seq) + 1), elt)
    kinds = [list, tuple]
    a = draw(st.sampled_from(kinds))(a)
    if odd_in == "a" and draw(st.booleans()):
        b = "".join(draw(st.lists(st.sampled_from("abcA"), max_size=12)))  # a str b: STR mode, odd a
    else:
        b = draw(st.sampled_from(kinds))(b)
    return a, b


@settings(max_examples=n_examples(300), suppress_health_check=SLOW)
@given(
    pair=st.sampled_from(["a", "b", "both"]).flatmap(odd_sequences),
    junk=st.sampled_from([None, lambda e: e == 2]),
    autojunk=st.booleans(),
    data=st.data(),
)
@example(pair=([AlwaysEqual()], ["x"]), junk=None, autojunk=True, data=None)  # issue 22: 0.0 for 1.0
@example(pair=([OwnHashStr("zz")], ["x"]), junk=None, autojunk=True, data=None)
@example(pair=(["a", "q"], ["a", HashEqualStr("a")]), junk=None, autojunk=True, data=None)  # folded into "a"
@example(pair=([HashEqualStr("q"), "x"], "ax"), junk=None, autojunk=True, data=None)
def test_odd_equality_on_either_side(pair: tuple[Any, Any], junk: Any, autojunk: bool, data: Any) -> None:
    a, b = pair
    bounds = [] if data is None else data.draw(bounds_for(len(a), len(b)))
    check_pair(a, b, junk, autojunk, bounds)
    if data is not None and data.draw(st.booleans()):
        check_pair(a, b, junk, autojunk, bounds, ratio_first=False)


def test_odd_first_sequence_against_a_reused_index() -> None:
    """One matcher, ``b`` indexed once, first sequences with and without odd elements in turn."""
    b = ["a", "b", "c", "a"]
    ours, ref = md.SequenceMatcher(None, "", b), difflib.SequenceMatcher(None, "", b)
    for a in (["a", "b"], [AlwaysEqual(), "b"], ("x", OwnHashStr("B")), ["a", "b"], [SHARED_NAN, "c"]):
        ours.set_seq1(a)
        ref.set_seq1(a)
        assert_same(ours, ref, [(0, len(a), 0, len(b))])


# --------------------------------------------------------------------------------------------------
# A process-wide replacement (``difflib.SequenceMatcher = memdedup.difflib.SequenceMatcher``, or
# ``memdedup.difflib.install()``) must not make the fallback find itself: it holds the standard classes
# captured when memdedup.difflib was imported. Each probe runs in a child process (the patch is global).
# --------------------------------------------------------------------------------------------------
_PROCESS_WIDE_PROBE = r"""
import collections, difflib, importlib, pickle, sys
std_class, std_close = difflib.SequenceMatcher, difflib.get_close_matches

class T(str):
    pass

class AlwaysEqual:
    def __eq__(self, other):
        return True
    def __hash__(self):
        return 1

nan = float("nan")
CASES = [
    ("ab", T("ab")), (T("xab"), "ab"), ("ab", collections.deque("ab")), (collections.deque("ab"), "ab"),
    ([1, nan], [1, nan, 2]), ([1], [[1]]), ([[1]], [1]), ([AlwaysEqual()], ["x"]), (["x", 1], ("x", 1)),
    ("private Thread currentThread;", "private volatile Thread currentThread;"), (b"abc", bytearray(b"bc")),
]

def answers(cls):
    out = []
    for a, b in CASES:
        try:
            sm = cls(None, a, b)
            out.append((sm.ratio(), sm.get_opcodes(), sm.quick_ratio(), sm.find_longest_match()))
        except Exception as exc:
            out.append((type(exc).__name__, str(exc)))
    return out

def texts():
    a = ["one\n", "two\n", "three\n", "four\n"] * 3
    b = ["one\n", "2\n", "three\n", "four!\n"] * 3
    difflib.HtmlDiff._default_prefix = 0  # each HtmlDiff numbers its anchors from a class counter
    return [
        list(difflib.ndiff(a, b)),
        list(difflib.unified_diff(a, b)),
        list(difflib.context_diff(a, b)),
        difflib.HtmlDiff().make_table(a, b),
        difflib.get_close_matches("appel", ["ape", "apple", "peach", "puppy"]),
        difflib.get_close_matches(T("appel"), [T("ape"), "apple", "puppy"]),
    ]

expected, expected_texts = answers(std_class), texts()
old = pickle.dumps(std_class(None, "abcd", "bcde"))  # pickled before the patch: unpickled after it

import memdedup.difflib as md
MODE = sys.argv[1]
if MODE == "assign":
    difflib.SequenceMatcher = md.SequenceMatcher
    difflib.get_close_matches = md.get_close_matches
elif MODE == "install":
    md.install()
    md.install()  # idempotent
elif MODE == "reload":  # memdedup.difflib (re)imported while the patch is in place
    difflib.SequenceMatcher = md.SequenceMatcher
    md = importlib.reload(md)
    difflib.SequenceMatcher = md.SequenceMatcher
if md.SequenceMatcher is not std_class:
    assert difflib.SequenceMatcher is md.SequenceMatcher, MODE
got = answers(difflib.SequenceMatcher)
assert got == expected, [(c, g, e) for c, g, e in zip(CASES, got, expected) if g != e]
assert answers(md.SequenceMatcher) == expected
assert texts() == expected_texts
unpickled = pickle.loads(old)
assert (unpickled.ratio(), unpickled.get_opcodes()) == (0.75, std_class(None, "abcd", "bcde").get_opcodes())
if MODE == "install":
    md.uninstall()
    md.uninstall()
    assert difflib.SequenceMatcher is std_class and difflib.get_close_matches is std_close
    assert answers(difflib.SequenceMatcher) == expected
print("ok", MODE)
"""


@pytest.mark.parametrize("mode", ["assign", "install", "reload"])
def test_process_wide_replacement_cannot_recurse(mode: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-X", "dev", "-c", _PROCESS_WIDE_PROBE, mode],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.strip() == f"ok {mode}"


def test_install_is_what_the_docs_say() -> None:
    """``install()`` changes exactly ``difflib.SequenceMatcher`` and ``difflib.get_close_matches``."""
    before = dict(vars(difflib))
    try:
        md.install()
        assert md.installed() is True
        changed = {k for k in vars(difflib) if vars(difflib)[k] is not before.get(k)}
        assert changed == ({"SequenceMatcher", "get_close_matches"} if FAST else set())
    finally:
        md.uninstall()
    assert md.installed() is False
    assert all(vars(difflib)[k] is v for k, v in before.items())
