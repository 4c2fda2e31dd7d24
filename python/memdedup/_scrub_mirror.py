"""The pure-Python mirror of the credential detector (``rust/scrub``), for when the compiled core is
not there (``MEMDEDUP_IMPLEMENTATION=python``).

The same steps over the same catalogue (``data/secret_rules.toml``), on the same bytes (UTF-8; lone
surrogates as WTF-8), with Python's ``re`` in place of the ``regex`` crate: spans, rules and kinds are
the core's (``tests/test_scrub_parity.py``). Each function names the Rust function it mirrors; a change
to one is a change to both. The policy (placeholders, properties) is :mod:`memdedup.scrub`'s.
"""

from __future__ import annotations

import bisect
import functools
import math
import re
from collections import Counter
from collections.abc import Mapping

# The parser re compiles with: its widths are the byte lengths a bytes pattern can match.
from re import _parser as _sre_parse  # type: ignore[attr-defined]
from typing import Any, NamedTuple

# How every placeholder starts (scan.rs PLACEHOLDER).
PLACEHOLDER_PREFIX = "[REDACTED:"

_WS = b" \t\n\x0c\r"  # Rust's u8::is_ascii_whitespace (no vertical tab)
_MAX_CLAUSE_WORDS = 16
_MAX_RUN_BEFORE = 32
_PLACEHOLDER_BYTES = PLACEHOLDER_PREFIX.encode()
_SCHEMES = (b"bearer", b"basic", b"token", b"digest", b"ssws", b"apikey")
_CONTINUATION = bytes(range(0x80, 0xC0))
_NAMED_SETS = {
    "none": "",
    "word": "A-Za-z0-9_",
    "token": "A-Za-z0-9_-",
    "alnum": "A-Za-z0-9",
    "b64": "A-Za-z0-9+/=",
}


def _byte_set(spec: str) -> frozenset[int]:
    """catalogue.rs ByteSet::parse."""
    if spec.startswith("^") and len(spec) > 1:
        return frozenset(range(256)) - _byte_set(spec[1:])
    text = _NAMED_SETS.get(spec, spec).encode("ascii")
    out: set[int] = set()
    i = 0
    while i < len(text):
        if i + 2 < len(text) and text[i + 1] == 0x2D:
            out.update(range(text[i], text[i + 2] + 1))
            i += 3
        else:
            out.add(text[i])
            i += 1
    return frozenset(out)


def _isalnum(b: int) -> bool:
    return 0x30 <= b <= 0x39 or 0x41 <= b <= 0x5A or 0x61 <= b <= 0x7A


def _isdigit(b: int) -> bool:
    return 0x30 <= b <= 0x39


def _isupper(b: int) -> bool:
    return 0x41 <= b <= 0x5A


def _islower(b: int) -> bool:
    return 0x61 <= b <= 0x7A


def _ascii_lower(data: bytes) -> str:
    return data.decode("utf-8", "replace").translate(_LOWER)


_LOWER = {c: c + 32 for c in range(0x41, 0x5B)}


def _split_words(name: bytes) -> list[str]:
    """keys.rs split_words: ASCII alphanumeric runs, split at camelCase humps, lower-cased."""
    words: list[str] = []
    i, n = 0, len(name)
    while i < n:
        if not _isalnum(name[i]):
            i += 1
            continue
        start = i
        while i < n and _isalnum(name[i]):
            i += 1
        run = name[start:i]
        piece = 0
        for j in range(1, len(run)):
            prev, cur = run[j - 1], run[j]
            hump = ((_islower(prev) or _isdigit(prev)) and _isupper(cur)) or (
                _isupper(prev) and _isupper(cur) and j + 1 < len(run) and _islower(run[j + 1])
            )
            if hump:
                words.append(run[piece:j].decode("ascii").lower())
                piece = j
        words.append(run[piece:].decode("ascii").lower())
    return words


class _KeyPolicy:
    """keys.rs KeyPolicy."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.suffixes: list[str] = list(raw["suffixes"])
        self.final: dict[str, str] = {word: kind for kind, words in raw["final"].items() for word in words}
        self.after: dict[str, tuple[str, frozenset[str], dict[str, str], bool]] = {
            word: (
                entry["kind"],
                frozenset(entry["words"]),
                dict(entry.get("kinds", {})),
                entry.get("after_credential", False),
            )
            for word, entry in raw["after"].items()
        }
        self.not_after = {word: frozenset(words) for word, words in raw["not_after"].items()}
        self.compounds = {word: list(parts) for word, parts in raw["compounds"].items()}

    def words(self, name: bytes) -> list[str]:
        out: list[str] = []
        for word in _split_words(name):
            if word in self.compounds:
                out.extend(self.compounds[word])
                continue
            suffix = next((s for s in self.suffixes if len(word) > len(s) and word.endswith(s)), None)
            if suffix is None:
                out.append(word)
            else:
                out += [word[: -len(suffix)], suffix]
        return out

    def classify(self, name: bytes) -> str | None:
        return self._classify_cached(name)

    @functools.lru_cache(maxsize=4096)  # noqa: B019 - one policy per process; keys repeat in a text
    def _classify_cached(self, name: bytes) -> str | None:
        return self._classify(self.words(name))

    def _classify(self, words: list[str]) -> str | None:
        if not words:
            return None
        last = words[-1]
        prev = words[-2] if len(words) >= 2 else ""
        if prev in self.not_after.get(last, ()):
            return None
        if last in self.final:
            return self.final[last]
        if last not in self.after:
            return None
        kind, after_words, kinds, after_credential = self.after[last]
        if prev in after_words:
            return kinds.get(prev, kind)
        if after_credential and len(words) >= 3:
            return self._classify(words[:-1])
        return None


def digits_are_secret(kind: str) -> bool:
    return kind in ("PASSWORD", "PIN")


class _ValuePolicy:
    """keys.rs ValuePolicy. The ``*_at`` forms judge ``d[s:e]`` without copying it, and read a long value
    only as far as the judgement needs (a key nested in a long value is judged once per key)."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.placeholders = frozenset(raw["placeholders"])
        self.mask_chars = frozenset(raw["mask_chars"])
        self.mask_min_len: int = raw["mask_min_len"]
        self.max_kept_digits: int = raw["max_kept_digits"]
        self.template_prefixes: tuple[str, ...] = tuple(raw["template_prefixes"])
        self.prose_stopwords = frozenset(raw["prose_stopwords"])
        self.longest = max(len(w) for w in (*self.placeholders, *self.prose_stopwords))
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
        s, e = _strip(d, s, e)
        if e - s >= 2 and d[s] in b"\"'" and d[s] == d[e - 1]:
            s, e = _strip(d, s + 1, e - 1)
        if s >= e:
            return True
        if e - s <= _HEAD and _ascii_lower(d[s:e]) in self.placeholders:
            return True
        if _ascii_lower(d[s : min(e, s + _HEAD)]).startswith(self.template_prefixes):
            return True
        mask = self._mask.match(d, s, e)
        if mask is not None and mask.end() == e and len(d[s:e].decode()) >= self.mask_min_len:
            return True
        return _is_env_reference(d, s, e)

    def is_small_number_at(self, d: bytes, s: int, e: int) -> bool:
        s, e = _strip(d, s, e)
        dot = d.find(b".", s, min(e, s + self.max_kept_digits + 1))
        if dot < 0:
            return 0 < e - s <= self.max_kept_digits and d[s:e].isdigit()
        return (
            0 < dot - s <= self.max_kept_digits
            and d[s:dot].isdigit()
            and _DIGITS.fullmatch(d, dot + 1, e) is not None
        )

    def looks_generated(self, value: bytes) -> bool:
        return self.looks_generated_at(value, 0, len(value))

    def looks_generated_at(self, d: bytes, s: int, e: int) -> bool:
        s, e = _strip(d, s, e)
        if e - s >= 16:
            return True
        v = d[s:e]
        digit = any(_isdigit(b) for b in v)
        symbol = any(b in b"!@#$%^&*+/=~|\\?" for b in v)
        inner_upper = any(_isupper(b) for b in v[1:]) and any(_islower(b) for b in v)
        return (digit and len(v) >= 4) or symbol or inner_upper

    def kept(self, kind: str, value: bytes, quoted: bool) -> bool:
        return self.kept_at(kind, value, 0, len(value), quoted)

    def kept_at(self, kind: str, d: bytes, s: int, e: int, quoted: bool) -> bool:
        if self.is_placeholder_at(d, s, e):
            return True
        if not digits_are_secret(kind) and self.is_small_number_at(d, s, e):
            return True
        return not quoted and not digits_are_secret(kind) and not self.looks_generated_at(d, s, e)

    def is_prose_stopword(self, word: bytes) -> bool:
        w = word.strip(_WS)
        if w and w[-1] in b".,!?:;":
            w = w[:-1]
        if len(w) > self.longest:
            return False
        lower = _ascii_lower(w)
        return lower in self.prose_stopwords or lower in self.placeholders


_HEAD = 32
_DIGITS = re.compile(rb"[0-9]+")


def _strip(d: bytes, s: int, e: int) -> tuple[int, int]:
    """``d[s:e].strip(_WS)`` as indices."""
    while s < e and d[s] in _WS:
        s += 1
    while e > s and d[e - 1] in _WS:
        e -= 1
    return s, e


_IDENT = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


def _is_env_reference(d: bytes, s: int, e: int) -> bool:
    if s < e and d[s] == 0x24:
        return _IDENT.fullmatch(d, s + 1, e) is not None
    if e - s >= 2 and d[s] == d[e - 1] == 0x25:
        return _IDENT.fullmatch(d, s + 1, e - 1) is not None
    return False


# extend.rs ------------------------------------------------------------------------------------------
def _escape_at(d: bytes, i: int) -> bool:
    j = i
    while j < len(d) and d[j] == 0x5C and j - i < 3:
        j += 1
    return j > i and j < len(d) and d[j] in b'nrt"'


def _token_stop(b: int) -> bool:
    return b in _WS or b in b"\"'`,;)]}>"


def _clause_stop(b: int) -> bool:
    return b in b"\n\r\"'`,;"


def _ends_token(d: bytes, i: int, query: bool) -> bool:
    b = d[i]
    return _token_stop(b) or (query and b in b"&#") or (b == 0x5C and _escape_at(d, i))


def _ends_word(d: bytes, i: int, query: bool) -> bool:
    b = d[i]
    return b in _WS or _clause_stop(b) or (query and b in b"&#") or (b == 0x5C and _escape_at(d, i))


# The first byte at or after a position that ends a token, a word, a run of blanks, or an escaped
# string (extend.rs ends_token, ends_word, the blank gap, the \\" read): position-only tests.
_ESCAPE = rb"|\\(?=\\{0,2}[nrt\"])"
_TOKEN_STOP = (
    re.compile(rb"[ \t\n\x0c\r\"'`,;)\]}>]" + _ESCAPE),
    re.compile(rb"[ \t\n\x0c\r\"'`,;)\]}>&#]" + _ESCAPE),
)
_WORD_STOP = (
    re.compile(rb"[ \t\n\x0c\r\"'`,;]" + _ESCAPE),
    re.compile(rb"[ \t\n\x0c\r\"'`,;&#]" + _ESCAPE),
)
_NOT_BLANK = re.compile(rb"[^ \t]")
_BLANK = re.compile(rb"[ \t]")
_ESCAPED_END = {q: re.compile(rb"\\(?=" + re.escape(bytes([q])) + rb")|\n") for q in b"\"'"}
_LOOKAHEAD = 4  # the most bytes past a position the stop patterns look at


class _Stretch:
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


class _Memo:
    """extend.rs Memo: what one rule's scan remembers between its reads."""

    def __init__(self) -> None:
        self.token = (_Stretch(), _Stretch())
        self.word = (_Stretch(), _Stretch())
        self.blanks = _Stretch()
        self.escaped = {q: _Stretch() for q in b"\"'"}
        self.run = _Stretch()
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


class _Value(NamedTuple):
    """extend.rs Value."""

    start: int
    end: int
    quoted: bool
    first_end: int
    clause: bool
    query: bool
    capped: bool = False


class _Cover(NamedTuple):
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


def _read_value(d: bytes, pos: int, clause: bool, query: bool, memo: _Memo) -> _Value | None:
    """extend.rs read_value."""
    n = len(d)
    if pos >= n:
        return None
    if d[pos] == 0x5C and pos + 1 < n and d[pos + 1] in b"\"'":
        quote = d[pos + 1]
        start = pos + 2
        end = memo.escaped[quote].stop(d, start, _ESCAPED_END[quote])
        return _Value(start, end, True, end, clause, query) if end > start else None
    if d[pos] in b"\"'`":
        quote = d[pos]
        start = i = pos + 1
        while i < n and d[i] != quote and d[i] != 0x0A:
            i += 2 if d[i] == 0x5C and i + 1 < n else 1
        end = min(i, n)
        return _Value(start, end, True, end, clause, query) if end > start else None
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
        end = first_end = max(floor, pos)
    else:
        end, first, capped = _clause(d, pos, query, memo, _MAX_CLAUSE_WORDS)
        first_end = min(end if first is None else first, end)
    return _Value(pos, end, False, first_end, clause, query, capped) if end > pos else None


def _clause(d: bytes, pos: int, query: bool, memo: _Memo, max_words: int) -> tuple[int, int | None, bool]:
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
        if d[i - 1] in b".!?" and (i >= n or d[i] in _WS):
            end = i - 1 if d[i - 1] == 0x2E else i
            break
        end = i
        if not at_gap:
            break
        i = memo.blanks.stop(d, i, _NOT_BLANK)
    return end, first, False


def _whole_clause(d: bytes, value: _Value, memo: _Memo) -> _Value:
    """extend.rs whole_clause."""
    if not value.capped:
        return value
    return value._replace(end=_clause(d, value.start, value.query, memo, 1 << 62)[0], capped=False)


def _key_byte(b: int) -> bool:
    return _isalnum(b) or b in b"_.-"


def _in_placeholder(d: bytes, at: int) -> bool:
    """extend.rs in_placeholder."""
    return at > 0 and d[at - 1] == 0x3A and d.endswith(_PLACEHOLDER_BYTES, 0, at)


def _key_phrase_start(d: bytes, key_start: int) -> int:
    """extend.rs key_phrase_start."""

    def word_byte(b: int) -> bool:
        return _isalnum(b) or b in b"_-"

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


def _key_span(d: bytes, ms: int) -> tuple[int, int]:
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
        return hi <= end and all(b in _HEX for b in d[lo:hi])

    before = d[start - 1] if start > 0 else -1
    at = d[start] if start < len(d) else -1
    skip = 0
    if before == 0x5C and at in _LETTER_ESCAPES:
        skip = 1
    elif before == 0x5C and at == 0x75 and hexes(start + 1, start + 5):
        skip = 5
    elif before == 0x5C and at == 0x78 and hexes(start + 1, start + 3):
        skip = 3
    elif before == 0x25 and at >= 0 and hexes(start, start + 2):
        skip = 2
    return start + skip if start + skip < end else start


def _assignment(
    d: bytes,
    key: tuple[int, int],
    me: int,
    flag: bool,
    policy: tuple[_KeyPolicy, _ValuePolicy],
    memo: _Memo,
    cover: _Cover | None,
) -> tuple[_Value, str] | None:
    """extend.rs assignment."""
    keys, values = policy
    if (not flag and key[0] > 0 and _key_byte(byte_before(d, key[0]))) or _in_placeholder(d, key[0]):
        return None
    value_at = me
    colon = False
    if not flag:
        sep, nxt = d[me - 1], d[me] if me < len(d) else -1
        if (sep == 0x3D and nxt in (0x3D, 0x7E)) or (sep == 0x3A and nxt == 0x3A):
            return None
        if (sep == 0x3D and nxt == 0x3E) or (sep == 0x3A and nxt == 0x3D):
            value_at += 1
        else:
            colon = sep == 0x3A
        blanks = 0
        while blanks < 8 and value_at + blanks < len(d) and d[value_at + blanks] in b" \t":
            blanks += 1
        value_at += blanks
    query = key[0] > 0 and d[key[0] - 1] in b"?&"
    may_be_clause = colon and d[key[0]] != 0x2D
    unquoted = not _opens_quote(d, value_at)
    if (
        cover is not None
        and cover.holds(value_at, unquoted, False, query)
        and (not may_be_clause or cover.holds(value_at, unquoted, True, query))
    ):
        return None
    kind = keys.classify(d[_key_phrase_start(d, key[0]) : key[1]])
    if kind is None:
        return None
    clause = kind == "PASSWORD" and may_be_clause
    if cover is not None and cover.holds(value_at, unquoted, clause, query):
        return None
    value = _read_value(d, value_at, clause, query, memo)
    if value is None:
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
    if values.kept_at(kind, d, start, end, value.quoted or query):
        return None
    if clause and not value.quoted and values.is_placeholder_at(d, start, value.first_end):
        return None
    return _whole_clause(d, value, memo), kind


def _prose_key(d: bytes, ms: int) -> tuple[int, int]:
    """extend.rs prose_key."""
    start, end = _key_span(d, ms)
    if end < len(d) and d[end] in b" \t":
        s2, e2 = _key_span(d, end + 1)
        if s2 == end + 1 and d[s2:e2].lower() in (b"key", b"token", b"secret"):
            end = e2
    return start, end


def _looks_like_token(d: bytes, s: int, e: int) -> bool:
    """extend.rs looks_like_token."""
    if e - s >= 20:
        return True
    v = d[s:e]
    return len(v) >= 12 and any(_isupper(b) or _islower(b) for b in v) and any(_isdigit(b) for b in v)


def _word_at(d: bytes, start: int, end: int, cap: int) -> bytes | None:
    """extend.rs word_at, over ``d[start:end]``."""
    while start < end and d[start] in b" \t":
        start += 1
    if start >= end:
        return None
    stop = min(end, start + cap)
    m = _BLANK.search(d, start, stop)
    return d[start : stop if m is None else m.start()]


def _prose(
    d: bytes,
    ms: int,
    value_at: int,
    policy: tuple[_KeyPolicy, _ValuePolicy],
    memo: _Memo,
    cover: _Cover | None,
) -> tuple[_Value, str] | None:
    """extend.rs prose."""
    keys, values = policy
    key = _prose_key(d, ms)
    before = byte_before(d, key[0]) if key[0] > 0 else 0x20
    if (key[0] > 0 and (_isalnum(before) or before == 0x5F)) or _in_placeholder(d, key[0]):
        return None
    kind = keys.classify(d[key[0] : key[1]])
    if kind is None:
        return None
    clause = d[key[0] : key[1]].lower().startswith(b"passphrase")
    if cover is not None and cover.holds(value_at, not _opens_quote(d, value_at), clause, False):
        return None
    value = _read_value(d, value_at, clause, False, memo)
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
    plain = all(_isupper(b) or _isdigit(b) or b == 0x20 for b in label)
    return p + close + 5 if plain and (label.endswith(b"KEY") or label.endswith(b"KEY BLOCK")) else None


def _header_line(d: bytes, p: int) -> tuple[int, bool] | None:
    if p >= len(d) or not (_isupper(d[p]) or _islower(d[p])):
        return None
    name_len = next((k for k, b in enumerate(d[p : p + 48]) if not (_isalnum(b) or b == 0x2D)), None)
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


def _key_block(d: bytes, body_at: int, putty: bool, memo: _Memo) -> int:
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


def _run_pattern(run: frozenset[int], inner: frozenset[int]) -> re.Pattern[bytes]:
    """The first byte at or after a position that does not continue a run (extend.rs extend_run)."""
    r, i = _byte_class(run), _byte_class(inner)
    return re.compile(rb"(?:(?!" + r + rb")(?!(?<=" + r + rb")" + i + rb"(?=" + r + rb"))[\x00-\xff])")


def _byte_class(bytes_: frozenset[int]) -> bytes:
    return b"[" + b"".join(re.escape(bytes([b])) for b in sorted(bytes_)) + b"]" if bytes_ else b"(?!)"


def _extend_run(d: bytes, end: int, stops: re.Pattern[bytes], memo: _Memo) -> int:
    """extend.rs extend_run."""
    return memo.run.stop(d, end, stops)


_HEX = frozenset(b"0123456789abcdefABCDEF")
_LETTER_ESCAPES = frozenset(b"nrtbfv")


def _hex_value(digits: bytes) -> int | None:
    return int(digits, 16) if digits and all(b in _HEX for b in digits) else None


def byte_before(d: bytes, at: int) -> int:
    """scan.rs byte_before: the byte right before ``at``, an escape ending there read as what it encodes."""
    if at >= 6 and d[at - 6] == 0x5C and d[at - 5] == 0x75:
        cp = _hex_value(d[at - 4 : at])
        if cp is not None:
            return cp if cp < 0x80 else 0x80
    if at >= 4 and d[at - 4] == 0x5C and d[at - 3] == 0x78:
        byte = _hex_value(d[at - 2 : at])
        if byte is not None:
            return byte
    if at >= 3 and d[at - 3] == 0x25:
        byte = _hex_value(d[at - 2 : at])
        if byte is not None:
            return byte
    last = d[at - 1]
    if at >= 2 and d[at - 2] == 0x5C and last in _LETTER_ESCAPES:
        return 0x0A
    return last


def _has_public_prefix(secret: bytes, prefixes: tuple[bytes, ...]) -> bool:
    """scan.rs has_public_prefix."""
    return any(
        len(secret) > len(p) and secret[: len(p)].lower() == p and secret[len(p)] in b"_-." for p in prefixes
    )


RANDOM_PREFIX = (2, 16)
RANDOM_MIN_MIXED = 20
RANDOM_MIN_ONE_CASE = 32


def _class(b: int) -> int:
    return 0 if _isupper(b) else 1 if _islower(b) else 2 if _isdigit(b) else 3


def random_body(secret: bytes) -> bool:
    """scan.rs random_body: the part after the first ``_`` or ``-`` looks random, not like words."""
    seps = [i for i in (secret.find(b"_"), secret.find(b"-")) if i >= 0]
    if not seps or not RANDOM_PREFIX[0] <= min(seps) <= RANDOM_PREFIX[1]:
        return False
    body = secret[min(seps) + 1 :]
    counts = [0, 0, 0, 0]
    pairs = changes = 0
    prev = 3
    run_start, longest = 0, (0, 0)
    for i, b in enumerate(body):
        c = _class(b)
        counts[c] += 1
        if c != 3 and prev != 3:
            pairs += 1
            changes += c != prev
        if c == 3:
            run_start = i + 1
        elif i + 1 - run_start > longest[1] - longest[0]:
            longest = (run_start, i + 1)
        prev = c
    upper, lower, digits, _other = counts
    if digits == 0 or upper + lower == 0:
        return False
    if upper and lower:
        return len(body) >= RANDOM_MIN_MIXED and 10 * changes >= 3 * pairs
    run = body[longest[0] : longest[1]]
    return (
        len(run) >= RANDOM_MIN_ONE_CASE
        and any(_isdigit(b) for b in run)
        and any(_isupper(b) or _islower(b) for b in run)
        and _entropy(run) > 4.0
    )


def _entropy(data: bytes) -> float:
    """scan.rs entropy: the same operations in the same order, so the same float."""
    counts = [0] * 256
    for b in data:
        counts[b] += 1
    return _entropy_of(counts, len(data))


def _entropy_of(counts: list[int], length: int) -> float:
    """scan.rs entropy_of."""
    if not length:
        return 0.0
    n = float(length)
    total = 0.0
    for c in counts:
        if c > 0:
            p = c / n
            total += -p * math.log2(p)
    return total


class _PyRule(NamedTuple):
    id: str
    kind: str | None
    keywords: tuple[bytes, ...]
    regex: re.Pattern[bytes]
    secret_groups: tuple[int, ...]
    boundary: frozenset[int]
    before: frozenset[int]
    entropy: float | None
    digits: bool
    placeholder: bool
    generated: bool
    mixed: bool
    run: re.Pattern[bytes] | None
    run_before: frozenset[int] | None
    tail: tuple[frozenset[int], ...]
    extend: str | None
    near: tuple[re.Pattern[bytes], int, int] | None
    line_context: tuple[bytes, ...]
    check: str | None
    public_prefixes: tuple[bytes, ...]
    pii: bool


def _max_width(pattern: re.Pattern[bytes]) -> int:
    """The longest match a pattern describes (regex-syntax's maximum_len for these patterns)."""
    return int(_sre_parse.parse(pattern.pattern, pattern.flags).getwidth()[1])


# The assignment pattern starts with a run of key bytes; the core refuses a match whose key starts inside
# a longer run (extend.rs assignment), and every such match ends inside the key's own separator, so
# saying it in the pattern finds the same values. Python's backtracking needs it said: without it,
# each position of a long run of key bytes costs ~100 steps (4.7 s for 256 KB of "key=AAAA...").
_KEY_START = rb"(?<![A-Za-z0-9_.\-])"


def _compile(rule: Mapping[str, Any]) -> _PyRule:
    pattern = rule["pattern"].encode("ascii")
    regex = re.compile(_KEY_START + pattern if rule.get("extend") == "assignment" else pattern)
    secret_groups = tuple(sorted(i for name, i in regex.groupindex.items() if name.startswith("secret")))
    run = (
        _run_pattern(_byte_set(rule["run"]), _byte_set(rule.get("run_inner", "none")))
        if "run" in rule
        else None
    )
    near = None
    if "near" in rule:
        near_re = re.compile(rule["near"].encode("ascii"))
        near = (near_re, int(rule["near_within"]), _max_width(near_re))
    return _PyRule(
        id=rule["id"],
        kind=None if rule["kind"] == "BY_KEY" else rule["kind"],
        keywords=tuple(k.encode("ascii") for k in rule.get("keywords", [])),
        regex=regex,
        secret_groups=secret_groups,
        boundary=_byte_set(rule.get("boundary", "word")),
        before=_byte_set(rule.get("before", rule.get("boundary", "word"))),
        entropy=rule.get("entropy"),
        digits=rule.get("digits", False),
        placeholder=rule.get("placeholder", False),
        generated=rule.get("generated", False),
        mixed=rule.get("mixed", False),
        run=run,
        run_before=_byte_set(rule["run_before"]) if "run_before" in rule else None,
        tail=tuple(_byte_set(t) for t in rule.get("tail", [])),
        extend=rule.get("extend"),
        near=near,
        line_context=tuple(w.encode("ascii") for w in rule.get("line_context", [])),
        check=rule.get("check"),
        public_prefixes=tuple(p.encode("ascii") for p in rule.get("public_prefixes", [])),
        pii=rule.get("pii", False),
    )


_LINE_CONTEXT = 512
_PLACEHOLDER_RE = re.compile(re.escape(_PLACEHOLDER_BYTES))


def _inside_placeholder(d: bytes, at: int, placeholders: list[int]) -> bool:
    """scan.rs inside_placeholder."""
    i = bisect.bisect_left(placeholders, max(0, at - len(_PLACEHOLDER_BYTES) - 48))
    while i < len(placeholders) and placeholders[i] < at:
        if b"]" not in d[placeholders[i] + 1 : at]:
            return True
        i += 1
    return False


def _tail(rule: _PyRule, d: bytes, start: int, end: int, group: int, placeholders: list[int]) -> int:
    """scan.rs tail."""
    if not rule.tail:
        return end
    tail = rule.tail[min(group, len(rule.tail) - 1)]
    begin = end
    while end < len(d) and d[end] in tail:
        end += 1
    i = bisect.bisect_left(placeholders, max(begin, start))
    return placeholders[i] if i < len(placeholders) and placeholders[i] < end else end


def _one_word(d: bytes, value: _Value, start: int, end: int) -> _Cover | None:
    """scan.rs one_word."""
    if value.quoted:
        words = b" " not in d[start:end] and b"\t" not in d[start:end] and d[end : end + 2] != b"\\'"
    else:
        words = end <= value.first_end
    return _Cover(start, end, value.quoted, value.clause, value.query) if words else None


def _on_line_after(d: bytes, at: int, words: tuple[bytes, ...]) -> bool:
    """scan.rs on_line_after."""
    start = max(0, at - _LINE_CONTEXT)
    line_start = max(d.rfind(b"\n", start, at), d.rfind(b"\r", start, at)) + 1
    window = d[max(start, line_start) : at].lower()
    return any(w in window for w in words)


def _merge(found: list[tuple[int, int, int, str]]) -> list[tuple[int, int, int, str]]:
    """scan.rs merge: overlaps become their union, named by the member of the first rule."""
    found.sort(key=lambda f: (f[0], -f[1], f[2]))
    out: list[list[Any]] = []
    for start, end, rule, kind in found:
        if out and start < out[-1][1]:
            last = out[-1]
            last[1] = max(last[1], end)
            if rule < last[2]:
                last[2], last[3] = rule, kind
        else:
            out.append([start, end, rule, kind])
    return [(s, e, r, k) for s, e, r, k in out]


def to_code_points(data: bytes, found: list[tuple[int, int, int, str]]) -> list[tuple[int, int, int, str]]:
    """scan.rs Detector::to_code_points."""
    if data.isascii():
        return found
    out = []
    byte = cp = 0
    for start, end, rule, kind in found:
        cp += len(data[byte:start].translate(None, _CONTINUATION))
        start_cp = cp - 1 if start < len(data) and 0x80 <= data[start] < 0xC0 else cp
        cp += len(data[start:end].translate(None, _CONTINUATION))
        byte = end
        out.append((start_cp, cp, rule, kind))
    return out


class PyDetector:
    """The pure-Python mirror of rust/scrub's Detector (scan.rs)."""

    def __init__(self, catalogue: Mapping[str, Any]) -> None:
        self.rules = [_compile(rule) for rule in catalogue["rules"]]
        self.keys = _KeyPolicy(catalogue["keys"])
        self.values = _ValuePolicy(catalogue["values"])

    def scan(self, data: bytes, pii: bool) -> list[tuple[int, int, int, str]]:
        lowered = data.lower()
        placeholders = [m.start() for m in _PLACEHOLDER_RE.finditer(data)]
        found: list[tuple[int, int, int, str]] = []
        for index, rule in enumerate(self.rules):
            if rule.pii and not pii:
                continue
            if rule.keywords and not any(k in lowered for k in rule.keywords):
                continue
            self._scan_rule(index, rule, data, placeholders, found)
        return _merge(found)

    def _scan_rule(
        self,
        index: int,
        rule: _PyRule,
        d: bytes,
        placeholders: list[int],
        out: list[tuple[int, int, int, str]],
    ) -> None:
        """scan.rs scan_rule."""
        memo = _Memo()
        cover: _Cover | None = None
        at = 0
        while at <= len(d):
            m = rule.regex.search(d, at)
            if m is None:
                break
            ms, me = m.span()
            secret, group = next(
                (((m.start(g), m.end(g)), k) for k, g in enumerate(rule.secret_groups) if m.start(g) >= 0),
                ((ms, me), 0),
            )
            ctx = (placeholders, memo, cover)
            verdict = self._judge(rule, d, ms, me, secret, group, ctx)
            if verdict is not None:
                start, end, kind, value = verdict
                out.append((start, end, index, kind or rule.kind or "SECRET"))
                new_cover = None if value is None else _one_word(d, value, start, end)
                if new_cover is not None:
                    cover = new_cover
                    at = start
                else:
                    at = max(end, me)
            else:
                at = secret[0] if secret[0] > ms else me
            at = max(at, ms + 1)

    def _judge(
        self,
        rule: _PyRule,
        d: bytes,
        ms: int,
        me: int,
        secret: tuple[int, int],
        group: int,
        ctx: tuple[list[int], _Memo, _Cover | None],
    ) -> tuple[int, int, str | None, _Value | None] | None:
        """scan.rs judge."""
        placeholders, memo, cover = ctx
        if _inside_placeholder(d, ms, placeholders):
            return None
        if rule.line_context and not _on_line_after(d, ms, rule.line_context):
            return None
        start, end = secret
        kind = None
        value = None
        policy = (self.keys, self.values)
        if rule.extend in ("assignment", "flag"):
            found = _assignment(d, _key_span(d, ms), me, rule.extend == "flag", policy, memo, cover)
            if found is None:
                return None
            value, kind = found
            start, end = value.start, value.end
        elif rule.extend == "prose":
            found = _prose(d, ms, me, policy, memo, cover)
            if found is None:
                return None
            value, kind = found
            start, end = value.start, value.end
        elif rule.extend == "pem_block":
            body_at = me if d.startswith(b"-----BEGIN", ms) else start
            if (start > 0 and byte_before(d, start) in rule.before) or _inside_placeholder(
                d, start, placeholders
            ):
                return None
            end = _key_block(d, body_at, False, memo)
        elif rule.extend == "putty_block":
            end = _key_block(d, start, True, memo)
        if rule.near is None:
            span = self._check(rule, d, start, end, placeholders, memo)
            return (
                None if span is None else (span[0], _tail(rule, d, *span, group, placeholders), kind, value)
            )
        near, within, width = rule.near
        limit = min(len(d), me + within + width)
        pos = me
        while (m := near.search(d, pos, limit)) is not None:
            gap = d[me : m.start()]
            if m.start() > me + within or b"\n" in gap or b"\r" in gap or _PLACEHOLDER_BYTES in gap:
                break
            span = self._check(rule, d, m.start(), m.end(), placeholders, memo)
            if span is not None:
                return (span[0], _tail(rule, d, *span, 0, placeholders), kind, value)
            pos = max(m.end(), m.start() + 1)
        return None

    def _check(
        self, rule: _PyRule, d: bytes, start: int, end: int, placeholders: list[int], memo: _Memo
    ) -> tuple[int, int] | None:
        """scan.rs check."""
        if rule.run is not None:
            end = _extend_run(d, end, rule.run, memo)
        if rule.run_before is not None:
            floor = max(0, start - _MAX_RUN_BEFORE)
            while start > floor and d[start - 1] in rule.run_before:
                start -= 1
        i = bisect.bisect_left(placeholders, start)
        if i < len(placeholders) and placeholders[i] + len(_PLACEHOLDER_BYTES) <= end:
            end = placeholders[i]
        if _inside_placeholder(d, start, placeholders):
            return None
        if end <= start:
            return None
        if (start > 0 and byte_before(d, start) in rule.before) or (end < len(d) and d[end] in rule.boundary):
            return None
        counts = memo.counts(d, start, end) if rule.digits or rule.mixed or rule.entropy is not None else None

        def has(lo: int, hi: int) -> bool:
            return counts is not None and any(counts[lo : hi + 1])

        if rule.digits and not has(0x30, 0x39):
            return None
        if rule.check == "random_body" and not random_body(d[start:end]):
            return None
        if (
            rule.entropy is not None
            and counts is not None
            and _entropy_of(counts, end - start) < rule.entropy
        ):
            return None
        if rule.placeholder and self.values.is_placeholder_at(d, start, end):
            return None
        if rule.generated and not self.values.looks_generated_at(d, start, end):
            return None
        if rule.mixed and not (has(0x41, 0x5A) and has(0x61, 0x7A) and has(0x30, 0x39)):
            return None
        if _has_public_prefix(d[start : min(end, start + 64)], rule.public_prefixes):
            return None
        if rule.check == "url_password":
            value = d[start:end]
            digits = len(value) - len(value.lstrip(b"0123456789"))
            if 1 <= digits <= 5 and value[digits : digits + 1] == b"/":
                return None
        return start, end
