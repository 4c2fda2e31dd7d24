"""rapidfuzz's ``workers`` honoured by ``cdist`` (and ``extract``/``extractOne``, which pass it through):
1 computes on the calling thread, -1 on rayon's global pool, N on a pool of N threads built for the call.
The result never depends on it. Which threads compute is observed in a child process through
``/proc/self/task`` (the pool's threads are named ``memdedup-w<k>``); the child stops the call with
SIGINT once it has seen them, so Ctrl-C inside a pool is exercised too."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memdedup import _reference, batch
from memdedup._backend import IMPLEMENTATION
from memdedup.errors import InputTypeError, InvalidInputError
from profiles import sampled
from strategies import label_text, n_examples

rust_only = pytest.mark.skipif(IMPLEMENTATION != "rust", reason="the Rust core's threads")


@settings(max_examples=n_examples(60), deadline=None)
@given(
    queries=st.lists(label_text, max_size=6),
    choices=st.lists(label_text, max_size=8),
    cutoff=st.sampled_from([None, 0.0, 0.4, 0.85, 1.0]),
    normalise=st.booleans(),
)
def test_results_never_depend_on_workers(
    queries: list[str], choices: list[str], cutoff: float | None, normalise: bool
) -> None:
    one = batch.cdist(queries, choices, score_cutoff=cutoff, normalise=normalise, workers=1)
    reference = _reference.cdist(
        queries, choices, cutoff=cutoff or 0.0, normalise=normalise, workers=3
    )  # the reference accepts and ignores it
    assert one.tobytes() == reference
    for workers in (-1, 2, 3):
        got = batch.cdist(queries, choices, score_cutoff=cutoff, normalise=normalise, workers=workers)
        assert got.tobytes() == one.tobytes(), workers
    if queries:
        expected = batch.extract(queries[0], choices, score_cutoff=cutoff, limit=None, normalise=normalise)
        for workers in (-1, 2):
            got_extract = batch.extract(
                queries[0], choices, score_cutoff=cutoff, limit=None, normalise=normalise, workers=workers
            )
            assert got_extract == expected
            best = batch.extractOne(
                queries[0], choices, score_cutoff=cutoff, normalise=normalise, workers=workers
            )
            assert best == (expected[0] if expected else None)


@pytest.mark.parametrize("call", sampled(["cdist", "extract", "extractOne", "core"], ["cdist", "core"]))
def test_invalid_workers_are_typed_errors(call: str) -> None:
    def run(workers: object) -> object:
        if call == "core":
            if IMPLEMENTATION != "rust":
                pytest.skip("the Rust core's own check")
            from memdedup import _core

            return _core.cdist(["a"], ["a"], workers=workers)
        if call == "cdist":
            return batch.cdist(["a"], ["a"], workers=workers)  # type: ignore[arg-type]
        return getattr(batch, call)("a", ["a"], workers=workers)

    for workers in (0, -2, -(10**30)):
        with pytest.raises(InvalidInputError, match=r"workers must be -1 \(every core\) or 1 or more"):
            run(workers)
    for workers in (1025, 10**9, 10**30):
        with pytest.raises(InvalidInputError, match="workers must be at most 1024 threads"):
            run(workers)
    for workers in (True, 2.0, "2", None if call != "core" else b"2"):
        with pytest.raises(InputTypeError, match="workers must be an integer"):
            run(workers)
    # The largest allowed pool starts and answers.
    assert run(1024) is not None


# The child: baseline threads, then a call it interrupts; a watcher thread samples /proc/self/task (the
# GIL is released during the call) and, once it has seen the call's threads settle, sends SIGINT. A call
# that returns first (a fast machine) was simply too short: the child tries again on four times the
# queries, so the interruption lands inside a call by construction, on any machine (a signal that arrives
# just after a call returned is told apart, as "late", and retried too). It prints what it saw.
_CHILD = textwrap.dedent(
    """
    import json, os, signal, sys, threading
    from memdedup import batch

    workers, want = int(sys.argv[1]), sys.argv[2]

    def threads():
        names = []
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/comm") as f:
                    names.append(f.read().strip())
            except OSError:
                pass
        return names

    base = threads()
    seen, most = set(), 0

    def watch(stop):
        global most
        quiet = 0
        while not stop.is_set():
            now = threads()
            extra = len(now) - len(base) - 1  # the watcher itself
            seen.update(n for n in now if n.startswith("memdedup-"))
            most = max(most, extra)
            ready = any(n.startswith(want) for n in now)
            quiet = quiet + 1 if ready else 0
            if quiet == 200:
                os.kill(os.getpid(), signal.SIGINT)
                return
            stop.wait(0.001)

    words = "the quick brown fox jumps over a lazy dog while memory labels restate".split()
    def label(k):
        return " ".join(words[(k * 7 + j) % len(words)] for j in range(8 + k % 5)) + f" {k}"

    labels = [label(k) for k in range(40000)]

    def attempt(scale):
        # What is seen is the observation of this call: the threads of an earlier call have gone.
        global most
        for _ in range(3000):
            if len(threads()) <= len(base):
                break
            threading.Event().wait(0.01)
        seen.clear()
        most = 0
        stop = threading.Event()
        watcher = threading.Thread(target=watch, args=(stop,))
        watcher.start()
        try:
            try:
                batch.cdist(labels[:400] * scale, labels, workers=workers)
            except KeyboardInterrupt:
                watcher.join()
                return "interrupted"
            stop.set()
            watcher.join()
            return "finished"
        except KeyboardInterrupt:  # the watcher fired as the call returned: not inside it
            watcher.join()
            return "late"

    attempts = []
    for k in range(6):
        attempts.append(attempt(4**k))
        if attempts[-1] == "interrupted":
            break
    print(json.dumps({"outcome": attempts[-1], "attempts": attempts, "seen": sorted(seen), "most": most}))
    """
)


def _threads_of_a_call(workers: int, want: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-X", "dev", "-c", _CHILD, str(workers), want],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    assert result["outcome"] == "interrupted", result  # Ctrl-C stopped the call
    return result


@rust_only
def test_workers_2_computes_on_a_pool_of_two_threads() -> None:
    result = _threads_of_a_call(2, "memdedup-w1")
    assert result["seen"] == ["memdedup-w0", "memdedup-w1"]
    assert result["most"] == 2  # the pool's two threads and nothing else


@pytest.mark.slow
@rust_only
def test_workers_1_starts_no_worker_thread() -> None:
    # Ready once the call polls Ctrl-C (its ticker thread runs): no pool thread ever appears, and the
    # only thread besides the caller is the ticker that asks it to check for Ctrl-C.
    result = _threads_of_a_call(1, "memdedup-ticker")
    assert result["seen"] == ["memdedup-ticker"]
    assert result["most"] == 1


@pytest.mark.slow
@rust_only
def test_workers_minus_1_uses_the_global_pool() -> None:
    # The control for the two tests above: the observation sees rayon's global pool when it is used.
    result = _threads_of_a_call(-1, "")
    assert result["seen"] == []  # rayon's own threads (unnamed), no pool of the call, no ticker
    assert isinstance(result["most"], int) and result["most"] >= 1
