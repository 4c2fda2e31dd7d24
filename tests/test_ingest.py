"""The write pipeline and ``memdedup ingest``: the example end to end, idempotent re-runs, bad input,
two processes at once, and a run killed mid-ingest."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

import cli_support
import pytest
from memdedup.cli import main
from memdedup.errors import InvalidInputError
from memdedup.ingest import IngestReport, ingest_file, ingest_turns
from memdedup.scope import Scope
from memdedup.store import SQLiteGraphStore

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "turns.jsonl"
DANA = [{"kind": "org", "id": "acme"}, {"kind": "user", "id": "dana"}]
ORG = [{"kind": "org", "id": "acme"}]
DANA_PATH = Scope.parse(DANA).scope_path
ORG_PATH = Scope.parse(ORG).scope_path

# Every secret the example's model outputs carry; none may reach the database.
EXAMPLE_SECRETS = [
    "Sup3rS3cret!",
    "ghp_Zt9xQw3Lm8Rk2Vb7Nc4Hj6Pd1Fs5Gy0Ae2Kx",
    "AKIAIOSFODNN7EXAMPLE",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c",
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
]


def op(
    label: str, category: str = "fact", layer: str = "semantic", importance: float = 6, **props: Any
) -> dict:
    properties = {**props, "memory_category": category, "subject": "user"}
    return {
        "action": "upsert_node",
        "layer": layer,
        "label": label,
        "properties": properties,
        "importance": importance,
    }


def turn(scope: Any, number: int, *ops: Any, raw: str | None = None) -> dict:
    output = raw if raw is not None else "```json\n" + json.dumps({"ops": list(ops)}) + "\n```"
    return {"scope": scope, "turn": number, "messages": [], "output": output, "provider": "openai"}


def write_jsonl(path: Path, turns: list[dict]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    return path


def synthetic_turns(scope: Any, count: int, who: str) -> list[dict]:
    """Distinct facts, each restated (trailing period) two turns later, an event and an edge per turn."""

    def fact(n: int) -> str:
        digest = hashlib.sha256(f"{who}:{n}".encode()).hexdigest()
        return f"{who} keeps note {digest[:10]} for service {digest[10:18]}"

    turns = []
    for n in range(1, count + 1):
        ops = [op(fact(n)), op(f"{who} ran deploy {n} of the pipeline", "event", layer="episodic")]
        if n > 2:
            ops.append(op(fact(n - 2) + "."))
        ops.append({"action": "create_edge", "layer": "semantic", "label": f"{who} -> service {n}"})
        turns.append(turn(scope, n, *ops))
    return turns


def snapshot(db: Path) -> dict[str, list[tuple]]:
    """The database's content, without timestamps (which differ between runs)."""
    with SQLiteGraphStore(db) as store:
        nodes = [
            (
                n.scope_path,
                n.id,
                n.layer,
                n.label,
                n.mentions,
                n.importance,
                n.salience,
                n.origin,
                json.dumps(n.properties, sort_keys=True),
                n.retracted,
            )
            for n in store.all_nodes()
        ]
        ledger = [
            (
                e.scope_path,
                e.record_id,
                e.node_id,
                e.outcome,
                e.turn,
                e.layer,
                e.text,
                e.match_kind,
                e.match_score,
            )
            for e in store.ledger()
        ]
    return {"nodes": nodes, "ledger": ledger}


def subprocess_env() -> dict[str, str]:
    return cli_support.env()


def outcome_of(report: IngestReport, line: int, op_id: str) -> Any:
    (record,) = [r for r in report.records if r.line == line and r.op == op_id]
    return record


# ---------------------------------------------------------------------------------------------------
# The bundled example, end to end
# ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def example_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[IngestReport, Path]:
    db = tmp_path_factory.mktemp("example") / "memory.sqlite"
    return ingest_file(EXAMPLE, db), db


def test_every_op_of_the_example_is_accounted_for(example_run: tuple[IngestReport, Path]) -> None:
    report, db = example_run
    counts = report.counts()
    assert counts["lines"] == counts["turns"] == len(EXAMPLE.read_text().splitlines())
    assert counts["bad_lines"] == 0 and counts["already_ingested"] == 0
    assert counts["written"] + counts["restated"] + counts["updated"] + counts["dropped"] == counts["ops"]
    with SQLiteGraphStore(db) as store:
        # Memories plus one episodic transcript row per user/assistant message.
        assert store.count_nodes() == counts["written"] + counts["transcript_rows"]
        assert counts["transcript_rows"] > 0
        assert len(store.ledger()) == counts["written"] + counts["restated"] + counts["updated"]
        for record in report.restated + report.updated:
            assert store.ledger_entry(record.scope_path, record.record_id).node_id == record.node_id


def test_the_example_shows_each_refusal_and_form(example_run: tuple[IngestReport, Path]) -> None:
    report, _ = example_run
    codes = {drop.code for drop in report.dropped}
    expected = {"non_node_action", "unknown_layer", "below_min_importance", "noop", "classification_missing"}
    expected |= {"classification_invalid", "non_object_op", "missing_action"}
    assert expected <= codes
    forms = set(report.forms)
    assert {
        "fenced/ops",
        "tagged/ops",
        "embedded/ops",
        "bare/operations",
        "bare/single_op",
        "salvaged/ops",
    } <= forms
    assert [d.form for d in report.degraded] == ["salvaged/ops", "none"]


def test_restatements_and_updates_with_their_reason(example_run: tuple[IngestReport, Path]) -> None:
    report, db = example_run
    trailing_period = outcome_of(report, 4, "op[0]")
    assert trailing_period.outcome == "restated"
    assert (trailing_period.match_kind, trailing_period.match_score) == ("ratio", 1.0)
    assert trailing_period.stored_text == "Dana prefers dark mode in every editor"
    extra_detail = outcome_of(report, 4, "op[2]")
    assert extra_detail.outcome == "updated" and extra_detail.match_kind == "containment"
    assert extra_detail.match_score < 0.85 and extra_detail.why().startswith("containment (ratio 0.")
    assert extra_detail.stored_text == "Run pytest and ruff before every commit"
    with SQLiteGraphStore(db) as store:
        canonical = store.get_node(Scope.parse(DANA), trailing_period.node_id)
        assert canonical.mentions == 2 and canonical.label == "Dana prefers dark mode in every editor"
        # The update: the fuller text is current, the earlier one a revision.
        updated = store.get_node(Scope.parse(DANA), extra_detail.node_id)
        assert updated.label == extra_detail.text and updated.mentions == 2
        history = store.history(Scope.parse(DANA), extra_detail.node_id)
        assert [(h.kind, h.text) for h in history] == [
            ("updated", "Run pytest and ruff before every commit"),
            ("current", extra_detail.text),
        ]
        assert history[0].reason == extra_detail.why() and history[0].turn == extra_detail.turn


def test_an_ancestor_s_memory_is_never_collapsed_into(example_run: tuple[IngestReport, Path]) -> None:
    report, db = example_run
    org_fact = outcome_of(report, 1, "op[0]")
    restated_by_dana = outcome_of(report, 6, "op[0]")
    assert restated_by_dana.text == "Acme's production region is eu-west-1."
    assert restated_by_dana.outcome == "written" and restated_by_dana.scope_path == DANA_PATH
    with SQLiteGraphStore(db) as store:
        assert store.get_node(Scope.parse(ORG), org_fact.node_id).mentions == 1
    # Another user restating Dana's procedure gets a row of their own too.
    assert outcome_of(report, 7, "op[0]").outcome == "written"


def test_no_secret_of_the_example_reaches_the_database(example_run: tuple[IngestReport, Path]) -> None:
    _, db = example_run
    with sqlite3.connect(db) as conn:
        dump = "\n".join(conn.iterdump())
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw = b"".join(p.read_bytes() for p in db.parent.iterdir() if p.name.startswith(db.name))
    for secret in EXAMPLE_SECRETS:
        assert secret not in dump
        assert secret.encode() not in raw
    assert "[REDACTED:GITHUB_TOKEN]" in dump and "[REDACTED:URL_PASSWORD]" in dump


def test_the_codename_value_is_kept_in_the_text(example_run: tuple[IngestReport, Path]) -> None:
    report, _ = example_run
    assert outcome_of(report, 3, "op[0]").text == "deployment_codename (value: ATLAS-8642)"


# ---------------------------------------------------------------------------------------------------
# Idempotency
# ---------------------------------------------------------------------------------------------------
def test_re_running_the_same_file_writes_nothing_new(tmp_path: Path) -> None:
    db = tmp_path / "memory.sqlite"
    first = ingest_file(EXAMPLE, db)
    before = snapshot(db)
    with sqlite3.connect(db) as conn:
        rows_before = conn.execute("SELECT * FROM nodes ORDER BY seq").fetchall()
    second = ingest_file(EXAMPLE, db)
    counts = second.counts()
    assert counts["written"] == counts["restated"] == counts["updated"] == 0
    assert len(second.already_ingested) == len(first.written) + len(first.restated) + len(first.updated)
    assert [d.reason for d in second.dropped] == [d.reason for d in first.dropped]
    assert snapshot(db) == before
    with sqlite3.connect(db) as conn:  # not even a timestamp moved
        assert conn.execute("SELECT * FROM nodes ORDER BY seq").fetchall() == rows_before


def test_appended_turns_are_the_only_new_writes(tmp_path: Path) -> None:
    db = tmp_path / "memory.sqlite"
    turns = synthetic_turns(DANA, 12, "dana")
    write_jsonl(tmp_path / "part.jsonl", turns[:7])
    write_jsonl(tmp_path / "all.jsonl", turns)
    ingest_file(tmp_path / "part.jsonl", db)
    report = ingest_file(tmp_path / "all.jsonl", db)
    assert {r.turn for r in report.records if r.outcome != "already_ingested"} == set(range(8, 13))
    ingest_file(tmp_path / "all.jsonl", tmp_path / "clean.sqlite")
    assert snapshot(db) == snapshot(tmp_path / "clean.sqlite")


# ---------------------------------------------------------------------------------------------------
# Options and ownership through the library
# ---------------------------------------------------------------------------------------------------
def test_the_threshold_decides_a_near_restatement(tmp_path: Path) -> None:
    turns = [
        turn(DANA, 1, op("Dana prefers dark mode in every editor", "preference")),
        turn(
            DANA, 2, op("Dana prefers dark mode in all editors", "preference")
        ),  # ratio 0.88, no containment
    ]
    loose = ingest_turns(turns, tmp_path / "loose.sqlite", threshold=0.85)
    strict = ingest_turns(turns, tmp_path / "strict.sqlite", threshold=0.95)
    (near,) = [r for r in loose.records if r.turn == 2]
    assert near.outcome == "updated" and near.match_kind == "ratio" and 0.85 <= near.match_score < 0.95
    assert [r.outcome for r in strict.records] == ["written", "written"]


def test_min_importance_and_max_records_are_passed_through(tmp_path: Path) -> None:
    turns = [turn(DANA, 1, op("fact alpha one", importance=4), op("fact beta two"), op("fact gamma three"))]
    report = ingest_turns(turns, tmp_path / "m.sqlite", min_importance=5, max_records=1)
    assert [d.code for d in report.dropped] == ["below_min_importance", "over_max_records"]
    assert [r.text for r in report.written] == ["fact beta two"]


def test_a_child_scope_restating_an_ancestor_gets_its_own_memory(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite"
    label = "Releases ship every second Tuesday"
    report = ingest_turns(
        [
            turn(ORG, 1, op(label, "workflow", layer="procedural")),
            turn(DANA, 1, op(label, "workflow", layer="procedural")),
            turn(DANA, 2, op(label + ".", "workflow", layer="procedural")),
        ],
        db,
    )
    assert [(r.scope_path, r.outcome) for r in report.records] == [
        (ORG_PATH, "written"),
        (DANA_PATH, "written"),  # same record id as the org's, but the org's row is not Dana's
        (DANA_PATH, "restated"),
    ]
    assert report.records[2].node_id == report.records[1].node_id
    with SQLiteGraphStore(db) as store:
        assert [(n.scope_path, n.mentions) for n in store.all_nodes()] == [(ORG_PATH, 1), (DANA_PATH, 2)]


def test_append_only_layers_are_not_deduplicated(tmp_path: Path) -> None:
    turns = [turn(DANA, n, op("Dana deployed the release", "event", layer="episodic")) for n in (1, 2)]
    report = ingest_turns(turns, tmp_path / "m.sqlite")
    assert [r.outcome for r in report.records] == ["written", "written"]


def test_progress_is_reported_once_per_line(tmp_path: Path) -> None:
    calls: list[int] = []
    ingest_file(EXAMPLE, tmp_path / "m.sqlite", progress=calls.append)
    assert calls == [1] * len(EXAMPLE.read_text().splitlines())


# ---------------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------------
def test_bad_lines_get_a_reason_and_lose_nothing_else(tmp_path: Path) -> None:
    good_first = json.dumps(turn(DANA, 1, op("Dana uses vim", "preference")))
    good_last = json.dumps(turn(DANA, 9, op("Dana uses tmux", "preference")))
    lines = [
        good_first.encode(),
        b"",
        b'{"scope": [{"kind": "org", "id": "acme"}], "turn": 2, "output": "x"',  # cut off
        b"[1, 2, 3]",
        json.dumps(turn([{"kind": "org", "id": "acme\x1fuser\x1fdana"}], 3, op("forged"))).encode(),
        json.dumps(turn(DANA, -1, op("negative turn"))).encode(),
        json.dumps(turn(DANA, True, op("boolean turn"))).encode(),
        json.dumps({"scope": DANA, "turn": 4}).encode(),
        json.dumps({"turn": 5, "output": "{}"}).encode(),
        b'{"scope": "\xff\xfe", "turn": 6}',
        json.dumps({**turn(DANA, 7, op("x")), "messages": "hello"}).encode(),
        good_last.encode(),
    ]
    path = tmp_path / "turns.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    report = ingest_file(path, tmp_path / "m.sqlite")
    assert [(p.line, p.code) for p in report.problems] == [
        (3, "invalid_json"),
        (4, "invalid_turn"),
        (5, "invalid_scope"),
        (6, "invalid_turn"),
        (7, "invalid_turn"),
        (8, "missing_output"),
        (9, "invalid_scope"),
        (10, "invalid_utf8"),
        (11, "invalid_turn"),
    ]
    assert "forge" in report.problems[2].reason
    assert [r.text for r in report.written] == ["Dana uses vim", "Dana uses tmux"]
    # The command refuses a file that is not UTF-8 whole, before writing anything, as `dedup` and `tune`
    # do (issue 25: one rule, naming the file, the line and the byte); without that line it reports the
    # rest and exits 1.
    assert main(["ingest", str(path), "--db", str(tmp_path / "cli.sqlite")]) == 2
    path.write_bytes(b"\n".join(line for line in lines if b"\xff" not in line) + b"\n")
    assert main(["ingest", str(path), "--db", str(tmp_path / "cli.sqlite")]) == 1


def test_an_unreadable_file_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(InvalidInputError, match="cannot read"):
        ingest_file(tmp_path / "missing.jsonl", tmp_path / "m.sqlite")
    assert main(["ingest", str(tmp_path / "missing.jsonl"), "--db", str(tmp_path / "m.sqlite")]) == 2
    assert "memdedup ingest: error: cannot read" in capsys.readouterr().err
    assert main(["ingest", str(tmp_path), "--db", str(tmp_path / "m.sqlite")]) == 2
    not_a_db = tmp_path / "notes.txt"
    not_a_db.write_text("plain text, not a database\n" * 200)
    assert main(["ingest", str(EXAMPLE), "--db", str(not_a_db)]) == 2
    assert "not a database" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------------------------------
def test_the_command_prints_a_readable_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ingest", str(EXAMPLE), "--db", str(tmp_path / "m.sqlite")]) == 0
    out = capsys.readouterr().out
    for heading in (
        "Written (",
        "Restated: the memory's text stays (",
        "Updated: the new text is current, the old one a revision (",
        "Not remembered (",
        "Degraded model outputs",
    ):
        assert heading in out
    assert "ratio 1.000" in out and "containment (ratio 0." in out
    assert "non_node_action: action 'create_edge'" in out
    assert "Redacted: " in out and "GITHUB_TOKEN 1" in out
    assert main(["ingest", str(EXAMPLE), "--db", str(tmp_path / "m.sqlite")]) == 0
    assert "0 written, 0 restated, 0 updated" in capsys.readouterr().out


def test_the_progress_bar_is_optional(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    updates: list[int] = []

    class FakeBar:
        def __init__(self, total: int, **_kwargs: Any) -> None:
            updates.append(-total)

        def __enter__(self) -> FakeBar:
            return self

        def __exit__(self, *_exc: object) -> None:
            return None

        def update(self, n: int) -> None:
            updates.append(n)

    lines = len(EXAMPLE.read_text().splitlines())
    # Bars show only on a terminal (stderr and stdout): pretend to be one.
    monkeypatch.setattr("memdedup.progress._isatty", lambda _stream: True)
    monkeypatch.setitem(sys.modules, "tqdm", types.SimpleNamespace(tqdm=FakeBar))
    assert main(["ingest", str(EXAMPLE), "--db", str(tmp_path / "a.sqlite")]) == 0
    assert updates == [-lines] + [1] * lines
    updates.clear()
    assert main(["ingest", str(EXAMPLE), "--db", str(tmp_path / "b.sqlite"), "--no-progress"]) == 0
    assert updates == []
    monkeypatch.setitem(sys.modules, "tqdm", None)  # not installed: no bar, same run
    assert main(["ingest", str(EXAMPLE), "--db", str(tmp_path / "c.sqlite")]) == 0
    assert snapshot(tmp_path / "a.sqlite") == snapshot(tmp_path / "c.sqlite")


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in ([], ["ingest"], ["ingest", "x.jsonl"], ["frobnicate"]):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2
    assert "usage: memdedup" in capsys.readouterr().err


def test_python_dash_m_memdedup_json(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "memdedup",
            "ingest",
            str(EXAMPLE),
            "--db",
            str(tmp_path / "m.sqlite"),
            "--json",
        ],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    counts = data["counts"]
    for outcome in ("written", "restated", "updated"):
        assert counts[outcome] == len(data[outcome])
    assert (
        data["restated"][0]["match_kind"] == "ratio" and data["restated"][0]["scope"] == "org:acme/user:dana"
    )
    assert data["updated"][0]["stored_text"] == "Run pytest and ruff before every commit"
    assert data["dropped_by_code"]["non_node_action"] == 1


# ---------------------------------------------------------------------------------------------------
# Real processes: two writers at once, and a writer killed mid-ingest
# ---------------------------------------------------------------------------------------------------
# Each child, once its first turn is done, waits until every child has done its first: the runs overlap by
# construction (not by starting at the same moment), and each records when it started and ended.
_CONCURRENT_CHILD = """
import json, os, sys, time
from memdedup.ingest import ingest_file
turns, db, ready, go, first, others = sys.argv[1:7]
open(ready, "w").close()
while not os.path.exists(go):
    time.sleep(0.001)
done = []
def progress(step):
    done.append(step)
    if len(done) == 1:
        open(first, "w").close()
        deadline = time.monotonic() + 120
        while not all(os.path.exists(p) for p in others.split(os.pathsep)):
            assert time.monotonic() < deadline, "the other writer never did its first turn"
            time.sleep(0.001)
start = time.time()
report = ingest_file(turns, db, progress=progress)
print(json.dumps({"start": start, "end": time.time(), "counts": report.counts()}))
"""


def _run_at_once(tmp_path: Path, files: list[Path], db: Path) -> list[dict]:
    go = tmp_path / "go"
    children = []
    firsts = [tmp_path / f"first{i}" for i in range(len(files))]
    for i, path in enumerate(files):
        ready = tmp_path / f"ready{i}"
        others = os.pathsep.join(str(p) for p in firsts)
        args = [
            sys.executable,
            "-c",
            _CONCURRENT_CHILD,
            str(path),
            str(db),
            str(ready),
            str(go),
            str(firsts[i]),
            others,
        ]
        children.append(
            (
                ready,
                subprocess.Popen(
                    args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=subprocess_env()
                ),
            )
        )
    deadline = time.monotonic() + 60
    while not all(ready.exists() for ready, _ in children):
        assert time.monotonic() < deadline, "the child processes did not start"
        time.sleep(0.005)
    go.touch()
    results = []
    for _, child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        results.append(json.loads(out))
    # The runs overlapped (by construction: each waited, after its first turn, for the other's first).
    assert max(r["start"] for r in results) < min(r["end"] for r in results)
    return results


def test_two_processes_ingesting_different_files_at_once_lose_nothing(tmp_path: Path) -> None:
    a = write_jsonl(tmp_path / "a.jsonl", synthetic_turns([["org", "acme"], ["user", "ana"]], 150, "ana"))
    b = write_jsonl(tmp_path / "b.jsonl", synthetic_turns([["org", "acme"], ["user", "bo"]], 150, "bo"))
    results = _run_at_once(tmp_path, [a, b], tmp_path / "shared.sqlite")
    ingest_file(a, tmp_path / "sequential.sqlite")
    ingest_file(b, tmp_path / "sequential.sqlite")
    shared, sequential = snapshot(tmp_path / "shared.sqlite"), snapshot(tmp_path / "sequential.sqlite")
    assert sorted(shared["nodes"]) == sorted(sequential["nodes"])
    assert shared["ledger"] == sequential["ledger"]
    assert sum(r["counts"]["written"] for r in results) == len(shared["nodes"])


@pytest.mark.slow
def test_two_processes_ingesting_the_same_file_at_once_write_it_once(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", synthetic_turns(DANA, 200, "dana"))
    results = _run_at_once(tmp_path, [path, path], tmp_path / "shared.sqlite")
    ingest_file(path, tmp_path / "single.sqlite")
    single = snapshot(tmp_path / "single.sqlite")
    assert snapshot(tmp_path / "shared.sqlite") == single  # same rows, same order, same mentions
    applied = sum(r["counts"][k] for r in results for k in ("written", "restated", "updated"))
    assert applied == len(single["ledger"])  # each record applied by exactly one of the two
    assert sum(r["counts"]["already_ingested"] for r in results) == len(single["ledger"])


_BLOCKING_CHILD = """
import os, sys, time
import memdedup.ingest as ingest
real = ingest.decide
restatements = 0
def blocking(*args, **kwargs):
    # A restatement (the synthetic turns end it with ".") comes after two writes of its turn: the 15th
    # (turn 17's) blocks there, inside the turn's open write transaction, and says so: the kill lands
    # mid-turn by construction.
    global restatements
    if kwargs["label"].endswith("."):
        restatements += 1
        if restatements == 15:
            open(sys.argv[3], "w").close()
            time.sleep(3600)
    return real(*args, **kwargs)
ingest.decide = blocking
ingest.ingest_file(sys.argv[1], sys.argv[2])
"""


def test_a_run_killed_mid_ingest_leaves_whole_turns_and_a_re_run_finishes_the_job(tmp_path: Path) -> None:
    turns = synthetic_turns(DANA, 150, "dana")
    path = write_jsonl(tmp_path / "t.jsonl", turns)
    db = tmp_path / "killed.sqlite"
    ingest_file(path, tmp_path / "clean.sqlite")
    clean = snapshot(tmp_path / "clean.sqlite")

    blocked = tmp_path / "blocked"
    child = subprocess.Popen(
        [sys.executable, "-c", _BLOCKING_CHILD, str(path), str(db), str(blocked)],
        env=subprocess_env(),
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 120  # a hang guard, not a timing assumption
    while not blocked.exists():
        assert child.poll() is None, child.stderr.read() if child.stderr else ""
        assert time.monotonic() < deadline, "the ingest never reached turn 17"
        time.sleep(0.01)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL

    killed = snapshot(db)
    assert {entry[4] for entry in killed["ledger"]} == set(range(1, 17))  # turn 17 rolled back whole
    with SQLiteGraphStore(db) as store:
        assert store.integrity_check() == "ok"
    # Whole turns only, and the first turns of the file: each present turn holds all of its records.
    by_turn: dict[int, set] = {}
    for entry in clean["ledger"]:
        by_turn.setdefault(entry[4], set()).add(entry)
    present = {entry[4] for entry in killed["ledger"]}
    assert present == set(range(1, len(present) + 1))
    for number in present:
        assert {e for e in killed["ledger"] if e[4] == number} == by_turn[number]

    rerun = ingest_file(path, db)
    assert len(rerun.already_ingested) == len(killed["ledger"])
    assert snapshot(db) == clean  # no duplicates, nothing lost, the same mentions
