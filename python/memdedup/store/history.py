"""A fact's history: the statements that restate or update a row (:mod:`memdedup.facts`), the revisions they
keep, and consolidation's merge of a later row into an earlier one. A part of
:class:`~memdedup.store.SQLiteGraphStore` (a mixin: its own concept, beside the store's reads and writes)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol

from memdedup.errors import InvalidInputError
from memdedup.scope import SCOPE_PATH_KEY
from memdedup.scrub import redact
from memdedup.store.records import CURRENT, Revision, StoredNode, properties_from
from memdedup.store.values import now as _now
from memdedup.store.values import properties_json as _properties_json
from memdedup.store.values import text_value as _text
from memdedup.store.values import turn_value as _turn

__all__ = ["RESTATED", "UPDATED", "FactHistory"]

RESTATED = "restated"
UPDATED = "updated"
# The statement counter: strictly increasing across the file (writes hold the write lock).
NEXT_STATED = "(SELECT coalesce(max(stated), 0) + 1 FROM nodes)"


class _Store(Protocol):
    """What the history needs of the store it is part of."""

    schema_version: int

    def _rows(self, sql: str, params: Any = ..., *, doing: str = ...) -> list[Any]: ...
    def _execute(self, sql: str, params: Any = ..., *, doing: str = ...) -> Any: ...
    def _owned(self, scope_path: str, node_id: str) -> StoredNode | None: ...
    def owned_node(self, scope: Any, node_id: str) -> StoredNode | None: ...
    def transaction(self) -> AbstractContextManager[None]: ...
    def retract_node(self, scope: Any, node_id: str, *, reason: str = ...) -> bool: ...
    def _relabelled_in_index(self, node: StoredNode, before: tuple[str, str]) -> None: ...
    def redact_secrets(self, text: str) -> str: ...
    def _statement(
        self,
        scope: Any,
        node_id: str,
        *,
        importance: float | None,
        salience: float | None,
        turn: int | None,
        mentions: int = ...,
        like: StoredNode | None = ...,
    ) -> StoredNode: ...
    def _add_revision(
        self,
        node: StoredNode,
        kind: str,
        text: str,
        properties: dict[str, Any],
        reason: str,
        turn: int | None,
        stated_at: str,
        source: str = ...,
    ) -> None: ...
    def restate(
        self,
        scope: Any,
        node_id: str,
        *,
        text: str | None = ...,
        reason: str = ...,
        turn: int | None = ...,
        importance: float | None = ...,
        salience: float | None = ...,
        source: str = ...,
    ) -> StoredNode: ...


class FactHistory:
    """Restatements, updates, merges and the history they leave (methods of the store)."""

    def history(self: _Store, scope: Any, node_id: str) -> list[Revision]:
        """Every text the row ``scope`` owns under ``node_id`` has held or been restated in, oldest first,
        its current text last (kind ``current``); ``[]`` when ``scope`` owns no such row. A retracted
        row's history ends with its last text all the same."""
        node = self.owned_node(scope, node_id)
        if node is None:
            return []
        entries = []
        if self.schema_version >= 2:
            rows = self._rows(
                "SELECT kind, text, reason, turn, stated_at, source, properties FROM revisions "
                "WHERE scope_path = ? AND node_id = ? ORDER BY seq",
                (node.scope_path, node.id),
            )
            entries = [
                Revision(kind, text, reason, turn, stated_at, source, properties_from(props, "a revision"))
                for kind, text, reason, turn, stated_at, source, props in rows
            ]
        properties = {k: v for k, v in node.properties.items() if k != SCOPE_PATH_KEY}
        entries.append(Revision(CURRENT, node.label, "", node.last_turn, node.last_stated, "", properties))
        return entries

    def _statement(
        self: _Store,
        scope: Any,
        node_id: str,
        *,
        importance: float | None,
        salience: float | None,
        turn: int | None,
        mentions: int = 1,
        like: StoredNode | None = None,
    ) -> StoredNode:
        """One more statement of the row ``scope`` owns (inside the caller's transaction): ``mentions``
        more, the higher importance and salience kept, ``last_stated`` moved to now and ``stated`` to the
        next count; or, with ``like`` (a row folded into it), to the later of the two rows' statements.
        The row as it was before."""
        scope_path = _text("scope path", scope.scope_path)
        node = self._owned(scope_path, _text("node id", node_id))
        if node is None:
            raise InvalidInputError(f"the write scope owns no node {redact(node_id, 40)!r}")
        now = _now()
        if like is None:
            stated, stated_sql, last_stated = None, NEXT_STATED, now
        else:
            later = like if like.stated >= node.stated else node
            stated, stated_sql, last_stated, turn = later.stated, "?", later.last_stated, later.last_turn
        self._execute(
            "UPDATE nodes SET mentions = mentions + ?, updated_at = ?, last_stated = ?, "
            f"last_turn = coalesce(?, last_turn), stated = {stated_sql}, "
            "importance = max(importance, coalesce(?, importance)), "
            "salience = max(salience, coalesce(?, salience)) WHERE scope_path = ? AND id = ?",
            (
                mentions,
                now,
                last_stated,
                _turn(turn),
                *(() if stated is None else (stated,)),
                importance,
                salience,
                scope_path,
                node.id,
            ),
        )
        return node

    def _add_revision(
        self: _Store,
        node: StoredNode,
        kind: str,
        text: str,
        properties: dict[str, Any],
        reason: str,
        turn: int | None,
        stated_at: str,
        source: str = "",
    ) -> None:
        self._execute(
            "INSERT INTO revisions (scope_path, node_id, kind, text, properties, reason, turn, stated_at, "
            "source) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                node.scope_path,
                node.id,
                kind,
                self.redact_secrets(_text("text", text)),
                self.redact_secrets(_properties_json(properties)),
                self.redact_secrets(_text("reason", reason)),
                turn,
                stated_at,
                _text("source", source),
            ),
        )

    def restate(
        self: _Store,
        scope: Any,
        node_id: str,
        *,
        text: str | None = None,
        reason: str = "",
        turn: int | None = None,
        importance: float | None = None,
        salience: float | None = None,
        source: str = "",
    ) -> StoredNode:
        """A statement that restates the row ``scope`` owns (:data:`memdedup.facts.RESTATED`): the current
        text stays; one more mention, the higher importance and salience, ``last_stated`` moves. A ``text``
        that differs from the current one is kept in the row's history (``restated``, with ``reason``)."""
        with self.transaction():
            before = self._statement(scope, node_id, importance=importance, salience=salience, turn=turn)
            if text is not None and text != before.label:
                self._add_revision(before, RESTATED, text, {}, reason, _turn(turn), _now(), source)
            node = self._owned(before.scope_path, before.id)
        assert node is not None
        return node

    def record_mention(
        self: _Store,
        scope: Any,
        node_id: str,
        *,
        importance: float | None = None,
        salience: float | None = None,
    ) -> StoredNode:
        """A restatement of the row ``scope`` owns that keeps its text (:meth:`restate` without a text)."""
        return self.restate(scope, node_id, importance=importance, salience=salience)

    def update_text(
        self: _Store,
        scope: Any,
        node_id: str,
        *,
        text: str,
        properties: dict[str, Any] | None = None,
        reason: str = "",
        turn: int | None = None,
        importance: float | None = None,
        salience: float | None = None,
        source: str = "",
    ) -> StoredNode:
        """A statement that updates the row ``scope`` owns (:data:`memdedup.facts.UPDATED`): ``text``
        becomes its current text (and ``properties`` its properties, when given); the previous text is
        kept as a revision (``updated``, with ``reason``); one more mention, the higher importance and
        salience, ``last_stated`` moves. The row keeps its id, owner, layer, place and creation time."""
        if not str(text).strip():
            raise InvalidInputError("a node needs a non-empty label")
        new_text = self.redact_secrets(_text("label", text))
        with self.transaction():
            before = self._statement(scope, node_id, importance=importance, salience=salience, turn=turn)
            self._add_revision(
                before, UPDATED, before.label, before.properties, reason, _turn(turn), _now(), source
            )
            sets, params = "label = ?", [new_text]
            if properties is not None:
                sets += ", properties = ?"
                params.append(self.redact_secrets(_properties_json(properties)))
            self._execute(
                f"UPDATE nodes SET {sets} WHERE scope_path = ? AND id = ?",
                (*params, before.scope_path, before.id),
            )
            node = self._owned(before.scope_path, before.id)
            assert node is not None
            if not node.retracted:
                self._relabelled_in_index(node, (before.layer, before.label))
        return node

    def merge(
        self: _Store, scope: Any, node_id: str, merged_id: str, *, kind: str, reason: str
    ) -> StoredNode:
        """Fold the later row ``merged_id`` into the earlier row ``node_id`` (both owned by ``scope``), as
        ``memdedup consolidate`` does: ``kind`` ``restated`` keeps the current text (the merged text goes
        to the history when it differs); ``updated`` makes the merged text (and properties) current and
        keeps the previous one as a revision. The earlier row takes the merged row's mentions, the higher
        importance and salience and the later statement time; the merged row is retracted (never
        deleted), its reason naming the row it went into."""
        if kind not in (RESTATED, UPDATED):
            raise InvalidInputError(f"kind must be {RESTATED!r} or {UPDATED!r}, not {redact(kind, 20)!r}")
        scope_path = _text("scope path", scope.scope_path)
        with self.transaction():
            later = self._owned(scope_path, _text("node id", merged_id))
            if later is None or later.retracted:
                raise InvalidInputError(f"the scope owns no live node {redact(merged_id, 40)!r}")
            before = self._statement(
                scope,
                node_id,
                importance=later.importance,
                salience=later.salience,
                turn=later.last_turn,
                mentions=later.mentions,
                like=later,
            )
            at = later.last_stated or _now()
            if kind == RESTATED:
                if later.label != before.label:
                    self._add_revision(
                        before, RESTATED, later.label, later.properties, reason, later.last_turn, at
                    )
            else:
                self._add_revision(
                    before, UPDATED, before.label, before.properties, reason, later.last_turn, at
                )
                self._execute(
                    "UPDATE nodes SET label = ?, properties = ? WHERE scope_path = ? AND id = ?",
                    (later.label, _properties_json(later.properties), scope_path, before.id),
                )
            self.retract_node(scope, later.id, reason=f"consolidated into {before.id}: {kind} ({reason})")
            node = self._owned(scope_path, before.id)
            assert node is not None
            if kind == UPDATED:
                self._relabelled_in_index(node, (before.layer, before.label))
        return node

    def purge_history(self: _Store, scope: Any, node_id: str) -> int:
        """Delete the revisions of the row ``scope`` owns (its current text stays): for a memory whose earlier
        texts must not be kept (a secret written before it was scrubbed, a fact a user asked to forget).
        The deleted text is zeroed in the file (``secure_delete``). The number of revisions deleted."""
        scope_path = _text("scope path", scope.scope_path)
        with self.transaction():
            cursor = self._execute(
                "DELETE FROM revisions WHERE scope_path = ? AND node_id = ?",
                (scope_path, _text("node id", node_id)),
            )
        return int(cursor.rowcount)
