"""Recall that collapses restatements (issue 26): among the recalled memories themselves, each group of
restatements renders once, the most salient kept (ties: the newest), every drop reported by id."""

from __future__ import annotations

import hashlib
import inspect
import math
import re
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memdedup import _reference
from memdedup._reference import DEDUP_SIMILARITY_THRESHOLD, DEDUP_SUBSUME_MIN_CHARS
from memdedup.collapse import (
    DEFAULT_SALIENCE,
    Restatement,
    collapse_restatements,
    item_salience,
    restated_reason,
)
from memdedup.errors import InputTypeError, InvalidInputError
from memdedup.guards import Guards
from memdedup.recall import recall
from memdedup.scope import Scope
from memdedup.store import SQLiteGraphStore
from memdedup.window import (
    REPEATED_REASON,
    RecalledItem,
    RecalledRecord,
    TranscriptRow,
    WindowTurn,
    recalled_from_node,
)
from strategies import EVERY_CATEGORY_CHAR, mutated, n_examples, restatement_pairs

ORG = Scope.root("org", "acme")
DANA = ORG.child("user", "dana")
FACT = "User prefers dark mode in every editor"
REASON = re.compile(r"restates (?P<kept>\S+) \((?P<rule>ratio|containment) (?P<score>[01]\.\d{3})\)")


def distinct_fact(i: int) -> str:
    """A label no other ``distinct_fact`` (nor ``FACT``) restates: 12 hex digits of a hash (short, so the
    pure-Python reference backend decides the pairs quickly too)."""
    return "fact " + hashlib.sha256(str(i).encode()).hexdigest()[:12]


def item(record_id: str, text: str, salience: float = DEFAULT_SALIENCE) -> RecalledItem:
    return RecalledItem(RecalledRecord(record_id, text, salience=salience))


def ids(items: Sequence[Any]) -> list[str]:
    return [i.record.record_id for i in items]


def reason_parts(reason: str) -> tuple[str, str, float]:
    found = REASON.fullmatch(reason)
    assert found, reason
    return found["kept"], found["rule"], float(found["score"])


@pytest.fixture
def store() -> Any:
    with SQLiteGraphStore(":memory:") as opened:
        yield opened


def write(store: Any, node_id: str, label: str, *, scope: Scope = DANA, **fields: Any) -> None:
    store.upsert_node(scope, node_id=node_id, layer=fields.pop("layer", "semantic"), label=label, **fields)


# --- the reported case: dozens of copies of one fact ---------------------------------------------------


def test_49_copies_of_one_fact_among_1000_render_once(store: Any) -> None:
    copies = set(range(3, 1000, 20))  # 50 positions; the first 49 hold the fact
    copies = set(sorted(copies)[:49])
    for i in range(1000):
        if i in copies:
            # The copies spread over two scopes and two layers: the block is one block.
            scope = ORG if i % 3 == 0 else DANA
            write(store, f"copy{i}", FACT, scope=scope, layer="semantic" if i % 2 else "procedural")
        else:
            write(store, f"n{i}", distinct_fact(i))

    block = recall(store, DANA)

    assert len(block.memories) == 1000  # the retrieval result keeps every row
    assert block.text.count(FACT) == 1
    newest = f"copy{max(copies)}"  # equal salience: the newest copy stays
    assert newest in block.admitted
    assert len(block.dropped) == 48
    assert {record_id for record_id, _ in block.dropped} == {f"copy{i}" for i in copies} - {newest}
    for _, reason in block.dropped:
        kept, rule, score = reason_parts(reason)
        assert (kept, rule, score) == (newest, "ratio", 1.0)
    # Every distinct fact renders, in the store's order.
    assert block.admitted == tuple(
        i.record.record_id for i in block.memories if i.record.record_id not in dict(block.dropped)
    )

    every = recall(store, DANA, collapse=False)
    assert every.text.count(FACT) == 49
    assert every.dropped == ()


# --- which one stays ----------------------------------------------------------------------------------


def test_the_most_salient_restatement_stays(store: Any) -> None:
    write(store, "a", FACT, salience=0.9)
    write(store, "b", FACT + ".", salience=0.2)
    write(store, "c", "user prefers dark mode in every editor", salience=0.4)
    block = recall(store, DANA)
    assert block.admitted == ("a",)
    assert block.dropped == (
        ("b", restated_reason("a", "ratio", 1.0)),
        ("c", restated_reason("a", "ratio", 1.0)),
    )


def test_equal_salience_keeps_the_newest(store: Any) -> None:
    write(store, "old", FACT, salience=0.7)
    write(store, "low", FACT, salience=0.1)
    write(store, "new", FACT, salience=0.7)
    write(store, "other", "Lives in Lisbon", salience=0.7)
    block = recall(store, DANA)
    assert block.admitted == ("new", "other")
    assert dict(block.dropped) == {
        "old": restated_reason("new", "ratio", 1.0),
        "low": restated_reason("new", "ratio", 1.0),
    }


def test_salience_comes_from_the_store_row(store: Any) -> None:
    write(store, "n1", FACT, salience=0.25)
    (node,) = store.query(DANA)
    assert recalled_from_node(node).record.salience == 0.25
    assert item_salience(recalled_from_node(node)) == 0.25
    # A record that states no salience has the store's default.
    assert item_salience(RecalledItem(object())) == DEFAULT_SALIENCE


def test_a_restatement_of_a_dropped_memory_is_not_dropped_through_it() -> None:
    # b restates a, c restates b but not a: a is kept, b dropped; c restates no kept memory, so it stays.
    a = "abcdefghijklmnopqrst"
    b = "abcdefghijklmnopqrXY"  # ratio 0.9 with a
    c = "abcdefghijklmnopZWXY"  # ratio 0.9 with b, 0.8 with a
    assert _reference.labels_match(a, b, min_chars=100) and _reference.labels_match(b, c, min_chars=100)
    assert not _reference.labels_match(a, c, min_chars=100)
    result = collapse_restatements([item("a", a, 0.9), item("b", b, 0.5), item("c", c, 0.1)], min_chars=100)
    assert ids(result.kept) == ["a", "c"]
    assert result.restatements == (Restatement("b", "a", "ratio", 0.9),)


def test_a_memory_restating_several_kept_ones_names_the_most_salient() -> None:
    x, y = "alpha beta gamma delta", "epsilon zeta eta theta"  # neither restates the other
    z = f"{x} {y}"  # contains both
    for sx, sy, named in ((0.3, 0.8, "y"), (0.8, 0.3, "x"), (0.5, 0.5, "y")):
        result = collapse_restatements([item("x", x, sx), item("y", y, sy), item("z", z, 0.1)])
        assert ids(result.kept) == ["x", "y"]
        assert [(r.record_id, r.kept_id, r.rule) for r in result.restatements] == [
            ("z", named, "containment")
        ]


# --- direction, as at write time ------------------------------------------------------------------------


def test_the_older_memory_is_the_stored_side() -> None:
    # difflib's ratio is not symmetric: ratio("diet", "tide") is 0.5, ratio("tide", "diet") 0.25.
    assert _reference.ratio("diet", "tide") == 0.5 and _reference.ratio("tide", "diet") == 0.25
    older_diet = collapse_restatements([item("d", "diet"), item("t", "tide")], threshold=0.5)
    assert older_diet.restatements == (Restatement("d", "t", "ratio", 0.5),)
    older_tide = collapse_restatements([item("t", "tide"), item("d", "diet")], threshold=0.5)
    assert older_tide.restatements == ()
    # The kept memory may be the older one: a more salient "diet" stays, and the newer "tide" restates it.
    kept_older = collapse_restatements([item("d", "diet", 0.9), item("t", "tide", 0.1)], threshold=0.5)
    assert kept_older.restatements == (Restatement("t", "d", "ratio", 0.5),)
    assert collapse_restatements([item("t", "tide", 0.9), item("d", "diet", 0.1)], threshold=0.5).kept == (
        item("t", "tide", 0.9),
        item("d", "diet", 0.1),
    )
    # An explicit age key says which is older, whatever the order of the items.
    age = {"d": 1, "t": 2}
    ranked = collapse_restatements(
        [item("t", "tide"), item("d", "diet")], threshold=0.5, age=lambda i: age[i.record.record_id]
    )
    assert ids(ranked.kept) == ["t"] and ranked.restatements == (Restatement("d", "t", "ratio", 0.5),)


# --- guards ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "guards"),
    [
        ("Ticket ASR1603 is blocked", "Ticket ASR1605 is blocked", "value"),
        (
            "The staging server is reachable over VPN",
            "The staging server is not reachable over VPN",
            "negation",
        ),
    ],
)
def test_guards_block_a_collapse(store: Any, old: str, new: str, guards: str) -> None:
    write(store, "old", old)
    write(store, "new", new)
    assert recall(store, DANA).admitted == ("new",)  # the contract alone merges them
    guarded = recall(store, DANA, guards=guards)
    assert guarded.admitted == ("old", "new") and guarded.dropped == ()
    assert store.recall(DANA, guards=Guards(value=True, negation=True)).admitted == ("old", "new")


def test_a_guard_blocked_kept_memory_does_not_hide_a_later_allowed_one() -> None:
    # The first kept memory in salience order is blocked by the value guard; the second one is not.
    items = [
        item("v", "Ticket ASR1605 is blocked today", 0.9),
        item("w", "ticket asr1603 is blocked today", 0.8),
        item("z", "Ticket ASR1603 is blocked today.", 0.1),
    ]
    result = collapse_restatements(items, guards="value")
    assert ids(result.kept) == ["v", "w"]
    assert [(r.record_id, r.kept_id) for r in result.restatements] == [("z", "w")]


# --- the window filter and the collapse together -----------------------------------------------------------


def test_window_filter_and_collapse_together(store: Any) -> None:
    turn = TranscriptRow.of(1, 0, "user", "I always work in dark mode")
    store.upsert_node(
        DANA, node_id=turn.node_id, layer=turn.layer, label=turn.text, properties=turn.properties,
        origin=turn.origin, salience=0.9,
    )  # fmt: skip
    write(store, "restated", "I always work in dark mode.", salience=0.1)  # restates the transcript row
    write(store, "dup1", FACT)
    write(store, "dup2", FACT)
    write(store, "apart", "Lives in Lisbon")
    window = [WindowTurn(1, "user", "I always work in dark mode")]

    block = recall(store, DANA, window)

    # The collapse runs first, over what was selected: the restatement goes for the (more salient)
    # transcript row, which the window filter then drops as the window's own turn. The fact renders
    # once: in the window. The collapse's drops are reported first, each in the store's order.
    assert block.dropped == (
        ("restated", restated_reason(turn.node_id, "ratio", 1.0)),
        ("dup1", restated_reason("dup2", "ratio", 1.0)),
        (turn.node_id, REPEATED_REASON),
    )
    assert block.admitted == ("dup2", "apart")
    assert block.text == "\n".join(["user: I always work in dark mode", FACT, "Lives in Lisbon"])
    assert [i.record.record_id for i in block.memories] == [turn.node_id, "restated", "dup1", "dup2", "apart"]
    # Without the collapse, only the window's copy goes.
    assert dict(recall(store, DANA, window, collapse=False).dropped) == {turn.node_id: REPEATED_REASON}


def test_kept_items_keep_their_order() -> None:
    items = [
        item("a", "Lives in Lisbon", 0.1),
        item("b", FACT, 0.2),
        item("c", "Works at Acme on payments", 0.9),
        item("d", FACT, 0.9),
        item("e", "lives in lisbon", 0.3),
    ]
    result = collapse_restatements(items)
    assert ids(result.kept) == ["c", "d", "e"]
    assert result.dropped == (
        ("a", restated_reason("e", "ratio", 1.0)),
        ("b", restated_reason("d", "ratio", 1.0)),
    )


def test_reasons_name_ids_and_rules_only(store: Any) -> None:
    secret = "The deploy password is hunter2hunter2 for every staging host"
    write(store, "k", secret + " and on every production host in the eu-west-1 region too", salience=0.9)
    write(store, "d", secret)
    block = recall(store, DANA)
    ((record_id, reason),) = block.dropped
    assert record_id == "d"
    assert reason_parts(reason)[:2] == ("k", "containment")
    assert "hunter2" not in reason and "deploy" not in reason


def test_the_store_forwards_the_collapse_options(store: Any) -> None:
    write(store, "a", "Ticket ASR1603 is blocked")
    write(store, "b", "Ticket ASR1605 is blocked")
    write(store, "c", "Ticket ASR1605 is blocked")
    for options in (
        {},
        {"collapse": False},
        {"guards": "value"},
        {"threshold": 1.0},
        {"min_chars": 0, "threshold": 1.0},
    ):
        assert store.recall(DANA, **options) == recall(store, DANA, **options)
    assert store.recall(DANA, threshold=1.0).admitted == ("a", "c")
    defaults = inspect.signature(store.recall).parameters
    assert (defaults["threshold"].default, defaults["min_chars"].default) == (
        DEDUP_SIMILARITY_THRESHOLD,
        DEDUP_SUBSUME_MIN_CHARS,
    )
    assert store.recall(DANA, collapse=False).admitted == ("a", "b", "c")


# --- bad input --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"threshold": "high"}, InputTypeError),
        ({"min_chars": "16"}, InputTypeError),
        ({"guards": "values"}, InvalidInputError),
        ({"guards": 3}, InputTypeError),
        ({"collapse": "yes"}, InputTypeError),
    ],
)
def test_bad_options_are_typed_errors(store: Any, options: dict[str, Any], error: type[Exception]) -> None:
    write(store, "a", FACT)
    with pytest.raises(error):
        recall(store, DANA, **options)
    with SQLiteGraphStore(":memory:") as empty, pytest.raises(error):
        recall(empty, DANA, **options)  # refused even with nothing to collapse


@pytest.mark.parametrize(
    ("salience", "error"),
    [("high", InputTypeError), (True, InputTypeError), (None, InputTypeError), (math.nan, InvalidInputError)],
)
def test_a_bad_salience_is_a_typed_error(salience: Any, error: type[Exception]) -> None:
    items = [item("a", FACT), item("b", FACT)]
    with pytest.raises(error):
        collapse_restatements(items, salience=lambda i: salience)


def test_a_record_whose_text_is_not_a_str_is_a_typed_error() -> None:
    with pytest.raises(InputTypeError):
        collapse_restatements([RecalledItem(RecalledRecord("a", None))])  # type: ignore[arg-type]


# --- against a plain oracle -------------------------------------------------------------------------------


def oracle(
    labels: list[str],
    saliences: list[float],
    ages: list[int],
    *,
    threshold: float,
    min_chars: int,
    guards: Any,
) -> tuple[list[int], dict[int, int]]:
    """The rule, plainly: in salience order (most salient first, ties newest first), each memory is
    dropped for the first kept one it restates (the older of the two the stored side), else kept."""
    order = sorted(range(len(labels)), key=lambda i: (saliences[i], ages[i]), reverse=True)
    kept: list[int] = []
    dropped: dict[int, int] = {}
    for i in order:
        for k in kept:
            stored, incoming = (k, i) if ages[k] < ages[i] else (i, k)
            if _reference.labels_match(
                labels[stored], labels[incoming], threshold=threshold, min_chars=min_chars, guards=guards
            ):
                dropped[i] = k
                break
        else:
            kept.append(i)
    return sorted(kept), dropped


@st.composite
def recalled_labels(draw: st.DrawFn) -> list[str]:
    """A recall set rich in restatements: restatement pairs, few-edit mutations of earlier labels, text
    from every Unicode category, and short words over five letters (anagrams: where difflib's ratio
    depends on which side is stored, as ``diet``/``tide``)."""
    labels: list[str] = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["pair", "mutate", "any", "short"]))
        if kind == "short":
            labels.append(draw(st.text(alphabet="detia", min_size=1, max_size=6)))
        elif kind == "pair":
            labels.extend(draw(restatement_pairs()))
        elif kind == "mutate" and labels:
            labels.append(draw(mutated(draw(st.sampled_from(labels)), EVERY_CATEGORY_CHAR, 3)))
        else:
            labels.append(draw(st.text(alphabet=EVERY_CATEGORY_CHAR, max_size=30)))
    return labels


@settings(max_examples=n_examples(150))
@given(
    labels=recalled_labels(),
    data=st.data(),
    threshold=st.sampled_from([0.5, 0.7, 0.85, 0.95, 1.0]),
    min_chars=st.sampled_from([0, 5, 16, 1000]),
    guards=st.sampled_from([None, "value", "negation", "all"]),
)
def test_collapse_equals_the_oracle(
    labels: list[str], data: st.DataObject, threshold: float, min_chars: int, guards: Any
) -> None:
    saliences = data.draw(
        st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=len(labels), max_size=len(labels))
    )
    items = [item(f"r{k}", label, sal) for k, (label, sal) in enumerate(zip(labels, saliences, strict=True))]
    # Oldest first by position, or by an age key in any order (distinct ages: the rank is the age).
    ranked = data.draw(st.booleans())
    ages = data.draw(st.permutations(range(len(labels)))) if ranked else list(range(len(labels)))
    age = {f"r{k}": a for k, a in enumerate(ages)}

    result = collapse_restatements(
        items,
        threshold=threshold,
        min_chars=min_chars,
        guards=guards,
        age=(lambda it: age[it.record.record_id]) if ranked else None,
    )

    kept, dropped = oracle(labels, saliences, ages, threshold=threshold, min_chars=min_chars, guards=guards)
    assert ids(result.kept) == [f"r{k}" for k in kept]
    assert {r.record_id: r.kept_id for r in result.restatements} == {
        f"r{i}": f"r{k}" for i, k in dropped.items()
    }
    assert [r.record_id for r in result.restatements] == [f"r{i}" for i in sorted(dropped)]
    for r in result.restatements:
        i, k = int(r.record_id[1:]), int(r.kept_id[1:])
        stored, incoming = (labels[k], labels[i]) if ages[k] < ages[i] else (labels[i], labels[k])
        assert (r.rule, r.score) == _reference.match_reason(
            stored, incoming, threshold=threshold, min_chars=min_chars
        )
        assert result.dropped[result.restatements.index(r)] == (r.record_id, r.reason)
