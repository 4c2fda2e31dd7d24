"""Fake secrets of the right shape, built at run time, and the per-rule vectors of the catalogue.

Nothing in the repository is a real secret, and no literal here or in ``tests/data/scrub_vectors.toml``
has a provider's full shape: the vectors are templates (``ghp_{an:36}``) that :func:`expand` fills with
deterministic pseudo-random characters of the right alphabet, so a secret scanner never mistakes the
suite for a leak while every rule still meets a value of exactly its shape.

A vector marks each span the scrubber must replace with ``«`` and ``»``: the expected output is the
expanded text with every marked span replaced by ``[REDACTED:KIND]`` and every other character kept,
byte for byte (span-exact). A false-positive vector has no marks and must come back unchanged.
"""

from __future__ import annotations

import random
import re
import string
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from memdedup.scrub import RULES, CredentialScrubber

VECTORS_PATH = Path(__file__).resolve().parent / "data" / "scrub_vectors.toml"

ALPHABETS = {
    "d": string.digits,
    "h": "0123456789abcdef",
    "H": "0123456789ABCDEF",
    "a": string.ascii_lowercase,
    "A": string.ascii_uppercase,
    "an": string.ascii_letters + string.digits,
    "ad": string.ascii_lowercase + string.digits,
    "AN": string.ascii_uppercase + string.digits,
    "an_": string.ascii_letters + string.digits + "_",
    "url": string.ascii_letters + string.digits + "_-",
    "b64": string.ascii_letters + string.digits + "+/",
    # age's bech32 alphabet, upper case
    "b32": "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L",
}


def fake(alphabet: str, length: int, seed: object = 0) -> str:
    """``length`` deterministic pseudo-random characters of ``ALPHABETS[alphabet]``.

    When the alphabet has letters and digits, the result has both, and both cases when it has both:
    generated keys look like that, and the rules that demand a digit must see one.
    """
    chars = ALPHABETS[alphabet]
    rng = random.Random(f"{alphabet}:{length}:{seed}")
    out = [rng.choice(chars) for _ in range(length)]
    classes = [
        c for c in (string.digits, string.ascii_lowercase, string.ascii_uppercase) if set(c) & set(chars)
    ]
    if length >= 2 * len(classes):
        for index, cls in enumerate(classes):
            if not any(ch in cls for ch in out):
                pool = [ch for ch in chars if ch in cls]
                out[1 + 2 * index] = rng.choice(pool)
    return "".join(out)


_FIELD = re.compile(r"\{([A-Za-z0-9_]+):([0-9]+)\}")
OPEN, CLOSE = "«", "»"


def expand(template: str, seed: object = 0) -> str:
    """``template`` with each ``{alphabet:length}`` filled by :func:`fake` (a seed per occurrence)."""
    count = 0

    def fill(match: re.Match[str]) -> str:
        nonlocal count
        count += 1
        return fake(match.group(1), int(match.group(2)), f"{seed}:{count}")

    return _FIELD.sub(fill, template)


def split_marks(text: str) -> tuple[str, list[tuple[int, int]]]:
    """The text without its ``«»`` marks, and the marked spans (code-point offsets into that text)."""
    spans: list[tuple[int, int]] = []
    out: list[str] = []
    start = -1
    length = 0
    for char in text:
        if char == OPEN:
            start = length
        elif char == CLOSE:
            spans.append((start, length))
        else:
            out.append(char)
            length += 1
    return "".join(out), spans


def redacted(text: str, spans: list[tuple[int, int]], kind: str) -> str:
    """``text`` with each span replaced by ``[REDACTED:kind]``."""
    out, done = [], 0
    for start, end in spans:
        out += [text[done:start], f"[REDACTED:{kind}]"]
        done = end
    out.append(text[done:])
    return "".join(out)


@dataclass(frozen=True)
class Vector:
    rule: str
    text: str
    spans: tuple[tuple[int, int], ...]
    positive: bool

    @property
    def name(self) -> str:
        return f"{self.rule}-{'tp' if self.positive else 'fp'}"


def load_vectors() -> list[Vector]:
    """Every vector of ``tests/data/scrub_vectors.toml``, expanded."""
    data = tomllib.loads(VECTORS_PATH.read_text(encoding="utf-8"))
    vectors = []
    for rule, entry in data.items():
        for index, template in enumerate(entry.get("tp", [])):
            text, spans = split_marks(expand(template, f"{rule}:tp:{index}"))
            vectors.append(Vector(rule, text, tuple(spans), True))
        for index, template in enumerate(entry.get("fp", [])):
            text, spans = split_marks(expand(template, f"{rule}:fp:{index}"))
            assert not spans, f"{rule}: a false-positive vector marks a span"
            vectors.append(Vector(rule, text, (), False))
    return vectors


def test_fake_keys_have_their_shape() -> None:
    token = fake("an", 36, "x")
    assert len(token) == 36 and token.isalnum()
    assert (
        any(c.isdigit() for c in token)
        and any(c.islower() for c in token)
        and any(c.isupper() for c in token)
    )
    assert fake("an", 36, "x") == token and fake("an", 36, "y") != token
    assert set(fake("h", 64)) <= set("0123456789abcdef")
    assert expand("ghp_{an:36}", 1) == "ghp_" + fake("an", 36, "1:1")


def test_marks_give_code_point_spans() -> None:
    text, spans = split_marks("a «bc» d «e»")
    assert text == "a bc d e" and spans == [(2, 4), (7, 8)]
    assert redacted(text, spans, "K") == "a [REDACTED:K] d [REDACTED:K]"


# ---------------------------------------------------------------------------------------------------
# Every rule, both engines: true positives span-exact with the rule's kind, false positives untouched
# ---------------------------------------------------------------------------------------------------
VECTORS = load_vectors()
ENGINES = ["rust", "python"]


def _split_kind(template_text: str) -> tuple[str | None, str]:
    head, sep, rest = template_text.partition("::")
    if sep and head and all(c.isupper() or c == "_" for c in head):
        return head, rest
    return None, template_text


def test_every_rule_has_true_and_false_positive_vectors() -> None:
    ids = [r.id for r in RULES]
    assert len(ids) == len(set(ids))
    for rule in ids:
        tp = [v for v in VECTORS if v.rule == rule and v.positive]
        fp = [v for v in VECTORS if v.rule == rule and not v.positive]
        assert tp and fp, (
            f"rule {rule}: {len(tp)} true- and {len(fp)} false-positive vectors (a rule needs both)"
        )
    assert {v.rule for v in VECTORS} <= set(ids), "vectors for a rule the catalogue does not have"


def _pii(rule: str) -> bool:
    return next(r for r in RULES if r.id == rule).pii


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("vector", VECTORS, ids=[f"{v.name}{i}" for i, v in enumerate(VECTORS)])
def test_vector(vector: Vector, engine: str) -> None:
    scrubber = CredentialScrubber(pii=_pii(vector.rule), implementation=engine)
    kind_override, text = _split_kind(vector.text)
    rule_kind = next(r.kind for r in RULES if r.id == vector.rule)
    kind = kind_override or rule_kind
    if vector.positive:
        # the text was expanded with its KIND:: prefix still on; drop it and shift the spans
        shift = len(vector.text) - len(text)
        spans = [(s - shift, e - shift) for s, e in vector.spans]
        result = scrubber.scrub_text(text)
        assert result.text == redacted(text, spans, kind)
        assert result.redactions == (kind,) * len(spans)
        found = scrubber.scan(text)
        assert [(f.start, f.end, f.rule, f.kind) for f in found] == [
            (s, e, vector.rule, kind) for s, e in spans
        ]
    else:
        result = scrubber.scrub_text(text)
        assert result.text == text, result.text
        assert result.redactions == ()


def test_the_docs_list_every_rule_with_its_vector_counts() -> None:
    doc = (Path(__file__).resolve().parent.parent / "docs" / "scrub.md").read_text(encoding="utf-8")
    for rule in RULES:
        tp = sum(1 for v in VECTORS if v.rule == rule.id and v.positive)
        fp = sum(1 for v in VECTORS if v.rule == rule.id and not v.positive)
        row = next((line for line in doc.splitlines() if f"| `{rule.id}` |" in line), None)
        assert row is not None, f"docs/scrub.md does not list {rule.id}"
        assert row.rstrip().endswith(f"| {tp} | {fp} |"), (
            f"docs/scrub.md has stale vector counts for {rule.id}"
        )
