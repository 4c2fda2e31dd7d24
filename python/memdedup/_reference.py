"""The pure-Python reference: the oracle the parity tests compare against, and the fallback.

Everything here is written as plainly as the contract reads (stdlib ``difflib`` and ``str``
methods), because its only job is to be obviously right. Each function mirrors the Rust core's
(``memdedup._core``) function of the same name, with the same arguments and the same answers, so
``memdedup._backend.impl`` is either module and callers never branch on which;
``MEMDEDUP_IMPLEMENTATION=python`` runs the whole package on this module. :func:`find_canonical_node`
is the oracle of :func:`memdedup.dedup.find_canonical_node` (the seed's lookup, verbatim in behaviour).

Shared rules live with their owners, not here: scope paths and ownership in :mod:`memdedup.scope`.
"""

from __future__ import annotations

import heapq
import logging
import re
import sys
import unicodedata
from array import array
from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import Any

from memdedup._rules import (
    DEDUP_PREFIX_LEN,
    DEDUP_QUERY_LIMIT,
    DEDUP_SIMILARITY_THRESHOLD,
    DEDUP_SUBSUME_MIN_CHARS,
    TERMINAL_PUNCTUATION,
)
from memdedup.errors import InputTypeError, InvalidInputError
from memdedup.missing import is_missing
from memdedup.scope import stored_scope_path

logger = logging.getLogger("memdedup.dedup")


def normalise_label(label: Any) -> str:
    """Whitespace-collapsed, lowercased, terminal-punctuation-stripped form."""
    return " ".join(str(label or "").lower().split()).rstrip(TERMINAL_PUNCTUATION)


def ratio(a: str, b: str, *, autojunk: bool = True) -> float:
    return SequenceMatcher(None, a, b, autojunk=autojunk).ratio()


def quick_ratio(a: str, b: str, *, autojunk: bool = True) -> float:
    return SequenceMatcher(None, a, b, autojunk=autojunk).quick_ratio()


def real_quick_ratio(a: str, b: str, *, autojunk: bool = True) -> float:
    return SequenceMatcher(None, a, b, autojunk=autojunk).real_quick_ratio()


def matching_blocks(a: str, b: str, *, autojunk: bool = True) -> list[tuple[int, int, int]]:
    return [(m.a, m.b, m.size) for m in SequenceMatcher(None, a, b, autojunk=autojunk).get_matching_blocks()]


def _label(label: Any, missing: bool) -> Any:
    """A label as the matching functions read it: with ``missing`` (the extended API's rule), a missing
    value (:func:`memdedup.missing.is_missing`) is the empty label; without, the seed's ``str(label or
    "")`` reads a float NaN as ``"nan"``."""
    return "" if missing and not isinstance(label, str) and is_missing(label) else label


def _contract_match(stored: Any, incoming: Any, threshold: float, min_chars: int) -> bool:
    a, b = normalise_label(stored), normalise_label(incoming)
    if not a or not b:
        return False
    if SequenceMatcher(None, a, b).ratio() >= threshold:
        return True
    shorter, longer = (a, b) if len(a) <= len(b) else (b, a)
    return len(shorter) >= min_chars and shorter in longer


def labels_match(
    stored: Any,
    incoming: Any,
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    guards: Any = None,
    missing: bool = True,
) -> bool:
    """Ratio (stored first) >= threshold, or the shorter normalised label (>= min_chars) is in the longer.

    ``guards`` (off by default): also require that no enabled guard blocks the pair (:func:`_guards_allow`,
    this module's own statement of :mod:`memdedup.guards`); the guards are parsed (and refused) even when
    the labels differ, as the core does. ``missing``: see :func:`_label`.
    """
    matched = _contract_match(_label(stored, missing), _label(incoming, missing), threshold, min_chars)
    if guards is None:
        return matched
    value, negation = _parse_guards(guards)
    return matched and _guards_allow(stored, incoming, value, negation)


# --------------------------------------------------------------------------------------------------
# The guards, restated plainly from memdedup.guards' docstring (the rules the core's labels_match applies
# through that module): the oracle does not import what it checks. tests/test_reference_guards.py holds
# the two to the same answers.
# --------------------------------------------------------------------------------------------------
_GUARD_TOKEN = re.compile(r"[^\W_]+(?:[._-][^\W_]+)*")
_GUARD_WORD = re.compile(r"[^\W_]+(?:['._-][^\W_]+)*")
_NEGATIONS = {"not", "no", "never", "cannot", "without", "none", "nobody", "nothing", "neither", "nor"}
_NEGATIONS.add("nowhere")
_READ_AS_NOT = {"cannot", "dont", "doesnt", "didnt", "isnt", "arent", "wasnt", "werent", "hasnt", "havent"}
_READ_AS_NOT |= {"hadnt", "shouldnt", "wouldnt", "couldnt", "mustnt", "neednt"}


def _parse_guards(guards: Any) -> tuple[bool, bool]:
    """``(value, negation)`` from a ``memdedup.guards.Guards`` (read by its fields), a string (``"none"``,
    ``"all"``, or names joined by commas) or an iterable of names; refused as ``as_guards`` refuses."""
    if type(guards).__name__ == "Guards" and type(guards).__module__ == "memdedup.guards":
        return bool(guards.value), bool(guards.negation)
    if not isinstance(guards, str):
        try:
            guards = ",".join(str(name) for name in guards)
        except TypeError:
            raise InputTypeError(
                f"guards must be a Guards, a string or None, not {type(guards).__name__}"
            ) from None
    names = {part.strip().lower() for part in guards.split(",")} - {""}
    if names <= {"none"}:
        return False, False
    if names == {"all"}:
        return True, True
    unknown = names - {"value", "negation"}
    if unknown:
        raise InvalidInputError(
            f"unknown guard {sorted(unknown)[0]!r}: use none, all, value, negation or value,negation"
        )
    return "value" in names, "negation" in names


def _is_value_token(token: str, first: bool) -> bool:
    return (
        any(ch.isdigit() for ch in token)
        or any(ch.isupper() for ch in token[1:])
        or "_" in token
        or (not first and len(token) >= 2 and token[0].isupper())
    )


def _folded(token: str) -> str:
    decomposed = unicodedata.normalize("NFKD", token.casefold())
    folded = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return folded[:-1] if len(folded) > 3 and folded.isalpha() and folded.endswith("s") else folded


def _lacked_values(a: str, b: str) -> list[str]:
    """The value tokens of ``a`` that no token of ``b`` has the folded form of."""
    folded_b = {_folded(t) for t in _GUARD_TOKEN.findall(b)}
    tokens_a = _GUARD_TOKEN.findall(a)
    return [t for k, t in enumerate(tokens_a) if _is_value_token(t, k == 0) and _folded(t) not in folded_b]


def _negations(label: str) -> set[str]:
    text = label.replace("\u2019", "'").replace("\u2018", "'").replace("\u02bc", "'").casefold()
    found = set()
    for word in _GUARD_WORD.findall(text):
        if word in _READ_AS_NOT or word.endswith("n't"):
            found.add("not")
        elif word in _NEGATIONS:
            found.add(word)
    return found


def _guards_allow(stored: Any, incoming: Any, value: bool, negation: bool) -> bool:
    """False when an enabled guard blocks the pair: the value guard when each side has a value token the
    other lacks; the negation guard when their negation words differ. Both read the raw labels."""
    a, b = str(stored or ""), str(incoming or "")
    if value and _lacked_values(a, b) and _lacked_values(b, a):
        return False
    return not (negation and _negations(a) != _negations(b))


def match_reason(
    stored: Any,
    incoming: Any,
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    missing: bool = True,
) -> tuple[str, float] | None:
    """Why two labels match: ``("ratio", score)`` or ``("containment", score)``; None when they do not.

    The ratio rule is tried first, as in :func:`labels_match`; the score is always the exact ratio of the
    normalised labels (stored first).
    """
    a, b = normalise_label(_label(stored, missing)), normalise_label(_label(incoming, missing))
    if not a or not b:
        return None
    score = SequenceMatcher(None, a, b).ratio()
    if score >= threshold:
        return "ratio", score
    shorter, longer = (a, b) if len(a) <= len(b) else (b, a)
    if len(shorter) >= min_chars and shorter in longer:
        return "containment", score
    return None


def match_first(
    incoming: Any,
    candidates: Sequence[Any],
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    missing: bool = True,
) -> int | None:
    """Index of the first candidate that ``labels_match(candidate, incoming)`` accepts."""
    for index, candidate in enumerate(candidates):
        if labels_match(candidate, incoming, threshold=threshold, min_chars=min_chars, missing=missing):
            return index
    return None


def match_mask(
    incoming: Any,
    candidates: Sequence[Any],
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    missing: bool = True,
) -> list[bool]:
    """``labels_match(candidate, incoming)`` for every candidate, in order."""
    return [
        labels_match(c, incoming, threshold=threshold, min_chars=min_chars, missing=missing)
        for c in candidates
    ]


async def find_canonical_node(
    graph: Any,
    scope: Any,
    *,
    layer: Any,
    label: str,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    requested_id: str | None = None,
) -> Any:
    """The seed's write-time lookup, verbatim in behaviour: the oracle for ``memdedup.dedup``."""
    label = (label or "").strip()
    if not label or graph is None or not hasattr(graph, "query_nodes"):
        return None
    try:
        candidates = list(await graph.query_nodes(scope, layer=layer, label_prefix=label[:DEDUP_PREFIX_LEN]))[
            :DEDUP_QUERY_LIMIT
        ]
        if requested_id:
            for node in candidates:
                if str(getattr(node, "id", "")) == str(requested_id):
                    return node
        write_path = scope.scope_path
        for node in candidates:
            node_label = getattr(node, "label", "") or ""
            if not labels_match(node_label, label, threshold=threshold, missing=False):
                continue
            stored = stored_scope_path(getattr(node, "properties", None), getattr(node, "tenant_id", ""))
            if stored != write_path:
                continue
            return node
    except Exception:
        logger.debug("dedup: lookup failed, skipping dedup", exc_info=True)
    return None


def match_pairs(
    stored: Sequence[Any],
    incoming: Sequence[Any],
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    missing: bool = True,
) -> list[bool]:
    stored, incoming = list(stored), list(incoming)
    if len(stored) != len(incoming):
        raise ValueError(f"stored has {len(stored)} labels but incoming has {len(incoming)}")
    return [
        labels_match(a, b, threshold=threshold, min_chars=min_chars, missing=missing)
        for a, b in zip(stored, incoming, strict=True)
    ]


def pair_reasons(
    labels: Sequence[Any],
    pairs: Sequence[tuple[int, int]],
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
) -> tuple[list[str | None], list[float]]:
    """For each ``(i, j)``: why ``labels[i]`` (stored) and ``labels[j]`` (incoming) match (None when they
    do not), and the exact ratio of the normalised labels (0.0 when either is empty)."""
    labels = list(labels)
    reasons: list[str | None] = []
    scores: list[float] = []
    for i, j in pairs:
        if not (0 <= i < len(labels) and 0 <= j < len(labels)):
            raise ValueError(f"pair ({i}, {j}) is out of range")
        a, b = normalise_label(labels[i]), normalise_label(labels[j])
        decided = match_reason(labels[i], labels[j], threshold=threshold, min_chars=min_chars)
        reasons.append(decided[0] if decided else None)
        scores.append(SequenceMatcher(None, a, b).ratio() if a and b else 0.0)
    return reasons, scores


def cdist(
    queries: Sequence[Any],
    choices: Sequence[Any],
    *,
    autojunk: bool = True,
    cutoff: float = 0.0,
    normalise: bool = False,
    workers: int = 1,
) -> bytearray:
    """The ``len(queries) x len(choices)`` matrix of ``ratio(query, choice)`` (0.0 below ``cutoff``), row
    by row, as native float64 bytes in a bytearray (writable, as the core's). ``workers`` is accepted as
    the core takes it and ignored: the reference computes on the calling thread."""
    out = array("d")
    for query in queries:
        q = normalise_label(query) if normalise else query
        for choice in choices:
            c = normalise_label(choice) if normalise else choice
            score = ratio(q, c, autojunk=autojunk)
            out.append(score if score >= cutoff else 0.0)
    return bytearray(out.tobytes())


def replay(
    labels: Sequence[Any],
    partitions: Sequence[int],
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    prefix: str = "raw",
    prefix_len: int = DEDUP_PREFIX_LEN,
    query_limit: int = DEDUP_QUERY_LIMIT,
) -> tuple[list[int], list[str], list[float]]:
    """Sequential ``find_canonical_node`` per label against a store of canonicals, written plainly."""
    if prefix not in {"raw", "normalised", "normalized", "none"}:
        raise ValueError(f"prefix must be 'raw', 'normalised' or 'none', not {prefix!r}")
    stores: dict[int, list[int]] = {}
    canonical, outcome, score = [], [], []
    texts = [str(label or "") for label in labels]
    for i, (text, part) in enumerate(zip(texts, partitions, strict=True)):
        stripped = text.strip()
        if not stripped:
            canonical.append(i)
            outcome.append("empty")
            score.append(float("nan"))
            continue
        key = stripped if prefix == "raw" else normalise_label(text)
        store = stores.setdefault(part, [])

        def key_of(j: int) -> str:
            return texts[j].strip() if prefix == "raw" else normalise_label(texts[j])

        if prefix == "none":
            candidates = list(store)  # no gate: every earlier canonical, oldest first
        else:
            candidates = [j for j in store if key_of(j).startswith(key[:prefix_len])][:query_limit]
        hit = next(
            (j for j in candidates if labels_match(texts[j], text, threshold=threshold, min_chars=min_chars)),
            None,
        )
        if hit is None:
            store.append(i)
            canonical.append(i)
            outcome.append("new")
            score.append(float("nan"))
        else:
            reason = match_reason(texts[hit], text, threshold=threshold, min_chars=min_chars)
            assert reason is not None
            canonical.append(hit)
            outcome.append(reason[0])
            score.append(reason[1])
    return canonical, outcome, score


def join(
    labels: Sequence[Any],
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
) -> list[tuple[int, int]]:
    """Every pair ``(i, j)``, ``i < j``, with ``labels_match(labels[i], labels[j])``: brute force."""
    labels = list(labels)
    return [
        (i, j)
        for i in range(len(labels))
        for j in range(i + 1, len(labels))
        if labels_match(labels[i], labels[j], threshold=threshold, min_chars=min_chars)
    ]


def join_groups(
    labels: Sequence[Any],
    *,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
) -> tuple[list[int], list[tuple[int, int]]]:
    """The join on groups of labels identical after normalisation, by brute force: each label's group
    (numbered in order of first occurrence), and every ordered group pair ``(g, h)``, sorted, whose
    labels match with ``g``'s stored, when some label of ``g`` precedes some label of ``h`` (for
    ``(g, g)``: ``g`` has two or more labels)."""
    labels = list(labels)
    ids: dict[str, int] = {}
    group = [ids.setdefault(normalise_label(_label(label, True)), len(ids)) for label in labels]
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for k, g in enumerate(group):
        first.setdefault(g, k)
        last[g] = k
    size = [0] * len(ids)
    for g in group:
        size[g] += 1
    pairs = []
    for g in range(len(ids)):
        for h in range(len(ids)):
            realised = size[g] >= 2 if g == h else first[g] < last[h]
            stored, incoming = labels[first[g]], labels[first[h]]
            if realised and labels_match(stored, incoming, threshold=threshold, min_chars=min_chars):
                pairs.append((g, h))
    return group, pairs


def _u32s(values: Any) -> list[int]:
    """Native-endian u32s from ``bytes`` (as the core takes them), or a sequence of ints."""
    if isinstance(values, bytes):
        return list(array("I", values))
    return [int(v) for v in values]


def _u32_pairs(values: Any) -> list[tuple[int, int]]:
    if isinstance(values, bytes):
        flat = _u32s(values)
        return list(zip(flat[0::2], flat[1::2], strict=True))
    return [(int(a), int(b)) for a, b in values]


def expand_groups(group_of_label: Any, group_pairs: Any) -> list[tuple[int, int]]:
    """Every label pair ``(i, j)``, ``i < j``, with ``(group[i], group[j])`` among the group pairs,
    sorted: the join the groups stand for."""
    group, pairs = _u32s(group_of_label), set(_u32_pairs(group_pairs))
    ngroups = max(group, default=-1) + 1
    for g, h in pairs:
        if not (g < ngroups and h < ngroups):
            raise ValueError(f"group pair ({g}, {h}) is out of range for {ngroups} groups")
    n = len(group)
    return [(i, j) for i in range(n) for j in range(i + 1, n) if (group[i], group[j]) in pairs]


def group_clusters(
    group_of_label: Any, group_pairs: Any, *, mode: str = "canonical"
) -> tuple[list[int], list[int | None]]:
    """:func:`clusters` of the expanded groups, where a member linked into its component only through
    later labels has its smallest partner as ``via``."""
    pairs = expand_groups(group_of_label, group_pairs)
    n = len(_u32s(group_of_label))
    canonical, via = clusters(n, pairs, mode=mode)
    for j in range(n):
        if canonical[j] != j and via[j] is None:
            via[j] = min(b if a == j else a for a, b in pairs if j in (a, b))
    return canonical, via


def clusters(
    n: int, pairs: Sequence[tuple[int, int]], *, mode: str = "canonical"
) -> tuple[list[int], list[int | None]]:
    earlier: list[list[int]] = [[] for _ in range(n)]
    for i, j in pairs:
        if 0 <= i < j < n:
            earlier[j].append(i)
    canonical = list(range(n))
    via: list[int | None] = [None] * n
    if mode == "canonical":
        for j in range(n):
            hit = next((i for i in sorted(earlier[j]) if canonical[i] == i), None)
            if hit is not None:
                canonical[j], via[j] = hit, hit
    elif mode == "components":
        parent = list(range(n))

        def find(x: int) -> int:
            while parent[x] != x:
                x = parent[x]
            return x

        for i, j in pairs:
            ri, rj = find(i), find(j)
            if ri != rj:
                parent[max(ri, rj)] = min(ri, rj)
        for j in range(n):
            canonical[j] = find(j)
            via[j] = min(earlier[j]) if earlier[j] and canonical[j] != j else None
    else:
        raise ValueError(f"mode must be 'canonical' or 'components', not {mode!r}")
    return canonical, via


class LabelIndex:
    """The core's ``LabelIndex``, by brute force: a query decides every live label of its partition, in
    insertion order, with :func:`match_reason`. Labels are numbered by insertion (0, 1, 2, ...: never
    reused) and live in slots, which are reused lowest first and given back when no live slot lies
    above them, as the core does. ``min_chars`` is the value the core tunes its containment filter for;
    answers never depend on it."""

    def __init__(self, min_chars: int = DEDUP_SUBSUME_MIN_CHARS) -> None:
        if not isinstance(min_chars, int) or isinstance(min_chars, bool) or min_chars < 0:
            raise ValueError(f"min_chars must be a non-negative int, not {min_chars!r}")
        self._entries: dict[int, tuple[int, Any]] = {}  # number -> (partition, label), in insertion order
        self._slot_of: dict[int, int] = {}
        self._slots: list[int | None] = []  # slot -> the number living there
        self._free: list[int] = []  # a heap of the free slots below len(self._slots)
        self._next = 0

    @staticmethod
    def _number(number: Any) -> int | None:
        return number if isinstance(number, int) and not isinstance(number, bool) and number >= 0 else None

    def _take_slot(self, number: int) -> None:
        slot = heapq.heappop(self._free) if self._free else len(self._slots)
        if slot == len(self._slots):
            self._slots.append(number)
        else:
            self._slots[slot] = number
        self._slot_of[number] = slot

    def insert(self, label: Any, partition: int) -> int:
        normalise_label(_label(label, True))  # refuses what the core refuses, before anything is stored
        number = self._next
        self._entries[number] = (int(partition), _label(label, True))
        self._take_slot(number)
        self._next += 1
        return number

    def insert_many(self, labels: Sequence[Any], partitions: Sequence[int]) -> int:
        labels, partitions = list(labels), list(partitions)
        if len(labels) != len(partitions):
            raise ValueError(f"{len(labels)} labels but {len(partitions)} partitions")
        for label in labels:
            normalise_label(_label(label, True))
        first = self._next
        for label, partition in zip(labels, partitions, strict=True):
            self.insert(label, partition)
        return first

    def relabel(self, number: Any, label: Any) -> bool:
        incoming = _label(label, True)
        normalise_label(incoming)
        key = self._number(number)
        if key is None or key not in self._entries:
            return False
        self._entries[key] = (self._entries[key][0], incoming)
        return True

    def remove(self, number: Any) -> bool:
        key = self._number(number)
        if key is None or self._entries.pop(key, None) is None:
            return False
        slot = self._slot_of.pop(key)
        self._slots[slot] = None
        if not self._entries:  # empty: every table back to nothing, as the core does
            self._slots, self._free = [], []
            return True
        if slot == len(self._slots) - 1:
            while self._slots and self._slots[-1] is None:
                self._slots.pop()
            self._free = [free for free in self._free if free < len(self._slots)]
            heapq.heapify(self._free)
        else:
            heapq.heappush(self._free, slot)
        return True

    def query(
        self,
        label: Any,
        partition: int,
        *,
        threshold: float = DEDUP_SIMILARITY_THRESHOLD,
        min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
        first: bool = False,
        slots: bool = False,
    ) -> list[Any]:
        incoming = _label(label, True)
        normalise_label(incoming)
        found = []
        for number, (part, stored) in self._entries.items():
            if part != partition:
                continue
            reason = match_reason(stored, incoming, threshold=threshold, min_chars=min_chars)
            if reason is not None:
                found.append((number, reason[0], reason[1]))
                if first:
                    break
        if slots:
            return [
                [n for n, _, _ in found],
                [self._slot_of[n] for n, _, _ in found],
                [r for _, r, _ in found],
                [v for _, _, v in found],
            ]
        return found

    def slot_of(self, number: Any) -> int | None:
        key = self._number(number)
        return None if key is None else self._slot_of.get(key)

    def slots_of(self, first: int, count: int) -> list[int]:
        return [self._slot_of.get(n, 2**32 - 1) for n in range(first, first + count)]

    def partition_of(self, number: Any) -> int | None:
        key = self._number(number)
        entry = None if key is None else self._entries.get(key)
        return None if entry is None else entry[0]

    def partition_len(self, partition: int) -> int:
        return sum(1 for part, _ in self._entries.values() if part == int(partition))

    def stats(self) -> list[tuple[str, int]]:
        return [
            ("labels", len(self._entries)),
            ("partitions", len({part for part, _ in self._entries.values()})),
            ("bytes", self.memory_bytes()),
            ("tombstones", 0),
            ("slots", len(self._slots)),
            ("free_slots", len(self._free)),
            ("inserted", self._next),
        ]

    def __contains__(self, number: object) -> bool:
        key = self._number(number)
        return key is not None and key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def memory_bytes(self) -> int:
        return sys.getsizeof(self._entries) + sum(sys.getsizeof(v[1]) for v in self._entries.values())
