"""The pure-Python fallback imports and answers: every module of the package loads with
``MEMDEDUP_IMPLEMENTATION=python`` and a few calls through the public API give their known answers. The
reference's parity with the contracts is tests/test_parity_core.py's ``python`` run (the extended profile);
this is the quick check that nothing the fallback needs is missing (CI's fallback step runs it in a
process on the fallback, and the default profile runs it in a child)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

SMOKE = textwrap.dedent(
    """
    import importlib, math, pkgutil
    import memdedup
    from memdedup import _backend, batch, difflib, scrub
    from memdedup.index import LabelIndex

    assert memdedup.IMPLEMENTATION == "python" and _backend.impl.__name__ == "memdedup._reference"
    for info in pkgutil.walk_packages(memdedup.__path__, "memdedup."):
        skip = ("memdedup._core", "memdedup.__main__", "memdedup.integrations.symfonic_shadow")
        if info.name not in skip and ".bootstrap" not in info.name:
            importlib.import_module(info.name)
    assert memdedup.ratio("uses pytest and ruff", "uses pytest & ruff") == 0.8947368421052632  # difflib's
    assert memdedup.labels_match("Uses pytest and ruff.", "uses pytest and ruff for Python projects")
    reason = memdedup.match_reason("Prefers dark mode", "prefers dark mode in every editor")
    assert reason == ("containment", 0.68)
    assert batch.replay(["Uses pytest and ruff.", float("nan"), "Uses pytest and ruff"]).reason == [
        "new", "empty", "ratio"]
    assert batch.join(["dark mode please", "Dark mode please.", "tea"]).tolist() == [[0, 1]]
    assert batch.clusters(["dark mode please", "Dark mode please.", "tea"]).canonical.tolist() == [0, 0, 2]
    assert batch.extractOne("dark mode", ["Prefers dark mode", "likes tea"])[2] == 0
    index = LabelIndex()
    index.insert("User prefers dark mode", "n1", scope="dana")
    assert [m.id for m in index.query("Prefers dark mode", scope="dana")] == ["n1"]
    sm = difflib.SequenceMatcher(None, "abcd", "bcde")
    assert sm.ratio() == 0.75 and difflib.get_close_matches("appel", ["ape", "apple"]) == ["apple", "ape"]
    assert "AKIA" not in scrub.redact("key AKIAIOSFODNN7EXAMPLE here")
    print("fallback ok")
    """
)


def test_the_fallback_imports_and_answers() -> None:
    env = dict(os.environ, MEMDEDUP_IMPLEMENTATION="python")
    done = subprocess.run([sys.executable, "-c", SMOKE], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "fallback ok", done.stdout + done.stderr
