"""Ctrl-C probes whose long call outlasts the signal by construction, on any machine.

A Ctrl-C probe needs its call to still be running when SIGINT arrives. An input sized to "run for
minutes on this machine" makes the test depend on the machine: a fast one finishes first and the probe
fails for nothing ("the long call finished: it was never interrupted"). So the child measures, then
scales:

1. it builds the input at ``SCALE = 1`` and runs the call under an alarm of ``min_seconds``
   (``SIGALRM``, whose Python handler raises :class:`LastedLongEnough`; the core delivers it as it
   delivers any signal handler's exception, so a call that polls for Ctrl-C stops there too);
2. a call that returns before the alarm is too short: the input is rebuilt at a larger ``SCALE`` (by
   what the run took, aiming at twice the alarm; at least ``growth`` and at most 64 times larger) and
   measured again, at most ``rounds`` times (then the probe fails: "never lasted");
3. once a run is stopped by the alarm, the child says it is ready and starts the same call on the same
   input; the parent sends SIGINT ``after`` seconds later, a fraction of the time the call was measured
   to last, and requires ``KeyboardInterrupt`` within ``bound`` seconds, then the follow-up code (the
   interpreter still works) to print ``alive``.

Setups use ``SCALE`` (an int, 1 at first) to size their input and run in the child's globals (what the
prelude imported). An endless call (an endless iterator) simply never returns. Nothing here asserts a
duration beyond the hang bound.
"""

from __future__ import annotations

import json
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

#: The calibration alarm: the measured call must last at least this long uninterrupted.
MIN_SECONDS = 2.0
#: SIGINT is sent this long after the child starts the measured-long call (a quarter of MIN_SECONDS).
AFTER = 0.5
#: Seconds the child gets, after SIGINT, to raise KeyboardInterrupt, run the follow-up and exit.
BOUND = 30.0

REPORT = "@@INTERRUPT "

#: The child's side (stdlib only), prepended to every probe after the caller's prelude.
CHILD = '''
import json as _json, signal as _signal, time as _time

class LastedLongEnough(BaseException):
    """The calibration alarm went off inside the call: the input lasts long enough."""

def _alarm(signum, frame):
    raise LastedLongEnough

def _say(**data):
    print("@@INTERRUPT " + _json.dumps(data), flush=True)

def lasting(build, call, *, min_seconds, growth, rounds):
    """Build inputs at growing scales until the call on them lasts at least min_seconds."""
    previous = _signal.signal(_signal.SIGALRM, _alarm)
    scale = 1
    try:
        for _ in range(rounds):
            data = build(scale)
            began = _time.monotonic()
            _signal.setitimer(_signal.ITIMER_REAL, min_seconds)
            try:
                call(data)
            except LastedLongEnough:
                return scale, data
            finally:
                _signal.setitimer(_signal.ITIMER_REAL, 0)
            took = _time.monotonic() - began
            _say(kind="too-short", scale=scale, seconds=round(took, 3))
            # Aim at twice the alarm from what this run took (calls grow at least linearly with SCALE),
            # by at least growth and at most 64 times a round: a fast machine that ran the last
            # round in 0.98 of the alarm gets there in one more round, not after the rounds run out.
            aim = int(2 * min_seconds / took) + 1 if took > 0 else 64
            scale *= max(growth, min(aim, 64))
    finally:
        _signal.signal(_signal.SIGALRM, previous)
    _say(kind="never-lasted", scale=scale)
    raise SystemExit(3)

_SETUP = compile(__SETUP__, "<probe setup>", "exec")
_CALL = compile(__CALL__, "<probe call>", "eval")

def _build(scale):
    namespace = dict(globals())
    namespace["SCALE"] = scale
    exec(_SETUP, namespace)
    return namespace

def _run(namespace):
    return eval(_CALL, namespace)

_scale, _data = lasting(_build, _run, min_seconds=__MIN__, growth=__GROWTH__, rounds=__ROUNDS__)
_say(kind="ready", scale=_scale)
_began = _time.monotonic()
try:
    _run(_data)
except KeyboardInterrupt:
    _outcome = "interrupted"
except BaseException as _exc:
    _outcome = f"raised {type(_exc).__name__}: {str(_exc)[:300]}"
else:
    _outcome = "finished"
_say(kind="outcome", outcome=_outcome, seconds=round(_time.monotonic() - _began, 3))
exec(compile(__FOLLOW_UP__, "<probe follow-up>", "exec"), _data)
'''


@dataclass
class Interrupted:
    """What an interrupted child did."""

    returncode: int | None
    stdout: str
    stderr: str
    reports: list[dict[str, object]]
    waited: float
    timed_out: bool

    @property
    def outcome(self) -> str:
        return next((str(r["outcome"]) for r in self.reports if r.get("kind") == "outcome"), "none")

    def describe(self) -> str:
        how = "was killed (timed out)" if self.timed_out else f"exited with {self.returncode}"
        return (
            f"the child {how}, {self.waited:.1f} s after the signal\n"
            f"--- reports ---\n{json.dumps(self.reports, indent=1)[:3000]}\n"
            f"--- stderr (tail) ---\n{self.stderr[-4000:]}\n--- stdout (tail) ---\n{self.stdout[-1500:]}"
        )

    def check(self, *, follow_up_line: str = "alive") -> None:
        """The call raised KeyboardInterrupt within the bound and the follow-up printed its line."""
        assert not any(r.get("kind") == "never-lasted" for r in self.reports), (
            "the call never lasted long enough to be interrupted\n" + self.describe()
        )
        assert not self.timed_out, f"no KeyboardInterrupt within {BOUND:.0f} s of SIGINT\n" + self.describe()
        assert self.outcome == "interrupted", self.describe()
        assert self.returncode == 0, self.describe()
        assert "PanicException" not in self.stderr and "panicked at" not in self.stderr, self.describe()
        assert follow_up_line in self.stdout.splitlines(), self.describe()


def script(
    setup: str,
    call: str,
    *,
    prelude: str = "",
    follow_up: str = 'print("alive", flush=True)',
    min_seconds: float = MIN_SECONDS,
    growth: int = 4,
    rounds: int = 5,
) -> str:
    """The child's source: ``prelude`` (imports, helpers), the calibration, the interrupted call, then
    ``follow_up`` (code run after the interruption, in the setup's namespace)."""
    body = (
        CHILD.replace("__SETUP__", repr(setup))
        .replace("__CALL__", repr(call))
        .replace("__MIN__", repr(float(min_seconds)))
        .replace("__GROWTH__", repr(int(growth)))
        .replace("__ROUNDS__", repr(int(rounds)))
        .replace("__FOLLOW_UP__", repr(follow_up))
    )
    return prelude + "\n" + body


def interrupt(
    source: str,
    *,
    env: dict[str, str],
    after: float = AFTER,
    bound: float = BOUND,
    ready_within: float = 600.0,
) -> Interrupted:
    """Run ``source`` (from :func:`script`) in ``python -X dev``; SIGINT ``after`` seconds after it is
    ready; everything it did."""
    source = source.encode("ascii", "backslashreplace").decode("ascii")
    proc = subprocess.Popen(
        [sys.executable, "-X", "dev", "-c", source],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        errors="replace",
        env=env,
    )
    assert proc.stdout is not None
    head: list[str] = []
    sent = time.monotonic()
    timed_out = False
    try:
        deadline = time.monotonic() + ready_within
        while time.monotonic() < deadline:
            readable, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
            line = proc.stdout.readline() if readable else ""
            if not line:
                break
            head.append(line)
            if line.startswith(REPORT) and '"kind": "ready"' in line:
                time.sleep(after)
                proc.send_signal(signal.SIGINT)
                sent = time.monotonic()
                break
        try:
            out, err = proc.communicate(timeout=bound)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            timed_out = True
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stdout = "".join(head) + out
    reports = [json.loads(line[len(REPORT) :]) for line in stdout.splitlines() if line.startswith(REPORT)]
    return Interrupted(proc.returncode, stdout, err, reports, time.monotonic() - sent, timed_out)
