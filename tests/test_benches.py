"""The benchmark scripts run end to end on the bundled sample and print their report.

Each script runs in a child process, as a person would run it, on a tiny slice of the bundled sample.
Only that it runs and what it prints are checked: never a time (timings drift with the machine's load).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import cli_support
import memdedup
import pytest

BENCHES = cli_support.ROOT / "benches"
SAMPLE = BENCHES / "data" / "labels_sample.txt.gz"


def _run(script: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BENCHES / script), *argv],
        capture_output=True,
        text=True,
        env=cli_support.env(),
        cwd=Path(cli_support.ROOT),
        timeout=600,
    )


@pytest.mark.skipif(memdedup.IMPLEMENTATION != "rust", reason="the core's index")
def test_bench_index_quick_runs_and_prints_the_summary() -> None:
    done = _run(
        "bench_index.py",
        "--quick",
        "--corpus",
        str(SAMPLE),
        "--limit",
        "1500",
        "--checkpoints",
        "400,1500",
        "--queries",
        "40",
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "1,500 labels" in out
    for checkpoint in ("400 stored", "1,500 stored"):
        assert checkpoint in out
    assert "matches found by the gate / by the index" in out
    assert "summary at 1,500 labels" in out
    for target in ("query mean", "query p99", "insert mean", "build", "memory"):
        assert any(line.lstrip().startswith(target) for line in out.splitlines()), target
    assert out.count("not met") + out.count(" met ") >= 5
    assert out.count("load average") == 2


@pytest.mark.parametrize(
    "argv",
    [
        ["--limit", "0"],
        ["--checkpoints", "10,x"],
        ["--checkpoints", "0"],
        ["--queries", "-3"],
        ["--corpus", "/nonexistent/labels.txt"],
    ],
)
def test_bench_index_refuses_bad_arguments_with_a_reason(argv: list[str]) -> None:
    done = _run("bench_index.py", "--quick", "--corpus", str(SAMPLE), *argv)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "error:" in done.stderr
