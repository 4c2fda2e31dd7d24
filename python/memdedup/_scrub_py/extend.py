"""The mirror of ``rust/scrub/extend.rs``: a secret's extent from a rule's match (a value after a
credential-named key, a private key block, a token's long tail), read through one memo per rule's scan."""

from __future__ import annotations

import bisect
import re
from collections import Counter
from typing import NamedTuple

from memdedup._scrub_py._bytes import (
    HEX,
    LETTER_ESCAPES,
    PLACEHOLDER_BYTES,
    WS,
    byte_before,
    is_alnum,
    is_digit,
    is_lower,
    is_upper,
)
from memdedup._scrub_py.keys import KeyPolicy, digits_are_secret
from memdedup._scrub_py.values import SHAPE_MAX, ValuePolicy, template_end

MAX_CLAUSE_WORDS = 16
_SCHEMES = (b"bearer", b"basic", b"token", b"digest", b"ssws", b"apikey")


# extend.rs ------------------------------------------------------------------------------------------
def _escape_at(d: bytes, i: int) -> bool:
    j = i
    while j < len(d) and d[j] == 0x5C and j - i < 3:
        j += 1
    return j > i and j < len(d) and d[j] in b'nrt"'


def _token_stop(b: int) -> bool:
    return b in WS or b in b"\"'`,;"


_CLOSER_RUN = 8


def _closes_token(d: bytes, i: int) -> bool:
    """extend.rs closes_token."""
    j = i + 1
    while j < len(d) and j - (i + 1) < _CLOSER_RUN and d[j] in b")]}>":
        j += 1
    if j - (i + 1) == _CLOSER_RUN:
        return True
    if j >= len(d):
        return True
    n = d[j]
    if n in WS or n in b"\"'`,;":
        return True
    if n in b".:!?":
        return j + 1 >= len(d) or d[j + 1] in WS
    if n == 0x5C:
        return _escape_at(d, j)
    if n == 0x3C:
        return d[j + 1 : j + 2] == b"/"
    return False


_BRACKET_KIND = {0x28: 0, 0x29: 0, 0x5B: 1, 0x5D: 1, 0x7B: 2, 0x7D: 2, 0x3C: 3, 0x3E: 3}


def _balanced_end(d: bytes, start: int, end: int) -> int:
    """extend.rs balanced_end."""
    if end - start > SHAPE_MAX:
        return end
    opened = [0, 0, 0, 0]
    for b in d[start:end]:
        if b in b"([{<":
            opened[_BRACKET_KIND[b]] += 1
        elif b in b")]}>":
            opened[_BRACKET_KIND[b]] = max(0, opened[_BRACKET_KIND[b]] - 1)
    while end < len(d) and d[end] in b")]}>" and opened[_BRACKET_KIND[d[end]]] > 0:
        opened[_BRACKET_KIND[d[end]]] -= 1
        end += 1
    return end


def _clause_stop(b: int) -> bool:
    return b in b"\n\r\"'`,;"


def _ends_token(d: bytes, i: int, query: bool) -> bool:
    """extend.rs ends_token."""
    b = d[i]
    return (
        _token_stop(b)
        or (query and b in b"&#")
        or (b in b")]}>" and _closes_token(d, i))
        or (b == 0x3C and d[i + 1 : i + 2] == b"/")
        or (b == 0x5C and _escape_at(d, i))
    )


def _ends_word(d: bytes, i: int, query: bool) -> bool:
    b = d[i]
    return b in WS or _clause_stop(b) or (query and b in b"&#") or (b == 0x5C and _escape_at(d, i))


# The first byte at or after a position that ends a token, a word, a run of blanks, or an escaped
# string (extend.rs ends_token, ends_word, the blank gap, the \\" read): position-only tests.
_ESCAPE = rb"|\\(?=\\{0,2}[nrt\"])"
# A closing bracket ends a token only where the token ends (extend.rs closes_token); an XML closing
# tag's `</` ends one too.
_CLOSES = (
    rb"|[)\]}>](?=[)\]}>]{8}|[)\]}>]{0,7}"
    rb"(?:[ \t\n\x0c\r\"'`,;]|[.:!?](?:[ \t\n\x0c\r]|(?![\s\S]))|\\{1,3}[nrt\"]|</|(?![\s\S])))"
    rb"|</"
)
_TOKEN_STOP = (
    re.compile(rb"[ \t\n\x0c\r\"'`,;]" + _CLOSES + _ESCAPE),
    re.compile(rb"[ \t\n\x0c\r\"'`,;&#]" + _CLOSES + _ESCAPE),
)
_WORD_STOP = (
    re.compile(rb"[ \t\n\x0c\r\"'`,;]" + _ESCAPE),
    re.compile(rb"[ \t\n\x0c\r\"'`,;&#]" + _ESCAPE),
)
_NOT_BLANK = re.compile(rb"[^ \t]")
_BLANK = re.compile(rb"[ \t]")
_ESCAPED_END = {q: re.compile(rb"\\(?=" + re.escape(bytes([q])) + rb")|\n") for q in b"\"'"}
_LOOKAHEAD = 16  # the most bytes past a position the stop patterns look at


class Stretch:
    """extend.rs Stretch: ``from_..to`` holds no stop and ``to`` is one (or the end)."""

    __slots__ = ("from_", "to")

    def __init__(self) -> None:
        self.from_ = self.to = -1

    def stop(self, d: bytes, p: int, pattern: re.Pattern[bytes]) -> int:
        if self.from_ <= p <= self.to:
            return self.to
        if p < self.from_:
            m = pattern.search(d, p, min(len(d), self.from_ + _LOOKAHEAD))
            i = m.start() if m is not None and m.start() < self.from_ else self.to
        else:
            m = pattern.search(d, p)
            i = len(d) if m is None else m.start()
        self.from_, self.to = p, i
        return i


class Memo:
    """extend.rs Memo: what one rule's scan remembers between its reads."""

    def __init__(self) -> None:
        self.token = (Stretch(), Stretch())
        self.word = (Stretch(), Stretch())
        self.blanks = Stretch()
        self.escaped = {q: Stretch() for q in b"\"'"}
        self.run = Stretch()
        self.trim: tuple[int, int] | None = None
        self.block: tuple[list[int], int] = ([], 0)
        self.span: tuple[int, int, list[int]] = (0, 0, [0] * 256)

    def counts(self, d: bytes, start: int, end: int) -> list[int]:
        """extend.rs Memo::counts."""
        from_, to, counts = self.span
        if to == end and start <= end and abs(from_ - start) < end - start:
            if start > from_:
                for b in d[from_:start]:
                    counts[b] -= 1
            else:
                for b in d[start:from_]:
                    counts[b] += 1
        else:
            counts = [0] * 256
            for b, c in Counter(d[start:end]).items():
                counts[b] = c
        self.span = (start, end, counts)
        return counts


class Value(NamedTuple):
    """extend.rs Value."""

    start: int
    end: int
    quoted: bool
    first_end: int
    clause: bool
    query: bool
    capped: bool = False


class Cover(NamedTuple):
    """extend.rs Cover."""

    start: int
    end: int
    quoted: bool
    clause: bool
    query: bool

    def holds(self, value_at: int, unquoted: bool, clause: bool, query: bool) -> bool:
        return (
            self.start <= value_at < self.end
            and unquoted
            and (not clause or self.clause or self.quoted)
            and (query or not self.query or self.quoted)
        )


def _opens_quote(d: bytes, pos: int) -> bool:
    """extend.rs opens_quote."""
    return pos < len(d) and (d[pos] in b"\"'`" or (d[pos] == 0x5C and d[pos + 1 : pos + 2] in (b'"', b"'")))


def _literal_prefix(d: bytes, pos: int) -> bool:
    """extend.rs literal_prefix."""
    return d[pos : pos + 1] in (b"@", b"r", b"b", b"u", b"f", b"L", b"R") and d[pos + 1 : pos + 2] in (
        b'"',
        b"'",
    )


def _block_indicator(d: bytes, pos: int) -> int | None:
    """extend.rs block_indicator."""
    if d[pos : pos + 1] not in (b"|", b">"):
        return None
    i = pos + 1
    while i < len(d) and i - pos <= 3 and (d[i] in b"-+" or is_digit(d[i])):
        i += 1
    while i < len(d) and d[i] in b" \t":
        i += 1
    if d[i : i + 1] == b"\n":
        return i + 1
    if d[i : i + 2] == b"\r\n":
        return i + 2
    return None


def _line_indent(d: bytes, pos: int) -> int:
    """extend.rs line_indent."""
    line = d.rfind(b"\n", 0, pos) + 1
    i = line
    while i < len(d) and d[i] in b" \t":
        i += 1
    return i - line


_MAPPING_NAME = re.compile(rb"[A-Za-z0-9_\-.\"']{1,64}")


def _mapping_line(d: bytes, p: int) -> bool:
    """extend.rs mapping_line."""
    i = p
    if d[i : i + 2] == b"- ":
        i += 2
    m = _MAPPING_NAME.match(d, i, min(len(d), i + 64))
    if m is None:
        return False
    end = m.end()
    return d[end : end + 1] == b":" and (end + 1 >= len(d) or d[end + 1] in WS)


def _block_value(d: bytes, start: int, indent: int) -> tuple[int, int] | None:
    """extend.rs block_value."""
    first: int | None = None
    last = 0
    line = start
    n = len(d)
    while line < n:
        blanks = 0
        while line + blanks < n and d[line + blanks] in b" \t":
            blanks += 1
        content = line + blanks
        eol = d.find(b"\n", content)
        if eol < 0:
            eol = n
        end = eol
        while end > content and d[end - 1] in WS:
            end -= 1
        if end > content:
            if blanks <= indent or (first is not None and _mapping_line(d, content)):
                break
            if first is None:
                first = content
            last = end
        line = eol + 1
    return None if first is None else (first, last)


def read_value(d: bytes, pos: int, clause: bool, query: bool, memo: Memo) -> Value | None:
    """extend.rs read_value."""
    n = len(d)
    if pos >= n:
        return None
    if _literal_prefix(d, pos):
        return read_value(d, pos + 1, clause, query, memo)
    if d[pos] == 0x5C and pos + 1 < n and d[pos + 1] in b"\"'":
        quote = d[pos + 1]
        start = pos + 2
        end = memo.escaped[quote].stop(d, start, _ESCAPED_END[quote])
        return Value(start, end, True, end, clause, query) if end > start else None
    if d[pos] in b"\"'`":
        quote = d[pos]
        start = i = pos + 1
        while i < n and d[i] != quote and d[i] != 0x0A:
            i += 2 if d[i] == 0x5C and i + 1 < n else 1
        end = min(i, n)
        return Value(start, end, True, end, clause, query) if end > start else None
    block_from = _block_indicator(d, pos)
    if block_from is not None:
        block = _block_value(d, block_from, _line_indent(d, pos))
        if block is None:
            return None
        return Value(block[0], block[1], True, block[1], clause, query) if block[1] > block[0] else None
    t_end = template_end(d, pos)
    if t_end is not None and (t_end >= n or _ends_token(d, t_end, query)):
        return Value(pos, t_end, False, t_end, clause, query)
    capped = False
    if not clause:
        stop = memo.token[query].stop(d, pos, _TOKEN_STOP[query])
        if memo.trim is not None and memo.trim[0] == stop:
            floor = memo.trim[1]
        else:
            floor = stop
            while floor > 0 and d[floor - 1] in b".:":
                floor -= 1
            memo.trim = (stop, floor)
        end = max(floor, pos)
        if end == stop:
            end = _balanced_end(d, pos, end)
        first_end = end
    else:
        end, first, capped = _clause(d, pos, query, memo, MAX_CLAUSE_WORDS)
        first_end = min(end if first is None else first, end)
    return Value(pos, end, False, first_end, clause, query, capped) if end > pos else None


def _clause(d: bytes, pos: int, query: bool, memo: Memo, max_words: int) -> tuple[int, int | None, bool]:
    """extend.rs clause."""
    n = len(d)
    i = end = pos
    first: int | None = None
    words = 0
    while i < n:
        if words == max_words:
            return end, first, True
        word_start = i
        if words > 0 and d[i] in b"([{<":
            break
        i = memo.word[query].stop(d, i, _WORD_STOP[query])
        if i == word_start:
            break
        words += 1
        if first is None:
            first = i
        at_gap = i >= n or d[i] in b" \t"
        if d[i - 1] in b".!?" and (i >= n or d[i] in WS):
            end = i - 1 if d[i - 1] == 0x2E else i
            break
        end = i
        if not at_gap:
            break
        i = memo.blanks.stop(d, i, _NOT_BLANK)
    return end, first, False


def _whole_clause(d: bytes, value: Value, memo: Memo) -> Value:
    """extend.rs whole_clause."""
    if not value.capped:
        return value
    return value._replace(end=_clause(d, value.start, value.query, memo, 1 << 62)[0], capped=False)


def _key_byte(b: int) -> bool:
    return is_alnum(b) or b in b"_.-"


def _in_placeholder(d: bytes, at: int) -> bool:
    """extend.rs in_placeholder."""
    return at > 0 and d[at - 1] == 0x3A and d.endswith(PLACEHOLDER_BYTES, 0, at)


def _key_phrase_start(d: bytes, key_start: int) -> int:
    """extend.rs key_phrase_start."""

    def word_byte(b: int) -> bool:
        return is_alnum(b) or b in b"_-"

    start = key_start
    for _ in range(2):
        if start < 2 or d[start - 1] not in b" \t":
            break
        length = 0
        while length < 32 and start - 2 - length >= 0 and word_byte(d[start - 2 - length]):
            length += 1
        word_start = start - 1 - length
        if (
            length == 0
            or length == 32
            or (word_start > 0 and (word_byte(d[word_start - 1]) or d[word_start - 1] == 0x2E))
        ):
            break
        start = word_start
    return start


def key_span(d: bytes, ms: int) -> tuple[int, int]:
    """extend.rs key_span: the first run of key bytes from the match's start, past an escape's letters."""
    start = ms
    while start < len(d) and not _key_byte(d[start]):
        start += 1
    end = start
    while end < len(d) and _key_byte(d[end]):
        end += 1
    return _skip_escape(d, start, end), end


def _skip_escape(d: bytes, start: int, end: int) -> int:
    """extend.rs skip_escape."""

    def hexes(lo: int, hi: int) -> bool:
        return hi <= end and all(b in HEX for b in d[lo:hi])

    before = d[start - 1] if start > 0 else -1
    at = d[start] if start < len(d) else -1
    skip = 0
    if before == 0x5C and at in LETTER_ESCAPES:
        skip = 1
    elif before == 0x5C and at == 0x75 and hexes(start + 1, start + 5):
        skip = 5
    elif before == 0x5C and at == 0x78 and hexes(start + 1, start + 3):
        skip = 3
    elif before == 0x25 and at >= 0 and hexes(start, start + 2):
        skip = 2
    return start + skip if start + skip < end else start


def _after_type(d: bytes, at: int, keys: KeyPolicy) -> int | None:
    """extend.rs after_type."""
    i = at
    if d[i : i + 1] == b"&":
        i += 1
    word = 0
    while word < 24 and i + word < len(d) and (is_alnum(d[i + word]) or d[i + word] == 0x5F):
        word += 1
    if word == 0 or not keys.is_type(d[i : i + word]):
        return None
    i += word
    while i < len(d) and d[i] in b"?*[]":
        i += 1
    while i < len(d) and d[i] in b" \t":
        i += 1
    if d[i : i + 1] != b"=" or d[i + 1 : i + 2] in (b"=", b">", b"~"):
        return None
    i += 1
    blanks = 0
    while blanks < 8 and i + blanks < len(d) and d[i + blanks] in b" \t":
        blanks += 1
    return i + blanks


def _classify_phrase(d: bytes, key: tuple[int, int], keys: KeyPolicy) -> tuple[str, bool] | None:
    """extend.rs classify_phrase."""
    phrase = d[_key_phrase_start(d, key[0]) : key[1]]
    if keys.refuses(phrase):
        return None
    hit = keys.classify_key(phrase)
    if len(phrase) == key[1] - key[0] or (hit is not None and not hit[1]):
        return hit
    return keys.classify_key(d[key[0] : key[1]])


def _names_a_value(d: bytes, at: int) -> bool:
    """extend.rs names_a_value."""
    rest = d[min(at, len(d)) :]
    blanks = 0
    while blanks < min(64, len(rest)) and rest[blanks] in WS:
        blanks += 1
    rest = rest[blanks:]
    return blanks > 0 and any(
        len(rest) > len(w) and rest[: len(w)].lower() == w and rest[len(w)] in b"=:"
        for w in (b"value", b"content")
    )


def assignment(
    d: bytes,
    key: tuple[int, int],
    me: int,
    flag: bool,
    policy: tuple[KeyPolicy, ValuePolicy],
    memo: Memo,
    cover: Cover | None,
) -> tuple[Value, str] | None:
    """extend.rs assignment."""
    keys, values = policy
    if (not flag and key[0] > 0 and _key_byte(byte_before(d, key[0]))) or _in_placeholder(d, key[0]):
        return None
    if flag and key[0] > 0 and byte_before(d, key[0]) not in b" \t\n\r\"'(`":
        return None
    value_at = me
    joint = "assign"
    if not flag:
        sep, nxt = d[me - 1], d[me] if me < len(d) else -1
        after_key = key[1]
        while after_key < len(d) and d[after_key] in b" \t":
            after_key += 1
        if d[key[1] : key[1] + 1] == b",":
            joint = "comma"
            value_at = key[1] + 1
        elif (sep == 0x3D and nxt in (0x3D, 0x7E)) or (sep == 0x3A and nxt == 0x3A):
            return None
        elif sep == 0x3D:
            if nxt == 0x3E:
                value_at += 1
        elif sep == 0x3A:
            joint = "colon"
        elif sep == 0x3B and d[after_key : after_key + 1] in (b'"', b"'"):
            joint = "juxtaposed"
            value_at = after_key
        else:
            return None
        if joint != "comma":
            blanks = 0
            while blanks < 8 and value_at + blanks < len(d) and d[value_at + blanks] in b" \t":
                blanks += 1
            value_at += blanks
        if joint == "colon":
            typed = _after_type(d, value_at, keys)
            if typed is not None:
                value_at = typed
                joint = "assign"
    query = key[0] > 0 and d[key[0] - 1] in b"?&"
    may_be_clause = joint == "colon" and d[key[0]] != 0x2D
    unquoted = not _opens_quote(d, value_at)
    if (
        cover is not None
        and cover.holds(value_at, unquoted, False, query)
        and (not may_be_clause or cover.holds(value_at, unquoted, True, query))
    ):
        return None
    hit = _classify_phrase(d, key, keys)
    if hit is None:
        return None
    kind, weak = hit
    weak = weak or joint == "comma"
    clause = kind == "PASSWORD" and may_be_clause and not weak
    if cover is not None and cover.holds(value_at, unquoted, clause, query):
        return None
    value = read_value(d, value_at, clause, query, memo)
    if value is None:
        return None
    if joint == "comma" and value.quoted:
        return None
    if joint == "juxtaposed" and (
        not value.quoted
        or d[value.end + 1 : value.end + 2] != b";"
        or any(b in WS for b in d[value.start : value.end])
    ):
        return None
    start, end = value.start, value.end
    if value.quoted:
        text = d[start:end]
        for scheme in _SCHEMES:
            if len(text) > len(scheme) and text[: len(scheme)].lower() == scheme:
                rest = text[len(scheme) :]
                gap = len(rest) - len(rest.lstrip(b" \t"))
                if gap > 0 and len(scheme) + gap < len(text):
                    start += len(scheme) + gap
                break
        value = value._replace(start=start)
    if flag and d[start : start + 1] == b"-":
        return None
    if value.quoted and d[key[0] : key[1]].lower() == b"key" and _names_a_value(d, value.end + 1):
        return None
    if weak:
        if not values.looks_random_at(d, start, end):
            return None
    elif values.kept_at(kind, d, start, end, value.quoted or query):
        return None
    if clause and not value.quoted:
        first = d[start : value.first_end]
        if values.is_placeholder(first) or (value.first_end < end and values.is_prose_lead(first)):
            return None
    if not value.quoted and _names_its_key(d, key, value, keys):
        return None
    return _whole_clause(d, value, memo), kind


def _names_its_key(d: bytes, key: tuple[int, int], value: Value, keys: KeyPolicy) -> bool:
    """extend.rs names_its_key."""
    text = d[value.start : value.end]
    if len(text) <= 64 and text and (is_upper(text[0]) or is_lower(text[0]) or text[0] == 0x5F):
        words = keys.words(d[key[0] : key[1]])
        if words and len(words[-1]) >= 2 and text.lower() == words[-1].encode().lower():
            return True
    camel = (
        len(text) <= 64
        and bool(text)
        and is_upper(text[0])
        and all(is_upper(b) or is_lower(b) for b in text)
        and any(is_upper(b) for b in text[1:])
        and any(is_lower(b) for b in text)
    )
    if not camel:
        return False
    words = keys.words(d[key[0] : key[1]])
    if not words or len(words[-1]) < 3:
        return False
    return words[-1].encode() in text.lower()


def _prose_key(d: bytes, ms: int) -> tuple[int, int]:
    """extend.rs prose_key."""
    start, end = key_span(d, ms)
    if end < len(d) and d[end] in b" \t":
        s2, e2 = key_span(d, end + 1)
        if s2 == end + 1 and d[s2:e2].lower() in (b"key", b"token", b"secret"):
            end = e2
    return start, end


_SETTING_VERBS = frozenset(
    b"set sets setting change changes changed changing".split()
    + b"reset resets update updates updated rotate rotated".split()
)


def _purpose_to(d: bytes, key: tuple[int, int], value_at: int) -> bool:
    """extend.rs purpose_to."""
    if d[key[1] : value_at].strip(b" \t\n\x0c\r").lower() != b"to":
        return False
    words = [w for w in re.split(rb"[^A-Za-z]", d[max(key[0] - 48, 0) : key[0]]) if w]
    return not any(w.lower() in _SETTING_VERBS for w in words[-6:])


def _looks_like_token(d: bytes, s: int, e: int) -> bool:
    """extend.rs looks_like_token."""
    if e - s >= 20:
        return True
    v = d[s:e]
    return len(v) >= 12 and any(is_upper(b) or is_lower(b) for b in v) and any(is_digit(b) for b in v)


def _word_at(d: bytes, start: int, end: int, cap: int) -> bytes | None:
    """extend.rs word_at, over ``d[start:end]``."""
    while start < end and d[start] in b" \t":
        start += 1
    if start >= end:
        return None
    stop = min(end, start + cap)
    m = _BLANK.search(d, start, stop)
    return d[start : stop if m is None else m.start()]


def prose(
    d: bytes,
    ms: int,
    value_at: int,
    policy: tuple[KeyPolicy, ValuePolicy],
    memo: Memo,
    cover: Cover | None,
) -> tuple[Value, str] | None:
    """extend.rs prose."""
    keys, values = policy
    key = _prose_key(d, ms)
    before = byte_before(d, key[0]) if key[0] > 0 else 0x20
    if (key[0] > 0 and (is_alnum(before) or before == 0x5F)) or _in_placeholder(d, key[0]):
        return None
    kind = keys.classify(d[key[0] : key[1]])
    if kind is None or _purpose_to(d, key, value_at):
        return None
    clause = d[key[0] : key[1]].lower().startswith(b"passphrase")
    if cover is not None and cover.holds(value_at, not _opens_quote(d, value_at), clause, False):
        return None
    value = read_value(d, value_at, clause, False, memo)
    if value is None:
        return None
    start, end = value.start, value.end
    if value.quoted:
        words = [w for w in re.split(rb"[ \t]", d[start:end]) if w]
        first = words[0] if words else b""
        describes = values.is_prose_stopword(first) and (len(words) < 2 or values.is_prose_stopword(words[1]))
    else:
        cap = values.longest + 2
        second = None
        describes = values.is_prose_stopword(d[start : min(value.first_end, start + cap)])
        if describes:
            second = _word_at(d, value.first_end, end, cap)
            describes = second is None or values.is_prose_stopword(second)
    if describes or values.kept_at(kind, d, start, end, True):
        return None
    if not digits_are_secret(kind) and not _looks_like_token(d, start, end):
        return None
    return _whole_clause(d, value, memo), kind


def _skip_separators(d: bytes, p: int) -> int:
    n = len(d)
    while p < n:
        b = d[p]
        if b in b" \t\r\n":
            p += 1
        elif b == 0x5C:
            q = p
            while q < n and d[q] == 0x5C and q - p < 3:
                q += 1
            if q < n and d[q] in b"nr":
                p = q + 1
            else:
                break
        else:
            break
    return p


def _end_marker(d: bytes, p: int) -> int | None:
    if not d.startswith(b"-----END", p):
        return None
    window = d[p : p + 80]
    close = window.find(b"-----", 8)
    if close < 0:
        return None
    label = window[8:close]
    plain = all(is_upper(b) or is_digit(b) or b == 0x20 for b in label)
    return p + close + 5 if plain and (label.endswith(b"KEY") or label.endswith(b"KEY BLOCK")) else None


def _header_line(d: bytes, p: int) -> tuple[int, bool] | None:
    if p >= len(d) or not (is_upper(d[p]) or is_lower(d[p])):
        return None
    name_len = next((k for k, b in enumerate(d[p : p + 48]) if not (is_alnum(b) or b == 0x2D)), None)
    if (
        name_len is None
        or d[p + name_len : p + name_len + 1] != b":"
        or d[p + name_len + 1 : p + name_len + 2] not in (b" ", b"\t")
    ):
        return None
    i = p + name_len + 1
    limit = min(len(d), p + 512)
    while i < limit and d[i] not in b'\n\r"' and not (d[i] == 0x5C and _escape_at(d, i)):
        i += 1
    return i, d[p : p + name_len] == b"Private-MAC"


_B64_RUN = re.compile(rb"[A-Za-z0-9+/=]*")


def key_block(d: bytes, body_at: int, putty: bool, memo: Memo) -> int:
    """extend.rs key_block."""
    limit = len(d)
    last = body_at
    headers_allowed = True
    passed: list[int] = []
    while True:
        if not headers_allowed and not putty:
            at = bisect.bisect_left(memo.block[0], last)
            if at < len(memo.block[0]) and memo.block[0][at] == last:
                last = memo.block[1]
                break
            passed.append(last)
        p = _skip_separators(d, last)
        if p >= limit:
            break
        end = _end_marker(d, p)
        if end is not None:
            if not putty:
                last = end
            break
        if headers_allowed:
            header = _header_line(d, p)
            if header is not None:
                last, mac = header
                if mac:
                    break
                continue
        run = _B64_RUN.match(d, p).end() - p  # type: ignore[union-attr]
        if run == 0:
            break
        padded = d[p] == 0x3D or d[p + run - 1] == 0x3D
        q = _skip_separators(d, p + run)
        before_end = _end_marker(d, q) is not None or (putty and _header_line(d, q) is not None)
        if run < 16 and not padded and not before_end:
            break
        last = p + run
        headers_allowed = putty
    if passed:
        memo.block = (passed, last)
    return last


def extend_run(d: bytes, end: int, stops: re.Pattern[bytes], memo: Memo) -> int:
    """extend.rs extend_run."""
    return memo.run.stop(d, end, stops)
