"""Child-process probes of the Rust bindings: the helper the other ``test_bindings_*`` files share.

A probe that crashes, aborts or panics must fail its test, not the test run, so each one runs in a
child interpreter under ``python -X dev`` (debug allocators: a freed object is overwritten, so a read
after free shows) with the Rust backend forced (``MEMDEDUP_IMPLEMENTATION=rust``: a missing
extension is an error there, never a silent fallback to the reference). The tests below check that
the helper itself tells a crash, an abort and a Rust panic from a clean exit.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import cli_support
import interrupt_support
import pytest

#: The probes test the compiled extension; an explicitly requested pure-Python run skips them.
requires_rust = pytest.mark.skipif(
    os.environ.get("MEMDEDUP_IMPLEMENTATION", "").strip().lower() == "python",
    reason="MEMDEDUP_IMPLEMENTATION=python: these probes test the compiled extension",
)

#: Prepended to every probe: how a probe reports a Rust panic that reached Python.
PRELUDE = """
import sys
def _is_panic(exc):
    return type(exc).__name__ == "PanicException"
"""


def child_env(**extra: str) -> dict[str, str]:
    env = cli_support.env()
    env["MEMDEDUP_IMPLEMENTATION"] = "rust"
    env["RAYON_NUM_THREADS"] = extra.pop("RAYON_NUM_THREADS", "2")
    env.update(extra)
    return env


def ascii_source(code: str) -> str:
    """``code`` with every non-ASCII character (lone surrogates too, which no command line can hold)
    escaped: they only ever occur inside the probes' string literals."""
    return code.encode("ascii", "backslashreplace").decode("ascii")


def run_child(code: str, *, timeout: float = 300, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in ``python -X dev`` with the Rust backend; the completed process."""
    source = ascii_source(PRELUDE + textwrap.dedent(code))
    return subprocess.run(
        [sys.executable, "-X", "dev", "-c", source],
        env=child_env(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def describe(proc: subprocess.CompletedProcess[str]) -> str:
    how = f"exit code {proc.returncode}"
    if proc.returncode < 0:
        how = f"killed by {signal.Signals(-proc.returncode).name}"
    return f"{how}\n--- stdout ---\n{proc.stdout[-3000:]}\n--- stderr ---\n{proc.stderr[-3000:]}"


def assert_clean(proc: subprocess.CompletedProcess[str], *expected_lines: str) -> list[str]:
    """The child exited 0 and printed each of ``expected_lines`` (as whole lines); its stdout lines."""
    assert proc.returncode == 0, describe(proc)
    lines = proc.stdout.splitlines()
    for line in expected_lines:
        assert line in lines, f"{line!r} not printed\n{describe(proc)}"
    return lines


def run_interrupted(setup: str, call: str, *, follow_up: str = 'print("alive", flush=True)') -> None:
    """Build ``setup``'s input (sized by ``SCALE``) until ``call`` on it is measured to outlast the
    signal, start it, send SIGINT, and check that the call raised KeyboardInterrupt and the child carried
    on: ``follow_up`` runs after it and prints ``alive`` (:mod:`interrupt_support`)."""
    source = interrupt_support.script(
        textwrap.dedent(setup), call, prelude=PRELUDE + "import time\n", follow_up=follow_up
    )
    interrupt_support.interrupt(source, env=child_env()).check()


@requires_rust
def test_the_helper_sees_a_crash() -> None:
    proc = run_child("import os; os.abort()")
    assert proc.returncode == -signal.SIGABRT
    with pytest.raises(AssertionError):
        assert_clean(proc)


@requires_rust
def test_the_helper_runs_the_rust_backend() -> None:
    proc = run_child("import memdedup; print(memdedup.IMPLEMENTATION)")
    assert_clean(proc, "rust")


@requires_rust
def test_the_helper_interrupts_a_sleep() -> None:
    run_interrupted("", "time.sleep(600)")
