"""Issue 25, what a person sees: summaries with examples and every parameter, ``ingest --summary`` for big
files, progress on a terminal only, help with defaults and examples, and Ctrl-C that stops at once with
exit 130. Every test runs the real ``memdedup`` command in a child process."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest
from cli_support import ROOT, command, env, interrupt_when, run, run_in_terminal

EXAMPLE = ROOT / "examples" / "turns.jsonl"
LABELS = [
    "Uses pytest and ruff",
    "Uses pytest and ruff.",
    "Uses pytest and ruff for Python projects",
    "Prefers dark mode in every editor",
    "Prefers dark mode in every editor and terminal",
    "Lives in Zürich",
]


def _labels_file(tmp_path: Path, n: int = 0, seed: int = 1) -> Path:
    path = tmp_path / "labels.txt"
    rnd = random.Random(seed)
    words = ["dark", "mode", "editor", "terminal", "pytest", "ruff", "python", "tea", "green", "every"]
    extra = [" ".join(rnd.choice(words) for _ in range(rnd.randint(4, 9))) for _ in range(n)]
    path.write_text("\n".join(LABELS + extra) + "\n", encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------------
# Summaries
# ---------------------------------------------------------------------------------------------------
def test_dedup_summary_shows_examples_of_what_collapsed_into_what(tmp_path: Path) -> None:
    done = run("dedup", _labels_file(tmp_path)).ok()
    assert "6 labels: 3 canonical, 3 collapsed" in done.out
    assert "Examples of collapses" in done.out
    example = next(line for line in done.out.splitlines() if "Uses pytest and ruff for Python" in line)
    assert "containment 0." in example and "Uses pytest and ruff" in example.split("Python projects")[1]


def test_dedup_json_summary_has_the_input_and_every_parameter(tmp_path: Path) -> None:
    path = _labels_file(tmp_path)
    summary = json.loads(run("dedup", path, "--json", "--mode", "join", "--min-chars", "12").ok().out)
    assert summary["input"] == str(path)
    params = summary["parameters"]
    for key, value in {
        "mode": "join",
        "threshold": 0.85,
        "min_chars": 12,
        "cluster": "canonical",
        "label_column": "label",
        "scope_column": "scope",
        "layer_column": "layer",
        "engine": "in-process",
        "out": None,
    }.items():
        assert params[key] == value, (key, params)
    assert summary["examples"] and {"label", "canonical_label", "reason", "score"} <= set(
        summary["examples"][0]
    )


@pytest.mark.slow
def test_ingest_summary_is_short_for_a_big_file(tmp_path: Path) -> None:
    path = tmp_path / "turns.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for n in range(1, 1001):
            ops = [
                {
                    "action": "upsert_node",
                    "layer": "semantic",
                    "label": f"Fact number {n} about the user",
                    "properties": {"memory_category": "fact", "subject": "user"},
                    "importance": 6,
                },
            ]
            row = {
                "scope": {"org": "acme", "user": "dana"},
                "turn": n,
                "messages": [{"role": "user", "content": f"hi {n}"}, {"role": "assistant", "content": "ok"}],
                "output": json.dumps({"ops": ops}),
            }
            out.write(json.dumps(row) + "\n")
    full = run("ingest", path, "--db", tmp_path / "a.sqlite").ok()
    short = run("ingest", path, "--db", tmp_path / "b.sqlite", "--summary").ok()
    assert len(full.out.splitlines()) > 1000
    assert len(short.out.splitlines()) < 15, short.out
    assert "1000 turns" in short.out and "1000 written" in short.out
    assert "2000 transcript rows written" in short.out


def test_ingest_report_counts_transcript_rows(tmp_path: Path) -> None:
    done = run("ingest", EXAMPLE, "--db", tmp_path / "m.sqlite").ok()
    report = json.loads(run("ingest", EXAMPLE, "--db", tmp_path / "n.sqlite", "--json").ok().out)
    rows = report["counts"]["transcript_rows"]
    assert rows > 0
    assert f"{rows} transcript rows written" in done.out


# ---------------------------------------------------------------------------------------------------
# Progress: on a terminal only
# ---------------------------------------------------------------------------------------------------
def test_progress_shows_every_phase_on_a_terminal(tmp_path: Path) -> None:
    path = _labels_file(tmp_path, 3000)
    shown = run_in_terminal("dedup", path, "--mode", "join", "--out", tmp_path / "o.jsonl", cwd=tmp_path)
    assert shown.status == 0, shown
    for phase in ("read", "join", "cluster", "write"):
        assert f"{phase}:" in shown.err, (phase, shown.err[-3000:])
    replay = run_in_terminal("dedup", path, "--out", tmp_path / "o.csv", cwd=tmp_path)
    assert "replay:" in replay.err and "one call into the core" in replay.err
    ingest = run_in_terminal("ingest", EXAMPLE, "--db", tmp_path / "m.sqlite")
    assert "ingest:" in ingest.err


def test_no_progress_when_piped_or_quiet(tmp_path: Path) -> None:
    path = _labels_file(tmp_path, 3000)
    piped = run("dedup", path, "--mode", "join").ok()
    assert piped.err == ""  # stderr is a pipe here
    quiet = run_in_terminal("dedup", path, "--mode", "join", "--quiet")
    assert quiet.status == 0 and "join:" not in quiet.err and "memdedup dedup:" in quiet.err
    to_pipe = run_in_terminal("dedup", path, "--mode", "join", stdout_tty=False)
    assert to_pipe.status == 0 and "join:" not in to_pipe.err and "memdedup dedup:" in to_pipe.out


# ---------------------------------------------------------------------------------------------------
# Help
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("subcommand", ["ingest", "dedup", "tune"])
def test_help_shows_defaults_and_examples(subcommand: str) -> None:
    text = " ".join(run(subcommand, "--help").ok().out.split())
    assert "(default: 0.85)" in text
    assert "examples:" in text
    examples = text.split("examples:")[1]
    assert examples.count(f"memdedup {subcommand}") >= 2
    if subcommand == "dedup":
        assert "(default: replay)" in text and "(default: 16)" in text and "(default: label)" in text


def test_top_level_help_points_to_the_commands() -> None:
    text = run("--help").ok().out
    for name in ("ingest", "dedup", "tune"):
        assert name in text


# ---------------------------------------------------------------------------------------------------
# Ctrl-C: exit 130 at once, nothing half-written
# ---------------------------------------------------------------------------------------------------
def _syscall_numbers() -> tuple[int, int]:
    """``read`` and ``write``'s syscall numbers on this machine (from a child blocked in each)."""
    import platform

    return {"x86_64": (0, 1), "aarch64": (63, 64)}.get(platform.machine(), (0, 1))


def _wait_blocked(child: subprocess.Popen[bytes], call: str, fd: int) -> None:
    """Wait until the child's main thread sits in ``read`` or ``write`` on ``fd`` (``/proc/PID/syscall``):
    it has started and is blocked on the pipe, by observation rather than by a sleep long enough for it."""
    number = _syscall_numbers()[0 if call == "read" else 1]
    deadline = time.monotonic() + 120  # a hang guard, not a timing assumption
    while True:
        assert child.poll() is None, child.stderr.read() if child.stderr else ""
        try:
            fields = Path(f"/proc/{child.pid}/syscall").read_text().split()
        except OSError:
            fields = []
        if len(fields) > 1 and fields[0] == str(number) and int(fields[1], 16) == fd:
            return
        assert time.monotonic() < deadline, f"the command never blocked in {call}({fd}): {fields}"
        time.sleep(0.02)


def _interrupt(argv: list[str], blocked_in: tuple[str, int], **popen: object) -> tuple[int, str]:
    """Start the command, wait until it is blocked (reading an open pipe, or writing to a full one),
    send SIGINT, and return its exit status and stderr."""
    child = subprocess.Popen([*command(), *argv], env=env(), stderr=subprocess.PIPE, **popen)  # type: ignore[call-overload]
    _wait_blocked(child, *blocked_in)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    return child.returncode, err.decode("utf-8", errors="replace")


@pytest.mark.parametrize("subcommand", ["dedup", "tune", "ingest"])
def test_ctrl_c_while_reading_exits_130(tmp_path: Path, subcommand: str) -> None:
    read_fd, write_fd = os.pipe()  # stdin stays open and empty: the command waits for input
    try:
        extra = ["--db", str(tmp_path / "m.sqlite")] if subcommand == "ingest" else []
        status, err = _interrupt([subcommand, "-", *extra], ("read", 0), stdin=read_fd)
    finally:
        os.close(read_fd)
        os.close(write_fd)
    assert status == 130, err
    assert "interrupted" in err and "Traceback" not in err


def test_ctrl_c_while_writing_exits_130_and_leaves_no_partial_file(tmp_path: Path) -> None:
    path = _labels_file(tmp_path, 100_000)
    # The rows go to a pipe nobody reads: the write blocks once the pipe is full.
    read_fd, write_fd = os.pipe()
    try:
        status, err = _interrupt(["dedup", str(path), "--out", "-", "--quiet"], ("write", 1), stdout=write_fd)
    finally:
        os.close(read_fd)
        os.close(write_fd)
    assert status == 130, err
    assert "interrupted" in err and "Traceback" not in err


def test_an_interrupted_file_output_leaves_nothing_behind(tmp_path: Path) -> None:
    read_fd, write_fd = os.pipe()
    try:
        status, _ = _interrupt(["dedup", "-", "--out", str(tmp_path / "out.csv")], ("read", 0), stdin=read_fd)
    finally:
        os.close(read_fd)
        os.close(write_fd)
    assert status == 130
    assert [p.name for p in tmp_path.iterdir()] == []


@pytest.mark.slow
def test_ctrl_c_during_a_long_join_exits_130_at_once(tmp_path: Path) -> None:
    # Near-duplicate labels: one long join call. Interrupted half a second into it, the command must be
    # gone long before the join could have finished (the 30 s limit is a hang detector, not a timing). A
    # machine fast enough to finish the join first simply gets four times the labels, until the signal
    # lands inside the join: each run that finished is checked too (exit 0, its summary).
    for count in (40_000, 160_000, 640_000):
        path = _labels_file(tmp_path, count, seed=7)
        result, seconds = interrupt_when(
            ["dedup", str(path), "--mode", "join"], "join:", pause=0.5, timeout=600, after_signal=30
        )
        if result.status == 0:  # the join finished before the signal: a valid run, and too short
            assert f"  {len(LABELS) + count} labels: " in result.err, result
            continue
        assert result.status == 130, (seconds, result)
        assert "interrupted" in result.err
        return
    pytest.fail("the join of 640,000 labels finished within half a second")
