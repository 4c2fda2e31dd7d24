"""``memdedup.dask`` on a real ``distributed.LocalCluster`` (2 worker processes): the results equal the
in-process engine row for row, on multi-scope data with an empty scope id, one huge scope, unicode scope
ids and labels, and missing values; and ``memdedup dedup --engine dask`` writes what the in-process engine
writes."""

from __future__ import annotations

import json
import logging
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import duplicate_heavy_labels, n_examples

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

from memdedup import batch, cli  # noqa: E402
from memdedup import dask as mdd  # noqa: E402
from memdedup.errors import BackendUnavailableError, InvalidInputError  # noqa: E402

BASE = [
    "The user prefers dark mode in every editor",
    "Lives in Paris with two cats named Ωmega and Σίσυφος",
    "works at ACME corp as a senior engineer",
    "naïve café au lait every morning ☕ at 7am",
    "İstanbul trip planned for ΣΑΣ week",
    "short",
]
SCOPES = [
    "",
    "tenant:café/user:Ωmega",
    "tenant:東京/user:ß",
    *(f"tenant:{k}/user:{k % 3}" for k in range(17)),
]


def _restate(rng: random.Random, label: str) -> str:
    """A restatement (or not) of ``label``: case, punctuation, spacing, an added tail, a small edit."""
    v = rng.random()
    if v < 0.25:
        return label
    if v < 0.35:
        return label.upper()
    if v < 0.5:
        return label + rng.choice(".!?")
    if v < 0.6:
        return "  " + label.replace(" ", "  ") + " "
    if v < 0.75:
        return label + " and a few more words"
    if v < 0.85:
        return label[:-3] + "xyz"
    return label[::-1]


@pytest.fixture(scope="module")
def client():
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


@pytest.fixture(scope="module")
def corpus() -> pd.DataFrame:
    """~300 rows over 20 scopes, 60% of them in one scope; missing, empty and blank labels."""
    rng = random.Random(8)
    rows = []
    for _ in range(300):
        scope = "tenant:big/user:0" if rng.random() < 0.6 else rng.choice(SCOPES)
        rows.append({"label": _restate(rng, rng.choice(BASE)), "scope": scope, "layer": rng.choice("ab")})
    rows[3]["label"] = None
    rows[4]["label"] = ""
    rows[5]["label"] = " \t "
    frame = pd.DataFrame(rows)
    frame["label"] = frame["label"].astype(object)
    return frame


def _labels(frame: pd.DataFrame) -> list[str | None]:
    """The label column as the in-process engine takes it: a missing value as None (the empty label)."""
    return [None if pd.isna(v) else v for v in frame["label"].astype(object).tolist()]


def _check(result: pd.DataFrame, ids: np.ndarray, canonical: np.ndarray, reason: list[str], score) -> None:
    """``result`` (computed, any order) equals the in-process outcome given in row-id order."""
    result = result.sort_values("row_id")
    assert result["row_id"].tolist() == ids.tolist()
    assert result["canonical"].tolist() == ids[canonical].tolist()
    assert result["reason"].tolist() == list(reason)
    np.testing.assert_array_equal(result["score"].to_numpy(dtype=float), np.asarray(score, dtype=float))


def test_replay_equals_in_process(client, corpus, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="memdedup.dask")
    frame = dd.from_pandas(corpus, npartitions=5)
    result = mdd.dedup(frame, mode="replay").compute()
    expected = batch.replay(_labels(corpus), scopes=corpus["scope"].tolist())
    _check(result, np.arange(len(corpus)), expected.canonical, expected.reason, expected.score)
    # The data exercises what it claims to: collapses of each kind, the empty labels, many scopes.
    assert {"new", "ratio", "containment", "empty"} <= set(expected.reason)
    assert result["reason"].tolist().count("empty") == 3
    assert result.set_index("row_id").loc[[3, 4, 5], "label"].tolist() == ["", "", " \t "]
    assert set(result["scope"]) == set(corpus["scope"])
    # Nothing collapses across scopes, and the huge scope is reported.
    by_id = result.set_index("row_id")["scope"]
    assert (by_id.loc[result["canonical"]].to_numpy() == result["scope"].to_numpy()).all()
    assert any("runs as one task on one worker" in r.getMessage() for r in caplog.records)


@pytest.mark.slow
def test_replay_with_layer_order_and_normalised_prefix(client, corpus) -> None:
    rng = np.random.default_rng(3)
    data = corpus.assign(seq=rng.permutation(len(corpus)) * 7 + 1000)
    frame = dd.from_pandas(data, npartitions=4)
    result = mdd.dedup(frame, layer="layer", order="seq", prefix="normalised").compute()
    ordered = data.sort_values("seq")
    expected = batch.replay(
        _labels(ordered),
        scopes=ordered["scope"].tolist(),
        layers=ordered["layer"].tolist(),
        prefix="normalised",
    )
    _check(result, ordered["seq"].to_numpy(), expected.canonical, expected.reason, expected.score)
    # The order column, not the input order, is the replay order: the two disagree on this data.
    unordered = batch.replay(_labels(data), scopes=data["scope"].tolist(), layers=data["layer"].tolist())
    assert unordered.reason != batch.replay(_labels(ordered), scopes=ordered["scope"].tolist()).reason


@pytest.mark.parametrize("cluster", ["canonical", "components"])
def test_join_equals_in_process(client, corpus, cluster) -> None:
    corpus = corpus.iloc[:150]  # join is quadratic per scope; the labels still span every scope kind
    frame = dd.from_pandas(corpus, npartitions=3)
    result = mdd.dedup(frame, mode="join", layer="layer", cluster=cluster, threshold=0.8).compute()
    keys = list(zip(corpus["scope"], corpus["layer"], strict=True))
    labels = ["" if v is None else v for v in _labels(corpus)]
    expected = batch.clusters(labels, mode=cluster, threshold=0.8, scopes=keys)
    _check(result, np.arange(len(corpus)), expected.canonical, expected.reason, expected.score)
    assert {"new", "ratio", "containment"} <= set(expected.reason)


def test_no_scope_is_one_group_from_pandas(client, corpus) -> None:
    result = mdd.dedup(corpus, scope=None).compute()  # a pandas frame is accepted too
    expected = batch.replay(_labels(corpus))
    _check(result, np.arange(len(corpus)), expected.canonical, expected.reason, expected.score)


def test_missing_keys_are_refused_with_a_count(client, corpus) -> None:
    data = corpus.copy()
    data.loc[[10, 20, 30], "scope"] = None
    with pytest.raises(InvalidInputError, match=r"3 of 300 rows have no scope \(column 'scope'\)"):
        mdd.dedup(dd.from_pandas(data, npartitions=3))
    data = corpus.copy()
    data.loc[[7], "layer"] = None
    with pytest.raises(InvalidInputError, match=r"1 of 300 rows have no layer"):
        mdd.dedup(dd.from_pandas(data, npartitions=3), layer="layer")
    data = corpus.assign(seq=pd.array([None, *range(1, len(corpus))], dtype="Int64"))
    with pytest.raises(InvalidInputError, match=r"1 of 300 rows have no order"):
        mdd.dedup(dd.from_pandas(data, npartitions=3), order="seq")


def test_bad_order_and_columns_are_refused(client, corpus) -> None:
    with pytest.raises(InvalidInputError, match="must hold integers"):
        mdd.dedup(corpus.assign(seq=np.linspace(0, 1, len(corpus))), order="seq")
    with pytest.raises(InvalidInputError, match="no column 'tenant'"):
        mdd.dedup(corpus, scope="tenant")
    with pytest.raises(InvalidInputError, match="clashes with an output column"):
        mdd.dedup(corpus.rename(columns={"label": "reason"}), label="reason")
    # Duplicate order values inside a scope make the replay order ambiguous: refused on the worker.
    dup = corpus.assign(seq=[5] * len(corpus))
    with pytest.raises(InvalidInputError, match="must be unique"):
        mdd.dedup(dup, order="seq").compute()


@pytest.mark.slow
def test_read_input_parquet_and_csv(client, corpus, tmp_path: Path) -> None:
    data = corpus.assign(label=corpus["label"].fillna(""))
    dd.from_pandas(data, npartitions=4).to_parquet(tmp_path / "store.parquet")
    data.to_csv(tmp_path / "store.csv", index=False)
    expected = batch.replay(data["label"].tolist(), scopes=data["scope"].tolist())
    for path, kwargs in ((tmp_path / "store.parquet", {}), (tmp_path / "store.csv", {"blocksize": 4000})):
        frame = mdd.read_input(path, layer=None, **kwargs)
        assert frame.npartitions > 1
        result = mdd.dedup(frame).compute()
        _check(result, np.arange(len(data)), expected.canonical, expected.reason, expected.score)


def _write_jsonl(corpus: pd.DataFrame, path: Path) -> None:
    with path.open("w", encoding="utf-8") as f:
        for k, row in enumerate(corpus.to_dict("records")):
            if k == 9:
                del row["scope"]  # a missing field is a partition of its own, in both engines
            if k == 11:
                row["layer"] = {"kind": "é"}  # a non-text value reads as its JSON
            f.write(json.dumps(row, ensure_ascii=k % 2 == 0) + "\n")
            if k == 12:
                f.write("\n")


def _cli(capsys, *argv: str) -> tuple[int, dict, str]:
    status = cli.main(["dedup", *argv, "--json"])
    captured = capsys.readouterr()
    summary = json.loads(captured.out) if status == 0 else {}
    summary.pop("seconds", None)
    for key in ("engine", "scheduler", "workers", "out"):  # the run's own settings, which differ here
        summary.get("parameters", {}).pop(key, None)
    return status, summary, captured.err


@pytest.mark.slow
@pytest.mark.parametrize(("suffix", "mode"), [(".jsonl", "replay"), (".txt", "replay"), (".csv", "join")])
def test_cli_dask_engine_equals_in_process(client, corpus, tmp_path: Path, capsys, suffix, mode) -> None:
    path = tmp_path / f"turns{suffix}"
    if mode == "join":
        corpus = corpus.iloc[:120]  # join is quadratic per scope
    if suffix == ".jsonl":
        _write_jsonl(corpus, path)
    elif suffix == ".txt":  # no scope column: one group, on both engines
        path.write_text("".join(f"{v or ''}\n" for v in _labels(corpus)), encoding="utf-8")
    else:
        corpus.to_csv(path, index=False)
    address = client.scheduler.address
    outs = {}
    summaries = {}
    for engine in ("in-process", "dask"):
        out = tmp_path / f"{engine}.out.jsonl"
        extra = ["--scheduler", address] if engine == "dask" else []
        status, summaries[engine], err = _cli(
            capsys, str(path), "--mode", mode, "--engine", engine, "--out", str(out), *extra
        )
        assert status == 0, err
        outs[engine] = out.read_text(encoding="utf-8")
    assert summaries["dask"] == summaries["in-process"]
    assert outs["dask"] == outs["in-process"]
    assert summaries["dask"]["labels"] == len(corpus)
    assert summaries["dask"]["collapsed"] > 0
    # The fixture's cluster is still up: the CLI closed its client, not the cluster.
    assert len(client.scheduler_info()["workers"]) == 2


def test_cli_usage_errors(tmp_path: Path, capsys) -> None:
    path = tmp_path / "labels.txt"
    path.write_text("a\nb\n", encoding="utf-8")
    status, _, err = _cli(capsys, str(path), "--scheduler", "tcp://127.0.0.1:1")
    assert status == 2 and "--engine dask only" in err
    status, _, err = _cli(capsys, str(path), "--engine", "dask", "--scheduler", "tcp://x:1", "--workers", "2")
    assert status == 2 and "does not apply with --scheduler" in err


# ---------------------------------------------------------------------------------------------------
# One scope across the cluster: the join of a group larger than max_rows_per_task, split into block pairs
# ---------------------------------------------------------------------------------------------------
SAMPLE = Path(__file__).resolve().parent.parent / "benches" / "data" / "labels_sample.txt.gz"


@pytest.fixture(scope="module")
def sample() -> list[str]:
    """The bundled sample (40,000 real labels), with every line kept (blank ones too)."""
    import gzip

    with gzip.open(SAMPLE, "rt", encoding="utf-8", errors="surrogateescape") as f:
        return [line.rstrip("\n") for line in f]


def _splits(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "split into" in r.getMessage()]


@pytest.mark.slow
@pytest.mark.parametrize("blocks", [1, 2, 3, 4])
def test_split_join_equals_the_join_on_the_sample(client, sample, blocks) -> None:
    expected = batch.join(sample, expand=False)
    joined = mdd.split_join(sample, blocks=blocks)
    np.testing.assert_array_equal(joined.group, expected.group)
    np.testing.assert_array_equal(joined.pairs, expected.pairs)
    assert joined.pairs.dtype == expected.pairs.dtype == np.int64
    if blocks == 3:  # the pairs they stand for, once (the expansion is the slow part)
        np.testing.assert_array_equal(joined.expand(), batch.join(sample))
    # The sample exercises what it claims to: identical labels, and pairs between distinct ones.
    assert len(np.unique(expected.group)) < len(sample)
    assert (expected.pairs[:, 0] != expected.pairs[:, 1]).sum() > 10


@pytest.mark.slow
@pytest.mark.parametrize("cluster", ["canonical", "components"])
def test_one_scope_split_equals_in_process_on_the_sample(client, sample, cluster, caplog) -> None:
    caplog.set_level(logging.INFO, logger="memdedup.dask")
    sample = sample[:8000]
    frame = dd.from_pandas(pd.DataFrame({"label": sample}), npartitions=3)
    result = mdd.dedup(frame, mode="join", scope=None, cluster=cluster, max_rows_per_task=4000).compute()
    splits = _splits(caplog)  # the one group was split: 4 blocks of 2,000 rows, 6 tasks
    assert len(splits) == 1 and "split into 4 blocks of at most 2000 rows: 6 join tasks" in splits[0]
    table = batch.LabelTable(labels=sample, scopes=None, layers=None, source="sample")
    expected = batch.dedup_table(table, mode="join", cluster=cluster)
    _check(result, np.arange(len(sample)), expected.canonical, expected.reason, expected.score)
    c = batch.clusters(sample, mode=cluster)
    np.testing.assert_array_equal(expected.canonical, c.canonical)
    assert {"new", "ratio", "containment"} <= set(expected.reason)


@pytest.mark.slow
def test_one_split_scope_among_unsplit_ones(client, corpus, caplog) -> None:
    caplog.set_level(logging.INFO, logger="memdedup.dask")
    frame = dd.from_pandas(corpus, npartitions=4)
    result = mdd.dedup(frame, mode="join", threshold=0.8, max_rows_per_task=60).compute()
    # Only the big scope (about 60% of the 300 rows) is over the limit.
    splits = _splits(caplog)
    assert len(splits) == 1 and "tenant:big/user:0" not in splits[0]  # the scope id is not logged
    labels = ["" if v is None else v for v in _labels(corpus)]
    expected = batch.clusters(labels, threshold=0.8, scopes=corpus["scope"].tolist())
    _check(result, np.arange(len(corpus)), expected.canonical, expected.reason, expected.score)
    assert result["scope"].nunique() == corpus["scope"].nunique()
    # The same input unsplit: the same rows.
    caplog.clear()
    unsplit = mdd.dedup(frame, mode="join", threshold=0.8, max_rows_per_task=None).compute()
    assert not _splits(caplog)
    _check(unsplit, np.arange(len(corpus)), expected.canonical, expected.reason, expected.score)


def test_max_rows_per_task_is_checked(corpus) -> None:
    for bad in (0, 1, -5):
        with pytest.raises(InvalidInputError, match="max_rows_per_task"):
            mdd.dedup(corpus, mode="join", max_rows_per_task=bad)
    with pytest.raises(InvalidInputError, match="blocks"):
        mdd.split_join(["a", "b"], blocks=0)


@pytest.mark.slow
@settings(
    max_examples=n_examples(12), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    labels=duplicate_heavy_labels(max_size=40),
    blocks=st.integers(1, 5),
    threshold=st.sampled_from([0.6, 0.85]),
)
def test_split_join_equals_the_join_on_drawn_labels(client, labels, blocks, threshold) -> None:
    expected = batch.join(labels, threshold=threshold, expand=False)
    joined = mdd.split_join(labels, blocks=blocks, threshold=threshold)
    np.testing.assert_array_equal(joined.group, expected.group)
    np.testing.assert_array_equal(joined.pairs.reshape(-1, 2), expected.pairs.reshape(-1, 2))
    rows = max(2, 2 * (len(labels) // blocks))
    frame = pd.DataFrame({"label": pd.Series(labels, dtype=object), "scope": "s"})
    result = mdd.dedup(frame, mode="join", threshold=threshold, max_rows_per_task=rows).compute()
    c = batch.clusters(labels, threshold=threshold)
    _check(result, np.arange(len(labels)), c.canonical, c.reason, c.score)


_NOT_TEXT = [[1, 2, None, 4], [1.5, 2.0, float("nan"), 4.25], [True, False, None, True]]


@pytest.mark.parametrize("values", _NOT_TEXT)
def test_a_parquet_directory_with_a_non_string_label_column_is_refused(
    client, tmp_path: Path, values
) -> None:
    """Dask's reader takes the column as it is; the in-process reader refuses a label column that is not
    text. Both refuse it, with the same words: before, the directory's integers became labels "1", "2"
    by str() and were deduplicated at exit 0."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"label": pa.array(values), "scope": ["a", "a", "b", "b"]})
    (tmp_path / "store").mkdir()
    pq.write_table(table, tmp_path / "store" / "part.0.parquet")
    pq.write_table(table, tmp_path / "one.parquet")
    with pytest.raises(InvalidInputError, match="not string: a label is text") as local:
        mdd.read_input(tmp_path / "one.parquet", layer=None)
    with pytest.raises(InvalidInputError, match="not string: a label is text") as remote:
        mdd.read_input(tmp_path / "store", layer=None)
    assert str(local.value).split(": ", 1)[1] == str(remote.value).split(": ", 1)[1]


@pytest.mark.slow
def test_a_url_whose_filesystem_is_not_installed_is_a_stated_reason_and_exit_2(
    capsys, tmp_path: Path
) -> None:
    """Dask needs a package per remote protocol (s3fs for s3://): without it the run stops with exit 2
    and says which, as any other input it cannot read; before, it was an "unexpected error" at exit 1."""
    pytest.importorskip("dask.dataframe")
    try:
        import s3fs  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("s3fs is installed: the protocol is available")
    url = "s3://AKIAIOSFODNN7EXAMPLE:wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY@bucket/store.parquet"
    with pytest.raises(BackendUnavailableError, match="s3fs") as raised:
        mdd.read_input(url)
    assert "wJalrXUtnFEMI" not in str(raised.value)
    assert (
        cli.main(["dedup", url, "--engine", "dask", "--workers", "1", "--out", str(tmp_path / "out.jsonl")])
        == 2
    )
    err = capsys.readouterr().err
    assert "s3fs" in err and "wJalrXUtnFEMI" not in err
