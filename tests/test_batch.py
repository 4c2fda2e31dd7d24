"""Batch APIs against the pair-by-pair contract: replay, join, clusters, pairs, one-vs-many, cdist."""

from __future__ import annotations

import asyncio
import difflib
import gzip
import itertools
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memdedup import _reference, batch
from memdedup._backend import IMPLEMENTATION
from memdedup.dedup import find_canonical_node
from memdedup.errors import InvalidInputError
from memdedup.scope import Scope
from memdedup.store import SQLiteGraphStore
from profiles import sampled
from strategies import label_text, n_examples, seed_labels_match

BASE = [
    "Uses pytest and ruff",
    "Uses pytest and ruff for Python projects",
    "uses pytest and ruff.",
    "Prefers dark mode in every editor",
    "Prefers dark mode in every editor and terminal",
    "Project Alpha uses PostgreSQL 15",
    "Project Beta uses PostgreSQL 15",
    "Lives in Zürich, works in Genève",
    "Ναυτικός στην Πάτρα — ΟΔΟΣ",
    "ab",
    "",
    "   ",
]


def mutate(rnd: random.Random, s: str) -> str:
    chars = list(s)
    for _ in range(rnd.randint(0, 4)):
        op, pos = rnd.randint(0, 3), rnd.randint(0, len(chars))
        if op == 0:
            chars.insert(pos, rnd.choice("abc XYZé.!"))
        elif chars and pos < len(chars):
            if op == 1:
                del chars[pos]
            elif op == 2:
                chars[pos] = rnd.choice("abc XYZé.!")
            else:
                chars[pos] = chars[pos].upper()
    out = "".join(chars)
    return out if rnd.random() < 0.8 else out + " with extra detail about the same fact"


def corpus(seed: int, n: int) -> list[str]:
    rnd = random.Random(seed)
    labels = []
    for _ in range(n):
        base = rnd.choice(BASE + labels[-5:]) if labels else rnd.choice(BASE)
        labels.append(mutate(rnd, base) if rnd.random() < 0.7 else base)
    return labels


labels_strategy = st.lists(
    st.one_of(st.sampled_from(BASE), st.text(alphabet="ab .Xé", max_size=30)), min_size=0, max_size=40
)


@settings(max_examples=n_examples(150), deadline=None)
@given(
    labels=labels_strategy, threshold=st.sampled_from([0.0, 0.5, 0.85, 1.0]), prefix_len=st.integers(0, 25)
)
def test_replay_equals_reference(labels: list[str], threshold: float, prefix_len: int) -> None:
    scopes = [len(label) % 2 for label in labels]
    for prefix in ("raw", "normalised"):
        got = batch.replay(labels, scopes=scopes, threshold=threshold, prefix=prefix, prefix_len=prefix_len)
        want = _reference.replay(labels, scopes, threshold=threshold, prefix=prefix, prefix_len=prefix_len)
        assert got.canonical.tolist() == want[0]
        assert got.reason == want[1]
        np.testing.assert_array_equal(got.score, np.asarray(want[2]))


@pytest.mark.parametrize("seed", range(4))
def test_replay_equals_sequential_find_canonical_node_on_a_real_store(tmp_path, seed: int) -> None:
    """The seed's lookup, called once per label against a real SQLite store that gets each new
    canonical appended, decides exactly what replay decides."""
    labels = corpus(seed, 120)
    scope = Scope.root("tenant", "acme").child("user", "dana")

    async def sequential() -> list[int]:
        out: list[int] = []
        with SQLiteGraphStore(tmp_path / f"replay{seed}.sqlite") as store:
            for i, label in enumerate(labels):
                node = await find_canonical_node(store, scope, layer="semantic", label=label)
                if node is not None:
                    out.append(int(node.id))
                    continue
                if label.strip():
                    store.upsert_node(scope, node_id=str(i), layer="semantic", label=label.strip())
                out.append(i)
        return out

    assert batch.replay(labels).canonical.tolist() == asyncio.run(sequential())


@settings(max_examples=n_examples(150), deadline=None)
@given(
    labels=st.lists(
        st.one_of(st.sampled_from(BASE), st.text(alphabet="ab .Xé", max_size=30), label_text), max_size=40
    ),
    threshold=st.sampled_from([0.0, 0.5, 0.85, 1.0]),
    min_chars=st.sampled_from([0, 4, 16]),
)
def test_gate_free_replay_equals_a_sequential_brute_force(
    labels: list[str], threshold: float, min_chars: int
) -> None:
    """``prefix="none"``: each label joins the oldest earlier canonical of its partition it matches (every
    canonical decided in order, nothing capped), exactly as the reference does it and as a plain loop does."""
    scopes = [len(label) % 2 for label in labels]
    got = batch.replay(labels, scopes=scopes, threshold=threshold, min_chars=min_chars, prefix="none")
    want = _reference.replay(labels, scopes, threshold=threshold, min_chars=min_chars, prefix="none")
    assert got.canonical.tolist() == want[0]
    assert got.reason == want[1]
    np.testing.assert_array_equal(got.score, np.asarray(want[2]))
    # The same, restated with the contract's oracle and no index at all.
    canon: dict[int, list[int]] = {}
    expected = []
    for i, (label, scope) in enumerate(zip(labels, scopes, strict=True)):
        if not label.strip():
            expected.append(i)
            continue
        store = canon.setdefault(scope, [])
        hit = next(
            (
                j
                for j in store
                if seed_labels_match(labels[j], label, threshold=threshold, min_chars=min_chars)
            ),
            None,
        )
        if hit is None:
            store.append(i)
        expected.append(i if hit is None else hit)
    assert got.canonical.tolist() == expected


def test_gate_free_replay_finds_what_the_prefix_gate_misses() -> None:
    labels = ["User prefers dark mode", "Prefers dark mode"]
    assert batch.replay(labels).canonical.tolist() == [0, 1]
    gate_free = batch.replay(labels, prefix="none")
    assert gate_free.canonical.tolist() == [0, 0]
    assert gate_free.reason == ["new", "ratio"]
    # Past the 20-candidate cap as well.
    rnd = random.Random(1)
    tails = ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(40)) for _ in range(25)]
    labels = [f"Shared opening words {tail}" for tail in tails] + [f"Shared opening words {tails[-1]} again"]
    assert batch.replay(labels).canonical[-1] == 25
    assert batch.replay(labels, prefix="none").canonical[-1] == 24


@pytest.mark.skipif(IMPLEMENTATION != "rust", reason="the reference joins 4,000 labels in 8M pairs")
def test_gate_free_replay_of_real_labels_equals_the_join() -> None:
    """On real labels the gate-free replay is the canonical clustering of the all-pairs join: each label
    joins the oldest earlier canonical it matches."""
    labels = _sample_labels(4000)
    pairs = batch.join(labels)
    want = batch.clusters(labels, pairs=pairs, mode="canonical").canonical.tolist()
    assert batch.replay(labels, prefix="none").canonical.tolist() == want


def _sample_labels(limit: int) -> list[str]:
    path = Path(__file__).resolve().parent.parent / "benches" / "data" / "labels_sample.txt.gz"
    with gzip.open(path, "rt", encoding="utf-8", errors="surrogateescape") as fh:
        return [line.rstrip("\n") for line in itertools.islice(fh, limit)]


def test_replay_partitions_never_collapse_across_scopes_or_layers() -> None:
    labels = ["Prefers dark mode in every editor"] * 4
    res = batch.replay(labels, scopes=["a", "b", "a", "b"], layers=["x", "x", "x", "y"])
    assert res.canonical.tolist() == [0, 1, 0, 3]
    assert res.reason == ["new", "new", "ratio", "new"]


def test_replay_query_limit_caps_candidates() -> None:
    # 25 distinct canonicals share a prefix; the 26th restates the 25th, which is past the limit.
    rnd = random.Random(1)
    tails = ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(40)) for _ in range(25)]
    labels = [f"Shared opening words {tail}" for tail in tails]
    assert batch.replay(labels).canonical.tolist() == list(range(25))
    labels.append(labels[-1] + " again")
    assert batch.replay(labels).canonical[-1] == 25
    assert batch.replay(labels, query_limit=30).canonical[-1] == 24


def test_replay_errors() -> None:
    with pytest.raises(InvalidInputError):
        batch.replay(["a"], scopes=["x", "y"])
    with pytest.raises(ValueError):
        batch.replay(["a"], prefix="upper")
    # One rule for thresholds (issue 22): NaN is a threshold no ratio reaches, as in the reference.
    assert batch.replay(["a", "a"], threshold=float("nan")).reason == ["new", "new"]
    with pytest.raises(TypeError):
        batch.replay(["a"], threshold="0.8")


@settings(max_examples=n_examples(60), deadline=None)
@given(
    labels=labels_strategy,
    threshold=st.sampled_from([0.0, 0.6, 0.85, 1.0]),
    min_chars=st.sampled_from([0, 3, 16]),
)
def test_join_equals_brute_force(labels: list[str], threshold: float, min_chars: int) -> None:
    got = batch.join(labels, threshold=threshold, min_chars=min_chars)
    want = _reference.join(labels, threshold=threshold, min_chars=min_chars)
    assert [tuple(p) for p in got.tolist()] == want


@pytest.mark.parametrize("seed", sampled(range(3), [2]))
def test_join_and_clusters_on_near_duplicates(seed: int) -> None:
    labels = corpus(100 + seed, 300)
    pairs = batch.join(labels)
    assert [tuple(p) for p in pairs.tolist()] == _reference.join(labels)
    for mode in ("canonical", "components"):
        got = batch.clusters(labels, pairs, mode=mode)
        want_canonical, want_via = _reference.clusters(
            len(labels), [tuple(p) for p in pairs.tolist()], mode=mode
        )
        assert got.canonical.tolist() == want_canonical
        partners: dict[int, set[int]] = {}
        for i, j in pairs.tolist():
            partners.setdefault(i, set()).add(j)
            partners.setdefault(j, set()).add(i)
        for j, (via, want) in enumerate(zip(got.via, want_via, strict=True)):
            if want is not None:
                assert via == want  # the earliest earlier partner, as the core has it
            elif want_canonical[j] != j:
                # Linked into its component only through later labels: the smallest partner.
                assert via == min(partners[j]), (j, via)
            else:
                assert via is None
        for j, via in enumerate(got.via):
            if via is None:
                assert got.reason[j] == ("new" if labels[j].strip() else "empty") and got.canonical[j] == j
                continue
            decided = _reference.match_reason(labels[min(via, j)], labels[max(via, j)])
            assert decided is not None and got.reason[j] == decided[0] and got.score[j] == decided[1]
    canonical = batch.clusters(labels, pairs).canonical
    for j, c in enumerate(canonical):
        if c != j:
            assert _reference.labels_match(labels[c], labels[j])  # no chains in canonical mode


def test_join_respects_scopes() -> None:
    labels = ["Prefers dark mode in every editor"] * 3
    assert batch.join(labels, scopes=["a", "b", "a"]).tolist() == [[0, 2]]


@settings(max_examples=n_examples(100), deadline=None)
@given(
    pairs=st.lists(st.tuples(st.sampled_from(BASE), st.text(max_size=40)), max_size=30),
    threshold=st.floats(0, 1),
)
def test_match_pairs_and_match_first(pairs: list[tuple[str, str]], threshold: float) -> None:
    stored = [a for a, _ in pairs]
    incoming = [b for _, b in pairs]
    got = batch.match_pairs(stored, incoming, threshold=threshold)
    assert got.dtype == bool
    assert got.tolist() == [_reference.labels_match(a, b, threshold=threshold) for a, b in pairs]
    for _, b in pairs[:3]:
        assert batch.match_first(b, stored, threshold=threshold) == _reference.match_first(
            b, stored, threshold=threshold
        )


def _pipelined_pairs() -> tuple[list[object], list[object]]:
    """Over 8,192 pairs (the lists `match_pairs` decides while reading): near-duplicates, non-ASCII
    and wide labels, and non-str labels, coerced as `str(label or "")`."""
    labels: list[object] = list(corpus(11, 20_001))
    for k in range(0, len(labels), 997):
        labels[k] = [None, 0, 17, b"x", "Ναυτικός ΟΔΟΣ", "\ud800 lone", "ẞtraße İstanbul"][k % 7]
    return labels[:-1], labels[1:]


def test_match_pairs_decided_while_read_agrees() -> None:
    # Lists of this size take the pipelined path; tuples (straight into the core) the read-then-decide
    # one, whose answers the hypothesis test above checks against the reference.
    from memdedup import _core

    stored, incoming = _pipelined_pairs()
    got = batch.match_pairs(stored, incoming)
    assert len(stored) >= 4 * 2048
    whole = np.frombuffer(_core.match_pairs(tuple(stored), tuple(incoming)), dtype=bool)
    assert got.tolist() == whole.tolist()
    assert 0 < got.sum() < len(got)
    for k in range(0, len(stored), 41):
        assert got[k] == _reference.labels_match(stored[k], incoming[k]), k


@pytest.mark.skipif(
    IMPLEMENTATION != "rust", reason="the Rust core's reading loop; the reference zips whatever is left"
)
def test_match_pairs_decided_while_read_survives_a_list_changing() -> None:
    stored, incoming = _pipelined_pairs()

    class Shrinks:
        def __str__(self) -> str:
            del incoming[100:]
            return "shrinks"

    stored[5000] = Shrinks()
    with pytest.raises(IndexError):
        batch.match_pairs(stored, incoming)


def test_match_pairs_length_mismatch() -> None:
    with pytest.raises(InvalidInputError):
        batch.match_pairs(["a"], ["a", "b"])


@settings(max_examples=n_examples(60), deadline=None)
@given(
    queries=st.lists(st.text(max_size=20), max_size=5),
    choices=st.lists(st.text(max_size=20), max_size=8),
    cutoff=st.one_of(st.none(), st.floats(0, 1)),
)
def test_cdist_is_exact_difflib(queries: list[str], choices: list[str], cutoff: float | None) -> None:
    got = batch.cdist(queries, choices, score_cutoff=cutoff)
    assert got.shape == (len(queries), len(choices))
    for i, q in enumerate(queries):
        for j, c in enumerate(choices):
            r = difflib.SequenceMatcher(None, q, c).ratio()
            assert got[i, j] == (r if cutoff is None or r >= cutoff else 0.0)


@st.composite
def near_texts(draw: st.DrawFn) -> tuple[list[str], list[str], float]:
    """Queries and choices that are edits of one another (long enough for the multi-word LCS
    bound, wide and surrogate code points included), with a cutoff that is often one cell's exact
    ratio: the bounded cells must keep every ratio at the cutoff and drop every one below it."""
    alphabet = draw(st.sampled_from(["ab", "abc d", "ab\u00e9\u4e2d\ud800 ", "abcdefghij "]))
    base = draw(st.text(alphabet=alphabet, min_size=0, max_size=150))

    def edit(text: str) -> str:
        chars = list(text)
        for _ in range(draw(st.integers(0, 12))):
            at = draw(st.integers(0, len(chars)))
            if chars and draw(st.booleans()):
                del chars[min(at, len(chars) - 1)]
            else:
                chars.insert(at, draw(st.sampled_from(alphabet)))
        return "".join(chars)

    queries = [edit(base) for _ in range(draw(st.integers(1, 3)))]
    choices = [edit(base) for _ in range(draw(st.integers(1, 6)))]
    if draw(st.booleans()):
        q, c = draw(st.sampled_from(queries)), draw(st.sampled_from(choices))
        cutoff = difflib.SequenceMatcher(None, q, c).ratio()
    else:
        cutoff = draw(st.floats(0, 1))
    return queries, choices, cutoff


@settings(max_examples=n_examples(200), deadline=None)
@given(case=near_texts())
def test_cdist_cutoff_bounds_keep_every_ratio_at_the_cutoff(case: tuple[list[str], list[str], float]) -> None:
    queries, choices, cutoff = case
    got = batch.cdist(queries, choices, score_cutoff=cutoff)
    for i, q in enumerate(queries):
        for j, c in enumerate(choices):
            r = difflib.SequenceMatcher(None, q, c).ratio()
            assert got[i, j] == (r if r >= cutoff else 0.0), (q, c, cutoff)


def test_extract_with_mapping_keys_and_limit() -> None:
    choices = {"m1": "Prefers dark mode", "m2": "likes green tea", "m3": "Prefers dark mode!"}
    got = batch.extract("Prefers dark mode", choices, limit=2)
    assert [key for _, _, key in got] == ["m1", "m3"]
    assert got[0][1] == 1.0
    assert batch.extract("Prefers dark mode", list(choices.values()), score_cutoff=0.99) == [
        ("Prefers dark mode", 1.0, 0)
    ]


@pytest.mark.slow
def test_results_do_not_depend_on_thread_count() -> None:
    import os
    import subprocess
    import sys

    code = (
        "import json,sys; sys.path.insert(0, 'tests'); from test_batch import corpus, _pipelined_pairs;"
        "from memdedup import batch;"
        "labels = corpus(7, 400);"
        "print(json.dumps([batch.replay(labels).canonical.tolist(), batch.join(labels).tolist(),"
        " batch.match_pairs(labels[:-1], labels[1:]).tolist(),"
        " batch.match_pairs(*_pipelined_pairs()).tolist()]))"
    )
    outputs = set()
    for threads in ("1", "2", "5"):
        env = dict(os.environ, RAYON_NUM_THREADS=threads)
        outputs.add(
            subprocess.run(
                [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
            ).stdout
        )
    assert len(outputs) == 1


# ---------------------------------------------------------------------------------------------------
# Issue 25: missing values are empty labels; rapidfuzz's conventions; a public match_reason
# ---------------------------------------------------------------------------------------------------
def _missing_values() -> list[object]:
    pd = pytest.importorskip("pandas")
    return [None, float("nan"), np.nan, np.float32("nan"), pd.NA, pd.NaT]


def test_missing_values_are_empty_labels_in_replay_join_and_clusters() -> None:
    pd = pytest.importorskip("pandas")
    label = "Prefers dark mode in every editor"
    for missing in _missing_values():
        labels = [missing, "nan", missing, label, "nan", label]
        replayed = batch.replay(labels)
        assert replayed.reason == ["empty", "new", "empty", "new", "ratio", "ratio"], missing
        assert batch.join(labels).tolist() == [[1, 4], [3, 5]], missing
        clustered = batch.clusters(labels)
        assert clustered.reason[0] == clustered.reason[2] == "empty"
    # The same through pandas and numpy inputs (masked at once, not item by item).
    series = pd.Series(["nan", None, "nan", pd.NA], dtype="string")
    assert batch.replay(series).reason == ["new", "empty", "ratio", "empty"]
    assert batch.replay(pd.Series([1.5, np.nan, 1.5])).reason == ["new", "empty", "ratio"]
    assert batch.replay(np.array(["a b c", "a b c"])).reason == ["new", "ratio"]
    assert batch.replay(np.array([np.nan, 2.0, np.nan])).reason == ["empty", "new", "empty"]


def test_missing_values_never_match_in_pair_functions() -> None:
    pd = pytest.importorskip("pandas")
    for missing in _missing_values():
        stored = pd.Series([missing, "nan"], dtype=object)
        incoming = pd.Series(["nan", missing], dtype=object)
        assert batch.match_pairs(stored, incoming).tolist() == [False, False]
        assert batch.match_pairs(np.array([np.nan, 1.0]), np.array([np.nan, 1.0])).tolist() == [False, True]
        assert batch.match_first(missing, ["nan", "NaN"]) is None
        assert batch.match_first("nan", [missing, "nan"]) == 1
        assert batch.match_reason(missing, "nan") is None and batch.match_reason("nan", missing) is None


def test_missing_values_in_plain_lists_never_match_in_match_pairs() -> None:
    for missing in _missing_values():
        assert batch.match_pairs([missing, "nan"], ["nan", missing]).tolist() == [False, False], missing


def test_match_reason_is_public_and_typed() -> None:
    import memdedup

    assert memdedup.match_reason is batch.match_reason
    assert memdedup.match_reason("Prefers dark mode", "prefers dark mode in every editor") == (
        "containment",
        0.68,
    )
    assert memdedup.match_reason("Uses pytest and ruff", "uses pytest and ruff.") == ("ratio", 1.0)
    assert memdedup.match_reason("Lives in Paris", "Works in Rome") is None
    assert (
        memdedup.match_reason("Prefers dark mode", "prefers dark mode in every editor", min_chars=40) is None
    )
    assert "threshold: 'float' = 0.85" in str(__import__("inspect").signature(memdedup.match_reason))
    # The library takes min_chars as labels_match does (any number Python compares with a length: a
    # negative one admits every length); the commands' --min-chars refuses a negative value.
    assert memdedup.match_reason("ab", "xaby", min_chars=-1) == _reference.match_reason(
        "ab", "xaby", threshold=0.85, min_chars=-1
    )
    assert memdedup.match_reason("ab", "xaby", min_chars=-1) == ("containment", 2 * 2 / 6)


def test_extract_follows_rapidfuzz_conventions() -> None:
    pd = pytest.importorskip("pandas")
    choices = ["apple", "apples", None, float("nan"), "banana", "apple"]
    got = batch.extract("apple", choices, limit=None)
    # Missing choices are skipped (as rapidfuzz does); ties keep input order; keys are positions.
    assert [key for _, _, key in got] == [0, 5, 1, 4]
    assert got[0] == ("apple", 1.0, 0)
    assert batch.extract("apple", choices, limit=2) == got[:2]
    assert batch.extract("apple", choices, limit=0) == []
    assert batch.extract(None, choices) == [] and batch.extract(float("nan"), choices) == []
    assert batch.extract("apple", choices, score_cutoff=0.9) == got[:3]
    # score_cutoff=0 keeps every present choice, a score of 0 included.
    assert len(batch.extract("zzz", ["apple", "b"], score_cutoff=0, limit=None)) == 2
    series = pd.Series(["apple", None, "banana"], index=["m1", "m2", "m3"])
    assert [key for _, _, key in batch.extract("apple", series, limit=None)] == ["m1", "m3"]
    assert batch.extractOne("apple", {"m1": "banana", "m2": "apples"}) == ("apples", got[2][1], "m2")
    assert batch.extractOne("apple", ["zzz"], score_cutoff=0.5) is None
    assert batch.extractOne(None, ["apple"]) is None


@pytest.mark.parametrize("cutoff", [60, 1.0001, 100])
def test_a_cutoff_above_1_names_the_scale(cutoff: float) -> None:
    for call in (
        lambda: batch.extract("a", ["a"], score_cutoff=cutoff),
        lambda: batch.extractOne("a", ["a"], score_cutoff=cutoff),
        lambda: batch.cdist(["a"], ["a"], score_cutoff=cutoff),
    ):
        with pytest.raises(InvalidInputError, match="0-1 scale"):
            call()


@pytest.mark.parametrize("cutoff", [-0.1, -5, float("nan")])
def test_negative_and_nan_cutoffs_are_refused(cutoff: float) -> None:
    with pytest.raises(InvalidInputError, match="score_cutoff must lie in"):
        batch.cdist(["a"], ["a"], score_cutoff=cutoff)
    with pytest.raises(InvalidInputError, match="score_cutoff must lie in"):
        batch.extract("a", ["a"], score_cutoff=cutoff)


def test_workers_and_limit_are_validated_as_rapidfuzz_takes_them() -> None:
    for workers in (-1, 1, 2, 64):
        assert (
            batch.cdist(["abc"], ["abd"], workers=workers).tolist() == batch.cdist(["abc"], ["abd"]).tolist()
        )
        assert batch.extract("abc", ["abd"], workers=workers)[0][2] == 0
    for workers in (0, -2):
        with pytest.raises(InvalidInputError, match="workers must be -1"):
            batch.cdist(["a"], ["a"], workers=workers)
        with pytest.raises(InvalidInputError, match="workers must be -1"):
            batch.extractOne("a", ["a"], workers=workers)
    with pytest.raises(InvalidInputError, match="limit must be 0 or more"):
        batch.extract("a", ["a"], limit=-1)


def test_cdist_rows_and_columns_of_missing_values_are_zero() -> None:
    got = batch.cdist(["a", None, float("nan")], ["a", None, ""])
    assert got.tolist() == [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    # A real empty string is a label: difflib's ratio of "" and "" is 1.0.
    assert batch.cdist([""], [""]).tolist() == [[1.0]]


def test_public_functions_show_their_real_defaults() -> None:
    import inspect

    for function in (
        batch.replay,
        batch.join,
        batch.clusters,
        batch.match_pairs,
        batch.match_first,
        batch.extract,
        batch.extractOne,
        batch.cdist,
        batch.match_reason,
        batch.dedup_table,
    ):
        assert function.__doc__, function
        signature = str(inspect.signature(function))
        assert "Ellipsis" not in signature and "..." not in signature, signature
    assert "limit: 'int | None' = 5" in str(inspect.signature(batch.extract))


MISSING_LIKE = [None, float("nan"), np.float64("nan"), np.float32("nan"), "nan", "", 0.0, 1.5, "NaN."]


@pytest.mark.parametrize("missing", [True, False])
def test_missing_values_one_rule_in_core_and_reference(missing: bool) -> None:
    # The extended API (missing=True) reads None/NaN/pd.NA as the empty label; missing=False is the
    # seed's str(label or "") (a float NaN is the label "nan"), which the drop-in keeps. The core and
    # the reference agree either way, label by label.
    from memdedup import _backend

    pd = pytest.importorskip("pandas")
    labels = [*MISSING_LIKE, pd.NA, pd.NaT]
    core = _backend.impl

    def outcome(fn: Any, *args: Any, **kw: Any) -> Any:
        try:
            result = fn(*args, **kw)
        except TypeError:  # bool(pd.NA) raises, in str(label or "")
            return "TypeError"
        return list(result) if isinstance(result, list | bytes) else result

    kw = {"threshold": 0.85, "min_chars": 1, "missing": missing}
    for a in labels:
        for b in labels:
            for name in ("labels_match", "match_reason"):
                assert outcome(getattr(core, name), a, b, **kw) == outcome(
                    getattr(_reference, name), a, b, **kw
                )
        # The core reads every candidate before deciding, the reference stops at its first match: a
        # candidate whose reading raises (bool(pd.NA) under missing=False) is compared on both only
        # where the reference reaches it too (match_mask).
        for name in ("match_mask", "match_first") if missing else ("match_mask",):
            assert outcome(getattr(core, name), a, labels, **kw) == outcome(
                getattr(_reference, name), a, labels, **kw
            )
    if not missing:
        labels = [x for x in labels if x is not pd.NA]
    stored = [a for a in labels for _ in labels] * 200  # past the pipelined reader's threshold
    incoming = [b for _ in labels for b in labels] * 200
    decided = core.match_pairs(stored, incoming, threshold=0.85, missing=missing)
    got = decided if isinstance(decided, list) else np.frombuffer(decided, dtype=bool).tolist()
    want = _reference.match_pairs(stored[: len(labels) ** 2], incoming[: len(labels) ** 2], missing=missing)
    assert got == want * 200
    if missing:
        assert not core.labels_match(float("nan"), "nan", threshold=0.0)
    else:
        assert core.labels_match(float("nan"), "nan", threshold=0.85, missing=False)
