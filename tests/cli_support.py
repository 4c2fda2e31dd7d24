"""Running the real ``memdedup`` command in a child process, as a person would from a shell.

The console script installed with the package is used when it is there (it is what a user types); else
``python -m memdedup``. Either way the child imports the memdedup this process imported (an editable
install, a wheel in site-packages, or a checkout on PYTHONPATH alike: never a source tree without its
compiled extension), so the tests exercise the code under test.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any, cast

import memdedup

ROOT = Path(__file__).resolve().parents[1]
#: The directory holding the imported ``memdedup`` package: put first on a child's PYTHONPATH.
PACKAGE_ROOT = str(Path(memdedup.__file__).resolve().parents[1])


def command() -> list[str]:
    script = Path(sysconfig.get_path("scripts")) / "memdedup"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "memdedup"]


def env(**extra: str) -> dict[str, str]:
    out = dict(os.environ)
    out["PYTHONPATH"] = os.pathsep.join(filter(None, [PACKAGE_ROOT, out.get("PYTHONPATH")]))
    out.pop("COLUMNS", None)
    out.update(extra)
    return out


def run(*argv: str, input: bytes | str | None = None, cwd: Path | None = None, **kwargs: Any) -> Result:
    """``memdedup ARGV...`` with stdin ``input`` (nothing when None); stdout and stderr captured."""
    done = subprocess.run(
        [*command(), *map(str, argv)],
        input=input.encode("utf-8") if isinstance(input, str) else (input if input is not None else b""),
        capture_output=True,
        env=env(),
        cwd=cwd,
        timeout=600,
        **kwargs,
    )
    return Result(done.returncode, done.stdout, done.stderr)


def run_here(*argv: Any, input: bytes | str | None = None) -> Result:
    """``memdedup ARGV...`` in this process (``memdedup.cli.main``), as :func:`run` runs it in a child but
    without the interpreter's start: stdin ``input`` (nothing when None), stdout and stderr captured as
    bytes, argparse's exit status kept. No terminal, so no progress bars; ``COLUMNS`` is left as it is."""
    import io

    from memdedup.cli import main

    data = input.encode("utf-8") if isinstance(input, str) else (input or b"")
    streams = {
        "stdin": io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"),
        "stdout": io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline=""),
        "stderr": io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline=""),
    }
    saved = {name: getattr(sys, name) for name in streams}
    for name, stream in streams.items():
        setattr(sys, name, stream)
    try:
        try:
            status = main([str(a) for a in argv])
        except SystemExit as stop:  # argparse: a usage error (2), --help and --version (0)
            status = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 2)
        for stream in (streams["stdout"], streams["stderr"]):
            stream.flush()
    finally:
        for name, stream in saved.items():
            setattr(sys, name, stream)
    out = cast(io.BytesIO, streams["stdout"].buffer).getvalue()
    err = cast(io.BytesIO, streams["stderr"].buffer).getvalue()
    return Result(status, out, err)


class Result:
    """A finished command: its exit status, and its output as bytes and as text."""

    def __init__(self, status: int, out: bytes, err: bytes) -> None:
        self.status = status
        self.out_bytes = out
        self.out = out.decode("utf-8", errors="replace")
        self.err = err.decode("utf-8", errors="replace")

    def __repr__(self) -> str:
        return f"Result(status={self.status}, out={self.out[-2000:]!r}, err={self.err[-2000:]!r})"

    def ok(self) -> Result:
        assert self.status == 0, self
        assert "Traceback" not in self.err, self
        return self

    def fails(self, status: int = 2) -> Result:
        """Refused with ``status`` and a message, never a traceback."""
        assert self.status == status, self
        assert "Traceback" not in self.err and "Traceback" not in self.out, self
        assert self.err.strip(), self
        return self


def _terminal() -> tuple[int, int]:
    """A pseudo-terminal of 24 rows and 100 columns (a real terminal always has a size)."""
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    return leader, follower


def run_in_terminal(*argv: str, cwd: Path | None = None, stdout_tty: bool = True) -> Result:
    """``memdedup ARGV...`` with stderr (and stdout unless ``stdout_tty`` is False) on a pseudo-terminal,
    as in an interactive shell; the terminal's output comes back as ``err``."""
    leader, follower = _terminal()
    try:
        child = subprocess.Popen(
            [*command(), *map(str, argv)],
            stdin=subprocess.DEVNULL,
            stdout=follower if stdout_tty else subprocess.PIPE,
            stderr=follower,
            env=env(TERM="xterm"),
            cwd=cwd,
        )
        os.close(follower)
        seen = bytearray()
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: every writer of the terminal has gone
                break
            if not chunk:
                break
            seen += chunk
        out = child.stdout.read() if child.stdout is not None else b""
        child.wait(timeout=600)
    finally:
        os.close(leader)
    return Result(child.returncode, out, bytes(seen))


def interrupt_when(
    argv: list[str],
    ready: str,
    *,
    cwd: Path | None = None,
    pause: float = 0.5,
    timeout: float = 600,
    after_signal: float = 60,
) -> tuple[Result, float]:
    """Start ``memdedup ARGV...`` on a pseudo-terminal (so it shows its phases), send SIGINT once
    ``ready`` appears on the terminal (and ``pause`` seconds later), and return the result with the
    seconds from the signal to the exit. A child still running ``after_signal`` seconds after the signal
    is killed (its status is then -9)."""
    import select

    leader, follower = _terminal()
    child = subprocess.Popen(
        [*command(), *map(str, argv)],
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
        env=env(TERM="xterm"),
        cwd=cwd,
    )
    os.close(follower)
    seen = bytearray()
    sent_at = None
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            readable, _, _ = select.select([leader], [], [], 0.05)
            if readable:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                seen += chunk
            if sent_at is None and ready.encode() in seen:
                time.sleep(pause)
                child.send_signal(signal.SIGINT)
                sent_at = time.monotonic()
                deadline = min(deadline, sent_at + after_signal)
            if child.poll() is not None and not readable:
                break
        try:
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        stopped = time.monotonic()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        os.close(leader)
    assert sent_at is not None, f"{ready!r} never appeared: {bytes(seen)[-2000:]!r}"
    return Result(child.returncode, b"", bytes(seen)), stopped - sent_at
