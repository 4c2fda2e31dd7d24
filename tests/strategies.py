"""Shared hypothesis strategies and oracles for the memdedup test suite.

The oracles here are written from the contract (DESIGN.md, contracts 1-3) with the standard library
only, independently of :mod:`memdedup._reference`, so a parity test that compares the active backend
with them is meaningful even when the active backend *is* the reference.
"""

from __future__ import annotations

import os
import sys
from difflib import SequenceMatcher
from typing import Any

from hypothesis import strategies as st

# --------------------------------------------------------------------------------------------------
# Example budgets: ``MEMDEDUP_HYPOTHESIS_SCALE=10`` multiplies every ``max_examples`` (use it with the
# fast Rust backend for a deeper run); the defaults keep the suite quick on the pure-Python backend.
# --------------------------------------------------------------------------------------------------
_SCALE = float(os.environ.get("MEMDEDUP_HYPOTHESIS_SCALE", "1") or "1")


def n_examples(base: int) -> int:
    """``base`` scaled by ``MEMDEDUP_HYPOTHESIS_SCALE`` (at least 1)."""
    return max(1, int(base * _SCALE))


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
