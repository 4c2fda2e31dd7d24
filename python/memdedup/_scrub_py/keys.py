"""The mirror of ``rust/scrub/keys.rs``: credential-named keys, strong and weak."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from memdedup._scrub_py._bytes import ascii_lower, is_alnum, is_digit, is_lower, is_upper


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
        self.types = frozenset(raw["types"])
        self.providers = frozenset(raw["providers"])
        weak = raw["weak"]
        self.describing = frozenset(weak["describing"])
        # keys.rs keeps the table's order: a BTreeMap, so sorted by word.
        self.substrings = sorted(weak["substrings"].items())
        self.provider_finals = dict(weak["provider_finals"])
        self.id_qualifiers = frozenset(weak["id_qualifiers"])
        self.credential_ids = frozenset(weak["credential_ids"])

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

    def is_type(self, word: bytes) -> bool:
        """keys.rs KeyPolicy::is_type."""
        return len(word) <= 24 and ascii_lower(word) in self.types

    def classify_key(self, name: bytes) -> tuple[str, bool] | None:
        """keys.rs KeyPolicy::classify_key: ``(class, weak)`` or None."""
        return self._classify_key_cached(name)

    def refuses(self, name: bytes) -> bool:
        """keys.rs KeyPolicy::refuses."""
        words = self._trimmed(self.words(name))
        return len(words) >= 2 and words[-2] in self.not_after.get(words[-1], ())

    def _trimmed(self, words: list[str]) -> list[str]:
        return words[:-1] if len(words) >= 2 and words[-1] in self.types else words

    def _undigit(self, word: str) -> str:
        stem = word.rstrip("0123456789")
        if (
            len(stem) < len(word)
            and len(word) - len(stem) <= 2
            and (stem in self.final or stem in self.after or stem in self.provider_finals)
        ):
            return stem
        return word

    @functools.lru_cache(maxsize=4096)  # noqa: B019 - one policy per process; keys repeat in a text
    def _classify_key_cached(self, name: bytes) -> tuple[str, bool] | None:
        words = self._trimmed(self.words(name))
        if not words:
            return None
        rest, last = words[:-1], self._undigit(words[-1])
        words = [*rest, last]
        prev = rest[-1] if rest else ""
        if prev in self.not_after.get(last, ()):
            return None
        strong = self._classify(words)
        if strong is not None:
            return strong, False

        def described(start: int) -> bool:
            return any(w in self.describing for w in words[start:])

        def wordy(w: str) -> bool:
            letters = len(w) - len(w.lstrip("abcdefghijklmnopqrstuvwxyz"))
            return w[letters:].isdigit() or letters == len(w)

        for end in range(len(words) - 1, 0, -1):
            kind = self._classify(words[:end])
            if kind is not None:
                qualified = all(wordy(w) for w in words[end:])
                return None if described(end) or not qualified else (kind, True)
        for i, word in enumerate(words):
            if word in self.describing:
                continue
            found = next(((sub, kind) for sub, kind in self.substrings if sub in word), None)
            if found is not None:
                sub, kind = found
                refused = i > 0 and words[i - 1] in self.not_after.get(sub, ())
                return None if refused or described(i + 1) else (kind, True)
        if len(words) >= 2:
            joined = "".join(words)
            hit = next((kind for sub, kind in self.substrings if sub in joined), None)
            if hit is not None and not any(w in self.describing for w in words):
                return hit, True
        if last in ("id", "ids") and prev in self.credential_ids:
            return "SECRET", True
        if len(words) >= 2 and any(w in self.providers for w in rest) and last in self.provider_finals:
            if last not in ("id", "ids") or prev in self.id_qualifiers:
                return self.provider_finals[last], True
        return None

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
