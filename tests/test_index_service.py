"""``memdedup.index.LabelIndex`` as a long-running service (issue 37): one partition per distinct scope
whatever the entry point, relabel in place, memory that returns to its level under churn, the counts a
server exports, copies refused, and Ctrl-C on a long label's insert and query."""

from __future__ import annotations

import copy
import doctest
import pickle
from typing import Any

import interrupt_support  # tests/ (conftest.py puts it on the path)
import memdedup
import pytest
from memdedup import _reference
from memdedup.errors import InputTypeError
from memdedup.index import IndexMatch, LabelIndex
from test_bindings_child import PRELUDE, child_env

pytestmark = pytest.mark.skipif(memdedup.IMPLEMENTATION != "rust", reason="the core's index")

LABEL = "prefers dark mode in every editor"

#: Values that compare and hash equal but are distinct scopes by the partition rule.
EQUAL_BUT_DISTINCT: list[Any] = [(1,), (True,), (1.0,), 1, True, 1.0, ("a", 1), ("a", True)]


def _by_insert(scopes: list[Any], layers: list[Any]) -> LabelIndex:
    index = LabelIndex()
    for k, (scope, layer) in enumerate(zip(scopes, layers, strict=True)):
        index.insert(LABEL, k, scope=scope, layer=layer)
    return index


def _by_insert_many(scopes: list[Any], layers: list[Any]) -> LabelIndex:
    index = LabelIndex()
    index.insert_many([LABEL] * len(scopes), list(range(len(scopes))), scopes=scopes, layers=layers)
    return index


def _by_build(scopes: list[Any], layers: list[Any]) -> LabelIndex:
    return LabelIndex.build([LABEL] * len(scopes), scopes=scopes, layers=layers)


@pytest.mark.parametrize("make", [_by_insert, _by_insert_many, _by_build])
@pytest.mark.parametrize("column", ["scope", "layer"])
def test_one_partition_per_distinct_scope_whatever_the_entry_point(make: Any, column: str) -> None:
    values = EQUAL_BUT_DISTINCT
    nones: list[Any] = [None] * len(values)
    index = make(values, nones) if column == "scope" else make(nones, values)
    for k, value in enumerate(values):
        where = {column: value}
        assert [m.id for m in index.query(LABEL, **where)] == [k], value
    assert index.stats()["partitions"] == len(values)


def test_the_module_s_examples_run() -> None:
    import memdedup.index

    assert doctest.testmod(memdedup.index, optionflags=doctest.ELLIPSIS).failed == 0


def test_copies_are_refused_and_the_original_keeps_working() -> None:
    index = LabelIndex.build([LABEL, "lives in berlin"])
    for attempt in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(InputTypeError, match="cannot be copied"):
            attempt(index)
    assert index.remove(0) and [m.id for m in index.query("lives in berlin")] == [1]


def test_relabel_keeps_the_place_in_the_order_and_the_partition() -> None:
    index = LabelIndex()
    index.insert("lives in berlin with two cats", "old", scope="t")
    index.insert(LABEL, "newer", scope="t")
    index.insert(LABEL, "other scope", scope="u")
    slots = index.stats()["slots"]
    index.relabel("old", LABEL + ".")
    # The relabelled row is the oldest: it answers first, in its own scope only.
    assert [m.id for m in index.query(LABEL, scope="t")] == ["old", "newer"]
    assert index.first_match(LABEL, scope="t") == IndexMatch("old", "ratio", 1.0)
    assert index.query("lives in berlin with two cats", scope="t") == []
    assert index.label("old") == LABEL + "." and len(index) == 3
    assert index.stats()["slots"] == slots
    # The same answers as an index built from the new labels in the old order.
    fresh = LabelIndex.build([LABEL + ".", LABEL], ["old", "newer"], scopes=["t", "t"])
    for q in (LABEL, "prefers dark mode", "in every editor"):
        assert index.query(q, scope="t", min_chars=4) == fresh.query(q, scope="t", min_chars=4)
    with pytest.raises(KeyError):
        index.relabel("missing", LABEL)


def test_churn_returns_memory_to_its_level() -> None:
    """One label inserted and removed again and again, and a scope per cycle: the core's slots,
    lists and partitions and the wrapper's id maps come back to their level (counted in bytes)."""
    index = LabelIndex()
    index.insert("lives in berlin with two cats", "kept")
    for k in range(50):  # the tables' first growth
        index.insert(LABEL, k, scope=k % 7)
        index.remove(k)
    level = index.memory_bytes()
    for k in range(50, 20_050):
        index.insert(LABEL, k, scope=k % 7)
        assert index.remove(k)
    stats = index.stats()
    assert (stats["labels"], stats["partitions"], stats["slots"], stats["free_slots"]) == (1, 1, 1, 0)
    assert stats["inserted"] == 20_051
    assert index.memory_bytes() <= level
    assert [m.id for m in index.query("lives in berlin with two cats")] == ["kept"]
    # Emptied: nothing left in the core.
    index.remove("kept")
    assert index.stats()["labels"] == 0 and index._core.memory_bytes() == 0


def test_stats_count_labels_partitions_and_tombstones() -> None:
    index = LabelIndex.build([f"{LABEL} number {k}" for k in range(100)], scopes=[k % 3 for k in range(100)])
    stats = index.stats()
    assert (stats["labels"], stats["partitions"], stats["tombstones"]) == (100, 3, 0)
    assert stats["bytes"] == index.memory_bytes() > 0
    for k in range(0, 100, 2):
        index.remove(k)
    stats = index.stats()
    assert stats["labels"] == 50 and stats["tombstones"] > 0 and stats["free_slots"] > 0
    # The answers are unchanged by what is retired.
    ref = _reference.LabelIndex()
    for k in range(1, 100, 2):
        ref.insert(f"{LABEL} number {k}", 0)
    got = [m.id for m in index.query(f"{LABEL} number 5", scope=1 % 3)]
    assert got and all(k % 2 == 1 and k % 3 == 1 for k in got)


# -- Ctrl-C on a long label (the minimiser pass is linear and polls; the probe scales the label until
# the call is measured to last, see interrupt_support)

SETUP = """
import random
from memdedup.index import LabelIndex
rng = random.Random(37)
block = rng.randbytes(1_000_000).translate(bytes(b"ab"[k % 2] for k in range(256))).decode()
label = block * (4 * SCALE)
index = LabelIndex()
index.insert_many(["ab" * 20, "ba" * 30, "prefers dark mode in every editor"], ["x", "y", "z"])
"""

FOLLOW_UP = """
found = [m.id for m in index.query("prefers dark mode in every editor")]
print("alive" if found == ["z"] else f"wrong answer after Ctrl-C: {found!r}", flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("call", ["index.insert(label, 'long')", "index.query(label)"])
def test_ctrl_c_interrupts_a_long_label(call: str) -> None:
    """The label is scaled until the call lasts 4 s uninterrupted; KeyboardInterrupt (and the child's
    exit) must come within 2 s of the signal, so a call that only raised when it ended fails."""
    source = interrupt_support.script(
        SETUP, call, prelude=PRELUDE, follow_up=FOLLOW_UP, min_seconds=4.0, rounds=4
    )
    interrupt_support.interrupt(source, env=child_env(), bound=2.0).check()
