"""Type stubs for the compiled Rust extension (rust/python/); checked against it by
``python -m mypy.stubtest memdedup._core``.

``threshold``/``cutoff`` and ``min_chars`` take any number Python can compare with a float (an
int) and decide as Python's ``>=`` does (int, float, bool, Fraction, Decimal, numpy scalars);
labels are coerced as ``str(label or "")``.
"""

from collections.abc import Callable, Iterable, Sequence
from typing import Any, SupportsFloat, SupportsIndex, TypeAlias, final

#: A threshold or cutoff: anything Python compares with a float.
_Real: TypeAlias = SupportsFloat | SupportsIndex | Any
#: A min_chars: anything Python compares with an int.
_Count: TypeAlias = SupportsIndex | SupportsFloat | Any

__all__ = [
    "Codes",
    "LabelIndex",
    "SequenceIndex",
    "__version__",
    "cdist",
    "close_matches",
    "clusters",
    "credential_key_class",
    "credential_key_kind",
    "credential_key_words",
    "credential_value_kept",
    "credential_value_random",
    "expand_groups",
    "group_clusters",
    "join",
    "join_groups",
    "labels_match",
    "match_first",
    "match_mask",
    "match_pairs",
    "match_reason",
    "matching_blocks",
    "normalise_label",
    "pair_reasons",
    "quick_ratio",
    "ratio",
    "real_quick_ratio",
    "replay",
    "scan_secrets",
    "secret_bits",
    "secret_rule_widths",
    "secret_spans",
]

__version__: str

def normalise_label(label: Any) -> str: ...
def ratio(a: str, b: str, *, autojunk: bool = True) -> float: ...
def quick_ratio(a: str, b: str, *, autojunk: bool = True) -> float: ...
def real_quick_ratio(a: str, b: str, *, autojunk: bool = True) -> float: ...
def matching_blocks(a: str, b: str, *, autojunk: bool = True) -> list[tuple[int, int, int]]: ...
def labels_match(
    stored: Any,
    incoming: Any,
    *,
    threshold: _Real = 0.85,
    min_chars: _Count = 16,
    guards: Any = None,
    missing: bool = True,
) -> bool: ...
def match_reason(
    stored: Any, incoming: Any, *, threshold: _Real = 0.85, min_chars: _Count = 16, missing: bool = True
) -> tuple[str, float] | None: ...
def match_first(
    incoming: Any,
    candidates: Iterable[Any],
    *,
    threshold: _Real = 0.85,
    min_chars: _Count = 16,
    missing: bool = True,
) -> int | None: ...
def match_mask(
    incoming: Any,
    candidates: Iterable[Any],
    *,
    threshold: _Real = 0.85,
    min_chars: _Count = 16,
    missing: bool = True,
) -> list[bool]: ...
def close_matches(
    word: str, possibilities: Iterable[Any], cutoff: _Real, *, autojunk: bool = True
) -> list[tuple[float, int]] | None:
    """``(ratio, index)`` of each possibility reaching ``cutoff``; None if one is not an exact ``str``."""

def match_pairs(
    stored: Iterable[Any],
    incoming: Iterable[Any],
    *,
    threshold: _Real = 0.85,
    min_chars: _Count = 16,
    missing: bool = True,
) -> bytes:
    """One byte per pair: 1 where ``labels_match(stored[k], incoming[k])``, else 0. ``missing``: a missing
    value (None, NaN, ``pd.NA``) is the empty label; False reads labels as the seed's ``str(label or "")``."""

def cdist(
    queries: Iterable[Any],
    choices: Iterable[Any],
    *,
    autojunk: bool = True,
    cutoff: _Real = 0.0,
    normalise: bool = False,
    workers: int = 1,
) -> bytearray:
    """The ratio matrix, row-major, as native-endian float64s (cells below ``cutoff`` are 0.0).
    ``workers``: 1 computes on the calling thread, -1 on every core, N (at most 1024) on a pool of N
    threads built for the call."""

def replay(
    labels: Iterable[Any],
    partitions: Iterable[int],
    *,
    threshold: _Real = 0.85,
    min_chars: _Count = 16,
    prefix: str = "raw",
    prefix_len: SupportsIndex = 20,
    query_limit: SupportsIndex = 20,
) -> tuple[list[int], list[str], list[float]]: ...
def join(labels: Iterable[Any], *, threshold: _Real = 0.85, min_chars: _Count = 16) -> bytes:
    """Native-endian u32 pairs ``(i, j)``, ``i < j``, sorted: every pair that matches."""

def join_groups(
    labels: Iterable[Any], *, threshold: _Real = 0.85, min_chars: _Count = 16
) -> tuple[bytes, bytes]:
    """The join on groups of identical labels: each label's group and the matching ordered group
    pairs, sorted, as native-endian u32s and u32 pairs."""

def group_clusters(
    group_of_label: bytes | Iterable[int],
    group_pairs: bytes | Iterable[tuple[int, int]],
    *,
    mode: str = "canonical",
) -> tuple[list[int], list[int | None]]: ...
def expand_groups(
    group_of_label: bytes | Iterable[int], group_pairs: bytes | Iterable[tuple[int, int]]
) -> bytes:
    """Native-endian u32 pairs ``(i, j)``, ``i < j``, sorted: every label pair the groups stand for."""

def clusters(
    n: SupportsIndex, pairs: Iterable[tuple[int, int]], *, mode: str = "canonical"
) -> tuple[list[int], list[int | None]]: ...
def pair_reasons(
    labels: Iterable[Any],
    pairs: Iterable[tuple[int, int]],
    *,
    threshold: _Real = 0.85,
    min_chars: _Count = 16,
) -> tuple[list[str | None], list[float]]: ...

@final
class LabelIndex:
    """Normalised labels under insertion numbers (0, 1, 2, ...: never reused) and int partitions; exact
    queries under the match contract, oldest first. Slots (where labels live) are reused. Reads share a
    lock and run concurrently; writes wait for them."""

    def __new__(cls, min_chars: _Count = 16) -> LabelIndex: ...
    def insert(self, label: Any, partition: int) -> int: ...
    def insert_many(self, labels: Iterable[Any], partitions: Iterable[int]) -> int: ...
    def relabel(self, number: object, label: Any) -> bool: ...
    def remove(self, number: object) -> bool: ...
    def query(
        self,
        label: Any,
        partition: int,
        *,
        threshold: _Real = 0.85,
        min_chars: _Count = 16,
        first: bool = False,
        slots: bool = False,
    ) -> list[Any]: ...
    def slot_of(self, number: object) -> int | None: ...
    def slots_of(self, first: int, count: int) -> list[int]: ...
    def partition_of(self, number: object) -> int | None: ...
    def partition_len(self, partition: int) -> int: ...
    def stats(self) -> list[tuple[str, int]]: ...
    def __contains__(self, number: object, /) -> bool: ...
    def __len__(self) -> int: ...
    def memory_bytes(self) -> int: ...

@final
class Codes:
    """A first sequence coded against one ``SequenceIndex.of_elements`` index."""

    def __len__(self) -> int: ...

@final
class SequenceIndex:
    """difflib's index of a second sequence (``b2j``, ``bjunk``, ``bpopular``), built once per ``b``.

    Sequences are ``str`` (code points) or sequences of ints below 2**32 (ids the caller assigned to
    hashable elements); ``junk`` lists the element codes ``isjunk`` accepted.
    """

    def __new__(
        cls, b: str | Iterable[int] | Codes, *, autojunk: bool = True, junk: Iterable[int] | None = None
    ) -> SequenceIndex: ...
    def __len__(self) -> int: ...
    def find_longest_match(
        self,
        a: str | Iterable[int] | Codes,
        alo: SupportsIndex,
        ahi: SupportsIndex,
        blo: SupportsIndex,
        bhi: SupportsIndex,
    ) -> tuple[int, int, int]: ...
    def matching_blocks(self, a: str | Iterable[int] | Codes) -> list[tuple[int, int, int]]: ...
    def matches(self, a: str | Iterable[int] | Codes) -> int: ...
    def quick_matches(self, a: str | Iterable[int] | Codes) -> int: ...
    def opcodes(self, a: str | Iterable[int] | Codes) -> list[tuple[str, int, int, int, int]]: ...
    @staticmethod
    def of_elements(
        b: Sequence[object],
        *,
        autojunk: bool = True,
        isjunk: Callable[[Any], object] | None = None,
        junk: Iterable[int] | None = None,
    ) -> SequenceIndex | None:
        """The index of an exact list or tuple of exact strs (or of exact bytes), coded in Rust with
        dict semantics; None for any other sequence."""
    def encode(self, a: object) -> Codes | None:
        """``a`` coded against an ``of_elements`` index, or None (then code it with a dict)."""
    def elements(self) -> list[Any] | None:
        """The distinct elements of ``b`` by id (``of_elements`` indexes only)."""
    def junk(self) -> list[int]: ...
    def popular(self) -> list[int]: ...
    def b2j(self) -> list[tuple[int, list[int]]]: ...

# The credential detector (rust/scrub, bound in rust/python/scrub.rs); memdedup.scrub keeps the policy.
def scan_secrets(
    text: str, pii: bool = False, known: Sequence[tuple[str, str, str]] | None = None
) -> list[tuple[int, int, str, str]]:
    """Every credential in ``text``: ``(start, end, rule id, kind)``, code-point offsets, non-overlapping,
    sorted; ``pii`` adds the e-mail and phone rules. Every copy of a value found is found too, and every
    copy of the ``known`` values (``(value, rule id, kind)``: the other texts of the same record).
    Checks for Ctrl-C between rules."""

def credential_key_kind(name: str) -> str | None:
    """The kind (PASSWORD, PIN, TOKEN, API_KEY, SECRET) of a credential-named key, or None."""

def credential_key_words(name: str) -> list[str]:
    """The lower-cased words a key name is judged by."""

def credential_value_kept(kind: str, value: str, quoted: bool) -> bool:
    """Whether a credential-named key of ``kind`` keeps ``value`` (``quoted``: written as a string)."""

def secret_rule_widths() -> list[tuple[str, int, int | None]]:
    """Each rule's id, its pattern's longest match and its near pattern's (bytes)."""

def credential_key_class(name: str) -> tuple[str, bool] | None:
    """How a key names a credential: ``(kind, weak)``, or None (a weak key's value must look random)."""

def credential_value_random(value: str) -> bool:
    """Whether ``value`` looks random enough for a weak key."""

def secret_bits(value: str) -> float:
    """The estimated bits of a value a store may remember (0.0: never)."""

def secret_spans(text: str, shapes: bytes) -> list[tuple[int, int]]:
    """The code-point spans of ``text`` a remembered value could occupy: those whose length and estimated
    bits are one of ``shapes``' pairs (packed: ``struct.pack("<Id", length, bits)`` each)."""
