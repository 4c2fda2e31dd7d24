"""The mirror of ``rust/scrub/scan.rs``: the keyword prefilter, each selected rule's regex, the
extenders and checks, then one merge (``PyDetector``)."""

from __future__ import annotations

import bisect
import re
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

from memdedup._scrub_py import extend, shapes
from memdedup._scrub_py._bytes import (
    CONTINUATION,
    PLACEHOLDER_BYTES,
    byte_before,
    entropy,
    entropy_of,
    is_alnum,
    is_digit,
    is_lower,
    is_upper,
)
from memdedup._scrub_py.catalogue import Rule, compile_rule
from memdedup._scrub_py.extend import Cover, Memo, Value
from memdedup._scrub_py.keys import KeyPolicy
from memdedup._scrub_py.values import ValuePolicy, made_of_words

MAX_RUN_BEFORE = 32


def _has_public_prefix(secret: bytes, prefixes: tuple[bytes, ...]) -> bool:
    """scan.rs has_public_prefix."""
    return any(
        len(secret) > len(p) and secret[: len(p)].lower() == p and secret[len(p)] in b"_-." for p in prefixes
    )


RANDOM_PREFIX = (2, 16)
RANDOM_MIN_MIXED = 20
RANDOM_MIN_ONE_CASE = 32


def _class(b: int) -> int:
    return 0 if is_upper(b) else 1 if is_lower(b) else 2 if is_digit(b) else 3


_BASE62 = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def github_checksum(token: bytes) -> bool:
    """scan.rs github_checksum."""
    body = token[4:]
    if len(body) != 36:
        return False
    n = zlib.crc32(body[:30])
    want = bytearray(b"000000")
    for i in range(5, -1, -1):
        want[i] = _BASE62[n % 62]
        n //= 62
    return n == 0 and bytes(want) == body[30:]


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
        and any(is_digit(b) for b in run)
        and any(is_upper(b) or is_lower(b) for b in run)
        and entropy(run) > 4.0
    )


_LINE_CONTEXT = 512
_PLACEHOLDER_RE = re.compile(re.escape(PLACEHOLDER_BYTES))


def _inside_placeholder(d: bytes, at: int, placeholders: list[int]) -> bool:
    """scan.rs inside_placeholder."""
    i = bisect.bisect_left(placeholders, max(0, at - len(PLACEHOLDER_BYTES) - 48))
    while i < len(placeholders) and placeholders[i] < at:
        if b"]" not in d[placeholders[i] + 1 : at]:
            return True
        i += 1
    return False


def _tail(rule: Rule, d: bytes, start: int, end: int, group: int, placeholders: list[int]) -> int:
    """scan.rs tail."""
    if not rule.tail:
        return end
    tail = rule.tail[min(group, len(rule.tail) - 1)]
    begin = end
    while end < len(d) and d[end] in tail:
        end += 1
    i = bisect.bisect_left(placeholders, max(begin, start))
    return placeholders[i] if i < len(placeholders) and placeholders[i] < end else end


def _one_word(d: bytes, value: Value, start: int, end: int) -> Cover | None:
    """scan.rs one_word."""
    if value.quoted:
        words = b" " not in d[start:end] and b"\t" not in d[start:end] and d[end : end + 2] != b"\\'"
    else:
        words = end <= value.first_end
    return Cover(start, end, value.quoted, value.clause, value.query) if words else None


def _on_line_after(d: bytes, at: int, words: tuple[bytes, ...]) -> bool:
    """scan.rs on_line_after."""
    start = max(0, at - _LINE_CONTEXT)
    line_start = max(d.rfind(b"\n", start, at), d.rfind(b"\r", start, at)) + 1
    window = d[max(start, line_start) : at].lower()
    return any(w in window for w in words)


_LABEL_BEFORE = 32
_KEY_BEFORE = 48


def _labelled_public(d: bytes, at: int, labels: tuple[bytes, ...]) -> bool:
    """scan.rs labelled_public."""
    start = max(0, at - _LABEL_BEFORE)
    line_start = max(d.rfind(b"\n", start, at), d.rfind(b"\r", start, at)) + 1
    window = d[max(start, line_start) : at].lower()
    return any(w in window for w in labels)


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
        cp += len(data[byte:start].translate(None, CONTINUATION))
        start_cp = cp - 1 if start < len(data) and 0x80 <= data[start] < 0xC0 else cp
        cp += len(data[start:end].translate(None, CONTINUATION))
        byte = end
        out.append((start_cp, cp, rule, kind))
    return out


COPY_MIN = 4
COPY_WORD = 8
COPY_MAX = 256
COPY_CHUNK = 64
SECRET_CONTEXT = 4096


def _word_byte(b: int) -> bool:
    return is_alnum(b) or b == 0x5F


def copies(
    d: bytes,
    found: list[tuple[int, int, int, str]],
    known: Sequence[tuple[bytes, int, str]],
    placeholders: list[int],
) -> list[tuple[int, int, int, str]]:
    """scan.rs copies: every copy of each value found and each known value, merged in."""
    values: dict[bytes, tuple[int, str]] = {}
    for value, rule, kind in [(d[s:e], r, k) for s, e, r, k in found] + list(known):
        bare = value.rstrip(b" \t\n\x0c\r").rstrip(b"!?.")
        for v in (value, bare):
            if (
                COPY_MIN <= len(v) <= COPY_MAX
                and (len(v) == len(value) or len(v) >= COPY_WORD)
                and v not in values
            ):
                values[v] = (rule, kind)
    if not values:
        return found
    extra: list[tuple[int, int, int, str]] = []
    order = list(values)
    for at in range(0, len(order), COPY_CHUNK):
        _copies_of(d, order[at : at + COPY_CHUNK], values, placeholders, extra)
    if not extra:
        return found
    return _merge(found + extra)


def _copies_of(
    d: bytes,
    chunk: list[bytes],
    values: dict[bytes, tuple[int, str]],
    placeholders: list[int],
    extra: list[tuple[int, int, int, str]],
) -> None:
    """One chunk's copies (scan.rs copies): longest first, so at the leftmost position a copy starts
    the longest value there wins, as the core's leftmost-longest search of the chunk chooses."""
    ordered = sorted(chunk, key=len, reverse=True)
    pattern = re.compile(b"|".join(re.escape(v) for v in ordered))
    for m in pattern.finditer(d):
        start, end = m.span()
        value = m.group()
        if len(value) < COPY_WORD and (
            (start > 0 and _word_byte(d[start - 1])) or (end < len(d) and _word_byte(d[end]))
        ):
            continue
        if _inside_placeholder(d, start, placeholders):
            continue
        rule, kind = values[value]
        extra.append((start, end, rule, kind))


def public_ranges(d: bytes) -> list[tuple[int, int]]:
    """scan.rs public_ranges."""
    out: list[tuple[int, int]] = []
    next_end: int | None = None
    at = d.find(b"-----BEGIN ")
    while at >= 0:
        head = d[at + 11 : at + 75]
        close = head.find(b"-----")
        if close >= 0 and b"PRIVATE" not in head[:close]:
            if next_end is None or next_end < at:
                found_end = d.find(b"-----END ", at)
                next_end = (1 << 62) if found_end < 0 else found_end
            if next_end != (1 << 62):
                tail = d[next_end + 9 : next_end + 75]
                t = tail.find(b"-----")
                end = next_end + 9 + (t + 5 if t >= 0 else 0)
            else:
                end = at + 11 + close + 5
            out.append((at, end))
        at = d.find(b"-----BEGIN ", at + 1)
    for prefix in (b"ssh-", b"ecdsa-sha2-", b"sk-ssh-", b"sk-ecdsa-"):
        at = d.find(prefix)
        while at >= 0:
            if not (at > 0 and _word_byte(d[at - 1])):
                kind = _SSH_KIND.match(d, at, min(len(d), at + 48))
                k = kind.end() - at if kind else 0
                body = at + k + 1
                if d[at + k : at + k + 1] == b" " and d.startswith(b"AAAA", body):
                    run = _B64.match(d, body)
                    out.append((at, run.end() if run else body))
            at = d.find(prefix, at + 1)
    out.sort()
    return out


_SSH_KIND = re.compile(rb"[A-Za-z0-9\-@.]*")
_B64 = re.compile(rb"[A-Za-z0-9+/=]*")


def _within(ranges: list[tuple[int, int]], start: int, end: int) -> bool:
    i = bisect.bisect_right(ranges, (start, 1 << 62))
    return any(end <= r[1] for r in ranges[max(0, i - 4) : i][::-1])


_KIND_SECRET = re.compile(rb"Secret")


def _secret_kind_lines(d: bytes) -> list[int]:
    """scan.rs secret_kind_lines."""
    out = []
    at = d.find(b"Secret")
    while at >= 0:
        start = max(0, at - 32)
        nl = d.rfind(b"\n", start, at)
        line = start if nl < 0 else nl + 1
        before = bytes(b for b in d[line:at] if b not in b" \t\"'{,")
        after = d[at + 6 : at + 7]
        if before == b"kind:" and not (after and is_alnum(after[0])):
            out.append(at)
        at = d.find(b"Secret", at + 1)
    return out


_PUBLIC_WORDS = (
    b"sha", b"commit", b"hash", b"digest", b"checksum", b"uuid", b"guid", b"fingerprint",
    b"etag", b"request", b"trace", b"span", b"build", b"version", b"release", b"order",
    b"invoice", b"transaction",
)  # fmt: skip
_NAME_WORDS = (b"key", b"token", b"secret", b"passw", b"credential", b"auth", b"bearer", b"apikey", b"pwd")


def _provider_cue_possible(window: bytes) -> bool:
    """scan.rs provider_cue_possible."""
    if b"=" in window or b":" in window:
        return True
    lower = window.lower()
    return any(w in lower for w in _NAME_WORDS)


def _provider_cue(gap: bytes) -> bool:
    """scan.rs provider_cue."""
    lower = gap.lower()
    if any(w in lower for w in _PUBLIC_WORDS):
        return False
    tail = lower.rstrip(b" \t\"'`([\n\r")
    if tail[-1:] in (b"=", b":"):
        return True
    return any(w in lower for w in _NAME_WORDS)


class PyDetector:
    """The pure-Python mirror of rust/scrub's Detector (scan.rs)."""

    def __init__(self, catalogue: Mapping[str, Any]) -> None:
        providers = catalogue["keys"]["providers"]
        self.rules = [compile_rule(rule, providers) for rule in catalogue["rules"]]
        self.keys = KeyPolicy(catalogue["keys"])
        self.values = ValuePolicy(catalogue["values"])
        self._rule_index = {rule.id: i for i, rule in enumerate(self.rules)}

    def rule_index(self, rule_id: str) -> int | None:
        return self._rule_index.get(rule_id)

    def scan(
        self, data: bytes, pii: bool, known: Sequence[tuple[bytes, int, str]] = ()
    ) -> list[tuple[int, int, int, str]]:
        """scan.rs Detector::scan_with."""
        lowered = data.lower()
        placeholders = [m.start() for m in _PLACEHOLDER_RE.finditer(data)]
        found: list[tuple[int, int, int, str]] = []
        for index, rule in enumerate(self.rules):
            if rule.pii and not pii:
                continue
            if rule.keywords and not any(k in lowered for k in rule.keywords):
                continue
            self._scan_rule(index, rule, data, placeholders, found)
        public = public_ranges(data)
        if public:
            found = [f for f in found if not _within(public, f[0], f[1])]
        return copies(data, _merge(found), known, placeholders)

    def _scan_rule(
        self,
        index: int,
        rule: Rule,
        d: bytes,
        placeholders: list[int],
        out: list[tuple[int, int, int, str]],
    ) -> None:
        """scan.rs scan_rule."""
        if rule.extend == "secret_data":
            self._scan_secret_data(index, rule, d, out)
            return
        memo = Memo()
        cover: Cover | None = None
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

    def _scan_secret_data(
        self, index: int, rule: Rule, d: bytes, out: list[tuple[int, int, int, str]]
    ) -> None:
        """scan.rs scan_secret_data."""
        kinds = _secret_kind_lines(d)
        if not kinds:
            return
        kind = rule.kind or "SECRET"
        at = 0
        while (m := rule.regex.search(d, at)) is not None:
            line = m.start() + 1
            header = 0
            while line + header < len(d) and d[line + header] in b" \t":
                header += 1
            found, end = shapes.secret_data(d, header, m.end())
            first = bisect.bisect_left(kinds, max(0, line - SECRET_CONTEXT))
            if first < len(kinds) and kinds[first] <= end + SECRET_CONTEXT:
                out.extend((s, e, index, kind) for s, e in found if not d.startswith(PLACEHOLDER_BYTES, s))
            at = max(end, m.end() - 1, m.start() + 1)

    def _judge(
        self,
        rule: Rule,
        d: bytes,
        ms: int,
        me: int,
        secret: tuple[int, int],
        group: int,
        ctx: tuple[list[int], Memo, Cover | None],
    ) -> tuple[int, int, str | None, Value | None] | None:
        """scan.rs judge."""
        placeholders, memo, cover = ctx
        if _inside_placeholder(d, ms, placeholders):
            return None
        if rule.line_context and not _on_line_after(d, ms, rule.line_context):
            return None
        if rule.public_labels and _labelled_public(d, ms, rule.public_labels):
            return None
        start, end = secret
        kind = None
        value = None
        policy = (self.keys, self.values)
        if rule.extend in ("assignment", "flag"):
            key = extend.key_span(d, ms)
            if rule.key_before:
                begin, floor = key[0], max(0, key[0] - _KEY_BEFORE)
                while begin > floor and (is_alnum(d[begin - 1]) or d[begin - 1] in b"_.-"):
                    begin -= 1
                key = (begin, key[1])
            found = extend.assignment(d, key, me, rule.extend == "flag", policy, memo, cover)
            if found is None:
                return None
            value, kind = found
            start, end = value.start, value.end
        elif rule.extend == "prose":
            found = extend.prose(d, ms, me, policy, memo, cover)
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
            end = extend.key_block(d, body_at, False, memo)
        elif rule.extend == "putty_block":
            end = extend.key_block(d, start, True, memo)
        elif rule.extend in ("element", "attribute"):
            if rule.extend == "element":
                found = shapes.element(d, ms, me, policy)
            else:
                found = shapes.attribute(d, ms, me, policy, memo)
            if found is None:
                return None
            value, kind = found
            start, end = value.start, value.end
        if rule.near is None:
            span = self._check(rule, d, start, end, placeholders, memo)
            return (
                None if span is None else (span[0], _tail(rule, d, *span, group, placeholders), kind, value)
            )
        near, within, width, lines = rule.near
        limit = min(len(d), me + within + width)
        if rule.check == "provider_value" and not _provider_cue_possible(d[me : min(len(d), me + within)]):
            return None
        pos = me
        while (m := near.search(d, pos, limit)) is not None:
            gap = d[me : m.start()]
            if (
                m.start() > me + within
                or (not lines and (b"\n" in gap or b"\r" in gap))
                or PLACEHOLDER_BYTES in gap
            ):
                break
            span = self._check(rule, d, m.start(), m.end(), placeholders, memo)
            if span is not None and (rule.check != "provider_value" or _provider_cue(d[me : span[0]])):
                return (span[0], _tail(rule, d, *span, 0, placeholders), kind, value)
            pos = max(m.end(), m.start() + 1)
        return None

    def _check(
        self, rule: Rule, d: bytes, start: int, end: int, placeholders: list[int], memo: Memo
    ) -> tuple[int, int] | None:
        """scan.rs check."""
        if rule.run is not None:
            end = extend.extend_run(d, end, rule.run, memo)
        if rule.run_before is not None:
            floor = max(0, start - MAX_RUN_BEFORE)
            while start > floor and d[start - 1] in rule.run_before:
                start -= 1
        i = bisect.bisect_left(placeholders, start)
        if i < len(placeholders) and placeholders[i] + len(PLACEHOLDER_BYTES) <= end:
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
        if rule.entropy is not None and counts is not None and entropy_of(counts, end - start) < rule.entropy:
            return None
        if rule.placeholder and self.values.is_placeholder_at(d, start, end):
            return None
        if rule.generated and (
            not self.values.looks_generated_at(d, start, end) or made_of_words(d[start:end], False)
        ):
            return None
        if rule.mixed and not (has(0x41, 0x5A) and has(0x61, 0x7A) and has(0x30, 0x39)):
            return None
        if _has_public_prefix(d[start : min(end, start + 64)], rule.public_prefixes):
            return None
        if rule.check == "github_crc32" and not github_checksum(d[start:end]):
            return None
        if rule.check in ("provider_value", "random_value") and not self.values.looks_random_at(
            d, start, end
        ):
            return None
        if rule.check == "url_password":
            value = d[start:end]
            digits = len(value) - len(value.lstrip(b"0123456789"))
            if 1 <= digits <= 5 and value[digits : digits + 1] == b"/":
                return None
        return start, end
