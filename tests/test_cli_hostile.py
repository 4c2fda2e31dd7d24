"""A hostile newcomer's files through the real ``memdedup`` command (issue 25): empty inputs and stdin,
directories, other encodings, byte-order marks, odd line ends, NUL bytes, JSON lines that are not
objects or hold a label of another type, duplicate keys, escaped lone surrogates, a 10 MB line, broken
CSV headers and rows, Parquet labels that are not text, truncated and fake compressed files, output
names of every case, plot names, ``ingest`` of the same shapes, a closed pipe and an unexpected error.

Each case ends one of two ways: exit 0 with exactly the rows the library gives for the same labels, or
exit 2 with one line naming the file (and the line and byte where there is one), no traceback and no
output file left behind."""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cli_support import command, env, run
from memdedup import batch
from profiles import sampled

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

OUT_FORMATS = ["jsonl", "csv", "parquet"]


def outs(keep: str) -> list[object]:
    """Every output format; the default profile keeps one per test, in rotation over the tests, so each
    format is still written there (tests/profiles.py)."""
    return sampled(OUT_FORMATS, [keep])


# ---------------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------------
def read_output(path: Path) -> list[dict[str, Any]]:
    name = path.name.lower()
    if name.endswith(".parquet"):
        rows: list[dict[str, Any]] = pq.read_table(path).to_pylist()
        return rows
    data = path.read_bytes()
    if name.endswith(".gz"):
        data = gzip.decompress(data)
    text = data.decode("utf-8")
    if ".csv" in name:
        csv.field_size_limit(1 << 30)  # the 10 MB label
        return list(csv.DictReader(io.StringIO(text, newline="")))
    return [json.loads(line) for line in text.split("\n") if line]


def assert_rows(path: Path, labels: list[str]) -> None:
    """The output holds exactly ``labels``, decided as the library decides them."""
    rows = read_output(path)
    assert [r["label"] for r in rows] == labels
    expected = batch.replay(labels)
    assert [int(r["canonical"]) for r in rows] == expected.canonical.tolist()
    assert [r["reason"] for r in rows] == expected.reason


def dedup_ok(tmp_path: Path, name: str, data: bytes, out: str, labels: list[str], *extra: str) -> None:
    source = tmp_path / name
    source.write_bytes(data)
    target = tmp_path / f"out.{out}"
    run("dedup", "-q", source, "--out", target, *extra).ok()
    assert_rows(target, labels)


def refused(result: Any, *fragments: str, status: int = 2) -> str:
    """Exit ``status`` with one line on stderr holding every fragment, and no traceback."""
    assert result.status == status, result
    err = result.err
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def no_output_left(folder: Path, target: Path) -> None:
    assert not target.exists()
    assert not [p for p in folder.iterdir() if p.name.endswith(".part")]


def dedup_refused(tmp_path: Path, name: str, data: bytes, out: str, *fragments: str) -> str:
    source = tmp_path / name
    source.write_bytes(data)
    target = tmp_path / f"out.{out}"
    target.unlink(missing_ok=True)  # an earlier case's output
    line = refused(run("dedup", "-q", source, "--out", target), name, *fragments)
    no_output_left(tmp_path, target)
    return line


# ---------------------------------------------------------------------------------------------------
# empty inputs, stdin, directories, missing files
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("out", outs("jsonl"))
@pytest.mark.parametrize("name", ["empty.txt", "empty.jsonl", "empty.txt.gz"])
def test_empty_files_give_empty_outputs(tmp_path: Path, name: str, out: str) -> None:
    data = gzip.compress(b"") if name.endswith(".gz") else b""
    dedup_ok(tmp_path, name, data, out, [])


@pytest.mark.parametrize("out", outs("csv"))
def test_an_empty_csv_is_refused_as_having_no_header(tmp_path: Path, out: str) -> None:
    dedup_refused(tmp_path, "empty.csv", b"", out, "no header")


@pytest.mark.parametrize("fmt", ["text", "jsonl", "csv"])
def test_empty_stdin_for_dedup(tmp_path: Path, fmt: str) -> None:
    target = tmp_path / "out.jsonl"
    result = run("dedup", "-q", "-", "--input-format", fmt, "--out", target, input=b"")
    if fmt == "csv":
        refused(result, "<stdin>", "no header")
        no_output_left(tmp_path, target)
    else:
        result.ok()
        assert read_output(target) == []


def test_empty_stdin_for_ingest_and_tune(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    result = run("ingest", "-q", "--json", "--db", db, "-", input=b"").ok()
    assert json.loads(result.out)["counts"]["turns"] == 0
    # No pairs, nothing to measure (issue 38): refused, not a table of dashes.
    refused(run("tune", "-q", "--json", "-", input=b""), "<stdin>", "no labelled pairs")


@pytest.mark.parametrize("command_", ["dedup", "tune", "ingest"])
def test_a_directory_or_a_missing_path_as_input(tmp_path: Path, command_: str) -> None:
    extra = ["--db", str(tmp_path / "m.db")] if command_ == "ingest" else []
    (tmp_path / "folder").mkdir()
    refused(run(command_, "-q", tmp_path / "folder", *extra), "folder", "is a directory")
    refused(run(command_, "-q", tmp_path / "absent.jsonl", *extra), "absent.jsonl", "No such file")
    assert not (tmp_path / "m.db").exists()


# ---------------------------------------------------------------------------------------------------
# encodings, byte-order marks, line ends, NUL
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("out", outs("parquet"))
def test_utf16_and_latin1_are_refused_with_line_and_byte(tmp_path: Path, out: str) -> None:
    dedup_refused(
        tmp_path, "u16.txt", "café one\nsecond\n".encode("utf-16"), out, "u16.txt:1:", "byte 0 (0xff)"
    )
    dedup_refused(tmp_path, "l1.txt", "first\ncafé\n".encode("latin-1"), out, "l1.txt:2:", "byte 9 (0xe9)")
    dedup_refused(
        tmp_path, "l1.jsonl", '{"label": "caf\xe9"}\n'.encode("latin-1"), out, "l1.jsonl:1:", "byte 14"
    )
    dedup_refused(tmp_path, "l1.csv", "label\ncafé\n".encode("latin-1"), out, "l1.csv:2:", "byte 9")


@pytest.mark.parametrize("command_", ["tune", "ingest"])
def test_utf16_and_latin1_are_refused_by_every_command(tmp_path: Path, command_: str) -> None:
    db = tmp_path / "m.db"
    extra = ["--db", str(db)] if command_ == "ingest" else []
    for name, data, where in [
        ("u16.jsonl", '{"a": 1}\n'.encode("utf-16"), "u16.jsonl:1: not UTF-8: byte 0"),
        ("l1.jsonl", b'{"a": 1}\n{"a": "caf\xe9"}\n', "l1.jsonl:2: not UTF-8: byte 19"),
    ]:
        (tmp_path / name).write_bytes(data)
        refused(run(command_, "-q", tmp_path / name, *extra), where)
        assert not db.exists()


@pytest.mark.parametrize("out", outs("jsonl"))
def test_a_utf8_bom_is_dropped_on_every_text_format(tmp_path: Path, out: str) -> None:
    bom = b"\xef\xbb\xbf"
    labels = ["hello world and more", "hello world and more"]
    dedup_ok(tmp_path, "b.txt", bom + b"hello world and more\nhello world and more\n", out, labels)
    dedup_ok(
        tmp_path, "b.jsonl", bom + b'{"label": "hello world and more"}\n{"label": "hello world and more"}\n',
        out, labels,
    )  # fmt: skip
    dedup_ok(tmp_path, "b.csv", bom + b"label\nhello world and more\nhello world and more\n", out, labels)


@pytest.mark.parametrize("out", outs("csv"))
def test_crlf_lone_cr_and_nul(tmp_path: Path, out: str) -> None:
    dedup_ok(
        tmp_path,
        "crlf.txt",
        b"one label\r\ntwo label\r\none label\r\n",
        out,
        ["one label", "two label", "one label"],
    )
    dedup_ok(tmp_path, "cr.txt", b"one\rtwo\rone\r", out, ["one", "two", "one"])
    dedup_ok(tmp_path, "crlf.jsonl", b'{"label": "a\\r\\nb"}\r\n{"label": "c"}\r\n', out, ["a\r\nb", "c"])
    # A quoted line break needs --multiline (issue 38: a stray quote would swallow rows at exit 0).
    dedup_ok(tmp_path, "crlf.csv", b'label\r\nx y\r\n"p\r\nq"\r\n', out, ["x y", "p\r\nq"], "--multiline")
    dedup_refused(tmp_path, "crlf2.csv", b'label\r\nx y\r\n"p\r\nq"\r\n', out, "crlf2.csv:3:", "--multiline")
    dedup_ok(tmp_path, "nul.txt", b"a\x00b\nc\n", out, ["a\x00b", "c"])
    dedup_ok(tmp_path, "nul.jsonl", b'{"label": "a\\u0000b"}\n', out, ["a\x00b"])


@pytest.mark.parametrize("out", outs("jsonl"))
def test_a_10mb_line(tmp_path: Path, out: str) -> None:
    long = "x" * 10_000_000
    dedup_ok(tmp_path, "long.txt", (long + "\nshort\n").encode(), out, [long, "short"])
    dedup_ok(tmp_path, "long.jsonl", json.dumps({"label": long}).encode() + b"\n", out, [long])
    dedup_ok(tmp_path, "long.csv", f"label\n{long}\n".encode(), out, [long])


# ---------------------------------------------------------------------------------------------------
# JSON lines
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("out", outs("jsonl"))
@pytest.mark.parametrize(
    ("line", "what"),
    [(b"[1, 2]", "not list"), (b"3", "not int"), (b"null", "not NoneType"), (b'"x"', "not str")],
)
def test_json_lines_that_are_not_objects(tmp_path: Path, out: str, line: bytes, what: str) -> None:
    dedup_refused(
        tmp_path, "v.jsonl", b'{"label": "fine"}\n' + line + b"\n", out, "v.jsonl:2:", "JSON object", what
    )


@pytest.mark.parametrize("out", outs("csv"))
@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (b"5", "number"),
        (b"1.5e300", "number"),
        (b"[1, 2]", "array"),
        (b'{"a": 1}', "object"),
        (b"true", "boolean"),
    ],
)
def test_a_label_of_another_json_type_is_refused(tmp_path: Path, out: str, value: bytes, kind: str) -> None:
    data = b'{"label": "fine"}\n{"label": ' + value + b"}\n"
    dedup_refused(tmp_path, "t.jsonl", data, out, "t.jsonl:2:", "'label'", kind, "string")


@pytest.mark.parametrize("out", outs("parquet"))
def test_a_null_label_is_the_empty_label(tmp_path: Path, out: str) -> None:
    dedup_ok(tmp_path, "n.jsonl", b'{"label": null}\n{"label": "x"}\n', out, ["", "x"])
    # NaN is not JSON, but Python's json writes it for a missing float (pandas' to_json of a NaN label).
    dedup_ok(tmp_path, "nan.jsonl", b'{"label": NaN}\n{"label": "x"}\n', out, ["", "x"])


@pytest.mark.parametrize("out", outs("jsonl"))
def test_duplicate_keys_are_refused(tmp_path: Path, out: str) -> None:
    dedup_refused(
        tmp_path, "d.jsonl", b'{"label": "a", "label": "b"}\n', out, "d.jsonl:1:", "duplicate", "'label'"
    )
    # Written with an escape, the key is the same key.
    dedup_refused(
        tmp_path, "e.jsonl", b'{"label": "a", "\\u006cabel": "b"}\n', out, "e.jsonl:1:", "duplicate"
    )
    dedup_refused(
        tmp_path, "s.jsonl", b'{"label": "a", "scope": 1, "scope": 2}\n', out, "s.jsonl:1:", "'scope'"
    )
    # Keys memdedup does not read may repeat: their value is never used.
    dedup_ok(tmp_path, "o.jsonl", b'{"label": "a", "note": 1, "note": 2}\n', out, ["a"])


@pytest.mark.parametrize("out", outs("csv"))
def test_escaped_lone_surrogates_are_refused_not_crashed_on(tmp_path: Path, out: str) -> None:
    for value in (b'"x\\ud800y"', b'"\\udc00"', b'"a\\uDBFF"'):
        data = b'{"label": "ok"}\n{"label": ' + value + b"}\n"
        dedup_refused(tmp_path, "s.jsonl", data, out, "s.jsonl:2:", "surrogate")
    dedup_refused(
        tmp_path, "c.jsonl", b'{"label": "ok", "scope": {"k": "\\ud800"}}\n', out, "c.jsonl:1:", "surrogate"
    )
    # A pair is one character (U+1F600), and fine.
    dedup_ok(tmp_path, "p.jsonl", b'{"label": "smile \\ud83d\\ude00"}\n', out, ["smile \U0001f600"])


def test_lone_surrogates_in_ingest_and_tune_never_crash(tmp_path: Path) -> None:
    turns = tmp_path / "t.jsonl"
    # A lone surrogate escaped in the turn (a message) and in the model's output (a label).
    inner = '{"ops": [{"op": "add", "label": "x\\ud800 label", "importance": 5}]}'
    turns.write_bytes(
        b'{"scope": [{"kind": "user", "id": "u1"}], "turn": 1, '
        b'"messages": [{"role": "user", "content": "hi \\ud800"}], "output": '
        + json.dumps(inner).encode()
        + b"}\n"
    )
    result = run("ingest", "-q", "--db", tmp_path / "m.db", turns)
    assert result.status in (0, 1, 2), result
    assert "Traceback" not in result.err
    pairs = tmp_path / "p.jsonl"
    for line in (
        b'{"stored": "x\\ud800 abc", "incoming": "x abc", "same_fact": true}',
        b'{"stored": "x abc", "incoming": "x abc", "same_fact": true, "class": "c\\udfff"}',
    ):
        pairs.write_bytes(b'{"stored": "a", "incoming": "b", "same_fact": false}\n' + line + b"\n")
        for extra in ([], ["--json"]):
            refused(run("tune", "-q", *extra, pairs), "p.jsonl:2:", "surrogate")


def test_tune_refuses_duplicate_keys_and_deep_nesting(tmp_path: Path) -> None:
    pairs = tmp_path / "p.jsonl"
    pairs.write_bytes(b'{"stored": "a", "incoming": "b", "same_fact": true, "same_fact": false}\n')
    refused(run("tune", "-q", pairs), "p.jsonl:1:", "duplicate key 'same_fact'")
    pairs.write_bytes(b"[" * 100_000 + b"\n")
    refused(run("tune", "-q", pairs), "p.jsonl:1:", "nested too deeply")
    refused(run("dedup", "-q", pairs, "--input-format", "jsonl"), "p.jsonl:1:", "nested too deeply")


# ---------------------------------------------------------------------------------------------------
# CSV
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("out", outs("csv"))
def test_csv_headers_and_rows(tmp_path: Path, out: str) -> None:
    dedup_refused(tmp_path, "n.csv", b"name\nx\n", out, "n.csv", "no 'label' column")
    dedup_refused(tmp_path, "d.csv", b"label,label\na,b\n", out, "d.csv:1:", "duplicate", "'label'")
    dedup_refused(tmp_path, "s.csv", b"label,scope,scope\na,b,c\n", out, "s.csv:1:", "'scope'")
    dedup_refused(tmp_path, "r.csv", b"label,scope\na,s\nb,c,d\n", out, "r.csv:3:", "3 fields", "2")
    # A short row's absent cells are missing, as the module says; quoted newlines stay in the label
    # with --multiline, and are refused without it, naming the line where the field opened.
    dedup_ok(tmp_path, "short.csv", b"label,scope\na b c\n", out, ["a b c"])
    dedup_ok(tmp_path, "q.csv", b'label\n"a\nb"\n"a\nb"\n', out, ["a\nb", "a\nb"], "--multiline")
    dedup_refused(tmp_path, "q2.csv", b'label\nx\n"a\nb"\n', out, "q2.csv:3:", "--multiline")
    # Columns memdedup does not read may repeat.
    dedup_ok(tmp_path, "o.csv", b"label,x,x\nfirst,1,2\n", out, ["first"])


# ---------------------------------------------------------------------------------------------------
# Parquet
# ---------------------------------------------------------------------------------------------------
def _parquet(path: Path, **columns: Any) -> bytes:
    pq.write_table(pa.table(columns), path)
    return path.read_bytes()


@pytest.mark.parametrize("out", outs("jsonl"))
def test_parquet_labels_that_are_not_text_are_refused(tmp_path: Path, out: str) -> None:
    for name, column, kind in [
        ("ints.parquet", pa.array([1, 2, 2]), "int64"),
        ("lists.parquet", pa.array([[1], [2]]), "list"),
        ("bin.parquet", pa.array([b"ab", b"ab"]), "binary"),
        ("bools.parquet", pa.array([True]), "bool"),
    ]:
        data = _parquet(tmp_path / "src.parquet", label=column)
        dedup_refused(tmp_path, name, data, out, "'label'", kind, "string")


@pytest.mark.parametrize("out", outs("parquet"))
def test_parquet_zero_rows_nulls_dictionaries_and_other_names(tmp_path: Path, out: str) -> None:
    dedup_ok(
        tmp_path, "z.parquet", _parquet(tmp_path / "a.parquet", label=pa.array([], pa.string())), out, []
    )
    dedup_ok(
        tmp_path, "n.parquet", _parquet(tmp_path / "a.parquet", label=pa.array([None, None])), out, ["", ""]
    )
    labels = ["same label here", "same label here"]
    dictionary = pa.array(labels).dictionary_encode()
    dedup_ok(tmp_path, "d.parquet", _parquet(tmp_path / "a.parquet", label=dictionary), out, labels)
    dedup_ok(
        tmp_path,
        "l.parquet",
        _parquet(tmp_path / "a.parquet", label=pa.array(labels, pa.large_string())),
        out,
        labels,
    )
    data = _parquet(tmp_path / "a.parquet", text=pa.array(labels))
    dedup_refused(tmp_path, "t.parquet", data, out, "no 'label' column", "text")
    dedup_ok(tmp_path, "t2.parquet", data, out, labels, "--label-column", "text")


# ---------------------------------------------------------------------------------------------------
# truncated and fake files
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("out", outs("csv"))
def test_truncated_and_fake_compressed_files(tmp_path: Path, out: str) -> None:
    whole = gzip.compress(b"hello there\n" * 2000)
    dedup_refused(tmp_path, "t.txt.gz", whole[: len(whole) // 2], out, "truncated")
    dedup_refused(tmp_path, "h.txt.gz", whole[:5], out, "t.txt.gz"[:0] or "h.txt.gz")
    parquet = _parquet(tmp_path / "a.parquet", label=pa.array(["a", "b"]))
    dedup_refused(tmp_path, "t.parquet", parquet[: len(parquet) // 2], out, "Parquet")
    dedup_refused(tmp_path, "t2.parquet", parquet[:-1], out, "Parquet")
    dedup_refused(tmp_path, "e.parquet", b"", out, "Parquet")
    # A .gz that is not gzip is read by its bytes (gzip is recognised by its magic bytes, not its name).
    dedup_ok(tmp_path, "plain.txt.gz", b"plain text\n", out, ["plain text"])


@pytest.mark.parametrize("command_", ["tune", "ingest"])
def test_truncated_gzip_for_tune_and_ingest(tmp_path: Path, command_: str) -> None:
    whole = gzip.compress(b'{"stored": "a", "incoming": "a", "same_fact": true}\n' * 2000)
    (tmp_path / "t.jsonl.gz").write_bytes(whole[: len(whole) // 2])
    db = tmp_path / "m.db"
    extra = ["--db", str(db)] if command_ == "ingest" else []
    refused(run(command_, "-q", tmp_path / "t.jsonl.gz", *extra), "t.jsonl.gz", "truncated")
    assert not db.exists()


# ---------------------------------------------------------------------------------------------------
# --out names
# ---------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_out_names(tmp_path: Path) -> None:
    source = tmp_path / "in.txt"
    source.write_text("a label\na label\n")
    for name in ("out.txt", "out.json", "out", "out.jsonl.bz2", "out.parquet.gz"):
        refused(run("dedup", "-q", source, "--out", tmp_path / name), name)
        no_output_left(tmp_path, tmp_path / name)
    refused(run("dedup", "-q", source, "--out", tmp_path / "missing" / "o.jsonl"), "no such directory")
    (tmp_path / "d.jsonl").mkdir()
    refused(run("dedup", "-q", source, "--out", tmp_path / "d.jsonl"), "d.jsonl", "is a directory")
    for name in ("OUT.JSONL", "Out.Csv", "OUT.CSV.GZ", "out.PARQUET", "OUT.JSONL.GZ"):
        run("dedup", "-q", source, "--out", tmp_path / name).ok()
        assert_rows(tmp_path / name, ["a label", "a label"])


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory")
def test_out_in_a_read_only_directory(tmp_path: Path) -> None:
    source = tmp_path / "in.txt"
    source.write_text("a label\n")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        refused(run("dedup", "-q", source, "--out", locked / "o.jsonl"), "o.jsonl", "not writable")
    finally:
        locked.chmod(0o755)


def test_uppercase_input_extensions(tmp_path: Path) -> None:
    (tmp_path / "IN.JSONL").write_bytes(b'{"label": "x y"}\n')
    run("dedup", "-q", tmp_path / "IN.JSONL", "--out", tmp_path / "o.jsonl").ok()
    assert_rows(tmp_path / "o.jsonl", ["x y"])
    (tmp_path / "IN.CSV.GZ").write_bytes(gzip.compress(b"label\nx y\n"))
    run("dedup", "-q", tmp_path / "IN.CSV.GZ", "--out", tmp_path / "o.csv").ok()
    assert_rows(tmp_path / "o.csv", ["x y"])


# ---------------------------------------------------------------------------------------------------
# tune --plot names
# ---------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_plot_names(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    for name in ("p.txt", "plot", "p.jsonl"):
        refused(run("tune", "-q", "--plot", tmp_path / name), name, "--plot")
        assert not (tmp_path / name).exists()
    for name, magic in (("p.PNG", b"\x89PNG"), ("p.svg", b"<?xml"), ("p.pdf", b"%PDF")):
        run("tune", "-q", "--plot", tmp_path / name).ok()
        assert (tmp_path / name).read_bytes().startswith(magic)
    refused(run("tune", "-q", "--plot", tmp_path / "missing" / "p.png"), "p.png")


# ---------------------------------------------------------------------------------------------------
# ingest of the same shapes
# ---------------------------------------------------------------------------------------------------
def _turn(label: str, turn: int = 1) -> bytes:
    output = json.dumps({"ops": [{"op": "add", "label": label, "importance": 5}]})
    row = {"scope": [{"kind": "user", "id": "u1"}], "turn": turn, "messages": [], "output": output}
    return json.dumps(row).encode() + b"\n"


def test_ingest_bom_crlf_and_blank_lines(tmp_path: Path) -> None:
    data = (
        b"\xef\xbb\xbf"
        + _turn("Prefers dark mode").replace(b"\n", b"\r\n")
        + b"\r\n"
        + _turn("Uses vim daily", 2)
    )
    (tmp_path / "t.jsonl").write_bytes(data)
    result = run("ingest", "-q", "--json", "--db", tmp_path / "m.db", tmp_path / "t.jsonl").ok()
    report = json.loads(result.out)
    assert report["counts"]["turns"] == 2
    assert report["bad_lines"] == []


def test_ingest_lines_that_are_not_turns_are_reported_per_line(tmp_path: Path) -> None:
    data = _turn("Prefers dark mode") + b"[1, 2]\n3\nnull\n" + _turn("Uses vim daily", 2)
    (tmp_path / "t.jsonl").write_bytes(data)
    result = run("ingest", "-q", "--json", "--db", tmp_path / "m.db", tmp_path / "t.jsonl")
    assert result.status == 1, result
    report = json.loads(result.out)
    assert [p["line"] for p in report["bad_lines"]] == [2, 3, 4]
    assert report["counts"]["turns"] == 2


# ---------------------------------------------------------------------------------------------------
# pipes and the last resort
# ---------------------------------------------------------------------------------------------------
def test_a_closed_stdout_pipe_exits_quietly(tmp_path: Path) -> None:
    source = tmp_path / "in.txt"
    source.write_bytes(b"".join(b"label number %d of many\n" % k for k in range(200_000)))
    child = subprocess.Popen(
        [*command(), "dedup", "-q", str(source), "--out", "-"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(),
    )
    assert child.stdout is not None and child.stderr is not None
    first = child.stdout.readline()
    assert json.loads(first)["index"] == 0
    child.stdout.close()  # `| head -1`
    err = child.stderr.read()
    status = child.wait(timeout=600)
    assert err == b""
    assert status in (0, 141, -signal.SIGPIPE)


def test_an_unexpected_error_is_one_line_without_a_traceback(tmp_path: Path) -> None:
    # A real misconfiguration matplotlib itself refuses with a ValueError: a backend that does not exist.
    pytest.importorskip("matplotlib")
    plot = tmp_path / "p.png"
    args = [*command(), "tune", "-q", "--plot", str(plot)]
    done = subprocess.run(args, capture_output=True, env=env(MPLBACKEND="no-such-backend"), timeout=600)
    err = done.stderr.decode()
    assert done.returncode == 1, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("memdedup tune: unexpected error (ValueError): ")
    assert "no-such-backend" in lines[0]
    assert "MEMDEDUP_DEBUG=1" in lines[0]
    assert not plot.exists()
    # MEMDEDUP_DEBUG=1 shows the traceback as well.
    debug = subprocess.run(
        args, capture_output=True, env=env(MPLBACKEND="no-such-backend", MEMDEDUP_DEBUG="1"), timeout=600
    )
    assert debug.returncode == 1
    assert "Traceback (most recent call last)" in debug.stderr.decode()


def test_an_unexpected_error_message_is_scrubbed(tmp_path: Path) -> None:
    # The same misconfiguration, its message quoting a credential: it never reaches the terminal.
    pytest.importorskip("matplotlib")
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    args = [*command(), "tune", "-q", "--plot", str(tmp_path / "p.png")]
    done = subprocess.run(args, capture_output=True, env=env(MPLBACKEND=f"x{secret}"), timeout=600)
    err = done.stderr.decode()
    assert done.returncode == 1, err
    assert secret not in err and secret[:12] not in err
    assert "Traceback" not in err


# ---------------------------------------------------------------------------------------------------
# numbers that would silently do nothing
# ---------------------------------------------------------------------------------------------------
def usage_error(result: Any, *fragments: str) -> None:
    """argparse's refusal: exit 2, the usage, then one line naming the option; no traceback."""
    assert result.status == 2, result
    assert "Traceback" not in result.err
    last = result.err.strip().splitlines()[-1]
    for fragment in fragments:
        assert fragment in last, (fragment, last)


@pytest.mark.slow
def test_non_finite_and_negative_numbers_are_refused(tmp_path: Path) -> None:
    turns = tmp_path / "t.jsonl"
    turns.write_bytes(_turn("Prefers dark mode"))
    db = tmp_path / "m.db"
    for value in ("nan", "inf", "-inf"):
        usage_error(
            run("ingest", "-q", "--db", db, f"--min-importance={value}", turns), "--min-importance", "finite"
        )
        assert not db.exists()
        usage_error(run("dedup", "-q", turns, f"--scheduler-timeout={value}"), "--scheduler-timeout")
    usage_error(run("tune", "-q", "--show", "-1"), "--show", "0 or more")


def test_parquet_to_stdout(tmp_path: Path) -> None:
    source = tmp_path / "in.txt"
    source.write_text("same label here\nsame label here\n")
    result = run("dedup", "-q", source, "--out", "-", "--output-format", "parquet").ok()
    (tmp_path / "o.parquet").write_bytes(result.out_bytes)
    assert_rows(tmp_path / "o.parquet", ["same label here", "same label here"])
