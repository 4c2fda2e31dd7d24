"""The mirror of ``rust/scrub/memory.rs``: which values a store may remember (:func:`secret_bits`) and
the spans of a text a remembered value could occupy (:func:`secret_spans`)."""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Sequence

from memdedup._scrub_py._bytes import CONTINUATION, is_digit, is_lower, is_upper

MEMORY_MIN_LEN = 12
MEMORY_MAX_LEN = 512
MEMORY_MIN_LETTERS = 4

_LOG2_10 = 3.321_928_094_887_362
_LOG2_26 = 4.700_439_718_141_092
_LOG2_52 = 5.700_439_718_141_092
_WORD_BITS = 13.0
_SEPARATOR_BITS = 1.0
_SYMBOL_BITS = 4.0
_NOT_TOKEN = frozenset(b"\"'`()[]{}<>,;\\|&?")
_TOKEN = frozenset(b for b in range(0x21, 0x7F) if b not in _NOT_TOKEN)
_VOWELS = frozenset(b"aeiouyAEIOUY")
# c * log2(c) for every count a remembered value's byte can have (memory.rs clog_table).
_CLOG = [0.0] + [float(c) * math.log2(float(c)) for c in range(1, MEMORY_MAX_LEN + 1)]
_RUN = re.compile(b"[" + b"".join(re.escape(bytes([b])) for b in sorted(_TOKEN)) + b"]+")


def _is_letter(b: int) -> bool:
    return is_upper(b) or is_lower(b)


def _word_like(run: bytes) -> bool:
    """memory.rs word_like."""
    if len(run) < 3:
        return False
    lower_tail = all(is_lower(b) for b in run[1:])
    upper = all(is_upper(b) for b in run)
    if not (lower_tail or upper) or not any(b in _VOWELS for b in run):
        return False
    cluster = longest = 0
    for b in run:
        cluster = 0 if b in _VOWELS else cluster + 1
        longest = max(longest, cluster)
    return longest <= 3


def secret_bits(v: bytes) -> float:
    """memory.rs secret_bits: the same sums in the same order, so the same float."""
    if (
        len(v) < MEMORY_MIN_LEN
        or len(v) > MEMORY_MAX_LEN
        or any(b not in _TOKEN for b in v)
        or v[-1] in b".:!"
        or sum(1 for b in v if _is_letter(b)) < MEMORY_MIN_LETTERS
    ):
        return 0.0
    structured = 0.0
    i = 0
    n = len(v)
    while i < n:
        b = v[i]
        if _is_letter(b):
            start = i
            while i < n and _is_letter(v[i]):
                i += 1
            run = v[start:i]
            mixed = any(is_upper(c) for c in run) and any(is_lower(c) for c in run)
            random = float(len(run)) * (_LOG2_52 if mixed else _LOG2_26)
            structured += min(random, _WORD_BITS) if _word_like(run) else random
        elif is_digit(b):
            start = i
            while i < n and is_digit(v[i]):
                i += 1
            structured += float(i - start) * _LOG2_10
        else:
            structured += _SEPARATOR_BITS if b in b"-_." else _SYMBOL_BITS
            i += 1
    counts = [0] * 128
    for b in v:
        counts[b] += 1
    total = 0.0
    for c in counts:
        if c > 0:
            total += _CLOG[c]
    return min(structured, _CLOG[n] - total)


def pack_shapes(shapes: Sequence[tuple[int, float]]) -> bytes:
    """``(length, bits)`` pairs as the core's ``secret_spans`` takes them: 12 bytes each."""
    return b"".join(struct.pack("<Id", n, b) for n, b in shapes)


def unpack_shapes(packed: bytes) -> list[tuple[int, float]]:
    """rust/python/scrub.rs secret_spans: the packed pairs, refused unless whole records."""
    if not isinstance(packed, bytes) or len(packed) % 12:
        raise ValueError("shapes must be 12-byte (u32, f64) records")
    return [(int(n), float(b)) for n, b in struct.iter_unpack("<Id", packed)]


def secret_spans(d: bytes, shapes: Sequence[tuple[int, float]]) -> list[tuple[int, int]]:
    """memory.rs secret_spans: byte spans whose (length, bits) is one of ``shapes``."""
    wanted = {(int(n), float(b)) for n, b in shapes}
    out: list[tuple[int, int]] = []
    if not wanted:
        return out
    lengths = {n for n, _b in wanted}
    shortest = min(lengths)
    for m in _RUN.finditer(d):
        start, end = m.span()
        while end > start and d[end - 1] in b".:!":
            end -= 1
        if end - start < shortest:
            continue
        run = d[start:end]
        starts = {start}
        for sep in (b"=", b":"):
            first, last = run.find(sep), run.rfind(sep)
            if first >= 0:
                starts.add(start + first + 1)
                starts.add(start + last + 1)
        for s in sorted(starts):
            n = end - s
            if s < end and n in lengths and (n, secret_bits(d[s:end])) in wanted:
                out.append((s, end))
    return out


def code_point_spans(d: bytes, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """memory.rs code_point_spans: byte spans (sorted by start, maybe overlapping) as code points."""
    if d.isascii():
        return list(spans)
    marks = sorted({m for span in spans for m in span})
    at: dict[int, tuple[int, bool]] = {}
    byte = cp = 0
    for m in marks:
        cp += len(d[byte:m].translate(None, CONTINUATION))
        byte = m
        at[m] = (cp, m < len(d) and 0x80 <= d[m] < 0xC0)
    return [(at[s][0] - at[s][1], at[e][0]) for s, e in spans]
