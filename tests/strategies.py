"""Shared hypothesis strategies and oracles for the memdedup test suite.

The oracles here are written from the contract (DESIGN.md, contracts 1-3) with the standard library
only, independently of :mod:`memdedup._reference`, so a parity test that compares the active backend
with them is meaningful even when the active backend *is* the reference.
"""

from __future__ import annotations

import os
import sys
from decimal import Decimal
from difflib import SequenceMatcher
from fractions import Fraction
from typing import Any

from hypothesis import strategies as st

# --------------------------------------------------------------------------------------------------
# Example budgets. Every ``max_examples`` is ``n_examples(full count)``: the full count times
# ``MEMDEDUP_HYPOTHESIS_SCALE``, which is DEFAULT_SCALE (a quarter) when unset, so the default profile
# stays fast; CI's extended step draws the other three quarters (docs/development.md), ``make
# test-full`` sets 1 and ``make test-deep`` 10.
# --------------------------------------------------------------------------------------------------
DEFAULT_SCALE = 0.25
SCALE = float(os.environ.get("MEMDEDUP_HYPOTHESIS_SCALE") or DEFAULT_SCALE)


def n_examples(base: int) -> int:
    """``base`` (the full count) scaled by ``MEMDEDUP_HYPOTHESIS_SCALE`` (at least 1)."""
    return max(1, int(base * SCALE))


# --------------------------------------------------------------------------------------------------
# Oracles, restated from the contract with the standard library only.
# --------------------------------------------------------------------------------------------------
TERMINAL_PUNCTUATION = ".!?;:,"
SUBSUME_MIN_CHARS = 16


def literal_normalise(s: Any) -> str:
    """Contract 1, character for character."""
    return " ".join(str(s or "").lower().split()).rstrip(".!?;:,")


def seed_labels_match(
    stored: Any, incoming: Any, *, threshold: float, min_chars: int = SUBSUME_MIN_CHARS
) -> bool:
    """Contract 3, as the seed (symfonic.memory.dedup.labels_match) states it, with stdlib difflib."""
    a, b = literal_normalise(stored), literal_normalise(incoming)
    if not a or not b:
        return False
    if SequenceMatcher(None, a, b).ratio() >= threshold:
        return True
    shorter, longer = (a, b) if len(a) <= len(b) else (b, a)
    return len(shorter) >= min_chars and shorter in longer


def seed_match_reason(
    stored: Any, incoming: Any, *, threshold: float, min_chars: int = SUBSUME_MIN_CHARS
) -> tuple[str, float] | None:
    """Which rule of contract 3 accepts the pair (ratio first), and the exact ratio of the normalised pair."""
    a, b = literal_normalise(stored), literal_normalise(incoming)
    if not a or not b:
        return None
    score = SequenceMatcher(None, a, b).ratio()
    if score >= threshold:
        return ("ratio", score)
    shorter, longer = (a, b) if len(a) <= len(b) else (b, a)
    if len(shorter) >= min_chars and shorter in longer:
        return ("containment", score)
    return None


def difflib_all(a: str, b: str, autojunk: bool) -> tuple[float, float, float, list[tuple[int, int, int]]]:
    """(ratio, quick_ratio, real_quick_ratio, matching_blocks) straight from stdlib difflib."""
    sm = SequenceMatcher(None, a, b, autojunk=autojunk)
    blocks = [tuple(m) for m in sm.get_matching_blocks()]
    return sm.ratio(), sm.quick_ratio(), sm.real_quick_ratio(), blocks  # type: ignore[return-value]


# --------------------------------------------------------------------------------------------------
# Character sets.
# --------------------------------------------------------------------------------------------------
#: Every code point, every Unicode category, lone surrogates (Cs) included: hypothesis excludes Cs
#: unless ``exclude_categories`` is given explicitly.
ANY_CHAR = st.characters(codec=None, exclude_categories=())

#: Python's own whitespace set (``str.split()`` with no argument), computed, so it follows the running
#: interpreter's Unicode database.
PY_WHITESPACE = "".join(chr(i) for i in range(sys.maxunicode + 1) if chr(i).isspace())

#: The ones that are whitespace to Python but not (or not in every library) to Rust/Unicode White_Space.
PY_ONLY_WHITESPACE = (
    "\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000"
)

#: Look like space to a human but are not whitespace to ``str.split()``.
NOT_WHITESPACE = "\u200b\u200c\u200d\u2060\ufeff\u180e\u00ad"

#: Characters whose lowercasing is context-dependent, expanding, or otherwise surprising.
TRICKY_CASE = "ΣσςΟΔİIıßẞﬁﬂǅǄǆΐΰŉǰẖẘẙẚᾈᾼῌῼ\u2126\u212a\u212b"
#: Characters used around final sigma: combining marks and other case-ignorables, apostrophes, digits.
CASE_IGNORABLE = "\u0301\u0345'’.:\u00ad\u200d\u02b0"

LABEL_ASCII = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_/'\"()"
PUNCT = TERMINAL_PUNCTUATION

#: Mostly label-like characters, with a generous share of the awkward ones and the odd arbitrary code point.
LABEL_CHAR = st.one_of(
    st.sampled_from(LABEL_ASCII + "    "),
    st.sampled_from(PUNCT),
    st.sampled_from(PY_WHITESPACE + NOT_WHITESPACE),
    st.sampled_from(TRICKY_CASE + CASE_IGNORABLE + "éüñøçÉÜÑØÇ漢字\x00"),
    ANY_CHAR,
)

#: Arbitrary text, all categories, surrogates included.
any_text = st.text(alphabet=ANY_CHAR)
#: Label-like text.
label_text = st.text(alphabet=LABEL_CHAR, max_size=80)

WORDS = (
    "uses pytest and ruff for python projects with strict linting the user prefers dark mode in "
    "all editors lives berlin works at acme corp on payments team favourite language is rust "
    "deploys kubernetes every friday afternoon café münchen straße ΟΔΟΣ İstanbul naïve résumé"
).split()


@st.composite
def mutated(draw: st.DrawFn, base: str, alphabet: st.SearchStrategy[str], max_edits: int = 4) -> str:
    """``base`` with up to ``max_edits`` single-character inserts, deletes or replacements."""
    chars = list(base)
    edits = draw(
        st.lists(
            st.tuples(st.sampled_from("idr"), st.integers(0, 1 << 20), alphabet),
            max_size=max_edits,
        )
    )
    for op, pos, ch in edits:
        if op == "i":
            chars.insert(pos % (len(chars) + 1), ch)
        elif chars:
            index = pos % len(chars)
            if op == "d":
                del chars[index]
            else:
                chars[index] = ch
    return "".join(chars)


@st.composite
def near_duplicate_pairs(
    draw: st.DrawFn,
    alphabet: st.SearchStrategy[str] = LABEL_CHAR,
    min_size: int = 0,
    max_size: int = 80,
    max_edits: int = 4,
) -> tuple[str, str]:
    """A string and a few-edit mutation of it, in either order (random pairs are mostly dissimilar)."""
    base = draw(st.text(alphabet=alphabet, min_size=min_size, max_size=max_size))
    other = draw(mutated(base, alphabet, max_edits))
    return (other, base) if draw(st.booleans()) else (base, other)


@st.composite
def restatement_pairs(draw: st.DrawFn) -> tuple[str, str]:
    """A label-like fact and a restatement of it: tail rewording, extra detail, terser, punctuation, case,
    whitespace, non-ASCII; in either order."""
    words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=14))
    base = " ".join(words)
    kind = draw(
        st.sampled_from(["tail", "extra", "terser", "punct", "case", "space", "unicode", "same", "mutate"])
    )
    if kind == "tail":
        cut = draw(st.integers(0, len(words)))
        other = " ".join(words[:cut] + draw(st.lists(st.sampled_from(WORDS), max_size=4)))
    elif kind == "extra":
        other = base + " " + " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8)))
    elif kind == "terser":
        lo = draw(st.integers(0, len(words)))
        hi = draw(st.integers(lo, len(words)))
        other = " ".join(words[lo:hi])
    elif kind == "punct":
        other = base + draw(st.text(alphabet=st.sampled_from(PUNCT + " \t"), min_size=1, max_size=3))
    elif kind == "case":
        other = "".join(c.upper() if draw(st.booleans()) else c for c in base)
    elif kind == "space":
        seps = st.text(alphabet=st.sampled_from(PY_WHITESPACE), min_size=1, max_size=3)
        other = draw(seps).join(["", *words, ""]) if words else base
    elif kind == "unicode":
        table = str.maketrans({"a": "á", "o": "ö", "s": "ß", "u": "ü", "i": "İ", "e": "Σ"})
        other = "".join(c.translate(table) if draw(st.booleans()) else c for c in base)
    elif kind == "same":
        other = base
    else:
        other = draw(mutated(base, LABEL_CHAR, 3))
    return (other, base) if draw(st.booleans()) else (base, other)


@st.composite
def duplicate_heavy_labels(draw: st.DrawFn, max_size: int = 30) -> list[Any]:
    """Labels to cluster: a containment chain (each link the last with more words), restatements and
    near-duplicates, each drawn many times and often as a variant identical after normalisation (case,
    whitespace, terminal punctuation), with empty and missing labels among them: what the join on
    groups of identical labels, and the order-dependent canonical mode, have to get right."""
    words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=10))
    chain = [" ".join(words[:k]) for k in range(1, len(words) + 1)]
    others = draw(st.lists(st.one_of(restatement_pairs(), near_duplicate_pairs(max_size=30)), max_size=3))
    pool: list[Any] = [*chain, *(label for pair in others for label in pair), "", "  ", None]
    labels = []
    for label in draw(st.lists(st.sampled_from(pool), max_size=max_size)):
        variant = draw(st.sampled_from(["same", "same", "upper", "space", "punct"]))
        if isinstance(label, str) and variant == "upper":
            label = label.upper()
        elif isinstance(label, str) and variant == "space":
            label = "  " + label.replace(" ", " \t ") + "\n"
        elif isinstance(label, str) and variant == "punct":
            label = label + draw(st.sampled_from([".", "!?", " ;"]))
        labels.append(label)
    return labels


#: Pairs for the match contract: restatements, near-duplicates, and arbitrary unrelated text.
label_pairs = st.one_of(
    restatement_pairs(),
    near_duplicate_pairs(),
    st.tuples(label_text, label_text),
    st.tuples(any_text, any_text),
)

#: Thresholds: anywhere in [0, 1], plus the usual values and the ends.
thresholds = st.one_of(
    st.floats(min_value=0.0, max_value=1.0),
    st.sampled_from([0.0, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0]),
)
min_chars_values = st.sampled_from([0, 1, 15, 16, 17, 1000])


# --------------------------------------------------------------------------------------------------
# Every Unicode general category, placed where normalisation and the bindings look: at the start, at
# the end and next to whitespace, in labels of every internal str representation (1, 2 and 4 bytes a
# code point), at lengths around the core's thresholds.
# --------------------------------------------------------------------------------------------------
GENERAL_CATEGORIES = (
    "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe",
    "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co", "Cn",
)  # fmt: skip

#: One code point of a category drawn uniformly among all 30 (a small category such as Zl or Lt comes up
#: as often as Lo), surrogates (Cs) and unassigned code points (Cn) included.
EVERY_CATEGORY_CHAR = st.one_of([st.characters(categories=[cat], codec=None) for cat in GENERAL_CATEGORIES])

#: Format characters (Cf): invisible, not whitespace to ``str.split()``; U+FEFF is also a byte-order mark
#: to any UTF-16/32 decoder told to look for one.
FORMAT_CHARS = (
    "\ufeff\u200b\u2060\u00ad\u200c\u200d\u200e\u200f\u202a\u202e\u2061\u2064\u180e\u061c\u0600"
    "\ufff9\ufffb\U000110bd\U0001d173\U000e0001\U000e007f"
)
#: Lone surrogates (Cs): no UTF-8, so any UTF-8 path must fall back.
SURROGATES = "\ud800\udbff\udc00\udc80\udfff"
#: Private use (Co) and noncharacters / unassigned (Cn).
PRIVATE_AND_UNASSIGNED = "\ue000\uf8ff\U000f0000\U0010fffd\ufffe\uffff\u0378\U0010ffff"
#: Special casing: 'İ' (the one code point whose lower() is longer), final sigma, 'ẞ', ligatures and
#: titlecase digraphs, combining marks, code points above 255 whose lower() is below 256 (KELVIN SIGN ->
#: 'k', 'Ÿ' -> 'ÿ'), astral capitals.
SPECIAL_CASING = (
    "İıΣσςẞßﬃﬁﬂŉǰΐΰẖẘẙẚᾈᾼῌῼǅǄǆǈǋǲ\u212a\u212b\u2126Ÿ\u0301\u0307\u0345\U00010400\U0001e900\U000118a0"
)
LOWER_LONGER = "".join(c for c in map(chr, range(sys.maxunicode + 1)) if len(c.lower()) > 1)

#: Edge characters by the widest representation a label may use (so a 1-byte label keeps 1 byte).
_EDGE_ASCII = "\x00\x0b\x0c\x1c\x1d\x1e\x1f\x7f" + PUNCT + "'\"-"
_EDGE_LATIN1 = _EDGE_ASCII + "\x85\xa0\xad\xb5\xdf\xff\xc0\xd7"
#: The characters that broke a fast path before: drawn often (a one-in-a-hundred edge character in a
#: one-in-two wide label needs thousands of examples to meet a surrogate in the same label).
HOT_CHARS = "\ufeff\u200b\u2060\u00ad\x1c\x85\u2028İΣ" + SURROGATES
EDGE_CHAR: dict[str, st.SearchStrategy[str]] = {
    "ascii": st.sampled_from(_EDGE_ASCII),
    "latin1": st.sampled_from(_EDGE_LATIN1),
    "wide": st.one_of(
        st.sampled_from(HOT_CHARS),
        st.sampled_from(HOT_CHARS),
        st.sampled_from(FORMAT_CHARS),
        st.sampled_from(SURROGATES),
        st.sampled_from(PY_ONLY_WHITESPACE + "\u2028\u2029\x85"),
        st.sampled_from(SPECIAL_CASING + LOWER_LONGER),
        st.sampled_from(PRIVATE_AND_UNASSIGNED + NOT_WHITESPACE),
        st.sampled_from(_EDGE_LATIN1),
        EVERY_CATEGORY_CHAR,
    ),
}
#: Word characters by representation.
_WORD_ASCII = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_WORD: dict[str, st.SearchStrategy[str]] = {
    "ascii": st.sampled_from(_WORD_ASCII),
    "latin1": st.sampled_from(_WORD_ASCII + "éüñøçÉÜÑØÇßÿµ"),
    "wide": st.one_of(
        st.sampled_from(_WORD_ASCII + "éüñøçÉÜÑØÇ"),
        st.sampled_from("ΟΔΟΣαβγδСловоİstanbul漢字かな한글\U0001f600\U00010400\U0001d400"),
        EVERY_CATEGORY_CHAR,
    ),
}
#: Separators by representation: Python's whitespace (``str.split()``), Python-only whitespace included.
_SEP: dict[str, st.SearchStrategy[str]] = {
    "ascii": st.sampled_from(" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"),
    "latin1": st.sampled_from(" \t\n\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0"),
    "wide": st.sampled_from(PY_WHITESPACE),
}


@st.composite
def placed_labels(draw: st.DrawFn, max_words: int = 6) -> str:
    """A label of words and whitespace with edge characters (every category, format characters such as
    U+FEFF/U+200B/U+2060, surrogates, Python-only whitespace, special casing) at its start, at its end and
    next to its whitespace, in one str representation: ASCII, Latin-1 or wider (so each of CPython's
    1-, 2- and 4-byte layouts, and the bindings' byte and code-point paths, are drawn)."""
    width = draw(st.sampled_from(["ascii", "latin1", "wide", "wide"]))
    # Lists of characters, not st.text(alphabet=one_of(...)): hypothesis merges a text alphabet of
    # character strategies into one set of code points and draws from it uniformly, so the dozen hot
    # characters drown among the million code points EVERY_CATEGORY_CHAR adds.
    edge = st.lists(EDGE_CHAR[width], max_size=3).map("".join)
    parts = [draw(edge)]
    if width == "wide" and draw(st.integers(0, 3)) == 0:
        # The very first code point invisible or unencodable: what a decoder may take for a byte-order
        # mark, or what has no UTF-8.
        parts.insert(0, draw(st.sampled_from(FORMAT_CHARS[:6] + SURROGATES)))
    for _ in range(draw(st.integers(0, max_words))):
        parts.append(draw(st.lists(_WORD[width], min_size=1, max_size=8).map("".join)))
        parts.append(draw(st.lists(_SEP[width], min_size=1, max_size=2).map("".join)))
        if draw(st.booleans()):
            parts.append(draw(edge))
    parts.append(draw(edge))
    if draw(st.booleans()):
        parts.append(draw(st.text(alphabet=st.sampled_from(PUNCT + " \t"), max_size=3)))
    return "".join(parts)


@st.composite
def placed_pairs(draw: st.DrawFn) -> tuple[str, str]:
    """Two placed labels: a label and a few-edit restatement of it (edits drawn from every category too),
    or two unrelated ones; in either order."""
    base = draw(placed_labels())
    if draw(st.integers(0, 3)) == 0:
        other = draw(placed_labels())
    else:
        other = draw(mutated(base, st.one_of(EDGE_CHAR["wide"], st.sampled_from("abc .")), 3))
        if draw(st.booleans()):
            other = other.upper() if draw(st.booleans()) else other.lower()
    return (other, base) if draw(st.booleans()) else (base, other)


@st.composite
def long_labels(draw: st.DrawFn, lengths: tuple[int, ...] = (199, 200, 201, 2047, 2048, 2049)) -> str:
    """A placed label repeated to about one of ``lengths`` code points: around difflib's popular-element
    rule (200) and, as pairs, around the bindings' 4,096 elements before the GIL is released."""
    unit = draw(placed_labels().filter(bool))
    target = draw(st.sampled_from(lengths))
    text = (unit * (target // len(unit) + 1))[:target]
    return draw(mutated(text, EDGE_CHAR["wide"], 4))


#: Pairs for the match contract drawn from every category at every place.
placed_label_pairs = st.one_of(placed_pairs(), st.tuples(placed_labels(), placed_labels()))

# --------------------------------------------------------------------------------------------------
# Control characters inside wide labels (issue 37). The strategies above draw a NUL or a low control
# character as an *edge* character (at a label's ends, beside its whitespace) and at most three of them,
# in labels whose words are mostly letters; a containment between a run of controls and a wide label
# then needs the run to be a whole label, ``min_chars`` at most its length, and the run to stand next to
# a wide code point in the other label: a draw that practically never came up. The containment search
# over code points had been a byte search that missed exactly that (``"\x00"`` in ``"ж\x00ж"``), and the
# parity suites never saw it. These draw it on purpose.
# --------------------------------------------------------------------------------------------------
#: Low control characters that ``str.split()`` keeps (not whitespace), NUL drawn most.
LOW_CONTROLS = "\x00\x00\x00\x01\x02\x03\x07\x08\x0e\x10\x1b\x7f"
#: Code points above U+00FF, most with zero bytes beside non-zero ones in UTF-32 (what a byte search of
#: a NUL run hits misaligned).
WIDE_WITH_ZERO_BYTES = "жЖ\u0100\u0101\u0400\u1000\u4e00\uff00\U00010000\U0001f600漢"


@st.composite
def controls_in_wide_labels(draw: st.DrawFn, max_labels: int = 7) -> list[str]:
    """Labels of runs of NUL or low control characters, wide code points and a few letters: a run
    alone, the run inside wide labels (next to a wide code point), and variants, in any order."""
    run = draw(st.lists(st.sampled_from(LOW_CONTROLS), min_size=1, max_size=4).map("".join))
    wide = st.sampled_from(WIDE_WITH_ZERO_BYTES)
    piece = st.one_of(st.just(run), wide, st.sampled_from(LOW_CONTROLS), st.sampled_from("ab "))
    labels = [run, draw(wide) + run + draw(wide)]
    for _ in range(draw(st.integers(0, max_labels - 2))):
        labels.append(draw(st.lists(piece, min_size=1, max_size=10).map("".join)))
    return draw(st.permutations(labels))


#: ``min_chars`` small enough for a control run to be the shorter label of a containment.
control_min_chars = st.sampled_from([0, 1, 1, 2, 3, 4, 16])


# --------------------------------------------------------------------------------------------------
# Numbers: every type the reference compares with (``ratio >= threshold``, ``len(shorter) >= min_chars``).
# --------------------------------------------------------------------------------------------------
def _numpy_float(x: float) -> Any:
    import numpy as np

    return np.float64(x)


#: Thresholds as every number type the reference accepts: float, int, bool, Fraction, Decimal and numpy's
#: float64, inside [0, 1] and past both ends.
any_number_thresholds = st.one_of(
    thresholds,
    st.sampled_from([0, 1, 2, -1, True, False]),
    st.fractions(min_value=0, max_value=1, max_denominator=50),
    st.sampled_from([Fraction(17, 20), Fraction(4, 5), Fraction(3, 2)]),
    st.decimals(min_value=0, max_value=1, places=3),
    st.sampled_from([Decimal("0.85"), Decimal("0.8")]),
    thresholds.map(_numpy_float),
)
#: ``min_chars`` as int, float and Fraction.
any_number_min_chars = st.one_of(
    min_chars_values,
    st.sampled_from([0.0, 15.5, 16.0, 16.5, 1e9, Fraction(33, 2), Fraction(16)]),
)


# --------------------------------------------------------------------------------------------------
# Stdlib-only oracles for the batch functions (the contract, pair by pair).
# --------------------------------------------------------------------------------------------------
def seed_join(
    labels: list[Any], *, threshold: Any, min_chars: Any = SUBSUME_MIN_CHARS
) -> list[tuple[int, int]]:
    """Every pair ``(i, j)``, ``i < j``, that ``seed_labels_match(labels[i], labels[j])`` accepts."""
    return [
        (i, j)
        for i in range(len(labels))
        for j in range(i + 1, len(labels))
        if seed_labels_match(labels[i], labels[j], threshold=threshold, min_chars=min_chars)
    ]


def seed_replay(
    labels: list[Any],
    *,
    threshold: Any,
    min_chars: Any = SUBSUME_MIN_CHARS,
    prefix_len: int = 20,
    query_limit: int = 20,
) -> list[int]:
    """The seed's write-time lookup replayed in order (one scope, raw prefix): each label's canonical
    index; a new canonical (its stripped label) is appended to the store."""
    store: list[int] = []
    canonical = []
    texts = [str(x or "") for x in labels]
    for i, text in enumerate(texts):
        key = text.strip()
        if not key:
            canonical.append(i)
            continue
        candidates = [j for j in store if texts[j].strip().startswith(key[:prefix_len])][:query_limit]
        hit = next(
            (
                j
                for j in candidates
                if seed_labels_match(texts[j], text, threshold=threshold, min_chars=min_chars)
            ),
            None,
        )
        if hit is None:
            store.append(i)
        canonical.append(i if hit is None else hit)
    return canonical
