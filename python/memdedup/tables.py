"""Label tables in files: what ``memdedup dedup`` reads and writes, one rule for both engines.

Input formats, by ``fmt`` or else by extension (after an optional ``.gz``): text (``.txt`` and any
other name: one label per line), JSON lines (``.jsonl``/``.ndjson``: objects with a label field and
optional scope and layer fields), CSV (``.csv``: a header row; a UTF-8 byte-order mark is dropped) and
Parquet (``.parquet``/``.pq``; needs pyarrow). ``-`` is standard input (text unless ``fmt`` says
otherwise). Bytes are opened as :mod:`memdedup.inputs` opens every input: gzip by its magic bytes, UTF-8
strictly, errors naming the file, the line and the byte.

Labels: a missing value (JSON ``null``, a Parquet null, NaN) is the empty label (:mod:`memdedup.missing`);
any other label must be text: a JSONL label that is a number, boolean, array or object, or a Parquet label
column that is not string, is an error (``str()`` of such a value is no label anyone wrote). A field read
given twice on a JSON line, or holding an escaped lone surrogate, is an error naming the line
(:func:`check_fields`); so is a CSV header naming a column read twice, or a row longer than the header.

Scope and layer cells keep their type, so they partition exactly as :func:`memdedup.batch.replay` keys
them: a JSON string, number, boolean or ``null`` is that Python value, an object or array a
:class:`JSONValue`, and a row without the field :data:`MISSING` (so ``null``, ``""`` and a missing field
are three partitions, and ``1``, ``1.0``, ``true`` and ``"1"`` four). A CSV cell is always text (a short
row's absent cell is :data:`MISSING`); a Parquet cell is its column's value (a null is ``None``).

Output formats, by ``fmt`` or else by extension: ``.jsonl``, ``.csv`` (each optionally ``.gz``) and
``.parquet``; ``-`` is standard output (JSON lines unless ``fmt`` says otherwise). Any other extension is
refused before anything runs. A file is written to a temporary name beside it and renamed when complete,
so an interrupted or failed run never leaves half a file.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

from memdedup.errors import InvalidInputError
from memdedup.inputs import STDIN, decode_utf8, display_name, input_size, is_parquet, read_bytes, split_lines
from memdedup.missing import is_missing, label_text
from memdedup.progress import Progress

__all__ = [
    "INPUT_FORMATS",
    "MISSING",
    "OUTPUT_FORMATS",
    "JSONValue",
    "LabelTable",
    "check_fields",
    "input_format",
    "output_format",
    "parse_jsonl_row",
    "read_columns",
    "read_label_table",
    "write_records",
]

INPUT_FORMATS = ("text", "jsonl", "csv", "parquet")
OUTPUT_FORMATS = ("jsonl", "csv", "parquet")
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
) -> LabelTable:
    """Read labels from text, JSONL, CSV or Parquet (see the module docstring).

    A scope or layer column is used when present; a label column that is missing from a JSONL object,
    a CSV header or a Parquet schema is an error naming the line (or the columns there are), never a
    silent skip. Every error is an :class:`~memdedup.errors.InvalidInputError`.
    """
    others = [c for c in (scope_column, layer_column) if c is not None]
    labels, columns, name = read_columns(path, label_column, others, fmt=fmt, progress=progress)
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
) -> tuple[list[str], dict[str, list[Any] | None], str]:
    """``(labels, {column: values or None when the file has no such column}, name)``: the reader behind
    :func:`read_label_table` and ``memdedup.dask.read_input`` (one rule for both engines)."""
    progress = progress if progress is not None else Progress()
    kind = input_format(path, fmt)
    name = display_name(path)
    with progress.bar("read", input_size(path), unit="B", unit_scale=True) as advance:
        data = read_bytes(path, progress=advance)
    if kind == "parquet":
        return _read_parquet(data, name, label_column, others)
    if is_parquet(data):
        raise InvalidInputError(f"{name} is a Parquet file: name it .parquet, or pass --input-format parquet")
    text = decode_utf8(data, name)
    del data
    if kind == "text":
        return split_lines(text), {c: None for c in others}, name
    if kind == "csv":
        return _read_csv(text, name, label_column, others, progress)
    return _read_jsonl(text, name, label_column, others, progress)


def _read_csv(
    text: str, name: str, label: str, others: Sequence[str], progress: Progress
) -> tuple[list[str], dict[str, list[Any] | None], str]:
    # csv refuses a field over 128 KiB by default: a long label is still a label (the text is in memory
    # already, so no limit protects anything here).
    if csv.field_size_limit() < len(text):
        csv.field_size_limit(min(len(text), sys.maxsize))
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        header = reader.fieldnames or []
    except csv.Error as exc:
        raise InvalidInputError(f"{name}:1: not CSV ({exc})") from exc
    if not header:
        raise InvalidInputError(
            f"{name}: no header row (the file is empty); a CSV starts with its column names"
        )
    if label not in header:
        raise InvalidInputError(f"{name}: the CSV header has no {label!r} column (it has {header})")
    for c in (label, *others):
        if header.count(c) > 1:
            raise InvalidInputError(
                f"{name}:1: duplicate column {c!r} in the header: which one holds the values is ambiguous"
            )
    present = [c for c in others if c in header]
    labels: list[str] = []
    columns: dict[str, list[Any]] = {c: [] for c in present}
    with progress.bar("parse", None, unit=" rows", unit_scale=True) as advance:
        try:
            for row in reader:
                if None in row:  # csv.DictReader's key for the cells past the header's
                    raise InvalidInputError(
                        f"{name}:{reader.line_num}: {len(header) + len(row[None])} fields, but the header "
                        f"has {len(header)} (an unquoted comma, or a row of another file?)"
                    )
                labels.append(label_text(row.get(label)))
                for c in present:
                    columns[c].append(cell_value(row, c, csv=True))
                if len(labels) % 4096 == 0:
                    advance(4096)
        except csv.Error as exc:
            raise InvalidInputError(f"{name}:{reader.line_num}: not CSV ({exc})") from exc
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
    data: bytes, name: str, label: str, others: Sequence[str]
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
    present = [c for c in others if c in names]
    # One thread: a read on Arrow's pool sometimes left a worker alive at exit, and the process then
    # aborted ("terminate called without an active exception", apache/arrow#34314) after its work.
    try:
        table = parquet.read(columns=[label, *present], use_threads=False)
    except (pa.ArrowException, OSError) as exc:
        raise InvalidInputError(f"{name}: not a readable Parquet file ({exc})") from exc
    labels = [label_text(v) for v in table.column(label).to_pylist()]
    return labels, {c: arrow_values(table.column(c)) if c in present else None for c in others}, name


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
            f"unknown output format for {name}: name it .jsonl, .csv or .parquet (.jsonl.gz and .csv.gz "
            "compress), or pass --output-format"
        )
    if kind == "parquet" and name.lower().endswith(".gz"):
        raise InvalidInputError(f"{name}: Parquet is compressed already; name it .parquet")
    return kind


@contextmanager
def _output(path: str | os.PathLike[str], binary: bool) -> Iterator[IO[Any]]:
    """A stream to ``path`` (stdout for ``-``): a temporary file beside it, renamed when the block ends
    without an error (removed when it does not). ``.gz`` compresses."""
    import gzip
    import tempfile

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
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent or ".")
    except OSError as exc:
        raise InvalidInputError(f"cannot write {name}: {exc.strerror or exc}") from exc
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
        raise InvalidInputError(f"cannot write {name}: {exc.strerror or exc}") from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_writable(path: str | os.PathLike[str]) -> None:
    """Fail now, before any work, when ``path``'s folder does not exist or is not writable."""
    name = os.fspath(path)
    if name == STDIN:
        return
    parent = Path(name).parent
    if not parent.is_dir():
        raise InvalidInputError(f"cannot write {name}: no such directory {str(parent)!r}")
    if not os.access(parent, os.W_OK):
        raise InvalidInputError(f"cannot write {name}: the directory is not writable")
    if Path(name).is_dir():
        raise InvalidInputError(f"cannot write {name}: it is a directory")


def write_records(
    path: str | os.PathLike[str],
    records: Iterable[dict[str, Any]],
    columns: Sequence[str],
    *,
    fmt: str | None = None,
    total: int | None = None,
    progress: Progress | None = None,
) -> None:
    """Write ``records`` (dicts with the ``columns``; a key that is absent is a missing cell) as JSON
    lines, CSV or Parquet (see the module docstring)."""
    kind = output_format(path, fmt)
    progress = progress if progress is not None else Progress()
    with progress.bar("write", total, unit=" rows", unit_scale=True) as advance:
        counted = _counting(records, advance)
        if kind == "jsonl":
            with _output(path, binary=False) as out:
                for record in counted:
                    row = {
                        c: cell_json(record[c]) for c in columns if c in record and record[c] is not MISSING
                    }
                    out.write(json.dumps(row, ensure_ascii=False) + "\n")
        elif kind == "csv":
            with _output(path, binary=False) as out:
                writer = csv.writer(out, lineterminator="\n")
                writer.writerow(columns)
                for record in counted:
                    writer.writerow([_csv_cell(record.get(c, MISSING)) for c in columns])
        else:
            pa = _pyarrow(f"writing {display_name(path)} (Parquet)")
            rows = list(counted)
            arrays = {c: _arrow_array(pa, [r.get(c, MISSING) for r in rows]) for c in columns}
            with _output(path, binary=True) as out:
                pa.parquet.write_table(pa.table(arrays), out)


def _counting(records: Iterable[dict[str, Any]], advance: Callable[[int], None]) -> Iterator[dict[str, Any]]:
    n = 0
    for record in records:
        yield record
        n += 1
        if n % 4096 == 0:
            advance(4096)
    advance(n % 4096)


def _csv_cell(value: Any) -> str:
    if value is None or value is MISSING:
        return ""
    if isinstance(value, float) and math.isnan(value):
        return ""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return repr(value) if isinstance(value, float) else str(value)
    return cell_text(value)


def _arrow_array(pa: Any, values: list[Any]) -> Any:
    """A Parquet column: the values' own type when they share one (a missing cell a null), else their
    JSON text."""
    plain = [
        None if v is MISSING else (json.loads(v.json) if isinstance(v, JSONValue) else v) for v in values
    ]
    try:
        return pa.array(plain)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array(
            [None if v is None else json.dumps(v, ensure_ascii=False, sort_keys=True) for v in plain],
            type=pa.string(),
        )
