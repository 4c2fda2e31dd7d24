"""Writing the files memdedup writes: a temporary file beside the target, renamed into place when it is
complete, so an interrupted or failed run never leaves half a file; ``-`` is standard output.

The file gets the mode of the file it replaces, else the mode the umask gives a new file (a temporary
file made by ``tempfile.mkstemp`` is 0o600, and the rename would tighten a 0o644 output to 0o600). A name
ending ``.gz`` is compressed. Errors name the path as every path is shown
(:func:`memdedup.inputs.display_name`).
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, cast

from memdedup.errors import InvalidInputError
from memdedup.inputs import STDIN, display_name

__all__ = ["atomic_output", "check_writable"]


@contextmanager
def atomic_output(path: str | os.PathLike[str], binary: bool) -> Iterator[IO[Any]]:
    """A stream to ``path`` (stdout for ``-``): a temporary file beside it, renamed when the block ends
    without an error (removed when it does not). ``.gz`` compresses. The file gets the mode the file it
    replaces had, else the one the umask gives a new file (:func:`_temporary`)."""
    import gzip

    name = os.fspath(path)
    if name == STDIN:
        sys.stdout.flush()
        if binary:
            yield sys.stdout.buffer
            sys.stdout.buffer.flush()
        else:
            wrapper = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="")
            try:
                yield wrapper
                wrapper.flush()
            finally:
                wrapper.detach()
        return
    target = Path(name)
    shown = display_name(name)
    try:
        fd, tmp = _temporary(target)
    except OSError as exc:
        raise InvalidInputError(f"cannot write {shown}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "wb") as raw:
            stream: IO[bytes] = raw
            if name.lower().endswith(".gz"):
                stream = cast(
                    IO[bytes], gzip.GzipFile(filename=target.name[:-3], mode="wb", fileobj=raw, mtime=0)
                )
            try:
                if binary:
                    yield stream
                else:
                    text = io.TextIOWrapper(cast(Any, stream), encoding="utf-8", newline="")
                    yield text
                    text.flush()
                    text.detach()
            finally:
                if stream is not raw:
                    stream.close()
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InvalidInputError(f"cannot write {shown}: {exc.strerror or exc}") from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _temporary(target: Path) -> tuple[int, str]:
    """A new file beside ``target`` (``.NAME.XXXXXXXX.part``), open for writing: created with mode 0o666
    so that the kernel applies the umask (``tempfile.mkstemp`` makes 0o600, and the rename would then
    tighten a 0o644 output to 0o600), then given the mode of the file it will replace, if any."""
    import secrets

    folder = target.parent if str(target.parent) else Path(".")
    try:
        mode: int | None = os.stat(target).st_mode & 0o7777
    except OSError:
        mode = None
    for _ in range(100):
        tmp = str(folder / f".{target.name}.{secrets.token_hex(4)}.part")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        except FileExistsError:
            continue
        if mode is not None:
            try:
                os.fchmod(fd, mode)
            except OSError:  # not the owner's mode to give (another user's file): the umask's stays
                pass
        return fd, tmp
    raise FileExistsError(f"no free temporary name beside {target.name}")


def check_writable(path: str | os.PathLike[str]) -> None:
    """Fail now, before any work, when ``path``'s folder does not exist or is not writable."""
    name = os.fspath(path)
    if name == STDIN:
        return
    shown = display_name(name)
    parent = Path(name).parent
    if not parent.is_dir():
        raise InvalidInputError(f"cannot write {shown}: no such directory {display_name(str(parent))!r}")
    if not os.access(parent, os.W_OK):
        raise InvalidInputError(f"cannot write {shown}: the directory is not writable")
    if Path(name).is_dir():
        raise InvalidInputError(f"cannot write {shown}: it is a directory")
