"""The credential scrubber's surface and policy, on both engines: kinds in prose, 60 benign look-alikes,
span-exact placeholders, key names as words, the property policy, types and errors, idempotency."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memdedup.errors import InputTypeError, InvalidInputError
from memdedup.scrub import (
    CREDENTIAL_KINDS,
    KEY_KINDS,
    PII_KINDS,
    RULES,
    CredentialScrubber,
    credential_kind,
    is_credential_key,
    key_words,
    redact,
)
from strategies import n_examples
from test_scrub_vectors import fake

ENGINES = ["rust", "python"]

JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEA" + fake("b64", 48, "pem1") + "\n" + fake("b64", 64, "pem2") + "\n"
    "-----END RSA PRIVATE KEY-----"
)
STRIPE_LIVE = "sk_" + "live_" + fake("an", 24, "stripe")
SLACK = "xox" + "b-" + fake("d", 12, 1) + "-" + fake("an", 24, 2)
GOOGLE = "AI" + "za" + fake("url", 35, "google")
GHP = "ghp_" + fake("an", 36, "ghp")
ANTHROPIC = "sk-ant-api03-" + fake("url", 40, "ant") + "-AA"
OPENAI = "sk-proj-" + fake("url", 32, "openai")

# (text, the secret that must disappear, the kind reported): the prose placements of the old suite
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
    (f"key {OPENAI}", OPENAI, "OPENAI_API_KEY"),
    (f"use {ANTHROPIC}", ANTHROPIC, "ANTHROPIC_API_KEY"),
    ("stripe " + STRIPE_LIVE, STRIPE_LIVE, "STRIPE_KEY"),
    ("AWS key AKIAIOSFODNN7EXAMPLE in CI", "AKIAIOSFODNN7EXAMPLE", "AWS_ACCESS_KEY_ID"),
    ("temporary ASIAY34FZKBOKMUTVV7A creds", "ASIAY34FZKBOKMUTVV7A", "AWS_ACCESS_KEY_ID"),
    (f"gh: {GHP}", GHP, "GITHUB_TOKEN"),
    ("slack " + SLACK, SLACK, "SLACK_TOKEN"),
    ("maps " + GOOGLE, GOOGLE, "GOOGLE_API_KEY"),
    (f"deploy key:\n{PEM}\nend", PEM.split("\n")[1], "PRIVATE_KEY"),
    ("db is postgres://deploy:Sup3rS3cret!@db.internal:5432/app", "Sup3rS3cret!", "URL_PASSWORD"),
    ("mirror https://bot:p@ss@w0rd@git.example.com/repo.git", "p@ss@w0rd", "URL_PASSWORD"),
    ("config password=hunter2 and more", "hunter2", "PASSWORD"),
    ("note: DB_PASSWORD=Tr0ub4dor&3", "Tr0ub4dor&3", "PASSWORD"),
    ("the admin password is hunter2.", "hunter2", "PASSWORD"),
    ('{"api_key": "abc123XYZ"}', "abc123XYZ", "API_KEY"),
    ("apiKey: 0123456789abcdef", "0123456789abcdef", "API_KEY"),
    ("authToken=opaque-value-42", "opaque-value-42", "TOKEN"),
    ("client-secret: s3cr3t-v4lue", "s3cr3t-v4lue", "SECRET"),
    ("my PIN is 4821", "4821", "PIN"),
    (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "AWS_SECRET_ACCESS_KEY",
    ),
]

# Text a memory legitimately holds: each must come back byte for byte.
BENIGN = [
    "the bearer of bad news arrived",
    "Bearer authentication is used by the gateway",
    "the Authorization header uses Bearer tokens",
    "Use `Authorization: Bearer <token>` in requests",
    "we use sk-learn and scikit-learn for the baseline",
    "the task-management-dashboard-component ships today",
    "token_test_suite passes; pk_test_case1 too",
    "max_tokens=4096 and token_count: 512",
    "The model's max_tokens and eos_token settings",
    "token: 4096 is the context limit",
    "the token count was 4096",
    "tokens per second: 85",
    "secretary: Joan; author: Dana",
    "the secretary filed the report",
    "secret_manager: vault",
    "secret_santa: Dana",
    "primary_key=id and sort_key: created_at",
    "the password is required and must be rotated monthly",
    "password: required",
    "password policy: at least 12 characters",
    "password_policy: at least 12 characters",
    "password_min_length: 12",
    "password: [REDACTED:PASSWORD]",
    "password: ********",
    "password reset link: https://example.com/reset?token=",
    "api_key: ${OPENAI_API_KEY}",
    "token: <your-token>",
    "pin: none",
    "my PIN code reminder is on the fridge",
    "Set OPENAI_API_KEY in your environment",
    "The API key is stored in 1Password",
    "version 1.2.3 released 2024-01-15 at 10:30",
    "commit 3f9a2b1c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f90 fixed it",
    "git SHA a94a8fe5ccb19ba61c4c0873d391e987982fbbd3",
    "uuid 123e4567-e89b-12d3-a456-426614174000",
    "Docker image sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
    "http://example.com:8080/path?x=1",
    "ssh://git@github.com/acme/repo.git",
    "See https://docs.example.com/auth/tokens#refresh for details",
    "AKIA is a prefix, AKIAX is short",
    "ghp_ is the classic token prefix",
    "the JWT header starts with eyJ",
    "email dana@example.com and phone +1 415 555 0100 (PII is opt-in)",
    "the key takeaway: ship it",
    "keyboard shortcuts: ctrl+k",
    "passing tests: 42",
    "I passed the exam with 95 points",
    "session_timeout: 3600",
    "the session was long",
    "auth_method: oauth2",
    "signature_algorithm: RS256",
    "cookie_policy: strict",
    "pk_live keys are publishable",
    "mysql -u root -p",
    "curl -u dana https://api.example.com",
    "run `ssh-keygen -t ed25519 -C dana@example.com`",
    "export PATH=$HOME/bin:$PATH",
    "hunter2 is a famous meme password",
    "the admin password is stored in vault",
]


@pytest.fixture(params=ENGINES)
def scrubber(request: pytest.FixtureRequest) -> CredentialScrubber:
    return CredentialScrubber(implementation=request.param)


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


def test_the_benign_list_is_long_enough() -> None:
    assert len(BENIGN) >= 40


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
    assert scrubber.scrub_text('{"Authorization": "Bearer 4f9a8b7c6d5e4f3a2b1c0d9e"}').text == (
        '{"Authorization": "Bearer [REDACTED:BEARER_TOKEN]"}'
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


def test_overlaps_merge_into_one_span_named_by_the_most_specific_rule(scrubber: CredentialScrubber) -> None:
    result = scrubber.scrub_text(f"api_key: {OPENAI}")
    assert result.text == "api_key: [REDACTED:OPENAI_API_KEY]"
    assert result.redactions == ("OPENAI_API_KEY",)
    # a passphrase that holds a token: one placeholder covers both, nothing of either survives
    result = scrubber.scrub_text(f"password: my {GHP} phrase, then")
    assert result.text == "password: [REDACTED:GITHUB_TOKEN], then"


def test_spans_are_code_points_whatever_the_text_holds(scrubber: CredentialScrubber) -> None:
    for prefix in ["é", "😀", "\ud800", "\udfff\ud800", "\u200b\ufeff", "日本語", "\x00"]:
        text = f"{prefix} gh: {GHP} {prefix} pw: {prefix}x9{prefix}, end"
        result = scrubber.scrub_text(text)
        assert result.text == f"{prefix} gh: [REDACTED:GITHUB_TOKEN] {prefix} pw: [REDACTED:PASSWORD], end"


def test_a_str_subclass_is_scrubbed_as_its_characters(scrubber: CredentialScrubber) -> None:
    class Sneaky(str):
        def encode(self, *args: Any, **kwargs: Any) -> bytes:  # type: ignore[override]
            return b"nothing here"

        def __getitem__(self, index: Any) -> str:  # type: ignore[override]
            return "x"

    result = scrubber.scrub_text(Sneaky(f"gh: {GHP}"))
    assert result.text == "gh: [REDACTED:GITHUB_TOKEN]"
    assert type(result.text) is str


def test_pii_is_opt_in() -> None:
    text = "reach Dana at dana.r@example.co.uk or +44 20 7946 0958 or (415) 555-0100"
    for engine in ENGINES:
        assert CredentialScrubber(implementation=engine).scrub_text(text).text == text
        result = CredentialScrubber(pii=True, implementation=engine).scrub_text(text)
        assert "dana.r@example.co.uk" not in result.text
        assert "7946" not in result.text and "555-0100" not in result.text
        assert result.redactions.count("EMAIL") == 1 and result.redactions.count("PHONE") == 2
        assert set(result.redactions) <= set(PII_KINDS)
        # Versions, dates and times are not phone numbers.
        benign = "release 2024-01-15 10:30, version 10.4.2, build 20240115"
        assert CredentialScrubber(pii=True, implementation=engine).scrub_text(benign).text == benign


def test_the_kinds_come_from_the_catalogue() -> None:
    assert set(KEY_KINDS) <= set(CREDENTIAL_KINDS)
    assert {r.kind for r in RULES if not r.pii} - {"BY_KEY"} <= set(CREDENTIAL_KINDS)
    assert set(PII_KINDS) == {"EMAIL", "PHONE"}
    assert not set(PII_KINDS) & set(CREDENTIAL_KINDS)


# ---------------------------------------------------------------------------------------------------
# Key names as words: the final word decides
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "words"),
    [("authToken", ["auth", "token"]), ("APIKey", ["api", "key"]), ("client-secret", ["client", "secret"]),
     ("OPENAI_API_KEY", ["openai", "api", "key"]), ("max_tokens", ["max", "tokens"]),
     ("XApiKey", ["x", "api", "key"]), ("PGPASSWORD", ["pg", "password"]), ("apikey", ["api", "key"]),
     ("db.pass word", ["db", "pass", "word"]), ("sessionid", ["session", "id"])],
)  # fmt: skip
def test_key_words_split_snake_kebab_camel_dots_and_spaces(name: str, words: list[str]) -> None:
    assert key_words(name) == words


# The 21 credential-named keys, and more.
CREDENTIAL_KEYS = {
    "password": "PASSWORD", "api_key": "API_KEY", "apiKey": "API_KEY", "x-api-key": "API_KEY",
    "client_secret": "SECRET", "db_pass": "PASSWORD", "authToken": "TOKEN", "access_token": "TOKEN",
    "secret": "SECRET", "private_key": "SECRET", "Authorization": "TOKEN", "bearer": "TOKEN",
    "pass": "PASSWORD", "creds": "SECRET", "pin": "PIN", "key": "SECRET", "AccountKey": "SECRET",
    "signature": "SECRET", "session_id": "TOKEN", "otp": "PIN", "private_key_id": "SECRET",
    "APIKey": "API_KEY", "id_token": "TOKEN", "token": "TOKEN", "clientSecret": "SECRET",
    "DB_PASSWORD": "PASSWORD", "passwd": "PASSWORD", "passphrase": "PASSWORD", "pw": "PASSWORD",
    "aws_secret_access_key": "SECRET", "privateKey": "SECRET", "ssh_key": "SECRET",
    "signing-key": "SECRET", "credentials": "SECRET", "session_cookie": "TOKEN", "basic_auth": "SECRET",
    "jwt": "TOKEN", "PGPASSWORD": "PASSWORD", "seed_phrase": "PASSWORD", "otp_code": "PIN",
    "password_hash": "PASSWORD", "access_key_id": "SECRET", "mnemonic": "PASSWORD", "cvv": "PIN",
    "secret_key_base": "SECRET", "api key": "API_KEY", "seed phrase": "PASSWORD",
}  # fmt: skip


@pytest.mark.parametrize(("name", "kind"), sorted(CREDENTIAL_KEYS.items()))
def test_credential_key_names_are_recognised(name: str, kind: str) -> None:
    assert credential_kind(name) == kind
    assert is_credential_key(name)


@pytest.mark.parametrize(
    "name",
    ["max_tokens", "token_count", "tokenizer", "secretary", "author", "authority", "primary_key", "sort_key",
     "keyboard", "monkey", "subject", "memory_category", "passenger", "keynote", "value", "", 42,
     "password_min_length", "password_policy", "secret_manager", "eos_token", "next_page_token", "key_id",
     "public_key", "signature_algorithm", "auth_method", "cookie_policy", "session_timeout", "bypass",
     "boarding_pass", "secret_name", "token_limit", "hotkey", "pincode_lookup"],
)  # fmt: skip
def test_benign_key_names_are_kept(name: object) -> None:
    assert not is_credential_key(name)


# ---------------------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------------------
def test_scrub_properties_walks_mappings_and_lists(scrubber: CredentialScrubber) -> None:
    properties = {
        "api_key": "k3y-" + fake("an", 12, 1),
        "max_tokens": 400,
        "nested": {"authToken": "y9" + fake("an", 10, 2), "note": f"use {ANTHROPIC}"},
        "hosts": [
            {"client-secret": "s" + fake("an", 10, 3)},
            {"author": "me", "url": "redis://:s3cret99@cache:6379"},
        ],
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


def test_credential_keys_keep_obvious_placeholders(scrubber: CredentialScrubber) -> None:
    kept = {
        "password": "required", "token": 4096, "api_key": None, "secret": "***", "pin": True,
        "key": "<redacted>", "access_token": "${ACCESS_TOKEN}", "client_secret": "", "bearer": "none",
        "session_id": 0.5, "credentials": {}, "otp": [], "signature": "[REDACTED:SECRET]",
        "auth": "YOUR_AUTH_TOKEN", "jwt": "changeme", "x-api-key": "$API_KEY",
    }  # fmt: skip
    result = scrubber.scrub_properties(kept)
    assert result.properties == kept and result.dropped_keys == ()


def test_credential_keys_drop_everything_else(scrubber: CredentialScrubber) -> None:
    dropped = {
        "pin": 4821, "password": 123456, "otp": "492817", "token": 1234567, "key": "theme",
        "signature": "Best, Dana", "credentials": {"user": "dana", "value": "hunter2"}, "creds": ["a", "b"],
        "api_key": 1e20, "session_id": object(),
    }  # fmt: skip
    result = scrubber.scrub_properties(dropped)
    assert result.properties == {}
    assert result.dropped_keys == tuple(dropped)


def test_keys_that_scrub_to_the_same_name_stay_apart(scrubber: CredentialScrubber) -> None:
    a, b = "ghp_" + fake("an", 36, "a"), "ghp_" + fake("an", 36, "b")
    result = scrubber.scrub_properties({a: 1, b: 2, "[REDACTED:GITHUB_TOKEN] (2)": 3})
    assert result.properties == {
        "[REDACTED:GITHUB_TOKEN]": 1,
        "[REDACTED:GITHUB_TOKEN] (2)": 2,
        "[REDACTED:GITHUB_TOKEN] (2) (2)": 3,
    }


def test_values_that_are_not_json_are_scrubbed_as_their_str(scrubber: CredentialScrubber) -> None:
    class Holder:
        def __str__(self) -> str:
            return f"holds {GHP}"

    result = scrubber.scrub_properties({"a": Holder(), "b": GHP.encode(), 7: "seven", (1, 2): GHP})
    assert result.properties == {
        "a": "holds [REDACTED:GITHUB_TOKEN]",
        "b": "b'[REDACTED:GITHUB_TOKEN]'",
        7: "seven",
        (1, 2): "[REDACTED:GITHUB_TOKEN]",
    }
    assert GHP not in repr(result)


def test_a_non_str_key_that_holds_a_secret_is_replaced_by_its_placeholder(
    scrubber: CredentialScrubber,
) -> None:
    class Key:
        def __str__(self) -> str:
            return GHP

    result = scrubber.scrub_properties({Key(): {"password": "hunter2x"}})
    assert result.properties == {"[REDACTED:GITHUB_TOKEN]": {}}
    assert result.dropped_keys == ("[REDACTED:GITHUB_TOKEN].password",)


def test_deeply_nested_properties_are_refused_with_a_typed_error(scrubber: CredentialScrubber) -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(500):
        node["n"] = {}
        node = node["n"]
    with pytest.raises(InvalidInputError, match="nested deeper"):
        scrubber.scrub_properties(deep)


def test_wrong_types_are_refused_without_echoing_input(scrubber: CredentialScrubber) -> None:
    with pytest.raises(InputTypeError):
        scrubber.scrub_text(b"password=x")  # type: ignore[arg-type]
    with pytest.raises(InputTypeError):
        scrubber.scrub_properties(["password", "x"])  # type: ignore[arg-type]
    named = type(GHP, (), {})
    with pytest.raises(InputTypeError) as raised:
        scrubber.scrub_text(named())  # type: ignore[arg-type]
    assert GHP not in str(raised.value)
    with pytest.raises(InvalidInputError):
        CredentialScrubber(implementation="fortran")


def test_redact_is_scrub_text_for_messages() -> None:
    assert redact(f"failed with {GHP}") == "failed with [REDACTED:GITHUB_TOKEN]"


# ---------------------------------------------------------------------------------------------------
# Properties of the whole
# ---------------------------------------------------------------------------------------------------
_FRAGMENTS = st.sampled_from(
    [text for text, _, _ in CREDENTIALS] + BENIGN + [" ", "\n", ": ", "=", "'", '"', "\\n", "@", "://"]
)


@settings(max_examples=n_examples(200))
@given(
    st.lists(st.one_of(_FRAGMENTS, st.text(max_size=20)), max_size=8).map("".join),
    st.booleans(),
    st.sampled_from(ENGINES),
)
def test_scrubbing_is_idempotent(text: str, pii: bool, engine: str) -> None:
    scrubber = CredentialScrubber(pii=pii, implementation=engine)
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
