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

A single group is never split: one huge scope runs as one task on one worker (the replay of a scope is
sequential by definition: each write is decided against the canonicals before it). :func:`dedup` logs a
warning when one group holds more than half of the rows.
"""

from __future__ import annotations

import logging
import math
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memdedup import batch
from memdedup._reference import (
    DEDUP_PREFIX_LEN,
    DEDUP_QUERY_LIMIT,
    DEDUP_SIMILARITY_THRESHOLD,
    DEDUP_SUBSUME_MIN_CHARS,
)
from memdedup.errors import InvalidInputError

try:
    import dask
    import dask.bag as db
    import dask.dataframe as dd
    import pandas as pd
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "memdedup.dask needs Dask: pip install 'memdedup[dask]' (dask[dataframe], distributed, pyarrow)"
    ) from exc

if TYPE_CHECKING:
    from distributed import Client

__all__ = ["OUTPUT_COLUMNS", "ROW_ID", "dedup", "dedup_file", "local_client", "read_input"]

log = logging.getLogger(__name__)

ROW_ID = "row_id"
OUTPUT_COLUMNS = (ROW_ID, "canonical", "reason", "score")
_MODES = ("replay", "join")


# ---------------------------------------------------------------------------------------------------
# Input
# ---------------------------------------------------------------------------------------------------
def _kind(path: Path) -> tuple[str, bool]:
    suffixes = [s.lower() for s in path.suffixes]
    gz = bool(suffixes) and suffixes[-1] == ".gz"
    if gz:
        suffixes = suffixes[:-1]
    last = suffixes[-1] if suffixes else ""
    if path.is_dir() or last in (".parquet", ".pq"):
        return "parquet", gz
    return {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}.get(last, "text"), gz


def _jsonl_rows(lines: list[str], columns: tuple[str, ...], path: str) -> list[tuple[Any, ...]]:
    label, *others = columns
    out = []
    for line in lines:
        row = batch.parse_jsonl_row(line, label, f"{path} (line {line[:80]!r})")
        if row is None:
            continue
        value = row[label]
        out.append(("" if value is None else str(value), *(batch._column_text(row.get(c)) for c in others)))
    return out


def read_input(
    path: str | os.PathLike[str],
    *,
    label: str = "label",
    scope: str | None = "scope",
    layer: str | None = "layer",
    order: str | None = None,
    blocksize: str | int | None = "64MiB",
) -> dd.DataFrame:
    """A Dask DataFrame of ``path``: Parquet (a ``.parquet``/``.pq`` file or a directory), CSV (``.csv``),
    JSON lines (``.jsonl``/``.ndjson``) or text (anything else: one label per line); ``.gz`` on the
    last three.

    CSV, JSONL and text are read as :func:`memdedup.batch.read_label_table` reads them (every CSV cell as
    text, a JSON ``null`` label as ``""``, a non-text scope or layer as its JSON), so the Dask engine
    sees the labels the in-process engine sees. A ``scope`` or ``layer`` column the file does not have is
    added as ``""`` (one partition, as the in-process engine does without it); the label column must be
    there. ``order``, when given, must be in the file and is read as integers. Compressed files are read
    as one partition each (gzip cannot be split).
    """
    url = os.fspath(path)
    p = Path(url)
    kind, gz = _kind(p)
    size = None if gz else blocksize
    wanted = [c for c in (label, scope, layer, order) if c is not None]
    if len(set(wanted)) != len(wanted):
        raise InvalidInputError(f"the label, scope, layer and order columns must differ: {wanted}")
    local = "://" not in url and not any(ch in url for ch in "*?[")
    if local and not p.exists():
        raise InvalidInputError(f"cannot read {path}: no such file or directory")
    source = str(p) if local else url  # a URL (s3://, gs://, ...) or glob goes to Dask's readers as given
    if kind == "parquet":
        frame = dd.read_parquet(source)
    elif kind == "csv":
        frame = dd.read_csv(
            source, dtype=object, keep_default_na=False, na_filter=False, blocksize=size, encoding="utf-8"
        )
    elif kind == "jsonl":
        columns = (label, *(c for c in (scope, layer, order) if c is not None))
        bag = db.read_text(source, blocksize=size, encoding="utf-8").map_partitions(
            _jsonl_rows, columns, str(path)
        )
        meta = pd.DataFrame({c: pd.Series(dtype=object) for c in columns})
        frame = bag.to_dataframe(meta=meta)
    else:
        if order:
            raise InvalidInputError(f"{path}: a text file has no {order!r} column")
        bag = db.read_text(source, blocksize=size, encoding="utf-8").map_partitions(
            # read_text reads with universal newlines and keeps each line's "\n": drop just that, as
            # batch.read_label_table splits (a U+2028 inside a label is not a line break).
            lambda lines: [(line[:-1] if line.endswith("\n") else line,) for line in lines]
        )
        frame = bag.to_dataframe(meta=pd.DataFrame({label: pd.Series(dtype=object)}))
    if label not in frame.columns:
        raise InvalidInputError(f"{path}: no {label!r} column (it has {list(frame.columns)})")
    if order and order not in frame.columns:
        raise InvalidInputError(f"{path}: no {order!r} column (it has {list(frame.columns)})")
    if order and kind in ("csv", "jsonl"):
        # Text to integers; a blank or non-numeric value becomes missing, which dedup() counts and refuses.
        frame = frame.assign(**{order: dd.to_numeric(frame[order], errors="coerce").astype("Int64")})
    for name in (scope, layer):
        if name is not None and name not in frame.columns:
            frame = frame.assign(**{name: ""})
    return frame[wanted]


# ---------------------------------------------------------------------------------------------------
# The per-partition work (runs on the workers)
# ---------------------------------------------------------------------------------------------------
def _label_text(column: pd.Series) -> list[str]:
    """Labels as the engine sees them: a missing value (None, NaN, NA) is the empty label."""
    if isinstance(column.dtype, pd.StringDtype):  # text or missing only
        return column.fillna("").tolist()
    return ["" if v is None or (not isinstance(v, str) and pd.isna(v)) else str(v) for v in column.tolist()]


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
    """Dedup one shuffled partition (whole groups only): sort by row id, one engine call for every group."""
    if part.empty:
        return out_meta.iloc[:0].copy()
    part = part.sort_values(ROW_ID, kind="stable")
    ids = part[ROW_ID].to_numpy(dtype=np.int64)
    if len(ids) > 1 and bool((ids[1:] == ids[:-1]).any()):
        dup = int(ids[1:][ids[1:] == ids[:-1]][0])
        raise InvalidInputError(f"the order column must be unique (it is the row id); {dup} repeats")
    labels = _label_text(part[label])
    columns = [part[k].tolist() for k in keys]
    if mode == "replay":
        scopes = columns[0] if keys else None
        layers = columns[1] if len(keys) > 1 else None
        r = batch.replay(labels, scopes=scopes, layers=layers, **params)
        canonical, reason, score = r.canonical, r.reason, r.score
    else:
        groups = list(zip(*columns, strict=True)) if len(keys) > 1 else (columns[0] if keys else None)
        c = batch.clusters(
            labels,
            mode=cluster,
            threshold=params["threshold"],
            min_chars=params["min_chars"],
            scopes=groups,
        )
        canonical, reason, score = c.canonical, c.reason, c.score
    out = pd.DataFrame(
        {
            ROW_ID: ids,
            **{k: part[k].to_numpy() for k in keys},
            label: labels,
            "canonical": ids[np.asarray(canonical, dtype=np.int64)],
            "reason": reason,
            "score": np.asarray(score, dtype=np.float64),
        }
    )
    return out.astype(out_meta.dtypes.to_dict())


# ---------------------------------------------------------------------------------------------------
# The engine
# ---------------------------------------------------------------------------------------------------
def _survey(frame: dd.DataFrame, keys: tuple[str, ...], order: str | None) -> dict[str, Any]:
    """One pass over the key columns: row count, missing keys, the largest group."""
    todo: dict[str, Any] = {"rows": frame[frame.columns[0]].size}
    for k in keys:
        todo[f"missing:{k}"] = frame[k].isna().sum()
    if order is not None:
        todo[f"missing:{order}"] = frame[order].isna().sum()
    if keys:
        todo["largest"] = frame.groupby(list(keys), dropna=True).size().nlargest(1)
    return dict(zip(todo, dask.compute(*todo.values()), strict=True))


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
    :class:`~memdedup.errors.InvalidInputError` with the number of such rows (use ``""`` for "no scope").
    ``scope=None`` puts every row in one group.

    Eager part: one pass over the key columns (counts, missing values, the largest group) runs before
    this returns; the dedup itself runs when the result is computed. A group never splits: the largest
    one runs as one task on one worker, and a warning is logged when it holds more than ``warn_fraction``
    of the rows.
    """
    if mode not in _MODES:
        raise InvalidInputError(f"mode must be 'replay' or 'join', not {mode!r}")
    if prefix not in ("raw", "normalised"):
        raise InvalidInputError(f"prefix must be 'raw' or 'normalised', not {prefix!r}")
    if cluster not in ("canonical", "components"):
        raise InvalidInputError(f"cluster must be 'canonical' or 'components', not {cluster!r}")
    threshold = batch._check_threshold(threshold)
    if not 0.0 <= threshold <= 1.0:
        raise InvalidInputError(f"threshold must lie in [0, 1], not {threshold}")
    if prefix_len < 0 or query_limit < 0:
        raise InvalidInputError("prefix_len and query_limit must not be negative")
    if layer is not None and scope is None:
        raise InvalidInputError("a layer column needs a scope column (use a constant scope column)")
    if isinstance(data, str | os.PathLike):
        data = read_input(data, label=label, scope=scope, layer=layer, order=order)
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

    stats = _survey(frame, keys, order)
    for column in (*keys, *([order] if order else [])):
        count = int(stats[f"missing:{column}"])
        if count:
            what = "order" if column == order else ("scope" if column == scope else "layer")
            raise InvalidInputError(
                f"{count} of {stats['rows']} rows have no {what} (column {column!r}); "
                f"fill them (e.g. with '' for 'no {what}') or drop them"
            )
    rows = int(stats["rows"])
    largest = stats.get("largest")
    if keys and largest is not None and len(largest) and rows:
        size = int(largest.iloc[0])
        if size > warn_fraction * rows:
            log.warning(
                "one %s group holds %d of %d rows (%.0f%%): it runs as one task on one worker",
                "/".join(keys),
                size,
                rows,
                100.0 * size / rows,
            )

    frame = _add_row_id(frame, order)
    frame = frame[[ROW_ID, label, *keys]]
    if keys:
        shuffled = frame.shuffle(on=list(keys), npartitions=npartitions or frame.npartitions)
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
        }
    )
    params = {
        "threshold": threshold,
        "min_chars": min_chars,
        "prefix": prefix,
        "prefix_len": prefix_len,
        "query_limit": query_limit,
    }
    return shuffled.map_partitions(
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
) -> batch.DedupRun:
    """``memdedup dedup --engine dask``: dedup a file on a Dask cluster (``scheduler``: an address, else a
    :func:`local_client` of ``workers`` processes, closed at the end) and collect the result, sorted by
    row, as the :class:`~memdedup.batch.DedupRun` the in-process engine returns. ``seconds`` counts the
    read and the dedup, not the cluster's start."""
    from distributed import Client

    if scheduler is not None and workers is not None:
        raise InvalidInputError("--workers sizes a local cluster; it does not apply with --scheduler")
    client = Client(scheduler) if scheduler is not None else local_client(workers)
    with client:
        start = time.perf_counter()
        result = dedup(
            path,
            mode=mode,
            label=label,
            scope=scope,
            layer=layer,
            threshold=threshold,
            min_chars=min_chars,
            prefix=prefix,
            cluster=cluster,
        ).compute()
        seconds = time.perf_counter() - start
    result = result.sort_values(ROW_ID, kind="stable")
    n = len(result)
    if not np.array_equal(result[ROW_ID].to_numpy(), np.arange(n)):
        raise InvalidInputError(f"{path}: the result lost or repeated rows")  # never expected
    table = batch.LabelTable(
        labels=result[label].tolist(),
        scopes=result[scope].tolist() if scope is not None else None,
        layers=result[layer].tolist() if layer is not None else None,
    )
    score = result["score"].to_numpy(dtype=np.float64, na_value=math.nan)
    return batch.DedupRun(
        table, mode, result["canonical"].to_numpy(dtype=np.int64), result["reason"].tolist(), score, seconds
    )
