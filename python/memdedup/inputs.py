"""Opening the files memdedup reads: one rule for every command (``dedup``, ``ingest``, ``tune``).

* ``-`` is standard input; any other name is a path.
* A gzip stream is recognised by its magic bytes (``1f 8b``), whatever the name: ``labels.txt.gz`` and a
  gzip piped into ``-`` are both read decompressed. A truncated or damaged gzip stream is an
  :class:`~memdedup.errors.InvalidInputError` that says so (never ``EOFError``).
* Text is UTF-8, strictly: the first byte that is not UTF-8 is an error naming the file, the line and
  the byte offset (``labels.txt:2: not UTF-8: byte 14 (0xe9) ...``), exit 2 in the command. Nothing is
  ever decoded with replacement characters. A UTF-8 byte-order mark at the start (Excel writes one) is
  dropped.
* Lines are split as Python's universal newlines split them (``\\n``, ``\\r\\n``, ``\\r``) and only so:
  U+2028, ``\\x85`` and the other separators ``str.splitlines`` also splits at stay inside a label.
* A file that is not text is named, not decoded (:func:`check_not_binary`): a SQLite database (a memory
  store given where labels or turns are read), a zip (an ``.xlsx``), bzip2, xz and zstd streams, and
  UTF-16 text without a byte-order mark (a NUL byte beside every character).
* A path is shown (in a message, a summary, a report) as :func:`display_name` shows it: scrubbed, since
  a path can hold a credential (``s3://KEY:SECRET@bucket/...``, a token in a folder name).
"""

from __future__ import annotations

import gzip
import io
import os
import sys
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO, cast

from memdedup.errors import InvalidInputError

__all__ = [
    "STDIN",
    "check_not_binary",
    "decode_utf8",
    "display_name",
    "input_size",
    "is_parquet",
    "open_binary",
    "read_bytes",
    "read_text",
    "split_lines",
    "utf8_error",
]

STDIN = "-"
GZIP_MAGIC = b"\x1f\x8b"
PARQUET_MAGIC = b"PAR1"
UTF8_BOM = b"\xef\xbb\xbf"
SQLITE_MAGIC = b"SQLite format 3\x00"
_CHUNK = 1 << 20

# Formats that are not text, by their first bytes: what each is, and what to do instead.
_BINARY = (
    (b"PK\x03\x04", "a zip archive (an .xlsx or .docx is one)", "export it as CSV or unzip it first"),
    (b"\xfd7zXZ\x00", "an xz stream", "decompress it first (unxz); memdedup reads gzip itself"),
    (b"\x28\xb5\x2f\xfd", "a zstd stream", "decompress it first (unzstd); memdedup reads gzip itself"),
    (b"7z\xbc\xaf\x27\x1c", "a 7z archive", "extract it first"),
)


def display_name(path: str | os.PathLike[str] | None) -> str:
    """How a path is shown anywhere memdedup shows one (an error, a summary's header, a report's
    ``input``/``source``/``database``/``out``): as given, ``<stdin>`` for ``-``, and scrubbed
    (:func:`memdedup.scrub.redact`): a path can hold a credential. The one rule for every command."""
    if path is None:
        return ""
    name = os.fspath(path)
    if name == STDIN:
        return "<stdin>"
    from memdedup.scrub import redact

    return redact(name)


def input_size(path: str | os.PathLike[str]) -> int | None:
    """The input's size in bytes on disk (compressed for gzip), or None (stdin, or not a file)."""
    if os.fspath(path) == STDIN:
        return None
    try:
        return os.path.getsize(path)
    except OSError:
        return None


def _cannot_read(path: str | os.PathLike[str], exc: OSError) -> InvalidInputError:
    return InvalidInputError(f"cannot read {display_name(path)}: {exc.strerror or exc}")


def _truncated(name: str, exc: BaseException) -> InvalidInputError:
    if isinstance(exc, EOFError):
        return InvalidInputError(
            f"{name}: the gzip stream is truncated (it ends before its end-of-stream marker); "
            "the file was probably cut short while it was copied or written"
        )
    return InvalidInputError(f"{name}: not a readable gzip stream ({exc})")


@contextmanager
def open_binary(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """The input's bytes as a binary stream, decompressed when it is gzip (see the module docstring).

    Errors while reading the stream (a truncated gzip) surface as :class:`InvalidInputError` too."""
    name = display_name(path)
    if os.fspath(path) == STDIN:
        raw: BinaryIO = sys.stdin.buffer
        owned = False
    else:
        if os.path.isdir(path):
            raise InvalidInputError(f"cannot read {name}: it is a directory")
        try:
            raw = open(path, "rb")
        except OSError as exc:
            raise _cannot_read(path, exc) from exc
        owned = True
    try:
        buffered = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(cast(Any, raw))
        head = buffered.peek(2)[:2]
        stream: BinaryIO = cast(BinaryIO, buffered)
        if head == GZIP_MAGIC:
            stream = cast(BinaryIO, gzip.GzipFile(fileobj=buffered, mode="rb"))
        try:
            yield stream
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise _truncated(name, exc) from exc
        except OSError as exc:
            raise _cannot_read(path, exc) from exc
    finally:
        if owned:
            raw.close()


def read_bytes(path: str | os.PathLike[str], *, progress: Callable[[int], None] | None = None) -> bytes:
    """Every byte of the input (decompressed). ``progress`` is called with the number of bytes read
    from the file (compressed bytes for gzip, so a bar over the file size ends at 100%)."""
    name = display_name(path)
    chunks = []
    with open_binary(path) as stream:
        underlying = getattr(stream, "fileobj", None)
        try:
            position = underlying.tell() if underlying is not None else 0
        except OSError:  # a pipe: count the decompressed bytes instead
            underlying, position = None, 0
        while True:
            try:
                chunk = stream.read(_CHUNK)
            except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
                raise _truncated(name, exc) from exc
            except OSError as exc:
                raise _cannot_read(path, exc) from exc
            if not chunk:
                break
            chunks.append(chunk)
            if progress is not None:
                if underlying is not None:
                    now = underlying.tell()
                    progress(now - position)
                    position = now
                else:
                    progress(len(chunk))
    return b"".join(chunks)


def utf8_error(name: str, data: bytes, exc: UnicodeDecodeError, *, first_line: int = 1, base: int = 0) -> str:
    """The message for the first byte of ``data`` that is not UTF-8: ``NAME:LINE: not UTF-8: byte N
    (0xHH) ...``, N counted from the start of the input. ``data`` starts at line ``first_line`` and
    byte ``base`` of the input (a single line read on its own)."""
    start = exc.start
    line = first_line + data.count(b"\n", 0, start)
    bad = data[start : start + 1]
    return (
        f"{name}:{line}: not UTF-8: byte {base + start} (0x{bad.hex()}) {exc.reason}; memdedup reads "
        "UTF-8 text (convert it first, e.g. iconv -f latin1 -t utf-8)"
    )


def check_not_binary(data: bytes, name: str) -> None:
    """Refuse ``data`` that is a known format other than text, naming it (see the module docstring): a
    SQLite database points to ``memdedup consolidate``, UTF-16 to iconv."""
    if data.startswith(SQLITE_MAGIC):
        raise InvalidInputError(
            f"{name} is a SQLite database, not a file of labels or turns: to deduplicate the memories of "
            f"a store, run memdedup consolidate --db {name}"
        )
    for magic, what, instead in _BINARY:
        if data.startswith(magic):
            raise InvalidInputError(f"{name} is {what}, not text: {instead}")
    # bzip2: "BZh", the block size (1-9), then a block's or the end's magic (text may start "BZh").
    if data[:3] == b"BZh" and data[3:4].isdigit() and data[4:10] in (b"1AY&SY", b"\x17rE8P\x90"):
        raise InvalidInputError(
            f"{name} is a bzip2 stream, not text: decompress it first (bunzip2); memdedup reads gzip itself"
        )
    if data[:64] and not data[:4096].strip(b"\x00"):
        raise InvalidInputError(f"{name} holds only NUL bytes, not text (a file never written, or damaged)")
    if _looks_utf16(data):
        raise InvalidInputError(
            f"{name} looks like UTF-16 text without a byte-order mark (a NUL byte beside every character): "
            "memdedup reads UTF-8 (convert it first, e.g. iconv -f utf-16le -t utf-8)"
        )


def _looks_utf16(data: bytes) -> bool:
    """Whether the first bytes have a NUL at (nearly) every even or every odd offset: UTF-16 of text
    that is mostly ASCII. A label that holds a NUL here and there is text (NUL is valid UTF-8)."""
    head = data[:4096]
    if len(head) < 8 or head[:2] in (b"\xff\xfe", b"\xfe\xff"):  # a byte-order mark: not UTF-8 at byte 0
        return False
    half = len(head) // 2
    return max(head[0::2].count(0), head[1::2].count(0)) >= 0.9 * half


def decode_utf8(data: bytes, name: str) -> str:
    """``data`` as text: strict UTF-8, a leading byte-order mark dropped; an error naming the line and
    the byte offset of the first byte that is not UTF-8, or the format of a file that is not text
    (:func:`check_not_binary`)."""
    check_not_binary(data, name)
    bom = len(UTF8_BOM) if data.startswith(UTF8_BOM) else 0
    try:
        return data[bom:].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(utf8_error(name, data[bom:], exc, base=bom)) from None


def read_text(path: str | os.PathLike[str], *, progress: Callable[[int], None] | None = None) -> str:
    """The input as text (see :func:`read_bytes` and :func:`decode_utf8`)."""
    return decode_utf8(read_bytes(path, progress=progress), display_name(path))


def is_parquet(data: bytes) -> bool:
    """Whether ``data`` is a Parquet file (its magic bytes at both ends)."""
    return len(data) >= 8 and data[:4] == PARQUET_MAGIC and data[-4:] == PARQUET_MAGIC


def split_lines(text: str) -> list[str]:
    """Lines as Python's universal newlines read them (``\\n``, ``\\r\\n``, ``\\r``), and only those:
    ``str.splitlines`` would also split at U+2028, ``\\x85`` and the other separators a label or a JSON
    string may hold. A final newline ends the last line; it does not start an empty one."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines
