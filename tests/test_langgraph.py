"""DedupStore's behaviours (issue 40, items 1-6) on the real stores: InMemoryStore, SqliteStore and
PostgresStore on a PostgreSQL server the tests start themselves, each sync and async (AsyncSqliteStore,
AsyncPostgresStore), through the ``stores`` fixture of ``langgraph_stores``."""

from __future__ import annotations

import math
from typing import Any

import pytest
from langgraph.store.base import GetOp, InvalidNamespaceError, ListNamespacesOp, PutOp, SearchOp
from langgraph_stores import (  # noqa: F401  (fixtures, registered as stores, sync_stores, ...)
    Stores,
    memory_stores_fixture,
    postgres_server_fixture,
    stores_fixture,
    sync_stores_fixture,
)
from memdedup.errors import InputTypeError, InvalidInputError
from memdedup.integrations.langgraph import Decision, DedupStore

NS = ("user-1", "memories")
PORT_OLD = "Dana's staging database port is 5432"
PORT_NEW = "Dana's staging database port is 6543"
SHELL = "Dana's default shell is zsh on every machine"
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # a GitHub token shape


def keys(items: list[Any]) -> list[str]:
    return [item.key for item in items]


def wrap(stores: Stores, **kwargs: Any) -> tuple[Any, Any, DedupStore]:
    """(wrapped calls, the inner store's calls, the DedupStore) over a fresh inner store."""
    inner = stores.inner()
    store = DedupStore(inner, **kwargs)
    return stores.calls(store), stores.calls(inner), store


# -- 1. the text of an item


def test_the_text_is_content_then_langmem_content_and_an_item_without_text_is_passed(stores: Stores) -> None:
    s, _inner, store = wrap(stores)
    s.put(NS, "a", {"content": PORT_OLD})
    s.put(NS, "b", {"kind": "Memory", "content": {"content": PORT_OLD + "."}})  # langmem's shape
    s.put(NS, "c", {"note": PORT_OLD})  # no text
    s.put(NS, "d", {"note": PORT_OLD})
    s.put(NS, "e", {"content": 42})
    assert [(d.kind, d.key, d.matched_key) for d in store.decisions()] == [
        ("written", "a", None),
        ("restated", "b", "a"),
        ("passed", "c", None),
        ("passed", "d", None),
        ("passed", "e", None),
    ]
    assert sorted(keys(s.search(NS))) == ["a", "c", "d", "e"]
    assert s.get(NS, "c").value == {"note": PORT_OLD}  # untouched


def test_text_may_be_a_key_path_or_a_callable(stores: Stores) -> None:
    s, _inner, store = wrap(stores, text="memory.text")
    s.put(NS, "a", {"memory": {"text": PORT_OLD}})
    s.put(NS, "b", {"memory": {"text": PORT_NEW}})
    s.put(NS, "c", {"content": PORT_NEW})  # not at the path: no text
    assert [d.kind for d in store.decisions()] == ["written", "updated", "passed"]
    s2, _inner2, store2 = wrap(stores, text=lambda value: value.get("fact"))
    s2.put(NS, "a", {"fact": SHELL})
    s2.put(NS, "b", {"fact": SHELL.upper()})
    assert [d.kind for d in store2.decisions()] == ["written", "restated"]


def test_bad_arguments_are_typed_errors() -> None:
    from langgraph.store.memory import InMemoryStore

    with pytest.raises(InputTypeError):
        DedupStore({})  # type: ignore[arg-type]
    with pytest.raises(InputTypeError):
        DedupStore(InMemoryStore(), threshold="high")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        DedupStore(InMemoryStore(), min_chars=-1)
    with pytest.raises(InvalidInputError):
        DedupStore(InMemoryStore(), text="a..b")
    with pytest.raises(InputTypeError):
        DedupStore(InMemoryStore(), text=3)  # type: ignore[arg-type]
    with pytest.raises(InputTypeError):
        DedupStore(InMemoryStore(), on_decision="print")  # type: ignore[arg-type]
    store = DedupStore(InMemoryStore(), text=lambda value: 7)
    with pytest.raises(InputTypeError):
        store.put(NS, "a", {"content": "x"})
    with pytest.raises(InvalidInputError, match="reserved"):
        DedupStore(InMemoryStore()).put(NS, "a", {"content": "x", "memdedup": "mine"})


# -- 2. restatements collapse to one current item; every key stays valid


def test_an_update_makes_the_new_key_current_and_get_says_why(stores: Stores) -> None:
    s, _inner, store = wrap(stores)
    s.put(NS, "m1", {"content": PORT_OLD})
    s.put(NS, "m2", {"content": PORT_NEW})
    assert keys(s.search(NS)) == ["m2"]
    old = s.get(NS, "m1")
    mark = old.value["memdedup"]
    assert old.value["content"] == PORT_OLD
    assert mark["superseded_by"] == "m2" and mark["kind"] == "updated" and mark["rule"] == "ratio"
    assert mark["reason"] == "ratio 0.972; value 5432 -> 6543"
    assert math.isclose(mark["score"], 0.9722222222222222)
    assert "memdedup" not in s.get(NS, "m2").value
    decision = store.decisions()[-1]
    assert (decision.kind, decision.matched_key, decision.superseded) == ("updated", "m1", "m1")
    assert decision.reason == mark["reason"] and decision.score == mark["score"]


def test_a_terser_restatement_keeps_the_current_item(stores: Stores) -> None:
    s, _inner, store = wrap(stores)
    full = "Raj is training for a half marathon in Valencia this December"
    s.put(NS, "m1", {"content": full})
    s.put(NS, "m2", {"content": "Raj is training for a half marathon"})
    s.put(NS, "m3", {"content": full + "!"})  # equal once normalised: restated too
    assert keys(s.search(NS)) == ["m1"]
    assert s.get(NS, "m2").value["memdedup"]["superseded_by"] == "m1"
    assert s.get(NS, "m2").value["memdedup"]["rule"] == "containment"
    assert [(d.kind, d.superseded) for d in store.decisions()] == [
        ("written", None),
        ("restated", "m2"),
        ("restated", "m3"),
    ]


def test_dedup_is_within_exactly_one_namespace(stores: Stores) -> None:
    s, _inner, store = wrap(stores)
    child, sibling, parent = (*NS, "work"), ("user-1", "notes"), ("user-1",)
    s.put(NS, "a", {"content": PORT_OLD})
    s.put(child, "b", {"content": PORT_OLD})
    s.put(sibling, "c", {"content": PORT_OLD})
    s.put(parent, "d", {"content": PORT_OLD})
    assert [d.kind for d in store.decisions()] == ["written"] * 4
    assert sorted(keys(s.search(parent))) == ["a", "b", "c", "d"]  # search matches by prefix
    s.put(child, "e", {"content": PORT_NEW})
    assert store.decisions()[-1].matched_key == "b"
    assert sorted(keys(s.search(NS))) == ["a", "e"]


def test_guards_keep_a_changed_value_as_another_fact(stores: Stores) -> None:
    s, _inner, store = wrap(stores, guards="value,negation")
    s.put(NS, "m1", {"content": PORT_OLD})
    s.put(NS, "m2", {"content": PORT_NEW})
    s.put(NS, "m3", {"content": PORT_NEW + "."})
    assert [d.kind for d in store.decisions()] == ["written", "written", "restated"]
    assert sorted(keys(s.search(NS))) == ["m1", "m2"]


def test_search_fills_limit_and_honours_offset_as_if_superseded_items_were_not_there(stores: Stores) -> None:
    s, inner, _store = wrap(stores)
    facts = [
        "Dana's staging database port is 5432",
        "Raj is allergic to peanuts and tree nuts",
        "The team standup moved to 9:30 on Mondays",
        "Priya prefers dark mode in every editor",
        "The on-call shift is 24 hours long",
        "Lena's flight to Lisbon leaves at 09:40",
        "Our cloud budget for May is 12,000 euros",
        "Omar is learning Rust with the async book",
    ]
    for n, fact in enumerate(facts):
        s.put(NS, f"f{n}", {"content": fact, "n": n, "even": n % 2 == 0})
        if n % 3 == 0:  # a restatement, superseded at once
            s.put(NS, f"r{n}", {"content": fact + ".", "n": n, "even": n % 2 == 0})
    every = s.search(NS, limit=100)
    assert sorted(keys(every)) == sorted(f"f{n}" for n in range(8))
    # The visible order is the inner store's, superseded items taken out.
    bare = [k for k in keys(inner.search(NS, limit=100)) if k.startswith("f")]
    assert keys(every) == bare
    for limit in (1, 3, 5):
        for offset in (0, 1, 2, 4, 7, 9):
            assert keys(s.search(NS, limit=limit, offset=offset)) == keys(every)[offset : offset + limit]
    evens = keys(s.search(NS, filter={"even": True}, limit=100))
    assert evens == [k for k in keys(every) if int(k[1:]) % 2 == 0]
    assert keys(s.search(NS, filter={"even": True}, limit=2, offset=1)) == evens[1:3]


# -- 3. overwrite, history, delete, restore


def test_an_overwrite_keeps_the_old_value_in_hidden_history(stores: Stores) -> None:
    s, inner, store = wrap(stores)
    s.put(NS, "k", {"content": SHELL, "v": 1})
    s.put(NS, "k", {"content": SHELL.replace("zsh", "fish"), "v": 2})
    s.put(NS, "k", {"content": SHELL.replace("zsh", "fish"), "v": 2})  # the same value: no new history
    assert s.get(NS, "k").value == {"content": SHELL.replace("zsh", "fish"), "v": 2}
    assert [h.value for h in s.history(NS, "k")] == [{"content": SHELL, "v": 1}]
    assert [(h.namespace, h.key) for h in s.history(NS, "k")] == [(NS, "k")]
    assert [d.overwrote for d in store.decisions()] == [False, True, True]
    # Hidden: the inner store holds it, the wrapper lists and searches none of it.
    assert ("memdedup", "history", *NS) in inner.list_namespaces()
    assert [i.value["v"] for i in inner.search(("memdedup", "history", *NS))] == [1]
    assert s.list_namespaces() == [NS]
    assert s.list_namespaces(max_depth=1) == [NS[:1]]
    assert keys(s.search(())) == ["k"]
    assert s.search(("memdedup",)) == []
    with pytest.raises(InvalidNamespaceError):
        s.put(("memdedup", "history", *NS), "x", {"content": "x"})


def test_an_overwrite_is_decided_against_the_other_current_items(stores: Stores) -> None:
    s, _inner, store = wrap(stores)
    s.put(NS, "a", {"content": PORT_OLD})
    s.put(NS, "b", {"content": SHELL})
    s.put(NS, "b", {"content": PORT_NEW})  # b now updates a's fact
    assert keys(s.search(NS)) == ["b"]
    assert s.get(NS, "a").value["memdedup"]["superseded_by"] == "b"
    assert (store.decisions()[-1].kind, store.decisions()[-1].overwrote) == ("updated", True)


def test_delete_leaves_superseded_items_superseded_and_restore_brings_one_back(stores: Stores) -> None:
    s, _inner, store = wrap(stores)
    s.put(NS, "m1", {"content": PORT_OLD})
    s.put(NS, "m2", {"content": PORT_NEW})
    s.delete(NS, "m2")
    assert s.search(NS) == [] and s.get(NS, "m2") is None
    assert s.get(NS, "m1").value["memdedup"]["superseded_by"] == "m2"
    assert s.restore(NS, "m1") is True
    assert s.restore(NS, "m1") is False  # already current
    assert s.restore(NS, "nope") is False
    assert s.get(NS, "m1").value == {"content": PORT_OLD}
    assert keys(s.search(NS)) == ["m1"]
    s.put(NS, "m3", {"content": PORT_OLD + "."})  # the restored item is current again for the rule
    assert (store.decisions()[-1].kind, store.decisions()[-1].matched_key) == ("restated", "m1")


# -- 4. scrubbing before anything leaves


def test_a_secret_is_scrubbed_before_the_inner_store_writes_it(stores: Stores) -> None:
    s, inner, store = wrap(stores)
    s.put(NS, "m", {"content": f"the deploy token is {TOKEN}", "meta": {"password": "hunter2-x"}})
    s.put(NS, "n", {"note": f"no text here but {TOKEN}"})
    stored = inner.get(NS, "m").value
    assert TOKEN not in str(stored) and "hunter2" not in str(stored)
    assert stored["content"].startswith("the deploy token is [REDACTED:")
    assert TOKEN not in str(inner.get(NS, "n").value)
    first = store.decisions()[0]
    assert first.redactions and first.dropped_keys == ("meta.password",)
    s.put(NS, "m", {"content": "the deploy token moved to the vault"})
    assert TOKEN not in str([h.value for h in s.history(NS, "m")])


def test_a_secret_found_in_one_field_is_redacted_in_every_copy_of_the_value(stores: Stores) -> None:
    """A put's value is one record: a password given under its key and repeated bare in the text (where
    nothing marks it) is redacted in both, and in the history entry when the value is replaced."""
    s, inner, _store = wrap(stores)
    secret = "Qv7-tukaka-Niro-528x"
    s.put(NS, "m", {"content": f"I typed {secret} at the login prompt", "meta": {"password": secret}})
    stored = inner.get(NS, "m").value
    assert secret not in str(stored), stored
    assert "[REDACTED:PASSWORD]" in stored["content"]
    s.put(NS, "m", {"content": "the login prompt takes a passkey now"})
    assert secret not in str([h.value for h in s.history(NS, "m")])


def test_a_secret_never_reaches_the_embedding_function(memory_stores: Stores) -> None:
    stores = memory_stores
    seen: list[str] = []

    def embed(texts: list[str]) -> list[list[float]]:
        seen.extend(texts)
        return [[float(len(t)), float(sum(map(ord, t)) % 97), 1.0] for t in texts]

    inner = stores.inner(index={"dims": 3, "embed": embed, "fields": ["content"]})
    s = stores.calls(DedupStore(inner))
    s.put(NS, "m", {"content": f"the deploy token is {TOKEN}"})
    s.search(NS, query=f"token {TOKEN}")  # a query is the caller's: not a stored text
    assert seen and all(TOKEN not in text for text in seen[:1])
    assert any("[REDACTED:" in text for text in seen)


# -- 5. decisions


def test_every_put_has_a_decision_in_put_order_and_on_decision_sees_each(stores: Stores) -> None:
    got: list[Decision] = []
    s, _inner, store = wrap(stores, on_decision=got.append)
    s.put(NS, "a", {"content": PORT_OLD})
    s.put(NS, "b", {"content": PORT_NEW})
    s.put(NS, "c", {"content": PORT_NEW + "."})
    s.put(NS, "d", {"other": 1})
    s.delete(NS, "d")  # a delete is not a put of a fact: no decision
    assert got == store.decisions()
    assert [(d.kind, d.key, d.matched_key, d.superseded) for d in got] == [
        ("written", "a", None, None),
        ("updated", "b", "a", "a"),
        ("restated", "c", "b", "c"),
        ("passed", "d", None, None),
    ]
    assert got[1].reason.startswith("ratio 0.972") and got[2].rule == "ratio" and got[2].score == 1.0
    every = DedupStore.decisions()  # every store's, in this process
    assert every[-len(got) :] == got


# -- 6. faithful delegation


def test_a_batch_carries_every_op_in_op_order_and_decides_duplicates_in_op_order(stores: Stores) -> None:
    s, _inner, store = wrap(stores)
    s.put(NS, "x", {"content": SHELL})
    results = s.batch(
        [
            GetOp(NS, "x"),
            PutOp(NS, "a", {"content": PORT_OLD}),
            SearchOp(NS),
            PutOp(NS, "b", {"content": PORT_NEW}),
            ListNamespacesOp(),
            PutOp(NS, "c", {"content": PORT_NEW + "!"}),
            GetOp(NS, "a"),
            PutOp(NS, "x", None),
        ]
    )
    assert results[0].value == {"content": SHELL}
    assert [results[n] for n in (1, 3, 5, 7)] == [None] * 4
    assert keys(results[2]) == ["x"]  # reads see the store before the batch's puts, as the inner's do
    assert results[4] == [NS]
    assert results[6] is None
    assert [(d.kind, d.key, d.matched_key) for d in store.decisions()[1:]] == [
        ("written", "a", None),
        ("updated", "b", "a"),
        ("restated", "c", "b"),
    ]
    assert keys(s.search(NS)) == ["b"] and s.get(NS, "x") is None


def test_ttl_is_passed_through_and_a_swept_fact_is_seen_gone(stores: Stores) -> None:
    inner = stores.inner() if stores.kind == "memory" else stores.inner(ttl={"default_ttl": 60})
    store = DedupStore(inner)
    s = stores.calls(store)
    assert store.supports_ttl is inner.supports_ttl and store.ttl_config == inner.ttl_config
    if not inner.supports_ttl:
        with pytest.raises(NotImplementedError):
            s.put(NS, "a", {"content": PORT_OLD}, ttl=5)
        return
    s.put(NS, "a", {"content": PORT_OLD}, ttl=-1)  # already expired: the next sweep deletes it
    s.put(NS, "b", {"content": SHELL})
    assert stores.calls(store).same("sweep_ttl") == 1  # delegated to the inner store
    s.put(NS, "c", {"content": PORT_NEW})  # a's index entry is gone from the store: reloaded, written
    assert store.decisions()[-1].kind == "written"
    assert sorted(keys(s.search(NS))) == ["b", "c"]


def test_other_attributes_are_the_inner_stores(stores: Stores) -> None:
    inner = stores.inner()
    store = DedupStore(inner)
    assert store.store is inner
    assert store.index_config is inner.index_config
    assert repr(store).startswith("DedupStore(")
    with pytest.raises(AttributeError):
        _ = store.no_such_attribute
    stores.calls(store).same("setup") if stores.kind != "memory" else None


# -- the candidate index and other writers


def test_a_key_another_writer_added_is_seen_by_search_and_get(stores: Stores) -> None:
    s, inner, store = wrap(stores)
    s.put(NS, "a", {"content": SHELL})
    inner.put(NS, "z", {"content": PORT_OLD})  # another process, straight into the inner store
    assert sorted(keys(s.search(NS))) == ["a", "z"]  # the wrapper meets z: its namespace is re-read
    s.put(NS, "b", {"content": PORT_NEW})
    assert (store.decisions()[-1].kind, store.decisions()[-1].matched_key) == ("updated", "z")
    inner.put(NS, "y", {"content": "Raj is allergic to peanuts and tree nuts"})
    store.refresh()
    s.put(NS, "c", {"content": "Raj is allergic to peanuts"})
    assert store.decisions()[-1].matched_key == "y"


def test_a_matched_key_another_writer_changed_is_read_again_before_deciding(stores: Stores) -> None:
    s, inner, store = wrap(stores)
    s.put(NS, "a", {"content": PORT_OLD})
    inner.delete(NS, "a")  # unseen by the wrapper
    s.put(NS, "b", {"content": PORT_NEW})
    assert store.decisions()[-1].kind == "written"
    inner.put(NS, "b", {"content": SHELL})  # b's text changed behind the wrapper's back
    s.put(NS, "c", {"content": PORT_NEW + "."})
    assert store.decisions()[-1].kind == "written"
    assert sorted(keys(s.search(NS))) == ["b", "c"]


def test_a_store_started_on_existing_data_loads_it_once(sync_stores: Stores) -> None:
    inner = sync_stores.inner()
    inner.put(NS, "old", {"content": PORT_OLD})
    inner.put((*NS, "child"), "kid", {"content": PORT_NEW})  # a prefix read returns it: not this namespace's
    store = DedupStore(inner)
    store.put(NS, "new", {"content": PORT_NEW})
    assert (store.decisions()[0].kind, store.decisions()[0].matched_key) == ("updated", "old")
    assert keys(store.search(NS)) == ["new", "kid"] or sorted(keys(store.search(NS))) == ["kid", "new"]


def test_a_vector_search_answers_as_the_store_would_without_the_superseded_items(
    memory_stores: Stores,
) -> None:
    """InMemoryStore ranks scored items, then fills the page with unscored ones (``index=False``) from the
    first whatever the offset: with superseded items taken out, the wrapped store answers as a bare store
    holding only the current items does, quirk included."""

    def embed(texts: list[str]) -> list[list[float]]:
        return [[float(text.count(c)) for c in "aeiourst"] for text in texts]

    index = {"dims": 8, "embed": embed, "fields": ["content"]}
    s = memory_stores.calls(DedupStore(memory_stores.inner(index=index)))
    bare = memory_stores.calls(memory_stores.inner(index=index))
    puts = [
        ("f1", {"content": PORT_OLD}, None),
        ("f2", {"content": PORT_NEW}, None),  # supersedes f1
        ("u1", {"content": "Raj is allergic to peanuts and tree nuts"}, False),
        ("f3", {"content": SHELL}, None),
        ("u2", {"content": "Raj is allergic to peanuts"}, False),  # restated: superseded
        ("u3", {"content": "The team standup moved to 9:30 on Mondays"}, False),
        ("f4", {"content": "Priya prefers dark mode in every editor"}, None),
    ]
    for key, value, idx in puts:
        s.put(NS, key, value, index=idx)
    for key, value, idx in puts:
        if key not in ("f1", "u2"):
            bare.put(NS, key, value, index=idx)
    assert sorted(keys(s.search(NS, limit=20))) == ["f2", "f3", "f4", "u1", "u3"]
    for query in ("port", "Raj allergy"):
        for limit in (1, 2, 3, 5):
            for offset in (0, 1, 2, 3, 4, 6):
                got = [(i.key, i.score) for i in s.search(NS, query=query, limit=limit, offset=offset)]
                want = [(i.key, i.score) for i in bare.search(NS, query=query, limit=limit, offset=offset)]
                assert got == want, (query, limit, offset)


def test_concurrent_puts_of_one_fact_leave_one_current_item(stores: Stores) -> None:
    """Puts from several threads (sync) or tasks (async) at once are decided one after the other."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    inner = stores.inner()
    store = DedupStore(inner)
    texts = [f"{PORT_NEW}{'.' * (n % 3)}" for n in range(8)]
    if stores.loop is None:
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda n: store.put(NS, f"k{n}", {"content": texts[n]}), range(8)))
    else:

        async def put_all() -> None:
            await asyncio.gather(*(store.aput(NS, f"k{n}", {"content": texts[n]}) for n in range(8)))

        stores.run(put_all())
    current = stores.calls(store).search(NS)
    assert len(current) == 1
    kinds = sorted(d.kind for d in store.decisions())
    assert kinds == ["restated"] * 7 + ["written"]
