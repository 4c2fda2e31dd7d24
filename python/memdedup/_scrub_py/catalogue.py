"""The mirror of ``rust/scrub/catalogue.rs``: byte sets and one rule, compiled for Python's ``re``."""

from __future__ import annotations

import re
from collections.abc import Mapping

# The parser re compiles with: its widths are the byte lengths a bytes pattern can match.
from re import _parser as _sre_parse  # type: ignore[attr-defined]
from typing import Any, NamedTuple

_NAMED_SETS = {
    "none": "",
    "word": "A-Za-z0-9_",
    "token": "A-Za-z0-9_-",
    "alnum": "A-Za-z0-9",
    "b64": "A-Za-z0-9+/=",
}


def byte_set(spec: str) -> frozenset[int]:
    """catalogue.rs ByteSet::parse."""
    if spec.startswith("^") and len(spec) > 1:
        return frozenset(range(256)) - byte_set(spec[1:])
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


def run_pattern(run: frozenset[int], inner: frozenset[int]) -> re.Pattern[bytes]:
    """The first byte at or after a position that does not continue a run (extend.rs extend_run)."""
    r, i = _byte_class(run), _byte_class(inner)
    return re.compile(rb"(?:(?!" + r + rb")(?!(?<=" + r + rb")" + i + rb"(?=" + r + rb"))[\x00-\xff])")


def _byte_class(bytes_: frozenset[int]) -> bytes:
    return b"[" + b"".join(re.escape(bytes([b])) for b in sorted(bytes_)) + b"]" if bytes_ else b"(?!)"


class Rule(NamedTuple):
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
    near: tuple[re.Pattern[bytes], int, int, bool] | None
    line_context: tuple[bytes, ...]
    check: str | None
    public_prefixes: tuple[bytes, ...]
    pii: bool
    public_labels: tuple[bytes, ...]
    key_before: bool


def max_width(pattern: re.Pattern[bytes]) -> int:
    """The longest match a pattern describes (regex-syntax's maximum_len for these patterns)."""
    return int(_sre_parse.parse(pattern.pattern, pattern.flags).getwidth()[1])


# The assignment pattern starts with a run of key bytes; the core refuses a match whose key starts inside
# a longer run (extend.rs assignment), and every such match ends inside the key's own separator, so
# saying it in the pattern finds the same values. Python's backtracking needs it said: without it,
# each position of a long run of key bytes costs ~100 steps (4.7 s for 256 KB of "key=AAAA...").
_KEY_START = rb"(?<![A-Za-z0-9_.\-])"


def provider_pattern(names: list[str]) -> bytes:
    """catalogue.rs provider_pattern: any provider's name, at a word's start."""
    return rb"\b(?i:" + b"|".join(re.escape(n.encode("ascii")) for n in names) + b")"


def compile_rule(rule: Mapping[str, Any], providers: list[str]) -> Rule:
    keywords = list(rule.get("keywords", []))
    pattern = rule.get("pattern", "").encode("ascii")
    if rule.get("provider_keywords", False):
        keywords += providers
        if not pattern:
            pattern = provider_pattern(providers)
    key_start = rule.get("extend") == "assignment" and not rule.get("key_before", False)
    regex = re.compile(_KEY_START + pattern if key_start else pattern)
    secret_groups = tuple(sorted(i for name, i in regex.groupindex.items() if name.startswith("secret")))
    run = (
        run_pattern(byte_set(rule["run"]), byte_set(rule.get("run_inner", "none"))) if "run" in rule else None
    )
    near = None
    if "near" in rule:
        near_re = re.compile(rule["near"].encode("ascii"))
        near = (near_re, int(rule["near_within"]), max_width(near_re), bool(rule.get("near_lines", False)))
    return Rule(
        id=rule["id"],
        kind=None if rule["kind"] == "BY_KEY" else rule["kind"],
        keywords=tuple(k.encode("ascii") for k in keywords),
        regex=regex,
        secret_groups=secret_groups,
        boundary=byte_set(rule.get("boundary", "word")),
        before=byte_set(rule.get("before", rule.get("boundary", "word"))),
        entropy=rule.get("entropy"),
        digits=rule.get("digits", False),
        placeholder=rule.get("placeholder", False),
        generated=rule.get("generated", False),
        mixed=rule.get("mixed", False),
        run=run,
        run_before=byte_set(rule["run_before"]) if "run_before" in rule else None,
        tail=tuple(byte_set(t) for t in rule.get("tail", [])),
        extend=rule.get("extend"),
        near=near,
        line_context=tuple(w.encode("ascii") for w in rule.get("line_context", [])),
        check=rule.get("check"),
        public_prefixes=tuple(p.encode("ascii") for p in rule.get("public_prefixes", [])),
        pii=rule.get("pii", False),
        public_labels=tuple(w.encode("ascii") for w in rule.get("public_labels", [])),
        key_before=bool(rule.get("key_before", False)),
    )
