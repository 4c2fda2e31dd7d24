"""Type stubs for the compiled Rust extension (hand-written; keep in step with rust/python.rs)."""

from collections.abc import Callable, Sequence
from typing import Any, SupportsFloat

def normalise_label(label: Any) -> str: ...
def ratio(a: str, b: str, *, autojunk: bool = True) -> float: ...
def quick_ratio(a: str, b: str, *, autojunk: bool = True) -> float: ...
def real_quick_ratio(a: str, b: str, *, autojunk: bool = True) -> float: ...
def matching_blocks(a: str, b: str, *, autojunk: bool = True) -> list[tuple[int, int, int]]: ...
def labels_match(
    stored: Any,
    incoming: Any,
    *,
    threshold: float | SupportsFloat = 0.85,
    min_chars: int = 16,
    guards: Any = None,
) -> bool: ...
def match_reason(
    stored: Any, incoming: Any, *, threshold: float | SupportsFloat = 0.85, min_chars: int = 16
) -> tuple[str, float] | None: ...
def match_first(
    incoming: Any, candidates: Sequence[Any], *, threshold: float | SupportsFloat = 0.85, min_chars: int = 16
) -> int | None: ...
def match_mask(
    incoming: Any, candidates: Sequence[Any], *, threshold: float | SupportsFloat = 0.85, min_chars: int = 16
) -> list[bool]: ...
def close_matches(
    word: str, possibilities: Sequence[Any], cutoff: float, *, autojunk: bool = True
) -> list[tuple[float, int]] | None:
    """``(ratio, index)`` of each possibility reaching ``cutoff``; None if one is not an exact ``str``."""

def match_pairs(
    stored: Sequence[Any], incoming: Sequence[Any], *, threshold: float = 0.85, min_chars: int = 16
) -> bytes:
    """One byte per pair: 1 where ``labels_match(stored[k], incoming[k])``, else 0."""

def cdist(
    queries: Sequence[str],
    choices: Sequence[str],
    *,
    autojunk: bool = True,
    cutoff: float = 0.0,
    normalise: bool = False,
) -> bytes: ...
def replay(
    labels: Sequence[Any],
    partitions: Sequence[int],
    *,
    threshold: float = 0.85,
    min_chars: int = 16,
    prefix: str = "raw",
    prefix_len: int = 20,
    query_limit: int = 20,
) -> tuple[list[int], list[str], list[float]]: ...
def join(labels: Sequence[Any], *, threshold: float = 0.85, min_chars: int = 16) -> bytes:
    """Native-endian u32 pairs ``(i, j)``, ``i < j``, sorted: every pair that matches."""

def clusters(
    n: int, pairs: Sequence[tuple[int, int]], *, mode: str = "canonical"
) -> tuple[list[int], list[int | None]]: ...
def pair_reasons(
    labels: Sequence[Any], pairs: Sequence[tuple[int, int]], *, threshold: float = 0.85, min_chars: int = 16
) -> tuple[list[str | None], list[float]]: ...

class Codes:
    """A first sequence coded against one ``SequenceIndex.of_elements`` index."""

    def __len__(self) -> int: ...

class SequenceIndex:
    """difflib's index of a second sequence (``b2j``, ``bjunk``, ``bpopular``), built once per ``b``.

    Sequences are ``str`` (code points) or sequences of ints below 2**32 (ids the caller assigned to
    hashable elements); ``junk`` lists the element codes ``isjunk`` accepted.
    """

    def __init__(
        self, b: str | Sequence[int] | Codes, *, autojunk: bool = True, junk: Sequence[int] | None = None
    ) -> None: ...
    def __len__(self) -> int: ...
    def find_longest_match(
        self, a: str | Sequence[int] | Codes, alo: int, ahi: int, blo: int, bhi: int
    ) -> tuple[int, int, int]: ...
    def matching_blocks(self, a: str | Sequence[int] | Codes) -> list[tuple[int, int, int]]: ...
    def matches(self, a: str | Sequence[int] | Codes) -> int: ...
    def quick_matches(self, a: str | Sequence[int] | Codes) -> int: ...
    def opcodes(self, a: str | Sequence[int] | Codes) -> list[tuple[str, int, int, int, int]]: ...
    @staticmethod
    def of_elements(
        b: Sequence[object],
        *,
        autojunk: bool = True,
        isjunk: Callable[[Any], object] | None = None,
        junk: Sequence[int] | None = None,
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

# The credential detector (rust/scrub, bound in rust/python_scrub.rs); memdedup.scrub keeps the policy.
def scan_secrets(text: str, pii: bool = False) -> list[tuple[int, int, str, str]]:
    """Every credential in ``text``: ``(start, end, rule id, kind)``, code-point offsets, non-overlapping,
    sorted; ``pii`` adds the e-mail and phone rules. Checks for Ctrl-C between rules."""

def credential_key_kind(name: str) -> str | None:
    """The kind (PASSWORD, PIN, TOKEN, API_KEY, SECRET) of a credential-named key, or None."""

def credential_key_words(name: str) -> list[str]:
    """The lower-cased words a key name is judged by."""

def credential_value_kept(kind: str, value: str, quoted: bool) -> bool:
    """Whether a credential-named key of ``kind`` keeps ``value`` (``quoted``: written as a string)."""

def secret_rule_widths() -> list[tuple[str, int, int | None]]:
    """Each rule's id, its pattern's longest match and its near pattern's (bytes)."""
