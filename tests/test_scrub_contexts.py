"""Every secret shape of the leak corpus, in every context a hidden corpus puts text in, on both engines.

The leak corpus (tests/data/leak_corpus/secret_shapes.json, expanded by tests/test_scrub_placements.py's
seeded generator) holds whole texts with their secret spans. Here each text is wrapped in the contexts a
token meets in real data: glued to ``_word`` or ``VAR_`` (``ghp_..._token``), inside quotes and backticks,
after a JSON escape (``\\n``, ``\\u0022``), %-encoded in a URL, in a code block, a JSON string, a key=value
pair. No secret span (nor a 16-character fragment of a long random body) may survive the scrub. This is the
boundary rule's test: a rule whose trailing or leading boundary refuses ``_``, ``-``, ``.``, an escape's
last letter or a %-escape's last digit lets the whole token through.

Then the generic rule (an unknown vendor's prefixed key): invented vendors are found, and the benign
look-alikes a scrubber must leave byte for byte (git SHAs, UUIDs, digests, API object ids, identifiers,
package names, CSS, version strings) stay.
"""

from __future__ import annotations

import random
import string

import pytest
from memdedup.scrub import CredentialScrubber
from test_scrub_placements import FRAGMENT, FRAGMENT_MIN_BODY, SHAPES, Secret, shape_sample

ENGINES = ["rust", "python"]

# (name, wrap): how a text sits in its surroundings. Each keeps the text whole.
CONTEXTS: list[tuple[str, str]] = [
    ("glued_word_after", "{}_token"),
    ("glued_var_before", "MY_VAR_{}"),
    ("glued_dash", "x-{}-y"),
    ("dot_after", "see {}."),
    ("slashes", "/v1/{}/items"),
    ("double_quotes", '"{}"'),
    ("single_quotes", "'{}'"),
    ("backticks", "`{}`"),
    ("percent_quotes", "q=%22{}%22&x=1"),
    ("json_u_escape", "\\u0022{}\\u0022"),
    ("json_newline_escape", "line one\\n{}\\nline two"),
    ("json_tab_escape", "\\t{}\\t"),
    ("hex_escape", "\\x22{}\\x22"),
    ("parentheses", "({})"),
    ("angle_brackets", "<{}>"),
    ("square_brackets", "[{}]"),
    ("query_value", "https://api.example.com/v1?key={}&page=2"),
    ("url_path", "https://api.example.com/keys/{}/rotate"),
    ("code_block", "```bash\nexport X={}\n```"),
    ("json_string", '{{"note": "{}", "ok": true}}'),
    ("key_equals", "config={};"),
    ("colon_after", "{}: rotated"),
]


def _needles(secret: Secret) -> list[str]:
    """The secret and, for a long random body, three 16-character fragments of it (a redaction that
    stops short leaves one)."""
    out = [secret.text]
    body = secret.body
    if len(body) >= FRAGMENT_MIN_BODY:
        out += [body[s : s + FRAGMENT] for s in (0, (len(body) - FRAGMENT) // 2, len(body) - FRAGMENT)]
    return out


@pytest.fixture(scope="module", params=ENGINES)
def scrubber(request: pytest.FixtureRequest) -> CredentialScrubber:
    return CredentialScrubber(implementation=request.param)


@pytest.mark.parametrize("context", [c for _, c in CONTEXTS], ids=[n for n, _ in CONTEXTS])
def test_no_shape_survives_in_any_context(scrubber: CredentialScrubber, context: str) -> None:
    leaks = []
    for shape in SHAPES:
        sample = shape_sample(shape, "context")
        out = scrubber.scrub_text(context.format(sample.text)).text
        for secret in sample.secrets:
            if len(secret.text) < 8:
                continue
            if any(needle in out for needle in _needles(secret)):
                leaks.append(f"{shape['id']}: {secret.hint}")
                break
    assert not leaks, f"{len(leaks)} shapes survive in this context:\n  " + "\n  ".join(leaks)


# ---------------------------------------------------------------------------------------------------
# The generic rule: an unknown vendor's key
# ---------------------------------------------------------------------------------------------------
_AN = string.ascii_letters + string.digits
_LOWER = string.ascii_lowercase + string.digits
_URL = _AN + "_-"


def _random(alphabet: str, n: int, seed: str) -> str:
    rng = random.Random(seed)
    while True:
        out = "".join(rng.choice(alphabet) for _ in range(n))
        classes = [
            c
            for c in (string.digits, string.ascii_lowercase, string.ascii_uppercase)
            if set(c) & set(alphabet)
        ]
        if out[0].isalnum() and out[-1].isalnum() and all(set(out) & set(c) for c in classes):
            return out


# Vendors no rule names: one-case prefixes of 2-16 characters, _ or -, a random body.
UNKNOWN_VENDOR_KEYS = [
    "zq_" + _random(_AN, 32, "1"),
    "acmeco-" + _random(_AN, 40, "2"),
    "ACMEKEY_" + _random(_AN, 24, "3"),
    "vnd_live_" + _random(_AN, 30, "4"),
    "wxy-" + _random(_URL, 48, "5"),
    "qrst_" + _random(_LOWER, 40, "6"),
    "k9_" + _random(_AN, 20, "7"),
    "corp-api-" + _random(_AN, 64, "8"),
]


@pytest.mark.parametrize("key", UNKNOWN_VENDOR_KEYS)
@pytest.mark.parametrize("where", ["prose {} here", '{{"x": "{}"}}', "{}_token", "\\n{}"])
def test_an_unknown_vendors_key_is_redacted(scrubber: CredentialScrubber, key: str, where: str) -> None:
    out = scrubber.scrub_text(where.format(key)).text
    body = key[key.index("_" if "_" in key[:10] else "-") + 1 :]
    assert body[-16:] not in out and body[:16] not in out, out


BENIGN = [
    "fixed in commit 3f2a9c1d8e7b6a5f4c3d2e1f0a9b8c7d6e5f4a3b on main",
    "request id 123e4567-e89b-12d3-a456-426614174000 timed out",
    "GPU-9baca7f5-0f2f-01ac-6b05-8da14d6e9005 is the device uuid",
    '"integrity": "sha512-' + _random(_AN + "+/", 86, "sri") + '=="',
    "the wheel's sha256-e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 digest",
    "build-9b2d1c4e5f60718293a4b5c6d7e8f9012a3b4c5d6e7f8091a2b3c4d5e6f70819 finished",
    "Stripe customer cus_NffrFeUfNV2Hib and payment pi_3MtwBwLkdIwHu7ix28a3tqPa",
    "Anthropic message msg_01XFDUDYJgAACzvnptvVoYEL and request req_011CRxQ7kuNpV7MsV3Kc9wtz",
    "OpenAI tool call call_Ao02pnFYXD6GN1yzc0uXPsvF in chatcmpl-9xYzAbCdEfGhIjKlMnOpQrStUvWx",
    "run test_LineOver1DRangeSeries and test_concat_NaT_dataframes_all_NaT_axis_0",
    "the model microsoft_MiniLM-L12-H384-uncased and BSD-3-Clause-No-Nuclear-License-2014",
    "install eslint-plugin-react-hooks, @types/node and sphinx-autodoc-typehints",
    ".btn-primary-lg { color: #1f2937; border-radius: 4px; } .col-md-offset-3",
    "upgrade to v2.3.14-rc.1 on Python 3.11.9 (build 20240601-1200)",
    "we use sk-learn for the baseline and task-management-dashboard for tickets",
    "logo: data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA"
    "60e6kgAAAABJRU5ErkJggg==",
    "AWS::Pinpoint::Segment and AWS-ApplicationInsights are resource names",
    "snake_case_identifier_with_many_words_2024 and kebab-case-name-with-words-42",
]


@pytest.mark.parametrize("text", BENIGN)
def test_benign_look_alikes_of_prefixed_keys_stay_byte_for_byte(
    scrubber: CredentialScrubber, text: str
) -> None:
    assert scrubber.scrub_text(text).text == text
