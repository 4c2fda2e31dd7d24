#!/usr/bin/env python3
"""Run symfonic-core 9.12.0's own test suite twice, without and with memdedup installed into it, and
fail unless memdedup changed nothing but speed.

1. Downloads the ``symfonic-core==9.12.0`` sdist from the package index (it ships ``tests/``), checked
   against a pinned SHA-256, and checks that the installed symfonic-core's modules memdedup rebinds are
   byte for byte the sdist's.
2. Makes a virtual environment over this interpreter's packages (``--system-site-packages``: the
   installed memdedup and symfonic-core) and installs the test-only dependencies at exact versions,
   without their dependencies (:data:`TEST_PINS`); nothing else is installed anywhere.
3. Runs the suite (all of it by default; ``--select reaching`` runs only the files that reach memdedup)
   with ``-p memdedup.integrations.symfonic_shadow``, which installs memdedup when pytest starts, counts
   every call into memdedup and compares each answer with symfonic's untouched function and the standard
   difflib; then runs it as is, without memdedup: by default (``--baseline affected``) only the tests
   whose outcome memdedup could have changed, every test that reached memdedup and every test that did
   not pass with it installed (a test that never called memdedup and passed has nothing to compare);
   ``--baseline all`` runs the whole selection again.
4. Fails (exit 1) when any compared test's outcome differs between the two runs, when memdedup was never
   called, or when any answer differed from symfonic's; exit 2 when it cannot set up.
5. With ``--stateful-examples N``, then runs symfonic's memory-invariant state machine (which pins 25
   examples) with N examples, shadowed: it must pass with no answer differing.

Usage: ``python scripts/symfonic-suite.py [--work DIR] [--select all|reaching] [--baseline affected|all]
[--stateful-examples N]``. The
work folder (default ``target/symfonic-suite``) keeps the download and the environment between runs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import site
import subprocess
import sys
import tarfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VERSION = "9.12.0"
SDIST = f"symfonic_core-{VERSION}.tar.gz"
SDIST_SHA256 = "c717db2f8d98658dce2ae7c5b1bd99a4191e955b1e08867a5885acf76ae2a55b"
#: What symfonic-core's tests need beyond symfonic-core and memdedup themselves (its ``testing`` extra
#: and the FastAPI stack the janitor endpoint tests import), exact versions, installed without their
#: dependencies so that nothing unpinned comes in.
TEST_PINS = [
    "pytest==9.2.0",
    "pytest-asyncio==1.4.0",
    "hypothesis==6.170.17",
    "fastapi==0.163.2",
    "starlette==1.10.0",
    "annotated-doc==0.0.7",
    "opentelemetry-api==1.45.2",
]
#: The modules memdedup rebinds: the installed ones must be the sdist's, byte for byte.
REBOUND_FILES = [
    "symfonic/memory/dedup.py",
    "symfonic/agent/engine.py",
    "symfonic/core/learning/phases_semantic_merge.py",
    "symfonic/core/learning/_phases_entity_helpers.py",
    "symfonic/memory/janitor.py",
]
STATEFUL = "tests/memory/test_memory_invariants_stateful.py"
#: ``--select reaching``: the files of the 81 tests in which memdedup was called in a full run (the
#: shadow report of a full run, ``with.json``, lists them).
REACHING = [
    "tests/agent/test_consolidate_dedup.py",
    "tests/agent/test_consolidation_e2e.py",
    "tests/agent/test_janitor.py",
    "tests/agent/test_memory_retraction.py",
    "tests/agent/test_rich_hydration.py",
    "tests/agent/test_self_reflection_commits_e2e.py",
    "tests/core/learning/test_phase_12_telemetry.py",
    "tests/core/learning/test_phase_13_entity_links.py",
    "tests/core/learning/test_phases_procedural_promotion.py",
    "tests/core/learning/test_semantic_merge_phase.py",
    "tests/core/test_scope_no_self_deprecation.py",
    "tests/memory/layers/test_seed_authored_skill.py",
    "tests/memory/test_janitor_dedup_all_round2.py",
    "tests/memory/test_janitor_scope_isolation_round2.py",
    "tests/memory/test_memory_invariants_stateful.py",
    "tests/memory/test_restatement_corpus.py",
    "tests/memory/test_semantic_writer_contracts.py",
    "tests/security/test_credential_hygiene.py",
    "tests/tools/test_learning_scope_roundtrip.py",
    "tests/unit/learning/test_learning.py",
    "tests/unit/learning/test_learning_dedup.py",
]


class SetupError(Exception):
    pass


def say(message: str) -> None:
    print(f"symfonic-suite: {message}", flush=True)


def run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, text=True, capture_output=True, **kwargs)  # type: ignore[call-overload,no-any-return]


def fetch_sdist(work: Path) -> Path:
    dist = work / "dist"
    path = dist / SDIST
    if not path.exists():
        dist.mkdir(parents=True, exist_ok=True)
        say(f"downloading the symfonic-core=={VERSION} sdist")
        proc = run(
            [sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps", "-q",
             "-d", str(dist), f"symfonic-core=={VERSION}"]
        )  # fmt: skip
        if proc.returncode != 0 or not path.exists():
            raise SetupError(f"pip download failed:\n{proc.stdout}{proc.stderr}")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != SDIST_SHA256:
        path.unlink()
        raise SetupError(f"{SDIST} has SHA-256 {digest}, not the pinned {SDIST_SHA256}")
    src = work / f"symfonic_core-{VERSION}"
    if not (src / "tests").is_dir():
        shutil.rmtree(src, ignore_errors=True)
        with tarfile.open(path) as tar:
            tar.extractall(work, filter="data")
    return src


def make_env(work: Path) -> Path:
    venv = work / "venv"
    python = venv / "bin" / "python"
    stamp = venv / "pins.json"
    if python.exists() and stamp.exists() and json.loads(stamp.read_text()) == TEST_PINS:
        see_parent_site(python)
        return python
    shutil.rmtree(venv, ignore_errors=True)
    say("creating the test environment")
    proc = run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)])
    if proc.returncode != 0:
        raise SetupError(f"venv failed:\n{proc.stderr}")
    proc = run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check", *TEST_PINS]
    )
    if proc.returncode != 0:
        raise SetupError(f"pip install {' '.join(TEST_PINS)} failed:\n{proc.stdout}{proc.stderr}")
    stamp.write_text(json.dumps(TEST_PINS))
    see_parent_site(python)
    return python


def see_parent_site(python: Path) -> None:
    """Run from inside a virtual environment, ``--system-site-packages`` reaches the base interpreter's
    packages, not this environment's (where memdedup is installed): a .pth file adds this interpreter's
    own site-packages after the test environment's."""
    proc = run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    site_dir = Path(proc.stdout.strip())
    (site_dir / "_memdedup_parent_site.pth").write_text("\n".join(site.getsitepackages()) + "\n")


def check_env(python: Path, src: Path) -> None:
    """symfonic-core 9.12.0 as the sdist has it, memdedup importable, the pins' requirements met."""
    code = (
        "import importlib.metadata as m, json, memdedup, symfonic.memory.dedup as d, pathlib;"
        "print(json.dumps([m.version('symfonic-core'), str(pathlib.Path(d.__file__).parents[2]),"
        " memdedup.__file__, memdedup.IMPLEMENTATION]))"
    )
    proc = run([str(python), "-c", code])
    if proc.returncode != 0:
        raise SetupError(f"symfonic-core or memdedup is not importable:\n{proc.stderr}")
    version, site, memdedup_file, implementation = json.loads(proc.stdout)
    if version != VERSION:
        raise SetupError(
            f"symfonic-core {version} is installed, not {VERSION} (pip install symfonic-core=={VERSION})"
        )
    for rel in REBOUND_FILES:
        if (Path(site) / rel).read_bytes() != (src / "src" / rel).read_bytes():
            raise SetupError(f"the installed {rel} is not the sdist's")
    say(f"memdedup from {memdedup_file} ({implementation} backend); symfonic-core {version} from {site}")
    proc = run([str(python), "-m", "pip", "check"])
    names = {pin.split("==")[0] for pin in TEST_PINS} | {"symfonic-core", "memdedup"}
    broken = [line for line in proc.stdout.splitlines() if line.split(" ")[0].lower() in names]
    if broken:
        raise SetupError("unmet requirements of the pinned test dependencies:\n" + "\n".join(broken))


def outcomes(junit: Path) -> dict[str, str]:
    """Test id -> passed / failed / error / skipped, from a JUnit XML report."""
    out: dict[str, str] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        kind = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                kind = {"failure": "failed"}.get(child.tag, child.tag)
                break
        if name in out and out[name] != kind:  # a test reported twice (setup and teardown errors)
            kind = f"{out[name]}+{kind}"
        out[name] = kind
    return out


def pytest_run(
    python: Path,
    src: Path,
    work: Path,
    tag: str,
    tests: list[str],
    shadow: bool,
    stateful_examples: int = 0,
    keep: set[str] | None = None,
) -> tuple[dict[str, str], float, str]:
    junit = work / f"{tag}.xml"
    junit.unlink(missing_ok=True)
    cmd = [
        str(python), "-m", "pytest", *tests,
        "-p", "no:cacheprovider", "-o", "addopts=", "-m", "not live_llm", "-q", "--tb=line",
        "--continue-on-collection-errors", f"--junitxml={junit}",
    ]  # fmt: skip
    env = dict(os.environ)
    env.pop("MEMDEDUP_INSTALL_SYMFONIC", None)
    env["PYTHONHASHSEED"] = "0"
    if shadow:
        cmd[3:3] = ["-p", "memdedup.integrations.symfonic_shadow"]
        env["MEMDEDUP_SHADOW_REPORT"] = str(work / f"{tag}.json")
    if stateful_examples:
        env["MEMDEDUP_SHADOW_STATEFUL_EXAMPLES"] = str(stateful_examples)
    if keep is not None:
        (work / "keep_plugin.py").write_text(KEEP_PLUGIN, encoding="utf-8")
        (work / f"{tag}.keep").write_text("\n".join(sorted(keep)) + "\n", encoding="utf-8")
        cmd[3:3] = ["-p", "keep_plugin"]
        env["MEMDEDUP_SUITE_KEEP"] = str(work / f"{tag}.keep")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(work), env.get("PYTHONPATH")]))
    started = time.perf_counter()
    with open(work / f"{tag}.log", "w", encoding="utf-8") as log:
        proc = subprocess.run(cmd, cwd=src, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    elapsed = time.perf_counter() - started
    lines = (work / f"{tag}.log").read_text(encoding="utf-8", errors="replace").splitlines()
    summary = next((line for line in reversed(lines) if line.startswith("=") or " in " in line), "")
    if not junit.exists():
        raise SetupError(f"pytest wrote no report ({tag}, exit {proc.returncode}); see {work / f'{tag}.log'}")
    return outcomes(junit), elapsed, summary.strip("= ")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--work",
        type=Path,
        default=Path(os.environ.get("MEMDEDUP_SYMFONIC_SUITE_DIR", REPO / "target" / "symfonic-suite")),
    )
    parser.add_argument("--select", choices=["all", "reaching"], default="all")
    parser.add_argument(
        "--baseline",
        choices=["affected", "all"],
        default="affected",
        help="run without memdedup only the tests whose outcome it could change (default), or all again",
    )
    parser.add_argument(
        "--stateful-examples",
        type=int,
        default=0,
        help="then run symfonic's memory-invariant state machine with this many examples, shadowed",
    )
    args = parser.parse_args()
    work: Path = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        src = fetch_sdist(work)
        python = make_env(work)
        check_env(python, src)
        tests = ["tests"] if args.select == "all" else REACHING
        ours, ours_time, ours_summary = pytest_run(python, src, work, "with", tests, shadow=True)
        say(f"with memdedup installed: {ours_summary} ({ours_time:.0f} s)")
        keep = None if args.baseline == "all" else affected_tests(work / "with.json", ours)
        base, base_time, base_summary = pytest_run(
            python, src, work, "without", tests, shadow=False, keep=keep
        )
        which = "every test" if keep is None else f"the {len(keep)} tests memdedup could have changed"
        say(f"without memdedup, {which}: {base_summary} ({base_time:.0f} s)")
    except SetupError as exc:
        say(f"cannot run: {exc}")
        return 2

    failed = False
    # Compared: every test run again, and every test that did not pass with memdedup.
    compared = base.keys() | {t for t, kind in ours.items() if kind != "passed"}
    differing = sorted(t for t in compared if base.get(t) != ours.get(t))
    if differing:
        failed = True
        say(f"{len(differing)} tests' outcomes differ (without -> with memdedup):")
        for test in differing[:50]:
            say(f"  {test}: {base.get(test, 'absent')} -> {ours.get(test, 'absent')}")
    failed |= not check_report(
        work / "with.json",
        f"{len(ours)} test ids, {len(compared)} compared without memdedup, "
        f"{len(differing)} outcome differences",
    )
    if args.stateful_examples:
        try:
            stress, stress_time, stress_summary = pytest_run(
                python,
                src,
                work,
                "stateful",
                [STATEFUL],
                shadow=True,
                stateful_examples=args.stateful_examples,
            )
        except SetupError as exc:
            say(f"cannot run: {exc}")
            return 2
        say(f"{STATEFUL} at {args.stateful_examples} examples: {stress_summary} ({stress_time:.0f} s)")
        if any(kind != "passed" for kind in stress.values()):
            failed = True
            say("the state machine did not pass with memdedup installed")
        failed |= not check_report(work / "stateful.json", "state machine")
    say(f"{'FAILED' if failed else 'ok'}; {time.perf_counter() - started:.0f} s in all")
    return 1 if failed else 0


#: A pytest plugin for the run without memdedup: it collects the whole suite as usual (so every module
#: and folder skipped or failing at collection is reported as in the first run) and runs only the tests
#: named in the file ``MEMDEDUP_SUITE_KEEP`` gives, by node id or by JUnit id (``classname::name``).
KEEP_PLUGIN = """
import os
import re

_KEEP = set(open(os.environ["MEMDEDUP_SUITE_KEEP"], encoding="utf-8").read().splitlines())


def _junit_id(nodeid):
    names = nodeid.split("::")
    names[0] = re.sub(r"\\.py$", "", names[0].replace("/", "."))
    names = [n for n in names if n != "()"]
    return ".".join(names[:-1]) + "::" + names[-1]


def pytest_collection_modifyitems(config, items):
    kept = [i for i in items if i.nodeid in _KEEP or _junit_id(i.nodeid) in _KEEP]
    dropped = [i for i in items if not (i.nodeid in _KEEP or _junit_id(i.nodeid) in _KEEP)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept
"""


def affected_tests(report: Path, outcomes_with: dict[str, str]) -> set[str]:
    """The tests whose outcome memdedup could have changed: those that reached memdedup (the shadow
    report, by node id) and those that did not pass with it installed (by JUnit id)."""
    keep = {t for t, kind in outcomes_with.items() if kind != "passed"}
    if report.exists():
        keep |= set(json.loads(report.read_text())["tests_reaching_memdedup"])
    return keep


def check_report(path: Path, what: str) -> bool:
    """Print a shadow report's counts; False on no report, no call, or any differing answer."""
    if not path.exists():
        say(f"the shadow plugin wrote no report ({path.name})")
        return False
    report = json.loads(path.read_text())
    ok = True
    if report["total_calls"] == 0:
        ok = False
        say("memdedup was never called: the swap did not happen")
    if report["mismatches"]:
        ok = False
        say(f"{len(report['mismatches'])} answers differ from symfonic's:")
        for m in report["mismatches"][:50]:
            say(f"  {m['key']} in {m['test']}: memdedup {m['ours']} != symfonic {m['theirs']} ({m['args']})")
    say(
        f"{what}: {len(report['tests_reaching_memdedup'])} tests reached memdedup with "
        f"{report['total_calls']} calls; {len(report['mismatches'])} shadow mismatches"
    )
    for key, count in report["calls"].items():
        say(f"  {count:8d}  {key}")
    return ok


if __name__ == "__main__":
    sys.exit(main())
