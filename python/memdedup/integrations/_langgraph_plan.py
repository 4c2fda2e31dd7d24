"""The write side of :class:`~memdedup.integrations.langgraph.DedupStore`: what the wrapper knows of each
namespace, and the plan of one batch's puts.

What the wrapper knows
    Per namespace it has written to: a :class:`~memdedup.index.LabelIndex` (gate-free: every current
    text the match contract accepts, no prefix gate, no candidate cap) of the namespace's **current**
    items that have a text, and the state of every key it has seen there (its text, the key that
    superseded it, the TTL and ``index`` it was written with). It is built lazily, on the first put into
    the namespace, from one read of the inner store (only items of exactly that namespace: never a
    prefix or a sibling), oldest first.

A batch's plan
    The puts are decided in op order, each against the current items of its namespace as the earlier
    puts of the batch left them (an overlay: nothing the wrapper knows changes until the inner store
    has taken the writes). The rule is :mod:`memdedup.facts`'s: the oldest current item that is the same
    fact (:meth:`LabelIndex.query <memdedup.index.LabelIndex.query>` at the threshold, ``min_chars`` and
    guards), then :func:`memdedup.facts.facts_match` says ``restated`` or ``updated``. The plan lists
    the keys it relied on (each put's key, each matched key) so the store can check them against a
    fresh read before it writes (:meth:`Plan.disagreements`): a key another writer changed makes the
    namespace stale, reloaded, and the batch planned again.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, NamedTuple

from langgraph.store.base import Item, PutOp

from memdedup.facts import RESTATED, FactMatch, facts_match
from memdedup.guards import Guards
from memdedup.index import LabelIndex
from memdedup.integrations._langgraph_values import (
    HISTORY,
    MARK,
    PASSED,
    UPDATED,
    WRITTEN,
    Decision,
    Prepared,
    TextOf,
    superseded_by,
    without_mark,
)
from memdedup.scrub import CredentialScrubber

__all__ = [
    "UNKNOWN",
    "KeyState",
    "Namespace",
    "Plan",
    "Settings",
    "history_entry",
    "history_namespace",
    "history_value",
    "load_namespace",
]

#: A TTL the wrapper did not see written (an item loaded from the store).
UNKNOWN: Any = object()

NsKey = tuple[tuple[str, ...], str]


class Settings(NamedTuple):
    """The rule's settings and the value handling of one store."""

    threshold: float
    min_chars: int
    guards: Guards | None
    text_of: TextOf
    scrubber: CredentialScrubber | None


class KeyState(NamedTuple):
    """What the wrapper knows of one key: its text (None: no text), the key that superseded it (None:
    current), the TTL and ``index`` it was written with."""

    text: str | None
    superseded_by: str | None
    ttl: Any = UNKNOWN
    index: Any = None

    @property
    def current_text(self) -> str | None:
        return self.text if self.superseded_by is None else None


class Namespace:
    """One namespace's candidate index (current texts, oldest first) and key states."""

    __slots__ = ("exists", "index", "keys", "stale")

    def __init__(self, settings: Settings) -> None:
        self.index = LabelIndex(threshold=settings.threshold, min_chars=settings.min_chars)
        self.keys: dict[str, KeyState] = {}
        self.stale = False
        #: The inner store is known to hold this namespace (an item was read or written there).
        self.exists = False

    def agrees(self, key: str, item: Item | None, text_of: TextOf) -> bool:
        """Whether a fresh read of ``key`` is what the wrapper knows of it."""
        known = self.keys.get(key)
        if item is None or known is None:
            return item is None and known is None
        return known.text == text_of(item.value) and known.superseded_by == superseded_by(item.value)


def load_namespace(namespace: tuple[str, ...], items: Iterable[Item], settings: Settings) -> Namespace:
    """A namespace's state from the inner store's items (a prefix search's answer: only the items of
    exactly ``namespace`` count), oldest first by ``created_at`` (ties in the store's order)."""
    space = Namespace(settings)
    own = sorted((item for item in items if tuple(item.namespace) == namespace), key=lambda i: i.created_at)
    labels, ids = [], []
    for item in own:
        text = settings.text_of(item.value)
        by = superseded_by(item.value)
        space.keys[item.key] = KeyState(text, by)
        if text is not None and by is None:
            labels.append(text)
            ids.append(item.key)
    space.index.insert_many(labels, ids)
    space.exists = bool(own)
    return space


def make_mark(by: str, fact: FactMatch, index: Any) -> dict[str, Any]:
    """The ``value["memdedup"]`` entry of an item ``by`` superseded, for the rule's ``fact``."""
    return {
        "superseded_by": by,
        "kind": fact.kind,
        "rule": fact.rule,
        "score": fact.score,
        "reason": fact.reason,
        "change": fact.change,
        "at": datetime.now(UTC).isoformat(),
        "index": index if index is False or index is None else list(index),
    }


class _Overlay:
    """One namespace as the batch's earlier puts left it: current keys removed from the index, current
    texts added (in order; indexed on demand for the batch's later puts), changed key states."""

    __slots__ = ("added", "indexed", "local", "removed", "states")

    def __init__(self) -> None:
        self.removed: set[str] = set()
        self.added: dict[str, str] = {}
        self.local: LabelIndex | None = None
        self.indexed: set[str] = set()
        self.states: dict[str, KeyState | None] = {}


class _Action(NamedTuple):
    op: PutOp
    prepared: Prepared | None  # None: a delete, or a value the inner store will refuse (passed as is)
    kind: str = ""
    fact: FactMatch | None = None
    matched: str | None = None
    own_mark: dict[str, Any] | None = None  # restated: the put's own value is written superseded
    supersede: tuple[str, dict[str, Any]] | None = None  # updated: (matched key, its mark)


class Plan:
    """The decisions of one batch's puts, in op order, over the namespaces' states (unchanged until
    :meth:`commit`)."""

    def __init__(self, spaces: Mapping[tuple[str, ...], Namespace], settings: Settings, default_ttl: Any):
        self._spaces = spaces
        self._settings = settings
        self._default_ttl = default_ttl
        self._overlays: dict[tuple[str, ...], _Overlay] = {}
        self._actions: list[_Action] = []
        #: The keys the plan relied on, to read fresh before writing.
        self.keys: dict[NsKey, None] = {}

    # -- the overlay

    def _overlay(self, namespace: tuple[str, ...]) -> _Overlay:
        found = self._overlays.get(namespace)
        if found is None:
            found = self._overlays[namespace] = _Overlay()
        return found

    def _state(self, space: Namespace, overlay: _Overlay, key: str) -> KeyState | None:
        if key in overlay.states:
            return overlay.states[key]
        return space.keys.get(key)

    def _add(self, overlay: _Overlay, key: str, text: str) -> None:
        overlay.added[key] = text

    def _remove(self, overlay: _Overlay, key: str) -> None:
        if key in overlay.added:
            del overlay.added[key]
            if key in overlay.indexed and overlay.local is not None:
                overlay.local.remove(key)
                overlay.indexed.discard(key)
        else:
            overlay.removed.add(key)

    def _first_match(
        self, space: Namespace, overlay: _Overlay, text: str
    ) -> tuple[str, str, str, float] | None:
        """The oldest current item of the namespace that is the same fact as ``text``: (key, its text,
        the contract's rule, the exact score)."""
        guards = self._settings.guards
        if overlay.removed:
            matches = space.index.query(text, guards=guards)
        else:
            first = space.index.first_match(text, guards=guards)
            matches = [first] if first is not None else []
        for match in matches:
            key = str(match.id)
            if key not in overlay.removed:
                return key, space.index.label(key), match.reason, match.score
        if not overlay.added:
            return None
        if overlay.local is None:
            overlay.local = LabelIndex(threshold=self._settings.threshold, min_chars=self._settings.min_chars)
        for key, added in overlay.added.items():
            if key not in overlay.indexed:
                overlay.local.insert(added, key)
                overlay.indexed.add(key)
        for match in overlay.local.query(text, guards=guards):
            key = str(match.id)
            if key in overlay.added:
                return key, overlay.added[key], match.reason, match.score
        return None

    # -- deciding

    def add(self, op: PutOp, prepared: Prepared | None) -> None:
        """Decide one put (in op order)."""
        namespace = tuple(op.namespace)
        key = op.key
        self.keys[(namespace, key)] = None
        space = self._spaces.get(namespace)
        overlay = self._overlay(namespace) if space is not None else None
        if space is not None and overlay is not None:
            prior = self._state(space, overlay, key)
            if prior is not None and prior.current_text is not None:
                self._remove(overlay, key)
        if prepared is None:
            if overlay is not None:
                overlay.states[key] = None
            self._actions.append(_Action(op, None))
            return
        text = prepared.text
        if text is None or space is None or overlay is None:
            if overlay is not None:
                overlay.states[key] = KeyState(None, None, op.ttl, op.index)
            self._actions.append(_Action(op, prepared, PASSED if text is None else WRITTEN))
            return
        found = self._first_match(space, overlay, text)
        if found is None:
            self._add(overlay, key, text)
            overlay.states[key] = KeyState(text, None, op.ttl, op.index)
            self._actions.append(_Action(op, prepared, WRITTEN))
            return
        matched, current, rule, score = found
        fact = facts_match(current, text, rule, score)
        self.keys[(namespace, matched)] = None
        if fact.kind == RESTATED:
            overlay.states[key] = KeyState(text, matched, op.ttl, op.index)
            mark = make_mark(matched, fact, op.index)
            self._actions.append(_Action(op, prepared, RESTATED, fact, matched, own_mark=mark))
            return
        held = self._state(space, overlay, matched) or KeyState(current, None)
        self._remove(overlay, matched)
        overlay.states[matched] = held._replace(superseded_by=key)
        self._add(overlay, key, text)
        overlay.states[key] = KeyState(text, None, op.ttl, op.index)
        mark = make_mark(key, fact, held.index)
        self._actions.append(_Action(op, prepared, UPDATED, fact, matched, supersede=(matched, mark)))

    # -- checking, writing, committing

    def disagreements(self, fresh: Mapping[NsKey, Item | None]) -> set[tuple[str, ...]]:
        """The namespaces where a fresh read of a key the plan relied on is not what the wrapper knows
        (another writer was there): reload them and plan again."""
        stale = set()
        for (namespace, key), item in fresh.items():
            space = self._spaces.get(namespace)
            if space is not None and not space.agrees(key, item, self._settings.text_of):
                stale.add(namespace)
        return stale

    def writes(self, fresh: Mapping[NsKey, Item | None]) -> tuple[list[PutOp], list[Decision]]:
        """The inner store's put ops (one per key, in the order the caller's puts first named them, then
        the history entries) and the decisions, given a fresh read of :attr:`keys`."""
        values: dict[NsKey, Any] = {
            nk: (item.value if item is not None else None) for nk, item in fresh.items()
        }
        out: dict[NsKey, PutOp] = {}
        history: list[PutOp] = []
        decisions: list[Decision] = []
        for action in self._actions:
            op, prepared = action.op, action.prepared
            namespace = tuple(op.namespace)
            nk = (namespace, op.key)
            old = values.get(nk)
            if prepared is None:
                out[nk] = op
                values[nk] = op.value
                continue
            value = prepared.value if action.own_mark is None else {**prepared.value, MARK: action.own_mark}
            if old is not None and old != value:
                history.append(self._history(namespace, op.key, old))
            index = False if action.own_mark is not None else op.index
            out[nk] = PutOp(namespace, op.key, value, index=index, ttl=op.ttl)
            values[nk] = value
            if action.supersede is not None:
                self._mark(namespace, action.supersede, values, out)
            decisions.append(self._decision(action, prepared, overwrote=old is not None))
        return [*out.values(), *history], decisions

    def _mark(
        self,
        namespace: tuple[str, ...],
        supersede: tuple[str, dict[str, Any]],
        values: dict[NsKey, Any],
        out: dict[NsKey, PutOp],
    ) -> None:
        matched, mark = supersede
        mk = (namespace, matched)
        held = values.get(mk)
        if not isinstance(held, Mapping):
            return  # gone since the fresh read: nothing to mark
        marked = {**without_mark(held), MARK: mark}
        earlier = out.get(mk)
        if earlier is not None:
            index, ttl = earlier.index, earlier.ttl
        else:
            space = self._spaces[namespace]
            known = space.keys.get(matched)
            index, ttl = False, self._default_ttl if known is None or known.ttl is UNKNOWN else known.ttl
        out[mk] = PutOp(namespace, matched, marked, index=index, ttl=ttl)
        values[mk] = marked

    def _history(self, namespace: tuple[str, ...], key: str, old: Any) -> PutOp:
        """The history entry of ``key``'s replaced value ``old`` (see :func:`history_entry`)."""
        scrubber = self._settings.scrubber
        if scrubber is not None and isinstance(old, Mapping):
            old = scrubber.for_record(old).scrub_properties(old).properties
        return history_entry(namespace, key, old)

    @staticmethod
    def _decision(action: _Action, prepared: Prepared, *, overwrote: bool) -> Decision:
        op, fact = action.op, action.fact
        superseded = None
        if fact is not None:
            superseded = action.matched if action.kind == UPDATED else op.key
        return Decision(
            kind=action.kind,
            namespace=tuple(op.namespace),
            key=op.key,
            matched_key=action.matched,
            reason=fact.reason if fact is not None else "",
            score=fact.score if fact is not None else None,
            rule=fact.rule if fact is not None else None,
            change=fact.change if fact is not None else "",
            superseded=superseded,
            overwrote=overwrote,
            redactions=prepared.redactions,
            dropped_keys=prepared.dropped_keys,
        )

    def commit(self) -> None:
        """Apply the plan to the namespaces' states (the inner store has taken the writes)."""
        for namespace, overlay in self._overlays.items():
            space = self._spaces[namespace]
            space.exists = True  # a put (or a delete) named it: the inner store lists it from now on
            for key in overlay.removed:
                space.index.remove(key)
            for key, text in overlay.added.items():
                space.index.insert(text, key)
            for key, state in overlay.states.items():
                if state is None:
                    space.keys.pop(key, None)
                else:
                    space.keys[key] = state

    @property
    def namespaces(self) -> set[tuple[str, ...]]:
        return {namespace for namespace, _key in self.keys}


def history_namespace(namespace: tuple[str, ...]) -> tuple[str, ...]:
    """Where the history of ``namespace``'s items lives: ``("memdedup", "history", *namespace)``."""
    return (*HISTORY, *namespace)


def history_entry(namespace: tuple[str, ...], key: str, old: Any) -> PutOp:
    """A put of ``old`` into ``key``'s history. The entry's value is ``old``'s own fields (so a filter that
    works on the item works on its history, as an ``InMemoryStore`` filter must), with the ``"memdedup"``
    entry saying whose history it is, when it was replaced, its order, and the mark ``old`` had."""
    seq = _sequence()
    fields = without_mark(old) if isinstance(old, Mapping) else {}
    about = {
        "history_of": key,
        "replaced_at": datetime.now(UTC).isoformat(),
        "seq": seq,
        "mark": dict(old[MARK]) if isinstance(old, Mapping) and isinstance(old.get(MARK), Mapping) else None,
    }
    entry_key = f"{key}@{seq:020d}-{secrets.token_hex(4)}"  # unique: the sequence, then 32 random bits
    return PutOp(history_namespace(namespace), entry_key, {**fields, MARK: about}, index=False)


def history_value(entry: Mapping[str, Any], key: str) -> dict[str, Any] | None:
    """The value a history entry of ``key`` keeps (its mark, if it had one, put back), or None when
    ``entry`` is not one."""
    about = entry.get(MARK)
    if not isinstance(about, Mapping) or about.get("history_of") != key:
        return None
    value = without_mark(entry)
    if isinstance(about.get("mark"), Mapping):
        value[MARK] = dict(about["mark"])
    return value


_LAST_SEQ = [0]


def _sequence() -> int:
    """Nanoseconds since the epoch, strictly increasing in this process: the order of history entries."""
    now = max(time.time_ns(), _LAST_SEQ[0] + 1)
    _LAST_SEQ[0] = now
    return now


def restore_state(space: Namespace, key: str, text: str | None, index: Any, ttl: Any) -> None:
    """``key`` is current again (after :meth:`DedupStore.restore` wrote it without its mark)."""
    known = space.keys.get(key)
    if known is not None and known.current_text is not None:
        space.index.remove(key)
    space.keys[key] = KeyState(text, None, ttl, index)
    if text is not None:
        space.index.insert(text, key)
