"""Recall that collapses restatements: among the recalled memories themselves, each group of restatements
renders once, the nearest scope's kept, then the most recently stated (salience only breaks ties), every
drop reported by id; the kept memories are admitted by salience, then recency."""

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
    # The nearest scope's copy stays (Dana's own over the org's), the most recently stated of those.
    newest = f"copy{max(i for i in copies if i % 3)}"
    assert newest in block.admitted
    assert len(block.dropped) == 48
    assert {record_id for record_id, _ in block.dropped} == {f"copy{i}" for i in copies} - {newest}
    for _, reason in block.dropped:
        kept, rule, score = reason_parts(reason)
        assert (kept, rule, score) == (newest, "ratio", 1.0)
    # Every distinct fact renders: equal salience, so the most recently stated first.
    assert block.admitted == tuple(
        i.record.record_id for i in reversed(block.memories) if i.record.record_id not in dict(block.dropped)
    )

    every = recall(store, DANA, collapse=False)
    assert every.text.count(FACT) == 49
    assert every.dropped == ()


# --- which one stays ----------------------------------------------------------------------------------


def test_the_newest_restatement_stays_whatever_its_salience(store: Any) -> None:
    write(store, "a", FACT, salience=0.9)
    write(store, "b", FACT + ".", salience=0.2)
    write(store, "c", "user prefers dark mode in every editor", salience=0.4)
    block = recall(store, DANA)
    assert block.admitted == ("c",)
    assert block.dropped == (
        ("a", restated_reason("c", "ratio", 1.0)),
        ("b", restated_reason("c", "ratio", 1.0)),
    )


def test_a_changed_value_shows_the_newest_even_when_the_stale_one_is_more_important(store: Any) -> None:
    write(store, "allergy", "Raj is allergic to peanuts and tree nuts", salience=1.0)
    write(store, "cleared", "Raj is not allergic to peanuts and tree nuts", salience=0.7)
    block = recall(store, DANA)
    assert block.text == "Raj is not allergic to peanuts and tree nuts"
    assert dict(block.dropped) == {"allergy": restated_reason("cleared", "ratio", 0.952)}


def test_the_nearest_scope_wins_over_a_newer_ancestor_row(store: Any) -> None:
    write(store, "own", "The on-call shift is 6 hours long")
    write(store, "org", "The on-call shift is 24 hours long", scope=ORG)  # stated later, by the org
    assert recall(store, DANA).text == "The on-call shift is 6 hours long"
    # A sibling sees the org's row only.
    assert recall(store, ORG.child("user", "lee")).text == "The on-call shift is 24 hours long"


def test_a_fact_moving_between_layers_shows_the_newest(store: Any) -> None:
    write(store, "s", "Dana's flight to Lisbon leaves at 09:40", layer="semantic", salience=0.9)
    write(store, "e", "Dana's flight to Lisbon leaves at 19:40", layer="episodic", salience=0.3)
    assert recall(store, DANA).text == "Dana's flight to Lisbon leaves at 19:40"


def test_equal_salience_keeps_the_newest(store: Any) -> None:
    write(store, "old", FACT, salience=0.7)
    write(store, "low", FACT, salience=0.1)
    write(store, "new", FACT, salience=0.7)
    write(store, "other", "Lives in Lisbon", salience=0.7)
    block = recall(store, DANA)
    assert block.admitted == ("other", "new")  # equal salience: the most recently stated first
    assert dict(block.dropped) == {
        "old": restated_reason("new", "ratio", 1.0),
        "low": restated_reason("new", "ratio", 1.0),
    }


def test_admission_is_by_salience_then_recency(store: Any) -> None:
    write(store, "org-first", "Acme's first chat line is this one", scope=ORG, salience=0.1)
    write(store, "dana-key", "Dana deploys with the blue-green strategy", salience=0.9)
    write(store, "dana-new", "Dana prefers tabs over spaces", salience=0.5)
    write(store, "dana-old-equal", "Dana drinks tea at four", salience=0.5)
    block = recall(store, DANA, char_ceiling=len("Dana deploys with the blue-green strategy"))
    assert block.admitted == ("dana-key",)  # the most salient fits; the org's first line does not
    every = recall(store, DANA)
    assert every.admitted == ("dana-key", "dana-old-equal", "dana-new", "org-first")


def test_the_recall_door_reads_a_printed_scope_and_pairs(store: Any) -> None:
    write(store, "a", FACT)
    expected = recall(store, DANA)
    assert recall(store, "org:acme/user:dana") == expected
    assert store.recall("org:acme/user:dana") == expected
    assert recall(store, [("org", "acme"), ("user", "dana")]) == expected
    with pytest.raises(InvalidInputError, match="pairs"):
        recall(store, "org:acme/user:da:na")
    with pytest.raises(InputTypeError, match="printed form"):
        recall(store, 42)


def test_salience_comes_from_the_store_row(store: Any) -> None:
    write(store, "n1", FACT, salience=0.25)
    (node,) = store.query(DANA)
    assert recalled_from_node(node).record.salience == 0.25
    assert item_salience(recalled_from_node(node)) == 0.25
    # A record that states no salience has the store's default.
    assert item_salience(RecalledItem(object())) == DEFAULT_SALIENCE


def test_a_restatement_of_a_dropped_memory_is_not_dropped_through_it() -> None:
    # b restates a and c, c restates b but not a: the newest, c, is kept; b restates it and goes; a
    # restates no kept memory (it does not reach c), so it stays.
    a = "abcdefghijklmnopqrst"
    b = "abcdefghijklmnopqrXY"  # ratio 0.9 with a
    c = "abcdefghijklmnopZWXY"  # ratio 0.9 with b, 0.8 with a
    assert _reference.labels_match(a, b, min_chars=100) and _reference.labels_match(b, c, min_chars=100)
    assert not _reference.labels_match(a, c, min_chars=100)
    result = collapse_restatements([item("a", a, 0.9), item("b", b, 0.5), item("c", c, 0.1)], min_chars=100)
    assert ids(result.kept) == ["a", "c"]
    assert result.restatements == (Restatement("b", "c", "ratio", 0.9),)


def test_a_memory_restating_several_kept_ones_names_the_first_in_order() -> None:
    x, y = "alpha beta gamma delta", "epsilon zeta eta theta"  # neither restates the other
    z = f"{x} {y}"  # contains both
    # z is the oldest: x and y (newer) are kept, and z restates both; it names the first kept in the
    # order of the rule (the newer one, y), whatever the saliences.
    for sx, sy in ((0.3, 0.8), (0.8, 0.3), (0.5, 0.5)):
        result = collapse_restatements([item("z", z, 0.1), item("x", x, sx), item("y", y, sy)])
        assert ids(result.kept) == ["x", "y"]
        assert [(r.record_id, r.kept_id, r.rule) for r in result.restatements] == [("z", "y", "containment")]
    # Newer and saying more, z is kept and the older parts go.
    result = collapse_restatements([item("x", x), item("y", y), item("z", z)])
    assert ids(result.kept) == ["z"]


def test_salience_breaks_ties_of_age_only() -> None:
    same_age = collapse_restatements([item("a", FACT, 0.9), item("b", FACT, 0.2)], age=lambda i: 0)
    assert ids(same_age.kept) == ["a"]
    by_age = collapse_restatements([item("a", FACT, 0.9), item("b", FACT, 0.2)])
    assert ids(by_age.kept) == ["b"]


# --- direction, as at write time ------------------------------------------------------------------------


def test_the_older_memory_is_the_stored_side() -> None:
    # difflib's ratio is not symmetric: ratio("diet", "tide") is 0.5, ratio("tide", "diet") 0.25.
    assert _reference.ratio("diet", "tide") == 0.5 and _reference.ratio("tide", "diet") == 0.25
    older_diet = collapse_restatements([item("d", "diet"), item("t", "tide")], threshold=0.5)
    assert older_diet.restatements == (Restatement("d", "t", "ratio", 0.5),)
    older_tide = collapse_restatements([item("t", "tide"), item("d", "diet")], threshold=0.5)
    assert older_tide.restatements == ()
    # The kept memory may be the older one: a nearer "diet" stays, and the newer "tide" restates it.
    near = {"d": 1, "t": 0}
    kept_older = collapse_restatements(
        [item("d", "diet"), item("t", "tide")], threshold=0.5, nearness=lambda i: near[i.record.record_id]
    )
    assert kept_older.restatements == (Restatement("t", "d", "ratio", 0.5),)
    assert collapse_restatements([item("t", "tide"), item("d", "diet")], threshold=0.5).kept == (
        item("t", "tide"),
        item("d", "diet"),
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
    assert guarded.admitted == ("new", "old") and guarded.dropped == ()  # two facts, the newest first
    assert store.recall(DANA, guards=Guards(value=True, negation=True)).admitted == ("new", "old")


def test_a_guard_blocked_kept_memory_does_not_hide_a_later_allowed_one() -> None:
    # The first kept memory in the rule's order (the newest, v) is blocked by the value guard; the
    # second one (w) is not.
    items = [
        item("z", "Ticket ASR1603 is blocked today."),
        item("w", "ticket asr1603 is blocked today"),
        item("v", "Ticket ASR1605 is blocked today"),
    ]
    result = collapse_restatements(items, guards="value")
    assert ids(result.kept) == ["w", "v"]
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

    # The collapse runs first, over what was selected: the window's own turn stands first (the window is
    # the conversation now), so the newer, less salient restatement goes for the transcript row, which
    # the window filter then drops as the window's own turn. The fact renders once: in the window. The
    # collapse's drops are reported first, each in the store's order.
    assert block.dropped == (
        ("restated", restated_reason(turn.node_id, "ratio", 1.0)),
        ("dup1", restated_reason("dup2", "ratio", 1.0)),
        (turn.node_id, REPEATED_REASON),
    )
    assert block.admitted == ("apart", "dup2")  # equal salience: the most recently stated first
    assert block.text == "\n".join(["user: I always work in dark mode", "Lives in Lisbon", FACT])
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
    assert ids(result.kept) == ["c", "d", "e"]  # the newest of each group, in the items' order
    assert result.dropped == (
        ("a", restated_reason("e", "ratio", 1.0)),
        ("b", restated_reason("d", "ratio", 1.0)),
    )


def test_reasons_name_ids_and_rules_only(store: Any) -> None:
    secret = "The deploy password is hunter2hunter2 for every staging host"
    write(store, "d", secret)
    write(store, "k", secret + " and on every production host in the eu-west-1 region too")
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
    assert store.recall(DANA, threshold=1.0).admitted == ("c", "a")
    defaults = inspect.signature(store.recall).parameters
    assert (defaults["threshold"].default, defaults["min_chars"].default) == (
        DEDUP_SIMILARITY_THRESHOLD,
        DEDUP_SUBSUME_MIN_CHARS,
    )
    assert store.recall(DANA, collapse=False).admitted == ("c", "b", "a")


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
    nears: list[int],
    *,
    threshold: float,
    min_chars: int,
    guards: Any,
) -> tuple[list[int], dict[int, int]]:
    """The rule, plainly: nearest first, then newest (ties of age: most salient, then last in order), each
    memory is dropped for the first kept one it restates (the older of the two the stored side, ties of
    age by position), else kept."""
    n = len(labels)
    order = sorted(range(n), key=lambda i: (nears[i], ages[i], saliences[i], i), reverse=True)
    kept: list[int] = []
    dropped: dict[int, int] = {}
    for i in order:
        for k in kept:
            stored, incoming = (k, i) if (ages[k], k) < (ages[i], i) else (i, k)
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
    n = len(labels)
    nears = data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    scopes = ["\x1f".join(["org", "acme", "user", "dana", "team", "x"][: 2 * d]) or None for d in nears]
    items = [
        RecalledItem(RecalledRecord(f"r{k}", label, salience=sal, scope_path=scope))
        for k, (label, sal, scope) in enumerate(zip(labels, saliences, scopes, strict=True))
    ]
    # Oldest first by position, or by an age key in any order, with ties (then salience decides which
    # stays, and position which is older).
    ranked = data.draw(st.booleans())
    ages = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)) if ranked else list(range(n))
    age = {f"r{k}": a for k, a in enumerate(ages)}

    result = collapse_restatements(
        items,
        threshold=threshold,
        min_chars=min_chars,
        guards=guards,
        age=(lambda it: age[it.record.record_id]) if ranked else None,
    )

    kept, dropped = oracle(
        labels, saliences, ages, nears, threshold=threshold, min_chars=min_chars, guards=guards
    )
    assert ids(result.kept) == [f"r{k}" for k in kept]
    assert {r.record_id: r.kept_id for r in result.restatements} == {
        f"r{i}": f"r{k}" for i, k in dropped.items()
    }
    assert [r.record_id for r in result.restatements] == [f"r{i}" for i in sorted(dropped)]
    for r in result.restatements:
        i, k = int(r.record_id[1:]), int(r.kept_id[1:])
        older_k = (ages[k], k) < (ages[i], i)
        stored, incoming = (labels[k], labels[i]) if older_k else (labels[i], labels[k])
        assert (r.rule, r.score) == _reference.match_reason(
            stored, incoming, threshold=threshold, min_chars=min_chars
        )
        assert result.dropped[result.restatements.index(r)] == (r.record_id, r.reason)
