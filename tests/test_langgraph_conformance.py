"""LangGraph's own store tests, as behaviours, against DedupStore over each real store, sync and async.

LangGraph ships no conformance kit for ``BaseStore`` implementations; each store package tests its store
with the same families of checks (``libs/checkpoint/tests/test_store.py`` for InMemoryStore,
``libs/checkpoint-sqlite/tests/test_store.py`` and ``test_async_store.py``,
``libs/checkpoint-postgres/tests/test_store.py`` and ``test_async_store.py``): batches of mixed ops in
op order, get/put/update/delete, list_namespaces (prefix, suffix, wildcards, max_depth, pagination),
search (prefix, filters with operators, limit/offset), namespace validation, vector search (auto-embedding,
re-embedding on update, ``index=False``, per-put fields, filters with a query, pagination, scores,
non-ASCII), and TTL. These tests check the same behaviours, written here, with data that has no
restatement in any namespace, so the wrapped store must answer as the inner store does.

Vector search runs on InMemoryStore: Debian's PostgreSQL has no pgvector package and this Python's
sqlite3 cannot load sqlite-vec. TTL expiry is checked without waiting: an item put with a negative TTL is
expired at once and the next sweep deletes it.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    PutOp,
    SearchOp,
)
from langgraph_stores import (  # noqa: F401  (fixtures, registered as stores, memory_stores, ...)
    Stores,
    memory_stores_fixture,
    postgres_server_fixture,
    stores_fixture,
)
from memdedup.integrations.langgraph import DedupStore


def wrapped(stores: Stores, **inner_kwargs: Any) -> Any:
    return stores.calls(DedupStore(stores.inner(**inner_kwargs)))


def test_a_batch_of_mixed_ops_answers_in_op_order(stores: Stores) -> None:
    s = wrapped(stores)
    s.put(("test", "foo"), "key1", {"data": "value1"})
    s.put(("test", "bar"), "key2", {"data": "value2"})
    results = s.batch(
        [
            GetOp(("test", "foo"), "key1"),
            PutOp(("test", "bar"), "key2", {"data": "value2"}),
            SearchOp(("test",), filter={"data": "value1"}, limit=10, offset=0),
            ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
            GetOp(("test",), "key3"),
            PutOp(("test",), "key3", {"data": "value3"}),
            PutOp(("test",), "key4", None),
        ]
    )
    assert len(results) == 7
    assert (
        isinstance(results[0], Item) and results[0].value == {"data": "value1"} and results[0].key == "key1"
    )
    assert results[1] is None and results[5] is None and results[6] is None
    assert [item.key for item in results[2]] == ["key1"]
    assert sorted(results[3]) == [("test", "bar"), ("test", "foo")]
    assert results[4] is None
    assert s.get(("test",), "key3").value == {"data": "value3"}


def test_get_put_update_delete(stores: Stores) -> None:
    s = wrapped(stores)
    namespace = ("test", "documents")
    s.put(namespace, "doc1", {"title": "Test Document", "content": "Hello, World!"})
    item = s.get(namespace, "doc1")
    assert (item.namespace, item.key, item.value) == (
        namespace,
        "doc1",
        {"title": "Test Document", "content": "Hello, World!"},
    )
    s.put(namespace, "doc1", {"title": "Updated Document", "content": "Hello, Updated!"})
    updated = s.get(namespace, "doc1")
    assert updated.value == {"title": "Updated Document", "content": "Hello, Updated!"}
    assert updated.updated_at >= item.updated_at
    assert s.get(("test", "other_documents"), "doc1") is None
    s.delete(namespace, "doc1")
    assert s.get(namespace, "doc1") is None
    assert s.batch([PutOp(("test",), "k1", {"data": 1}), PutOp(("test",), "k2", None)]) == [None, None]
    assert [s.get(("test",), k) is None for k in ("k1", "k2")] == [False, True]


def test_list_namespaces_by_prefix_suffix_wildcard_depth_and_page(stores: Stores) -> None:
    s = wrapped(stores)
    namespaces = [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
        ("users", "123"),
        ("users", "456", "settings"),
        ("admin", "users", "789"),
    ]
    for n, namespace in enumerate(namespaces):
        s.put(namespace, f"id_{n}", {"data": f"value_{n:02d}"})
    s.put(("a", "b", "c"), "id_0", {"data": "value_00 again"})  # history now exists: still hidden
    assert sorted(s.list_namespaces()) == sorted(namespaces)
    assert sorted(s.list_namespaces(prefix=("a", "b"))) == sorted(namespaces[:4])
    assert sorted(s.list_namespaces(suffix=("f",))) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert sorted(s.list_namespaces(prefix=("a",), suffix=("f",))) == [("a", "b", "f"), ("a", "c", "f")]
    assert sorted(s.list_namespaces(prefix=("a", "*", "f"))) == [("a", "b", "f"), ("a", "c", "f")]
    assert s.list_namespaces(suffix=("*", "settings")) == [("users", "456", "settings")]
    assert sorted(s.list_namespaces(prefix=("a", "b"), max_depth=3)) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert sorted(s.list_namespaces(max_depth=1)) == [("a",), ("admin",), ("b",), ("users",)]
    assert s.list_namespaces(prefix=("nonexistent",)) == []
    assert s.list_namespaces(prefix=("users", "123")) == [("users", "123")]
    every = s.list_namespaces(limit=100)
    for limit, offset in ((2, 0), (2, 2), (3, 7), (5, 8), (4, 20)):
        assert s.list_namespaces(limit=limit, offset=offset) == every[offset : offset + limit]


def test_list_namespaces_of_an_empty_store(stores: Stores) -> None:
    assert wrapped(stores).list_namespaces() == []


def test_search_by_prefix_filter_and_page(stores: Stores) -> None:
    s = wrapped(stores)
    data = [
        (("test", "docs"), "doc1", {"title": "First Doc", "author": "Alice", "tags": ["important"]}),
        (("test", "docs"), "doc2", {"title": "Second Doc", "author": "Bob", "tags": ["draft"]}),
        (("test", "images"), "img1", {"title": "Image 1", "author": "Alice", "tags": ["final"]}),
    ]
    for namespace, key, value in data:
        s.put(namespace, key, value)
    assert len(s.search(("test",))) == 3
    docs = s.search(("test", "docs"))
    assert sorted(i.key for i in docs) == ["doc1", "doc2"] and all(
        i.namespace == ("test", "docs") for i in docs
    )
    alice = s.search(("test",), filter={"author": "Alice"})
    assert sorted(i.key for i in alice) == ["doc1", "img1"]
    assert len(s.search(("test",), limit=2)) == 2
    assert len(s.search(("test",), offset=2)) == 1
    assert all(item.score is None for item in s.search(("test",)))


def test_numeric_comparison_filters(stores: Stores) -> None:
    # As the inner store answers: langgraph-checkpoint-postgres before its fix of #7684 compares
    # ``value->>key`` as text ("9" >= "10"), and the wrapped store must answer exactly that too.
    bare = stores.calls(stores.inner())
    s = wrapped(stores)
    namespace = ("test", "scores")
    for key, score in [("a", 2), ("b", 9), ("c", 10), ("d", 11), ("e", 9.5)]:
        s.put(namespace, key, {"score": score})
        bare.put(namespace, key, {"score": score})

    def scores(store: Any, condition: dict[str, Any]) -> list[float]:
        return sorted(item.value["score"] for item in store.search(namespace, filter={"score": condition}))

    for condition in ({"$gte": 10}, {"$gt": 9}, {"$lt": 10}, {"$lte": 9}, {"$eq": 11}, {"$ne": 11}):
        assert scores(s, condition) == scores(bare, condition)
    if stores.kind != "postgres":
        assert scores(s, {"$gte": 10}) == [10, 11] and scores(s, {"$gt": 9}) == [9.5, 10, 11]
    assert scores(s, {"$eq": 11}) == [11] and scores(s, {"$ne": 11}) == [2, 9, 9.5, 10]


def test_namespaces_are_validated_as_the_store_validates_them(stores: Stores) -> None:
    s = wrapped(stores)
    doc = {"foo": "bar"}
    for bad in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
        with pytest.raises(InvalidNamespaceError):
            s.put(bad, "foo", doc)
    s.put(("foo", "langgraph", "foo"), "bar", doc)
    assert s.get(("foo", "langgraph", "foo"), "bar").value == doc
    assert s.search(("foo", "langgraph", "foo"))[0].value == doc
    s.delete(("foo", "langgraph", "foo"), "bar")
    assert s.get(("foo", "langgraph", "foo"), "bar") is None


def test_ttl_is_the_inner_stores(stores: Stores) -> None:
    inner = stores.inner(ttl={"default_ttl": 5, "refresh_on_read": True}) if stores.kind != "memory" else None
    store = DedupStore(inner if inner is not None else stores.inner())
    s = stores.calls(store)
    if not store.store.supports_ttl:  # InMemoryStore; AsyncSqliteStore (its MRO takes BaseStore's False)
        with pytest.raises(NotImplementedError):
            s.put(("foo",), "item1", {"foo": "bar"}, ttl=1.0)
        s.put(("foo",), "item1", {"foo": "bar"}, ttl=None)
        assert s.get(("foo",), "item1").value == {"foo": "bar"}
        return
    s.put(("foo",), "item1", {"foo": "bar"}, ttl=-1)  # expired at once
    s.put(("foo",), "item2", {"foo": "baz"})  # the default TTL: 5 minutes
    assert s.get(("foo",), "item2", refresh_ttl=True).value == {"foo": "baz"}
    assert len(s.search(("foo",), refresh_ttl=False)) in (1, 2)  # unswept expired rows: the store's choice
    assert s.same("sweep_ttl") == 1
    assert [item.key for item in s.search(("foo",))] == ["item2"]


# -- vector search (InMemoryStore: see the module docstring)


def _embed(texts: list[str]) -> list[list[float]]:
    """A deterministic embedding: character counts in 31 buckets, so texts sharing characters score high."""
    vectors = []
    for text in texts:
        vector = [0.0] * 31
        for char in text.lower():
            vector[ord(char) % 31] += 1.0
        vectors.append(vector)
    return vectors


def vector_store(memory_stores: Stores, fields: list[str] | None = None) -> Any:
    return wrapped(memory_stores, index={"dims": 31, "embed": _embed, "fields": fields or ["text"]})


def test_vector_search_embeds_on_put_and_again_on_update(memory_stores: Stores) -> None:
    s = vector_store(memory_stores)
    s.put(("test",), "doc1", {"text": "zany zebra xerxes"})
    s.put(("test",), "doc2", {"text": "something about dogs"})
    s.put(("test",), "doc3", {"text": "text about birds"})
    first = s.search(("test",), query="zany xerxes")
    assert first[0].key == "doc1" and first[0].score is not None
    s.put(("test",), "doc1", {"text": "new text about dogs"})
    after = next(r.score for r in s.search(("test",), query="zany xerxes") if r.key == "doc1")
    assert after < first[0].score
    s.put(("test",), "doc4", {"text": "new text about dogs"}, index=False)
    assert "doc4" not in [r.key for r in s.search(("test",), query="new text about dogs", limit=3)]


def test_vector_search_with_filters_pages_and_scores(memory_stores: Stores) -> None:
    s = vector_store(memory_stores)
    docs = [
        ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
        ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
        ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
        ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
    ]
    for key, value in docs:
        s.put(("test",), key, value)
    assert s.search(("test",), query="apple", filter={"color": "red"})[0].key == "doc1"
    assert len(s.search(("test",), query="car", filter={"color": "red"})) == 2
    assert len(s.search(("test",), query="bbbbluuu", filter={"score": {"$gt": 3.2}})) == 3
    page1 = s.search(("test",), query="apple", limit=2)
    page2 = s.search(("test",), query="apple", limit=2, offset=2)
    assert len(page1) == len(page2) == 2 and {r.key for r in page1}.isdisjoint(r.key for r in page2)
    for query in ("", None, "test " * 100, "test!@#$%^&*()"):
        assert len(s.search(("test",), query=query)) == 4
    vector = _embed(["aaa"])[0]
    s.put(("scores",), "doc", {"text": "aaa"})
    (only,) = s.search(("scores",), query="abcd")
    q = _embed(["abcd"])[0]
    cosine = sum(a * b for a, b in zip(q, vector, strict=True)) / (math.hypot(*q) * math.hypot(*vector))
    assert only.score == pytest.approx(cosine)


def test_vector_search_by_field_paths_per_store_and_per_put(memory_stores: Stores) -> None:
    s = vector_store(memory_stores, fields=["key0", "key1", "key3"])
    s.put(("test",), "doc1", {"key1": "xxx", "key2": "yyy", "key3": "zzz"})
    s.put(("test",), "doc2", {"key0": "uuu", "key1": "vvv", "key2": "www", "key3": "xxx"})
    assert s.search(("test",), query="uuu")[0].key == "doc2"
    assert s.search(("test",), query="zzz")[0].key == "doc1"
    s.put(("per-put",), "doc3", {"key0": "aaa", "key1": "bbb", "key2": "ccc"}, index=["key0", "key1"])
    s.put(("per-put",), "doc4", {"key0": "eee", "key1": "bbb", "key2": "fff"}, index=["key1"])
    assert s.search(("per-put",), query="aaa")[0].key == "doc3"
    s.put(("per-put",), "doc5", {"key0": "hhh"}, index=False)
    assert all(r.score is None for r in s.search(("per-put",)))


def test_vector_search_of_non_ascii_text(memory_stores: Stores) -> None:
    s = vector_store(memory_stores)
    texts = ["这是中文", "これは日本語です", "이건 한국어야", "Это русский", "यह रूसी है"]
    for n, text in enumerate(texts, 1):
        s.put(("user_123", "memories"), str(n), {"text": text})
    for n, text in enumerate(texts, 1):
        assert s.search(("user_123", "memories"), query=text)[0].value == {"text": text}
        assert n >= 1
