"""Wrappers are faithful (DESIGN contract 12): for data with no restatement and no secret, DedupStore
answers exactly as the bare store, over hypothesis-generated op sequences run on a wrapped store and a bare
twin side by side.

- InMemoryStore (with and without a vector index): every answer compared exactly, in order, with scores:
  gets, searches (prefix, filter, query, limit, offset), list_namespaces, batches of mixed ops.
- SqliteStore and PostgresStore: their search order is ``updated_at`` (SQLite keeps it to the second), a
  wall-clock time that two stores written one after the other cannot share, so a twin's order can differ
  at a second's boundary. There each search answer is compared exactly with the inner store's own answer
  to the same op at the same moment (same data, same order, same scores), and every namespace's full
  content with the bare twin's; gets and list_namespaces are compared with the twin exactly.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp
from langgraph_stores import Stores, postgres_server_fixture  # noqa: F401  (the postgres_server fixture)
from memdedup import facts
from memdedup.integrations.langgraph import DedupStore
from strategies import n_examples

NAMESPACES = [("a",), ("a", "x"), ("b",), ("a", "y", "z")]
PREFIXES = [*NAMESPACES, ("a", "y")]
KEYS = [f"k{n}" for n in range(5)]
TAGS = ["red", "blue"]
# Pairwise another fact under the default contract (checked below): key k<n> says FACTS[3n..3n+2], so two
# keys of one namespace never restate each other, whatever the versions.
FACTS = [
    "Dana's staging database port is 5432",
    "Dana moved her staging database to Frankfurt",
    "The staging cluster runs Postgres fifteen",
    "Raj is allergic to peanuts and tree nuts",
    "Raj carries an epinephrine pen on hikes",
    "Raj's favourite trail is above Lake Como",
    "The team standup moved to 9:30 on Mondays",
    "Sprint reviews happen every second Thursday",
    "Retrospectives are held in the blue room",
    "Priya prefers dark mode in every editor",
    "Priya writes her notes in plain Markdown",
    "Priya's keyboard layout is Colemak",
    "Lena's flight to Lisbon leaves at 09:40",
    "Lena booked a window seat near the wing",
    "Lena returns from Portugal on a Sunday",
]


def test_the_fact_pool_holds_no_restatement() -> None:
    for n, current in enumerate(FACTS):
        for m, incoming in enumerate(FACTS):
            if n != m:
                assert facts.decide(current, incoming) is None, (current, incoming)


def _embed(texts: list[str]) -> list[list[float]]:
    vectors = []
    for text in texts:
        vector = [0.0] * 31
        for char in text.lower():
            vector[ord(char) % 31] += 1.0
        vectors.append(vector)
    return vectors


@st.composite
def values(draw: st.DrawFn, key: str) -> dict[str, Any]:
    n = KEYS.index(key)
    value: dict[str, Any] = {"tag": draw(st.sampled_from(TAGS)), "n": draw(st.integers(0, 3))}
    if draw(st.booleans()) or n == 4:
        value["content"] = FACTS[3 * (n % 5) + draw(st.integers(0, 2))]
    else:
        value["note"] = "no text, version " + str(draw(st.integers(0, 2)))
    return value


@st.composite
def put_ops(draw: st.DrawFn) -> PutOp:
    namespace, key = draw(st.sampled_from(NAMESPACES)), draw(st.sampled_from(KEYS))
    if draw(st.integers(0, 5)) == 0:
        return PutOp(namespace, key, None)
    return PutOp(namespace, key, draw(values(key)))


@st.composite
def search_ops(draw: st.DrawFn, prefixes: list[tuple[str, ...]], query: bool) -> SearchOp:
    return SearchOp(
        draw(st.sampled_from(prefixes)),
        filter=draw(st.sampled_from([None, {"tag": "red"}, {"n": {"$gte": 2}}])),
        limit=draw(st.integers(0, 6)),
        offset=draw(st.integers(0, 6)),
        query=draw(st.sampled_from([None, "Raj peanuts", "Lena Lisbon flight"])) if query else None,
    )


@st.composite
def list_ops(draw: st.DrawFn) -> ListNamespacesOp:
    conditions = draw(
        st.sampled_from(
            [
                None,
                (MatchCondition("prefix", ("a",)),),
                (MatchCondition("suffix", ("z",)),),
                (MatchCondition("prefix", ("a", "*")),),
            ]
        )
    )
    return ListNamespacesOp(
        conditions, draw(st.sampled_from([None, 1, 2])), draw(st.integers(0, 5)), draw(st.integers(0, 4))
    )


def op_sequences(prefixes: list[tuple[str, ...]], query: bool, batches: bool) -> st.SearchStrategy[list[Any]]:
    reads = st.one_of(
        search_ops(prefixes, query),
        list_ops(),
        st.builds(GetOp, st.sampled_from(NAMESPACES), st.sampled_from(KEYS)),
    )
    step = st.one_of(put_ops(), put_ops(), reads)
    if batches:
        step = st.one_of(step, st.lists(st.one_of(put_ops(), reads), min_size=2, max_size=5))
    return st.lists(step, min_size=1, max_size=25)


def _item(item: Any) -> Any:
    if item is None:
        return None
    return (item.namespace, item.key, item.value, getattr(item, "score", None))


def _answer(result: Any) -> Any:
    return (
        [_item(i) for i in result]
        if isinstance(result, list) and result and hasattr(result[0], "key")
        else (_item(result) if hasattr(result, "key") else result)
    )


def _outcome(store: Any, batch: list[Any]) -> Any:
    """A batch's answers, or the error it raised: the bare store's own failures are answers too
    (InMemoryStore with an index refuses a batch that puts one text twice: "Number of embeddings (1) does
    not match number of indices (2)"), and the wrapped store must fail alike."""
    try:
        return [_answer(r) for r in store.batch(batch)]
    except Exception as exc:
        return (type(exc), str(exc))


def _run_exact(stores: Stores, ops: list[Any], index: dict[str, Any] | None) -> None:
    bare = stores.calls(stores.inner(index=index))
    wrapped = stores.calls(DedupStore(stores.inner(index=index)))
    for step in ops:
        batch = step if isinstance(step, list) else [step]
        assert _outcome(wrapped, batch) == _outcome(bare, batch), batch
    assert wrapped.store.decisions() == [] or all(
        d.kind in ("written", "passed") for d in wrapped.store.decisions()
    )


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("indexed", [False, True], ids=["plain", "vector-index"])
@settings(max_examples=n_examples(40), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_in_memory_the_wrapped_store_answers_exactly_as_the_bare_one(
    mode: str, indexed: bool, data: Any
) -> None:
    ops = data.draw(op_sequences([(), *PREFIXES], query=indexed, batches=True))
    stores = Stores("memory", mode, None)
    try:
        index = {"dims": 31, "embed": _embed, "fields": ["content"]} if indexed else None
        _run_exact(stores, ops, index)
    finally:
        stores.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_listing_read_again_does_not_see_the_gets_after_it(mode: str) -> None:
    """A listing whose window holds the wrapper's hidden history namespace is read again from the start;
    a ``get`` later in the same batch names a namespace (InMemoryStore then lists it) and must not be sent
    before the listing is answered, as the bare store's batch answers the listing first."""
    overwrite = [
        PutOp(("a", "x"), "k0", None),
        PutOp(("a", "y", "z"), "k0", {"tag": "red", "n": 0, "note": "no text, version 0"}),
        PutOp(("a", "y", "z"), "k0", {"tag": "red", "n": 0, "note": "no text, version 1"}),
        [ListNamespacesOp(limit=1, offset=2), GetOp(("a",), "k0")],
        [ListNamespacesOp(limit=5, offset=0), GetOp(("b", "new"), "k0"), ListNamespacesOp(limit=5)],
    ]
    stores = Stores("memory", mode, None)
    try:
        _run_exact(stores, overwrite, None)
    finally:
        stores.close()


def _run_sql(stores: Stores, ops: list[Any]) -> None:
    bare = stores.calls(stores.inner())
    inner = stores.inner()
    wrapped, direct = stores.calls(DedupStore(inner)), stores.calls(inner)
    for op in ops:
        if isinstance(op, PutOp):
            wrapped.batch([op])
            bare.batch([op])
        elif isinstance(op, SearchOp):
            assert _answer(wrapped.batch([op])[0]) == _answer(direct.batch([op])[0]), op
        else:
            assert _answer(wrapped.batch([op])[0]) == _answer(bare.batch([op])[0]), op
    for prefix in NAMESPACES:
        mine = sorted((i.key, str(i.namespace), i.value) for i in wrapped.search(prefix, limit=100))
        theirs = sorted((i.key, str(i.namespace), i.value) for i in bare.search(prefix, limit=100))
        assert mine == theirs


def _sql_case(kind: str, mode: str, server: Any, ops: list[Any]) -> None:
    stores = Stores(kind, mode, server)
    try:
        _run_sql(stores, ops)
    finally:
        stores.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
@settings(max_examples=n_examples(8), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_on_sqlite_the_wrapped_store_answers_as_the_bare_one(mode: str, data: Any) -> None:
    _sql_case("sqlite", mode, None, data.draw(op_sequences(PREFIXES, query=False, batches=False)))


@pytest.mark.parametrize("mode", ["sync", "async"])
@settings(max_examples=n_examples(5), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_on_postgres_the_wrapped_store_answers_as_the_bare_one(
    postgres_server: Any, mode: str, data: Any
) -> None:
    _sql_case(
        "postgres", mode, postgres_server, data.draw(op_sequences(PREFIXES, query=False, batches=False))
    )


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@settings(max_examples=n_examples(60), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_more_sql_op_sequences(request: pytest.FixtureRequest, kind: str, data: Any) -> None:
    server = request.getfixturevalue("postgres_server") if kind == "postgres" else None
    mode = data.draw(st.sampled_from(["sync", "async"]))
    _sql_case(kind, mode, server, data.draw(op_sequences(PREFIXES, query=False, batches=False)))
