"""Issue 38: every file read as the user meant it or refused, every output self-explaining.

One section per item of the issue. The commands run in this process (``cli_support.run_here``: the real
``memdedup.cli.main``, its stdin, stdout and stderr captured), so the file stays fast; what needs a child
process or a Dask cluster is marked ``slow``."""

from __future__ import annotations

import csv
import gzip
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_support import ROOT, Result, run_here
from memdedup import batch, tables
from memdedup.errors import InvalidInputError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def refused(result: Result, *fragments: str) -> str:
    """Exit 2 with one line on stderr holding every fragment, no traceback, nothing on stdout."""
    assert result.status == 2, result
    assert "Traceback" not in result.err, result
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


# ---------------------------------------------------------------------------------------------------
# 1. A CSV field that spans lines is refused unless --multiline; end of file inside quotes always
# ---------------------------------------------------------------------------------------------------
def _csv_lines(n: int) -> list[str]:
    return ["label"] + [f"label number {k} about something else" for k in range(n)]


def test_a_stray_opening_quote_no_longer_swallows_the_file(tmp_path: Path) -> None:
    lines = _csv_lines(1000)
    lines[3] = '"' + lines[3]  # the third data row opens a quote that never closes
    path = tmp_path / "stray.csv"
    path.write_text("\n".join(lines) + "\n")
    refused(run_here("dedup", "-q", path), "stray.csv:4:", "quote", "end of the file")
    # End of file inside quotes is refused even when fields may hold line breaks.
    refused(run_here("dedup", "-q", path, "--multiline"), "stray.csv:4:", "end of the file")


def test_a_stray_quote_that_a_later_one_closes_is_refused_naming_where_it_opened(tmp_path: Path) -> None:
    lines = _csv_lines(20)
    lines[3] = '"' + lines[3]
    lines[10] = lines[10] + '"'
    path = tmp_path / "stray2.csv"
    path.write_text("\n".join(lines) + "\n")
    line = refused(run_here("dedup", "-q", path), "stray2.csv:4:", "--multiline")
    assert "11" in line  # where it closed
    out = tmp_path / "o.jsonl"
    run_here("dedup", "-q", path, "--multiline", "--out", out)
    rows = jsonl(out)
    assert len(rows) == 13 and rows[2]["label"].count("\n") == 7


@pytest.mark.parametrize("column", ["label", "scope"])
def test_a_quoted_line_break_needs_multiline_in_any_column_read(tmp_path: Path, column: str) -> None:
    cells = {"label": "first", "scope": "s"}
    cells[column] = '"two\r\nlines"'
    path = tmp_path / "q.csv"
    path.write_bytes(f"label,scope\nzero,s\n{cells['label']},{cells['scope']}\n".encode())
    refused(run_here("dedup", "-q", path), "q.csv:3:", f"{column!r}", "--multiline")
    out = tmp_path / "o.jsonl"
    assert run_here("dedup", "-q", path, "--multiline", "--out", out).status == 0
    assert jsonl(out)[1][column] == "two\r\nlines"
    # The library: the same rule, multiline=True to allow.
    with pytest.raises(InvalidInputError, match="multiline"):
        tables.read_label_table(path)
    assert tables.read_label_table(path, multiline=True).labels[0] == "zero"


@pytest.mark.parametrize(
    ("body", "line"),
    [
        ('"closed"then more\n', 3),  # text after a closing quote
        ('"closed" \n', 3),
        ('x,"never closed\n', 3),
    ],
)
def test_other_quoting_failures_are_refused_with_the_line(tmp_path: Path, body: str, line: int) -> None:
    path = tmp_path / "b.csv"
    path.write_text("label,scope\nfine,s\n" + body)
    refused(run_here("dedup", "-q", path), f"b.csv:{line}:")


def test_blank_lines_and_quoted_fields_on_one_line_still_read(tmp_path: Path) -> None:
    path = tmp_path / "ok.csv"
    path.write_text('label,scope\n\n"a, quoted ""label""",s\n\nplain,s\n')
    out = tmp_path / "o.jsonl"
    assert run_here("dedup", "-q", path, "--out", out).status == 0
    assert [r["label"] for r in jsonl(out)] == ['a, quoted "label"', "plain"]


# ---------------------------------------------------------------------------------------------------
# 2. JSON lines read as text are refused, naming --input-format
# ---------------------------------------------------------------------------------------------------
JSON_LINES = b'\n{"label": "Prefers dark mode", "scope": "u1"}\n{"label": "Prefers dark mode."}\n'


def test_json_lines_on_stdin_without_input_format_are_refused() -> None:
    refused(run_here("dedup", "-", "--out", "-", input=JSON_LINES), "<stdin>", "--input-format jsonl")
    refused(run_here("dedup", "-", input=gzip.compress(JSON_LINES)), "--input-format text")


def test_json_lines_in_a_file_with_no_known_extension_are_refused(tmp_path: Path) -> None:
    for name in ("labels", "labels.gz", "labels.log"):
        path = tmp_path / name
        path.write_bytes(JSON_LINES)
        refused(run_here("dedup", "-q", path), name, "--input-format jsonl")


def test_json_read_as_text_on_purpose_or_by_its_name(tmp_path: Path) -> None:
    done = run_here("dedup", "-", "--input-format", "text", "--out", "-", input=JSON_LINES)
    assert done.status == 0
    assert [json.loads(r)["label"] for r in done.out.splitlines()][1].startswith('{"label"')
    done = run_here("dedup", "-", "--input-format", "jsonl", "--out", "-", input=JSON_LINES)
    assert [json.loads(r)["canonical"] for r in done.out.splitlines()] == [0, 1]
    (tmp_path / "l.txt").write_bytes(JSON_LINES)  # JSON lines renamed .txt: refused too, unless asked
    refused(run_here("dedup", "-q", tmp_path / "l.txt"), "l.txt:2:", "--input-format")
    assert run_here("dedup", "-q", tmp_path / "l.txt", "--input-format", "text").status == 0
    (tmp_path / "plain").write_bytes(b"just a label\n{not json\n")  # not a JSON object: text
    assert run_here("dedup", "-q", tmp_path / "plain").status == 0


def test_a_json_document_is_refused_by_its_name_or_its_shape(tmp_path: Path) -> None:
    (tmp_path / "l.json").write_text('[\n  {"label": "a"}\n]\n')
    refused(run_here("dedup", "-q", tmp_path / "l.json"), "l.json", "JSON", "--input-format")
    (tmp_path / "l.txt").write_text('[\n  "Prefers dark mode",\n  "Lives in Lisbon"\n]\n')
    refused(run_here("dedup", "-q", tmp_path / "l.txt"), "l.txt", "JSON document", "--input-format text")
    assert run_here("dedup", "-q", tmp_path / "l.txt", "--input-format", "text").status == 0


def test_options_for_another_format_are_refused(tmp_path: Path) -> None:
    (tmp_path / "l.txt").write_text("a label\n")
    refused(run_here("dedup", "-q", tmp_path / "l.txt", "--multiline"), "--multiline", "CSV")


def test_a_csv_with_another_separator_is_named(tmp_path: Path) -> None:
    (tmp_path / "s.csv").write_text("label;scope\na;b\n")
    refused(run_here("dedup", "-q", tmp_path / "s.csv"), "no 'label' column", "separated by ';'")


# ---------------------------------------------------------------------------------------------------
# 3. --cluster components says what each row means
# ---------------------------------------------------------------------------------------------------
CHAIN = [
    "Prefers dark mode in every editor",  # 0
    "Prefers dark mode in every editor and terminal",  # 1 ~ 0 (containment)
    "dark mode in every editor and terminal",  # 2 ~ 1 (ratio), not ~ 0
    "dark mode in every editor and terminal, also at night on weekends",  # 3 ~ 2 only
    "Lives in Zürich",  # 4
]


def test_components_rows_name_the_pair_that_put_them_there(tmp_path: Path) -> None:
    path = tmp_path / "chain.txt"
    path.write_text("\n".join(CHAIN) + "\n", encoding="utf-8")
    out = tmp_path / "o.jsonl"
    done = run_here("dedup", path, "--mode", "join", "--cluster", "components", "--out", out)
    assert done.status == 0, done
    rows = jsonl(out)
    assert [r["canonical"] for r in rows] == [0, 0, 0, 0, 4]
    for r in rows:
        if r["canonical"] == r["index"]:
            assert r["via"] is None and r["via_label"] is None
        else:
            # The row's reason and score are the via pair's, decided as the library decides it.
            assert r["via_label"] == CHAIN[r["via"]]
            a, b = sorted((r["via"], r["index"]))
            assert batch.match_reason(CHAIN[a], CHAIN[b]) == (r["reason"], pytest.approx(r["score"]))
        assert r["component_size"] == (4 if r["canonical"] == 0 else 1)
    assert [r["matches_canonical"] for r in rows] == [None, True, False, False, None]
    assert [batch.match_reason(CHAIN[0], CHAIN[k]) is not None for k in (1, 2, 3)] == [True, False, False]
    # The summary says which components chain: fewer than half their members match the canonical.
    summary = done.out
    assert "do not match their canonical label" in summary
    assert re.search(r"component of 4 labels at row 0 .*: 1 of 3 members \(33%\) match", summary), summary


def test_components_json_summary_lists_the_loose_components(tmp_path: Path) -> None:
    path = tmp_path / "chain.txt"
    path.write_text("\n".join(CHAIN) + "\n", encoding="utf-8")
    done = run_here("dedup", path, "--mode", "join", "--cluster", "components", "--json")
    summary = json.loads(done.out)
    components = summary["components"]
    assert components["not_matching_canonical"] == 2
    assert components["loose"] == [
        {
            "canonical": 0,
            "canonical_label": CHAIN[0],
            "size": 4,
            "matching": 1,
            "share": pytest.approx(1 / 3),
        }
    ]


def test_canonical_clusters_and_replay_keep_their_columns(tmp_path: Path) -> None:
    path = tmp_path / "chain.txt"
    path.write_text("\n".join(CHAIN) + "\n", encoding="utf-8")
    out = tmp_path / "o.csv"
    for mode in (["--mode", "join"], []):
        assert run_here("dedup", "-q", path, *mode, "--out", out).status == 0
        assert list(csv_rows(out)[0]) == list(batch.OUTPUT_COLUMNS[:2]) + list(batch.OUTPUT_COLUMNS[4:])


# ---------------------------------------------------------------------------------------------------
# 4. Scopes and layers keep their type in every output
# ---------------------------------------------------------------------------------------------------
TYPED = [
    {"label": "same label in two scopes", "scope": 1, "layer": "semantic"},
    {"label": "same label in two scopes", "scope": "1", "layer": "semantic"},
    {"label": "same label in two scopes", "scope": None, "layer": "semantic"},
    {"label": "same label in two scopes", "layer": "semantic"},
    {"label": "same label in two scopes", "scope": "", "layer": "semantic"},
    {"label": "same label in two scopes", "scope": {"user": "dana"}, "layer": "semantic"},
    {"label": "same label in two scopes", "scope": 1.0, "layer": "semantic"},
    {"label": "same label in two scopes", "scope": True, "layer": "semantic"},
    {"label": "same label in two scopes", "scope": 2**70, "layer": "semantic"},
    {"label": "same label in two scopes", "scope": 1, "layer": "semantic"},
]


def _typed_input(tmp_path: Path, rows: list[dict[str, Any]] = TYPED) -> Path:
    path = tmp_path / "typed.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_csv_output_writes_a_typed_scope_column_as_json_and_says_so(tmp_path: Path) -> None:
    source = _typed_input(tmp_path)
    out = tmp_path / "o.csv"
    done = run_here("dedup", source, "--out", out)
    assert done.status == 0, done
    cells = [r["scope"] for r in csv_rows(out)]
    assert cells == ["1", '"1"', "null", "", '""', '{"user": "dana"}', "1.0", "true", str(2**70), "1"]
    assert [r["layer"] for r in csv_rows(out)] == ["semantic"] * len(TYPED)  # all strings: as they are
    assert "scope" in done.out and "JSON" in done.out and "--json-columns scope" in done.out
    # Read back with --json-columns: the same partitions and the same decisions as the input gave.
    again = tmp_path / "again.jsonl"
    assert run_here("dedup", "-q", out, "--json-columns", "scope", "--out", again).status == 0
    first = tmp_path / "first.jsonl"
    run_here("dedup", "-q", source, "--out", first)
    assert jsonl(again) == jsonl(first)
    assert [r["canonical"] for r in jsonl(first)] == [*range(9), 0]


def test_reading_csv_without_json_columns_still_keeps_the_partitions_apart(tmp_path: Path) -> None:
    out = tmp_path / "o.csv"
    run_here("dedup", "-q", _typed_input(tmp_path), "--out", out)
    back = tmp_path / "back.jsonl"
    run_here("dedup", "-q", out, "--out", back)
    assert [r["canonical"] for r in jsonl(back)] == [*range(9), 0]


@pytest.mark.parametrize(
    "rows",
    [
        TYPED,
        [{"label": "a label", "scope": s} for s in (1, 2, 2**64)],  # an int Arrow cannot hold
        [{"label": "a label", "scope": s} for s in (1, 1.0)],  # Arrow would make 1 a float
        [{"label": "a label", "scope": None}, {"label": "a label"}],  # null and missing
        [{"label": "a label", "scope": s} for s in ({"a": 1}, {"b": 2})],  # Arrow would add keys
    ],
    ids=["mixed", "int-beyond-64-bits", "int-and-float", "null-and-missing", "objects"],
)
def test_parquet_output_falls_back_to_json_text_and_reads_back_exactly(
    tmp_path: Path, rows: list[dict[str, Any]]
) -> None:
    source = _typed_input(tmp_path, rows)
    out = tmp_path / "o.parquet"
    done = run_here("dedup", source, "--out", out)
    assert done.status == 0, done
    assert "--json-columns scope" in done.out
    assert pq.read_table(out).schema.field("scope").type == pa.string()
    again, first = tmp_path / "again.jsonl", tmp_path / "first.jsonl"
    assert run_here("dedup", "-q", out, "--json-columns", "scope", "--out", again).status == 0
    run_here("dedup", "-q", source, "--out", first)
    assert jsonl(again) == jsonl(first)


def test_parquet_output_keeps_a_column_arrow_holds_exactly(tmp_path: Path) -> None:
    source = _typed_input(tmp_path, [{"label": "a label", "scope": s} for s in (1, 2, None)])
    out = tmp_path / "o.parquet"
    done = run_here("dedup", source, "--out", out)
    assert "JSON" not in done.out
    assert pq.read_table(out).column("scope").to_pylist() == [1, 2, None]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--json-columns", "label"], "label"),
        (["--json-columns", "nope"], "nope"),
    ],
)
def test_json_columns_that_cannot_apply_are_refused(tmp_path: Path, args: list[str], fragment: str) -> None:
    path = tmp_path / "in.csv"
    path.write_text("label,scope\na,1\n")
    refused(run_here("dedup", "-q", path, *args), fragment)
    refused(run_here("dedup", "-q", _typed_input(tmp_path), "--json-columns", "scope"), "CSV and Parquet")


def test_a_json_column_cell_that_is_not_json_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    path.write_text('label,scope\na,1\nb,"{not json"\nc,"""\\ud800"""\n')
    refused(run_here("dedup", "-q", path, "--json-columns", "scope"), "in.csv:3:", "'scope'", "JSON")
    path.write_text('label,scope\na,1\nc,"""\\ud800"""\n')
    refused(run_here("dedup", "-q", path, "--json-columns", "scope"), "in.csv:3:", "surrogate")


# ---------------------------------------------------------------------------------------------------
# 5. Output files honour the umask and an existing file's mode
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["jsonl", "csv.gz", "parquet"])
def test_output_files_honour_the_umask_and_an_existing_mode(tmp_path: Path, fmt: str) -> None:
    source = tmp_path / "in.txt"
    source.write_text("a label\n")
    out = tmp_path / f"o.{fmt}"
    old = os.umask(0o022)
    try:
        assert run_here("dedup", "-q", source, "--out", out).status == 0
        assert stat.S_IMODE(out.stat().st_mode) == 0o644
        out.unlink()
        os.umask(0o027)
        run_here("dedup", "-q", source, "--out", out)
        assert stat.S_IMODE(out.stat().st_mode) == 0o640
        out.chmod(0o664)  # an existing file keeps its mode, whatever the umask
        run_here("dedup", "-q", source, "--out", out)
        assert stat.S_IMODE(out.stat().st_mode) == 0o664
    finally:
        os.umask(old)


# ---------------------------------------------------------------------------------------------------
# 6. One rule for every place a path is shown: scrubbed
# ---------------------------------------------------------------------------------------------------
def test_a_credential_in_a_path_is_shown_nowhere(tmp_path: Path) -> None:
    folder = tmp_path / SECRET
    folder.mkdir()
    source = folder / "in.txt"
    source.write_text("a label here\na label here\n")
    texts = [
        run_here("dedup", source).out,  # the summary's header
        run_here("dedup", source, "--json").out,  # "input"
        run_here("dedup", source, "--out", folder / "o.csv").out,  # "wrote ..."
        run_here("dedup", source, "--out", folder / "o.csv", "--json").out,  # parameters' "out"
        run_here("dedup", folder / "absent.txt").err,  # an error
        run_here("dedup", source, "--out", folder / "o.txt").err,
    ]
    turns = folder / "turns.jsonl"
    turns.write_bytes((ROOT / "examples" / "turns.jsonl").read_bytes()[:2000].rsplit(b"\n", 1)[0] + b"\n")
    texts.append(run_here("ingest", turns, "--db", folder / "m.db", "--summary").out)
    texts.append(run_here("ingest", turns, "--db", folder / "m2.db", "--json").out)
    texts.append(run_here("tune", "--json", "--show", "0", folder / "absent.jsonl").err)
    pairs = folder / "pairs.jsonl"
    pairs.write_text('{"stored": "a b c", "incoming": "a b c", "same_fact": true}\n')
    texts.append(run_here("tune", pairs).out)
    texts.append(run_here("tune", pairs, "--json").out)
    for text in texts:
        assert text.strip()
        assert SECRET not in text and SECRET[:12] not in text, text
        assert "[REDACTED:GITHUB_TOKEN]" in text, text
    assert json.loads(texts[1])["input"].endswith("[REDACTED:GITHUB_TOKEN]/in.txt")


# ---------------------------------------------------------------------------------------------------
# 7. docs/dask.md's example: an int64 order column read from Parquet
# ---------------------------------------------------------------------------------------------------
def test_dask_reads_an_int64_order_column_from_parquet(tmp_path: Path) -> None:
    mdd = pytest.importorskip("memdedup.dask")
    dask = pytest.importorskip("dask")
    path = tmp_path / "store.parquet"
    labels = ["Prefers dark mode", "Prefers dark mode.", "Lives in Lisbon", "Prefers dark mode"]
    pq.write_table(
        pa.table(
            {
                "label": labels,
                "scope": ["u1", "u1", "u1", "u2"],
                "layer": ["semantic"] * 4,
                "seq": pa.array([40, 10, 20, 30], pa.int64()),
            }
        ),
        path,
    )
    with dask.config.set(scheduler="synchronous"):
        result = mdd.dedup(str(path), scope="scope", layer="layer", order="seq").compute()
    result = result.sort_values("row_id")
    assert result["row_id"].tolist() == [10, 20, 30, 40]
    # In seq order, the replay of u1 is "Prefers dark mode." (10), "Lives in Lisbon" (20), then 40.
    assert result["canonical"].tolist() == [10, 20, 30, 10]
    pq.write_table(pa.table({"label": ["a"], "seq": pa.array([1.5])}), path)
    with pytest.raises(InvalidInputError, match="integers"):
        mdd.dedup(str(path), scope=None, layer=None, order="seq")


# ---------------------------------------------------------------------------------------------------
# 8. A SQLite database given as a file of labels
# ---------------------------------------------------------------------------------------------------
def test_a_sqlite_database_is_recognised_and_pointed_to_consolidate(tmp_path: Path) -> None:
    import sqlite3

    db = tmp_path / "memory.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    line = refused(run_here("dedup", "-q", db), "memory.sqlite", "SQLite", "memdedup consolidate --db")
    assert "UTF-8" not in line and "iconv" not in line
    for fmt in ("csv", "jsonl", "text", "parquet"):
        refused(run_here("dedup", "-q", db, "--input-format", fmt), "SQLite")
    refused(run_here("dedup", "-", input=db.read_bytes()), "<stdin>", "SQLite")
    refused(run_here("ingest", "-q", db, "--db", tmp_path / "new.sqlite"), "SQLite")
    refused(run_here("tune", "-q", db), "SQLite")


@pytest.mark.parametrize(
    ("data", "what"),
    [
        (b"PK\x03\x04" + b"\x00" * 40, "zip"),
        (b"BZh91AY&SY" + b"\x00" * 40, "bzip2"),
        (b"\xfd7zXZ\x00" + b"\x00" * 40, "xz"),
        (b"\x28\xb5\x2f\xfd" + b"\x00" * 40, "zstd"),
        ("one label\nanother label\n".encode("utf-16-le"), "UTF-16"),
        (b"\x00" * 100, "only NUL bytes"),
    ],
    ids=["zip", "bzip2", "xz", "zstd", "utf-16", "zeros"],
)
def test_other_binary_formats_are_named(tmp_path: Path, data: bytes, what: str) -> None:
    path = tmp_path / "labels.txt"
    path.write_bytes(data)
    refused(run_here("dedup", "-q", path), "labels.txt", what)


# ---------------------------------------------------------------------------------------------------
# 9. Papercuts of the first hour
# ---------------------------------------------------------------------------------------------------
def test_a_misspelt_option_names_the_subcommand_and_the_closest_option(tmp_path: Path) -> None:
    done = run_here("dedup", "x.txt", "--thresold", "0.9")
    assert done.status == 2
    last = done.err.strip().splitlines()[-1]
    assert last.startswith("memdedup dedup: error:"), done.err
    assert "--thresold" in last and "did you mean --threshold?" in last
    assert done.err.startswith("usage: memdedup dedup")
    done = run_here("tune", "--gaurds=value")
    assert "did you mean --guards?" in done.err.strip().splitlines()[-1]
    done = run_here("dedpu", "x.txt")
    assert "did you mean 'dedup'?" in done.err.strip().splitlines()[-1]
    done = run_here("dedup", "x.txt", "--mode", "joint")
    assert "did you mean 'join'?" in done.err.strip().splitlines()[-1]


def test_tune_on_an_empty_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("\n\n")
    refused(run_here("tune", tmp_path / "empty.jsonl"), "empty.jsonl", "no labelled pairs")
    refused(run_here("tune", "-", "--json", input=b""), "<stdin>", "no labelled pairs")


def test_dedup_takes_prefix_none(tmp_path: Path) -> None:
    labels = ["User prefers dark mode", "Prefers dark mode", "Lives in Lisbon"]
    path = tmp_path / "l.txt"
    path.write_text("\n".join(labels) + "\n")
    out = tmp_path / "o.jsonl"
    done = run_here("dedup", path, "--prefix", "none", "--out", out)
    assert done.status == 0, done
    assert "prefix none" in done.out
    expected = batch.replay(labels, prefix="none")
    assert [r["canonical"] for r in jsonl(out)] == expected.canonical.tolist() == [0, 0, 2]
    refused(run_here("dedup", path, "--mode", "join", "--prefix", "none"), "--prefix")


def test_the_bundled_example_shows_what_the_index_gate_catches(tmp_path: Path) -> None:
    example = ROOT / "examples" / "turns.jsonl"
    runs = {}
    for gate in ("prefix", "index"):
        done = run_here("ingest", example, "--db", tmp_path / f"{gate}.sqlite", "--gate", gate, "--json")
        assert done.status == 0, done
        runs[gate] = json.loads(done.out)
    prefix_texts = {r["text"] for r in runs["prefix"]["written"]}
    index_texts = {r["text"] for r in runs["index"]["written"]}
    caught = prefix_texts - index_texts  # written as new behind the prefix gate, collapsed by the index
    assert caught, (prefix_texts, index_texts)
    assert not index_texts - prefix_texts


def test_make_build_installs_what_it_builds_with() -> None:
    """``make build`` installs without build isolation, so it must install the build backend first."""
    import tomllib

    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    done = subprocess.run(
        ["make", "-n", "build", f"PYTHON={sys.executable}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    lines = done.stdout.splitlines()
    build = next(k for k, line in enumerate(lines) if "--no-build-isolation" in line)
    installs = " ".join(lines[:build])
    for requirement in requires:
        assert requirement in installs, (requirement, lines)


# ---------------------------------------------------------------------------------------------------
# The library reads as the command does
# ---------------------------------------------------------------------------------------------------
def test_read_columns_takes_the_same_options(tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    path.write_text('label,scope\n"a\nb","1"\n')
    labels, columns, _ = tables.read_columns(path, "label", ["scope"], multiline=True, json_columns=["scope"])
    assert labels == ["a\nb"] and columns["scope"] == [1]
    with pytest.raises(InvalidInputError, match=r"in\.csv:2:"):
        tables.read_columns(path, "label", ["scope"])


def test_the_bundled_store_parquet_holds_the_bundled_jsonl() -> None:
    """docs/dask.md runs on examples/store.parquet; examples/store.jsonl is the same rows, readable."""
    rows = [json.loads(line) for line in (ROOT / "examples" / "store.jsonl").read_text().splitlines()]
    table = pq.read_table(ROOT / "examples" / "store.parquet")
    assert table.schema.field("seq").type == pa.int64()
    assert table.to_pylist() == rows


@pytest.mark.slow
def test_the_dask_engine_names_the_link_of_every_components_row(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    from cli_support import run

    path = tmp_path / "chain.txt"
    path.write_text("\n".join(CHAIN) + "\n", encoding="utf-8")
    here, there = tmp_path / "here.jsonl", tmp_path / "there.jsonl"
    args = ["dedup", "-q", path, "--mode", "join", "--cluster", "components"]
    assert run_here(*args, "--out", here).status == 0
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as cluster:
        run(*args, "--engine", "dask", "--scheduler", cluster.scheduler_address, "--out", there).ok()
    assert jsonl(there) == jsonl(here)
    assert [r["via"] for r in jsonl(there)] == [None, 0, 1, 2, None]
