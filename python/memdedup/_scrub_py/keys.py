"""The mirror of ``rust/scrub/keys.rs``: credential-named keys and the values they may keep."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from memdedup._scrub_py._bytes import WS, ascii_lower, is_alnum, is_digit, is_lower, is_upper, strip


def split_words(name: bytes) -> list[str]:
    """keys.rs split_words: ASCII alphanumeric runs, split at camelCase humps, lower-cased."""
    words: list[str] = []
    i, n = 0, len(name)
    while i < n:
        if not is_alnum(name[i]):
            i += 1
            continue
        start = i
        while i < n and is_alnum(name[i]):
            i += 1
        run = name[start:i]
        piece = 0
        for j in range(1, len(run)):
            prev, cur = run[j - 1], run[j]
            hump = ((is_lower(prev) or is_digit(prev)) and is_upper(cur)) or (
                is_upper(prev) and is_upper(cur) and j + 1 < len(run) and is_lower(run[j + 1])
            )
            if hump:
                words.append(run[piece:j].decode("ascii").lower())
                piece = j
        words.append(run[piece:].decode("ascii").lower())
    return words


class KeyPolicy:
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
        for word in split_words(name):
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


class ValuePolicy:
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
        s, e = strip(d, s, e)
        if e - s >= 2 and d[s] in b"\"'" and d[s] == d[e - 1]:
            s, e = strip(d, s + 1, e - 1)
        if s >= e:
            return True
        if e - s <= _HEAD and ascii_lower(d[s:e]) in self.placeholders:
            return True
        if ascii_lower(d[s : min(e, s + _HEAD)]).startswith(self.template_prefixes):
            return True
        mask = self._mask.match(d, s, e)
        if mask is not None and mask.end() == e and len(d[s:e].decode()) >= self.mask_min_len:
            return True
        return _is_env_reference(d, s, e)

    def is_small_number_at(self, d: bytes, s: int, e: int) -> bool:
        s, e = strip(d, s, e)
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
        s, e = strip(d, s, e)
        if e - s >= 16:
            return True
        v = d[s:e]
        digit = any(is_digit(b) for b in v)
        symbol = any(b in b"!@#$%^&*+/=~|\\?" for b in v)
        inner_upper = any(is_upper(b) for b in v[1:]) and any(is_lower(b) for b in v)
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
        w = word.strip(WS)
        if w and w[-1] in b".,!?:;":
            w = w[:-1]
        if len(w) > self.longest:
            return False
        lower = ascii_lower(w)
        return lower in self.prose_stopwords or lower in self.placeholders


_HEAD = 32
_DIGITS = re.compile(rb"[0-9]+")


_IDENT = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


def _is_env_reference(d: bytes, s: int, e: int) -> bool:
    if s < e and d[s] == 0x24:
        return _IDENT.fullmatch(d, s + 1, e) is not None
    if e - s >= 2 and d[s] == d[e - 1] == 0x25:
        return _IDENT.fullmatch(d, s + 1, e - 1) is not None
    return False
