"""The mirror of ``rust/scrub/values.rs``: which values a credential-named key keeps.

The ``*_at`` forms judge ``d[s:e]`` without copying it, and read a long value only as far as the
judgement needs (a key nested in a long value is judged once per key).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from typing import Any

from memdedup._scrub_py._bytes import WS, ascii_lower, entropy, is_alnum, is_digit, is_lower, is_upper, strip
from memdedup._scrub_py.keys import digits_are_secret

_HEAD = 32
TEMPLATE_MAX = 256
SHAPE_MAX = 256
_HEX = re.compile(rb"[0-9A-Fa-f]+")
_DIGITS = re.compile(rb"[0-9]+")
_IDENT = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


def _is_ident(v: bytes) -> bool:
    return _IDENT.fullmatch(v) is not None


def _is_env_reference(d: bytes, s: int, e: int) -> bool:
    if s < e and d[s] == 0x24:
        return _IDENT.fullmatch(d, s + 1, e) is not None
    if e - s >= 2 and d[s] == d[e - 1] == 0x25:
        return _IDENT.fullmatch(d, s + 1, e - 1) is not None
    return False


def template_end(d: bytes, pos: int, limit: int | None = None) -> int | None:
    """values.rs template_end: the end of the template at ``pos`` (``d[:limit]``), or None."""
    end_of = len(d) if limit is None else limit
    rest = d[pos : min(end_of, pos + TEMPLATE_MAX)]
    if rest.startswith(b"${{"):
        open_, close, bad = 3, b"}}", b"{}"
    elif rest.startswith(b"{{") or rest.startswith(b"{%"):
        open_, close, bad = 2, (b"%}" if rest[1:2] == b"%" else b"}}"), b"{}"
    elif rest.startswith(b"${"):
        open_, close, bad = 2, b"}", b"{}"
    elif rest.startswith(b"$(") or rest.startswith(b"%("):
        open_, close, bad = 2, b")", b"()"
    elif rest.startswith(b"<"):
        open_, close, bad = 1, b">", b"<>"
    elif rest.startswith(b"{"):
        open_, close, bad = 1, b"}", b"{}"
    else:
        return None
    body = rest[open_:]
    for i, b in enumerate(body):
        if b in b"\n\r":
            return None
        if body.startswith(close, i):
            end = pos + open_ + i + len(close)
            if rest[0] == 0x25 and end < end_of and (is_upper(d[end]) or is_lower(d[end])):
                end += 1
            inner = body[:i]
            if rest[0] == 0x7B and open_ == 1 and not _is_ident(inner):
                return None
            return end if inner else None
        if b in bad:
            return None
    return None


def _looks_random_part(part: bytes) -> bool:
    upper = any(is_upper(b) for b in part)
    lower = any(is_lower(b) for b in part)
    digits = sum(1 for b in part if is_digit(b))
    return digits >= 2 and (upper or lower) and len(part) >= 10 and entropy(part) >= 3.0


def _is_dotted_name(v: bytes) -> bool:
    parts = 0
    for part in v.split(b"."):
        if part.startswith(b"$"):
            part = part[1:]
        if not _is_ident(part) or len(part) > 40 or _looks_random_part(part):
            return False
        parts += 1
    return parts >= 2


_CLOSES_OF = {0x28: 0x29, 0x5B: 0x5D, 0x7B: 0x7D}


def _nests(v: bytes) -> bool:
    """values.rs nests."""
    stack: list[int] = []
    for b in v:
        if b in _CLOSES_OF:
            stack.append(_CLOSES_OF[b])
        elif b in b")]}":
            if not stack or stack.pop() != b:
                return False
    return not stack


def _is_wordy_piece(piece: bytes) -> bool:
    """values.rs is_wordy_piece."""
    for word in re.split(rb"[._\-~@]", piece):
        letters = 0
        while letters < len(word) and (is_upper(word[letters]) or is_lower(word[letters])):
            letters += 1
        alpha, digits = word[:letters], word[letters:]
        one_case = all(not is_upper(b) for b in alpha[1:]) or all(not is_lower(b) for b in alpha)
        if not (len(word) <= 3 or (all(is_digit(b) for b in digits) and one_case)):
            return False
    return True


def _reads_as_word(word: bytes, upper: bool) -> bool:
    """values.rs reads_as_word."""
    if upper:
        return len(word) <= 6
    if len(word) < 4:
        return True
    run = longest = vowels = 0
    for b in word:
        vowel = b in b"aeiouy"
        run = 0 if vowel else run + 1
        vowels += vowel
        longest = max(longest, run)
    return longest <= 3 and 4 * vowels >= len(word)


_SEPARATOR = re.compile(rb"[/\-_.:@+]")


def made_of_words(value: bytes, digits: bool) -> bool:
    """values.rs made_of_words."""
    s, e = strip(value, 0, len(value))
    v = value[s:e]
    if v and v[-1] in b".,!?;:" and not digits:
        v = v[:-1]
    if not v or len(v) > SHAPE_MAX:
        return False
    pieces = _SEPARATOR.split(v)
    if digits and sum(1 for p in pieces if p) < 2:
        return False
    letters = in_words = 0
    for piece in pieces:
        count = 0
        while count < len(piece) and (is_upper(piece[count]) or is_lower(piece[count])):
            count += 1
        alpha, tail = piece[:count], piece[count:]
        number = len(tail) <= 4 and all(is_digit(b) for b in tail)
        if tail and not (digits and alpha and number):
            return False
        letters += len(alpha)
        if len(alpha) == 1:
            continue
        i = 0
        while i < len(alpha):
            uppers = 0
            while i + uppers < len(alpha) and is_upper(alpha[i + uppers]):
                uppers += 1
            lowers = 0
            while i + uppers + lowers < len(alpha) and is_lower(alpha[i + uppers + lowers]):
                lowers += 1
            if lowers == 0:
                acronym, word = uppers, 0
            else:
                acronym, word = max(uppers - 1, 0), (1 if uppers > 0 else 0) + lowers
            if acronym == 1 or (acronym > 0 and not _reads_as_word(alpha[i : i + acronym], True)):
                return False
            at = i + acronym
            if word > 0 and (word < 2 or not _reads_as_word(alpha[at : at + word].lower(), False)):
                return False
            if word >= 4:
                in_words += word
            i = at + word
    return 2 * in_words >= letters


def _cut_call(name: bytes, argument: bytes) -> bool:
    """values.rs cut_call."""
    return (
        (b"." in name or b"_" in name)
        and bool(argument)
        and (is_upper(argument[0]) or is_lower(argument[0]) or argument[0] == 0x5F)
        and all(is_alnum(b) or b in b"_." for b in argument)
    )


def _is_plain_identifier(v: bytes) -> bool:
    if not v or not (is_upper(v[0]) or is_lower(v[0]) or v[0] == 0x5F):
        return False
    pieces = 0
    for piece in v.split(b"_"):
        if not piece:
            continue
        alpha = all(is_upper(b) or is_lower(b) for b in piece)
        digits = all(is_digit(b) for b in piece)
        one_case = all(not is_upper(b) for b in piece) or all(not is_lower(b) for b in piece[1:])
        if not ((alpha and one_case) or digits):
            return False
        pieces += 1
    return pieces >= 2


class ValuePolicy:
    """values.rs ValuePolicy."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.placeholders = frozenset(raw["placeholders"])
        self.mask_chars = frozenset(raw["mask_chars"])
        self.mask_min_len: int = raw["mask_min_len"]
        self.max_kept_digits: int = raw["max_kept_digits"]
        self.word_prefixes: tuple[str, ...] = tuple(p for p in raw["template_prefixes"] if p[0] not in "{$<%")
        self.template_first = frozenset(p.encode()[0] for p in raw["template_prefixes"])
        self.prose_stopwords = frozenset(raw["prose_stopwords"])
        self.prose_leaders = frozenset(raw["prose_leaders"])
        self.placeholder_parts: tuple[bytes, ...] = tuple(p.encode() for p in raw["placeholder_parts"])
        self.reference_prefixes: tuple[str, ...] = tuple(raw["reference_prefixes"])
        self.path_extensions = frozenset(raw["path_extensions"])
        self.longest = max(len(w) for w in (*self.placeholders, *self.prose_stopwords, *self.prose_leaders))
        # A mask's characters as bytes: an ASCII letter in either case (compared lower-cased), any
        # other character as its UTF-8 sequence.
        alternatives = []
        for c in sorted(self.mask_chars):
            if "a" <= c <= "z":
                alternatives.append(re.escape(c.encode()) + b"|" + re.escape(c.upper().encode()))
            elif not "A" <= c <= "Z":
                alternatives.append(re.escape(c.encode()))
        self._mask = re.compile(b"(?:" + b"|".join(alternatives or [b"(?!)"]) + b")*")

    def is_placeholder(self, value: bytes) -> bool:
        return self.is_placeholder_at(value, 0, len(value))

    def is_placeholder_at(self, d: bytes, s: int, e: int) -> bool:
        s, e = strip(d, s, e)
        if e - s >= 2 and d[s] in b"\"'" and d[s] == d[e - 1]:
            s, e = strip(d, s + 1, e - 1)
        if s >= e:
            return True
        if e - s <= _HEAD and ascii_lower(d[s:e]) in self.placeholders:
            return True
        if ascii_lower(d[s : s + 1]).encode()[0] in self.template_first:
            if template_end(d, s, e) == e:
                return True
            if ascii_lower(d[s : min(e, s + _HEAD)]).startswith(self.word_prefixes):
                return True
        one_case = not (any(is_upper(b) for b in d[s:e]) and any(is_lower(b) for b in d[s:e]))
        if e - s <= 64 and one_case:
            lower = d[s:e].lower()
            if any(p in lower for p in self.placeholder_parts):
                return True
        mask = self._mask.match(d, s, e)
        if mask is not None and mask.end() == e and len(d[s:e].decode()) >= self.mask_min_len:
            return True
        return _is_env_reference(d, s, e)

    def is_small_number_at(self, d: bytes, s: int, e: int) -> bool:
        s, e = strip(d, s, e)
        if d[s : s + 2] in (b"0x", b"0X"):
            return 1 <= e - s - 2 <= 8 and _HEX.fullmatch(d, s + 2, e) is not None
        dot = d.find(b".", s, min(e, s + self.max_kept_digits + 1))
        if dot < 0:
            return 0 < e - s <= self.max_kept_digits and d[s:e].isdigit()
        return (
            0 < dot - s <= self.max_kept_digits
            and d[s:dot].isdigit()
            and _DIGITS.fullmatch(d, dot + 1, e) is not None
        )

    def _is_percentage_at(self, d: bytes, s: int, e: int) -> bool:
        s, e = strip(d, s, e)
        return e - s >= 2 and d[e - 1] == 0x25 and self.is_small_number_at(d, s, e - 1)

    def looks_generated(self, value: bytes) -> bool:
        return self.looks_generated_at(value, 0, len(value))

    def looks_generated_at(self, d: bytes, s: int, e: int) -> bool:
        s, e = strip(d, s, e)
        if e - s >= 16:
            return True
        v = d[s:e]
        digit = any(is_digit(b) for b in v)
        symbol = any(b in b"!@#$%^&*+/=~|\\?" for b in v)
        inner_upper = any(is_upper(b) for b in v[1:]) and any(is_lower(b) for b in v)
        return (digit and len(v) >= 4) or symbol or inner_upper

    def is_location_at(self, d: bytes, s: int, e: int) -> bool:
        """values.rs ValuePolicy::is_location."""
        s, e = strip(d, s, e)
        if s >= e or e - s > SHAPE_MAX:
            return False
        v = d[s:e]
        head = v[:_HEAD]
        scheme = 0
        while scheme < len(head) and (is_alnum(head[scheme]) or head[scheme] in b"+.-"):
            scheme += 1
        if scheme >= 2 and (is_upper(head[0]) or is_lower(head[0])) and head.startswith(b"://", scheme):
            return True
        if ascii_lower(head).startswith(self.reference_prefixes):
            return True
        rooted = v.startswith((b"/", b"~/", b"./", b"../", b"\\\\")) or (
            len(v) > 3 and (is_upper(v[0]) or is_lower(v[0])) and v[1] == 0x3A and v[2] in b"\\/"
        )
        body = v[2:] if len(v) > 3 and v[1] == 0x3A else v
        pieces = re.split(rb"[/\\]", body)
        last = b""
        for piece in pieces:
            if not piece:
                continue
            if not _is_wordy_piece(piece):
                return False
            last = piece
        slashes = len(pieces) - 1
        dot = last.rfind(b".")
        extension = dot >= 0 and ascii_lower(last[dot + 1 :]) in self.path_extensions
        return slashes >= 1 and (rooted or slashes >= 2 or extension)

    def is_reference_at(self, d: bytes, s: int, e: int) -> bool:
        """values.rs ValuePolicy::is_reference."""
        s, e = strip(d, s, e)
        if e - s > SHAPE_MAX or s >= e:
            return False
        v = d[s:e]
        if v[0] == 0x21 and len(v) >= 2 and (is_upper(v[1]) or is_lower(v[1])):
            return True
        if v[0] in b":@" and len(v) >= 3:
            rest = v[1:]
            return _is_ident(rest) and not any(is_upper(b) or is_digit(b) for b in rest)
        name_len = 0
        while name_len < len(v) and (is_alnum(v[name_len]) or v[name_len] in b"_.$"):
            name_len += 1
        name = v[:name_len]
        named = bool(name) and (is_upper(name[0]) or is_lower(name[0]) or name[0] in b"_$")
        if (
            named
            and v[name_len : name_len + 1] in (b"(", b"[")
            and (name_len + 1 == len(v) or _nests(v[name_len:]) or _cut_call(name, v[name_len + 1 :]))
        ):
            return True
        if named and name[0] == 0x24 and v.startswith(b"->", name_len):
            return True
        return (name_len == len(v) and _is_dotted_name(v)) or _is_plain_identifier(v)

    def is_prose_lead(self, first: bytes) -> bool:
        """values.rs ValuePolicy::is_prose_lead."""
        w = first.strip(WS)
        if w and w[-1] in b".,!?:;":
            w = w[:-1]
        return len(w) <= self.longest and ascii_lower(w) in self.prose_leaders

    def kept(self, kind: str, value: bytes, quoted: bool) -> bool:
        return self.kept_at(kind, value, 0, len(value), quoted)

    def kept_at(self, kind: str, d: bytes, s: int, e: int, quoted: bool) -> bool:
        """values.rs ValuePolicy::kept."""
        if self.is_placeholder_at(d, s, e) or self.is_location_at(d, s, e) or self._is_percentage_at(d, s, e):
            return True
        if not digits_are_secret(kind) and self.is_small_number_at(d, s, e):
            return True
        if kind == "PIN" and not any(is_digit(b) for b in d[s:e]):
            return True
        if quoted:
            return False
        return self.is_reference_at(d, s, e) or (
            not digits_are_secret(kind) and not self.looks_generated_at(d, s, e)
        )

    def looks_random_at(self, d: bytes, s: int, e: int) -> bool:
        """values.rs ValuePolicy::looks_random."""
        s, e = strip(d, s, e)
        e = min(e, s + SHAPE_MAX)
        v = d[s:e]
        if len(v) < 8 or any(b in WS or b in b"\"'`" for b in v):
            return False
        letters = sum(1 for b in v if is_upper(b) or is_lower(b))
        digits = sum(1 for b in v if is_digit(b))
        separators = sum(1 for b in v if b in b"-_.")
        symbols = len(v) - letters - digits - separators
        if letters == 0 or (digits == 0 and symbols < 2):
            return False
        if entropy(v) < 3.0 or made_of_words(v, True):
            return False
        if 0 < digits <= 2 and symbols == 0:
            total = changes = 0
            for a, b in itertools.pairwise(v):
                if (is_upper(a) or is_lower(a)) and (is_upper(b) or is_lower(b)):
                    total += 1
                    changes += is_upper(a) != is_upper(b)
            if 10 * changes < 2 * total:
                return False
        return not (
            self.is_placeholder_at(d, s, e) or self.is_location_at(d, s, e) or self.is_reference_at(d, s, e)
        )

    def is_prose_stopword(self, word: bytes) -> bool:
        w = word.strip(WS)
        if w and w[-1] in b".,!?:;":
            w = w[:-1]
        if len(w) > self.longest:
            return False
        lower = ascii_lower(w)
        return lower in self.prose_stopwords or lower in self.placeholders
