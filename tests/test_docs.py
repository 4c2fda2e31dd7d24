"""Documentation that cannot drift: every example in README.md and docs/*.md runs against what it shows
(tests/doc_examples.py reads them as docs/doc-examples.md says), every docstring example of the package
runs, and docs/cli-reference.md is the parser's own ``--help``.

The default profile runs every console and python block that is not marked slow, in this process; the
slow ones (a Dask cluster, a child interpreter) run in the extended profile."""

from __future__ import annotations

import doctest
import importlib
import importlib.util
from pathlib import Path
from typing import Any

import doc_examples as dx
import pytest
from cli_support import ROOT

ALL = [block for path in dx.DOCS for block in dx.blocks(path)]
RUN = [block for block in ALL if block.kind in ("console", "doctest", "script")]


def test_every_block_is_run_or_says_why_not() -> None:
    found = [problem for block in ALL for problem in dx.problems(block)]
    assert not found, "\n".join(found)
    # The collector sees the documents it should: README's examples and the docs' own.
    assert sum(1 for b in RUN if b.path == "README.md") >= 3
    assert {b.path for b in RUN} >= {"README.md", "docs/cli.md", "docs/scrub.md", "docs/dask.md"}


@pytest.mark.parametrize("path", dx.DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_command_parses_and_every_script_compiles(path: Path) -> None:
    """Blocks that are not run are still checked: memdedup's options exist, scripts exist, Python
    compiles."""
    found = [problem for block in dx.blocks(path) for problem in dx.check_statically(block)]
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    "path",
    [p for p in dx.DOCS if any(b.path == str(p.relative_to(ROOT)) and not b.slow for b in RUN)],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_examples_print_what_they_show(path: Path, tmp_path: Path) -> None:
    """A file's examples in order, in one scratch folder and one Python namespace (a later block may
    use what an earlier one made)."""
    cwd = dx.scratch(tmp_path)
    namespace: dict[str, Any] = {"__name__": "__doc_example__"}
    found: list[str] = []
    for block in dx.blocks(path):
        if block.slow:
            continue
        if block.kind == "console":
            found += dx.run_console(block, cwd)
        elif block.kind in ("doctest", "script"):
            found += dx.run_python(block, cwd, namespace)
    assert not found, "\n\n".join(found)


@pytest.mark.slow
@pytest.mark.parametrize("block", [b for b in RUN if b.slow], ids=lambda b: b.where)
def test_slow_examples_print_what_they_show(block: dx.Block, tmp_path: Path) -> None:
    cwd = dx.scratch(tmp_path)
    if block.kind == "console":
        found = dx.run_console(block, cwd, in_process=False)
    else:
        found = dx.run_python_child(block, cwd)
    assert not found, "\n\n".join(found)


# ---------------------------------------------------------------------------------------------------
# The collector itself: what it accepts and what it refuses
# ---------------------------------------------------------------------------------------------------
def _blocks(tmp_path: Path, text: str) -> list[dx.Block]:
    doc = tmp_path / "doc.md"
    doc.write_text(text)
    return dx.blocks(doc)


def test_the_collector_refuses_what_it_cannot_classify(tmp_path: Path) -> None:
    blocks = _blocks(
        tmp_path,
        "```bash\nmemdedup dedup x.txt\n```\n\n```\nplain\n```\n\n<!-- not run: a listing of shapes -->\n"
        "```bash\nmemdedup dedup x.txt\n```\n\n```text\n$ memdedup tune\n```\n",
    )
    found = [p for b in blocks for p in dx.problems(b)]
    assert len(found) == 3, found
    assert "doc.md:1:" in found[0] and "doc.md:5:" in found[1] and "doc.md:14:" in found[2]


def test_the_collector_finds_a_wrong_output_an_option_that_is_gone_and_a_wrong_status(tmp_path: Path) -> None:
    blocks = _blocks(
        tmp_path,
        "```console\n$ memdedup dedup examples/labels.txt --prefix none\n"
        "memdedup dedup: examples/labels.txt (replay, prefix none, threshold 0.85, min-chars 16)\n"
        "  11 labels: 9 canonical, 2 collapsed in ... s\n...\n```\n\n"
        "```console\n$ memdedup dedup examples/labels.txt --thresold 0.9\n```\n\n"
        "```console\n$ memdedup dedup examples/labels.txt -q --out o.csv\n[2]\n```\n",
    )
    cwd = dx.scratch(tmp_path)
    first = dx.run_console(blocks[0], cwd)
    assert len(first) == 1 and "11 labels: 5 canonical, 6 collapsed" in first[0]
    assert dx.check_statically(blocks[1]) and "--thresold" in dx.check_statically(blocks[1])[0]
    assert dx.run_console(blocks[2], cwd) and "exit 0 (expected 2)" in dx.run_console(blocks[2], cwd)[0]


@pytest.mark.parametrize(
    ("expected", "actual", "same"),
    [
        (["a", "b"], "a\nb\n\n", True),
        (["a", "...", "z"], "a\nb\nc\nz\n", True),
        (["a", "...", "z"], "a\nz\n", True),
        (["took ... s"], "took 0.03 s\n", True),
        (["a", "b"], "a\nc\n", False),
        (["a"], "a\nb\n", False),
        (["a (x)"], "a (x)\n", True),
    ],
)
def test_output_matching(expected: list[str], actual: str, same: bool) -> None:
    assert dx.matches(expected, actual) is same


def test_a_pipeline_runs_memdedup_here_and_the_rest_in_bash(tmp_path: Path) -> None:
    cwd = dx.scratch(tmp_path)
    command = dx.Command(
        1,
        "printf 'a b c d e f g h i j k\\na b c d e f g h i j k\\n' | memdedup dedup - --out - -q | head -n 1",
        [],
        0,
    )
    status, output = dx.run_command(command, cwd)
    assert status == 0 and output.startswith('{"index": 0, "label": "a b c d e f g h i j k"')


# ---------------------------------------------------------------------------------------------------
# Docstring examples of the package
# ---------------------------------------------------------------------------------------------------
def _modules_with_examples() -> list[str]:
    package = ROOT / "python" / "memdedup"
    names = []
    for path in sorted(package.rglob("*.py")):
        if ">>> " in path.read_text(encoding="utf-8"):
            names.append(".".join(path.relative_to(package.parent).with_suffix("").parts))
    return names


@pytest.mark.parametrize("module", _modules_with_examples())
def test_docstring_examples(module: str) -> None:
    found = doctest.testmod(
        importlib.import_module(module), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    assert found.attempted > 0
    assert found.failed == 0


# ---------------------------------------------------------------------------------------------------
# The CLI reference: generated from the parser, and every command has its section
# ---------------------------------------------------------------------------------------------------
def test_cli_reference_is_the_parsers_help(monkeypatch: pytest.MonkeyPatch) -> None:
    """``python scripts/cli_reference.py --check`` (run here, as ``make lint`` runs it)."""
    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "scripts" / "cli_reference.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    monkeypatch.setenv("COLUMNS", "100")
    current = (ROOT / "docs" / "cli-reference.md").read_text(encoding="utf-8")
    assert script.reference() == current, "run: python scripts/cli_reference.py --write"
    assert "--max-records" in current and "--pii" in current and "--scope-column" in current


def test_every_subcommand_has_a_section_and_a_run_example_in_cli_md() -> None:
    from memdedup.cli import build_parser

    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    text = (ROOT / "docs" / "cli.md").read_text()
    ran = " ".join(c.text for b in RUN if b.path == "docs/cli.md" for c in dx.commands(b))
    for name, command in sub.choices.items():
        assert f"## `{name}`" in text, f"docs/cli.md has no section for {name}"
        assert command.description, name
        assert f"memdedup {name}" in ran, f"docs/cli.md runs no example of {name}"
    assert "cli-reference.md" in text
