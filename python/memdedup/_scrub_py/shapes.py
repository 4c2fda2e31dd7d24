"""The mirror of ``rust/scrub/shapes.rs``: credentials in markup's shapes (an XML element named like a
credential, a name/value pair, a Kubernetes Secret's ``data:`` block)."""

from __future__ import annotations

from memdedup._scrub_py._bytes import WS, is_alnum
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


def attribute(
    d: bytes,
    ms: int,
    key: tuple[int, int],
    me: int,
    policy: tuple[KeyPolicy, ValuePolicy],
    memo: Memo,
) -> tuple[Value, str] | None:
    """shapes.rs attribute."""
    keys, values = policy
    if ms > 0 and (is_alnum(d[ms - 1]) or d[ms - 1] == 0x5F):
        return None
    hit = keys.classify_key(d[key[0] : key[1]])
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
