"""The parent side of the adversarial probes: run a probe script in a child ``python -X dev`` and judge it.

Every probe runs in a child process, never in the test process: a segfault, an abort ("memory allocation
of N bytes failed"), a Rust panic or a hang then fails that one test, with the child's stderr (``-X dev``
turns on faulthandler, so a crash prints the Python stack) in the message. A probe states what it allows:
``"reference"`` (the answer equals the oracle's) and/or exception classes (by name, matched against the
raised exception's MRO). A ``PanicException`` is never allowed, whatever the probe says.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPORT_PREFIX = "@@REPORT "

#: Prepended to every probe script: the child library on the path, and the backend the parent runs on
#: (``MEMDEDUP_IMPLEMENTATION`` is inherited through the environment).
#: No core file for a crashing child (writing one for a process with a large address space took seconds).
PRELUDE = (
    "import sys\n"
    "try:\n    import resource\n    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))\n"
    "except (ImportError, ValueError, OSError):\n    pass\n"
    f"sys.path.insert(0, {str(HERE)!r})\nfrom _child import *\n"
)


@dataclass
class Child:
    """What a child process did."""

    script: str
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    reports: list[dict[str, Any]] = field(default_factory=list)

    @property
    def report(self) -> dict[str, Any] | None:
        return self.reports[-1] if self.reports else None

    def describe(self) -> str:
        if self.timed_out:
            how = f"did not finish within {self.seconds:.0f} s (killed)"
        elif self.returncode is not None and self.returncode < 0:
            how = f"was killed by {signal.Signals(-self.returncode).name} (returncode {self.returncode})"
        elif self.returncode == 134:
            how = "aborted (returncode 134)"
        else:
            how = f"exited with {self.returncode}"
        return (
            f"the child {how} after {self.seconds:.1f} s\n"
            f"--- report ---\n{json.dumps(self.report, indent=1)[:3000]}\n"
            f"--- stderr (tail) ---\n{self.stderr[-4000:]}\n"
            f"--- stdout (tail) ---\n{self.stdout[-1500:]}\n"
            f"--- script ---\n{self.script[-2500:]}"
        )


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("PYTHONFAULTHANDLER", "1")
    env["RUST_BACKTRACE"] = "1"
    env.update(extra or {})
    return env


def run_child(body: str, *, timeout: float = 180.0, env: dict[str, str] | None = None) -> Child:
    """Run ``body`` (dedented) in ``python -X dev`` after :data:`PRELUDE`."""
    script = PRELUDE + textwrap.dedent(body)
    start = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-X", "dev", "-c", script],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            env=child_env(env),
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr or ""
        return Child(script, None, out, err, time.monotonic() - start, timed_out=True)
    seconds = time.monotonic() - start
    return Child(script, done.returncode, done.stdout, done.stderr, seconds, reports=parse(done.stdout))


def parse(stdout: str) -> list[dict[str, Any]]:
    prefix = len(REPORT_PREFIX)
    return [json.loads(line[prefix:]) for line in stdout.splitlines() if line.startswith(REPORT_PREFIX)]


def survived(child: Child) -> None:
    """The child ended normally and nothing panicked (whatever the answer was)."""
    assert not child.timed_out, child.describe()
    assert child.returncode == 0, child.describe()
    assert "PanicException" not in child.stderr and "panicked at" not in child.stderr, child.describe()
    assert "Fatal Python error" not in child.stderr, child.describe()
    assert child.reports, "the child reported nothing\n" + child.describe()


def expect(child: Child, *allowed: str) -> dict[str, Any]:
    """The child survived and every report is one of ``allowed``: ``"reference"`` (an answer equal to
    the oracle's) or the name of an exception class in the raised exception's MRO."""
    survived(child)
    for report in child.reports:
        if report["kind"] == "value":
            assert "reference" in allowed, f"expected one of {allowed}, got an answer\n" + child.describe()
            assert report["equal"], "the answer differs from the reference\n" + child.describe()
        else:
            assert "PanicException" not in report["mro"], "a Rust panic reached Python\n" + child.describe()
            assert any(name in report["mro"] for name in allowed if name != "reference"), (
                f"expected one of {allowed}, got {report['type']}\n" + child.describe()
            )
    return child.reports[-1]


def run_and_expect(
    body: str, *allowed: str, timeout: float = 180.0, env: dict[str, str] | None = None
) -> Child:
    child = run_child(body, timeout=timeout, env=env)
    expect(child, *allowed)
    return child
