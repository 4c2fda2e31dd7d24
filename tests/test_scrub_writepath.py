"""The write path quotes only scrubbed text, cut after it is scrubbed; a credential is never a scope id;
a key that is a sentence is text, not a key name.

Every message that echoes input goes through one helper, :func:`memdedup.scrub.redact` (scrub, then cut).
The cases here put a secret where a refusal reason, an exception or a store error quotes it: an unknown
action or layer (a string, or a JSON object the scrubber never walked as text), a bad memory_category or
subject, a node id the store cannot find, a scope id. The secret sits right at the cut, so a message that
cut first and scrubbed second would keep a prefix of it too short for its rule to recognise.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from memdedup.errors import MemdedupError
from memdedup.ingest import LineProblem, Turn, ingest_turns, parse_turn
from memdedup.operations import ExtractionRequest, parse_extraction
from memdedup.scope import Scope
from memdedup.scrub import CredentialScrubber, redact
from memdedup.store import SQLiteGraphStore
from test_scrub_vectors import fake

GHP = "ghp_" + fake("an", 36, "writepath")
PPLX = "pplx-" + fake("an", 48, "writepath")
UNKNOWN_VENDOR = "zq_" + fake("an", 32, "writepath")
SECRETS = [GHP, PPLX, UNKNOWN_VENDOR]
FRAGMENT = 12


def _leaks(text: str) -> list[str]:
    """The secrets of SECRETS (or a 12-character piece of their random part) that ``text`` holds."""
    out = []
    for secret in SECRETS:
        body = secret.split("_", 1)[-1] if "_" in secret[:6] else secret.split("-", 1)[-1]
        pieces = [body[i : i + FRAGMENT] for i in range(0, len(body) - FRAGMENT + 1, 4)]
        if secret in text or any(piece in text for piece in pieces):
            out.append(secret[:6])
    return out


# ---------------------------------------------------------------------------------------------------
# The helper: scrub, then cut
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("secret", SECRETS)
@pytest.mark.parametrize("pad", [0, 10, 30, 50])
def test_redact_scrubs_before_it_cuts(secret: str, pad: int) -> None:
    # The cut at 60 falls inside the secret for most pads: cutting first would leave 10-50 characters
    # of it, fewer than its rule needs.
    text = ("x" * pad + " " if pad else "") + secret + " and more"
    shown = redact(text, 60)
    assert len(shown) <= 60
    assert not _leaks(shown), shown


def test_redact_never_ends_inside_a_placeholder() -> None:
    shown = redact("a" * 39 + " " + GHP, 50)
    assert shown == "a" * 39 + " \u2026"


def test_redact_takes_any_value_and_cleans_surrogates() -> None:
    assert redact({"layer": GHP}) == "{'layer': '[REDACTED:GITHUB_TOKEN]'}"
    assert redact("bad \ud800 half") == "bad \ufffd half"

    class Broken:
        def __str__(self) -> str:
            raise RuntimeError(GHP)

    assert redact(Broken()) == "<Broken>"


# ---------------------------------------------------------------------------------------------------
# Refusal reasons of minting
# ---------------------------------------------------------------------------------------------------
def _op(**fields: Any) -> dict[str, Any]:
    op: dict[str, Any] = {
        "action": "upsert_node",
        "layer": "semantic",
        "label": "the deploy notes",
        "properties": {"memory_category": "fact", "subject": "user"},
    }
    op.update(fields)
    return op


def _reasons(op: dict[str, Any]) -> str:
    request = ExtractionRequest(scope=Scope.root("org", "acme"), turn=1)
    result = parse_extraction(json.dumps({"ops": [op]}), request)
    return json.dumps([reason for _, reason in result.dropped])


PAD = "x" * 44 + " "  # puts the secret across the 60-character cut


@pytest.mark.parametrize("secret", SECRETS)
@pytest.mark.parametrize(
    "field",
    ["action", "layer", "layer_object", "action_object", "category", "subject"],
)
def test_refusal_reasons_quote_only_scrubbed_text(secret: str, field: str) -> None:
    value: Any = PAD + secret
    if field == "action":
        op = _op(action=value)
    elif field == "layer":
        op = _op(layer=value)
    elif field == "layer_object":
        op = _op(layer={"name": secret, "n": 1})
    elif field == "action_object":
        op = _op(action=[secret])
    elif field == "category":
        op = _op(properties={"memory_category": value, "subject": "user"})
    else:
        op = _op(properties={"memory_category": "fact", "subject": "s" * 69 + " " + secret})
    reasons = _reasons(op)
    assert reasons != "[]", "the op was not refused"
    assert not _leaks(reasons), reasons


# ---------------------------------------------------------------------------------------------------
# The store's messages
# ---------------------------------------------------------------------------------------------------
def test_store_errors_quote_only_scrubbed_text(tmp_path: Path) -> None:
    with SQLiteGraphStore(tmp_path / "m.sqlite") as store, pytest.raises(MemdedupError) as raised:
        store.record_mention(Scope.root("org", "acme"), "n" * 25 + GHP)
    assert not _leaks(str(raised.value)), str(raised.value)
    with pytest.raises(MemdedupError) as raised:
        SQLiteGraphStore(tmp_path / "m2.sqlite", check=PAD + PPLX)
    assert not _leaks(str(raised.value)), str(raised.value)


def test_every_store_connection_turns_secure_delete_on(tmp_path: Path) -> None:
    with SQLiteGraphStore(tmp_path / "m.sqlite") as store:
        assert store._conn.execute("PRAGMA secure_delete").fetchone()[0] == 1


# ---------------------------------------------------------------------------------------------------
# A credential as a scope id: refused, whatever form the scope comes in
# ---------------------------------------------------------------------------------------------------
SCOPE_FORMS = {
    "levels": lambda s: [{"kind": "org", "id": s}],
    "pairs": lambda s: [["org", "acme"], ["user", s]],
    "mapping": lambda s: {"org": s},
    "glued": lambda s: [["org", s + "_token"]],
    "as_kind": lambda s: [[s, "acme"]],
}


@pytest.mark.parametrize("secret", SECRETS)
@pytest.mark.parametrize("form", sorted(SCOPE_FORMS))
def test_a_credential_scope_id_is_refused_and_never_quoted(secret: str, form: str) -> None:
    value = {"scope": SCOPE_FORMS[form](secret), "turn": 1, "output": "{}"}
    problem = parse_turn(value, line=7)
    assert isinstance(problem, LineProblem) and problem.code == "invalid_scope", problem
    assert not _leaks(problem.reason), problem.reason


def test_a_turn_object_with_a_credential_scope_is_refused_too(tmp_path: Path) -> None:
    turn = Turn(scope=Scope.root("org", GHP), turn=1, output=json.dumps({"ops": [_op()]}), line=3)
    report = ingest_turns([turn], tmp_path / "m.sqlite")
    assert [(p.line, p.code) for p in report.problems] == [(3, "invalid_scope")]
    assert not report.written
    assert GHP.encode() not in (tmp_path / "m.sqlite").read_bytes()


def test_a_scope_id_that_only_looks_like_a_word_is_kept(tmp_path: Path) -> None:
    turn = parse_turn({"scope": [["org", "acme-prod"], ["user", "dana_smith"]], "turn": 1, "output": "{}"})
    assert isinstance(turn, Turn)


# ---------------------------------------------------------------------------------------------------
# A key that is a sentence is text
# ---------------------------------------------------------------------------------------------------
SENTENCE_KEYS = [
    "the sig query parameter carries the signature",
    "where the admin keeps the root password",
    "Is this the API key?",
    "note: the deploy token, rotated monthly",
]
CREDENTIAL_KEYS = ["db signature", "signature", "the admin password", "root db password", "API key"]


@pytest.mark.parametrize("engine", ["rust", "python"])
@pytest.mark.parametrize("key", SENTENCE_KEYS)
def test_a_sentence_used_as_a_key_is_scrubbed_as_text_and_kept(engine: str, key: str) -> None:
    scrubber = CredentialScrubber(implementation=engine)
    result = scrubber.scrub_properties({key: "see the runbook", "other " + key: "value " + GHP})
    assert result.properties[key] == "see the runbook"
    assert result.properties["other " + key] == "value [REDACTED:GITHUB_TOKEN]"
    assert result.dropped_keys == ()


@pytest.mark.parametrize("engine", ["rust", "python"])
@pytest.mark.parametrize("key", CREDENTIAL_KEYS)
def test_a_short_key_phrase_still_names_a_credential(engine: str, key: str) -> None:
    scrubber = CredentialScrubber(implementation=engine)
    result = scrubber.scrub_properties({key: "Zz9" + fake("an", 16, key)})
    assert result.properties == {} and result.dropped_keys == (key,)
