"""Every occurrence, whole (issue 36): a value found as a secret is redacted everywhere in the text and
the record it came from, whatever surrounds the copy, and a redaction covers the whole secret.

A record is the texts of one write: a memory's label and properties, a turn's chat messages, a model's
ops. :meth:`CredentialScrubber.for_record` binds a scrubber to one; :meth:`scrub_record` scrubs a list
of texts together.
"""

from __future__ import annotations

import json

import pytest
from memdedup.operations import ExtractionRequest, parse_extraction
from memdedup.scope import Scope
from memdedup.scrub import CredentialScrubber, Secret
from test_scrub_vectors import fake

ENGINES = ("rust", "python")
TOKEN = fake("an", 40, "record")
PASSWORD = "hunter2-Blue-Falcon-77"
ODD = "{{h}o)p${e]nob(ody[finds>-_$#thisone}}"


@pytest.fixture(params=ENGINES)
def scrubber(request: pytest.FixtureRequest) -> CredentialScrubber:
    return CredentialScrubber(implementation=request.param)


@pytest.mark.parametrize(
    "text",
    [
        f"export API_KEY={TOKEN} then later I pasted {TOKEN} into the form",
        f"my password is {PASSWORD}, please remember {PASSWORD}",
        f"token = '{TOKEN}' | '{TOKEN}'",
        f'{{"api_key": "{TOKEN}", "note": "it was x{TOKEN}y"}}',
        f"SECRET_KEY={TOKEN}\n# {TOKEN} is the one in prod",
        f"password: {PASSWORD}\n(typed {PASSWORD}!)",
    ],
)
def test_every_copy_in_a_text_is_redacted_whatever_surrounds_it(
    scrubber: CredentialScrubber, text: str
) -> None:
    out = scrubber.scrub_text(text).text
    assert TOKEN not in out and PASSWORD not in out, out
    assert out.count("[REDACTED:") == text.count(TOKEN) + text.count(PASSWORD)


def test_a_short_value_is_redacted_only_where_it_stands_as_a_word(scrubber: CredentialScrubber) -> None:
    out = scrubber.scrub_text("pin: 4821, so call 4821 but not 48210 or x4821").text
    assert out == "pin: [REDACTED:PIN], so call [REDACTED:PIN] but not 48210 or x4821"


@pytest.mark.parametrize(
    "text",
    [
        f"apikey := {ODD}",
        f"theapikey:{ODD}",
        f'"theapikey": "{ODD}"',
        f"my_password = {ODD}",
        f'apikey = @"{ODD}"',
    ],
)
def test_a_value_full_of_brackets_is_redacted_whole(scrubber: CredentialScrubber, text: str) -> None:
    out = scrubber.scrub_text(text).text
    assert "thisone" not in out and "{{h" not in out and "}}" not in out.split("[REDACTED:")[-1], out


def test_a_record_shares_its_secrets_across_its_texts(scrubber: CredentialScrubber) -> None:
    texts = [f"I pasted {TOKEN} into the form", f"OPENAI_API_KEY={TOKEN}", "nothing here", PASSWORD]
    record = scrubber.scrub_record(texts)
    assert record.texts == (
        "I pasted [REDACTED:API_KEY] into the form",
        "OPENAI_API_KEY=[REDACTED:API_KEY]",
        "nothing here",
        PASSWORD,  # no text of this record calls it a secret
    )
    assert record.redactions == (("API_KEY",), ("API_KEY",), (), ())
    assert record.secrets == (Secret(TOKEN, "API_KEY"),)
    # Text by text, the first copy survives: that is what the record changes.
    assert scrubber.scrub_text(texts[0]).text == texts[0]


def test_a_dropped_propertys_value_is_a_secret_of_the_record(scrubber: CredentialScrubber) -> None:
    properties = {"db": {"password": PASSWORD, "host": "db.internal"}, "note": f"rotated {PASSWORD} today"}
    record = scrubber.for_record(f"label says {PASSWORD}", properties)
    assert record.scrub_text(f"label says {PASSWORD}").text == "label says [REDACTED:PASSWORD]"
    scrubbed = record.scrub_properties(properties)
    assert scrubbed.properties == {"db": {"host": "db.internal"}, "note": "rotated [REDACTED:PASSWORD] today"}
    assert scrubbed.dropped_keys == ("db.password",)
    assert Secret(PASSWORD, "PASSWORD") in record.secrets
    # Unbound, the scrubber keeps no state: the same instance scrubs the next record from scratch.
    assert scrubber.secrets == ()


def test_a_weak_key_drops_its_property_only_when_the_value_looks_random(scrubber: CredentialScrubber) -> None:
    props = {"password_super_secure": TOKEN, "tokenizer": "cl100k_base", "secret_name": "prod/app/db"}
    scrubbed = scrubber.scrub_properties(props)
    assert scrubbed.properties == {"tokenizer": "cl100k_base", "secret_name": "prod/app/db"}
    assert scrubbed.dropped_keys == ("password_super_secure",)


def test_for_record_reads_anything_and_never_raises(scrubber: CredentialScrubber) -> None:
    deep: object = TOKEN
    for _ in range(500):
        deep = [deep]
    record = scrubber.for_record(None, 3, deep, {1: object()}, (f"api_key={TOKEN}",))
    assert record.scrub_text(TOKEN).text == "[REDACTED:API_KEY]"
    # A credential-named property holding an int past Python's digit limit (str() raises ValueError).
    huge = scrubber.for_record({"pin": 10**5000, "password": 84_217_905})
    assert [secret.value for secret in huge.secrets] == ["84217905"]


def test_extraction_scrubs_one_outputs_ops_as_one_record() -> None:
    ops = [
        {"action": "upsert_node", "layer": "semantic", "label": f"the staging key is {TOKEN}",
         "properties": {"memory_category": "fact", "subject": "staging"}, "importance": 7},
        {"action": "upsert_node", "layer": "semantic", "label": "staging uses a key",
         "properties": {"memory_category": "fact", "subject": "staging", "api_key": TOKEN}, "importance": 7},
    ]  # fmt: skip
    request = ExtractionRequest(scope=Scope.parse({"org": "acme"}), turn=1)
    result = parse_extraction(json.dumps({"ops": ops}), request)
    labels = [memory.record.text for memory in result.memories]
    assert labels and all(TOKEN not in label for label in labels), labels
