"""memdedup.index.LabelIndex: every query answers exactly what deciding each stored label would.

Three oracles, each independent of the index's filters: the brute-force ``_reference.LabelIndex``
(stdlib difflib), the contract restated in tests/strategies.py, and the all-pairs ``join`` (another
algorithm: the earlier labels a label matches are exactly its join partners).
"""

from __future__ import annotations

import gzip
import itertools
import math
import random
import threading
from pathlib import Path
from typing import Any

import memdedup
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memdedup import _core, _reference, batch
from memdedup.errors import InputTypeError, InvalidInputError
from memdedup.index import IndexMatch, LabelIndex
from strategies import (
    EVERY_CATEGORY_CHAR,
    HOT_CHARS,
    PY_ONLY_WHITESPACE,
    WORDS,
    n_examples,
    seed_match_reason,
)

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "benches" / "data" / "labels_sample.txt.gz"

pytestmark = pytest.mark.skipif(memdedup.IMPLEMENTATION != "rust", reason="the core's index")

# Labels from a few words (restatements, containment and near misses are common), with characters of
# every general category, Python-only whitespace and the hot characters mixed in.
_piece = st.one_of(
    st.sampled_from(WORDS),
    st.text(
        alphabet=st.one_of(EVERY_CATEGORY_CHAR, st.sampled_from(HOT_CHARS + PY_ONLY_WHITESPACE)), max_size=3
    ),
)
labels = st.lists(_piece, max_size=12).map(" ".join)
thresholds = st.sampled_from([0.85, 0.85, 0.6, 0.95, 1.0, 0.0, -1.0, 1.5, math.nan])
min_chars = st.sampled_from([16, 16, 0, 1, 4, 30])


def _expected(ref: _reference.LabelIndex, label: Any, part: int, t: float, mc: int, first: bool) -> list[Any]:
    return ref.query(label, part, threshold=t, min_chars=mc, first=first)


ops = st.lists(
    st.one_of(
        st.tuples(st.just("insert"), labels, st.integers(0, 2)),
        st.tuples(st.just("remove"), st.integers(0, 40), st.just(0)),
        st.tuples(st.just("query"), labels, st.integers(0, 2)),
        st.tuples(st.just("relabel"), st.tuples(st.integers(0, 40), labels), st.just(0)),
    ),
    max_size=40,
)


@settings(max_examples=n_examples(150), deadline=None)
@given(ops=ops, serves=st.sampled_from([16, 1, 4, 40]), t=thresholds, mc=min_chars, first=st.booleans())
def test_core_index_equals_brute_force(
    ops: list[tuple[str, Any, int]], serves: int, t: float, mc: int, first: bool
) -> None:
    core, ref = _core.LabelIndex(serves), _reference.LabelIndex(serves)
    for op, arg, part in ops:
        if op == "insert":
            assert core.insert(arg, part) == ref.insert(arg, part)
        elif op == "remove":
            assert core.remove(arg) == ref.remove(arg)
        elif op == "relabel":
            number, label = arg
            assert core.relabel(number, label) == ref.relabel(number, label)
        else:
            got = core.query(arg, part, threshold=t, min_chars=mc, first=first)
            assert got == _expected(ref, arg, part, t, mc, first)
            # The service API of the twins too: the same slots (reused lowest first), partitions, counts.
            assert core.query(arg, part, threshold=t, min_chars=mc, first=first, slots=True) == ref.query(
                arg, part, threshold=t, min_chars=mc, first=first, slots=True
            )
        assert len(core) == len(ref)
        counted = ("labels", "partitions", "slots", "free_slots", "inserted")
        assert [kv for kv in core.stats() if kv[0] in counted] == [
            kv for kv in ref.stats() if kv[0] in counted
        ]
        for number in range(ref._next + 1):
            assert core.slot_of(number) == ref.slot_of(number)
            assert core.partition_of(number) == ref.partition_of(number)
            assert (number in core) == (number in ref)
        assert core.slots_of(0, ref._next + 1) == ref.slots_of(0, ref._next + 1)
        for p in range(3):
            assert core.partition_len(p) == ref.partition_len(p)
    # Every stored label against the rest, with the contract restated from scratch.
    for label in {arg for op, arg, _ in ops if op in ("insert", "query")}:
        got = core.query(label, 0, threshold=t, min_chars=mc)
        want = ref.query(label, 0, threshold=t, min_chars=mc)
        assert got == want


@settings(max_examples=n_examples(60), deadline=None)
@given(stored=st.lists(labels, max_size=20), incoming=labels)
def test_reasons_and_scores_are_the_contracts(stored: list[str], incoming: str) -> None:
    index = LabelIndex.build(stored)
    got = index.query(incoming)
    want = []
    for k, label in enumerate(stored):
        found = seed_match_reason(label, incoming, threshold=0.85)
        if found is not None:
            want.append(IndexMatch(k, found[0], found[1]))
    assert got == want
    assert index.first_match(incoming) == (want[0] if want else None)


def test_finds_restatements_the_prefix_gate_misses() -> None:
    index = LabelIndex()
    index.insert("User prefers dark mode", "a")
    index.insert("Lives in Berlin", "b")
    # Different first 20 characters: the seed's prefix gate never fetches "a".
    assert index.query("Prefers dark mode") == [IndexMatch("a", "ratio", pytest.approx(0.8718, abs=1e-4))]
    # A restatement behind more than 20 labels with the same prefix is still found, oldest first.
    for k in range(25):
        index.insert(f"User prefers dark mode number {k} of many", f"n{k}")
    found = index.query("user prefers dark mode!")
    assert found[0].id == "a"


def test_partitions_never_meet() -> None:
    index = LabelIndex()
    index.insert("prefers dark mode in every editor", 1, scope="tenant-a", layer="semantic")
    index.insert("prefers dark mode in every editor", 2, scope="tenant-b", layer="semantic")
    index.insert("prefers dark mode in every editor", 3, scope="tenant-a", layer="episodic")
    assert [
        m.id for m in index.query("Prefers dark mode in every editor.", scope="tenant-a", layer="semantic")
    ] == [1]
    assert [
        m.id for m in index.query("prefers dark mode in every editor", scope="tenant-b", layer="semantic")
    ] == [2]
    assert index.query("prefers dark mode in every editor", scope="tenant-c") == []
    # Scope keys compare by kind and value: the str "1" and the int 1 are two scopes.
    index.insert("lives in berlin", 4, scope=1)
    assert index.query("lives in berlin", scope="1") == []
    assert [m.id for m in index.query("lives in berlin", scope=1)] == [4]


def test_remove_insert_contains_len_and_ids() -> None:
    index = LabelIndex()
    index.insert("prefers dark mode", ("node", 1))
    assert ("node", 1) in index and len(index) == 1 and [1] not in index
    with pytest.raises(InvalidInputError):
        index.insert("anything", ("node", 1))
    with pytest.raises(InvalidInputError):
        index.insert("anything", [1])  # unhashable id
    assert index.label(("node", 1)) == "prefers dark mode"
    assert index.remove(("node", 1)) is True
    assert index.remove(("node", 1)) is False
    assert index.query("prefers dark mode") == [] and len(index) == 0
    index.insert("prefers dark mode", ("node", 1))
    assert [m.id for m in index.query("prefers dark mode")] == [("node", 1)]
    assert index.memory_bytes() > 0


def test_guards_drop_blocked_matches() -> None:
    index = LabelIndex()
    index.insert("Meeting moved to 3pm on Friday", "m1")
    index.insert("Meeting moved to 4pm on Friday", "m2")
    assert [m.id for m in index.query("Meeting moved to 4pm on Friday")] == ["m1", "m2"]
    assert [m.id for m in index.query("Meeting moved to 4pm on Friday", guards="value")] == ["m2"]
    assert (
        index.first_match("Meeting moved to 4pm on Friday", guards="value")
        == index.query("Meeting moved to 4pm on Friday", guards="value")[0]
    )


def test_missing_values_and_bad_arguments() -> None:
    index = LabelIndex()
    index.insert(None, "none")
    index.insert(float("nan"), "nan")
    index.insert("", "empty")
    assert index.query(None) == [] and index.query("") == [] and index.query(float("nan")) == []
    assert len(index) == 3
    with pytest.raises(InvalidInputError):
        index.insert_many(["a", "b"], ["x"])
    with pytest.raises(InvalidInputError):
        index.insert_many(["a", "b"], ["x", "x"])
    with pytest.raises(InputTypeError):
        index.query("a", threshold="high")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        LabelIndex(min_chars=-1)
    with pytest.raises(InvalidInputError):
        _core.LabelIndex().insert("a", -1)
    assert len(index) == 3  # nothing stored by the refused calls


class _Odd(str):
    """A str subclass with its own ``__eq__``/``__hash__``: labels are read by their characters."""

    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return 0

    def lower(self) -> str:  # type: ignore[override]
        return "changed"


def test_str_subclasses_are_read_by_their_characters() -> None:
    index = LabelIndex()
    index.insert(_Odd("Prefers dark mode everywhere"), "odd")
    index.insert("unrelated label", "plain")
    assert [m.id for m in index.query("prefers dark mode everywhere")] == ["odd"]
    assert [m.id for m in index.query(_Odd("unrelated label"))] == ["plain"]


def _sample_labels(limit: int) -> list[str]:
    with gzip.open(SAMPLE, "rt", encoding="utf-8", errors="surrogateescape") as fh:
        return [line.rstrip("\n") for line in itertools.islice(fh, limit)]


def test_real_labels_equal_the_join() -> None:
    """Inserted one by one, each real label's query before its own insertion finds exactly its join
    partners: the earlier labels it matches."""
    labels = _sample_labels(6000)
    assert len(labels) == 6000, "the bundled sample is part of the checkout"
    pairs = batch.join(labels)
    partners: dict[int, list[int]] = {}
    for i, j in pairs.tolist():
        partners.setdefault(j, []).append(i)
    index = LabelIndex()
    matched = 0
    for j, label in enumerate(labels):
        found = [m.id for m in index.query(label)]
        assert found == partners.get(j, []), (j, label)
        matched += bool(found)
        index.insert(label, j)
    assert matched > 100  # the sample has restatements: the test compares real answers


@pytest.mark.slow
def test_real_labels_built_at_once_equal_brute_force() -> None:
    labels = _sample_labels(20_000)
    index = LabelIndex.build(labels)
    rng = random.Random(7)
    queries = rng.sample(labels, 150) + [
        label[: len(label) // 2] + " and more" for label in rng.sample(labels, 50)
    ]
    for q in queries:
        mask = np.asarray(_core.match_mask(q, labels), dtype=bool)
        want = [int(k) for k in np.flatnonzero(mask)]
        got = index.query(q)
        assert [m.id for m in got] == want, q
        for m in got[:5]:
            reason = memdedup.match_reason(labels[m.id], q)
            assert reason is not None and (m.reason, m.score) == reason


def test_concurrent_queries_and_writes() -> None:
    """Queries release the GIL and share the lock; writes wait for them. Answers stay exact."""
    labels = _sample_labels(4000)
    index = LabelIndex.build(labels[:3000])
    expected = {q: [m.id for m in index.query(q)] for q in labels[:200]}
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            for q in labels[:200]:
                got = [m.id for m in index.query(q)]
                # Later insertions (ids >= 3000) may add matches; the earlier ones never change.
                assert [i for i in got if i < 3000] == expected[q]  # type: ignore[operator]
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def writer() -> None:
        try:
            for k in range(3000, 4000):
                index.insert(labels[k], k)
        except BaseException as exc:  # pragma: no cover
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(3)] + [threading.Thread(target=writer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(index) == 4000


def test_concurrent_writers_keep_ids_and_slots_together() -> None:
    """Several threads inserting and removing at once: every id stays with its own label (the core
    numbers slots in the order its writes complete, the wrapper records each under its own slot)."""
    labels = _sample_labels(2400)
    index = LabelIndex()
    errors: list[BaseException] = []

    def writer(k: int) -> None:
        try:
            for j in range(k, len(labels), 4):
                index.insert(labels[j], ("id", j))
                if j % 7 == 0:
                    assert index.remove(("id", j))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    live = [j for j in range(len(labels)) if j % 7]
    assert len(index) == len(live)
    for j in live[::37]:
        assert index.label(("id", j)) == labels[j]
        assert ("id", j) in [m.id for m in index.query(labels[j])]
    assert all(("id", j) not in index for j in range(0, len(labels), 7))
