"""The pure-Python mirror (memdedup._scrub_py.PyDetector) against the Rust core, answer for answer.

The fallback is only a fallback if it scrubs exactly what the core scrubs: the same spans, rules and
kinds on any text (every Unicode category, lone surrogates, the catalogue's own vectors spliced into
noise), the same key classes and value decisions, and the same pattern widths bounding each search.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memdedup.scrub import RULES, CredentialScrubber, _engine
from memdedup.secret_memory import pack_shapes
from strategies import n_examples
from test_scrub_findings import _LEAKED
from test_scrub_vectors import VECTORS

core = pytest.importorskip("memdedup._core")
if not hasattr(core, "scan_secrets"):  # pragma: no cover - an extension built before the detector
    pytest.skip("memdedup._core has no credential detector", allow_module_level=True)

RUST = _engine("rust")
PYTHON = _engine("python")


def test_the_mirror_bounds_its_searches_by_the_cores_widths() -> None:
    widths = {rule: (width, near) for rule, width, near in core.secret_rule_widths()}
    assert list(widths) == [r.id for r in RULES]
    for rule in PYTHON.detector.rules:  # type: ignore[attr-defined]
        if rule.near is not None:
            assert rule.near[2] == widths[rule.id][1], rule.id


_PIECES = (
    [v.text for v in VECTORS]
    + [text for _, text, _ in _LEAKED]
    + [
        "password: ", "token=", "Authorization: Bearer ", "-----BEGIN RSA PRIVATE KEY-----\n", "\\n",
        "://", "u:p@", "@", ":", "=", '"', "'", " ", "\n", "key", "aws ", "curl -u a:", "[REDACTED:SECRET]",
        "\ud800", "\udfff", "é", "😀", "\u200b", "\ufeff", "\u2060", "\x85", "\xa0",
        # issue 36's grammars: operators, blocks, markup, providers, brackets, copies
        "::=", ":::=", "?=", "+=", ".=", "||=", ": string = ", "var t string = ", "apiToken,", ': |\n  ',
        "<password>", "</password>", '<add key="Password" value="', '"name": "apiToken", "value": "',
        "\n  - name: DB_PASSWORD\n    value: ", "kind: Secret\ndata:\n  a: ", "sumologic ", "accessId: ",
        "{{h}o)p${e]nob(", ")}}", "process.env.X", "/etc/app/x.pem", "see the wiki", "ssh-ed25519 AAAA",
        "-----BEGIN PUBLIC KEY-----\n", "https://", "Zq8vH5jK2mNp4QrT7wXy", "Zq8vH5jK2mNp4QrT7wXy!",
    ]
)  # fmt: skip
_TEXT = st.lists(
    st.one_of(st.sampled_from(_PIECES), st.text(max_size=12), st.text(alphabet="aA0_-.:=@/+ ", max_size=30)),
    max_size=10,
).map("".join)


@settings(max_examples=n_examples(400))
@given(_TEXT, st.booleans())
def test_both_engines_find_the_same_spans(text: str, pii: bool) -> None:
    assert PYTHON.scan(text, pii) == RUST.scan(text, pii)


@settings(max_examples=n_examples(200))
@given(st.text(max_size=200), st.booleans())
def test_both_engines_agree_on_arbitrary_text(text: str, pii: bool) -> None:
    assert PYTHON.scan(text, pii) == RUST.scan(text, pii)


@pytest.mark.parametrize("vector", VECTORS, ids=[f"{v.name}{i}" for i, v in enumerate(VECTORS)])
def test_both_engines_agree_on_every_vector_with_pii(vector: object) -> None:
    text = vector.text  # type: ignore[attr-defined]
    assert PYTHON.scan(text, True) == RUST.scan(text, True)


_WORDS = st.sampled_from(
    ["api", "key", "Key", "KEY", "token", "Token", "secret", "pass", "password", "PASSWORD", "pin", "otp",
     "id", "session", "max", "count", "tokens", "private", "access", "auth", "bearer", "code", "hash",
     "phrase", "x", "db", "pg", "client", "manager", "policy", "2fa", "mfa", "sig", "apikey", "sessionid",
     "OAuth2"]
)  # fmt: skip
_KEY = st.lists(st.one_of(_WORDS, st.text(alphabet="abcXYZ09", max_size=5)), min_size=0, max_size=5).flatmap(
    lambda words: st.sampled_from(["_", "-", ".", " ", "", "__"]).map(lambda sep: sep.join(words))
)


@settings(max_examples=n_examples(500))
@given(st.one_of(_KEY, st.text(max_size=30)))
def test_both_engines_judge_key_names_alike(name: str) -> None:
    assert PYTHON.key_words(name) == RUST.key_words(name)
    assert PYTHON.key_kind(name) == RUST.key_kind(name)
    assert PYTHON.key_class(name) == RUST.key_class(name)


_VALUES = st.one_of(
    st.sampled_from(["required", "NONE", "***", "xx", "<token>", "${X}", "$TOKEN", "%T%", "4096", "0.5",
                     "1234567", "hunter2", "Dana", "sauce", "abcdefghijklmnop", "iPhone", "a+b", " null ",
                     '"none"', "your_key", "[REDACTED:X]", "\u2022\u2022\u2022", "12.", ".5", "1.2.3"]),
    st.text(max_size=20),
)  # fmt: skip


@settings(max_examples=n_examples(500))
@given(st.sampled_from(["PASSWORD", "PIN", "TOKEN", "API_KEY", "SECRET"]), _VALUES, st.booleans())
def test_both_engines_keep_the_same_values(kind: str, value: str, quoted: bool) -> None:
    assert PYTHON.value_kept(kind, value, quoted) == RUST.value_kept(kind, value, quoted)
    assert PYTHON.value_random(value) == RUST.value_random(value)
    assert PYTHON.secret_bits(value) == RUST.secret_bits(value)


@settings(max_examples=n_examples(300))
@given(_TEXT, st.lists(st.sampled_from([*_PIECES, "hunter2x", "Zq8vH5jK2mNp4QrT7wXy", "4821"]), max_size=3))
def test_both_engines_redact_the_same_copies_of_known_values(text: str, values: list[str]) -> None:
    known = [(value, "assignment", "PASSWORD") for value in values]
    assert PYTHON.scan(text, False, known) == RUST.scan(text, False, known)


@settings(max_examples=n_examples(300))
@given(_TEXT, st.lists(st.sampled_from(_PIECES), max_size=4), st.integers(min_value=0, max_value=40))
def test_both_engines_find_the_same_memory_spans(text: str, values: list[str], cut: int) -> None:
    # The shapes of values that may occur in the text (so spans are found), and of a cut of it.
    shapes = [(len(v.encode("utf-8", "surrogatepass")), RUST.secret_bits(v)) for v in values]
    shapes.append((len(text[cut:].encode("utf-8", "surrogatepass")), RUST.secret_bits(text[cut:])))
    assert PYTHON.secret_spans(text, pack_shapes(shapes)) == RUST.secret_spans(text, pack_shapes(shapes))


def test_the_scrubbers_agree_on_properties() -> None:
    properties = {
        "password": "hunter2x",
        "token": 4096,
        "nested": {"api_key": "k3y-abc", "note": "ghp_" + "aB1" * 12, "pin": 4821},
        "list": [{"session_id": "abc123"}, "postgres://u:pw0rd@db/app"],
        "weak": {"password_super_secure": "Aif40NUStqNLE0QOPPmf2KhU", "tokenizer": "cl100k_base"},
    }
    a = CredentialScrubber(implementation="rust").scrub_properties(properties)
    b = CredentialScrubber(implementation="python").scrub_properties(properties)
    assert a == b
