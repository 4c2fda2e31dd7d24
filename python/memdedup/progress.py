"""Progress of a command's phases on stderr (tqdm), and nothing at all when nobody is watching.

A :class:`Progress` shows one line per phase while it runs: a bar with a count and a rate when the work
comes in steps (reading a file, writing rows, joining many scopes), and an elapsed-time spinner when the
phase is one long call into the Rust core (a replay, a single join, the clusters), which reports no
progress of its own. :meth:`Progress.for_command` turns it on only when both stderr and stdout are
terminals and ``--quiet`` was not given, so a pipe, a redirect or a CI log never sees a bar.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

__all__ = ["Progress"]

_SPINNER_REFRESH = 0.2  # seconds between redraws of a spinner (the elapsed time it shows)


def _noop(_n: int = 1) -> None:
    return None


class Progress:
    """Phase bars on ``file`` (stderr) when ``enabled``; every method is a cheap no-op otherwise."""

    def __init__(self, enabled: bool = False, *, file: TextIO | None = None) -> None:
        self.enabled = enabled
        self.file = file if file is not None else sys.stderr

    @classmethod
    def for_command(cls, quiet: bool = False) -> Progress:
        """On when stderr and stdout are both terminals and ``quiet`` is False."""
        enabled = not quiet and _isatty(sys.stderr) and _isatty(sys.stdout)
        return cls(enabled)

    @contextmanager
    def bar(
        self, desc: str, total: int | None = None, *, unit: str = "it", unit_scale: bool = False
    ) -> Iterator[Callable[[int], None]]:
        """A bar for a phase done in steps: yields ``advance(n)``."""
        tqdm = _tqdm() if self.enabled else None
        if tqdm is None:
            yield _noop
            return
        with tqdm(
            total=total or None,
            desc=desc,
            unit=unit,
            unit_scale=unit_scale,
            unit_divisor=1024 if unit == "B" else 1000,
            leave=False,
            file=self.file,
            ncols=_columns(),
            nrows=_rows(),
            mininterval=0.2,
        ) as bar:
            yield bar.update

    @contextmanager
    def spinner(self, desc: str) -> Iterator[None]:
        """A phase that is one long call: its name and the elapsed time, redrawn by a thread while the
        call runs (the core releases the GIL, so the thread gets to run)."""
        tqdm = _tqdm() if self.enabled else None
        if tqdm is None:
            yield
            return
        bar = tqdm(
            total=None,
            desc=desc,
            bar_format="{desc}: {elapsed} (one call into the core; no finer progress)",
            leave=False,
            file=self.file,
            ncols=_columns(),
            nrows=_rows(),
        )
        stop = threading.Event()

        def redraw() -> None:
            while not stop.wait(_SPINNER_REFRESH):
                bar.refresh()

        thread = threading.Thread(target=redraw, name="memdedup-progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            bar.close()

    def note(self, text: str) -> None:
        """A line of its own on stderr (only when enabled), e.g. the phase that starts now."""
        tqdm = _tqdm() if self.enabled else None
        if tqdm is not None:
            tqdm.write(text, file=self.file)


def _tqdm() -> Any:
    """tqdm's bar class, or None when it cannot be imported (the command then runs without bars)."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


def _columns() -> int:
    """The terminal's width; 80 when it reports none (a terminal of size 0 would get no bar at all)."""
    import shutil

    return shutil.get_terminal_size(fallback=(80, 24)).columns


def _rows() -> int:
    """The terminal's height; 24 when it reports none (tqdm hides every bar on a terminal of height 0)."""
    import shutil

    return shutil.get_terminal_size(fallback=(80, 24)).lines


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
