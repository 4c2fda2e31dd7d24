"""Label tables in files: what ``memdedup dedup`` reads and writes, one rule for both engines.

Input formats, by ``fmt`` or else by extension (after an optional ``.gz``): text (``.txt`` and any
other name: one label per line), JSON lines (``.jsonl``/``.ndjson``: objects with a label field and
optional scope and layer fields), CSV (``.csv``: a header row; a UTF-8 byte-order mark is dropped) and
Parquet (``.parquet``/``.pq``; needs pyarrow). ``-`` is standard input (text unless ``fmt`` says
otherwise). Bytes are opened as :mod:`memdedup.inputs` opens every input: gzip by its magic bytes, UTF-8
strictly, errors naming the file, the line and the byte; a SQLite database, an archive or UTF-16 is named
and refused (:func:`memdedup.inputs.check_not_binary`).

No format is guessed: input read as text without being asked for (``fmt`` not given: stdin, a ``.txt``,
or a name whose extension names no format) whose first non-blank line is a JSON object or array is
refused, and so is a ``.json`` file (a JSON document): pass ``fmt="jsonl"`` or ``fmt="text"``.

Labels: a missing value (JSON ``null``, a Parquet null, NaN) is the empty label (:mod:`memdedup.missing`);
any other label must be text: a JSONL label that is a number, boolean, array or object, or a Parquet label
column that is not string, is an error (``str()`` of such a value is no label anyone wrote). A field read
given twice on a JSON line, or holding an escaped lone surrogate, is an error naming the line
(:func:`check_fields`); so is a CSV header naming a column read twice, or a row longer than the header.

CSV is read strictly: a quoted field must end at its closing quote; end of file inside a quoted field is
an error naming the line where the field opened; and a field that spans lines (a quoted line break) is
an error naming that line unless ``multiline=True`` (``--multiline``): a stray quote would otherwise
swallow every row up to the next quote, at exit 0. Blank lines are no rows.

Scope and layer cells keep their type, so they partition exactly as :func:`memdedup.batch.replay` keys
them: a JSON string, number, boolean or ``null`` is that Python value, an object or array a
:class:`JSONValue`, and a row without the field :data:`MISSING` (so ``null``, ``""`` and a missing field
are three partitions, and ``1``, ``1.0``, ``true`` and ``"1"`` four). A CSV cell is text (a short row's
absent cell is :data:`MISSING`), unless its column is named in ``json_columns``: then each cell is the
JSON value it holds (an empty cell :data:`MISSING`); a Parquet cell is its column's value (a null is
``None``; in a ``json_columns`` column, a string of JSON text and a null :data:`MISSING`).

Output formats, by ``fmt`` or else by extension: ``.jsonl``, ``.csv`` (each optionally ``.gz``) and
``.parquet``; ``-`` is standard output (JSON lines unless ``fmt`` says otherwise). Any other extension is
refused before anything runs. A typed column (scope, layer) keeps its types in every format: JSON lines
hold them; in CSV, a column whose values are not all text (or that holds both ``""`` and a missing
value) is written as JSON text, every cell (strings quoted, a missing value an empty cell); in Parquet,
a column Arrow cannot hold exactly (an int beyond 64 bits, ``1`` beside ``1.0``, ``null`` beside a
missing value, objects with different keys) is written as JSON text too (a missing value a null).
:func:`write_records` returns the columns it wrote as JSON text; ``json_columns`` reads them back.
A file is written to a temporary name beside it and renamed when complete, so an interrupted or failed
run never leaves half a file; it gets the mode an existing file had, else the umask's
(:mod:`memdedup.outputs`). CSV is read by :mod:`memdedup.csv_text`.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memdedup.csv_text import csv_rows, spanning_field
from memdedup.errors import InvalidInputError
from memdedup.inputs import (
    SQLITE_MAGIC,
    STDIN,
    check_not_binary,
    decode_utf8,
    display_name,
    input_size,
    is_parquet,
    read_bytes,
    split_lines,
)
from memdedup.missing import is_missing, label_text
from memdedup.outputs import atomic_output
from memdedup.progress import Progress

__all__ = [
    "INPUT_FORMATS",
    "MISSING",
    "OUTPUT_FORMATS",
    "JSONValue",
    "LabelTable",
    "check_fields",
    "input_format",
    "json_cell",
    "output_format",
    "parse_jsonl_row",
    "read_columns",
    "read_label_table",
    "write_records",
]

INPUT_FORMATS = ("text", "jsonl", "csv", "parquet")
OUTPUT_FORMATS = ("jsonl", "csv", "parquet")
# A text input that starts with "[" or "{" is parsed whole, up to this size, to see whether it is a JSON
# document (refused without --input-format): a larger one would cost its parse for nothing.
_JSON_DOCUMENT_LIMIT = 64 << 20
_EXTENSIONS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


# ---------------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------------
class _Missing:
    """The scope or layer of a row that has no such field (a partition of its own). One instance, also
    after pickling (Dask sends it to its workers)."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __reduce__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


@dataclass(frozen=True)
class JSONValue:
    """A JSON object or array given as a scope or layer, by its canonical JSON (a partition of its own,
    never equal to a string)."""

    json: str


@dataclass(frozen=True)
class LabelTable:
    """Labels read from a file, with their scope and layer when the file has those columns.

    A scope or layer keeps its type (see the module docstring); :data:`MISSING` marks a row without the
    field. ``source`` names the input (``<stdin>`` for ``-``)."""

    labels: list[str]
    scopes: list[Any] | None = None
    layers: list[Any] | None = None
    source: str = ""


def cell_value(row: Mapping[str, Any], column: str | None, *, csv: bool = False) -> Any:
    """A scope or layer cell with its type kept (see the module docstring)."""
    if column is None or column not in row:
        return MISSING
    value = row[column]
    if value is None and csv:  # csv.DictReader's filler for the cells a short row lacks
        return MISSING
    if isinstance(value, dict | list):
        return JSONValue(json.dumps(value, sort_keys=True, ensure_ascii=False))
    return value


def cell_json(value: Any) -> Any:
    """A scope or layer value as JSON data for an output row (a :class:`JSONValue` as its object; a NaN,
    which JSON cannot hold, as the string ``"NaN"``)."""
    if isinstance(value, JSONValue):
        return json.loads(value.json)
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


def json_cell(value: Any) -> str:
    """A scope or layer value as JSON text (a CSV cell or Parquet string of a column written as JSON):
    what ``json.loads`` reads back as the same value (a NaN as ``NaN``, which Python's json reads)."""
    if isinstance(value, JSONValue):
        return value.json
    if isinstance(value, str | int | float | bool) or value is None:
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(str(value), ensure_ascii=False)


def _from_json_cell(text: str, where: str, column: str) -> Any:
    """A cell of a ``json_columns`` column: the value its JSON text holds; an error naming ``where``."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(
            f"{where}: the {column!r} cell is not JSON ({exc.msg}): a column read with --json-columns "
            "holds JSON text in every cell (strings quoted)"
        ) from None
    except RecursionError:
        raise InvalidInputError(f"{where}: the {column!r} cell is not JSON (nested too deeply)") from None
    if _lone_surrogate(value):
        raise InvalidInputError(
            f"{where}: the {column!r} cell holds an escaped lone surrogate (\\ud800-\\udfff without its "
            "pair): it is no text, and no UTF-8 file can hold it"
        )
    if isinstance(value, dict | list):
        return JSONValue(json.dumps(value, sort_keys=True, ensure_ascii=False))
    return value


def cell_text(value: Any) -> str:
    """A scope or layer value in a CSV cell: text as it is, anything else as its JSON (CSV has no types:
    write ``.jsonl`` or ``.parquet`` to keep them)."""
    if value is MISSING:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(cell_json(value), ensure_ascii=False, sort_keys=True)


# ---------------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------------
def _suffixes(path: str) -> list[str]:
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    return suffixes


def _format(path: str | os.PathLike[str], fmt: str | None, known: tuple[str, ...], what: str) -> str | None:
    """``fmt`` when given (one of ``known``), else the format ``path``'s extension names (after an
    optional ``.gz``), or None when it names none."""
    if fmt is not None:
        if fmt not in known:
            raise InvalidInputError(f"{what} format must be one of {', '.join(known)}, not {fmt!r}")
        return fmt
    suffixes = _suffixes(os.fspath(path))
    return _EXTENSIONS.get(suffixes[-1] if suffixes else "")


def input_format(path: str | os.PathLike[str], fmt: str | None = None) -> str:
    """The input format: ``fmt`` when given, else by extension (text for any other name and for ``-``)."""
    if fmt is None and os.fspath(path) == STDIN:
        return "text"
    return _format(path, fmt, INPUT_FORMATS, "input") or "text"


def read_label_table(
    path: str | os.PathLike[str],
    *,
    label_column: str = "label",
    scope_column: str | None = "scope",
    layer_column: str | None = "layer",
    fmt: str | None = None,
    progress: Progress | None = None,
    multiline: bool = False,
    json_columns: Sequence[str] = (),
) -> LabelTable:
    """Read labels from text, JSONL, CSV or Parquet (see the module docstring).

    A scope or layer column is used when present; a label column that is missing from a JSONL object,
    a CSV header or a Parquet schema is an error naming the line (or the columns there are), never a
    silent skip. ``multiline`` lets a CSV field hold line breaks; ``json_columns`` (the scope or layer
    column of a CSV or Parquet input) reads each cell as the JSON value it holds. Every error is an
    :class:`~memdedup.errors.InvalidInputError`.
    """
    others = [c for c in (scope_column, layer_column) if c is not None]
    labels, columns, name = read_columns(
        path, label_column, others, fmt=fmt, progress=progress, multiline=multiline, json_columns=json_columns
    )
    return LabelTable(
        labels,
        columns.get(scope_column) if scope_column is not None else None,
        columns.get(layer_column) if layer_column is not None else None,
        name,
    )


def read_columns(
    path: str | os.PathLike[str],
    label_column: str,
    others: Sequence[str] = (),
    *,
    fmt: str | None = None,
    progress: Progress | None = None,
    multiline: bool = False,
    json_columns: Sequence[str] = (),
) -> tuple[list[str], dict[str, list[Any] | None], str]:
    """``(labels, {column: values or None when the file has no such column}, name)``: the reader behind
    :func:`read_label_table` and ``memdedup.dask.read_input`` (one rule for both engines)."""
    progress = progress if progress is not None else Progress()
    kind = input_format(path, fmt)
    name = display_name(path)
    _check_json_columns(json_columns, label_column, others, kind)
    if multiline and kind != "csv":
        raise InvalidInputError(f"--multiline applies to CSV input, not {kind} (it would do nothing)")
    with progress.bar("read", input_size(path), unit="B", unit_scale=True) as advance:
        data = read_bytes(path, progress=advance)
    if data.startswith(SQLITE_MAGIC):
        check_not_binary(data, name)
    if kind == "parquet":
        return _read_parquet(data, name, label_column, others, json_columns)
    if is_parquet(data):
        raise InvalidInputError(f"{name} is a Parquet file: name it .parquet, or pass --input-format parquet")
    text = decode_utf8(data, name)
    del data
    if kind == "text":
        if fmt is None:
            _check_text_is_meant(path, text, name)
        return split_lines(text), {c: None for c in others}, name
    if kind == "csv":
        return _read_csv(text, name, label_column, others, progress, multiline, json_columns)
    return _read_jsonl(text, name, label_column, others, progress)


def _check_json_columns(json_columns: Sequence[str], label: str, others: Sequence[str], kind: str) -> None:
    for c in json_columns:
        if c == label:
            raise InvalidInputError(
                f"--json-columns {c!r} is the label column: a label is text, not JSON (name the scope or "
                "layer column)"
            )
        if c not in others:
            named = ", ".join(others) or "none"
            raise InvalidInputError(f"--json-columns {c!r} names no scope or layer column (they are {named})")
    if json_columns and kind not in ("csv", "parquet"):
        raise InvalidInputError(
            f"--json-columns applies to CSV and Parquet inputs, not {kind} (JSON lines keep their types)"
        )


def _check_text_is_meant(path: str | os.PathLike[str], text: str, name: str) -> None:
    """Refuse input read as text that nobody asked to read as text (no ``fmt``) and that holds JSON: a
    first non-blank line that is a JSON object or array (every JSON line would be a label, at exit 0),
    whatever the name (``.txt`` too: a file of JSON lines renamed), or a ``.json`` file (a JSON
    document). ``fmt="text"`` reads it as text on purpose."""
    suffixes = _suffixes(os.fspath(path)) if os.fspath(path) != STDIN else []
    if suffixes and suffixes[-1] == ".json":
        raise InvalidInputError(
            f"{name} is named .json (a JSON document): dedup reads JSON lines (one object per line; "
            "convert a document with jq -c '.[]'); pass --input-format jsonl to read it as JSON lines, or "
            "--input-format text to read each line as a label"
        )
    start = re.match(r"\s*", text)
    at = start.end() if start is not None else 0
    if at >= len(text) or text[at] not in "{[":
        return
    end = len(text)
    for stop in ("\n", "\r"):
        found = text.find(stop, at)
        if found != -1:
            end = min(end, found)
    try:
        value = json.loads(text[at:end])
    except (ValueError, RecursionError):
        value = None
    if not isinstance(value, dict | list) and len(text) <= _JSON_DOCUMENT_LIMIT:
        try:  # a JSON document over several lines: "[" or "{" alone on the first
            document = json.loads(text)
        except (ValueError, RecursionError):
            document = None
        if isinstance(document, dict | list):
            raise InvalidInputError(
                f"{name} is a JSON document (a JSON {'object' if isinstance(document, dict) else 'array'} "
                "over several lines), not one label per line: dedup reads JSON lines (convert it with "
                "jq -c '.[]'), or pass --input-format text to read each line as a label"
            )
    if isinstance(value, dict | list):
        line = 1 + text.count("\n", 0, at) + text.count("\r", 0, at) - text.count("\r\n", 0, at)
        raise InvalidInputError(
            f"{name}:{line}: a JSON {'object' if isinstance(value, dict) else 'array'} where text was "
            "expected (no format was given, so the input is read as one label per line): pass "
            "--input-format jsonl to read JSON lines, or --input-format text to read each line as a label"
        )


def _read_csv(
    text: str,
    name: str,
    label: str,
    others: Sequence[str],
    progress: Progress,
    multiline: bool,
    json_columns: Sequence[str],
) -> tuple[list[str], dict[str, list[Any] | None], str]:
    rows = csv_rows(text, name)
    header: list[str] = []
    for start, end, row in rows:
        if end > start and not multiline:
            raise spanning_field(name, row, row, start, end)
        if row:
            header = row
            break
    if not header:
        raise InvalidInputError(
            f"{name}: no header row (the file is empty); a CSV starts with its column names"
        )
    if label not in header:
        hint = ""
        if len(header) == 1 and any(sep in header[0] for sep in ";\t|"):
            hint = " (is it separated by ';', tabs or '|'? memdedup reads comma-separated CSV)"
        raise InvalidInputError(f"{name}: the CSV header has no {label!r} column (it has {header}){hint}")
    for c in (label, *others):
        if header.count(c) > 1:
            raise InvalidInputError(
                f"{name}:1: duplicate column {c!r} in the header: which one holds the values is ambiguous"
            )
    for c in json_columns:
        if c not in header:
            raise InvalidInputError(f"{name}: --json-columns {c!r}: the CSV header has no such column")
    at = header.index(label)
    present = [(c, header.index(c), c in json_columns) for c in others if c in header]
    labels: list[str] = []
    columns: dict[str, list[Any]] = {c: [] for c, _, _ in present}
    width = len(header)
    with progress.bar("parse", None, unit=" rows", unit_scale=True) as advance:
        for start, end, row in rows:
            if not row:  # a blank line
                continue
            if end > start and not multiline:
                raise spanning_field(name, header, row, start, end)
            if len(row) > width:
                raise InvalidInputError(
                    f"{name}:{start}: {len(row)} fields, but the header has {width} (an unquoted comma, or "
                    "a row of another file?)"
                )
            labels.append(row[at] if at < len(row) else "")
            for c, k, as_json in present:
                if k >= len(row):  # a short row's absent cell
                    columns[c].append(MISSING)
                elif as_json:
                    cell = row[k]
                    columns[c].append(_from_json_cell(cell, f"{name}:{start}", c) if cell else MISSING)
                else:
                    columns[c].append(row[k])
            if len(labels) % 4096 == 0:
                advance(4096)
    return labels, {c: columns.get(c) for c in others}, name


_JSON_KINDS = {bool: "boolean", int: "number", float: "number", list: "array", dict: "object"}


def parse_jsonl_row(
    line: str, label_column: str, where: str, others: Sequence[str] = ()
) -> dict[str, Any] | None:
    """One JSONL line as an object holding ``label_column``; None for a blank line; an error naming
    ``where`` (``FILE:LINE``) for anything else: not JSON, not an object, no label field, a label that
    is not a string or null (a number, a boolean, an array or an object has no one text: quote it), a
    field memdedup reads (the label and ``others``) given twice (JSON would keep one value silently), or
    one holding an escaped lone surrogate (``"\\ud800"``: valid JSON, but no text, and no UTF-8 file
    can hold it)."""
    if not line.strip():
        return None
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{where}: not JSON ({exc.msg} at column {exc.colno})") from exc
    except RecursionError:
        raise InvalidInputError(f"{where}: not JSON (nested too deeply)") from None
    if not isinstance(row, dict):
        raise InvalidInputError(f"{where}: expected a JSON object, not {type(row).__name__}")
    if label_column not in row:
        raise InvalidInputError(f"{where}: no {label_column!r} field")
    label = row[label_column]
    if not isinstance(label, str) and not is_missing(label):  # null, and NaN (Python writes it), are empty
        raise InvalidInputError(
            f"{where}: the {label_column!r} field is a JSON {_JSON_KINDS.get(type(label), 'value')}, not a "
            "string (or null): a label is text; quote it"
        )
    check_fields(line, row, (label_column, *others), where)
    return row


def check_fields(line: str, row: dict[str, Any], fields: Sequence[str], where: str) -> None:
    """Refuse a JSON line (parsed as ``row``) that gives one of ``fields`` twice (JSON would keep one
    value silently) or holds an escaped lone surrogate in one (valid JSON, but no text: no UTF-8 output
    can hold it). The one rule for every JSONL reader (``dedup``, the Dask reader, ``tune``)."""
    # Both checks are needed only where the raw line can hold what they look for: a \u escape (a
    # surrogate or a key written with escapes) or a key's quoted name twice. Plain lines skip them.
    if "\\u" not in line and all(line.count(f'"{c}"') <= 1 for c in fields):
        return
    _check_keys(line, fields, where)
    for c in fields:
        if c in row and _lone_surrogate(row[c]):
            raise InvalidInputError(
                f"{where}: the {c!r} field holds an escaped lone surrogate (\\ud800-\\udfff without "
                "its pair): it is no text, and no UTF-8 file can hold it"
            )


def _check_keys(line: str, read: Sequence[str], where: str) -> None:
    """Refuse a line whose top-level object gives one of the fields in ``read`` twice."""
    objects: list[list[tuple[str, Any]]] = []

    def keep(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        objects.append(pairs)
        return dict(pairs)

    json.loads(line, object_pairs_hook=keep)
    top = [key for key, _ in objects[-1]]  # the top-level object is the last one built
    for c in read:
        if top.count(c) > 1:
            raise InvalidInputError(
                f"{where}: duplicate key {c!r}: JSON would keep one of its {top.count(c)} values silently; "
                "write it once"
            )


def _lone_surrogate(value: Any) -> bool:
    """Whether a JSON value holds a lone surrogate anywhere (a str that UTF-8 cannot encode)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _read_jsonl(
    text: str, name: str, label: str, others: Sequence[str], progress: Progress
) -> tuple[list[str], dict[str, list[Any] | None], str]:
    rows: list[dict[str, Any]] = []
    with progress.bar("parse", None, unit=" lines", unit_scale=True) as advance:
        for number, line in enumerate(split_lines(text), 1):
            row = parse_jsonl_row(line, label, f"{name}:{number}", others)
            if row is not None:
                rows.append(row)
            if number % 4096 == 0:
                advance(4096)
    columns: dict[str, list[Any] | None] = {
        c: [cell_value(r, c) for r in rows] if any(c in r for r in rows) else None for c in others
    }
    return [label_text(r[label]) for r in rows], columns, name


def _pyarrow(what: str) -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise InvalidInputError(f"{what} needs pyarrow: pip install 'memdedup[parquet]'") from None
    return pyarrow


def check_label_type(name: str, label: str, label_type: Any) -> None:
    """Refuse a label column whose Arrow type is not text (a dictionary of text, or all nulls, is).

    The one rule for both engines' Parquet readers: a number or a bool turned into its ``str()`` would
    be deduplicated as a label nobody wrote, at exit 0."""
    pa = _pyarrow(f"reading {name} (Parquet)")
    if isinstance(label_type, pa.DataType) and pa.types.is_dictionary(label_type):
        label_type = label_type.value_type
    if not isinstance(label_type, pa.DataType) or not (
        pa.types.is_string(label_type)
        or pa.types.is_large_string(label_type)
        or pa.types.is_null(label_type)
        or (hasattr(pa.types, "is_string_view") and pa.types.is_string_view(label_type))
    ):
        raise InvalidInputError(
            f"{name}: the {label!r} column holds {label_type}, not string: a label is text (cast the column "
            "to string first)"
        )


def _read_parquet(
    data: bytes, name: str, label: str, others: Sequence[str], json_columns: Sequence[str] = ()
) -> tuple[list[str], dict[str, list[Any] | None], str]:
    pa = _pyarrow(f"reading {name} (Parquet)")
    try:
        parquet = pa.parquet.ParquetFile(pa.BufferReader(data))
        names = list(parquet.schema_arrow.names)
    except (pa.ArrowException, OSError) as exc:
        raise InvalidInputError(f"{name}: not a readable Parquet file ({exc})") from exc
    if label not in names:
        raise InvalidInputError(f"{name}: no {label!r} column (it has {names})")
    check_label_type(name, label, parquet.schema_arrow.field(label).type)
    for c in json_columns:
        if c not in names:
            raise InvalidInputError(f"{name}: --json-columns {c!r}: no such column (it has {names})")
        kind = parquet.schema_arrow.field(c).type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_null(kind)):
            raise InvalidInputError(
                f"{name}: --json-columns {c!r}: the column holds {kind}, not the JSON text of a string column"
            )
    present = [c for c in others if c in names]
    # One thread: a read on Arrow's pool sometimes left a worker alive at exit, and the process then
    # aborted ("terminate called without an active exception", apache/arrow#34314) after its work.
    try:
        table = parquet.read(columns=[label, *present], use_threads=False)
    except (pa.ArrowException, OSError) as exc:
        raise InvalidInputError(f"{name}: not a readable Parquet file ({exc})") from exc
    labels = [label_text(v) for v in table.column(label).to_pylist()]
    columns: dict[str, list[Any] | None] = {}
    for c in others:
        if c not in present:
            columns[c] = None
        elif c in json_columns:
            columns[c] = [
                MISSING if v is None else _from_json_cell(v, f"{name}: row {k + 1}", c)
                for k, v in enumerate(table.column(c).to_pylist())
            ]
        else:
            columns[c] = arrow_values(table.column(c))
    return labels, columns, name


def arrow_values(column: Any) -> list[Any]:
    """A Parquet (Arrow) scope or layer column as Python values: a null is ``None``, a nested value a
    :class:`JSONValue` (both engines read Parquet cells through this)."""
    return [
        JSONValue(json.dumps(v, sort_keys=True, ensure_ascii=False, default=str))
        if isinstance(v, dict | list)
        else v
        for v in column.to_pylist()
    ]


# ---------------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------------
def output_format(path: str | os.PathLike[str], fmt: str | None = None) -> str:
    """The output format: ``fmt`` when given, else by extension (JSON lines for ``-``); an unknown
    extension is an error that lists the known ones."""
    name = os.fspath(path)
    if fmt is None and name == STDIN:
        return "jsonl"
    kind = _format(path, fmt, OUTPUT_FORMATS, "output")
    if kind is None:
        raise InvalidInputError(
            f"unknown output format for {display_name(name)}: name it .jsonl, .csv or .parquet (.jsonl.gz "
            "and .csv.gz compress), or pass --output-format"
        )
    if kind == "parquet" and name.lower().endswith(".gz"):
        raise InvalidInputError(f"{display_name(name)}: Parquet is compressed already; name it .parquet")
    return kind


def write_records(
    path: str | os.PathLike[str],
    records: Iterable[dict[str, Any]],
    columns: Sequence[str],
    *,
    fmt: str | None = None,
    total: int | None = None,
    progress: Progress | None = None,
    typed: Mapping[str, Sequence[Any] | None] | None = None,
) -> list[str]:
    """Write ``records`` (dicts with the ``columns``; a key that is absent is a missing cell) as JSON
    lines, CSV or Parquet (see the module docstring), and return the columns written as JSON text.

    ``typed`` maps each column whose values may be of any type (scope, layer) to all its values, in
    the order of ``records``: a CSV column among them whose values are not all text is written as JSON
    text (the header must know before the first row); a Parquet column among them that Arrow cannot
    hold exactly is written as JSON text too."""
    kind = output_format(path, fmt)
    progress = progress if progress is not None else Progress()
    typed_values: dict[str, Sequence[Any]] = {
        c: v for c, v in (typed or {}).items() if c in columns and v is not None
    }
    as_json: list[str] = []
    with progress.bar("write", total, unit=" rows", unit_scale=True) as advance:
        counted = _counting(records, advance)
        if kind == "jsonl":
            with atomic_output(path, binary=False) as out:
                for record in counted:
                    row = {
                        c: cell_json(record[c]) for c in columns if c in record and record[c] is not MISSING
                    }
                    out.write(json.dumps(row, ensure_ascii=False) + "\n")
        elif kind == "csv":
            as_json = [c for c, values in typed_values.items() if _needs_json_text(values)]
            with atomic_output(path, binary=False) as out:
                writer = csv.writer(out, lineterminator="\n")
                writer.writerow(columns)
                cells = [(c, _csv_json_cell if c in as_json else _csv_cell) for c in columns]
                for record in counted:
                    writer.writerow([cell(record.get(c, MISSING)) for c, cell in cells])
        else:
            pa = _pyarrow(f"writing {display_name(path)} (Parquet)")
            rows = list(counted)
            arrays = {}
            for c in columns:
                values = [r.get(c, MISSING) for r in rows]
                arrays[c], text = _arrow_array(pa, values, exact=c in typed_values)
                if text and c in typed_values:
                    as_json.append(c)
            with atomic_output(path, binary=True) as out:
                pa.parquet.write_table(pa.table(arrays), out)
    return as_json


def _counting(records: Iterable[dict[str, Any]], advance: Callable[[int], None]) -> Iterator[dict[str, Any]]:
    n = 0
    for record in records:
        yield record
        n += 1
        if n % 4096 == 0:
            advance(4096)
    advance(n % 4096)


def _needs_json_text(values: Sequence[Any]) -> bool:
    """Whether a typed column needs JSON text in CSV: a value that is not text, or both ``""`` and a
    missing value (one empty cell each)."""
    seen_missing = seen_empty = False
    for v in values:
        if v is MISSING:
            seen_missing = True
        elif type(v) is not str:
            return True
        elif not v:
            seen_empty = True
    return seen_missing and seen_empty


def _csv_cell(value: Any) -> str:
    if value is None or value is MISSING:
        return ""
    if isinstance(value, float) and math.isnan(value):
        return ""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return repr(value) if isinstance(value, float) else str(value)
    return cell_text(value)


def _csv_json_cell(value: Any) -> str:
    """A cell of a column written as JSON text: a missing value is an empty cell, anything else JSON."""
    return "" if value is MISSING else json_cell(value)


def _same_cell(written: Any, read: Any) -> bool:
    """Whether ``read`` (a value back from Arrow, as :func:`arrow_values` gives it) is ``written``:
    the same type and value (a missing value reads back as a null)."""
    if written is MISSING:
        return read is None
    if isinstance(written, JSONValue):
        return isinstance(read, JSONValue) and read.json == written.json
    if type(written) is not type(read):
        return False
    if isinstance(written, float) and math.isnan(written):
        return math.isnan(read)
    return bool(written == read)


def _arrow_array(pa: Any, values: list[Any], *, exact: bool = False) -> tuple[Any, bool]:
    """A Parquet column and whether it holds JSON text: the values' own type when Arrow takes them (a
    missing cell a null) and, with ``exact``, gives every one back with its type and value; else their
    JSON text (a missing cell a null, a JSON ``null`` the text ``null``)."""
    plain = [
        None if v is MISSING else (json.loads(v.json) if isinstance(v, JSONValue) else v) for v in values
    ]
    try:
        array = pa.array(plain)
    except (pa.ArrowException, OverflowError, TypeError, ValueError):
        array = None
    if array is not None and exact:
        back = arrow_values(array)
        has_none = any(v is None for v in values)
        if (has_none and any(v is MISSING for v in values)) or not all(
            _same_cell(w, r) for w, r in zip(values, back, strict=True)
        ):
            array = None
    if array is not None:
        return array, False
    cells = [None if v is MISSING else json_cell(v) for v in values]
    return pa.array(cells, type=pa.string()), True
