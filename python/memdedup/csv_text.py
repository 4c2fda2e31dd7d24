"""CSV read strictly, row by row, with the lines each row spans: the primitives behind
:func:`memdedup.tables.read_label_table`'s CSV reader.

The csv module's default accepts end of file inside a quoted field and text after a closing quote, so
one stray quote swallows every row up to the next quote (or the end of the file) into one field, at exit
0. Here a row comes with its first and last line, so a field that spans lines can be refused (naming the
line where it opened) unless the caller allows line breaks in fields; end of file inside quotes is an
error naming the line where the field opened; text after a closing quote is an error naming its line.
Lines count as :func:`memdedup.inputs.split_lines` counts them (``\\n``, ``\\r\\n``, ``\\r``).
"""

from __future__ import annotations

import csv
import io
import sys
from collections.abc import Iterator, Sequence

from memdedup.errors import InvalidInputError

__all__ = ["csv_rows", "line_breaks", "spanning_field"]


def line_breaks(text: str) -> int:
    """How many line breaks ``text`` holds (``\\r\\n`` is one)."""
    return text.count("\n") + text.count("\r") - text.count("\r\n")


def csv_rows(text: str, name: str) -> Iterator[tuple[int, int, list[str]]]:
    """``(first line, last line, fields)`` of every CSV row, blank lines included (no fields), read
    strictly; the errors name the line (where a field that never closes opened)."""
    # csv refuses a field over 128 KiB by default: a long label is still a label (the text is in memory
    # already, so no limit protects anything here).
    if csv.field_size_limit() < len(text):
        csv.field_size_limit(min(len(text), sys.maxsize))
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    end = 0
    while True:
        start = end + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            if "unexpected end of data" in str(exc):
                opened = _unclosed_quote_line(text, start)
                raise InvalidInputError(
                    f"{name}:{opened}: a quoted field opens here and never closes: the end of the file "
                    "comes first (a stray quote?)"
                ) from None
            raise InvalidInputError(
                f"{name}:{reader.line_num}: not CSV ({exc}): a quoted field ends at its closing quote (no "
                'text after it, not even a space); a quote inside one is doubled ("")'
            ) from None
        end = reader.line_num
        yield start, end, row


def _unclosed_quote_line(text: str, line: int) -> int:
    """The line of the quote that opens the field left open at the end of ``text``, scanning the CSV
    row that starts on ``line`` as the csv module reads it (a quote opens a field only at its start)."""
    offset = 0
    for _ in range(line - 1):
        breaks = [k for k in (text.find("\n", offset), text.find("\r", offset)) if k != -1]
        if not breaks:
            break
        k = min(breaks)
        offset = k + (2 if text.startswith("\r\n", k) else 1)
    opened, at_start, k, n = -1, True, offset, len(text)
    while k < n:
        ch = text[k]
        if opened == -1:
            if at_start and ch == '"':
                opened, at_start = k, False
            else:
                at_start = ch in ",\r\n"
        elif ch == '"':
            if text.startswith('""', k):
                k += 1
            else:
                opened = -1
        k += 1
    return line if opened == -1 else line + line_breaks(text[offset:opened])


def spanning_field(name: str, header: Sequence[str], row: Sequence[str], start: int, end: int) -> Exception:
    """The error for a row whose field holds line breaks, when fields may not."""
    k = next(k for k, field in enumerate(row) if "\n" in field or "\r" in field)
    opened = start + sum(line_breaks(field) for field in row[:k])
    column = repr(header[k]) if k < len(header) else f"field {k + 1}"
    return InvalidInputError(
        f"{name}:{opened}: a quoted field ({column}) opens here and runs over {line_breaks(row[k]) + 1} "
        f"lines, to line {opened + line_breaks(row[k])}: a stray quote? If fields hold line breaks, pass "
        "--multiline"
    )
