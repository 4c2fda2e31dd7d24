"""The SQLite memory store: one file holding memories, their history and the write ledger.

:class:`SQLiteGraphStore` (:mod:`memdedup.store.graph`) is the store, its facts' history
(:mod:`memdedup.store.history`) a part of it; :mod:`memdedup.store.schema` its tables and their migration;
:mod:`memdedup.store.opening` what opening a file checks; :mod:`memdedup.store.records` what it reads back;
:mod:`memdedup.store.values` what a value must be to be stored.
"""

from __future__ import annotations

from memdedup.store.graph import SQLiteGraphStore, prefix_successor
from memdedup.store.records import (
    CURRENT,
    LedgerEntry,
    Revision,
    StoredNode,
    StoreError,
    StoreIntegrityWarning,
)
from memdedup.store.schema import APPLICATION_ID, SCHEMA_VERSION

__all__ = [
    "APPLICATION_ID",
    "CURRENT",
    "SCHEMA_VERSION",
    "LedgerEntry",
    "Revision",
    "SQLiteGraphStore",
    "StoreError",
    "StoreIntegrityWarning",
    "StoredNode",
    "prefix_successor",
]
