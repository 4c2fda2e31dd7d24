"""docs/cli-reference.md from the parser itself: ``memdedup --help`` and every subcommand's ``--help``.

    python scripts/cli_reference.py            # print it
    python scripts/cli_reference.py --write    # regenerate docs/cli-reference.md (after changing an option)
    python scripts/cli_reference.py --check    # exit 1 with a diff when the file is out of date

Every subcommand in ``memdedup.cli._SUBCOMMANDS`` is listed, so a new subcommand needs no change here.
Help is formatted for 100 columns (argparse wraps to ``COLUMNS``), whatever the terminal.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from pathlib import Path

TARGET = Path(__file__).resolve().parents[1] / "docs" / "cli-reference.md"

HEADER = """\
# `memdedup` command reference

<!-- Generated from the parser by `python scripts/cli_reference.py --write`: do not edit by hand.
     `make lint` and tests/test_docs.py check that it is current. -->

Every option of every subcommand, with its default, as `memdedup COMMAND --help` prints it.
[cli.md](cli.md) says how the commands read and write files, what their summaries mean and how they exit.
"""


def reference() -> str:
    os.environ["COLUMNS"] = "100"
    from memdedup.cli import build_parser

    parser = build_parser()
    parts = [HEADER, "## `memdedup`\n", "```text\n" + parser.format_help().rstrip() + "\n```\n"]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                parts.append(f"## `memdedup {name}`\n")
                parts.append("```text\n" + sub.format_help().rstrip() + "\n```\n")
    return "\n".join(parts)


def main(argv: list[str]) -> int:
    text = reference()
    if "--write" in argv:
        TARGET.write_text(text, encoding="utf-8")
        print(f"wrote {TARGET}")
        return 0
    if "--check" in argv:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if current == text:
            return 0
        sys.stdout.writelines(
            difflib.unified_diff(
                current.splitlines(keepends=True),
                text.splitlines(keepends=True),
                "docs/cli-reference.md",
                "the parser's --help",
            )
        )
        print("docs/cli-reference.md is out of date: run python scripts/cli_reference.py --write")
        return 1
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
