"""The child side of the adversarial probes: what a probe script imports (see ``_probe.run_child``).

A probe runs in its own ``python -X dev`` process, so a crash, an abort or a Rust panic ends only that
process and the parent test reports it with the child's stderr. The child reports one outcome on
stdout, as a line ``@@REPORT {json}``:

- ``{"kind": "value", "equal": bool, ...}``: the call returned; ``equal`` says whether the answer is
  the one the probe's oracle (the pure-Python reference, the standard library, or an answer stated in
  the probe) gives;
- ``{"kind": "raise", "type": ..., "mro": [...], ...}``: the call raised.

The parent decides which of those the probe allows (``_probe.expect``). Only the standard library is
used here besides memdedup itself, which each probe imports.
"""

from __future__ import annotations

import gc
import json
import struct
import sys
import traceback
from collections.abc import Callable, Iterable
from typing import Any

REPORT_PREFIX = "@@REPORT "


def emit(data: dict[str, Any]) -> None:
    """Print one report line (the parent reads the last one)."""
    print(REPORT_PREFIX + json.dumps(data, default=repr), flush=True)


def short(value: Any, limit: int = 400) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


def describe_exception(exc: BaseException) -> dict[str, Any]:
    cls = type(exc)
    return {
        "kind": "raise",
        "type": f"{cls.__module__}.{cls.__qualname__}",
        "mro": [c.__name__ for c in cls.__mro__],
        "message": str(exc)[:500],
        "traceback": "".join(traceback.format_exception(exc))[-2000:],
    }


def outcome(
    call: Callable[[], Any],
    check: Callable[[Any], bool | str],
    attack: Callable[[], None] | None = None,
    *,
    rearm: bool = True,
    limit: int = 300,
) -> dict[str, Any]:
    """Run ``call`` and judge its answer with ``check``: True (or an empty string) when it is the
    oracle's answer, else False or a description. ``attack``: a finalizer action armed (see ``arm``)
    right before the call, so the first collection it sets off is inside the call, and disarmed after."""
    try:
        if attack is not None:
            arm(attack, rearm=rearm, limit=limit)
        got = call()
    except BaseException as exc:  # KeyboardInterrupt and pyo3's PanicException derive from BaseException
        disarm()
        return describe_exception(exc)
    disarm()
    verdict = check(got)
    equal = verdict is True or verdict == ""
    return {"kind": "value", "equal": equal, "got": short(got), "why": "" if equal else str(verdict)}


def report(
    call: Callable[[], Any],
    check: Callable[[Any], bool | str],
    attack: Callable[[], None] | None = None,
    *,
    rearm: bool = True,
    limit: int = 300,
) -> None:
    """``outcome`` of one call, emitted with how often the finalizer fired (``fired``)."""
    Bomb.fired = 0
    result = outcome(call, check, attack, rearm=rearm, limit=limit)
    result["fired"] = Bomb.fired
    emit(result)


def equals(expected: Any) -> Callable[[Any], bool | str]:
    """A check: the answer equals ``expected`` (numpy arrays through ``tolist``; floats by their bits)."""

    def check(got: Any) -> bool | str:
        g, e = plain(got), plain(expected)
        return True if g == e else f"expected {short(e)}"

    return check


def plain(value: Any) -> Any:
    """A comparable, float-exact form: numpy arrays as lists, floats as hex (NaN equal to NaN), dataclasses
    and tuples as lists of their fields."""
    if hasattr(value, "tolist") and not isinstance(value, list | tuple | str | bytes):
        value = value.tolist()
    if hasattr(value, "__dataclass_fields__"):
        return [plain(getattr(value, name)) for name in value.__dataclass_fields__]
    if isinstance(value, float):
        return value.hex()
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


# --------------------------------------------------------------------------------------------------
# Fresh objects: equal in value, distinct in identity, so freeing the old one is observable.
# --------------------------------------------------------------------------------------------------
def fresh(s: str) -> str:
    """A new str object equal to ``s`` (for ``len(s) >= 2``; shorter strs are interpreter singletons)."""
    return (s + " ")[:-1]


def fresh_all(items: Iterable[Any]) -> list[Any]:
    return [fresh(x) if type(x) is str else x for x in items]


# --------------------------------------------------------------------------------------------------
# The garbage-collector finalizer attack.
# --------------------------------------------------------------------------------------------------
class Bomb:
    """A self-referencing object (so only the cyclic collector frees it) whose ``__del__`` runs
    ``action``. With ``gc.set_threshold(1, 1, 1)`` a collection runs at almost every allocation of a
    tracked object: an exception raised inside the binding (a lone surrogate has no UTF-8), a tuple or
    list it builds, a label's ``__str__``... ``rearm`` plants a new bomb after each blast, at most
    ``Bomb.limit`` times in all (the attack must stay cheap enough to finish once the binding is right).
    """

    fired = 0
    limit = 10_000
    armed = False

    def __init__(self, action: Callable[[], None], rearm: bool) -> None:
        self.me = self
        self.action = action
        self.rearm = rearm

    def __del__(self) -> None:
        if not Bomb.armed:
            return
        Bomb.fired += 1
        self.action()
        if self.rearm and Bomb.fired < Bomb.limit:
            Bomb(self.action, self.rearm)


def arm(action: Callable[[], None], *, rearm: bool = True, limit: int = 10_000) -> None:
    """Plant a bomb and make the collector run at almost every allocation of a tracked object (the
    next one may set it off)."""
    Bomb.limit, Bomb.armed = limit, True
    Bomb(action, rearm)
    gc.set_threshold(1, 1, 1)


def disarm() -> None:
    Bomb.armed = False
    gc.set_threshold(700, 10, 10)


def refresher(*lists: list[Any]) -> Callable[[], None]:
    """A finalizer action that replaces every str of ``lists`` by a fresh equal one (freeing the old
    objects): a binding that holds a borrowed item across Python code then reads freed memory (which
    ``-X dev``'s debug allocator poisons), while a correct one gives exactly the reference's answer."""

    def action() -> None:
        for lst in lists:
            lst[:] = fresh_all(lst)

    return action


class _Tracked:
    pass


class Stepping:
    """An iterator over ``lst`` that allocates a tracked object at every step after the first ``quiet``
    ones, so the collector (and a planted finalizer) runs *between* the items a binding reads: while it
    holds the items read so far. Make it before arming (making it allocates).
    (A binding reading an exact list in place runs no Python code at all, so a finalizer cannot reach
    it there; an iterable is where Python code runs in the middle of the read.)"""

    def __init__(self, lst: list[Any], *, quiet: int = 0) -> None:
        self.lst = lst
        self.k = 0
        self.quiet = quiet  # items read before the first allocation (the finalizer fires mid-read)

    def __iter__(self) -> Stepping:
        return self

    def __next__(self) -> Any:
        if self.k >= self.quiet:
            # A tracked allocation (an instance: a list or tuple could come from a free list,
            # which does not count): under ``arm`` the collector runs here.
            junk = _Tracked()
            del junk
        if self.k >= len(self.lst):
            raise StopIteration
        item = self.lst[self.k]
        self.k += 1
        return item


def replacer(lst: list[Any], value: Any = "x") -> Callable[[], None]:
    """A finalizer action that overwrites every item of ``lst`` with ``value`` (the issue's attack)."""

    def action() -> None:
        lst[:] = [value] * len(lst)

    return action


def clearer(lst: list[Any]) -> Callable[[], None]:
    """A finalizer action that empties ``lst`` (``del lst[:]``)."""

    def action() -> None:
        del lst[:]

    return action


# --------------------------------------------------------------------------------------------------
# Labels that make the binding run Python code or allocate while it reads.
# --------------------------------------------------------------------------------------------------
def attack_labels(n: int, *, every: int = 97, first: int = 0, tag: str = "stored") -> list[Any]:
    """``n`` labels: ASCII restatement-like text, with (from index ``first``, every ``every``-th) a label
    holding a lone surrogate (its UTF-8 raises inside the binding, which allocates) or non-ASCII text,
    and now and then a non-str label (its ``__str__`` is Python code)."""
    out: list[Any] = []
    for i in range(n):
        if i >= first and (i - first) % every == 0:
            kind = (i // every) % 4
            if kind == 0:
                out.append(f"\ud800 {tag} label {i} with a lone surrogate")
            elif kind == 1:
                out.append(f"Ναυτικός {tag} ΟΔΟΣ label {i} \udc80")
            elif kind == 2:
                out.append(Labelled(f"\ud800 {tag} object label {i}"))
            else:
                out.append(f"İstanbul ẞtraße {tag} label {i} é")
        else:
            out.append(f"uses pytest and ruff for {tag} project number {i % 50}")
    return out


class Labelled:
    """A non-str label: ``str()`` runs Python code (the reference coerces labels with ``str(x or "")``)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return fresh(self.text)

    def __repr__(self) -> str:
        return f"Labelled({self.text!r})"


def reference_labels_match(stored: Any, incoming: Any, **kwargs: Any) -> bool:
    from memdedup import _reference

    return bool(_reference.labels_match(stored, incoming, **kwargs))


def prefix_states(original: list[Any], mutated: list[Any] | None) -> Iterable[list[Any]]:
    """The inputs a binding that reads items one at a time may have seen when a finalizer changed the
    list once during the read: ``original[:i] + mutated[i:]`` for every i (``mutated`` None: the list
    was emptied, so ``original[:i]``)."""
    for i in range(len(original) + 1):
        yield original[:i] + ([] if mutated is None else mutated[i:])


def one_of_states(
    reference: Callable[[list[Any]], Any], original: list[Any], mutated: list[Any] | None
) -> Callable[[Any], bool | str]:
    """A check: the answer is ``reference`` of one of ``prefix_states``."""

    def check(got: Any) -> bool | str:
        g = plain(got)
        for state in prefix_states(original, mutated):
            if plain(reference(state)) == g:
                return True
        return "equals the reference of no state the list passed through"

    return check


def u32s(raw: bytes) -> list[int]:
    """Native-endian u32s (``_core.join``'s pairs, flat)."""
    return list(struct.unpack(f"{len(raw) // 4}I", raw))


def f64s(raw: bytes) -> list[float]:
    """Native-endian f64s (``_core.cdist``'s matrix, row-major)."""
    return list(struct.unpack(f"{len(raw) // 8}d", raw))


def say(*args: Any) -> None:
    print(*args, file=sys.stderr, flush=True)


def reference_outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    """``("ok", plain answer)`` or ``("raise", exception class name)``."""
    try:
        return ("ok", plain(call()))
    except Exception as exc:
        return ("raise", type(exc).__name__)


def report_vs(make: Callable[[], tuple[Any, ...]], impl: Callable[..., Any], ref: Callable[..., Any]) -> None:
    """Call ``impl`` and ``ref`` each on fresh inputs from ``make`` and report whether they did the same
    thing: the same answer, or the same exception class. When they differ and ``impl`` raised, the
    report is that exception (the parent may allow it, e.g. ``IndexError`` for a list that shrank)."""
    expected = reference_outcome(lambda: ref(*make()))
    args = make()
    try:
        got: tuple[str, Any] = ("ok", plain(impl(*args)))
    except BaseException as exc:
        if ("raise", type(exc).__name__) == expected:
            emit({"kind": "value", "equal": True, "got": f"raised {type(exc).__name__}", "fired": 0})
            return
        result = describe_exception(exc)
        result.update(expected=short(expected), fired=0)
        emit(result)
        return
    equal = got == expected
    emit({"kind": "value", "equal": equal, "got": short(got), "expected": short(expected), "fired": 0})
