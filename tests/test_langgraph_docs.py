"""docs/langgraph.md's examples run, in order, as a reader would paste them; the module's docstring
example runs; the benchmark runs end to end on a slice of the bundled sample (in-process: it is a
function call, and only what it prints is checked, never a time)."""

from __future__ import annotations

import contextlib
import doctest
import io
import re
import sys

import cli_support
import memdedup.integrations.langgraph as langgraph_integration

DOC = cli_support.ROOT / "docs" / "langgraph.md"
BENCHES = cli_support.ROOT / "benches"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


def test_the_docs_examples_run_in_order() -> None:
    blocks = python_blocks(DOC.read_text(encoding="utf-8"))
    assert len(blocks) == 3
    namespace: dict[str, object] = {"__name__": "docs_langgraph"}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)


def test_the_module_docstring_example_runs() -> None:
    failed, attempted = doctest.testmod(langgraph_integration, optionflags=doctest.ELLIPSIS)
    assert attempted >= 5 and failed == 0


def test_the_benchmark_runs_and_prints_its_report() -> None:
    sys.path.insert(0, str(BENCHES))
    try:
        import bench_langgraph
    finally:
        sys.path.remove(str(BENCHES))
    out = io.StringIO()
    sample = str(BENCHES / "data" / "labels_sample.txt.gz")
    with contextlib.redirect_stdout(out):
        assert bench_langgraph.main(["--corpus", sample, "--limit", "300", "--searches", "5"]) == 0
    text = out.getvalue()
    assert "300 labels from labels_sample.txt.gz" in text
    for kind in ("memory", "sqlite"):
        assert f"== {kind}: 300 puts" in text
    assert text.count("cost per put:") == 2 and text.count("collapsed:") == 2
    assert text.count("search latency") == 2 and text.count("load average") == 2
