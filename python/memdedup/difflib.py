"""A drop-in for the hot parts of :mod:`difflib`: ``SequenceMatcher`` and ``get_close_matches``.

``from memdedup import difflib`` (or ``from memdedup.difflib import SequenceMatcher``) changes nothing but
speed: every answer, tie-break, attribute and exception is the standard library's. The matching itself
runs on the Rust core (:class:`memdedup._core.SequenceIndex`), which reproduces difflib's ``b2j`` index,
junk and popular rules and longest-match tie-breaks exactly.

How sequences reach the core:

- ``str`` second sequences go as code points, and a ``str`` first sequence as is.
- A ``list`` or ``tuple`` of exact ``str`` (or of exact ``bytes``) elements, such as the lines of a file, is
  coded in Rust with ``dict`` semantics (equal hash, then identity or ``==``), each distinct element an id
  in first-occurrence order. The hash is the cached ``hash()``, or, for strs nobody has hashed yet (lines
  just read), a hash of their code units, which is cheaper to compute and groups exactly the equal strs too.
  Each line of a first sequence is compared with ``b``'s next line before it is looked up. A first
  sequence of other elements against it is coded with a dict over those distinct elements.
- Other ``list``/``tuple``/``bytes``/``bytearray``/``range`` sequences of hashable elements are mapped to
  integer codes with one dict built over ``b`` (dict semantics are difflib's own ``b2j`` semantics, so
  ``1 == 1.0 == True`` behave exactly as there); elements of ``a`` absent from ``b`` share a code that
  never occurs in ``b``. Mixed kinds (a ``str`` against a list of characters) go through the same dict.
- ``isjunk`` is called once per distinct element of ``b``, in first-occurrence order, as difflib does.
- ``b``'s index is built once by ``set_seq2`` and reused by every ``set_seq1``; ``b2j``, ``bjunk``,
  ``bpopular`` and ``fullbcount`` are materialised only when read.
- ``get_close_matches`` with a ``str`` word and a ``float``/``int`` cutoff decides every possibility in
  one core call, in parallel without the GIL: difflib's length bound, then an LCS bound (a common
  subsequence is at least as long as the matched characters, and at most the multiset intersection,
  so it implies difflib's ``quick_ratio`` test), then the exact ratio. Its types are checked as it
  reads: one possibility that is not an exact ``str`` (a subclass may redefine what difflib reads)
  sends the whole call to difflib's loop on the fast matcher. Other cutoffs (``Fraction``,
  ``Decimal``) compare with the scores in Python.

The standard library's own code runs instead (so the answer is still exact, only not faster) when:

- the compiled extension is not in use (``MEMDEDUP_IMPLEMENTATION=python`` or it failed to load): then
  ``SequenceMatcher`` and ``get_close_matches`` *are* difflib's;
- ``b`` is not an exact ``str``, ``list``, ``tuple``, ``bytes``, ``bytearray`` or ``range`` (a ``str``
  subclass, a NumPy array, a deque...), has an unhashable element (difflib's own ``TypeError`` is
  raised), or has distinct elements whose ``==`` might not agree with hashing: anything but ``str``,
  ``bytes``, ``int``, ``bool``, ``None``, NaN-free ``float``/``complex`` and tuples/frozensets of those
  (a NaN is not equal to itself, which difflib's extension loops observe);
- for one call, ``a`` is not one of the types above or has an unhashable element;
- ``find_longest_match`` gets bounds that are not ints with ``0 <= alo <= ahi <= len(a)``,
  ``0 <= blo <= bhi <= len(b)`` (difflib indexes with them as given, negative ones included);
- a subclass overrides ``find_longest_match`` or ``get_matching_blocks`` (its override is honoured);
- a sequence has 2**32 - 1 elements or more.

Mutable first sequences (lists) are re-read on every call, as difflib reads them; mutating ``b`` after
``set_seq2`` is as unsupported as in difflib (whose ``b2j`` is cached too). ``b2j``, ``bjunk`` and
``bpopular`` are for reading: editing them in place does not steer the core (pruning ``b2j`` by hand,
an undocumented trick, is not honoured). ``ratio()`` on a matcher whose blocks are not cached yet counts
the matches without filling the (internal) ``matching_blocks`` cache; ``get_opcodes()`` fills it lazily
(the blocks are derived from the opcodes when the attribute is first read). The rest of :mod:`difflib`
(``Differ``, ``unified_diff``, ``HtmlDiff``...) is re-exported unchanged and uses the standard library's
matcher.
"""

from __future__ import annotations

import difflib as _std
import heapq
import threading
from collections.abc import Callable, Hashable, Iterable, Sequence
from difflib import (
    IS_CHARACTER_JUNK,
    IS_LINE_JUNK,
    Differ,
    HtmlDiff,
    Match,
    context_diff,
    diff_bytes,
    ndiff,
    restore,
    unified_diff,
)
from itertools import repeat
from typing import Any

from memdedup._backend import IMPLEMENTATION

__all__ = [
    "IS_CHARACTER_JUNK",
    "IS_LINE_JUNK",
    "Differ",
    "HtmlDiff",
    "Match",
    "SequenceMatcher",
    "context_diff",
    "diff_bytes",
    "get_close_matches",
    "ndiff",
    "restore",
    "unified_diff",
]

#: Sequence types whose elements the fast path reads by iteration (difflib reads them by index; for
#: these exact types the two agree).
_SEQUENCE_TYPES = frozenset({str, list, tuple, bytes, bytearray, range})
#: First sequences that cannot change after ``set_seq1``, so their codes can be cached.
_IMMUTABLE_TYPES = frozenset({str, tuple, bytes, range})
#: Element types whose ``==`` is an equivalence consistent with ``hash``.
_SAFE_SCALARS = frozenset({str, bytes, int, bool, type(None)})
#: Sequences at least this long do not fit the core's u32 positions and codes.
_MAX_LEN = 2**32 - 1


def _calculate_ratio(matches: int, length: int) -> float:
    """difflib's ``_calculate_ratio``, operation for operation (so bit for bit)."""
    if length:
        return 2.0 * matches / length
    return 1.0


def _safe_element(x: object) -> bool:
    """Whether ``x``'s equality is an equivalence consistent with its hash (no NaN anywhere inside)."""
    t = type(x)
    if t in _SAFE_SCALARS:
        return True
    if t is float:
        return x == x
    if t is complex:
        return x == x
    if t is tuple or t is frozenset:
        return all(_safe_element(y) for y in x)  # type: ignore[attr-defined]
    return False


def _safe_elements(seq: Iterable[object]) -> bool:
    """``_safe_element`` for every element (not only the distinct ones: a dict folds an element into an
    equal key whose ``==`` may be another's), with one C-level pass in the common case."""
    if set(map(type, seq)) <= _SAFE_SCALARS:
        return True
    return all(map(_safe_element, seq))


def _standard_matcher() -> type[_std.SequenceMatcher[Any]]:
    """The standard library's own ``SequenceMatcher`` class, even when ``difflib.SequenceMatcher`` has
    been replaced (by :func:`install`, or by hand) before this module was (re)imported: the class that
    defines ``__chain_b`` in module ``difflib``, found on the current binding's MRO."""
    for cls in _std.SequenceMatcher.__mro__:
        if cls.__module__ == "difflib" and "_SequenceMatcher__chain_b" in vars(cls):
            return cls
    raise ImportError("difflib.SequenceMatcher is not the standard library's class or a subclass of it")


def _standard_function(name: str) -> Any:
    """``difflib.<name>``, or the standard one :func:`install` replaced (kept across a reload)."""
    current = getattr(_std, name)
    if getattr(current, "__module__", None) == "difflib":
        return current
    return globals().get("_STANDARD", {}).get(name, current)


#: The standard library's classes and functions as they were when this module was imported: the
#: fallback calls these, never ``difflib.<name>`` at call time, so no process-wide replacement of
#: ``difflib.SequenceMatcher`` (by :func:`install` or by hand) can make it call itself.
_StdSequenceMatcher = _standard_matcher()
_STANDARD: dict[str, Any] = {
    "SequenceMatcher": _StdSequenceMatcher,
    "get_close_matches": _standard_function("get_close_matches"),
}


try:
    if IMPLEMENTATION != "rust":
        raise ImportError("memdedup runs on the pure-Python reference")
    from memdedup._core import SequenceIndex as _SequenceIndex
    from memdedup._core import close_matches as _close_matches
except ImportError:
    _SequenceIndex = None  # type: ignore[assignment,misc]

# The mode of a matcher's second sequence.
_STR = "str"  # b is a str; the index holds code points
_IDS = "ids"  # b is a sequence of hashables; the index holds codes from ``_codes``
_ELEMS = "elems"  # b is a list/tuple of exact strs (or bytes); the index codes elements itself
_STD = "std"  # the standard library's own __chain_b ran; every method is difflib's

#: Marks an attribute not materialised yet.
_UNSET: Any = object()
#: The attributes that may hold ``_UNSET``.
_LAZY = ("_b2j", "_bjunk", "_bpopular", "_fullbcount")


class _FastSequenceMatcher(_StdSequenceMatcher):  # type: ignore[misc,valid-type]
    """difflib's ``SequenceMatcher`` with the matching done by the Rust core; a subclass of it, so
    ``isinstance(sm, difflib.SequenceMatcher)`` holds and every method not overridden is difflib's."""

    # difflib's attributes this class reads and sets (its base is chosen at import, so mypy does not
    # see them); declarations only, no class attributes at run time.
    a: Any
    b: Any
    isjunk: Callable[[Any], bool] | None
    autojunk: bool
    opcodes: list[tuple[str, int, int, int, int]] | None
    _b2j: dict[Any, list[int]]
    _bjunk: set[Any]
    _bpopular: set[Any]
    _fullbcount: dict[Any, int] | None

    # ------------------------------------------------------------------ second sequence
    def _chain_b(self) -> None:
        """Replace difflib's ``__chain_b``: index ``b`` in the core (the standard one when it cannot)."""
        self._index: Any = None
        self._mode = _STD
        self._codes: dict[Any, int] | None = None
        self._chars: dict[str, str] | None = None
        self._missing: Any = None
        self._junk_codes: list[int] = []
        self._acodes: Any = None
        self._b2j = self._bjunk = self._bpopular = _UNSET
        b = self.b
        if type(b) is str and len(b) < _MAX_LEN:
            isjunk = self.isjunk
            junk = [ord(c) for c in dict.fromkeys(b) if isjunk(c)] if isjunk else []
            self._junk_codes = junk
            self._index = _SequenceIndex(b, autojunk=bool(self.autojunk), junk=junk or None)
            self._mode = _STR
            return
        if type(b) is list or type(b) is tuple:
            # Lines (exact strs or bytes): coded in Rust with dict semantics, isjunk called there.
            isjunk = self.isjunk
            index = _SequenceIndex.of_elements(b, autojunk=bool(self.autojunk), isjunk=isjunk)
            if index is not None:
                self._index = index
                self._junk_codes = index.junk() if isjunk else []
                self._mode = _ELEMS
                return
        if type(b) in _SEQUENCE_TYPES and type(b) is not str and len(b) < _MAX_LEN:
            try:
                # element -> position of its last occurrence: a code below len(b), equal for equal
                # elements, keys in first-occurrence order (the first occurrence's object), as b2j's.
                codes = dict(zip(b, range(len(b)), strict=True))
            except TypeError:
                codes = None
            if codes is not None and _safe_elements(b):
                isjunk = self.isjunk
                junk = [codes[k] for k in codes if isjunk(k)] if isjunk else []
                self._junk_codes = junk
                self._codes = codes
                self._missing = len(b)
                self._index = _SequenceIndex(
                    list(map(codes.__getitem__, b)), autojunk=bool(self.autojunk), junk=junk or None
                )
                self._mode = _IDS
                return
        _StdSequenceMatcher._SequenceMatcher__chain_b(self)  # type: ignore[attr-defined]

    _SequenceMatcher__chain_b = _chain_b

    def set_seq1(self, a: Any) -> None:
        """Set the first sequence (``b``'s index is kept)."""
        if a is self.a:
            return
        self.a = a
        self.matching_blocks = self.opcodes = None
        self._acodes = None

    # ------------------------------------------------------------------ lazily built attributes
    def _element(self) -> Callable[[int], Any]:
        """Code -> the element (its first occurrence in ``b``, as ``b2j``'s keys are)."""
        if self._mode == _STR:
            return chr
        if self._mode == _ELEMS:
            return self._index.elements().__getitem__  # type: ignore[no-any-return]
        assert self._codes is not None
        return dict(zip(self._codes.values(), self._codes.keys(), strict=True)).__getitem__

    @property
    def b2j(self) -> dict[Any, list[int]]:
        """difflib's ``b2j``: each non-junk, non-popular element of ``b`` -> its positions."""
        if self._b2j is _UNSET:
            element = self._element()
            self._b2j = {element(code): positions for code, positions in self._index.b2j()}
        return self._b2j

    @b2j.setter
    def b2j(self, value: dict[Any, list[int]]) -> None:
        self._b2j = value

    @property
    def bjunk(self) -> set[Any]:
        """difflib's ``bjunk``: the elements of ``b`` that ``isjunk`` accepted."""
        if self._bjunk is _UNSET:
            element = self._element()
            self._bjunk = {element(code) for code in self._index.junk()}
        return self._bjunk

    @bjunk.setter
    def bjunk(self, value: set[Any]) -> None:
        self._bjunk = value

    @property
    def bpopular(self) -> set[Any]:
        """difflib's ``bpopular``: the non-junk elements dropped by the autojunk heuristic."""
        if self._bpopular is _UNSET:
            element = self._element()
            self._bpopular = {element(code) for code in self._index.popular()}
        return self._bpopular

    @bpopular.setter
    def bpopular(self, value: set[Any]) -> None:
        self._bpopular = value

    @property
    def fullbcount(self) -> dict[Any, int] | None:
        """difflib's ``fullbcount``: ``None`` until ``quick_ratio()`` ran, then element -> count."""
        if self._fullbcount is _UNSET:
            counts: dict[Any, int] = {}
            for elt in self.b:
                counts[elt] = counts.get(elt, 0) + 1
            self._fullbcount = counts
        return self._fullbcount

    @fullbcount.setter
    def fullbcount(self, value: dict[Any, int] | None) -> None:
        self._fullbcount = value

    # ------------------------------------------------------------------ first sequence
    def _a_codes(self) -> Any:
        """``a`` in the index's terms, or ``None`` when this call must run difflib's own code.

        Elements of ``a`` that the index does not code itself (``a`` a ``str`` against a ``str`` ``b``,
        or exact ``str``/``bytes`` lines against lines) are looked up with a dict, which is difflib's
        ``b2j`` semantics but not its extension loops': those compare ``a[i] == b[j]`` directly. So such
        an ``a`` must hold only elements whose ``==`` agrees with their hash (``_safe_element``), as
        ``b`` must; otherwise (a ``str`` subclass with its own ``__eq__``/``__hash__``, an always-equal
        object, a NaN, an unhashable) the call is difflib's.
        """
        if self._acodes is not None:
            return self._acodes
        mode = self._mode
        if mode == _STD:
            return None
        a = self.a
        kind = type(a)
        if kind not in _SEQUENCE_TYPES or len(a) >= _MAX_LEN:
            return None
        if mode == _STR and kind is str:
            return a
        codes = self._index.encode(a) if mode == _ELEMS else None
        if codes is None:
            if not _safe_elements(a):
                return None
            if mode == _STR:
                codes = self._str_codes_of(a)
            else:
                if self._codes is None:
                    # lines against lines, a holding other kinds of elements: a dict over b's distinct
                    # elements looks them up as b2j would (ids in first-occurrence order, as the index
                    # assigned them).
                    elements = self._index.elements()
                    self._codes = dict(zip(elements, range(len(elements)), strict=True))
                    self._missing = len(elements)
                codes = list(map(self._codes.get, a, repeat(self._missing)))
        if kind in _IMMUTABLE_TYPES:
            self._acodes = codes
        return codes

    def _str_codes_of(self, a: Any) -> str:
        """A non-``str`` ``a`` of safe elements against a ``str`` ``b``: each element as the equal
        character of ``b``, or a character ``b`` does not hold."""
        chars = self._chars
        if chars is None:
            chars = {c: c for c in dict.fromkeys(self.b)}
            absent = 0
            while chr(absent) in chars:
                absent += 1
            self._chars = chars
            self._missing = chr(absent)
        return "".join(map(chars.get, a, repeat(self._missing)))

    def _fast(self) -> Any:
        """The codes of ``a`` when the core may answer for this matcher, else ``None``."""
        cls = type(self)
        if (
            cls.find_longest_match is not _FastSequenceMatcher.find_longest_match
            or cls.get_matching_blocks is not _FastSequenceMatcher.get_matching_blocks
        ):
            return None
        return self._a_codes()

    # ------------------------------------------------------------------ matching
    def find_longest_match(
        self, alo: int = 0, ahi: int | None = None, blo: int = 0, bhi: int | None = None
    ) -> Match:
        """Longest matching block in ``a[alo:ahi]`` and ``b[blo:bhi]``, with difflib's tie-breaks."""
        codes = self._a_codes()
        if codes is not None:
            la, lb = len(codes), len(self.b)
            if ahi is None:
                ahi = la
            if bhi is None:
                bhi = lb
            if (
                type(alo) is int
                and type(ahi) is int
                and type(blo) is int
                and type(bhi) is int
                and 0 <= alo <= ahi <= la
                and 0 <= blo <= bhi <= lb
            ):
                found: Match = Match._make(self._index.find_longest_match(codes, alo, ahi, blo, bhi))
                return found
        standard: Match = super().find_longest_match(alo, ahi, blo, bhi)
        return standard

    def get_matching_blocks(self) -> list[Match]:
        """difflib's matching blocks (cached), ending with the ``(len(a), len(b), 0)`` sentinel."""
        cached = self.matching_blocks
        if cached is not None:
            return cached
        codes = self._fast()
        if codes is None:
            standard: list[Match] = super().get_matching_blocks()
            return standard
        blocks = self._index.matching_blocks(codes)
        blocks.append((len(codes), len(self.b), 0))
        self.matching_blocks = list(map(tuple.__new__, repeat(Match), blocks))
        return self.matching_blocks

    def get_opcodes(self) -> list[tuple[str, int, int, int, int]]:
        """difflib's opcodes (cached): how to turn ``a`` into ``b``."""
        if self.opcodes is None and self.matching_blocks is None:
            codes = self._fast()
            if codes is not None:
                ops: list[tuple[str, int, int, int, int]] = self._index.opcodes(codes)
                self.opcodes = self._blocks_source = ops
                return ops
        standard: list[tuple[str, int, int, int, int]] = super().get_opcodes()
        return standard

    # ------------------------------------------------------------------ difflib's caches
    @property
    def matching_blocks(self) -> list[Match] | None:
        """difflib's cache of ``get_matching_blocks()``. After a fast ``get_opcodes()`` it is derived
        from those opcodes when first read (their ``equal`` runs are the blocks, then the sentinel),
        so ``get_opcodes()`` does not build blocks nobody reads."""
        state = self.__dict__
        blocks: list[Match] | None = state.get("_blocks")
        source: list[tuple[str, int, int, int, int]] | None = state.get("_blocks_source")
        opcodes: object = state.get("opcodes")
        if blocks is None and source is not None and source is opcodes:
            blocks = [Match(i1, j1, i2 - i1) for tag, i1, i2, j1, j2 in source if tag == "equal"]
            blocks.append(Match(source[-1][2], source[-1][4], 0) if source else Match(0, 0, 0))
            state["_blocks"] = blocks
        return blocks

    @matching_blocks.setter
    def matching_blocks(self, value: list[Match] | None) -> None:
        self.__dict__["_blocks"] = value
        self.__dict__["_blocks_source"] = None

    def ratio(self) -> float:
        """``2.0 * M / T``: M matched elements, T the total length of both sequences."""
        if self.matching_blocks is None:
            codes = self._fast()
            if codes is not None:
                return _calculate_ratio(self._index.matches(codes), len(codes) + len(self.b))
        standard: float = super().ratio()
        return standard

    def quick_ratio(self) -> float:
        """An upper bound on ``ratio()`` from the multiset intersection of ``a`` and ``b``."""
        codes = self._a_codes()
        if codes is None:
            standard: float = super().quick_ratio()
            return standard
        if self._fullbcount is None:
            self._fullbcount = _UNSET
        return _calculate_ratio(self._index.quick_matches(codes), len(codes) + len(self.b))

    # ------------------------------------------------------------------ pickling and copying
    def __getstate__(self) -> dict[str, Any]:
        """Everything but the core's index, which ``__setstate__`` rebuilds (without calling ``isjunk``)."""
        state = self.__dict__.copy()
        state["_index"] = None
        state["_acodes"] = None  # may be the core's Codes, which do not pickle
        state["_lazy"] = [name for name in _LAZY if state.get(name) is _UNSET]
        for name in state["_lazy"]:
            del state[name]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        if "_mode" not in state:
            # A standard matcher's state: pickled where ``difflib.SequenceMatcher`` was the standard
            # class, loaded where :func:`install` made it this one. Its index is difflib's own.
            blocks = state.pop("matching_blocks", None)
            for name in _LAZY:
                if name[1:] in state:
                    state[name] = state.pop(name[1:])
            state.update(_mode=_STD, _index=None, _codes=None, _chars=None, _missing=None)
            state.update(_junk_codes=[], _acodes=None)
            self.__dict__.update(state)
            self.matching_blocks = blocks
            return
        for name in state.pop("_lazy", ()):
            state[name] = _UNSET
        self.__dict__.update(state)
        mode = state.get("_mode")
        junk = state.get("_junk_codes") or None
        if mode == _STR:
            self._index = _SequenceIndex(self.b, autojunk=bool(self.autojunk), junk=junk)
        elif mode == _IDS:
            assert self._codes is not None
            b = list(map(self._codes.__getitem__, self.b))
            self._index = _SequenceIndex(b, autojunk=bool(self.autojunk), junk=junk)
        elif mode == _ELEMS:
            self._index = _SequenceIndex.of_elements(self.b, autojunk=bool(self.autojunk), junk=junk)


# The public name, so reprs, pickles and error messages read ``SequenceMatcher`` as with difflib.
_FastSequenceMatcher.__name__ = _FastSequenceMatcher.__qualname__ = "SequenceMatcher"


def _length_window(lw: int, cutoff: Any) -> tuple[int, float]:
    """The lengths ``lx`` with ``real_quick_ratio() >= cutoff`` against a word of length ``lw``: an
    interval ``[lo, hi]`` (``2 * min / (lx + lw)`` rises to 1.0 at ``lx == lw`` and falls after it, and
    correctly rounded division keeps that order), found with difflib's own expression."""

    def accepts(lx: int) -> bool:
        return bool(_calculate_ratio(min(lx, lw), lx + lw) >= cutoff)

    lo, hi = 0, lw  # smallest accepted length in [0, lw]; lw itself always passes (1.0 >= cutoff)
    while lo < hi:
        mid = (lo + hi) // 2
        if accepts(mid):
            hi = mid
        else:
            lo = mid + 1
    first = lo
    step = 1
    while accepts(lw + step):
        if step > 2**62:
            return first, float("inf")
        step *= 2
    lo, hi = lw + step // 2 if step > 1 else lw, lw + step  # accepts(lo), not accepts(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if accepts(mid):
            lo = mid
        else:
            hi = mid
    return first, lo


def _fast_close_matches(word: str, possibilities: list[Any], n: int, cutoff: Any) -> list[str] | None:
    """``get_close_matches`` for a ``str`` word when every possibility is an exact ``str`` (None
    otherwise): the word indexed once, each possibility screened by length and by an upper bound on
    its ratio (the core call's LCS bound; the loop below's ``quick_ratio``) before the exact ratio.

    A ``float`` (or ``int``) cutoff is decided in one core call, in parallel without the GIL
    (:func:`memdedup._core.close_matches`, which checks the types as it reads the lengths); other
    numbers (``Fraction``, ``Decimal``) compare with the float scores exactly only in Python, so they
    take the loop below.
    """
    if type(cutoff) in (float, int):
        scored = _close_matches(word, possibilities, float(cutoff))
        if scored is None:
            return None
        # A list, as difflib passes one: heapq.nlargest fails differently on a bad n for an iterator.
        result = [(score, possibilities[k]) for score, k in scored]
        return [x for score, x in heapq.nlargest(n, result)]
    if not set(map(type, possibilities)) <= {str}:
        return None
    index = _SequenceIndex(word)
    lw = len(word)
    lo, hi = _length_window(lw, cutoff)
    quick, matches = index.quick_matches, index.matches
    result = []
    for x in possibilities:
        lx = len(x)
        if lx < lo or lx > hi:
            continue
        length = lx + lw
        if not length:
            result.append((1.0, x))
        elif 2.0 * quick(x) / length >= cutoff:
            score = 2.0 * matches(x) / length
            if score >= cutoff:
                result.append((score, x))
    return [x for score, x in heapq.nlargest(n, result)]


def _get_close_matches(
    word: Sequence[Hashable], possibilities: Iterable[Sequence[Hashable]], n: int = 3, cutoff: float = 0.6
) -> list[Any]:
    if not n > 0:
        raise ValueError(f"n must be > 0: {n!r}")
    if not 0.0 <= cutoff <= 1.0:
        raise ValueError(f"cutoff must be in [0.0, 1.0]: {cutoff!r}")
    if type(word) is str and len(word) < _MAX_LEN:
        pool = possibilities if type(possibilities) is list else list(possibilities)
        fast = _fast_close_matches(word, pool, n, cutoff)
        if fast is not None:
            return fast
        possibilities = pool
    # difflib's loop, on the fast matcher.
    result = []
    s = _FastSequenceMatcher()
    s.set_seq2(word)
    for x in possibilities:
        s.set_seq1(x)
        if s.real_quick_ratio() >= cutoff and s.quick_ratio() >= cutoff and s.ratio() >= cutoff:
            result.append((s.ratio(), x))
    return [x for score, x in heapq.nlargest(n, result)]


_get_close_matches.__name__ = _get_close_matches.__qualname__ = "get_close_matches"
_get_close_matches.__doc__ = _std.get_close_matches.__doc__


if _SequenceIndex is None:
    SequenceMatcher = _StdSequenceMatcher
    get_close_matches = _STANDARD["get_close_matches"]
else:
    SequenceMatcher = _FastSequenceMatcher
    get_close_matches = _get_close_matches


# --------------------------------------------------------------------------------------------------
# The process-wide replacement.
# --------------------------------------------------------------------------------------------------
_install_lock = threading.Lock()
_installed = False
#: The names :func:`install` rebinds in the standard :mod:`difflib` module.
_REPLACED = ("SequenceMatcher", "get_close_matches")


def install() -> None:
    """Make the standard :mod:`difflib` module's ``SequenceMatcher`` and ``get_close_matches`` this
    module's, for the whole process. Idempotent and thread-safe; :func:`uninstall` undoes it.

    Exactly two attributes of the ``difflib`` module change. What then runs on the fast matcher: code
    that reads ``difflib.SequenceMatcher`` or ``difflib.get_close_matches`` at call time, including
    difflib's own ``Differ``, ``ndiff``, ``unified_diff``, ``context_diff`` and ``HtmlDiff`` (they
    look ``SequenceMatcher`` up in their module), and every ``from difflib import SequenceMatcher`` run
    after this call (function-local ones included). What does not: names bound by a ``from difflib
    import ...`` that ran before (rebind those yourself, as :mod:`memdedup.integrations.symfonic` does
    for symfonic-core), and matchers created before (``isinstance(old, difflib.SequenceMatcher)`` is
    then False: they are instances of the standard class, which this one subclasses). Pickles of
    standard matchers load as this class and give the same answers. Safe: this module's fallbacks
    call the standard classes it captured when it was imported, never ``difflib.<name>``.

    With the pure-Python backend (no compiled core) the two names are the standard ones already.
    """
    global _installed
    with _install_lock:
        _std.SequenceMatcher = SequenceMatcher  # type: ignore[misc,assignment]
        _std.get_close_matches = get_close_matches
        _installed = True


def uninstall() -> None:
    """Undo :func:`install`: the standard objects are bound again (a name someone else rebound since is
    left alone). Idempotent and thread-safe."""
    global _installed
    with _install_lock:
        ours = {"SequenceMatcher": SequenceMatcher, "get_close_matches": get_close_matches}
        for name in _REPLACED:
            if getattr(_std, name) is ours[name]:
                setattr(_std, name, _STANDARD[name])
        _installed = False


def installed() -> bool:
    """Whether :func:`install` is in effect (called, not undone, and ``difflib``'s names still ours)."""
    with _install_lock:
        return _installed and _std.SequenceMatcher is SequenceMatcher
