"""memdedup for LangGraph stores: :class:`DedupStore` wraps any ``BaseStore`` (``InMemoryStore``,
``SqliteStore``, ``PostgresStore``, a third party's) and behaves exactly as it does, except that a
restatement of a fact the namespace already holds does not pile up as one more current item, and no
credential reaches the inner store or its embedding API.

    >>> from langgraph.store.memory import InMemoryStore
    >>> store = DedupStore(InMemoryStore())
    >>> ns = ("user-1", "memories")
    >>> store.put(ns, "m1", {"content": "Dana's staging database port is 5432"})
    >>> store.put(ns, "m2", {"content": "Dana's staging database port is 6543"})
    >>> [item.key for item in store.search(ns)]
    ['m2']
    >>> store.get(ns, "m1").value["memdedup"]["reason"]
    'ratio 0.972; value 5432 -> 6543'
    >>> [(d.kind, d.key, d.matched_key) for d in store.decisions()]
    [('written', 'm1', None), ('updated', 'm2', 'm1')]

The rule is :mod:`memdedup.facts`'s ("Memory that stays true"), applied in a keyed store:

- **The text of an item** is ``value["content"]`` when it is a string, else ``value["content"]["content"]``
  (langmem's shape), or what ``text=`` (a key path or a callable) names. An item with no text is passed
  through and never deduplicated.
- **Same fact** is write-time dedup's match contract at ``threshold``/``min_chars`` (and ``guards`` when
  given), against the current items of **exactly** the put's namespace (never a prefix or a sibling).
- A put under a new key that restates a current item makes the **new** key current (``updated``), except
  a terser or equal restatement (its text contained in the current one: ``restated``), where the current
  item stays current. The other item is **superseded**: it stays in the inner store under its key, and
  ``get`` returns it with a ``"memdedup"`` entry in its value (which key superseded it, why, the score;
  see :mod:`~memdedup.integrations._langgraph_values`). ``search`` returns only current items, filling
  ``limit`` and honouring ``offset`` as if superseded items were not there.
- A put to an existing key is the caller's overwrite: written, then decided against the namespace's
  other current items; the value it replaced goes to history under ``("memdedup", "history",
  *namespace)`` (:meth:`DedupStore.history`). The root ``"memdedup"`` is the wrapper's: hidden from
  ``search`` and ``list_namespaces``, refused to puts. ``delete`` of a current item leaves what it
  superseded superseded; :meth:`DedupStore.restore` makes a superseded item current again.
- Every put's value is scrubbed (:mod:`memdedup.scrub`) before the inner store writes or embeds it;
  :meth:`DedupStore.decisions` and ``on_decision`` report each put (``written``, ``restated``,
  ``updated``, ``passed``) with the matched key, reason, score and redactions.

Other writers
    The wrapper keeps, per namespace it writes to, an index of the current texts, built from one read of
    the inner store on its first put there. Before each batch of puts it reads the keys it will rely on
    (each put's key, each matched key) in one round trip: a key another process changed, deleted or
    added makes the namespace stale, and it is reloaded before the put is decided. A ``get`` or
    ``search`` that meets a key the wrapper did not write marks its namespace stale too, and so does
    :meth:`DedupStore.refresh`. What it cannot see: a restatement another process wrote under a key
    this process has not met, until one of those happens.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar, cast

from memdedup.errors import BackendUnavailableError, InputTypeError

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        Op,
        PutOp,
        Result,
        SearchOp,
        TTLConfig,
    )
except ImportError as exc:  # pragma: no cover - the extra is missing
    raise BackendUnavailableError(
        "memdedup.integrations.langgraph needs LangGraph's store interface: pip install 'memdedup[langgraph]'"
    ) from exc

from memdedup._rules import DEDUP_SIMILARITY_THRESHOLD, DEDUP_SUBSUME_MIN_CHARS
from memdedup.guards import Guards, as_guards
from memdedup.index import LabelIndex
from memdedup.integrations._langgraph_plan import (
    UNKNOWN,
    Namespace,
    Plan,
    Settings,
    history_namespace,
    history_value,
    load_namespace,
    restore_state,
)
from memdedup.integrations._langgraph_reads import Step, gather, list_namespaces, search
from memdedup.integrations._langgraph_values import (
    MARK,
    RESERVED_ROOT,
    Decision,
    Prepared,
    mark_of,
    prepare,
    text_getter,
    without_mark,
)
from memdedup.scrub import CredentialScrubber

__all__ = ["Decision", "DedupStore"]

T = TypeVar("T")

#: The limit of the one read that loads a namespace (every item of it).
LOAD_LIMIT = 2**31 - 1
#: How many times a batch of puts is planned again when another writer changed what it relied on.
MAX_PLANS = 3


#: How many decisions ``decisions()`` keeps (the most recent): a service that puts for weeks must not grow
#: without bound; ``on_decision`` sees every one.
KEEP_DECISIONS = 100_000

#: Every DedupStore's recent decisions in this process, in put order (``DedupStore.decisions()``).
_PROCESS_DECISIONS: deque[Decision] = deque(maxlen=KEEP_DECISIONS)
_PROCESS_LOCK = threading.Lock()


class _DecisionLog:
    """``store.decisions()``: that store's decisions in put order; ``DedupStore.decisions()``: every
    DedupStore's in this process, in put order. Each keeps the most recent :data:`KEEP_DECISIONS` (a
    service that puts for weeks must not grow without bound): ``on_decision`` sees every decision."""

    def __get__(self, store: DedupStore | None, owner: type) -> Callable[[], list[Decision]]:
        if store is None:

            def every() -> list[Decision]:
                with _PROCESS_LOCK:
                    return list(_PROCESS_DECISIONS)

            return every

        def mine() -> list[Decision]:
            with store._lock:
                return list(store._decisions)

        return mine


class DedupStore(BaseStore):
    """A ``BaseStore`` over ``store`` with exact write-time dedup and scrubbing (see the module docstring).

    ``text``: where an item's text is (None: ``content``, then ``content.content``; a dotted key path or a
    sequence of keys; or a callable taking the value, returning a ``str`` or None). ``threshold``,
    ``min_chars``, ``guards``: the match contract and guards of :mod:`memdedup.facts`. ``scrub``: scrub
    every value before the inner store sees it (default). ``on_decision``: called with each
    :class:`Decision`, in put order, once the inner store has taken the batch.
    """

    def __init__(
        self,
        store: BaseStore,
        *,
        text: str | Sequence[str] | Callable[[Mapping[str, Any]], Any] | None = None,
        threshold: float = DEDUP_SIMILARITY_THRESHOLD,
        min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
        guards: Guards | str | Iterable[str] | None = None,
        scrub: bool = True,
        on_decision: Callable[[Decision], Any] | None = None,
    ) -> None:
        if not isinstance(store, BaseStore):
            raise InputTypeError(f"DedupStore wraps a langgraph BaseStore, not {type(store).__name__}")
        if on_decision is not None and not callable(on_decision):
            raise InputTypeError(f"on_decision must be callable, not {type(on_decision).__name__}")
        checked = LabelIndex(threshold=threshold, min_chars=min_chars)  # refuses a bad threshold/min_chars
        parsed = as_guards(guards) if guards is not None else None
        self._store = store
        self._settings = Settings(
            checked.threshold,
            checked.min_chars,
            parsed or None,
            text_getter(text),
            CredentialScrubber() if scrub else None,
        )
        self._on_decision = on_decision
        self._spaces: dict[tuple[str, ...], Namespace] = {}
        self._decisions: deque[Decision] = deque(maxlen=KEEP_DECISIONS)
        self._lock = threading.RLock()
        self._alocks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )

    # -- delegation

    @property
    def store(self) -> BaseStore:
        """The wrapped store."""
        return self._store

    # BaseStore declares both as class attributes; here they are the inner store's, read each time.
    @property
    def supports_ttl(self) -> bool:  # type: ignore[override]
        return bool(self._store.supports_ttl)

    @property
    def ttl_config(self) -> TTLConfig | None:  # type: ignore[override]
        return self._store.ttl_config

    def __getattr__(self, name: str) -> Any:
        # Only reached for names this class lacks: index_config, setup, sweep_ttl, start_ttl_sweeper, conn...
        store = self.__dict__.get("_store")
        if store is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(store, name)

    def __repr__(self) -> str:
        return f"DedupStore({self._store!r})"

    # -- the BaseStore interface

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        if not any(isinstance(op, PutOp) for op in ops):
            results, _ = self._drive(self._run(ops))
            return results
        with self._lock:
            results, decisions = self._drive(self._run(ops))
            self._record(decisions)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        if not any(isinstance(op, PutOp) for op in ops):
            results, _ = await self._adrive(self._run(ops))
            return results
        async with self._async_lock():
            results, decisions = await self._adrive(self._run(ops))
            with self._lock:
                self._record(decisions)
        return results

    # -- what the wrapper adds

    decisions = _DecisionLog()

    def restore(self, namespace: tuple[str, ...], key: str) -> bool:
        """Make a superseded item current again (its mark removed; embedded again with the ``index`` it
        was put with). False when the item is absent or already current."""
        with self._lock:
            return self._drive(self._restore(tuple(namespace), str(key)))

    async def arestore(self, namespace: tuple[str, ...], key: str) -> bool:
        """:meth:`restore`, async."""
        async with self._async_lock():
            return await self._adrive(self._restore(tuple(namespace), str(key)))

    def history(self, namespace: tuple[str, ...], key: str) -> list[Item]:
        """The values ``key`` held before each overwrite, oldest first, as items of ``namespace`` and
        ``key`` whose ``created_at`` is when the value was replaced (a superseded value keeps its mark)."""
        return self._drive(self._history(tuple(namespace), str(key)))

    async def ahistory(self, namespace: tuple[str, ...], key: str) -> list[Item]:
        """:meth:`history`, async."""
        return await self._adrive(self._history(tuple(namespace), str(key)))

    def refresh(self, namespace: tuple[str, ...] | None = None) -> None:
        """Forget what the wrapper knows of ``namespace`` (every namespace by default): it is read again
        from the inner store on the next put there."""
        with self._lock:
            if namespace is None:
                self._spaces.clear()
            else:
                self._spaces.pop(tuple(namespace), None)

    # -- drivers: one step logic, run against batch or abatch

    def _drive(self, step: Step[T]) -> T:
        try:
            request = next(step)
        except StopIteration as stop:
            return cast(T, stop.value)
        while True:
            try:
                answer = self._store.batch(list(request)) if request else []
            except BaseException:
                step.close()
                raise
            try:
                request = step.send(answer)
            except StopIteration as stop:
                return cast(T, stop.value)

    async def _adrive(self, step: Step[T]) -> T:
        try:
            with self._lock:
                request = next(step)
        except StopIteration as stop:
            return cast(T, stop.value)
        while True:
            try:
                answer = await self._store.abatch(list(request)) if request else []
            except BaseException:
                step.close()
                raise
            try:
                with self._lock:
                    request = step.send(answer)
            except StopIteration as stop:
                return cast(T, stop.value)

    def _async_lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        lock = self._alocks.get(loop)
        if lock is None:
            lock = self._alocks[loop] = asyncio.Lock()
        return lock

    def _record(self, decisions: list[Decision]) -> None:
        self._decisions.extend(decisions)
        with _PROCESS_LOCK:
            _PROCESS_DECISIONS.extend(decisions)
        if self._on_decision is not None:
            for decision in decisions:
                self._on_decision(decision)

    # -- steps

    def _run(self, ops: list[Op]) -> Step[tuple[list[Result], list[Decision]]]:
        """One caller batch: its reads (seeing the store before its puts, as every store's batch does),
        then its puts, planned, checked against a fresh read, written in one inner batch."""
        results: list[Result] = [None] * len(ops)
        reads = [(n, op) for n, op in enumerate(ops) if not isinstance(op, PutOp)]
        puts = [op for op in ops if isinstance(op, PutOp)]
        prepared = [self._prepare(op) for op in puts]  # bad input is refused before anything is read
        load = self._load(self._needed(puts)) if puts else None
        answers = yield from self._reads([op for _n, op in reads], load)
        loaded: dict[tuple[str, ...], dict[str, Item]] = answers.pop() if load is not None else {}
        for (n, _op), answer in zip(reads, answers, strict=True):
            results[n] = answer
        if not puts:
            return results, []
        for attempt in range(MAX_PLANS):
            if attempt:
                loaded = yield from self._load(self._needed(puts))
            plan = Plan(self._spaces, self._settings, self._default_ttl())
            for op, ready in zip(puts, prepared, strict=True):
                plan.add(op, ready)
            # A namespace read whole just now needs no read of its keys; the others are read key by key.
            fresh: dict[tuple[tuple[str, ...], str], Item | None] = {
                (ns, key): loaded[ns].get(key) for ns, key in plan.keys if ns in loaded
            }
            keys = [nk for nk in plan.keys if nk[0] not in loaded]
            got = yield [GetOp(namespace, key, refresh_ttl=False) for namespace, key in keys]
            fresh.update(zip(keys, got, strict=True))
            stale = plan.disagreements(fresh)
            if not stale:
                break
            for namespace in stale:
                self._spaces[namespace].stale = True
        writes, decisions = plan.writes(fresh)
        try:
            yield writes
        except GeneratorExit:  # the inner store refused the writes: what it holds is unknown now
            for namespace in plan.namespaces:
                if namespace in self._spaces:
                    self._spaces[namespace].stale = True
            raise
        plan.commit()
        return results, decisions

    def _reads(self, ops: list[Op], load: Step[Any] | None) -> Step[list[Any]]:
        """A caller batch's reads, sharing round trips, then ``load``'s answer when given. A read after a
        ``list_namespaces`` is sent only once that listing is answered: a listing that must be read again
        from the start (a hidden namespace was in its window) would otherwise see what the later reads
        did (``InMemoryStore`` lists a namespace that any ``get`` named, as the bare store's batch does
        only for the reads before the listing)."""
        segments: list[list[Op]] = [[]]
        for op in ops:
            segments[-1].append(op)
            if isinstance(op, ListNamespacesOp):
                segments.append([])
        answers: list[Any] = []
        for n, segment in enumerate(segments):
            steps = [self._read(op) for op in segment]
            if n == len(segments) - 1 and load is not None:
                steps.append(load)
            if steps:
                answers.extend((yield from gather(steps)))
        return answers

    def _prepare(self, op: PutOp) -> Prepared | None:
        if tuple(op.namespace[:1]) == (RESERVED_ROOT,):
            raise InvalidNamespaceError(
                f'Root label for namespace cannot be "{RESERVED_ROOT}" in a DedupStore (it holds the '
                f"wrapper's history). Got: {tuple(op.namespace)}"
            )
        if not isinstance(op.value, Mapping):
            return None  # a delete, or a value the inner store refuses itself
        return prepare(op.value, self._settings.text_of, self._settings.scrubber)

    def _needed(self, puts: list[PutOp]) -> set[tuple[str, ...]]:
        """The namespaces a batch's puts go to that must be read whole before deciding: unknown, stale,
        or not known to hold anything yet (reading a key there would be the first op to name the
        namespace: ``InMemoryStore`` lists a namespace any read named, so a batch whose write then fails
        would leave it listed where the bare store would not)."""
        needed = set()
        for op in puts:
            namespace = tuple(op.namespace)
            space = self._spaces.get(namespace)
            if space is None or space.stale or not space.exists:
                needed.add(namespace)
        return needed

    def _load(self, namespaces: Iterable[tuple[str, ...]]) -> Step[dict[tuple[str, ...], dict[str, Item]]]:
        """Read the namespaces the wrapper does not know yet, knows to be stale, or does not know to hold
        anything, one search each; their items by key (a fresh read of every key there)."""
        need = [
            ns
            for ns in namespaces
            if ns not in self._spaces or self._spaces[ns].stale or not self._spaces[ns].exists
        ]
        if not need:
            return {}
        got = yield [SearchOp(ns, limit=LOAD_LIMIT, refresh_ttl=False) for ns in need]
        fresh: dict[tuple[str, ...], dict[str, Item]] = {}
        for namespace, items in zip(need, got, strict=True):
            self._spaces[namespace] = load_namespace(namespace, items, self._settings)
            fresh[namespace] = {item.key: item for item in items if tuple(item.namespace) == namespace}
        return fresh

    def _read(self, op: Op) -> Step[Result]:
        if isinstance(op, SearchOp):
            vector = bool(op.query) and bool(getattr(self._store, "index_config", None))
            found = yield from search(op, refresh_supported=bool(self._store.supports_ttl), vector=vector)
            self._seen(found)
            return found
        if isinstance(op, ListNamespacesOp):
            return (yield from list_namespaces(op))
        answers = yield [op]
        if isinstance(op, GetOp):
            self._seen([answers[0]])
        return cast(Result, answers[0])

    def _seen(self, items: Iterable[Any]) -> None:
        """A read met these items: a key of a known namespace that is not what the wrapper knows marks
        the namespace stale (another writer was there)."""
        for item in items:
            if not isinstance(item, Item):
                continue
            space = self._spaces.get(tuple(item.namespace))
            if space is None or space.stale:
                continue
            try:
                agrees = space.agrees(item.key, item, self._settings.text_of)
            except Exception:
                agrees = False
            if not agrees:
                space.stale = True

    def _default_ttl(self) -> Any:
        """The TTL a put without one gets: the inner store's default (None when it has no TTL)."""
        config = self._store.ttl_config
        return config.get("default_ttl") if config and self._store.supports_ttl else None

    def _restore(self, namespace: tuple[str, ...], key: str) -> Step[bool]:
        got = yield [GetOp(namespace, key, refresh_ttl=False)]
        item = got[0]
        mark = mark_of(item.value) if item is not None else None
        if item is None or mark is None:
            return False
        value = without_mark(item.value)
        if self._settings.scrubber is not None:
            value = self._settings.scrubber.for_record(value).scrub_properties(value).properties
        index = mark.get("index")
        if not (
            index is None
            or index is False
            or (isinstance(index, list) and all(isinstance(p, str) for p in index))
        ):
            index = None
        space = self._spaces.get(namespace)
        known = space.keys.get(key) if space is not None else None
        ttl = known.ttl if known is not None and known.ttl is not UNKNOWN else self._default_ttl()
        try:
            yield [PutOp(namespace, key, value, index=index, ttl=ttl)]
        except GeneratorExit:
            if space is not None:
                space.stale = True
            raise
        if space is not None:
            if space.agrees(key, item, self._settings.text_of):
                restore_state(space, key, self._settings.text_of(value), index, ttl)
            else:
                space.stale = True
        return True

    def _history(self, namespace: tuple[str, ...], key: str) -> Step[list[Item]]:
        # Every history entry of the namespace is read and those of ``key`` kept: no store filter on a
        # nested field answers alike in InMemoryStore, SQLite and PostgreSQL. History is read rarely.
        where = history_namespace(namespace)
        got = yield [SearchOp(where, limit=LOAD_LIMIT, refresh_ttl=False)]
        entries = []
        for entry in got[0]:
            value = history_value(entry.value, key) if tuple(entry.namespace) == where else None
            if value is None:
                continue
            seq = int(entry.value[MARK].get("seq") or 0)
            when = {"created_at": entry.created_at, "updated_at": entry.updated_at}
            entries.append((seq, Item(value=value, key=key, namespace=namespace, **when)))
        entries.sort(key=lambda pair: pair[0])
        return [item for _seq, item in entries]
