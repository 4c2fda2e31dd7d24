"""A secret longer than any cap the detector has is redacted whole: no byte of it is left in clear.

The detector reads values, tokens and key blocks with code and bounded regexes; where a bound cuts a
secret's span the rest of the secret must not survive (issue 23: ``api_key=`` followed by 1,500 random
characters was stored as ``[REDACTED:API_KEY]`` and the last 476 in clear). Every shape below puts one
long random secret (1,025 bytes to 70,000) after each kind of key, flag, header, prose and token prefix,
on both engines; the scrubbed text must hold no 12-byte window of the secret.
"""

from __future__ import annotations

import random
import string
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memdedup._scrub_py import extend as _mirror_extend
from memdedup.scrub import CredentialScrubber
from strategies import n_examples

ALNUM = string.ascii_letters + string.digits
# Bytes a password may hold that end no value (no blank, quote, bracket, , or ;, & or #).
SYMBOLS = ALNUM + "!@$%^*+/=~-_"
# Bytes a URL's password may hold (an @ too: the password runs to the last @ before the host).
URL_SYMBOLS = ALNUM + "!@$%^*+=~-_:"
LENGTHS = (1025, 1500, 3000, 70_000)
WINDOW = 12

# name -> (template, alphabet): the secret goes where {s} is.
SHAPES: dict[str, tuple[str, str]] = {
    "assignment": ("api_key={s}", ALNUM),
    "assignment_env_line": ("export API_KEY={s}\nnext line", ALNUM),
    "assignment_symbols": ("db_password={s} and more", SYMBOLS),
    "password_colon": ("password: {s}", SYMBOLS),
    "password_colon_clause": ("password: {s} then log in", SYMBOLS),
    # A 24-word seed phrase: the clause's 16-word limit decides how far it is judged, not how much of
    # an accepted one is redacted.
    "seed_phrase_24_words": ("seed phrase: {s}. Keep it safe.", ""),
    "passphrase_24_words": ("the passphrase was {s}, keep it", ""),
    "prose_password": ("the password is {s}", ALNUM),
    "prose_passphrase": ("the passphrase was {s}, keep it", ALNUM),
    "prose_api_key": ("my API key is {s}", ALNUM),
    "quoted": ('token="{s}"', ALNUM),
    "quoted_unclosed": ('token="{s}', ALNUM),
    "json": ('{{"client_secret": "{s}", "x": 1}}', ALNUM),
    "json_escaped": ('{{"text": "the config has \\"token\\": \\"{s}\\" in it"}}', ALNUM),
    "query": ("GET https://api.example.com/v1?user=dana&token={s}&page=2", ALNUM),
    "flag": ("deploy --password {s} --verbose", SYMBOLS),
    "flag_api_key": ("tool --api-key {s}", ALNUM),
    "authorization_bearer": ("Authorization: Bearer {s}", ALNUM),
    "authorization_json": ('{{"Authorization": "Bearer {s}"}}', ALNUM),
    "bearer_prose": ("send it with bearer {s} as the header", ALNUM),
    "curl_user": ("curl -u dana:{s} https://example.com", SYMBOLS),
    "mysql": ("mysql -u root -p{s} appdb", SYMBOLS),
    "sshpass": ("sshpass -p {s} ssh dana@host", SYMBOLS),
    "docker_login": ("docker login -u dana -p {s} registry.example.com", SYMBOLS),
    "netrc": ("machine example.com login dana password {s}", SYMBOLS),
    "password_word": ("log in with password {s} today", SYMBOLS),
    "connection_string": ("Server=db;User Id=sa;Password={s};Encrypt=true", SYMBOLS),
    "azure_sas": ("Endpoint=sb://x.example.net/;SharedAccessSignature={s}", ALNUM),
    "jwt_tail": ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.{s}", ALNUM),
    "labelled_token": ("here is the token: {s}", ALNUM),
    "url_password": ("db is postgres://deploy:{s}@db.internal:5432/app", ALNUM),
    "url_password_symbols": ("mirror https://bot:{s}@git.example.com/repo.git", URL_SYMBOLS),
    "url_password_no_user": ("redis://:{s}@cache:6379", ALNUM),
    "mnemonic_24_words": ("mnemonic: {s}. Keep it safe.", ""),
    "wallet_mnemonic_24_words": ("wallet mnemonic: {s}", ""),
}


WORDS = "abandon ability able about above absent absorb abstract absurd abuse access accident".split()


def _secret(alphabet: str, length: int, seed: int) -> str:
    rng = random.Random(seed)
    if not alphabet:  # words: 24 of them, whatever the length
        return " ".join(rng.choice(WORDS) + str(rng.randrange(10)) for _ in range(24))
    # Random letters and digits, with a digit and both cases guaranteed (some rules need them).
    return "aZ7" + "".join(rng.choice(alphabet) for _ in range(length - 3))


def _leaked_windows(secret: str, text: str) -> int:
    windows = {secret[i : i + WINDOW] for i in range(len(secret) - WINDOW + 1)}
    return sum(1 for i in range(len(text) - WINDOW + 1) if text[i : i + WINDOW] in windows)


@pytest.mark.parametrize("implementation", ["rust", "python"])
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_a_long_secret_leaves_nothing_in_clear(name: str, implementation: str) -> None:
    template, alphabet = SHAPES[name]
    scrubber = CredentialScrubber(implementation=implementation)
    for length in LENGTHS:
        secret = _secret(alphabet, length, length)
        text = template.format(s=secret)
        out = scrubber.scrub_text(text).text
        leaked = _leaked_windows(secret, out)
        assert leaked == 0, (
            f"{name}, {length} bytes on {implementation}: {leaked} windows of the secret left; "
            f"output starts {out[:80]!r}"
        )


@pytest.mark.parametrize("implementation", ["rust", "python"])
@pytest.mark.parametrize("newline", ["\n", "\\n"])
@pytest.mark.parametrize("end", ["\n-----END PRIVATE KEY-----\nthanks", "\nthanks"])
def test_a_long_key_block_leaves_nothing_in_clear(implementation: str, newline: str, end: str) -> None:
    """A private key block longer than the 64 KiB a block was read before, real or escaped newlines,
    terminated or truncated."""
    body = _secret(ALNUM + "+/", 70_000, 7)
    lines = newline.join(body[i : i + 64] for i in range(0, len(body), 64))
    text = "-----BEGIN PRIVATE KEY-----" + newline + lines + end.replace("\n", newline)
    out = CredentialScrubber(implementation=implementation).scrub_text(text).text
    assert _leaked_windows(body, out.replace(newline, "")) == 0, out[:120]


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_both_engines_agree_on_long_secrets(name: str) -> None:
    template, alphabet = SHAPES[name]
    rust, python = CredentialScrubber(implementation="rust"), CredentialScrubber(implementation="python")
    for length in (1500, 70_000):
        text = template.format(s=_secret(alphabet, length, length))
        assert rust.scan(text) == python.scan(text)


# ---------------------------------------------------------------------------------------------------
# The shortcuts that keep long values linear change no finding
# ---------------------------------------------------------------------------------------------------
# Pieces that nest keys in values in every mode: tokens, clauses, quotes and escaped quotes, URL
# queries, prose, flags, templates a key keeps, sentence ends, placeholders, key blocks and token runs.
_NESTING = (
    "key=", "api_key=", "password:", "password: ", "pin=", "token=", "?token=", "&key=", "&", "#",
    '"token": "', "secret='", "`", '"', "'", '\\"', "\\'", "\\n", " ", "  ", "\t", "\n", "\r", ",", ";",
    ".", ":", "!", "(", ")", "<", "your_", "${X}", "***", "4096", "1.5", "abc", "Ab1x9Zq7Lm", "stored",
    "in", "required", "X-Auth-Key: ", "the password is ", "passphrase was ", " --password ",
    " --token=", "[REDACTED:API_KEY]", "Bearer ", "Authorization: ", " bearer ",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIx", ".", "-----BEGIN PRIVATE KEY-----\n",
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ\n", "-----END PRIVATE KEY-----",
    "the token: ", "sk_live_", "aZ7qW3eR5tY7uI9oP1aS3dF5gH7jK9lZ", "curl -u a:", "sshpass -p ",
)  # fmt: skip
_NESTED_TEXT = st.lists(st.sampled_from(_NESTING), min_size=1, max_size=40).map("".join)


class _NoShortcuts:
    """The mirror with every shortcut of a long read off: no value is skipped as covered, no stretch,
    trim, key block path or byte count is remembered between reads."""

    def __enter__(self) -> None:
        mirror = _mirror_extend
        self.saved = (mirror.Cover.holds, mirror.Stretch.stop, mirror.Memo.counts, mirror.key_block)
        _, stop, counts, key_block = self.saved

        def fresh_stop(self: Any, d: bytes, p: int, pattern: Any) -> int:
            self.from_ = self.to = -1
            return stop(self, d, p, pattern)

        def fresh_counts(self: Any, d: bytes, start: int, end: int) -> list[int]:
            self.span = (0, 0, [0] * 256)
            return counts(self, d, start, end)

        def fresh_block(d: bytes, body_at: int, putty: bool, memo: Any) -> int:
            memo.block = ([], 0)
            return key_block(d, body_at, putty, memo)

        def no_trim(self: Any) -> None:
            return None

        mirror.Cover.holds = lambda *args: False  # type: ignore[method-assign]
        mirror.Stretch.stop = fresh_stop  # type: ignore[method-assign]
        mirror.Memo.counts = fresh_counts  # type: ignore[method-assign]
        mirror.key_block = fresh_block
        mirror.Memo.trim = property(no_trim, lambda self, value: None)  # type: ignore[assignment]

    def __exit__(self, *exc: object) -> None:
        mirror = _mirror_extend
        mirror.Cover.holds, mirror.Stretch.stop, mirror.Memo.counts, mirror.key_block = self.saved
        del mirror.Memo.trim


@settings(max_examples=n_examples(400), deadline=None)
@given(_NESTED_TEXT)
def test_shortcuts_change_no_finding(text: str) -> None:
    """A key nested in a value it cannot reach past is not read again, and reads resume from what
    earlier reads found: the findings are those of reading every key's value from scratch, and the
    core's are the mirror's."""
    python = CredentialScrubber(implementation="python")
    fast = python.scan(text)
    with _NoShortcuts():
        slow = python.scan(text)
    assert fast == slow
    assert CredentialScrubber(implementation="rust").scan(text) == fast
