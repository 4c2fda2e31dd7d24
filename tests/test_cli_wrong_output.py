"""Issue 25, "wrong output, exit 0": each case runs the real ``memdedup`` command on real files and checks
that it either gives the right answer or refuses with exit 2 and a message (never a silent wrong answer)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from cli_support import run

LABELS = [
    "Uses pytest and ruff",
    "uses pytest and ruff.",
    "Uses pytest and ruff for Python projects",
    "Prefers dark mode in every editor",
    "Prefers dark mode in every editor and terminal",
    "Lives in Zürich",
]


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# ---------------------------------------------------------------------------------------------------
# Parquet is read as Parquet by the in-process engine, never as text
# ---------------------------------------------------------------------------------------------------
def test_parquet_is_read_as_a_table_without_dask(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "labels.parquet"
    pq.write_table(pa.table({"label": LABELS, "scope": ["a"] * 3 + ["b"] * 3}), path)
    done = run("dedup", path, "--json", "--out", tmp_path / "out.jsonl").ok()
    summary = json.loads(done.out)
    assert summary["labels"] == len(LABELS)
    rows = jsonl(tmp_path / "out.jsonl")
    assert [r["label"] for r in rows] == LABELS
    assert [r["scope"] for r in rows] == ["a"] * 3 + ["b"] * 3
    # The raw prefix gate is case-sensitive: row 1 is never fetched for row 0 (the seed's behaviour).
    assert [r["reason"] for r in rows][:3] == ["new", "new", "containment"]


def test_a_parquet_file_without_its_extension_is_not_read_as_text(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "labels.txt"
    pq.write_table(pa.table({"label": LABELS}), path)
    done = run("dedup", path).fails()
    assert "Parquet" in done.err and "labels.txt" in done.err


# ---------------------------------------------------------------------------------------------------
# Invalid UTF-8: one rule for dedup, ingest and tune (the file, the line, the byte offset; exit 2)
# ---------------------------------------------------------------------------------------------------
LATIN1 = "first line\ncafé au lait\n".encode("latin-1")  # the é (0xE9) is byte 14, on line 2


def _assert_names_the_byte(err: str, name: str) -> None:
    assert f"{name}:2:" in err, err
    assert "not UTF-8" in err, err
    assert "byte 14" in err and "0xe9" in err, err


@pytest.mark.parametrize("suffix", [".txt", ".jsonl", ".csv", ".txt.gz"])
def test_dedup_refuses_invalid_utf8(tmp_path: Path, suffix: str) -> None:
    import gzip

    path = tmp_path / f"labels{suffix}"
    data = LATIN1 if suffix != ".jsonl" else b'{"label": "first"}\n{"label": "caf\xe9"}\n'
    if suffix == ".csv":
        data = b"label\ncaf\xe9 au lait\n"
    if suffix.endswith(".gz"):
        path.write_bytes(gzip.compress(data))
    else:
        path.write_bytes(data)
    done = run("dedup", path, "--out", tmp_path / "out.jsonl").fails()
    assert path.name in done.err and "not UTF-8" in done.err, done
    assert "byte " in done.err and "0xe9" in done.err
    assert not (tmp_path / "out.jsonl").exists()
    if suffix in (".txt", ".txt.gz"):
        _assert_names_the_byte(done.err, path.name)


def test_dedup_refuses_a_binary_file(tmp_path: Path) -> None:
    path = tmp_path / "random.bin"
    path.write_bytes(bytes(random.Random(5).randrange(256) for _ in range(3000)))
    done = run("dedup", path).fails()
    assert "not UTF-8" in done.err and "random.bin" in done.err


def test_ingest_and_tune_say_the_same_as_dedup(tmp_path: Path) -> None:
    turns = tmp_path / "turns.jsonl"
    ok_line = json.dumps({"scope": {"org": "acme"}, "turn": 1, "output": "{}"}).encode()
    bad_line = b'{"scope": {"org": "acme"}, "turn": 2, "output": "caf\xe9"}'
    turns.write_bytes(ok_line + b"\n" + bad_line + b"\n")
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_bytes(
        b'{"stored": "a", "incoming": "b", "same_fact": false}\n'
        b'{"stored": "caf\xe9", "incoming": "b", "same_fact": false}\n'
    )
    labels = tmp_path / "labels.jsonl"
    labels.write_bytes(b'{"label": "a"}\n{"label": "caf\xe9", "x": 1}\n')
    db = tmp_path / "m.sqlite"
    errors = {
        "ingest": run("ingest", turns, "--db", db).fails().err,
        "tune": run("tune", pairs).fails().err,
        "dedup": run("dedup", labels).fails().err,
    }
    offsets = {"ingest": len(ok_line) + 1 + bad_line.index(b"\xe9"), "tune": 0, "dedup": 0}
    offsets["tune"] = pairs.read_bytes().index(b"\xe9")
    offsets["dedup"] = labels.read_bytes().index(b"\xe9")
    for command, err in errors.items():
        name = {"ingest": "turns.jsonl", "tune": "pairs.jsonl", "dedup": "labels.jsonl"}[command]
        assert err.startswith(f"memdedup {command}: error: "), err
        assert f"{name}:2: not UTF-8: byte {offsets[command]} (0xe9)" in err, err
    # Nothing was written: the whole file is checked before the first turn.
    if db.exists():
        import sqlite3

        with sqlite3.connect(db) as conn:
            assert conn.execute("SELECT count(*) FROM ledger").fetchone()[0] == 0


# ---------------------------------------------------------------------------------------------------
# --cluster components reports every collapsed row with the pair that put it there
# ---------------------------------------------------------------------------------------------------
def test_components_never_reports_a_collapsed_row_as_new(tmp_path: Path) -> None:
    # 1 matches only 2 (a later label), 2 matches 0: 1 is in 0's component through 2.
    labels = [
        "Prefers dark mode in every editor",
        "dark mode in every editor and terminal, always",
        "Prefers dark mode in every editor and terminal, always",
        "Lives in Zürich",
    ]
    path = tmp_path / "labels.txt"
    path.write_text("\n".join(labels) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    run("dedup", path, "--mode", "join", "--cluster", "components", "--out", out).ok()
    rows = jsonl(out)
    assert [r["canonical"] for r in rows] == [0, 0, 0, 3]
    for row in rows:
        if row["canonical"] != row["index"]:
            assert row["reason"] in ("ratio", "containment"), row
            assert isinstance(row["score"], float), row
        else:
            assert row["reason"] == "new" and row["score"] is None


def test_components_on_a_larger_corpus(tmp_path: Path) -> None:
    rnd = random.Random(3)
    words = ["dark", "mode", "editor", "terminal", "pytest", "ruff", "python", "tea", "green", "every"]
    labels = [" ".join(rnd.choice(words) for _ in range(rnd.randint(3, 8))) for _ in range(400)]
    path = tmp_path / "labels.txt"
    path.write_text("\n".join(labels) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    run("dedup", path, "--mode", "join", "--cluster", "components", "--out", out).ok()
    rows = jsonl(out)
    collapsed = [r for r in rows if r["canonical"] != r["index"]]
    assert collapsed
    assert all(r["reason"] in ("ratio", "containment") and r["score"] is not None for r in collapsed)


# ---------------------------------------------------------------------------------------------------
# Options that would do nothing are refused
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--mode", "replay", "--cluster", "components"], "--cluster applies to --mode join"),
        (["--mode", "join", "--prefix", "normalised"], "--prefix applies to --mode replay"),
        (["--min-chars", "-5"], "--min-chars must be 0 or more"),
        (["--out", "{tmp}/out.txt"], "unknown output format"),
        (["--out", "{tmp}/out"], "unknown output format"),
    ],
)
def test_options_that_do_nothing_are_refused(tmp_path: Path, args: list[str], message: str) -> None:
    path = tmp_path / "labels.txt"
    path.write_text("\n".join(LABELS) + "\n", encoding="utf-8")
    done = run("dedup", path, *(a.format(tmp=tmp_path) for a in args)).fails()
    assert message in done.err, done
    assert not any(p.name.startswith("out") for p in tmp_path.iterdir())


def test_min_chars_is_checked_the_same_way_by_tune(tmp_path: Path) -> None:
    done = run("tune", "--min-chars", "-5").fails()
    assert "--min-chars must be 0 or more" in done.err, done


def test_out_csv_writes_csv(tmp_path: Path) -> None:
    import csv

    path = tmp_path / "labels.txt"
    path.write_text("\n".join(LABELS) + "\n", encoding="utf-8")
    out = tmp_path / "out.csv"
    run("dedup", path, "--out", out).ok()
    with out.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [r["label"] for r in rows] == LABELS
    assert rows[2]["reason"] == "containment" and rows[2]["canonical"] == "0"
    assert rows[2]["canonical_label"] == LABELS[0]
    assert rows[0]["score"] == ""
