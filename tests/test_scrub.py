"""The credential scrubber: every credential kind, every benign look-alike, key names as words."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memdedup.errors import InputTypeError
from memdedup.scrub import CREDENTIAL_KINDS, PII_KINDS, CredentialScrubber, is_credential_key, key_words
from strategies import n_examples

JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n"
    "-----END RSA PRIVATE KEY-----"
)

# Made-up credentials, assembled at run time so that no secret scanner mistakes this file for a leak.
STRIPE_LIVE = "sk_" + "live_" + "4eC39HqLyjWDarjtT1zdp7dc"
SLACK = "xox" + "b-1234567890-abcdefghijkl"
GOOGLE = "AI" + "zaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"

# (text, the secret that must disappear, the kind reported)
CREDENTIALS = [
    (
        "Authorization: Bearer 4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c",
        "4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c",
        "BEARER_TOKEN",
    ),
    ("curl -H 'Authorization: Bearer abcdefghijklmnopqrst'", "abcdefghijklmnopqrst", "BEARER_TOKEN"),
    ("send bearer 9f8e7d6c5b4a39281706f5e4 with it", "9f8e7d6c5b4a39281706f5e4", "BEARER_TOKEN"),
    ("Authorization: Basic ZGFuYTpodW50ZXIy", "ZGFuYTpodW50ZXIy", "BASIC_AUTH"),
    (f"the session token is {JWT}.", JWT, "JWT"),
    (
        "key sk-abcdefghij0123456789ABCDEFGHIJabcdefghij0123",
        "sk-abcdefghij0123456789ABCDEFGHIJabcdefghij0123",
        "OPENAI_API_KEY",
    ),
    (
        "OPENAI key: sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
        "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
        "OPENAI_API_KEY",
    ),
    (
        "use sk-ant-api03-Xy7zAb3dEf6hIj9kLm2nOp5qRs8tUv-AA",
        "sk-ant-api03-Xy7zAb3dEf6hIj9kLm2nOp5qRs8tUv-AA",
        "ANTHROPIC_API_KEY",
    ),
    ("stripe " + STRIPE_LIVE, STRIPE_LIVE, "STRIPE_STYLE_KEY"),
    ("publishable pk_test_51H8xYzAbCdEfGhIj2KlMn", "pk_test_51H8xYzAbCdEfGhIj2KlMn", "STRIPE_STYLE_KEY"),
    ("service api_live_9d8c7b6a5f4e3d2c1b0a", "api_live_9d8c7b6a5f4e3d2c1b0a", "STRIPE_STYLE_KEY"),
    ("and token_test_a1b2c3d4e5f6g7h8i9j0 here", "token_test_a1b2c3d4e5f6g7h8i9j0", "STRIPE_STYLE_KEY"),
    ("AWS key AKIAIOSFODNN7EXAMPLE in CI", "AKIAIOSFODNN7EXAMPLE", "AWS_ACCESS_KEY_ID"),
    ("temporary ASIAY34FZKBOKMUTVV7A creds", "ASIAY34FZKBOKMUTVV7A", "AWS_ACCESS_KEY_ID"),
    (
        "gh: ghp_Zt9xQw3Lm8Rk2Vb7Nc4Hj6Pd1Fs5Gy0Ae2Kx",
        "ghp_Zt9xQw3Lm8Rk2Vb7Nc4Hj6Pd1Fs5Gy0Ae2Kx",
        "GITHUB_TOKEN",
    ),
    (
        "fine-grained github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
        "GITHUB_TOKEN",
    ),
    ("slack " + SLACK, SLACK, "SLACK_TOKEN"),
    ("maps " + GOOGLE, GOOGLE, "GOOGLE_API_KEY"),
    (
        f"deploy key:\n{PEM}\nend",
        "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
        "PRIVATE_KEY",
    ),
    (
        "truncated -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
        "PRIVATE_KEY",
    ),
    ("db is postgres://deploy:Sup3rS3cret!@db.internal:5432/app", "Sup3rS3cret!", "URL_PASSWORD"),
    ("mirror https://bot:p@ss@w0rd@git.example.com/repo.git", "p@ss@w0rd", "URL_PASSWORD"),
    ("config password=hunter2 and more", "hunter2", "PASSWORD"),
    ("note: DB_PASSWORD=Tr0ub4dor&3", "Tr0ub4dor&3", "PASSWORD"),
    ("the admin password is hunter2.", "hunter2", "PASSWORD"),
    ('{"api_key": "abc123XYZ"}', "abc123XYZ", "API_KEY"),
    ("apiKey: 0123456789abcdef", "0123456789abcdef", "API_KEY"),
    ("authToken=opaque-value-42", "opaque-value-42", "TOKEN"),
    ("client-secret: s3cr3t-v4lue", "s3cr3t-v4lue", "SECRET"),
    (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "SECRET",
    ),
]

BENIGN = [
    "the bearer of bad news arrived",
    "Bearer authentication is used by the gateway",
    "we use sk-learn and scikit-learn for the baseline",
    "the task-management-dashboard-component ships today",
    "token_test_suite passes; pk_test_case1 too",
    "max_tokens=4096 and token_count: 512",
    "secretary: Joan; author: Dana",
    "primary_key=id and sort_key: created_at",
    "the password is required and must be rotated monthly",
    "password policy: at least 12 characters",  # the key is "policy", not the password
    "version 1.2.3 released 2024-01-15 at 10:30",
    "commit 3f9a2b1c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f90 fixed it",
    "uuid 123e4567-e89b-12d3-a456-426614174000",
    "http://example.com:8080/path?x=1",
    "ssh://git@github.com/acme/repo.git",
    "AKIA is a prefix, AKIAX is short",
    "ghp_ is the classic token prefix",
    "email dana@example.com and phone +1 415 555 0100 (PII is opt-in)",
    "the JWT header starts with eyJ",
    "Use `Authorization: Bearer <token>` in requests",
    "password: [REDACTED:PASSWORD]",
]


@pytest.fixture
def scrubber() -> CredentialScrubber:
    return CredentialScrubber()


@pytest.mark.parametrize(
    ("text", "secret", "kind"), CREDENTIALS, ids=[c[2] + f"-{i}" for i, c in enumerate(CREDENTIALS)]
)
def test_each_credential_kind_is_redacted_with_its_kind(
    scrubber: CredentialScrubber, text: str, secret: str, kind: str
) -> None:
    result = scrubber.scrub_text(text)
    assert secret not in result.text
    assert f"[REDACTED:{kind}]" in result.text
    assert kind in result.redactions
    assert kind in CREDENTIAL_KINDS


def test_every_declared_credential_kind_is_exercised() -> None:
    assert set(CREDENTIAL_KINDS) == {kind for _, _, kind in CREDENTIALS}


@pytest.mark.parametrize("text", BENIGN)
def test_benign_look_alikes_are_left_alone(scrubber: CredentialScrubber, text: str) -> None:
    result = scrubber.scrub_text(text)
    assert result.text == text
    assert result.redactions == ()


def test_placeholders_keep_what_surrounds_the_secret(scrubber: CredentialScrubber) -> None:
    assert scrubber.scrub_text("Authorization: Bearer 4f9a8b7c6d5e4f3a2b1c0d9e").text == (
        "Authorization: Bearer [REDACTED:BEARER_TOKEN]"
    )
    assert scrubber.scrub_text("postgres://deploy:pw123@db/app").text == (
        "postgres://deploy:[REDACTED:URL_PASSWORD]@db/app"
    )
    assert scrubber.scrub_text('{"password": "hunter2", "user": "dana"}').text == (
        '{"password": "[REDACTED:PASSWORD]", "user": "dana"}'
    )
    # A refused match does not hide the credential inside it ("note" is not a credential key).
    assert scrubber.scrub_text("note: password=hunter2").text == "note: password=[REDACTED:PASSWORD]"
    # A truncated private key takes its base64 lines with it, not the prose after them.
    truncated = (
        "-----BEGIN EC PRIVATE KEY-----\n"
        "MHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oGYHgJH0Ho7d\n"
        "The user said hi"
    )
    assert scrubber.scrub_text(truncated).text == "[REDACTED:PRIVATE_KEY]\nThe user said hi"


def test_more_specific_kind_wins_over_the_assignment(scrubber: CredentialScrubber) -> None:
    result = scrubber.scrub_text("api_key: sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z")
    assert result.text == "api_key: [REDACTED:OPENAI_API_KEY]"
    assert result.redactions == ("OPENAI_API_KEY",)


def test_pii_is_opt_in() -> None:
    text = "reach Dana at dana.r@example.co.uk or +44 20 7946 0958 or (415) 555-0100"
    assert CredentialScrubber().scrub_text(text).text == text
    result = CredentialScrubber(pii=True).scrub_text(text)
    assert "dana.r@example.co.uk" not in result.text
    assert "7946" not in result.text and "555-0100" not in result.text
    assert result.redactions.count("EMAIL") == 1 and result.redactions.count("PHONE") == 2
    assert set(result.redactions) <= set(PII_KINDS)
    # Versions, dates and times are not phone numbers.
    benign = "release 2024-01-15 10:30, version 10.4.2, build 20240115"
    assert CredentialScrubber(pii=True).scrub_text(benign).text == benign


@pytest.mark.parametrize(
    ("name", "words"),
    [("authToken", ["auth", "token"]), ("APIKey", ["api", "key"]), ("client-secret", ["client", "secret"]),
     ("OPENAI_API_KEY", ["openai", "api", "key"]), ("max_tokens", ["max", "tokens"])],
)  # fmt: skip
def test_key_words_split_snake_kebab_and_camel_case(name: str, words: list[str]) -> None:
    assert key_words(name) == words


@pytest.mark.parametrize(
    "name",
    ["api_key", "apiKey", "APIKey", "x-api-key", "apikey", "authToken", "access_token", "id_token", "token",
     "client-secret", "clientSecret", "secret", "DB_PASSWORD", "password", "passwd", "passphrase",
     "aws_secret_access_key", "private_key", "privateKey", "ssh_key", "signing-key", "credentials",
     "Authorization", "session_cookie", "basic_auth", "jwt"],
)  # fmt: skip
def test_credential_key_names_are_recognised(name: str) -> None:
    assert is_credential_key(name)


@pytest.mark.parametrize(
    "name",
    ["max_tokens", "token_count", "tokenizer", "secretary", "author", "authority", "primary_key", "sort_key",
     "keyboard", "monkey", "access_key_id", "subject", "memory_category", "passenger", "keynote", "value", "",
     42],
)  # fmt: skip
def test_benign_key_names_are_kept(name: object) -> None:
    assert not is_credential_key(name)


def test_scrub_properties_walks_mappings_and_lists(scrubber: CredentialScrubber) -> None:
    properties = {
        "api_key": "x",
        "max_tokens": 400,
        "nested": {"authToken": "y", "note": "use sk-ant-api03-Xy7zAb3dEf6hIj9kLm2nOp5qRs8tUv-AA"},
        "hosts": [{"client-secret": 1}, {"author": "me", "url": "redis://:s3cret99@cache:6379"}],
        "flags": [True, None, 3.5],
        "secretary": "Joan",
    }
    original = copy.deepcopy(properties)
    result = scrubber.scrub_properties(properties)
    assert properties == original  # the input is not mutated
    assert result.properties == {
        "max_tokens": 400,
        "nested": {"note": "use [REDACTED:ANTHROPIC_API_KEY]"},
        "hosts": [{}, {"author": "me", "url": "redis://:[REDACTED:URL_PASSWORD]@cache:6379"}],
        "flags": [True, None, 3.5],
        "secretary": "Joan",
    }
    assert result.dropped_keys == ("api_key", "nested.authToken", "hosts[0].client-secret")
    assert sorted(result.redactions) == ["ANTHROPIC_API_KEY", "URL_PASSWORD"]


def test_a_key_that_is_itself_a_credential_is_scrubbed(scrubber: CredentialScrubber) -> None:
    result = scrubber.scrub_properties({"AKIAIOSFODNN7EXAMPLE": "aws"})
    assert result.properties == {"[REDACTED:AWS_ACCESS_KEY_ID]": "aws"}
    assert result.redactions == ("AWS_ACCESS_KEY_ID",)


def test_wrong_types_are_refused(scrubber: CredentialScrubber) -> None:
    with pytest.raises(InputTypeError):
        scrubber.scrub_text(b"password=x")  # type: ignore[arg-type]
    with pytest.raises(InputTypeError):
        scrubber.scrub_properties(["password", "x"])  # type: ignore[arg-type]


_FRAGMENTS = st.sampled_from([text for text, _, _ in CREDENTIALS] + BENIGN + [" ", "\n", ": ", "=", "'", '"'])


@settings(max_examples=n_examples(200))
@given(st.lists(st.one_of(_FRAGMENTS, st.text(max_size=20)), max_size=8).map("".join), st.booleans())
def test_scrubbing_is_idempotent(text: str, pii: bool) -> None:
    scrubber = CredentialScrubber(pii=pii)
    once = scrubber.scrub_text(text)
    twice = scrubber.scrub_text(once.text)
    assert twice.text == once.text
    assert twice.redactions == ()


@settings(max_examples=n_examples(100))
@given(st.lists(st.sampled_from(CREDENTIALS), min_size=1, max_size=4), st.text(max_size=30))
def test_no_known_secret_survives_in_any_combination(parts: list[tuple[str, str, str]], filler: str) -> None:
    text = (" " + filler + "\n").join(text for text, _, _ in parts)
    scrubbed = CredentialScrubber().scrub_text(text).text
    for _, secret, _ in parts:
        assert secret not in scrubbed
