"""Large-batch dedup on Dask, partitioned by scope (optional extra: ``pip install memdedup[dask]``).

Scope (and layer, when given) is a hard partition of the dedup contract: nothing collapses across it. So
the input is shuffled by ``(scope, layer)``, every partition then holds whole groups, and each partition
runs the in-process engine (:func:`memdedup.batch.replay`, or :func:`~memdedup.batch.join` and
:func:`~memdedup.batch.clusters`) in Rust on a worker, without the GIL. The results equal the in-process
engine on the whole input, row for row.

Row ids: every row gets a global ``row_id`` before the shuffle: the ``order`` column when one is given
(integers, unique), else the row's position in the input (0, 1, ...: a cumulative count across the
partitions in input order). ``canonical`` is reported as a row id, and within each group the writes are
replayed in ``row_id`` order, so the result equals ``batch.replay`` on the input sorted by ``row_id``.

A replay never splits a group: one huge scope runs as one task on one worker (the replay of a scope is
sequential by definition: each write is decided against the canonicals before it); :func:`dedup` logs a
warning when one group holds more than half of the rows. A join splits a group of more than
``max_rows_per_task`` rows into blocks of its rows, in order, and joins every pair of blocks as a task of
its own (:func:`split_join`): each task holds two blocks, several workers share the group, and the
pairs they find are exactly the group's (every pair of rows lies in some pair of blocks). One last task
clusters the group from them, as :func:`~memdedup.batch.clusters` does.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memdedup import batch, tables
from memdedup._rules import (
    DEDUP_PREFIX_LEN,
    DEDUP_QUERY_LIMIT,
    DEDUP_SIMILARITY_THRESHOLD,
    DEDUP_SUBSUME_MIN_CHARS,
)
from memdedup.dedup import normalise_label
from memdedup.errors import BackendUnavailableError, InvalidInputError
from memdedup.inputs import display_name, input_size
from memdedup.missing import as_labels, label_text
from memdedup.progress import Progress
from memdedup.scrub import redact

try:
    import dask
    import dask.bag as db
    import dask.base
    import dask.dataframe as dd
    import pandas as pd
    from dask.delayed import delayed
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "memdedup.dask needs Dask: pip install 'memdedup[dask]' (dask[dataframe], distributed, pyarrow)"
    ) from exc

if TYPE_CHECKING:
    from distributed import Client

__all__ = [
    "DEFAULT_MAX_ROWS_PER_TASK",
    "OUTPUT_COLUMNS",
    "ROW_ID",
    "dedup",
    "dedup_file",
    "local_client",
    "read_input",
    "split_join",
]

log = logging.getLogger(__name__)

ROW_ID = "row_id"
OUTPUT_COLUMNS = (ROW_ID, "canonical", "reason", "score")
_MODES = ("replay", "join")
#: A join task holds at most this many rows (two blocks of half as many): a group with more is split.
DEFAULT_MAX_ROWS_PER_TASK = 500_000


# ---------------------------------------------------------------------------------------------------
# Input
# ---------------------------------------------------------------------------------------------------
def _keep_types() -> Any:
    """Dask's ``dataframe.convert-string`` off while a graph is built and run: it would turn an object
    column's ``1``, ``True`` and ``"1"`` (and MISSING) into the same text, merging partitions the
    in-process engine keeps apart; and task-based shuffles, since the P2P shuffle moves partitions as
    Arrow tables, which cannot hold such typed object cells."""
    return dask.config.set({"dataframe.convert-string": False, "dataframe.shuffle.method": "tasks"})


def _kind(path: Path, fmt: str | None) -> str:
    if fmt is None and path.is_dir():
        return "parquet"
    return tables.input_format(path, fmt)


def _jsonl_rows(lines: list[str], columns: tuple[str, ...], path: str) -> list[tuple[Any, ...]]:
    """A partition of a remote JSONL file, read with the in-process reader's rules (its line numbers
    are not known here: an error quotes the line instead)."""
    label, *others = columns
    out = []
    for line in lines:
        # The line quoted scrubbed, as every message quotes input (a credential never reaches the error).
        where = f"{path} (the line {redact(line, 80)!r})"
        row = tables.parse_jsonl_row(line, label, where, others)
        if row is None:
            continue
        out.append((label_text(row[label]), *(tables.cell_value(row, c) for c in others)))
    return out


def read_input(
    path: str | os.PathLike[str],
    *,
    label: str = "label",
    scope: str | None = "scope",
    layer: str | None = "layer",
    order: str | None = None,
    blocksize: str | int | None = "64MiB",
    fmt: str | None = None,
    multiline: bool = False,
    json_columns: Sequence[str] = (),
) -> dd.DataFrame:
    """A Dask DataFrame of ``path``: Parquet (a ``.parquet``/``.pq`` file or a directory), CSV (``.csv``),
    JSON lines (``.jsonl``/``.ndjson``) or text (anything else: one label per line); ``.gz`` on the
    last three; ``fmt`` overrides the extension.

    A local file (not a directory, URL or glob) is read by :func:`memdedup.tables.read_columns`, the
    in-process engine's reader, and split into partitions of about ``blocksize`` bytes: the same labels,
    the same typed scope and layer values, the same errors (the file, the line, the byte). A directory,
    URL or glob goes to Dask's readers with the same per-cell rules (a JSONL error then quotes the line:
    its number is not known in a block).

    A ``scope`` or ``layer`` column the file does not have is added as :data:`memdedup.tables.MISSING`
    for every row (one partition, as the in-process engine does without it); the label column must be
    there. ``order``, when given, must be in the file and is read as integers. ``multiline`` and
    ``json_columns`` apply to a local file as :func:`memdedup.tables.read_columns` applies them.
    """
    with _keep_types():
        return _read_input(path, label, scope, layer, order, blocksize, fmt, multiline, json_columns)


def _read_input(
    path: str | os.PathLike[str],
    label: str,
    scope: str | None,
    layer: str | None,
    order: str | None,
    blocksize: str | int | None,
    fmt: str | None,
    multiline: bool = False,
    json_columns: Sequence[str] = (),
) -> dd.DataFrame:
    url = os.fspath(path)
    p = Path(url)
    kind = _kind(p, fmt)
    wanted = [c for c in (label, scope, layer, order) if c is not None]
    if len(set(wanted)) != len(wanted):
        raise InvalidInputError(f"the label, scope, layer and order columns must differ: {wanted}")
    local = url == "-" or ("://" not in url and not any(ch in url for ch in "*?["))
    if local and url != "-" and not p.exists():
        raise InvalidInputError(f"cannot read {path}: no such file or directory")
    others = [c for c in (scope, layer, order) if c is not None]
    if local and not p.is_dir():
        labels, columns, name = tables.read_columns(
            url, label, others, fmt=kind, multiline=multiline, json_columns=json_columns
        )
        if order is not None and columns.get(order) is None:
            raise InvalidInputError(f"{name}: no {order!r} column")
        data = {label: labels}
        for c in others:
            values = columns.get(c)
            data[c] = values if values is not None else [tables.MISSING] * len(labels)
        frame = pd.DataFrame({c: pd.Series(v, dtype=object) for c, v in data.items()})
        if order is not None and kind == "parquet":  # typed already: ints, or refused (not coerced)
            frame[order] = _order_column(data[order], name, order)
        size = input_size(url) or 0
        block = dask.utils.parse_bytes(blocksize) if blocksize is not None else size or 1
        parts = max(1, min(len(frame), -(-size // max(1, block)))) if len(frame) else 1
        frame = dd.from_pandas(frame, npartitions=parts, sort=False)
    else:
        if json_columns:
            raise InvalidInputError("json_columns (--json-columns) applies to a local file")
        try:
            frame = _read_remote(url, kind, label, others, blocksize, order)
        except BackendUnavailableError:
            raise
        except ImportError as exc:
            # fsspec's package for the protocol (s3fs for s3://): the environment, stated, not a bug.
            # The URL is scrubbed (it can hold credentials: s3://key:secret@bucket).
            reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
            raise BackendUnavailableError(f"cannot read {redact(url)}: {reason}") from None
    if label not in frame.columns:
        raise InvalidInputError(f"{path}: no {label!r} column (it has {list(frame.columns)})")
    if order and order not in frame.columns:
        raise InvalidInputError(f"{path}: no {order!r} column (it has {list(frame.columns)})")
    if order and kind in ("csv", "jsonl", "text"):
        # Text to integers; a blank or non-numeric value becomes missing, which dedup() counts and refuses.
        frame = frame.assign(**{order: dd.to_numeric(frame[order], errors="coerce").astype("Int64")})
    for column in (scope, layer):
        if column is not None and column not in frame.columns:
            frame = frame.assign(**{column: tables.MISSING})
    return frame[wanted]


def _order_column(values: list[Any], name: str, order: str) -> pd.Series:
    """A Parquet file's order column as nullable int64 (read cell by cell, it is Python objects): a
    value that is not an integer is refused, never coerced; a null stays missing (refused later)."""
    wrong = next((v for v in values if v is not None and (type(v) is bool or not isinstance(v, int))), None)
    if wrong is not None:
        raise InvalidInputError(
            f"{name}: the order column {order!r} must hold integers, not {type(wrong).__name__} ({wrong!r})"
        )
    try:
        return pd.Series(pd.array(values, dtype="Int64"))
    except (OverflowError, TypeError, ValueError):
        raise InvalidInputError(f"{name}: the order column {order!r} holds an int beyond 64 bits") from None


def _read_remote(
    url: str, kind: str, label: str, others: list[str], blocksize: str | int | None, order: str | None
) -> dd.DataFrame:
    """A directory, URL or glob, with Dask's readers (gzip cannot be split: one partition a file)."""
    size = None if url.lower().endswith(".gz") else blocksize
    if kind == "parquet":
        frame = dd.read_parquet(url, dtype_backend="pyarrow")
        if label in frame.columns:
            # The schema, not the data: the in-process reader's refusal, before any task runs.
            tables.check_label_type(url, label, _arrow_type(frame[label].dtype))
        return frame
    if kind == "csv":
        return dd.read_csv(
            url, dtype=object, keep_default_na=False, na_filter=False, blocksize=size, encoding="utf-8"
        )
    if kind == "jsonl":
        columns = (label, *others)
        bag = db.read_text(url, blocksize=size, encoding="utf-8").map_partitions(_jsonl_rows, columns, url)
        return bag.to_dataframe(meta=pd.DataFrame({c: pd.Series(dtype=object) for c in columns}))
    if order is not None:
        raise InvalidInputError(f"{url}: a text file has no {order!r} column")
    bag = db.read_text(url, blocksize=size, encoding="utf-8").map_partitions(
        # read_text reads with universal newlines and keeps each line's "\n": drop just that, as
        # memdedup.inputs.split_lines splits (a U+2028 inside a label is not a line break).
        lambda lines: [(line[:-1] if line.endswith("\n") else line,) for line in lines]
    )
    return bag.to_dataframe(meta=pd.DataFrame({label: pd.Series(dtype=object)}))


def _arrow_type(dtype: Any) -> Any:
    """The Arrow type of the pandas dtype Dask's Parquet reader gave a column: text for pandas' string
    and object dtypes (Parquet's byte arrays), the categories' type for a categorical, else numpy's."""
    import pyarrow as pa

    if isinstance(dtype, pd.ArrowDtype):
        return dtype.pyarrow_dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return pa.dictionary(pa.int32(), _arrow_type(dtype.categories.dtype))
    if pd.api.types.is_string_dtype(dtype):
        return pa.string()
    try:
        return pa.from_numpy_dtype(np.dtype(dtype))
    except (TypeError, pa.ArrowException):
        return str(dtype)  # not text: named as pandas names it


def _key_column(part: pd.DataFrame, keys: tuple[str, ...]) -> pd.Series:
    """Each row's partition as text that equals another row's exactly when the in-process engine puts
    the two in one partition (:func:`memdedup.batch.partition_token`): what the shuffle groups by."""
    columns = [_cells(part[k]) for k in keys]
    tokens = [
        "\x00".join(batch.partition_token(v, k) for v, k in zip(values, keys, strict=True))
        for values in zip(*columns, strict=True)
    ]
    return pd.Series(tokens, index=part.index, dtype=object)


def _cells(column: pd.Series) -> list[Any]:
    """A scope or layer column's values as the in-process reader has them (an Arrow-backed column's
    nulls as None, its nested values as :class:`~memdedup.tables.JSONValue`)."""
    if isinstance(column.dtype, pd.ArrowDtype):
        import pyarrow as pa

        return tables.arrow_values(pa.array(column.array))
    return column.tolist()


# ---------------------------------------------------------------------------------------------------
# The per-partition work (runs on the workers)
# ---------------------------------------------------------------------------------------------------
_KEY = "_memdedup_partition"


def _dedup_partition(
    part: pd.DataFrame,
    *,
    out_meta: pd.DataFrame,
    mode: str,
    label: str,
    keys: tuple[str, ...],
    params: dict[str, Any],
    cluster: str,
) -> pd.DataFrame:
    """Dedup one shuffled partition (whole groups only): sort by row id, one engine call for every group.

    Rows are grouped by their partition token (``_KEY``), which equals another row's exactly when the
    in-process engine groups the two: so the groups here are the in-process engine's groups."""
    if part.empty:
        return out_meta.iloc[:0].copy()
    part = _by_row_id(part)
    labels = _label_texts(part, label)
    groups = part[_KEY].tolist() if keys else None
    if mode == "replay":
        r = batch.replay(labels, scopes=groups, **params)
        canonical, reason, score, via = r.canonical, r.reason, r.score, None
    else:
        c = batch.clusters(
            labels, mode=cluster, threshold=params["threshold"], min_chars=params["min_chars"], scopes=groups
        )
        canonical, reason, score, via = c.canonical, c.reason, c.score, c.via
    return _result(part, labels, canonical, reason, score, via, out_meta=out_meta, label=label, keys=keys)


def _by_row_id(part: pd.DataFrame) -> pd.DataFrame:
    """``part`` sorted by row id; a repeated row id (an order column that is not unique) is refused."""
    part = part.sort_values(ROW_ID, kind="stable")
    ids = part[ROW_ID].to_numpy(dtype=np.int64)
    if len(ids) > 1 and bool((ids[1:] == ids[:-1]).any()):
        dup = int(ids[1:][ids[1:] == ids[:-1]][0])
        raise InvalidInputError(f"the order column must be unique (it is the row id); {dup} repeats")
    return part


def _label_texts(part: pd.DataFrame, label: str) -> list[str]:
    return [label_text(v) for v in as_labels(part[label])]


def _result(
    part: pd.DataFrame,
    labels: list[str],
    canonical: Any,
    reason: list[str],
    score: Any,
    via: list[int | None] | None,
    *,
    out_meta: pd.DataFrame,
    label: str,
    keys: tuple[str, ...],
) -> pd.DataFrame:
    """The output rows of ``part`` (sorted by row id): ``canonical`` and ``via`` as row ids (``via``:
    the row whose match linked this one, its canonical in a replay; missing for a canonical)."""
    ids = part[ROW_ID].to_numpy(dtype=np.int64)
    at = np.asarray(canonical, dtype=np.int64)
    if via is None:
        via = [None if c == k else c for k, c in enumerate(at.tolist())]
    out = pd.DataFrame(
        {
            ROW_ID: ids,
            **{k: part[k].to_numpy() for k in keys},
            label: labels,
            "canonical": ids[at],
            "reason": reason,
            "score": np.asarray(score, dtype=np.float64),
            "via": pd.array([None if v is None else int(ids[v]) for v in via], dtype="Int64"),
        }
    )
    return out.astype(out_meta.dtypes.to_dict())


# ---------------------------------------------------------------------------------------------------
# One group's join across workers (runs on the workers)
# ---------------------------------------------------------------------------------------------------
# The group's rows, in row-id order, are cut into k blocks; the task for blocks a < b joins the rows of
# both, in order (batch.join on groups), and maps its groups to the group's own: a group is a text
# identical after normalisation (numbered in order of first occurrence, as the join numbers them). Every
# pair of rows (i, j), i < j, lies in some pair of blocks, in order, so the union of the tasks' group
# pairs is the group pairs of the whole join: (g, h) when some i in g before some j in h matches, (g, g)
# when two labels of g match. The answer does not depend on k.


def _split_prepare(part: pd.DataFrame, label: str) -> tuple[list[str], np.ndarray]:
    """A group's labels (its rows sorted by row id) and each label's text group."""
    labels = _label_texts(part, label)
    return labels, _text_groups(labels)


def _text_groups(labels: list[str]) -> np.ndarray:
    """Each label's group of identical normalised texts, numbered in order of first occurrence: the
    groups :func:`memdedup.batch.join` (``expand=False``) numbers (the same normalisation decides)."""
    ids: dict[str, int] = {}
    return np.fromiter(
        (ids.setdefault(normalise_label(text), len(ids)) for text in labels),
        dtype=np.int64,
        count=len(labels),
    )


def _split_block(prepared: tuple[list[str], np.ndarray], lo: int, hi: int) -> tuple[list[str], np.ndarray]:
    """Rows ``lo`` to ``hi`` of a prepared group: what one block's tasks receive."""
    labels, group = prepared
    return labels[lo:hi], group[lo:hi]


def _split_pairs(
    first: tuple[list[str], np.ndarray],
    second: tuple[list[str], np.ndarray] | None,
    threshold: Any,
    min_chars: int,
) -> np.ndarray:
    """The group pairs among the rows of two blocks (``second`` after ``first``; None: one block alone),
    in the whole group's numbering."""
    labels, group = first if second is None else (first[0] + second[0], np.concatenate([first[1], second[1]]))
    if not labels:
        return np.empty((0, 2), dtype=np.int64)
    joined = batch.join(labels, threshold=threshold, min_chars=min_chars, expand=False)
    to_group = np.empty(int(joined.group.max()) + 1, dtype=np.int64)
    to_group[joined.group] = group
    return to_group[joined.pairs].reshape(-1, 2)


def _split_merge(group: np.ndarray, *found: np.ndarray) -> batch.JoinGroups:
    """The whole group's join from its block-pair tasks' group pairs: their union, sorted."""
    pairs = np.concatenate(found) if found else np.empty((0, 2), dtype=np.int64)
    if len(pairs):
        pairs = np.unique(pairs, axis=0)  # rows sorted by (g, h), each once
    return batch.JoinGroups(group, pairs.reshape(-1, 2).astype(np.int64))


def _split_clusters(
    part: pd.DataFrame,
    prepared: tuple[list[str], np.ndarray],
    *found: np.ndarray,
    out_meta: pd.DataFrame,
    label: str,
    keys: tuple[str, ...],
    cluster: str,
    threshold: Any,
    min_chars: int,
) -> pd.DataFrame:
    """A split group's output rows: its clusters from the union of its tasks' group pairs."""
    labels, group = prepared
    joined = _split_merge(group, *found)
    c = batch.clusters(labels, joined, mode=cluster, threshold=threshold, min_chars=min_chars)
    return _result(
        part, labels, c.canonical, c.reason, c.score, c.via, out_meta=out_meta, label=label, keys=keys
    )


def _split_gather(keyed: bool, token: str | None, *parts: pd.DataFrame) -> pd.DataFrame:
    """One group's rows from every input partition (all rows when ``keyed`` is False), by row id."""
    rows = [p[p[_KEY] == token] if keyed else p for p in parts]
    frame = pd.concat(rows) if rows else pd.DataFrame()
    return _by_row_id(frame)


def _split_tasks(prepared: Any, n: int, blocks: int, threshold: Any, min_chars: int) -> list[Any]:
    """The delayed block-pair joins of a prepared group of ``n`` rows cut into ``blocks`` blocks."""
    bounds = np.linspace(0, n, blocks + 1).round().astype(np.int64).tolist()
    block = delayed(_split_block, pure=True)
    join = delayed(_split_pairs, pure=True)
    cut = [block(prepared, bounds[a], bounds[a + 1]) for a in range(blocks)]
    if blocks == 1:
        return [join(cut[0], None, threshold, min_chars)]
    return [join(cut[a], cut[b], threshold, min_chars) for a in range(blocks) for b in range(a + 1, blocks)]


def _blocks_for(rows: int, max_rows_per_task: int) -> int:
    """Blocks for a group of ``rows``: each task holds two blocks, so at most ``max_rows_per_task``."""
    return max(1, -(-rows // (max_rows_per_task // 2)))


def _check_max_rows(max_rows_per_task: int | None) -> int | None:
    if max_rows_per_task is None:
        return None
    if isinstance(max_rows_per_task, bool) or not isinstance(max_rows_per_task, int | np.integer):
        raise InvalidInputError(f"max_rows_per_task must be an integer or None, not {max_rows_per_task!r}")
    if max_rows_per_task < 2:
        raise InvalidInputError(
            f"max_rows_per_task must be 2 or more (a task holds two blocks), not {max_rows_per_task}"
        )
    return int(max_rows_per_task)


def split_join(
    labels: Any,
    *,
    blocks: int | None = None,
    max_rows_per_task: int = DEFAULT_MAX_ROWS_PER_TASK,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
) -> batch.JoinGroups:
    """``batch.join(labels, expand=False)`` (one scope) computed by several tasks on the current Dask
    scheduler (a ``distributed`` client when one is connected): the labels cut into ``blocks`` blocks in
    order (default: as many as keep each task at ``max_rows_per_task`` labels), and every pair of blocks
    joined as a task of its own. The answer is the in-process one whatever the number of blocks; pass it
    to :func:`memdedup.batch.clusters` as ``pairs`` for the clusters. Missing labels are empty.

    The labels travel in the graph: for a large input, prefer :func:`dedup` on a file or a Dask
    DataFrame, whose split groups are read on the workers."""
    batch._comparable(threshold, min_chars)
    min_chars = batch.check_min_chars(min_chars)
    limit = _check_max_rows(max_rows_per_task)
    texts = [label_text(v) for v in as_labels(labels)]
    if blocks is None:
        blocks = _blocks_for(len(texts), limit) if limit is not None else 1
    if isinstance(blocks, bool) or not isinstance(blocks, int | np.integer) or blocks < 1:
        raise InvalidInputError(f"blocks must be an integer, 1 or more, not {blocks!r}")
    blocks = int(min(blocks, max(1, len(texts))))
    prepared = delayed(_text_groups_of, pure=True)(delayed(texts, traverse=False))
    found = _split_tasks(prepared, len(texts), blocks, threshold, min_chars)
    joined: batch.JoinGroups = delayed(_split_merge, pure=True)(prepared[1], *found).compute()
    return joined


def _text_groups_of(labels: list[str]) -> tuple[list[str], np.ndarray]:
    return labels, _text_groups(labels)


# ---------------------------------------------------------------------------------------------------
# The engine
# ---------------------------------------------------------------------------------------------------
def _survey(
    frame: dd.DataFrame, keys: tuple[str, ...], order: str | None, typed: bool, split_over: int | None
) -> dict[str, Any]:
    """One pass over the key columns: row count, missing keys (unless ``typed``: a file's null is a
    value), the largest group, and the groups of more than ``split_over`` rows (when given)."""
    todo: dict[str, Any] = {"rows": frame[frame.columns[0]].size}
    if not typed:
        for k in keys:
            todo[f"missing:{k}"] = frame[k].isna().sum()
    if order is not None:
        todo[f"missing:{order}"] = frame[order].isna().sum()
    if keys:
        sizes = frame.groupby(_KEY).size()
        todo["largest"] = sizes.nlargest(1)
        if split_over is not None:
            todo["split"] = sizes[sizes > split_over]
    return dict(zip(todo, dask.base.compute(*todo.values()), strict=True))


def _add_row_id(frame: dd.DataFrame, order: str | None) -> dd.DataFrame:
    if order is not None:
        return frame.assign(**{ROW_ID: frame[order].astype("int64")})
    # The position in the input: a cumulative count across the partitions, in the same graph as the
    # work itself, so it follows the partitioning the work reads (a separate length pass might not).
    frame = frame.assign(**{ROW_ID: 1})
    return frame.assign(**{ROW_ID: (frame[ROW_ID].cumsum() - 1).astype("int64")})


def dedup(
    data: dd.DataFrame | pd.DataFrame | str | os.PathLike[str],
    *,
    mode: str = "replay",
    label: str = "label",
    scope: str | None = "scope",
    layer: str | None = None,
    order: str | None = None,
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    prefix: str = "raw",
    prefix_len: int = DEDUP_PREFIX_LEN,
    query_limit: int = DEDUP_QUERY_LIMIT,
    cluster: str = "canonical",
    npartitions: int | None = None,
    warn_fraction: float = 0.5,
    typed_keys: bool = False,
    max_rows_per_task: int | None = DEFAULT_MAX_ROWS_PER_TASK,
) -> dd.DataFrame:
    """Dedup every row of ``data``, partitioned by ``(scope, layer)``; a Dask DataFrame of the results.

    ``data``: a Dask (or pandas) DataFrame, or a path :func:`read_input` reads. ``mode="replay"`` decides
    each write as the write-time lookup does (:func:`memdedup.batch.replay`); ``mode="join"`` finds every
    matching pair in a group with no prefix gate and clusters them (:func:`memdedup.batch.clusters`,
    ``cluster="canonical"`` or ``"components"``).

    The result has one row per input row: ``row_id`` (the ``order`` value, else the input position),
    the scope (and layer) column, the label (a missing label as ``""``), ``canonical`` (the row id it
    collapses into; its own when new or empty), ``reason`` and ``score`` (NaN where nothing collapsed).
    It is partitioned by scope, not sorted: sort by ``row_id`` after computing it.

    Missing values: a missing label is the empty label (reason ``"empty"``), as in
    :func:`memdedup.batch.replay`; a missing scope, layer or order value raises
    :class:`~memdedup.errors.InvalidInputError` with the number of such rows (use ``""`` for "no scope"),
    unless ``typed_keys`` (set for a path: a file's ``null`` is a value of its own, as in the in-process
    engine). ``scope=None`` puts every row in one group.

    Partitions: rows are grouped by :func:`memdedup.batch.partition_token` of their scope and layer
    values, exactly as the in-process engine groups them (``1``, ``1.0``, ``True`` and ``"1"`` are four
    partitions; ``None``, ``""`` and a missing field three).

    Eager part: one pass over the key columns (counts, missing values, the largest group) runs before
    this returns; the dedup itself runs when the result is computed. A replay never splits a group: the
    largest one runs as one task on one worker, and a warning is logged when it holds more than
    ``warn_fraction`` of the rows. A join splits a group of more than ``max_rows_per_task`` rows (default
    500,000; None: never) into blocks of at most half as many, joins every pair of blocks as a task of its
    own, and clusters the group from the union of their pairs in one more task (:func:`split_join`; the
    same rows as unsplit). docs/dask.md says what each task holds.
    """
    with _keep_types():
        return _dedup(
            data,
            mode,
            label,
            scope,
            layer,
            order,
            threshold,
            min_chars,
            prefix,
            prefix_len,
            query_limit,
            cluster,
            npartitions,
            warn_fraction,
            typed_keys,
            max_rows_per_task,
        )


def _dedup(
    data: dd.DataFrame | pd.DataFrame | str | os.PathLike[str],
    mode: str,
    label: str,
    scope: str | None,
    layer: str | None,
    order: str | None,
    threshold: float,
    min_chars: int,
    prefix: str,
    prefix_len: int,
    query_limit: int,
    cluster: str,
    npartitions: int | None,
    warn_fraction: float,
    typed_keys: bool,
    max_rows_per_task: int | None,
) -> dd.DataFrame:
    if mode not in _MODES:
        raise InvalidInputError(f"mode must be 'replay' or 'join', not {mode!r}")
    if prefix not in ("raw", "normalised", "none"):
        raise InvalidInputError(f"prefix must be 'raw', 'normalised' or 'none', not {prefix!r}")
    if cluster not in ("canonical", "components"):
        raise InvalidInputError(f"cluster must be 'canonical' or 'components', not {cluster!r}")
    threshold = batch._check_threshold(threshold)
    if not 0.0 <= threshold <= 1.0:
        raise InvalidInputError(f"threshold must lie in [0, 1], not {threshold}")
    min_chars = batch.check_min_chars(min_chars)
    if prefix_len < 0 or query_limit < 0:
        raise InvalidInputError("prefix_len and query_limit must not be negative")
    if layer is not None and scope is None:
        raise InvalidInputError("a layer column needs a scope column (use a constant scope column)")
    split_over = _check_max_rows(max_rows_per_task) if mode == "join" else None
    if isinstance(data, str | os.PathLike):
        data = read_input(data, label=label, scope=scope, layer=layer, order=order)
        typed_keys = True
    elif isinstance(data, pd.DataFrame):
        data = dd.from_pandas(data, npartitions=max(1, min(os.cpu_count() or 1, len(data) // 50_000 + 1)))
    keys = tuple(k for k in (scope, layer) if k is not None)
    wanted = [label, *keys, *([order] if order else [])]
    if len(set(wanted)) != len(wanted):
        raise InvalidInputError(f"the label, scope, layer and order columns must differ: {wanted}")
    missing = [c for c in wanted if c not in data.columns]
    if missing:
        raise InvalidInputError(f"no column {missing[0]!r} (the frame has {list(data.columns)})")
    clash = [c for c in wanted if c in OUTPUT_COLUMNS and c != order]
    if clash:
        raise InvalidInputError(
            f"column {clash[0]!r} clashes with an output column ({', '.join(OUTPUT_COLUMNS)})"
        )
    if order is not None and not pd.api.types.is_integer_dtype(data[order].dtype):
        raise InvalidInputError(f"the order column {order!r} must hold integers, not {data[order].dtype}")
    frame = data[wanted]
    if keys:
        frame = frame.assign(**{_KEY: frame.map_partitions(_key_column, keys, meta=(_KEY, object))})

    stats = _survey(frame, keys, order, typed_keys, split_over)
    for column in (*(() if typed_keys else keys), *([order] if order else [])):
        count = int(stats[f"missing:{column}"])
        if count:
            what = "order" if column == order else ("scope" if column == scope else "layer")
            raise InvalidInputError(
                f"{count} of {stats['rows']} rows have no {what} (column {column!r}); "
                f"fill them (e.g. with '' for 'no {what}') or drop them"
            )
    rows = int(stats["rows"])
    # The groups to split: (token, rows); the token None is every row (no scope column).
    split: list[tuple[str | None, int]] = []
    if split_over is not None and keys:
        split = [(str(t), int(n)) for t, n in stats["split"].sort_index().items()]
    elif split_over is not None and rows > split_over:
        split = [(None, rows)]
    largest = stats.get("largest")
    if keys and largest is not None and len(largest) and rows:
        size = int(largest.iloc[0])
        if size > warn_fraction * rows and not split:
            log.warning(
                "one %s group holds %d of %d rows (%.0f%%): it runs as one task on one worker",
                "/".join(keys),
                size,
                rows,
                100.0 * size / rows,
            )

    frame = _add_row_id(frame, order)
    frame = frame[[ROW_ID, label, *keys, *([_KEY] if keys else [])]]
    whole = frame
    if split and keys:
        frame = frame[~frame[_KEY].isin([t for t, _ in split])]
    if keys:
        shuffled = frame.shuffle(
            on=_KEY,
            npartitions=npartitions or frame.npartitions,
            # Task-based: the P2P shuffle moves partitions as Arrow tables, which cannot hold typed
            # object cells (an int beside a str, MISSING, JSONValue).
            method="tasks",
        )
    else:
        shuffled = frame.repartition(npartitions=1)
    meta = pd.DataFrame(
        {
            ROW_ID: pd.Series(dtype="int64"),
            **{k: pd.Series(dtype=frame[k].dtype) for k in keys},
            label: pd.Series(dtype="string"),
            "canonical": pd.Series(dtype="int64"),
            "reason": pd.Series(dtype="string"),
            "score": pd.Series(dtype="float64"),
            "via": pd.Series(dtype="Int64"),
        }
    )
    params = {
        "threshold": threshold,
        "min_chars": min_chars,
        "prefix": prefix,
        "prefix_len": prefix_len,
        "query_limit": query_limit,
    }
    unsplit = shuffled.map_partitions(
        _dedup_partition,
        meta=meta,
        out_meta=meta,
        mode=mode,
        label=label,
        keys=keys,
        params=params,
        cluster=cluster,
        enforce_metadata=False,
    )
    if not split:
        return unsplit
    assert split_over is not None
    inputs = (whole[whole[_KEY].isin([t for t, _ in split])] if keys else whole).to_delayed()
    outputs = []
    for token, size in split:
        blocks = _blocks_for(size, split_over)
        tasks = blocks * (blocks - 1) // 2 or 1
        log.info(
            "a %s group of %d rows is split into %d blocks of at most %d rows: %d join tasks",
            "/".join(keys) or "single",
            size,
            blocks,
            -(-size // blocks),
            tasks,
        )
        part = delayed(_split_gather, pure=True)(bool(keys), token, *inputs)
        prepared = delayed(_split_prepare, pure=True)(part, label)
        found = _split_tasks(prepared, size, blocks, threshold, min_chars)
        outputs.append(
            delayed(_split_clusters, pure=True)(
                part,
                prepared,
                *found,
                out_meta=meta,
                label=label,
                keys=keys,
                cluster=cluster,
                threshold=threshold,
                min_chars=min_chars,
            )
        )
    done = dd.from_delayed(outputs, meta=meta, verify_meta=False)
    if keys and sum(n for _, n in split) < rows:
        return dd.concat([unsplit, done])
    return done


# ---------------------------------------------------------------------------------------------------
# Clusters and the CLI front
# ---------------------------------------------------------------------------------------------------
def local_client(workers: int | None = None, *, threads_per_worker: int = 1, **kwargs: Any) -> Client:
    """A client of a new local cluster: ``workers`` processes (default: the CPU count), one thread each,
    and ``RAYON_NUM_THREADS`` set to the thread count so the Rust pools do not oversubscribe the cores.
    Closing the client (``with local_client() as client: ...``) closes the cluster."""
    from distributed import Client

    n = workers if workers is not None else (os.cpu_count() or 1)
    if n < 1:
        raise InvalidInputError(f"workers must be at least 1, not {n}")
    kwargs.setdefault("dashboard_address", ":0")
    kwargs.setdefault("env", {"RAYON_NUM_THREADS": str(threads_per_worker)})
    return Client(n_workers=n, threads_per_worker=threads_per_worker, processes=True, **kwargs)


def dedup_file(
    path: str | os.PathLike[str],
    *,
    mode: str = "replay",
    label: str = "label",
    scope: str | None = "scope",
    layer: str | None = "layer",
    threshold: float = DEDUP_SIMILARITY_THRESHOLD,
    min_chars: int = DEDUP_SUBSUME_MIN_CHARS,
    prefix: str = "raw",
    cluster: str = "canonical",
    scheduler: str | None = None,
    workers: int | None = None,
    fmt: str | None = None,
    timeout: float = 10.0,
    progress: Progress | None = None,
    multiline: bool = False,
    json_columns: Sequence[str] = (),
) -> batch.DedupRun:
    """``memdedup dedup --engine dask``: dedup a file on a Dask cluster (``scheduler``: an address, tried
    for ``timeout`` seconds, else a :func:`local_client` of ``workers`` processes, closed at the end) and
    collect the result, sorted by row, as the :class:`~memdedup.batch.DedupRun` the in-process engine
    returns. ``seconds`` counts the read and the dedup, not the cluster's start. A scheduler that cannot
    be reached is an :class:`~memdedup.errors.InvalidInputError` saying how long it was tried."""
    shown = progress if progress is not None else Progress()
    if scheduler is not None and workers is not None:
        raise InvalidInputError("--workers sizes a local cluster; it does not apply with --scheduler")
    client = _connect(scheduler, timeout, shown) if scheduler is not None else local_client(workers)
    with client:
        start = time.perf_counter()
        frame = read_input(
            path,
            label=label,
            scope=scope,
            layer=layer,
            fmt=fmt,
            multiline=multiline,
            json_columns=json_columns,
        )
        layer_used = layer
        if layer is not None and scope is None:
            layer_used = None  # a layer needs a scope column (dedup() refuses one alone)
        with shown.spinner("dask"), _keep_types():
            result = dedup(
                frame,
                mode=mode,
                label=label,
                scope=scope,
                layer=layer_used,
                threshold=threshold,
                min_chars=min_chars,
                prefix=prefix,
                cluster=cluster,
                typed_keys=True,
            ).compute()
        seconds = time.perf_counter() - start
    result = result.sort_values(ROW_ID, kind="stable")
    n = len(result)
    if not np.array_equal(result[ROW_ID].to_numpy(), np.arange(n)):
        raise InvalidInputError(f"{path}: the result lost or repeated rows")  # never expected
    name = display_name(path)

    def column(name_: str | None) -> list[Any] | None:
        if name_ is None or name_ not in result.columns:
            return None
        values = result[name_].tolist()
        return None if all(v is tables.MISSING for v in values) else values

    table = batch.LabelTable(
        labels=result[label].tolist(), scopes=column(scope), layers=column(layer_used), source=name
    )
    score = result["score"].to_numpy(dtype=np.float64, na_value=math.nan)
    parameters: dict[str, Any] = {"threshold": float(threshold), "min_chars": int(min_chars)}
    parameters["prefix" if mode == "replay" else "cluster"] = prefix if mode == "replay" else cluster
    via = None
    if mode == "join" and cluster == "components":
        via = [None if v is pd.NA else int(v) for v in result["via"].tolist()]
    return batch.DedupRun(
        table,
        mode,
        result["canonical"].to_numpy(dtype=np.int64),
        result["reason"].tolist(),
        score,
        seconds,
        parameters,
        via,
    )


def _connect(address: str, timeout: float, progress: Progress) -> Client:
    """A client of the scheduler at ``address``, or an error that says what failed and how long it
    was tried (never the connection's traceback)."""
    from distributed import Client

    start = time.perf_counter()
    try:
        with progress.spinner(f"connecting to {address}"):
            return Client(address, timeout=timeout)
    except (OSError, TimeoutError, ValueError) as exc:
        waited = time.perf_counter() - start
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InvalidInputError(
            f"--scheduler {address}: could not connect (tried for {waited:.1f} s; --scheduler-timeout "
            f"{timeout:g}): {reason}"
        ) from None
