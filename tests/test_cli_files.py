"""Issue 25, pipes, formats and broken files, through the real ``memdedup`` command: ``-`` for stdin on
every command, ``--out -`` for stdout, output formats by extension (with the scope and layer columns),
.gz inputs (and a truncated one), an Excel CSV with a byte-order mark, plot names matplotlib cannot write."""

from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path

import pytest
from cli_support import ROOT, run
from profiles import sampled

EXAMPLE = ROOT / "examples" / "turns.jsonl"
LABELS = [
    "Uses pytest and ruff",
    "Uses pytest and ruff.",
    "Uses pytest and ruff for Python projects",
    "Prefers dark mode in every editor",
    "Prefers dark mode in every editor and terminal",
    "Lives in Zürich",
]
TEXT = "".join(label + "\n" for label in LABELS)
ROWS = [
    {"label": label, "scope": "a" if k < 3 else "b", "layer": "semantic"} for k, label in enumerate(LABELS)
]
JSONL = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ROWS)
EXPECTED_CANONICAL = [0, 0, 0, 3, 3, 5]


def jsonl_rows(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


# ---------------------------------------------------------------------------------------------------
# stdin and stdout
# ---------------------------------------------------------------------------------------------------
def test_dedup_reads_stdin_and_writes_stdout() -> None:
    done = run("dedup", "-", "--out", "-", input=TEXT).ok()
    rows = jsonl_rows(done.out)  # stdout holds the rows only; the summary went to stderr
    assert [r["canonical"] for r in rows] == EXPECTED_CANONICAL
    assert "memdedup dedup: <stdin>" in done.err and "6 labels" in done.err


def test_dedup_reads_jsonl_from_stdin_with_input_format() -> None:
    done = run("dedup", "-", "--input-format", "jsonl", "--out", "-", "--json", input=JSONL).ok()
    rows = jsonl_rows(done.out)
    assert [r["scope"] for r in rows] == [r["scope"] for r in ROWS]
    assert [r["layer"] for r in rows] == ["semantic"] * 6
    assert json.loads(done.err)["input"] == "<stdin>"


def test_dedup_reads_gzip_from_stdin() -> None:
    done = run("dedup", "-", "--out", "-", input=gzip.compress(TEXT.encode())).ok()
    assert [r["canonical"] for r in jsonl_rows(done.out)] == EXPECTED_CANONICAL


def test_csv_to_stdout(tmp_path: Path) -> None:
    done = run("dedup", "-", "--out", "-", "--output-format", "csv", input=TEXT).ok()
    rows = list(csv.DictReader(io.StringIO(done.out)))
    assert [int(r["canonical"]) for r in rows] == EXPECTED_CANONICAL


def test_ingest_reads_stdin_and_gzip(tmp_path: Path) -> None:
    plain = run("ingest", EXAMPLE, "--db", tmp_path / "a.sqlite", "--json").ok()
    piped = run("ingest", "-", "--db", tmp_path / "b.sqlite", "--json", input=EXAMPLE.read_bytes()).ok()
    packed = tmp_path / "turns.jsonl.gz"
    packed.write_bytes(gzip.compress(EXAMPLE.read_bytes()))
    zipped = run("ingest", packed, "--db", tmp_path / "c.sqlite", "--json").ok()
    counts = [json.loads(r.out)["counts"] for r in (plain, piped, zipped)]
    assert counts[0] == counts[1] == counts[2]
    assert counts[0]["written"] > 0
    assert json.loads(piped.out)["source"] == "<stdin>"


def test_tune_reads_stdin_and_gzip(tmp_path: Path) -> None:
    pairs = (
        '{"stored": "Prefers dark mode.", "incoming": "Prefers dark mode", "same_fact": true}\n'
        '{"stored": "Lives in Paris", "incoming": "Lives in Rome", "same_fact": false}\n'
    )
    path = tmp_path / "pairs.jsonl.gz"
    path.write_bytes(gzip.compress(pairs.encode()))
    a = json.loads(run("tune", "-", "--json", input=pairs).ok().out)
    b = json.loads(run("tune", path, "--json").ok().out)
    assert a["pairs"] == b["pairs"] == 2
    assert a["detail"]["tp"] == b["detail"]["tp"] == 1


# ---------------------------------------------------------------------------------------------------
# Output formats, with the scope and layer columns
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["out.jsonl", "out.jsonl.gz", "out.csv", "out.csv.gz", "out.parquet"])
def test_output_formats_by_extension(tmp_path: Path, name: str) -> None:
    data = tmp_path / "labels.jsonl"
    data.write_text(JSONL, encoding="utf-8")
    out = tmp_path / name
    run("dedup", data, "--out", out).ok()
    if name.endswith(".parquet"):
        pq = pytest.importorskip("pyarrow.parquet")
        rows = pq.read_table(out).to_pylist()
    else:
        raw = out.read_bytes()
        text = (gzip.decompress(raw) if name.endswith(".gz") else raw).decode("utf-8")
        rows = jsonl_rows(text) if ".jsonl" in name else list(csv.DictReader(io.StringIO(text)))
    assert [r["label"] for r in rows] == LABELS
    assert [r["scope"] for r in rows] == [r["scope"] for r in ROWS]
    assert [r["layer"] for r in rows] == ["semantic"] * 6
    assert [int(r["canonical"]) for r in rows] == EXPECTED_CANONICAL
    assert {"index", "canonical_label", "reason", "score"} <= set(rows[0])
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".part")]


def test_typed_scopes_are_kept_in_jsonl_output(tmp_path: Path) -> None:
    data = tmp_path / "typed.jsonl"
    rows = [{"label": LABELS[0], "scope": s} for s in (1, "1", True, None)] + [{"label": LABELS[0]}]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    run("dedup", data, "--out", out).ok()
    got = jsonl_rows(out.read_text(encoding="utf-8"))
    assert [r.get("scope", "<none>") for r in got] == [1, "1", True, None, "<none>"]
    assert all(r["reason"] == "new" for r in got)  # five partitions: why nothing merged is visible


@pytest.mark.parametrize("name", ["out.txt", "out.json", "out", "out.parquet.gz", "out.xlsx"])
def test_unknown_output_extension_is_refused_before_any_work(tmp_path: Path, name: str) -> None:
    done = run("dedup", "-", "--out", tmp_path / name, input=TEXT).fails()
    assert (".jsonl" in done.err and ".csv" in done.err and ".parquet" in done.err) or "Parquet" in done.err
    assert list(tmp_path.iterdir()) == []


def test_output_into_a_missing_folder_is_refused(tmp_path: Path) -> None:
    done = run("dedup", "-", "--out", tmp_path / "no" / "such" / "out.jsonl", input=TEXT).fails()
    assert "cannot write" in done.err and "no such directory" in done.err


# ---------------------------------------------------------------------------------------------------
# Inputs: .gz, a truncated .gz, Excel's BOM
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("suffix", [".txt.gz", ".jsonl.gz", ".csv.gz"])
def test_gzip_inputs(tmp_path: Path, suffix: str) -> None:
    text = {".txt.gz": TEXT, ".jsonl.gz": JSONL, ".csv.gz": "label\n" + TEXT}[suffix]
    path = tmp_path / f"labels{suffix}"
    path.write_bytes(gzip.compress(text.encode("utf-8")))
    rows = jsonl_rows(run("dedup", path, "--out", "-").ok().out)
    assert [r["label"] for r in rows] == LABELS


@pytest.mark.parametrize("command", ["dedup", "ingest", "tune"])
def test_a_truncated_gzip_is_a_clear_error(tmp_path: Path, command: str) -> None:
    payload = EXAMPLE.read_bytes() if command != "dedup" else (TEXT * 200).encode()
    if command == "tune":
        payload = b"".join(
            json.dumps({"stored": f"label {k}", "incoming": f"label {k}!", "same_fact": True}).encode()
            + b"\n"
            for k in range(2000)
        )
    packed = gzip.compress(payload)
    path = tmp_path / "input.jsonl.gz"
    path.write_bytes(packed[: len(packed) // 2])
    extra = ["--db", str(tmp_path / "m.sqlite")] if command == "ingest" else []
    done = run(command, path, *extra).fails()
    assert "input.jsonl.gz" in done.err and "gzip stream is truncated" in done.err, done
    assert "EOFError" not in done.err


def test_a_csv_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    path = tmp_path / "excel.csv"
    path.write_bytes(
        b"\xef\xbb\xbf"
        + ("label,scope\r\n" + "".join(f"{r['label']},{r['scope']}\r\n" for r in ROWS)).encode()
    )
    rows = jsonl_rows(run("dedup", path, "--out", "-").ok().out)
    assert [r["label"] for r in rows] == LABELS
    assert [r["scope"] for r in rows] == [r["scope"] for r in ROWS]


def test_a_text_file_with_a_byte_order_mark_does_not_keep_it(tmp_path: Path) -> None:
    path = tmp_path / "labels.txt"
    path.write_bytes(b"\xef\xbb\xbf" + TEXT.encode())
    rows = jsonl_rows(run("dedup", path, "--out", "-").ok().out)
    assert rows[0]["label"] == LABELS[0]


def test_a_missing_input_and_a_directory(tmp_path: Path) -> None:
    for command in ("dedup", "tune"):
        assert "cannot read" in run(command, tmp_path / "nope.txt").fails().err
        assert "cannot read" in run(command, tmp_path).fails().err
    assert "cannot read" in run("ingest", tmp_path / "nope.jsonl", "--db", tmp_path / "m.sqlite").fails().err


# ---------------------------------------------------------------------------------------------------
# Plot names
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["t.txt", "t", "t.docx"])
def test_tune_plot_with_an_unsupported_extension_says_which_are(tmp_path: Path, name: str) -> None:
    pytest.importorskip("matplotlib")
    done = run("tune", "--plot", tmp_path / name).fails()
    assert "matplotlib cannot write" in done.err and ".png" in done.err and ".svg" in done.err, done
    assert not (tmp_path / name).exists()


@pytest.mark.parametrize("name", sampled(["t.svg", "t.pdf", "T.PNG"], ["T.PNG"]))
def test_tune_plot_in_other_formats(tmp_path: Path, name: str) -> None:
    pytest.importorskip("matplotlib")
    run("tune", "--plot", tmp_path / name, "--show", "0").ok()
    assert (tmp_path / name).stat().st_size > 1000
