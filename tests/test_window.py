"""Tests for :mod:`memdedup.window`: recall that does not repeat the conversation window."""

from __future__ import annotations

import copy
import enum
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memdedup.errors import InputTypeError, InvalidInputError
from memdedup.window import (
    CEILING_REASON,
    REPEATED_REASON,
    SEPARATOR,
    BlockReport,
    RecalledItem,
    RecalledRecord,
    RetrievalResult,
    WindowTurn,
    admitted_mask,
    conversation_local,
    outside_window,
    render_block,
)
from strategies import n_examples

BIG = 10_000


def transcript(record_id: str, text: str, turn_id: Any, speaker: Any) -> RecalledItem:
    return RecalledItem(RecalledRecord.transcript(record_id, text, turn_id=turn_id, speaker=speaker))


def ids(items: tuple[Any, ...]) -> list[str]:
    return [item.record.record_id for item in items]


def utf8(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


# --- admitted_mask ---------------------------------------------------------------------------------------


def test_separator_is_counted_between_admitted_lines_only() -> None:
    assert admitted_mask(["ab", "cd"], char_ceiling=5) == [True, True]  # 2 + 1 + 2
    assert admitted_mask(["ab", "cd"], char_ceiling=4) == [True, False]
    assert admitted_mask(["abcd"], char_ceiling=4) == [True]  # the first line pays no separator


def test_a_refused_line_does_not_end_the_block() -> None:
    assert admitted_mask(["aaaa", "bbbbbbb", "c"], char_ceiling=6) == [True, False, True]


def test_empty_lines_and_zero_ceiling() -> None:
    assert admitted_mask([], char_ceiling=0) == []
    assert admitted_mask(["", "", "x"], char_ceiling=0) == [True, False, False]
    assert admitted_mask(["", ""], char_ceiling=1) == [True, True]


def test_byte_ceiling_counts_utf8_of_multibyte_text() -> None:
    lines = ["日本", "ab"]  # 2 chars / 6 bytes, then 1 + 2
    assert admitted_mask(lines, char_ceiling=BIG) == [True, True]
    assert admitted_mask(lines, char_ceiling=BIG, max_bytes=8) == [True, False]
    assert admitted_mask(lines, char_ceiling=BIG, max_bytes=9) == [True, True]
    assert admitted_mask(lines, char_ceiling=4, max_bytes=9) == [True, False]
    assert admitted_mask(["😀"], char_ceiling=1, max_bytes=3) == [False]
    assert admitted_mask(["😀"], char_ceiling=1, max_bytes=4) == [True]


@pytest.mark.parametrize("bad", [-1, -100])
def test_negative_ceilings_are_invalid(bad: int) -> None:
    with pytest.raises(InvalidInputError):
        admitted_mask(["a"], char_ceiling=bad)
    with pytest.raises(InvalidInputError):
        admitted_mask(["a"], char_ceiling=5, max_bytes=bad)
    with pytest.raises(ValueError):
        outside_window(RetrievalResult(), [], char_ceiling=bad)


@pytest.mark.parametrize("bad", [1.5, "10", True, None])
def test_non_int_ceilings_are_type_errors(bad: Any) -> None:
    with pytest.raises(InputTypeError):
        admitted_mask(["a"], char_ceiling=bad)
    with pytest.raises(TypeError):
        render_block([], RetrievalResult(), char_ceiling=bad)
    if bad is not None:
        with pytest.raises(InputTypeError):
            admitted_mask(["a"], char_ceiling=5, max_bytes=bad)


def test_lines_must_be_str() -> None:
    with pytest.raises(InputTypeError):
        admitted_mask(["a", b"b"], char_ceiling=5)  # type: ignore[list-item]


line_text = st.text(alphabet=st.sampled_from("ab é日😀\n"), max_size=8)


def oracle_mask(lines: list[str], char_ceiling: int, max_bytes: int | None) -> list[bool]:
    """Admit a line when the rendered block with it appended still fits: stated on the text itself."""
    block: list[str] = []
    mask = []
    for line in lines:
        text = SEPARATOR.join([*block, line])
        fits = len(text) <= char_ceiling and (max_bytes is None or utf8(text) <= max_bytes)
        mask.append(fits)
        if fits:
            block.append(line)
    return mask


@given(
    lines=st.lists(line_text, max_size=12),
    char_ceiling=st.integers(0, 40),
    max_bytes=st.none() | st.integers(0, 60),
    cut=st.integers(0, 12),
)
def test_mask_of_a_prefix_is_the_prefix_of_the_mask(
    lines: list[str], char_ceiling: int, max_bytes: int | None, cut: int
) -> None:
    mask = admitted_mask(lines, char_ceiling=char_ceiling, max_bytes=max_bytes)
    assert len(mask) == len(lines)
    assert admitted_mask(lines[:cut], char_ceiling=char_ceiling, max_bytes=max_bytes) == mask[:cut]
    assert mask == oracle_mask(lines, char_ceiling, max_bytes)
    text = SEPARATOR.join(line for line, fits in zip(lines, mask, strict=True) if fits)
    assert len(text) <= char_ceiling
    assert max_bytes is None or utf8(text) <= max_bytes


# --- conversation_local ----------------------------------------------------------------------------------


class Layer(str, enum.Enum):  # noqa: UP042 -- the exact shape of symfonic-core's MemoryLayer
    """Shaped like symfonic-core's ``MemoryLayer`` (a str-valued Enum)."""

    SEMANTIC = "semantic"
    EPISODIC = "episodic"


class Speaker(enum.StrEnum):
    USER = "user"


def test_transcript_rows_are_conversation_local() -> None:
    assert conversation_local(RecalledRecord.transcript("r", "hi", turn_id="t1", speaker="user"))
    # symfonic-core's per-message episodic row: Enum layer, source "auto_turn", no origin attribute.
    entry = SimpleNamespace(
        record_id="e",
        layer=Layer.EPISODIC,
        metadata={"turn_id": "t1", "speaker": "user", "source": "auto_turn"},
    )
    assert conversation_local(entry)
    # No layer attribute: the metadata may say it.
    row = SimpleNamespace(record_id="m", metadata={"layer": "episodic", "source": "transcript"})
    assert conversation_local(row)


@pytest.mark.parametrize(
    "record",
    [
        RecalledRecord(
            "s", layer="semantic", metadata={"turn_id": "t1", "speaker": "user", "source": "transcript"}
        ),
        SimpleNamespace(record_id="s2", layer=Layer.SEMANTIC, metadata={"source": "auto_turn"}),
        RecalledRecord(
            "c", layer="episodic", metadata={"source": "transcript", "memory_category": "preference"}
        ),
        RecalledRecord("x", layer="episodic", metadata={"source": "transcript"}, origin="extraction:openai"),
        RecalledRecord("n", layer="episodic", metadata={"turn_id": "t1", "speaker": "user"}),
        RecalledRecord("o", layer="episodic", metadata={"source": "thinking"}),
        RecalledRecord("u", layer="EPISODIC", metadata={"source": "transcript"}),
        SimpleNamespace(record_id="z"),
        SimpleNamespace(record_id="z2", layer="episodic", metadata=None),
    ],
    ids=lambda record: record.record_id,
)
def test_other_records_are_not_conversation_local(record: Any) -> None:
    assert not conversation_local(record)


# --- outside_window --------------------------------------------------------------------------------------


WINDOW = (WindowTurn("t1", "user", "where is my parcel"), WindowTurn("t1", "assistant", "it ships today"))


def test_the_recalled_copy_of_a_rendered_window_turn_is_dropped() -> None:
    copy_user = transcript("m1", "where is my parcel", "t1", "user")
    copy_assistant = transcript("l1", "it ships today", "t1", "assistant")
    other = transcript("m2", "my address is 4 Elm Road", "t0", "user")
    result = RetrievalResult(memories=(copy_user, other), linked=(copy_assistant,))
    memories, linked, dropped = outside_window(result, WINDOW, char_ceiling=BIG)
    assert ids(memories) == ["m2"]
    assert linked == ()
    assert dropped == (("m1", REPEATED_REASON), ("l1", REPEATED_REASON))


def test_same_words_on_another_turn_stay() -> None:
    result = RetrievalResult(memories=(transcript("m1", "where is my parcel", "t0", "user"),))
    memories, _, dropped = outside_window(result, WINDOW[:1], char_ceiling=BIG)
    assert ids(memories) == ["m1"]
    assert dropped == ()


def test_the_other_speakers_copy_of_a_window_turn_stays() -> None:
    window = (WindowTurn("t1", "user", "where is my parcel"),)
    result = RetrievalResult(memories=(transcript("m1", "it ships today", "t1", "assistant"),))
    memories, _, dropped = outside_window(result, window, char_ceiling=BIG)
    assert ids(memories) == ["m1"]
    assert dropped == ()


def test_a_semantic_or_classified_memory_with_a_turn_tag_stays() -> None:
    tag = {"turn_id": "t1", "speaker": "user"}
    semantic = RecalledItem(RecalledRecord("s1", "user ships to Elm Road", "semantic", {**tag}))
    classified = RecalledItem(
        RecalledRecord(
            "c1", "where is my parcel", "episodic", {**tag, "source": "transcript", "memory_category": "x"}
        )
    )
    result = RetrievalResult(memories=(semantic, classified))
    memories, _, dropped = outside_window(result, WINDOW, char_ceiling=BIG)
    assert memories == (semantic, classified)
    assert dropped == ()


def test_a_refused_window_line_leaves_its_copy_in_place() -> None:
    long_turn = WindowTurn("t1", "user", "x" * 50)
    short_turn = WindowTurn("t2", "user", "ok")  # "user: ok" is 8 characters
    result = RetrievalResult(
        memories=(transcript("m1", "x" * 50, "t1", "user"), transcript("m2", "ok", "t2", "user"))
    )
    memories, _, dropped = outside_window(result, [long_turn, short_turn], char_ceiling=20)
    assert ids(memories) == ["m1"]
    assert dropped == (("m2", REPEATED_REASON),)
    # With room for both, both copies go.
    memories, _, dropped = outside_window(result, [long_turn, short_turn], char_ceiling=BIG)
    assert memories == ()
    assert [record_id for record_id, _ in dropped] == ["m1", "m2"]


def test_byte_ceiling_with_multibyte_window_text() -> None:
    turn = WindowTurn("t1", "user", "日本語")  # "user: 日本語": 9 characters, 15 bytes
    result = RetrievalResult(memories=(transcript("m1", "日本語", "t1", "user"),))
    memories, _, dropped = outside_window(result, [turn], char_ceiling=9, max_bytes=14)
    assert ids(memories) == ["m1"] and dropped == ()
    memories, _, dropped = outside_window(result, [turn], char_ceiling=9, max_bytes=15)
    assert memories == () and dropped == (("m1", REPEATED_REASON),)
    memories, _, dropped = outside_window(result, [turn], char_ceiling=8, max_bytes=BIG)
    assert ids(memories) == ["m1"] and dropped == ()


def test_empty_window_drops_nothing() -> None:
    items = (transcript("m1", "hi", "t1", "user"),)
    result = RetrievalResult(memories=items, linked=items)
    memories, linked, dropped = outside_window(result, [], char_ceiling=BIG)
    assert memories == items and linked == items and dropped == ()
    memories, linked, dropped = outside_window(result, iter(()), char_ceiling=0)
    assert memories == items and linked == items and dropped == ()


@pytest.mark.parametrize(
    "turn",
    [
        WindowTurn(None, "user", "hi"),
        WindowTurn("", "user", "hi"),
        WindowTurn("t1", None, "hi"),
        WindowTurn("t1", "", "hi"),
        WindowTurn(0, "user", "hi"),
        SimpleNamespace(line=lambda: "user: hi"),
    ],
)
def test_turns_without_id_or_speaker_suppress_nothing(turn: Any) -> None:
    records = [
        RecalledRecord.transcript("a", "hi", turn_id="t1", speaker="user"),
        RecalledRecord("b", "hi", "episodic", {"source": "transcript", "speaker": "user"}),
        RecalledRecord("c", "hi", "episodic", {"source": "transcript", "turn_id": "", "speaker": ""}),
        RecalledRecord("d", "hi", "episodic", {"source": "transcript", "turn_id": 0, "speaker": "user"}),
        RecalledRecord("e", "hi", "episodic", {"source": "transcript", "turn_id": None, "speaker": None}),
    ]
    result = RetrievalResult(memories=tuple(RecalledItem(record) for record in records))
    memories, _, dropped = outside_window(result, [turn], char_ceiling=BIG)
    assert ids(memories) == ["a", "b", "c", "d", "e"]
    assert dropped == ()


def test_identity_is_exact_and_type_strict() -> None:
    window = [WindowTurn("7", "user", "a"), WindowTurn(8, "user", "b"), WindowTurn("t9", Speaker.USER, "c")]
    result = RetrievalResult(
        memories=(
            transcript("str7", "a", "7", "user"),  # same id and speaker: dropped
            transcript("int7", "a", 7, "user"),  # 7 is not "7"
            transcript("int8", "b", 8, "user"),  # dropped
            transcript("str8", "b", "8", "user"),  # "8" is not 8
            transcript("bool", "b", True, "user"),  # bool is never an identity
            transcript("case", "a", "7", "User"),  # speakers are case-sensitive
            transcript("space", "a", " 7", "user"),  # no stripping
            transcript("enum", "c", "t9", "user"),  # a StrEnum speaker compares by its value: dropped
        )
    )
    memories, _, dropped = outside_window(result, window, char_ceiling=BIG)
    assert ids(memories) == ["int7", "str8", "bool", "case", "space"]
    assert [record_id for record_id, _ in dropped] == ["str7", "int8", "enum"]


def test_a_window_turn_with_an_identity_of_another_type_is_a_type_error() -> None:
    with pytest.raises(InputTypeError):
        outside_window(RetrievalResult(), [WindowTurn(7.0, "user", "a")], char_ceiling=BIG)  # type: ignore[arg-type]
    with pytest.raises(InputTypeError):
        outside_window(RetrievalResult(), [WindowTurn("t1", True, "a")], char_ceiling=BIG)  # type: ignore[arg-type]


def test_malformed_shapes_are_type_errors() -> None:
    with pytest.raises(InputTypeError):
        outside_window(SimpleNamespace(memories=()), [], char_ceiling=BIG)
    with pytest.raises(InputTypeError):
        outside_window(RetrievalResult(), [SimpleNamespace(turn_id="t", speaker="u")], char_ceiling=BIG)
    with pytest.raises(InputTypeError):
        outside_window(RetrievalResult(), [SimpleNamespace(line=lambda: 3)], char_ceiling=BIG)


def test_nothing_in_the_input_result_is_mutated_and_duck_types_work() -> None:
    def row(record_id: str, turn_id: str, speaker: str) -> SimpleNamespace:
        metadata = {"turn_id": turn_id, "speaker": speaker, "source": "transcript"}
        record = SimpleNamespace(record_id=record_id, text=record_id, layer="episodic", metadata=metadata)
        return SimpleNamespace(record=record, score=0.5)

    memories = [row("m1", "t1", "user"), row("m2", "t0", "user")]
    linked = [row("l1", "t1", "assistant")]
    result = SimpleNamespace(memories=memories, linked=linked, extra={"k": 1})
    turns = [
        SimpleNamespace(turn_id="t1", speaker=s, line=lambda s=s: f"{s}: x") for s in ("user", "assistant")
    ]
    before = copy.deepcopy(result)

    kept, kept_linked, dropped = outside_window(result, turns, char_ceiling=BIG)
    text, report = render_block(turns, result, char_ceiling=BIG)

    assert [item.record.record_id for item in kept] == ["m2"] and kept_linked == ()
    assert kept[0] is memories[1]  # the same item objects, scores untouched
    assert dropped == report.dropped == (("m1", REPEATED_REASON), ("l1", REPEATED_REASON))
    assert text == "user: x\nassistant: x\nm2"
    assert result.memories is memories and result.linked is linked
    assert result == before
    assert ids(tuple(result.memories)) == ["m1", "m2"] and memories[0].record.metadata["turn_id"] == "t1"


def test_a_frozen_result_is_returned_untouched() -> None:
    items = (transcript("m1", "hi", "t1", "user"), transcript("m2", "yo", "t2", "user"))
    result = RetrievalResult(memories=items)
    outside_window(result, [WindowTurn("t1", "user", "hi")], char_ceiling=BIG)
    assert result.memories is items and len(result.memories) == 2


# --- render_block ----------------------------------------------------------------------------------------


def test_render_block_puts_the_window_first_then_surviving_memories_then_linked() -> None:
    result = RetrievalResult(
        memories=(
            transcript("m1", "where is my parcel", "t1", "user"),
            RecalledItem(RecalledRecord("s1", "ships to Elm Road")),
        ),
        linked=(RecalledItem(RecalledRecord("k1", "Elm Road is in Leeds")),),
    )
    text, report = render_block(WINDOW, result, char_ceiling=BIG)
    assert text.split(SEPARATOR) == [
        "user: where is my parcel",
        "assistant: it ships today",
        "ships to Elm Road",
        "Elm Road is in Leeds",
    ]
    assert report == BlockReport(
        window_admitted=(0, 1),
        window_refused=(),
        admitted=("s1", "k1"),
        dropped=(("m1", REPEATED_REASON),),
        refused=(),
    )


def test_render_block_refuses_what_the_ceiling_cannot_hold() -> None:
    window = [WindowTurn("t1", "user", "x" * 30), WindowTurn("t2", "user", "hi")]
    result = RetrievalResult(
        memories=(
            transcript("m1", "x" * 30, "t1", "user"),  # its window line was refused: kept, here refused too
            RecalledItem(RecalledRecord("big", "y" * 30)),
            transcript("m2", "hi", "t2", "user"),  # repeats the admitted "user: hi"
            RecalledItem(RecalledRecord("small", "ok")),
        )
    )
    text, report = render_block(window, result, char_ceiling=12)
    assert text == "user: hi\nok"
    assert report.window_admitted == (1,) and report.window_refused == (0,)
    assert report.admitted == ("small",)
    assert report.dropped == (("m2", REPEATED_REASON),)
    assert report.refused == (("m1", CEILING_REASON), ("big", CEILING_REASON))


def test_render_block_byte_ceiling_and_empty_inputs() -> None:
    result = RetrievalResult(
        memories=(RecalledItem(RecalledRecord("a", "é" * 4)), RecalledItem(RecalledRecord("b", "ab")))
    )
    text, report = render_block([], result, char_ceiling=BIG, max_bytes=7)
    assert text == "ab" and report.admitted == ("b",) and report.refused == (("a", CEILING_REASON),)
    assert render_block([], RetrievalResult(), char_ceiling=0) == ("", BlockReport())


# --- properties ------------------------------------------------------------------------------------------

window_ids = st.sampled_from([None, "", 0, 1, "1", "t1", "t2"])
record_ids_values = st.sampled_from([None, "", 0, 1, "1", "t1", "t2", True])
speakers = st.sampled_from([None, "", "user", "assistant", "User"])
turns_strategy = st.lists(st.builds(WindowTurn, window_ids, speakers, line_text), max_size=6)


@st.composite
def records(draw: st.DrawFn, record_id: str) -> RecalledRecord:
    metadata: dict[str, Any] = {}
    if draw(st.booleans()):
        metadata["turn_id"] = draw(record_ids_values)
    if draw(st.booleans()):
        metadata["speaker"] = draw(speakers)
    source = draw(st.sampled_from([None, "transcript", "auto_turn", "thinking"]))
    if source is not None:
        metadata["source"] = source
    if draw(st.integers(0, 4)) == 0:
        metadata["memory_category"] = "preference"
    layer = draw(st.sampled_from(["episodic", "semantic", Layer.EPISODIC]))
    origin = draw(st.sampled_from(["", "transcript", "extraction:openai"]))
    return RecalledRecord(record_id, draw(line_text), layer, metadata, origin)


@st.composite
def results(draw: st.DrawFn) -> RetrievalResult:
    count = draw(st.integers(0, 10))
    items = [RecalledItem(draw(records(f"r{index}")), score=float(index)) for index in range(count)]
    split = draw(st.integers(0, count))
    return RetrievalResult(memories=tuple(items[:split]), linked=tuple(items[split:]))


def same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def oracle_repeats(record: RecalledRecord, turns: list[WindowTurn], mask: list[bool]) -> bool:
    """Independent statement of the rule: a transcript row whose exact pair an admitted window turn has."""
    layer = record.layer.value if isinstance(record.layer, enum.Enum) else record.layer
    source = record.metadata.get("source")
    is_transcript = (
        layer == "episodic"
        and not record.metadata.get("memory_category")
        and not record.origin.startswith("extraction:")
        and (source in ("transcript", "auto_turn") or record.origin in ("transcript", "auto_turn"))
    )
    turn_id, speaker = record.metadata.get("turn_id"), record.metadata.get("speaker")
    return is_transcript and any(
        fits and turn.turn_id and turn.speaker and same(turn.turn_id, turn_id) and same(turn.speaker, speaker)
        for turn, fits in zip(turns, mask, strict=True)
    )


ceilings = st.integers(0, 60)
byte_ceilings = st.none() | st.integers(0, 80)


@settings(max_examples=n_examples(300))
@given(turns=turns_strategy, result=results(), char_ceiling=ceilings, max_bytes=byte_ceilings)
def test_every_item_is_kept_or_dropped_never_both_never_lost(
    turns: list[WindowTurn], result: RetrievalResult, char_ceiling: int, max_bytes: int | None
) -> None:
    memories, linked, dropped = outside_window(result, turns, char_ceiling=char_ceiling, max_bytes=max_bytes)
    everything = ids(result.memories) + ids(result.linked)
    kept = set(ids(memories)) | set(ids(linked))
    gone = [record_id for record_id, _ in dropped]
    assert all(reason == REPEATED_REASON for _, reason in dropped)
    assert not kept & set(gone)
    assert sorted([*ids(memories), *ids(linked), *gone]) == sorted(everything)
    # Kept items keep their order and section, and are the very same objects.
    assert list(memories) == [item for item in result.memories if item.record.record_id in kept]
    assert list(linked) == [item for item in result.linked if item.record.record_id in kept]
    mask = admitted_mask([turn.line() for turn in turns], char_ceiling=char_ceiling, max_bytes=max_bytes)
    expected = [
        item.record.record_id
        for item in (*result.memories, *result.linked)
        if oracle_repeats(item.record, turns, mask)
    ]
    assert gone == expected


@settings(max_examples=n_examples(300))
@given(turns=turns_strategy, result=results(), char_ceiling=ceilings, max_bytes=byte_ceilings)
def test_render_block_accounts_for_every_line_within_the_ceilings(
    turns: list[WindowTurn], result: RetrievalResult, char_ceiling: int, max_bytes: int | None
) -> None:
    text, report = render_block(turns, result, char_ceiling=char_ceiling, max_bytes=max_bytes)
    assert (text, report) == render_block(turns, result, char_ceiling=char_ceiling, max_bytes=max_bytes)
    assert len(text) <= char_ceiling
    assert max_bytes is None or utf8(text) <= max_bytes

    window_lines = [turn.line() for turn in turns]
    mask = admitted_mask(window_lines, char_ceiling=char_ceiling, max_bytes=max_bytes)
    assert report.window_admitted == tuple(i for i, fits in enumerate(mask) if fits)
    assert sorted(report.window_admitted + report.window_refused) == list(range(len(turns)))

    memories, linked, dropped = outside_window(result, turns, char_ceiling=char_ceiling, max_bytes=max_bytes)
    assert report.dropped == dropped
    survivors = [*memories, *linked]
    refused = [record_id for record_id, _ in report.refused]
    assert sorted(list(report.admitted) + refused) == sorted(ids(tuple(survivors)))
    by_id = {item.record.record_id: item for item in survivors}
    rendered = [window_lines[i] for i in report.window_admitted] + [
        by_id[r].record.text for r in report.admitted
    ]
    assert text == SEPARATOR.join(rendered)
    # Greedy over the whole block: every line in input order, exactly as admitted_mask decides.
    block_lines = window_lines + [item.record.text for item in survivors]
    block_mask = admitted_mask(block_lines, char_ceiling=char_ceiling, max_bytes=max_bytes)
    assert text == SEPARATOR.join(line for line, fits in zip(block_lines, block_mask, strict=True) if fits)
