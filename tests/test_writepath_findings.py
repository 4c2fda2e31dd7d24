"""Issue 24's eight findings on the write and recall path, each reproduced on real SQLite files (and the
real ``memdedup`` command in a child process where the finding is about the command)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import cli_support
import pytest
from memdedup import batch
from memdedup import ingest as ingest_module
from memdedup import store as store_module
from memdedup.ingest import ingest_file, ingest_turns
from memdedup.scope import Scope
from memdedup.store import SQLiteGraphStore, StoreError
from memdedup.window import RetrievalResult, WindowTurn, outside_window, recalled_from_node

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "turns.jsonl"
ORG = Scope.root("org", "acme")
DANA = ORG.child("user", "dana")
ORG_JSON = ORG.to_json()
DANA_JSON = DANA.to_json()


def op(label: str, category: str = "fact", layer: str = "semantic", **props: Any) -> dict[str, Any]:
    properties = {**props, "memory_category": category, "subject": "user"}
    return {
        "action": "upsert_node",
        "layer": layer,
        "label": label,
        "properties": properties,
        "importance": 6,
    }


def turn(scope: Any, number: Any, *ops: Any, messages: Any = ()) -> dict[str, Any]:
    return {
        "scope": scope,
        "turn": number,
        "messages": list(messages),
        "output": json.dumps({"ops": list(ops)}),
        "provider": "anthropic",
    }


def chat(user: str, assistant: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def env() -> dict[str, str]:
    return cli_support.env()


def memdedup(*argv: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memdedup", *argv],
        capture_output=True,
        text=True,
        env=env(),
        timeout=300,
        **kwargs,
    )


def transcript_rows(db: Path) -> list[tuple[str, str, int, str]]:
    with SQLiteGraphStore(db) as store:
        return [
            (n.scope_path, n.label, n.properties["turn_id"], n.properties["speaker"])
            for n in store.all_nodes()
            if n.properties.get("source") == "transcript"
        ]


# ---------------------------------------------------------------------------------------------------
# 1. A child scope's transcript rows are its own: existence is keyed by (scope_path, id)
# ---------------------------------------------------------------------------------------------------
def test_1_a_child_scope_with_the_same_turn_and_message_keeps_its_transcript_rows(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite"
    messages = chat("Let's plan the release.", "Sure, Tuesday it is.")
    report = ingest_turns([turn(ORG_JSON, 1, messages=messages), turn(DANA_JSON, 1, messages=messages)], db)
    assert report.transcript_rows == 4
    rows = transcript_rows(db)
    owners = [ORG.scope_path, DANA.scope_path]
    assert sorted((path, speaker) for path, _, _, speaker in rows) == sorted(
        (owner, speaker) for owner in owners for speaker in ("user", "assistant")
    )
    assert (
        ingest_turns(
            [turn(ORG_JSON, 1, messages=messages), turn(DANA_JSON, 1, messages=messages)], db
        ).transcript_rows
        == 0
    )


def test_1_every_scope_of_a_tree_keeps_its_transcript(tmp_path: Path) -> None:
    scopes = []
    for org in range(3):
        root = Scope.root("org", f"o{org}")
        scopes.append(root)
        for team in range(3):
            child = root.child("team", f"t{team}")
            scopes.append(child)
            scopes.extend(child.child("user", f"u{user}") for user in range(3))
    messages = chat("same words everywhere", "same answer everywhere")
    # Ancestors first (the order that lost every child's rows), then the reverse.
    turns = [turn(scope.to_json(), 1, messages=messages) for scope in scopes + scopes[::-1]]
    report = ingest_turns(turns, tmp_path / "m.sqlite")
    assert len(scopes) == 39 and report.transcript_rows == 2 * len(scopes)
    owners = {path for path, *_ in transcript_rows(tmp_path / "m.sqlite")}
    assert owners == {scope.scope_path for scope in scopes}


# ---------------------------------------------------------------------------------------------------
# 2. Recall keeps another conversation's rows: the window identity includes the owning scope
# ---------------------------------------------------------------------------------------------------
@pytest.fixture
def two_conversations(tmp_path: Path) -> Path:
    db = tmp_path / "m.sqlite"
    ingest_turns(
        [
            turn(ORG_JSON, 1, op("Releases ship on Tuesdays", "fact"), messages=chat("org hello", "org hi")),
            turn(
                DANA_JSON, 1, op("Dana prefers dark mode", "preference"), messages=chat("dana hi", "hi Dana")
            ),
        ],
        db,
    )
    return db


def test_2_recall_at_a_child_scope_keeps_the_ancestor_s_rows(two_conversations: Path) -> None:
    window = [WindowTurn(1, "user", "dana hi"), WindowTurn(1, "assistant", "hi Dana")]
    with SQLiteGraphStore(two_conversations) as store:
        recalled = store.recall(DANA, window, char_ceiling=10_000)
        dana_rows = {
            n.id
            for n in store.all_nodes()
            if n.scope_path == DANA.scope_path and n.properties.get("source") == "transcript"
        }
    assert {record_id for record_id, _ in recalled.dropped} == dana_rows and len(dana_rows) == 2
    # The org's turn-1 rows are another conversation: rendered, not dropped.
    assert "org hello" in recalled.text and "org hi" in recalled.text
    assert recalled.text.count("dana hi") == 1  # once, in the window
    assert "Releases ship on Tuesdays" in recalled.text and "Dana prefers dark mode" in recalled.text
    # The window may also be given as mappings.
    with SQLiteGraphStore(two_conversations) as store:
        as_mappings = store.recall(
            DANA, [{"turn_id": t.turn_id, "speaker": t.speaker, "text": t.text} for t in window]
        )
    assert as_mappings.dropped == recalled.dropped and str(as_mappings) == recalled.text


def test_2_outside_window_keys_identity_by_the_owning_scope(two_conversations: Path) -> None:
    with SQLiteGraphStore(two_conversations) as store:
        nodes = store.query(DANA, layer="episodic")
    result = RetrievalResult(memories=tuple(recalled_from_node(n) for n in nodes))
    window = [WindowTurn(1, "user", "dana hi"), WindowTurn(1, "assistant", "hi Dana")]
    for kwargs, turns in (
        ({"scope": DANA}, window),
        ({}, [WindowTurn(t.turn_id, t.speaker, t.text, scope_path=DANA.scope_path) for t in window]),
    ):
        memories, _, dropped = outside_window(result, turns, char_ceiling=10_000, **kwargs)
        assert {item.record.text for item in memories} == {"org hello", "org hi"}
        assert len(dropped) == 2
    # A window that names no conversation cannot tell whose turn 1 it shows: nothing owned is dropped.
    memories, _, dropped = outside_window(result, window, char_ceiling=10_000)
    assert dropped == () and len(memories) == 4


# ---------------------------------------------------------------------------------------------------
# 3. One bad line never ends the run
# ---------------------------------------------------------------------------------------------------
def test_3_a_turn_number_sqlite_cannot_hold_is_a_reported_line(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "t.jsonl",
        [
            turn(DANA_JSON, 1, op("Dana uses vim", "preference")),
            turn(DANA_JSON, 10**20, op("Dana uses emacs", "preference")),
            turn(DANA_JSON, 2**63, op("Dana uses nano", "preference")),
            turn(DANA_JSON, 3, op("Dana uses tmux", "preference")),
        ],
    )
    report = ingest_file(path, tmp_path / "m.sqlite")
    assert [(p.line, p.code) for p in report.problems] == [(2, "invalid_turn"), (3, "invalid_turn")]
    assert "2**63" in report.problems[0].reason or "9223372036854775807" in report.problems[0].reason
    assert [r.text for r in report.written] == ["Dana uses vim", "Dana uses tmux"]
    done = memdedup("ingest", str(path), "--db", str(tmp_path / "cli.sqlite"))
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "Dana uses tmux" in done.stdout


def test_3_a_turn_that_fails_mid_write_is_reported_and_the_run_goes_on(tmp_path: Path) -> None:
    # Through the library a property can hold what no JSON writer takes (a tuple as a key): minting
    # renders it, the store cannot write it, and only that turn is lost.
    turns = [
        turn(DANA_JSON, 1, op("Dana uses vim", "preference")),
        {**turn(DANA_JSON, 2), "output": {"ops": [op("Dana counts", "fact", n={(1, 2): "pair"})]}},
        turn(DANA_JSON, 3, op("Dana uses tmux", "preference")),
    ]
    report = ingest_turns(turns, tmp_path / "m.sqlite")
    assert [(p.line, p.code) for p in report.problems] == [(2, "write_failed")]
    assert [r.text for r in report.written] == ["Dana uses vim", "Dana uses tmux"]
    with SQLiteGraphStore(tmp_path / "m.sqlite") as store:
        assert {e.turn for e in store.ledger()} == {1, 3}  # turn 2 rolled back whole


# ---------------------------------------------------------------------------------------------------
# 4. A lone surrogate in a message never loses the turn
# ---------------------------------------------------------------------------------------------------
def test_4_a_lone_surrogate_in_a_message_is_cleaned_and_the_memory_kept(tmp_path: Path) -> None:
    bad = turn(
        DANA_JSON, 1, op("Dana prefers dark mode", "preference"), messages=chat("dark \ud800 mode", "ok")
    )
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(bad) + "\n", encoding="utf-8")  # json.dumps escapes it as \ud800
    assert "\\ud800" in path.read_text()
    report = ingest_file(path, tmp_path / "m.sqlite")
    assert report.problems == [] and [r.text for r in report.written] == ["Dana prefers dark mode"]
    assert sorted(label for _, label, _, _ in transcript_rows(tmp_path / "m.sqlite")) == [
        "dark \ufffd mode",
        "ok",
    ]
    json.dumps(report.to_dict(), ensure_ascii=False).encode("utf-8")
    done = memdedup("ingest", str(path), "--db", str(tmp_path / "cli.sqlite"))
    assert done.returncode == 0, done.stderr
    assert "1 written" in done.stdout


# ---------------------------------------------------------------------------------------------------
# 5. Scope values of different types are never merged
# ---------------------------------------------------------------------------------------------------
def test_5_ingest_refuses_a_non_text_scope_id(tmp_path: Path) -> None:
    turns = [
        turn({"org": "1"}, 1, op("Releases ship on Tuesdays")),
        turn({"org": 1}, 1, op("Releases ship on Tuesdays")),
        turn({"org": True}, 1, op("Releases ship on Tuesdays")),
    ]
    report = ingest_turns(turns, tmp_path / "m.sqlite")
    assert [(p.line, p.code) for p in report.problems] == [(2, "invalid_scope"), (3, "invalid_scope")]
    assert "int" in report.problems[0].reason and "string" in report.problems[0].reason
    assert [r.scope_path for r in report.written] == [Scope.root("org", "1").scope_path]


@pytest.mark.parametrize(
    "values",
    [[1, True, 1.0, "1"], [0, False, 0.0, "0", None, ""], [(1, "a"), (True, "a"), ("1", "a")]],
)
def test_5_batch_keeps_scopes_and_layers_of_different_types_apart(values: list[Any]) -> None:
    labels = ["Releases ship every second Tuesday"] * len(values)
    for kwargs in ({"scopes": values}, {"layers": values}):
        assert batch.replay(labels, **kwargs).reason == ["new"] * len(values)
    assert batch.join(labels, scopes=values).tolist() == []
    assert batch.clusters(labels, scopes=values).reason == ["new"] * len(values)
    # Equal values of one type still share a partition.
    assert batch.replay(labels[:2], scopes=[values[0], values[0]]).reason == ["new", "ratio"]


def test_5_batch_refuses_an_unhashable_scope() -> None:
    with pytest.raises(TypeError, match="scope"):
        batch.replay(["a", "b"], scopes=[["x"], ["x"]])


def test_5_files_keep_scope_values_of_different_types_apart(tmp_path: Path) -> None:
    label = "Releases ship every second Tuesday"
    rows = [
        {"label": label, "scope": "1"},
        {"label": label, "scope": 1},
        {"label": label, "scope": "true"},
        {"label": label, "scope": True},
        {"label": label, "scope": ""},
        {"label": label, "scope": None},
        {"label": label},
        {"label": label, "layer": "1"},
        {"label": label, "layer": 1},
    ]
    path = write_jsonl(tmp_path / "labels.jsonl", rows)
    table = batch.read_label_table(str(path))
    assert batch.dedup_table(table).reason == ["new"] * len(rows)
    assert batch.dedup_table(table, mode="join").reason == ["new"] * len(rows)
    done = memdedup("dedup", str(path), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["collapsed"] == 0
    # The same label twice in one typed scope still collapses.
    write_jsonl(tmp_path / "same.jsonl", [{"label": label, "scope": 1}, {"label": label, "scope": 1}])
    assert batch.dedup_table(batch.read_label_table(str(tmp_path / "same.jsonl"))).reason == ["new", "ratio"]


# ---------------------------------------------------------------------------------------------------
# 6. Another application's database is refused and left byte for byte alone
# ---------------------------------------------------------------------------------------------------
def foreign_database(path: Path) -> bytes:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO customers (name) VALUES ('Ada'), ('Grace')")
    conn.close()
    return path.read_bytes()


def test_6_another_application_s_database_is_refused_unchanged(tmp_path: Path) -> None:
    db = tmp_path / "crm.sqlite"
    before = foreign_database(db)
    done = memdedup("ingest", str(EXAMPLE), "--db", str(db))
    assert done.returncode == 2
    assert "not a memdedup database" in done.stderr and "customers" in done.stderr
    assert "Traceback" not in done.stderr
    assert db.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["crm.sqlite"]  # no -wal, no -shm
    with pytest.raises(StoreError, match="not a memdedup database"):
        SQLiteGraphStore(db)
    assert db.read_bytes() == before
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    conn.close()


def test_6_an_empty_database_and_memdedup_s_own_are_used(tmp_path: Path) -> None:
    empty = tmp_path / "empty.sqlite"
    sqlite3.connect(empty).close()
    assert ingest_file(EXAMPLE, empty).counts()["written"] > 0
    assert ingest_file(EXAMPLE, empty).counts()["written"] == 0
    # A memdedup file from before the application id was stamped is still memdedup's.
    with sqlite3.connect(empty) as conn:
        conn.execute("PRAGMA application_id = 0")
    conn.close()
    assert ingest_file(EXAMPLE, empty).counts()["already_ingested"] > 0


# ---------------------------------------------------------------------------------------------------
# 7. Corruption and store failures are one StoreError with a message; the partial report survives
# ---------------------------------------------------------------------------------------------------
def flip(path: Path, page: int, offset: int, size: int = 16) -> None:
    data = bytearray(path.read_bytes())
    start = (page - 1) * 4096 + offset
    data[start : start + size] = bytes(b ^ 0xFF for b in data[start : start + size])
    path.write_bytes(bytes(data))


def checkpointed_example(db: Path) -> None:
    ingest_file(EXAMPLE, db)
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()


def test_7_a_damaged_file_warns_on_open_and_the_command_says_so(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite"
    checkpointed_example(db)
    with sqlite3.connect(db) as conn:
        index_page = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'nodes_scope_label'"
        ).fetchone()[0]
    conn.close()
    flip(db, index_page, 8)
    with pytest.warns(store_module.StoreIntegrityWarning, match="integrity"):
        SQLiteGraphStore(db).close()
    done = memdedup("ingest", str(EXAMPLE), "--db", str(db))
    assert done.returncode != 0
    assert "integrity" in done.stderr and "Traceback" not in done.stderr


def test_7_a_bad_schema_version_is_a_store_error(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite"
    SQLiteGraphStore(db).close()
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE meta SET value = 'one' WHERE key = 'schema_version'")
    conn.close()
    with pytest.raises(StoreError, match="schema version"):
        SQLiteGraphStore(db)
    done = memdedup("ingest", str(EXAMPLE), "--db", str(db))
    assert done.returncode == 2 and "schema version" in done.stderr and "Traceback" not in done.stderr


def test_7_a_full_disk_is_a_store_error_carrying_the_partial_report(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite"
    turns = [
        turn(
            DANA_JSON, n, op(f"Dana keeps note {n:04d} " + "x" * 300, "fact"), messages=chat(f"u{n}", f"a{n}")
        )
        for n in range(1, 400)
    ]
    with SQLiteGraphStore(db) as store:
        store._conn.execute("PRAGMA max_page_count = 40")  # SQLite's own "database or disk is full"
        with pytest.raises(StoreError, match="full") as raised:
            ingest_turns(turns, store)
        report = raised.value.report
        assert report is not None and 0 < report.turns < len(turns)
        ledger_turns = sorted({e.turn for e in store.ledger()})
    # Whole turns only, the first ones, and the report says exactly which.
    assert ledger_turns == list(range(1, len(ledger_turns) + 1))
    assert [r.turn for r in report.written] == ledger_turns
    assert report.error and "full" in report.error


def test_7_the_command_reports_a_full_disk_with_the_partial_report(tmp_path: Path) -> None:
    import resource

    path = write_jsonl(
        tmp_path / "t.jsonl",
        [turn(DANA_JSON, n, op(f"Dana keeps note {n:04d} " + "y" * 500, "fact")) for n in range(1, 2000)],
    )
    limit = 256 * 1024

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = memdedup("ingest", str(path), "--db", str(tmp_path / "m.sqlite"), preexec_fn=small_files)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "error" in done.stderr
    assert " written" in done.stdout  # the partial report
    with SQLiteGraphStore(tmp_path / "m.sqlite") as store:
        turns = sorted({e.turn for e in store.ledger()})
    assert turns == list(range(1, len(turns) + 1)) and 0 < len(turns) < 1999


# ---------------------------------------------------------------------------------------------------
# 8. Ctrl-C stops at the next turn boundary with the partial report, exit 130
# ---------------------------------------------------------------------------------------------------
def _dana_turn(n: int) -> str:
    row = turn(
        DANA_JSON, n, op(f"Dana fact {n} alpha", "fact"), op(f"Dana event {n} beta", "event", "episodic")
    )
    row["messages"] = chat(f"user says {n}", f"assistant says {n}")
    return json.dumps(row) + "\n"


def _check_whole_turns(db: Path, turns_done: int) -> None:
    """Whole turns only (two memories each, two transcript rows each), exactly the first ``turns_done``."""
    with SQLiteGraphStore(db) as store:
        by_turn: dict[int, int] = {}
        for entry in store.ledger():
            by_turn[entry.turn] = by_turn.get(entry.turn, 0) + 1
        rows = store.count_nodes()
    assert sorted(by_turn) == list(range(1, turns_done + 1))
    assert set(by_turn.values()) == {2}
    assert rows == 4 * turns_done


def test_8_ctrl_c_stops_at_a_turn_boundary_and_prints_the_partial_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``memdedup ingest``: Ctrl-C arriving during turn 5 stops the run after turn 5, exactly (the signal is
    sent from inside the run, so where it lands does not depend on the machine's speed)."""
    from memdedup import cli

    path = tmp_path / "big.jsonl"
    path.write_text("".join(_dana_turn(n) for n in range(1, 201)), encoding="utf-8")
    original = ingest_module.ingest_turns

    def ingest_turns_interrupted_in_turn_5(*args: Any, **kwargs: Any) -> Any:
        advance = kwargs["progress"]

        def progress(step: int, done: list[int] = []) -> None:  # noqa: B006 - a counter across calls
            done.append(step)
            if len(done) == 5:
                os.kill(os.getpid(), signal.SIGINT)  # the Ctrl-C, during turn 5's progress step
            if advance is not None:
                advance(step)

        kwargs["progress"] = progress
        return original(*args, **kwargs)

    monkeypatch.setattr(ingest_module, "ingest_turns", ingest_turns_interrupted_in_turn_5)
    db = tmp_path / "m.sqlite"
    assert cli.main(["ingest", str(path), "--db", str(db), "--quiet"]) == 130
    out, err = capsys.readouterr()
    assert "interrupted after 5 turns" in err and "Traceback" not in err
    summary = next(line for line in out.splitlines() if " turns, " in line)
    assert int(summary.split(" turns, ")[0].split()[-1]) == 5
    _check_whole_turns(db, 5)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


# The child ingests turns as they arrive on its stdin: after the last line written so far it waits for
# the next, at a turn boundary, however fast the machine is.
_PIPE_CHILD = """
import sys
from memdedup.ingest import IngestInterrupted, ingest_turns, read_turns
try:
    report = ingest_turns(read_turns(sys.stdin.buffer, name="<stdin>"), sys.argv[1])
except IngestInterrupted as stopped:
    print("interrupted", stopped.report.turns, flush=True)
else:
    print("finished", report.turns, flush=True)
"""


def test_8_an_outside_ctrl_c_while_waiting_for_the_next_turn_stops_there(tmp_path: Path) -> None:
    """A real SIGINT from another process, while the run waits for its next turn on a pipe the test keeps
    open: the run stops there, before the turn written after the signal, with every turn whole."""
    db = tmp_path / "m.sqlite"
    child = subprocess.Popen(
        [sys.executable, "-c", _PIPE_CHILD, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
    )
    assert child.stdin is not None
    written = 20
    child.stdin.write("".join(_dana_turn(n) for n in range(1, written + 1)))
    child.stdin.flush()
    deadline = time.monotonic() + 120  # a hang guard, not a timing assumption
    applied = 0
    while applied < 2 * written:  # every turn written so far is in: the child waits for the next line
        assert child.poll() is None, child.stderr.read() if child.stderr else ""
        assert time.monotonic() < deadline, "the child did not ingest the turns it was given"
        time.sleep(0.02)
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
                applied = conn.execute("SELECT count(*) FROM ledger").fetchone()[0]
            conn.close()
        except sqlite3.OperationalError:
            applied = 0
    child.send_signal(signal.SIGINT)
    child.stdin.write(_dana_turn(written + 1))  # arrives after the signal: never ingested
    child.stdin.flush()
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    assert out.split() == ["interrupted", str(written)], out + err
    _check_whole_turns(db, written)


def test_8_the_library_raises_ingest_interrupted_with_the_partial_report(tmp_path: Path) -> None:
    turns = [turn(DANA_JSON, n, op(f"Dana fact {n} gamma", "fact")) for n in range(1, 200)]

    def progress(_: int, seen: list[int] = []) -> None:  # noqa: B006 - a counter across calls
        seen.append(1)
        if len(seen) == 5:
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(ingest_module.IngestInterrupted) as raised:
        ingest_turns(turns, tmp_path / "m.sqlite", progress=progress)
    assert isinstance(raised.value, KeyboardInterrupt)
    report = raised.value.report
    assert report.interrupted and 5 <= report.turns < len(turns)
    with SQLiteGraphStore(tmp_path / "m.sqlite") as store:
        assert sorted(e.turn for e in store.ledger()) == list(range(1, report.turns + 1))
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_no_store_warning_on_a_sound_file(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        checkpointed_example(tmp_path / "m.sqlite")
        SQLiteGraphStore(tmp_path / "m.sqlite").close()
