"""Minting memories from model output: the forms models emit, a reason for every refusal, ids, text."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memdedup.operations import (
    MEMORY_CATEGORIES,
    REFUSAL_CODES,
    ExtractedMemory,
    ExtractionRequest,
    MemoryLayer,
    ProviderFamily,
    WriteRequest,
    classification_identity,
    importance_to_salience,
    mint_operation,
    parse_extraction,
    reason_code,
    record_id,
    retrievable_text,
)
from memdedup.scope import Scope
from memdedup.scrub import CredentialScrubber
from strategies import n_examples

SCOPE = Scope.root("org", "acme").child("user", "dana")
REQUEST = ExtractionRequest(scope=SCOPE, turn=7)
CLASSIFIED = {"memory_category": "preference", "subject": "user"}


def node_op(label: Any = "Dana prefers dark mode", **overrides: Any) -> dict[str, Any]:
    op = {
        "action": "upsert_node",
        "layer": "semantic",
        "label": label,
        "properties": dict(CLASSIFIED),
        "importance": 6,
    }
    op.update(overrides)
    return op


def ops_json(*ops: Any, key: str = "ops") -> str:
    return json.dumps({key: list(ops)})


# ---------------------------------------------------------------------------------------------------
# The forms models emit
# ---------------------------------------------------------------------------------------------------
BODY = ops_json(node_op(), node_op("Dana uses vim"))


@pytest.mark.parametrize(
    ("raw", "form"),
    [
        (BODY, "bare/ops"),
        (f"```json\n{BODY}\n```", "fenced/ops"),
        (f"Here you go:\n```\n{BODY}\n```\nAnything else?", "fenced/ops"),
        (f"<memory_ops>\n{BODY}\n</memory_ops>", "tagged/ops"),
        (f'<json type="ops">{BODY}</json>', "tagged/ops"),
        (f"I extracted these: {BODY} -- hope that helps.", "embedded/ops"),
        (ops_json(node_op(), node_op("Dana uses vim"), key="operations"), "bare/operations"),
        (json.dumps([node_op(), node_op("Dana uses vim")]), "bare/list"),
    ],
)
def test_each_form_models_emit_is_read_and_recorded(raw: str, form: str) -> None:
    result = parse_extraction(raw, REQUEST)
    assert result.form == form
    assert not result.degraded and result.reason == ""
    assert [m.record.text for m in result.memories] == ["Dana prefers dark mode", "Dana uses vim"]


def test_a_single_op_object_is_read() -> None:
    result = parse_extraction(json.dumps(node_op()), REQUEST)
    assert result.form == "bare/single_op"
    assert len(result.memories) == 1


def test_ops_and_operations_together_lose_nothing() -> None:
    raw = json.dumps({"ops": [node_op()], "operations": [node_op("Dana uses vim")]})
    result = parse_extraction(raw, REQUEST)
    assert result.form == "bare/ops+operations"
    assert result.op_count == 2 and len(result.memories) == 2


def test_already_parsed_json_is_accepted() -> None:
    result = parse_extraction({"ops": [node_op()]}, REQUEST)
    assert result.form == "object/ops" and len(result.memories) == 1


def test_a_truncated_output_keeps_its_complete_ops() -> None:
    raw = (
        '{"ops": ['
        + json.dumps(node_op())
        + ", "
        + json.dumps(node_op("Dana uses vim"))
        + ', {"action": "upsert_no'
    )
    result = parse_extraction(raw, REQUEST)
    assert result.degraded
    assert result.form == "salvaged/ops"
    assert "2 complete op(s)" in result.reason
    assert [m.record.text for m in result.memories] == ["Dana prefers dark mode", "Dana uses vim"]


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ("", "empty"),
        ("   \n ", "empty"),
        (None, "no model output"),
        ("I don't see anything worth remembering.", "no JSON"),
        ('{"memories": ["likes tea"]}', "no 'ops' list"),
        ("```json\n{not json at all}\n```", "no JSON"),
        (42, "int"),
    ],
)
def test_malformed_output_degrades_with_a_reason_never_raises(raw: Any, fragment: str) -> None:
    result = parse_extraction(raw, REQUEST)
    assert result.degraded
    assert fragment in result.reason
    assert result.memories == () and result.dropped == () and result.op_count == 0
    assert result.form == "none"


def test_ops_that_is_not_a_list_degrades() -> None:
    result = parse_extraction('{"ops": "nothing to remember"}', REQUEST)
    assert result.degraded and "'ops' is a str" in result.reason and result.op_count == 0


def test_an_empty_ops_list_is_a_legitimate_answer() -> None:
    result = parse_extraction('{"ops": []}', REQUEST)
    assert not result.degraded and result.op_count == 0 and result.form == "bare/ops"


# ---------------------------------------------------------------------------------------------------
# A reason for every op that is not a memory
# ---------------------------------------------------------------------------------------------------
REFUSALS = [
    ("non_object_op", "just a string"),
    ("non_object_op", 42),
    ("non_object_op", ["a", "list"]),
    ("missing_action", {"layer": "semantic", "label": "x", "properties": CLASSIFIED}),
    ("missing_action", node_op(action="")),
    ("non_node_action", node_op(action="create_edge")),
    ("non_node_action", node_op(action="delete_node")),
    ("non_node_action", node_op(action="retract_node")),
    ("unknown_action", node_op(action="upsert")),
    ("unknown_action", node_op(action=5)),
    ("unknown_layer", node_op(layer="emotional")),
    ("unknown_layer", node_op(layer=3)),
    ("no_text", node_op(label="   ")),
    ("no_text", node_op(label={"text": "x"})),
    ("no_text", {k: v for k, v in node_op().items() if k != "label"}),
    ("below_min_importance", node_op(importance=2)),
    ("below_min_importance", node_op(importance="2.5")),
    ("below_min_importance", node_op(importance=-1)),
    ("classification_missing", node_op(properties={})),
    ("classification_missing", node_op(properties="not a mapping")),
    ("classification_missing", node_op(properties={"memory_category": "fact"})),
    ("classification_missing", node_op(properties={"subject": "user"})),
    ("classification_invalid", node_op(properties={"memory_category": "gossip", "subject": "user"})),
    ("classification_invalid", node_op(properties={"memory_category": "event", "subject": "user"})),
    ("classification_invalid", node_op(properties={"memory_category": 3, "subject": "user"})),
    ("classification_invalid", node_op(properties={"memory_category": "fact", "subject": ["user"]})),
    ("classification_invalid", node_op(properties={"memory_category": "fact", "subject": "x" * 81})),
    ("classification_invalid", node_op(properties={"memory_category": "fact", "subject": "a\x00b"})),
    ("classification_invalid", node_op(properties={"memory_category": "fact", "subject": "   "})),
]


@pytest.mark.parametrize(("code", "op"), REFUSALS, ids=[f"{c}-{i}" for i, (c, _) in enumerate(REFUSALS)])
def test_each_refusal_has_its_reason(code: str, op: Any) -> None:
    result = parse_extraction(json.dumps({"ops": [node_op("Dana uses vim"), op]}), REQUEST)
    assert [m.record.text for m in result.memories] == ["Dana uses vim"]  # the good op is never lost
    assert len(result.dropped) == 1
    identifier, reason = result.dropped[0]
    assert identifier == "op[1]"
    assert reason_code(reason) == code
    assert reason.startswith(code + ": ") and len(reason) > len(code) + 2


def test_every_refusal_code_but_the_guard_is_covered() -> None:
    covered = {code for code, _ in REFUSALS} | {"over_max_records"}
    assert covered == set(REFUSAL_CODES) - {"invalid_op"}


def test_noop_is_a_legitimate_empty_reason() -> None:
    result = parse_extraction(ops_json({"action": "noop"}, {"action": "NOOP", "layer": "semantic"}), REQUEST)
    assert result.dropped == (("op[0]", ""), ("op[1]", ""))
    assert reason_code("") == "noop"
    assert not result.degraded


def test_over_max_records_counts_memories_not_ops() -> None:
    request = ExtractionRequest(scope=SCOPE, turn=1, max_records=2)
    ops = [
        node_op("a fact one"),
        node_op(action="create_edge"),
        node_op("a fact two"),
        node_op("a fact three"),
    ]
    result = parse_extraction(ops_json(*ops), request)
    assert [m.record.text for m in result.memories] == ["a fact one", "a fact two"]
    assert [(i, reason_code(r)) for i, r in result.dropped] == [
        ("op[1]", "non_node_action"),
        ("op[3]", "over_max_records"),
    ]


def test_one_bad_op_never_loses_the_batch_unlike_the_shipped_parser() -> None:
    from symfonic.memory._internal.extraction.service import _parse_extraction
    from symfonic.memory.types import TenantScope

    raw = ops_json(node_op("Dana uses vim"), node_op("Dana likes tea", importance="high"))
    with pytest.raises(ValueError):  # the shipped parser: float("high") loses the whole batch
        _parse_extraction(raw, TenantScope.root("org", "acme"))
    result = parse_extraction(raw, REQUEST)
    # An unreadable importance is the wire format's default 5, so both ops are kept.
    assert [m.record.text for m in result.memories] == ["Dana uses vim", "Dana likes tea"]
    assert result.memories[1].importance == 5.0


def test_case_and_spacing_of_action_and_layer_are_forgiven() -> None:
    properties = {"memory_category": "Instruction", "subject": "  The   User "}
    op = node_op(action=" Upsert_Node ", layer="Procedural", properties=properties)
    result = parse_extraction(ops_json(op), REQUEST)
    memory = result.memories[0]
    assert memory.record.layer is MemoryLayer.PROCEDURAL
    assert memory.properties["memory_category"] == "instruction"
    assert memory.properties["subject"] == "the user"


def test_missing_layer_is_semantic_and_missing_importance_is_five() -> None:
    op = {"action": "upsert_node", "label": "Dana uses vim", "properties": CLASSIFIED}
    memory = parse_extraction(ops_json(op), REQUEST).memories[0]
    assert memory.record.layer is MemoryLayer.SEMANTIC and memory.importance == 5.0


# ---------------------------------------------------------------------------------------------------
# Classification vocabulary
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("category", sorted(MEMORY_CATEGORIES))
def test_each_category_is_allowed_exactly_on_its_layers(category: str) -> None:
    for layer in MemoryLayer:
        identity, error = classification_identity(
            {"memory_category": category, "subject": "user"}, layer=layer
        )
        if layer in MEMORY_CATEGORIES[category]:
            assert identity == (category, "user") and error == ""
        else:
            assert identity is None and reason_code(error) == "classification_invalid"


def test_every_layer_has_a_category() -> None:
    assert {layer for layers in MEMORY_CATEGORIES.values() for layer in layers} == set(MemoryLayer)


# ---------------------------------------------------------------------------------------------------
# Text, ids, salience
# ---------------------------------------------------------------------------------------------------
def test_a_label_that_names_a_field_keeps_its_value() -> None:
    op = node_op(
        "deployment_codename",
        properties={"value": "ATLAS-8642", "memory_category": "configuration", "subject": "project atlas"},
    )
    memory = parse_extraction(ops_json(op), REQUEST).memories[0]
    assert "ATLAS-8642" in memory.record.text
    assert memory.record.text == "deployment_codename (value: ATLAS-8642)"
    assert memory.properties["value"] == "ATLAS-8642"


def test_a_value_in_the_label_does_not_suppress_the_others() -> None:
    text = retrievable_text("person:Amiel", {"name": "Amiel", "occupation": "software engineer"})
    assert text == "person:Amiel (occupation: software engineer)"
    assert retrievable_text("Dana prefers dark mode", {"theme": "Dark"}) == "Dana prefers dark mode"
    assert (
        retrievable_text("stack", {"tools": ["pytest", "ruff"], "ci": {"on": True, "nightly": None}})
        == "stack (tools: pytest, ruff; ci: on: true)"
    )


def test_classification_keys_stay_out_of_the_text() -> None:
    memory = parse_extraction(ops_json(node_op()), REQUEST).memories[0]
    assert memory.record.text == "Dana prefers dark mode"
    assert "preference" not in memory.record.text


def test_record_id_is_turn_index_and_sha256_of_the_scrubbed_text() -> None:
    result = parse_extraction(ops_json({"action": "noop"}, node_op()), REQUEST)
    memory = result.memories[0]
    digest = hashlib.sha256(b"Dana prefers dark mode").hexdigest()[:12]
    assert memory.record.record_id == f"x7.1.{digest}"
    assert re.fullmatch(r"x\d+\.\d+\.[0-9a-f]{12}", record_id(REQUEST, 3, "anything"))
    assert memory.op_index == 1


def test_secrets_are_scrubbed_before_the_id_is_derived() -> None:
    first = node_op(
        "CI uses ghp_Zt9xQw3Lm8Rk2Vb7Nc4Hj6Pd1Fs5Gy0Ae2Kx", properties={**CLASSIFIED, "api_key": "x"}
    )
    second = node_op("CI uses ghp_Ab9xQw3Lm8Rk2Vb7Nc4Hj6Pd1Fs5Gy0Ae2Zz", properties=dict(CLASSIFIED))
    a = parse_extraction(ops_json(first), REQUEST).memories[0]
    b = parse_extraction(ops_json(second), REQUEST).memories[0]
    assert a.record.text == b.record.text == "CI uses [REDACTED:GITHUB_TOKEN]"
    assert a.record.record_id == b.record.record_id  # the id hashes the scrubbed text, never the secret
    assert a.redactions == ("GITHUB_TOKEN", "KEY:api_key")
    assert "api_key" not in a.properties


def test_property_values_are_scrubbed_and_reported() -> None:
    op = node_op("staging database", properties={**CLASSIFIED, "url": "postgres://u:pw0rd@db/app"})
    memory = parse_extraction(ops_json(op), REQUEST).memories[0]
    assert memory.properties["url"] == "postgres://u:[REDACTED:URL_PASSWORD]@db/app"
    assert "pw0rd" not in memory.record.text
    assert "URL_PASSWORD" in memory.redactions


def test_a_model_cannot_choose_the_owner_of_a_row() -> None:
    op = node_op(properties={**CLASSIFIED, "scope_path": "org\x1fother"})
    memory = parse_extraction(ops_json(op), REQUEST).memories[0]
    assert "scope_path" not in memory.properties
    assert memory.record.scope_path == SCOPE.scope_path
    assert "RESERVED:scope_path" in memory.redactions


def test_lone_surrogates_in_model_output_become_replacement_characters() -> None:
    memory = parse_extraction('{"ops": [' + json.dumps(node_op("bad \ud800 text")) + "]}", REQUEST).memories[
        0
    ]
    assert memory.record.text == "bad \ufffd text"
    memory.record.text.encode("utf-8")


@pytest.mark.parametrize(
    ("importance", "salience"),
    [(1, 0.0), (10, 1.0), (5.5, 0.5), (0, 0.0), (42, 1.0), (float("nan"), 0.444444)],
)
def test_importance_maps_linearly_onto_salience(importance: float, salience: float) -> None:
    assert importance_to_salience(importance) == pytest.approx(salience)


@pytest.mark.parametrize(
    ("value", "family"),
    [
        ("anthropic", ProviderFamily.ANTHROPIC),
        ("Claude-Sonnet-4", ProviderFamily.ANTHROPIC),
        ("gpt-4o", ProviderFamily.OPENAI),
        ("gemini-2.5-pro", ProviderFamily.GOOGLE),
        ("ollama", ProviderFamily.LOCAL),
        ("acme-llm", ProviderFamily.UNKNOWN),
        (None, ProviderFamily.UNKNOWN),
    ],
)
def test_provider_family_is_read_from_a_name_or_a_model_id(value: Any, family: ProviderFamily) -> None:
    assert ProviderFamily.parse(value) is family


def test_origin_carries_the_family_and_write_request_the_records() -> None:
    result = parse_extraction(ops_json(node_op(), node_op("Dana uses vim")), REQUEST, family="gpt-4o")
    assert {m.record.origin for m in result.memories} == {"extraction:openai"}
    request = result.write_request()
    assert isinstance(request, WriteRequest)
    assert request.records == result.records and request.turn == 7 and request.scope == SCOPE


def test_mint_operation_returns_a_memory_or_a_pair() -> None:
    scrubber = CredentialScrubber()
    minted = mint_operation(node_op(), 0, REQUEST, ProviderFamily.UNKNOWN, scrubber)
    assert isinstance(minted, ExtractedMemory)
    refused = mint_operation(node_op(action="create_edge"), 4, REQUEST, ProviderFamily.UNKNOWN, scrubber)
    assert refused[0] == "op[4]" and reason_code(refused[1]) == "non_node_action"  # type: ignore[index]


# ---------------------------------------------------------------------------------------------------
# Hypothesis: any JSON-ish output; never raises, every op accounted for exactly once
# ---------------------------------------------------------------------------------------------------
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-20, 20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(
        [
            "upsert_node",
            "create_edge",
            "noop",
            "semantic",
            "procedural",
            "episodic",
            "emotional",
            "fact",
            "preference",
            "event",
            "user",
            "ghp_Zt9xQw3Lm8Rk2Vb7Nc4Hj6Pd1Fs5Gy0Ae2Kx",
        ]
    ),
)
_JSON = st.recursive(
    _SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
_ACTIONS = st.sampled_from(["upsert_node", "store_skill", "create_edge", "noop", "Set_Trigger"])
_LAYERS = st.sampled_from([layer.value for layer in MemoryLayer] + ["emotional"])
_OP = st.one_of(
    _JSON,
    st.fixed_dictionaries(
        {},
        optional={
            "action": st.one_of(_ACTIONS, _SCALARS),
            "layer": st.one_of(_LAYERS, _SCALARS),
            "label": st.one_of(st.text(max_size=30), _SCALARS),
            "id": _SCALARS,
            "importance": st.one_of(st.integers(-2, 12), st.floats(), st.text(max_size=4), st.none()),
            "properties": st.one_of(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "memory_category": st.one_of(st.sampled_from(sorted(MEMORY_CATEGORIES)), _SCALARS),
                        "subject": st.one_of(st.sampled_from(["user", "Project Atlas"]), _SCALARS),
                        "api_key": _SCALARS,
                        "value": _JSON,
                    },
                ),
                _JSON,
            ),
        },
    ),
)


def _wrap(ops: list[Any], envelope: str, key: str) -> str:
    body = json.dumps({key: ops} if key else ops)
    return {
        "bare": body,
        "fenced": f"```json\n{body}\n```",
        "tagged": f"<memory_ops>{body}</memory_ops>",
        "prose": f"Here is what I found: {body}\nThat is all.",
    }[envelope]


def _assert_accounted(result: Any) -> None:
    assert result.op_identifiers() == [f"op[{i}]" for i in range(result.op_count)]
    assert len(result.memories) + len(result.dropped) == result.op_count
    assert all(reason_code(reason) in {*REFUSAL_CODES, "noop"} for _, reason in result.dropped)
    assert not any(reason_code(reason) == "invalid_op" for _, reason in result.dropped)
    for memory in result.memories:
        assert memory.record.text and memory.record.scope_path == SCOPE.scope_path
        assert "ghp_Zt9xQw3Lm8Rk2Vb7Nc4Hj6Pd1Fs5Gy0Ae2Kx" not in memory.record.text
        assert memory.properties["memory_category"] in MEMORY_CATEGORIES


@settings(max_examples=n_examples(300))
@given(
    st.lists(_OP, max_size=8),
    st.sampled_from(["bare", "fenced", "tagged", "prose"]),
    st.sampled_from(["ops", "operations"]),
    st.integers(0, 6),
)
def test_any_json_ish_output_is_accounted_for_exactly_once(
    ops: list[Any], envelope: str, key: str, max_records: int
) -> None:
    request = ExtractionRequest(scope=SCOPE, turn=3, max_records=max_records)
    result = parse_extraction(_wrap(ops, envelope, key), request)
    assert not result.degraded, result.reason
    assert result.op_count == len(ops)
    assert len(result.memories) <= max_records
    _assert_accounted(result)


@settings(max_examples=n_examples(300))
@given(st.one_of(st.text(max_size=200), _JSON.map(json.dumps), _JSON))
def test_arbitrary_output_never_raises(raw: Any) -> None:
    result = parse_extraction(raw, ExtractionRequest(scope=SCOPE, turn=3))
    _assert_accounted(result)
    assert result.degraded == bool(result.reason)


@settings(max_examples=n_examples(150))
@given(st.lists(_OP, min_size=1, max_size=6), st.data())
def test_a_truncated_output_never_raises_and_accounts_for_what_it_read(
    ops: list[Any], data: st.DataObject
) -> None:
    body = json.dumps({"ops": ops})
    cut = data.draw(st.integers(0, len(body)))
    result = parse_extraction(body[:cut], ExtractionRequest(scope=SCOPE, turn=3))
    _assert_accounted(result)
    assert result.op_count <= len(ops)
