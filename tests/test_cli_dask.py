"""``memdedup dedup --engine dask`` through the real command: the same rows as the in-process engine on
typed scopes and layers (one reader rule, one partition rule), errors that name the file and the line, and
an unreachable scheduler reported in one line with how long it was tried."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import run
from profiles import sampled

distributed = pytest.importorskip("distributed")
pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

LABEL = "Releases ship every second Tuesday"


@pytest.fixture(scope="module")
def scheduler():
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as cluster:
        yield cluster.scheduler_address


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _both(tmp_path: Path, data: Path, scheduler: str, *extra: str) -> tuple[list[dict], list[dict]]:
    outs = []
    for engine in ("in-process", "dask"):
        out = tmp_path / f"{engine}.jsonl"
        more = ["--scheduler", scheduler] if engine == "dask" else []
        run("dedup", data, "--engine", engine, "--out", out, *more, *extra).ok()
        outs.append(_rows(out))
    return outs[0], outs[1]


TYPED = [
    {"label": LABEL, "scope": "1"},
    {"label": LABEL, "scope": 1},
    {"label": LABEL, "scope": 1.0},
    {"label": LABEL, "scope": True},
    {"label": LABEL, "scope": "true"},
    {"label": LABEL, "scope": ""},
    {"label": LABEL, "scope": None},
    {"label": LABEL},
    {"label": LABEL, "scope": {"org": "acme"}},
    {"label": LABEL, "scope": "1", "layer": 1},
    {"label": LABEL, "scope": "1", "layer": "1"},
    {"label": None, "scope": "1"},
    {"label": LABEL, "scope": -0.0},
    {"label": LABEL, "scope": 0.0},  # -0.0 == 0.0: one partition in both engines
    {"label": LABEL, "scope": 1},  # collapses into row 1, and only there
]


@pytest.mark.parametrize("mode", sampled(["replay", "join"], ["replay"]))
def test_typed_scopes_and_layers_partition_alike_in_both_engines(
    tmp_path: Path, scheduler: str, mode: str
) -> None:
    data = tmp_path / "typed.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in TYPED), encoding="utf-8")
    local, remote = _both(tmp_path, data, scheduler, "--mode", mode)
    assert remote == local
    collapsed = {r["index"]: r["canonical"] for r in local if r["canonical"] != r["index"]}
    assert collapsed == {13: 12, 14: 1}
    assert local[11]["reason"] == "empty" and local[11]["label"] == ""
    assert "scope" not in local[7]  # the row without the field has none in the output either
    assert local[8]["scope"] == {"org": "acme"}


@pytest.mark.slow
def test_parquet_nulls_and_integers_partition_alike(tmp_path: Path, scheduler: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = tmp_path / "typed.parquet"
    table = pa.table(
        {
            "label": [LABEL, LABEL, LABEL, None, LABEL, LABEL],
            "scope": pa.array([1, None, 2, 1, None, 1], type=pa.int64()),
        }
    )
    pq.write_table(table, data)
    local, remote = _both(tmp_path, data, scheduler)
    assert remote == local
    assert [r["canonical"] for r in local] == [0, 1, 2, 3, 1, 0]
    assert [r["scope"] for r in local] == [1, None, 2, 1, None, 1]


@pytest.mark.slow
def test_a_malformed_jsonl_line_is_named(tmp_path: Path, scheduler: str) -> None:
    data = tmp_path / "bad.jsonl"
    data.write_text('{"label": "a"}\n{"label": "b"\n{"label": "c"}\n', encoding="utf-8")
    for engine in ("in-process", "dask"):
        more = ["--scheduler", scheduler] if engine == "dask" else []
        done = run("dedup", data, "--engine", engine, *more).fails()
        assert f"{data}:2: not JSON" in done.err, done


@pytest.mark.slow
def test_an_unreachable_scheduler_is_one_line(tmp_path: Path) -> None:
    data = tmp_path / "labels.txt"
    data.write_text("a\nb\n", encoding="utf-8")
    done = run(
        "dedup", data, "--engine", "dask", "--scheduler", "tcp://127.0.0.1:1", "--scheduler-timeout", "2"
    )
    done.fails()
    assert "could not connect" in done.err and "tcp://127.0.0.1:1" in done.err, done
    assert "tried for " in done.err and "--scheduler-timeout 2" in done.err
    assert len(done.err.strip().splitlines()) <= 2, done
