"""Byte predicates and constants the mirror's files share (a leaf: it imports nothing of memdedup).

Rust's ``u8`` methods (``is_ascii_alphanumeric``, ``is_ascii_whitespace``...) and the escape reading
of ``scan.rs byte_before``, which both ``extend`` and ``scan`` need.
"""

from __future__ import annotations

import math

# How every placeholder starts (scan.rs PLACEHOLDER).
PLACEHOLDER_PREFIX = "[REDACTED:"

WS = b" \t\n\x0c\r"  # Rust's u8::is_ascii_whitespace (no vertical tab)
PLACEHOLDER_BYTES = PLACEHOLDER_PREFIX.encode()
CONTINUATION = bytes(range(0x80, 0xC0))


def is_alnum(b: int) -> bool:
    return 0x30 <= b <= 0x39 or 0x41 <= b <= 0x5A or 0x61 <= b <= 0x7A


def is_alpha(b: int) -> bool:
    return 0x41 <= b <= 0x5A or 0x61 <= b <= 0x7A


def is_digit(b: int) -> bool:
    return 0x30 <= b <= 0x39


def is_upper(b: int) -> bool:
    return 0x41 <= b <= 0x5A


def is_lower(b: int) -> bool:
    return 0x61 <= b <= 0x7A


def ascii_lower(data: bytes) -> str:
    return data.decode("utf-8", "replace").translate(_LOWER)


_LOWER = {c: c + 32 for c in range(0x41, 0x5B)}


def strip(d: bytes, s: int, e: int) -> tuple[int, int]:
    """``d[s:e].strip(WS)`` as indices."""
    while s < e and d[s] in WS:
        s += 1
    while e > s and d[e - 1] in WS:
        e -= 1
    return s, e


HEX = frozenset(b"0123456789abcdefABCDEF")
LETTER_ESCAPES = frozenset(b"nrtbfv")


def hex_value(digits: bytes) -> int | None:
    return int(digits, 16) if digits and all(b in HEX for b in digits) else None


def byte_before(d: bytes, at: int) -> int:
    """scan.rs byte_before: the byte right before ``at``, an escape ending there read as what it encodes."""
    if at >= 6 and d[at - 6] == 0x5C and d[at - 5] == 0x75:
        cp = hex_value(d[at - 4 : at])
        if cp is not None:
            return cp if cp < 0x80 else 0x80
    if at >= 4 and d[at - 4] == 0x5C and d[at - 3] == 0x78:
        byte = hex_value(d[at - 2 : at])
        if byte is not None:
            return byte
    if at >= 3 and d[at - 3] == 0x25:
        byte = hex_value(d[at - 2 : at])
        if byte is not None:
            return byte
    last = d[at - 1]
    if at >= 2 and d[at - 2] == 0x5C and last in LETTER_ESCAPES:
        return 0x0A
    return last


def entropy(data: bytes) -> float:
    """scan.rs entropy: the same operations in the same order, so the same float."""
    counts = [0] * 256
    for b in data:
        counts[b] += 1
    return entropy_of(counts, len(data))


def entropy_of(counts: list[int], length: int) -> float:
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
