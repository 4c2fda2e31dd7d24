"""The mirror of ``rust/scrub/shapes.rs``: credentials in markup's shapes (an XML element named like a
credential, a name/value pair, a Kubernetes Secret's ``data:`` block)."""

from __future__ import annotations

from memdedup._scrub_py._bytes import WS, is_alnum, is_alpha
from memdedup._scrub_py.extend import Memo, Value, read_value
from memdedup._scrub_py.keys import KeyPolicy
from memdedup._scrub_py.values import ValuePolicy

_BLOCK_INDICATORS = (b"|", b">", b"|-", b">-", b"|+", b">+")


def _keeps(values: ValuePolicy, kind: str, weak: bool, d: bytes, s: int, e: int, quoted: bool) -> bool:
    """shapes.rs keeps."""
    if weak:
        return not values.looks_random_at(d, s, e)
    return values.kept_at(kind, d, s, e, quoted)


def element(d: bytes, ms: int, me: int, policy: tuple[KeyPolicy, ValuePolicy]) -> tuple[Value, str] | None:
    """shapes.rs element."""
    keys, values = policy
    tag = d[ms + 1 : me - 1]
    name = tag.rsplit(b":", 1)[-1]
    text = _text_of(d, me)
    if text is None:
        return None
    start, end = text
    if name.lower() == b"key":
        hit = keys.classify_key(d[start:end])
        gt = d.find(b">", end)
        if hit is None or gt < 0:
            return None
        nxt = _skip_blanks(d, gt + 1)
        if not d.startswith(b"<string>", nxt):
            return None
        text = _text_of(d, nxt + len(b"<string>"))
        if text is None:
            return None
        start, end = text
    else:
        hit = keys.classify_key(name)
        if hit is None:
            return None
    kind, weak = hit
    if _keeps(values, kind, weak, d, start, end, True):
        return None
    return Value(start, end, True, end, False, False), kind


def _skip_blanks(d: bytes, at: int) -> int:
    while at < len(d) and d[at] in WS:
        at += 1
    return at


def _text_of(d: bytes, me: int) -> tuple[int, int] | None:
    """shapes.rs text_of."""
    start = _skip_blanks(d, me)
    close = d.find(b"<", start)
    if close < 0 or d[close + 1 : close + 2] != b"/":
        return None
    end = close
    while end > start and d[end - 1] in WS:
        end -= 1
    return (start, end) if end > start else None


def pair_name_before(d: bytes, at: int) -> tuple[int, int] | None:
    """shapes.rs pair_name_before: the name of a name/value pair, read back from its value keyword."""
    i = at

    def quote(i: int) -> int:
        if i > 0 and d[i - 1] in b"\"'":
            i -= 1
            if i > 0 and d[i - 1] == 0x5C:
                i -= 1
        return i

    def blanks(i: int, most: int) -> int:
        n = 0
        while i > 0 and n < most and d[i - 1] in b" \t":
            i -= 1
            n += 1
        return i

    i = quote(i)
    before_blanks = i
    i = blanks(i, 8)
    separators = before_blanks - i
    if i > 0 and d[i - 1] == 0x2D:
        i -= 1
        separators = 0
    while i > 0 and separators < 64:
        if d[i - 1] in b" \t\r\n":
            i -= 1
        elif i >= 2 and d[i - 2] == 0x5C and d[i - 1] in b"nrt":
            i -= 2
        else:
            break
        separators += 1
    if separators == 0:
        return None
    if i > 0 and d[i - 1] == 0x2C:
        i -= 1
    i = quote(blanks(i, 4))
    name_end = i
    while i > 0 and name_end - i < 96 and (is_alnum(d[i - 1]) or d[i - 1] in b"_.-"):
        i -= 1
    if i == name_end:
        return None
    name_start = i
    i = blanks(quote(i), 4)
    if i == 0 or d[i - 1] not in b":=":
        return None
    i = quote(blanks(i - 1, 4))
    word_end = i
    while i > 0 and word_end - i < 9 and is_alpha(d[i - 1]):
        i -= 1
    word = d[i:word_end].lower()
    named = word in (b"key", b"name", b"id", b"param", b"property", b"variable", b"var", b"setting")
    whole = i == 0 or not (is_alnum(d[i - 1]) or d[i - 1] == 0x5F)
    return (name_start, name_end) if named and whole else None


def attribute(
    d: bytes,
    ms: int,
    me: int,
    policy: tuple[KeyPolicy, ValuePolicy],
    memo: Memo,
) -> tuple[Value, str] | None:
    """shapes.rs attribute."""
    keys, values = policy
    name = pair_name_before(d, ms)
    if name is None:
        return None
    hit = keys.classify_key(d[name[0] : name[1]])
    if hit is None:
        return None
    kind, weak = hit
    value = read_value(d, me, False, False, memo)
    if value is None or _keeps(values, kind, weak, d, value.start, value.end, value.quoted):
        return None
    return value, kind


def _indent(d: bytes, line: int) -> int:
    i = line
    while i < len(d) and d[i] in b" \t":
        i += 1
    return i - line


def secret_data(d: bytes, header: int, start: int) -> tuple[list[tuple[int, int]], int]:
    """shapes.rs secret_data."""
    out: list[tuple[int, int]] = []
    line = start
    n = len(d)
    scalar: int | None = None
    while line < n:
        eol = d.find(b"\n", line)
        if eol < 0:
            eol = n
        blanks = _indent(d, line)
        content = line + blanks
        end = eol
        while end > content and d[end - 1] in WS:
            end -= 1
        if end <= content or d[content] == 0x23:
            line = eol + 1
            continue
        if blanks <= header:
            return out, line
        if scalar is not None:
            if blanks > scalar:
                out.append((content, end))
                line = eol + 1
                continue
            scalar = None
        colon = d.find(b":", content, end)
        if colon >= 0:
            begin = colon + 1
            while begin < end and d[begin] in b" \t":
                begin += 1
            stop = end
            if stop > begin + 1 and d[begin] in b"\"'" and d[stop - 1] == d[begin]:
                begin += 1
                stop -= 1
            if d[begin:stop] in _BLOCK_INDICATORS:
                scalar = blanks
            elif stop > begin:
                out.append((begin, stop))
        line = eol + 1
    return out, n
