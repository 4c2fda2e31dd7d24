"""Large-batch dedup: one-vs-many, pair decisions, replay of a store's writes, all-pairs join, clusters.

Every function gives, for every pair it decides, the answer :func:`memdedup.labels_match` gives (the
earlier label is the stored one). The decisions run in the Rust core without the GIL (reading the Python
labels holds it), in parallel across cores (rayon; ``RAYON_NUM_THREADS`` sizes the pool); thread counts
never change a result. Under ``MEMDEDUP_IMPLEMENTATION=python`` the same functions run on the pure-Python
reference (``memdedup._backend.impl`` is either, with the same functions).

Scopes and layers are hard partitions, compared by type and value: ``1``, ``1.0``, ``True`` and ``"1"``
are four partitions (they are equal, and hash alike, in a ``dict``), tuples are compared element by
element the same way, every NaN is one partition, and an unhashable value is refused
(:class:`~memdedup.errors.InputTypeError`). In a file (:func:`read_label_table`) a JSON value keeps its
type: ``"scope": 1`` is not ``"scope": "1"``, and ``null``, ``""`` and a missing field are three
partitions. Nothing is ever merged because two values look alike.

Missing labels (``None``, NaN, ``pd.NA``, a pandas string column's missing values) are empty labels
everywhere in this module (:mod:`memdedup.missing`): never a match, reason ``"empty"`` in a replay, a
skipped choice in :func:`extract`. A pandas Series or a numpy array is masked at once, not item by item.
One exception, for speed: :func:`match_pairs` passes a plain ``list`` to the core unscanned, so a float
NaN or ``pd.NA`` inside a list is read by the core's own coercion (``str(s or "")``: NaN is ``"nan"``)
until the core treats missing values as empty itself.

The one-vs-many functions follow rapidfuzz's ``process`` conventions: ``extract``, ``extractOne`` and
``cdist`` take ``score_cutoff``, ``limit`` and ``workers``, return ``(choice, score, key)`` tuples, and
skip missing choices; but scores are difflib ratios on the 0-1 scale (rapidfuzz's are 0-100), so a
``score_cutoff`` above 1 is an error that says so.

The package keeps one concept per file: ``_pairs`` (pair decisions), ``_process`` (rapidfuzz's
one-vs-many shapes), ``_replay`` (the write-time replay, guarded or not), ``_join`` (the exact all-pairs
join), ``_clusters`` and ``_table`` (what ``memdedup dedup`` runs); the shared rules (thresholds,
partition keys) live in :mod:`memdedup._rules`. Import the public names from here.
"""

from __future__ import annotations

from memdedup import _rules
from memdedup._backend import impl as _impl  # noqa: F401  (the backend in use, for tests that check it)
from memdedup._rules import check_min_chars, partition_token
from memdedup.batch._clusters import ClusterResult, clusters
from memdedup.batch._join import JoinGroups, join
from memdedup.batch._pairs import match_first, match_pairs, match_reason
from memdedup.batch._process import MAX_WORKERS, cdist, extract, extractOne
from memdedup.batch._replay import ReplayResult, replay, replay_guarded
from memdedup.batch._table import OUTPUT_COLUMNS, DedupRun, dedup_table
from memdedup.tables import MISSING, JSONValue, LabelTable, read_label_table

__all__ = [
    "MAX_WORKERS",
    "MISSING",
    "OUTPUT_COLUMNS",
    "ClusterResult",
    "DedupRun",
    "JSONValue",
    "JoinGroups",
    "LabelTable",
    "ReplayResult",
    "cdist",
    "check_min_chars",
    "clusters",
    "dedup_table",
    "extract",
    "extractOne",
    "join",
    "match_first",
    "match_pairs",
    "match_reason",
    "partition_token",
    "read_label_table",
    "replay",
    "replay_guarded",
]

# memdedup.dask still reaches these two through this module; new code imports them from memdedup._rules.
_comparable = _rules.comparable
_check_threshold = _rules.check_threshold
