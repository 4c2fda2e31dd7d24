"""Opt-in guards against false merges: a collapse the match contract allows can be vetoed.

The match contract (ratio OR containment) merges distinct facts that differ only in a value
("Ticket ASR1603 is blocked" / "Ticket ASR1605 is blocked") or only in a negation ("The staging server
is reachable over VPN" / "... is not reachable over VPN"). The guards below veto such collapses. They
are off by default everywhere, so the drop-in stays exactly the seed's contract; pass
``guards=Guards(value=True, negation=True)`` (or ``"all"``, ``"value"``, ``"negation"``,
``"value,negation"``) to ``labels_match``, ``find_canonical_node``, ``batch.replay``, ``batch.join`` or
``batch.clusters``. A pair collapses under guards iff the contract matches AND no enabled guard blocks.

Both guards are pure Python and deterministic, and read the RAW labels (not the normalised ones: case
carries the "is this a name" signal).

**Value tokens.** A token is a maximal run of alphanumeric characters (``str.isalnum``) in which a
single ``.``, ``-`` or ``_`` may join two alphanumeric runs: ``"v1.2.3"``, ``"ASR-1603"``,
``"snake_case"`` are one token each; ``"9:30"`` is two, ``"User's"`` is ``"User"`` and ``"s"``. A token
is a *value token* when it

- contains a digit (``"1603"``, ``"v1.2.3"``, ``"3pm"``), or
- has an uppercase letter after its first character (``"PostgreSQL"``, ``"camelCase"``, ``"ASR"``), or
- contains ``_`` (``"max_retries"``), or
- starts with an uppercase letter, has at least two characters and is not the label's first token
  (a proper name: ``"Alpha"``, ``"Berlin"``; the first token is skipped because sentences start with
  a capital).

**Value guard.** Tokens are compared by their *folded* form: ``str.casefold``, then NFKD with the
combining marks dropped (``"Kraków"`` ~ ``"krakow"``, ``"Straße"`` ~ ``"strasse"``), then, for a token of
more than three letters and nothing else, one final ``s`` dropped (``"Tuesdays"`` ~ ``"Tuesday"``). Side A
*lacks* a value token of side B when no token of A has the same folded form. The guard blocks when EACH
side has a value token the other lacks: a substitution (``ASR1603`` -> ``ASR1605``, ``Alpha`` ->
``Beta``, ``3.11`` -> ``3.12``). A pure addition (extra detail: "Meets Sarah" -> "Meets Sarah in
Berlin") does not block, and neither does a change of case or accents. It does not see a substituted
value that is the label's first token and a capitalised word ("Sarah leads payments" / "Maria leads
payments"), nor lowercase common words ("staging" -> "production"); and it blocks reformatted or
respelled values ("10000" -> "10,000", "ASR-1603" -> "ASR 1603", "Genève" -> "Geneva").

**Negation guard.** Words are maximal alphanumeric runs in which ``'`` (curly apostrophes ``’ ‘ ʼ``
read as ``'``), ``.``, ``-`` or ``_`` may join two runs, compared case-insensitively. A word is a
negation when it is one of ``not no never cannot without none nobody nothing neither nor nowhere``, a
contraction ending in ``n't`` (``don't``, ``doesn't``, ``isn't``, ``can't``, ``won't``, ``didn't`` ...),
or one of the apostrophe-less forms ``dont doesnt didnt isnt arent wasnt werent hasnt havent hadnt
shouldnt wouldnt couldnt mustnt neednt`` (not ``cant``/``wont``, which are words). ``cannot`` and every
``n't`` form count as ``not``, so "does not" and "doesn't" agree; ``no-code`` is one word, not a
negation. The guard blocks when the two labels' sets of negation words differ ("likes" vs "does not
like", "never" vs "not"). It also blocks an extra detail that brings a negation ("Prefers tea" ->
"Prefers tea, not coffee").
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from memdedup.errors import InputTypeError, InvalidInputError

__all__ = [
    "NEGATION_WORDS",
    "Guards",
    "as_guards",
    "fold",
    "guards_allow",
    "negation_words",
    "tokens",
    "value_changes",
    "value_tokens",
    "why_blocked",
]

# [^\W_] is exactly str.isalnum for one character (sre's "word" class is isalnum or "_").
_TOKEN = re.compile(r"[^\W_]+(?:[._-][^\W_]+)*")
_WORD = re.compile(r"[^\W_]+(?:['._-][^\W_]+)*")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})

NEGATION_WORDS: frozenset[str] = frozenset(
    {"not", "no", "never", "cannot", "without", "none", "nobody", "nothing", "neither", "nor", "nowhere"}
)
_NOT_FORMS: frozenset[str] = frozenset(
    {
        "cannot",
        "dont",
        "doesnt",
        "didnt",
        "isnt",
        "arent",
        "wasnt",
        "werent",
        "hasnt",
        "havent",
        "hadnt",
        "shouldnt",
        "wouldnt",
        "couldnt",
        "mustnt",
        "neednt",
    }
)


_ANY_NEGATION = NEGATION_WORDS | _NOT_FORMS


@dataclass(frozen=True)
class Guards:
    """Which guards are on. ``Guards()`` (all off) leaves every decision to the contract."""

    value: bool = False
    negation: bool = False

    def __bool__(self) -> bool:
        return self.value or self.negation

    @classmethod
    def parse(cls, text: str) -> Guards:
        """``"none"`` (or ``""``), ``"all"``, or a comma-separated list of ``value`` and ``negation``."""
        names = {part.strip().lower() for part in str(text).split(",")} - {""}
        if names <= {"none"}:
            return cls()
        if names == {"all"}:
            return cls(value=True, negation=True)
        unknown = names - {"value", "negation"}
        if unknown:
            raise InvalidInputError(
                f"unknown guard {sorted(unknown)[0]!r}: use none, all, value, negation or value,negation"
            )
        return cls(value="value" in names, negation="negation" in names)

    def __str__(self) -> str:
        on = [name for name in ("value", "negation") if getattr(self, name)]
        return ",".join(on) if on else "none"


def as_guards(guards: Guards | str | Iterable[str] | None) -> Guards:
    """A :class:`Guards` from a ``Guards``, ``None`` (all off), a string for :meth:`Guards.parse`, or an
    iterable of guard names."""
    if guards is None:
        return Guards()
    if isinstance(guards, Guards):
        return guards
    if isinstance(guards, str):
        return Guards.parse(guards)
    try:
        names = [str(name) for name in guards]
    except TypeError:
        raise InputTypeError(
            f"guards must be a Guards, a string or None, not {type(guards).__name__}"
        ) from None
    return Guards.parse(",".join(names))


def _text(label: Any) -> str:
    return str(label or "")


def tokens(label: Any) -> list[str]:
    """The label's tokens (see the module docstring), in order."""
    return _TOKEN.findall(_text(label))


def _is_value(token: str, first: bool) -> bool:
    return (
        any(ch.isdigit() for ch in token)
        or any(ch.isupper() for ch in token[1:])
        or "_" in token
        or (not first and len(token) >= 2 and token[0].isupper())
    )


def value_tokens(label: Any) -> list[str]:
    """The label's value tokens, in order (see the module docstring)."""
    return [t for k, t in enumerate(tokens(label)) if _is_value(t, k == 0)]


@lru_cache(maxsize=1 << 16)
def fold(token: str) -> str:
    """The form value tokens are compared in: casefolded, accents dropped, a plural ``s`` dropped."""
    if token.isascii():
        folded = token.lower()
    else:
        decomposed = unicodedata.normalize("NFKD", token.casefold())
        folded = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    if len(folded) > 3 and folded.isalpha() and folded.endswith("s"):
        folded = folded[:-1]
    return folded


def value_changes(a: Any, b: Any) -> tuple[list[str], list[str]]:
    """Value tokens of ``a`` that ``b`` lacks, and of ``b`` that ``a`` lacks (by folded form), in order."""
    toks_a, toks_b = tokens(a), tokens(b)
    fold_a, fold_b = [fold(t) for t in toks_a], [fold(t) for t in toks_b]
    set_a, set_b = set(fold_a), set(fold_b)
    if set_a == set_b:
        return [], []
    only_a = [
        t
        for k, (t, f) in enumerate(zip(toks_a, fold_a, strict=True))
        if f not in set_b and _is_value(t, k == 0)
    ]
    only_b = [
        t
        for k, (t, f) in enumerate(zip(toks_b, fold_b, strict=True))
        if f not in set_a and _is_value(t, k == 0)
    ]
    return only_a, only_b


def negation_words(label: Any) -> frozenset[str]:
    """The label's negation words, canonicalised (every ``n't`` form and ``cannot`` read as ``not``)."""
    text = _text(label).translate(_APOSTROPHES).casefold()
    words = set(_WORD.findall(text))
    found = {"not" if w in _NOT_FORMS else w for w in words & _ANY_NEGATION}
    if "n't" in text and any(w.endswith("n't") for w in words):
        found.add("not")
    return frozenset(found)


def value_blocks(stored: Any, incoming: Any) -> bool:
    """True when the value guard blocks the pair."""
    only_a, only_b = value_changes(stored, incoming)
    return bool(only_a) and bool(only_b)


def negation_blocks(stored: Any, incoming: Any) -> bool:
    """True when the negation guard blocks the pair."""
    return negation_words(stored) != negation_words(incoming)


def why_blocked(stored: Any, incoming: Any, guards: Guards | str | None) -> str | None:
    """Why the enabled guards block the pair (the first guard that does, value first), or None."""
    g = as_guards(guards)
    if g.value:
        only_a, only_b = value_changes(stored, incoming)
        if only_a and only_b:
            return f"value: {', '.join(dict.fromkeys(only_a))} vs {', '.join(dict.fromkeys(only_b))}"
    if g.negation:
        neg_a, neg_b = negation_words(stored), negation_words(incoming)
        if neg_a != neg_b:
            a = ", ".join(sorted(neg_a - neg_b)) or "-"
            b = ", ".join(sorted(neg_b - neg_a)) or "-"
            return f"negation: {a} vs {b}"
    return None


def guards_allow(stored: Any, incoming: Any, guards: Guards | str | None) -> bool:
    """True unless an enabled guard blocks collapsing ``incoming`` into ``stored``."""
    g = as_guards(guards)
    if g.value and value_blocks(stored, incoming):
        return False
    return not (g.negation and negation_blocks(stored, incoming))
