"""The code blocks of README.md and docs/*.md, read and run as docs/doc-examples.md says.

Every fenced block is one of:

* ```console: ``$ `` lines are commands (a line ending in ``\\`` continues on the next); the lines after
  a command, up to the next ``$ `` line, are what it prints (its stdout, then its stderr). A line ``...``
  stands for any lines (none included), ``...`` inside a line for any text, and a last line ``[N]``
  for exit status N (else the status must be 0). Commands run in order, in a scratch folder holding a
  copy of ``examples/``; ``memdedup`` (or ``python -m memdedup``) runs in this process
  (``memdedup.cli.main``), the other stages of a pipeline (``| sed ...``, ``printf ... |``) in ``bash``.
* ```python: with ``>>>`` lines, a doctest (ELLIPSIS and NORMALIZE_WHITESPACE); without, a script that
  must run without an error. The python blocks of one file share one namespace, in order.
* ```text: no code (a tree, a table, a sample of output); a ``$ `` or ``>>> `` line in one is an error.
* anything else (```bash, a fence without a language): a block that is not run, which must say so
  right before it: ``<!-- not run: WHY -->``. A console or python block can say so too.

``<!-- slow: WHY -->`` right before a console or python block runs it in the extended profile only
(``@pytest.mark.slow``), on its own: its commands in ``bash``, a script in a child ``python``.

Every block is checked even when it is not run: each ``memdedup`` command in it is parsed by the real
argument parser (its options must exist), a ``python PATH`` or ``bash PATH`` names a file that exists,
and Python compiles.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli_support import ROOT, env, run_here

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUN_LANGUAGES = ("console", "python")
_FENCE = re.compile(r"^(```+|~~~+)\s*([\w+-]*)\s*$")
_MARKER = re.compile(r"^<!--\s*(not run|slow):\s*(.+?)\s*-->$")
_STATUS = re.compile(r"^\[(\d+)\]$")
_OPERATORS = {"|", "||", "&&", ";", "&"}


@dataclass(frozen=True)
class Block:
    """One fenced block: its file (relative to the repository), the line of its opening fence, its
    language, its text, and its marker (``("not run" | "slow", why)``) or None."""

    path: str
    line: int
    language: str
    text: str
    marker: tuple[str, str] | None

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def kind(self) -> str:
        """``console``, ``doctest``, ``script``, ``text`` or ``listing`` (a block that is not run)."""
        if self.language == "text":
            return "text"
        if self.language not in RUN_LANGUAGES or (self.marker and self.marker[0] == "not run"):
            return "listing"
        if self.language == "console":
            return "console"
        return "doctest" if any(line.startswith(">>> ") for line in self.text.splitlines()) else "script"

    @property
    def slow(self) -> bool:
        return self.marker is not None and self.marker[0] == "slow"


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, with the marker in the HTML comment lines right before
    each (blank lines between are allowed)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    k = 0
    while k < len(lines):
        opened = _FENCE.match(lines[k])
        if not opened:
            k += 1
            continue
        fence, language = opened.group(1), opened.group(2)
        end = k + 1
        while end < len(lines) and not lines[end].startswith(fence[0] * len(fence)):
            end += 1
        marker = None
        back = k - 1
        while back >= 0 and (not lines[back].strip() or lines[back].lstrip().startswith("<!--")):
            found = _MARKER.match(lines[back].strip())
            if found:
                marker = (found.group(1), found.group(2))
                break
            back -= 1
        rel = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
        out.append(Block(rel, k + 1, language, "\n".join(lines[k + 1 : end]), marker))
        k = end + 1
    return out


def problems(block: Block) -> list[str]:
    """What makes a block unclassifiable: a listing with no marker, a text block holding commands, a
    console block without a command, a marker that says nothing."""
    found = []
    if block.marker is not None and len(block.marker[1]) < 8:
        found.append(f"{block.where}: say why in the marker ({block.marker[0]}: {block.marker[1]!r})")
    if block.kind == "listing" and (block.marker is None or block.marker[0] != "not run"):
        what = f"```{block.language}" if block.language else "a fence with no language"
        found.append(
            f"{block.where}: {what} is not run: make it ```console, ```python or ```text, or mark it "
            "with <!-- not run: WHY --> right before it"
        )
    if block.kind == "text" and any(line.startswith(("$ ", ">>> ")) for line in block.text.splitlines()):
        found.append(f"{block.where}: a ```text block holds a command or a prompt: make it console/python")
    if block.language == "console" and not any(line.startswith("$ ") for line in block.text.splitlines()):
        found.append(f"{block.where}: a ```console block without a '$ ' command")
    if block.marker is not None and block.marker[0] == "slow" and block.kind not in ("console", "script"):
        found.append(f"{block.where}: only console blocks and python scripts can be marked slow")
    return found


# ---------------------------------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Command:
    """A ``$ `` command of a console block, what it should print and its exit status."""

    line: int
    text: str
    expected: list[str]
    status: int


def commands(block: Block) -> list[Command]:
    """The commands of a console block (or every line of a listing), with their expected output."""
    lines = block.text.splitlines()
    out: list[Command] = []
    k = 0
    console = block.language == "console"
    while k < len(lines):
        line = lines[k]
        if console and not line.startswith("$ "):
            k += 1
            continue
        start = k
        text = line[2:] if console else line
        while text.endswith("\\") and k + 1 < len(lines):
            k += 1
            text = text[:-1] + " " + re.sub(r"^> ", "", lines[k]).strip()
        k += 1
        expected: list[str] = []
        while console and k < len(lines) and not lines[k].startswith("$ "):
            expected.append(lines[k])
            k += 1
        status = 0
        while expected and not expected[-1].strip():
            expected.pop()
        if expected and _STATUS.match(expected[-1].strip()):
            status = int(expected.pop().strip()[1:-1])
        if text.strip() and not text.lstrip().startswith("#"):
            out.append(Command(block.line + 1 + start, text, expected, status))
    return out


def stages(text: str) -> list[list[str]]:
    """A shell line's simple commands (split at ``|``, ``||``, ``&&``, ``;``, ``&`` written apart), each
    without its redirections; comments dropped."""
    try:
        words = shlex.split(text, comments=True)
    except ValueError:  # an unbalanced quote: the parser will say what is wrong with the rest
        words = text.split()
    out: list[list[str]] = [[]]
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word in _OPERATORS:
            out.append([])
        elif re.fullmatch(r"\d?(>>?|<|&>)(&\d)?", word):  # the target is the next word, unless &N
            skip = "&" not in word[1:] or word == "&>"
        elif re.fullmatch(r"\d?(>>?|<|&>)\S+", word):  # the target written with it
            continue
        else:
            out[-1].append(word)
    return [stage for stage in out if stage]


def memdedup_args(stage: list[str]) -> list[str] | None:
    """The arguments of a ``memdedup ...`` or ``python -m memdedup ...`` stage, else None."""
    if stage and stage[0] == "memdedup":
        return stage[1:]
    if len(stage) >= 3 and re.fullmatch(r"python3?", stage[0]) and stage[1:3] == ["-m", "memdedup"]:
        return stage[3:]
    return None


def check_statically(block: Block) -> list[str]:
    """Parse every memdedup command with the real parser; check that scripts named exist; compile
    Python. The messages of what fails."""
    from memdedup.cli import build_parser

    found = []
    if block.language == "python":
        source = "\n".join(
            re.sub(r"^(>>> |\.\.\. ?)", "", line)
            for line in block.text.splitlines()
            if line.startswith((">>> ", "...")) or block.kind != "doctest"
        )
        try:
            compile(source, block.where, "exec")
        except SyntaxError as exc:
            found.append(f"{block.where}: Python does not compile: {exc}")
        return found
    if block.language not in ("console", "bash", "sh", "shell", ""):
        return found
    for command in commands(block):
        for stage in stages(command.text):
            args = memdedup_args(stage)
            if args is not None:
                parser = build_parser()
                err = io.StringIO()
                try:
                    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                        parser.parse_args(args)
                except SystemExit as stop:
                    if stop.code not in (0, None):
                        last = err.getvalue().strip().splitlines()[-1:]
                        found.append(f"{block.where}: line {command.line}: {command.text!r}: {last}")
            elif len(stage) >= 2 and stage[0] in ("python", "python3", "bash"):
                if stage[1].endswith((".py", ".sh")) and not (ROOT / stage[1]).is_file():
                    found.append(f"{block.where}: line {command.line}: no such file {stage[1]!r}")
    return found


# ---------------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------------
def scratch(folder: Path) -> Path:
    """A folder to run examples in: a copy of ``examples/``."""
    shutil.copytree(ROOT / "examples", folder / "examples")
    return folder


def _shell_env() -> dict[str, str]:
    out = env(COLUMNS="100")
    bin_dir = str(Path(sys.executable).parent)
    out["PATH"] = os.pathsep.join([bin_dir, out.get("PATH", "")])
    return out


def _bash(text: str, cwd: Path, stdin: bytes | None = None) -> tuple[int, bytes, bytes]:
    """``bash -c TEXT`` in ``cwd``; ``memdedup`` there is ``python -m memdedup`` of this interpreter, so
    the package under test runs whatever console script is on PATH."""
    preamble = f'memdedup() {{ {shlex.quote(sys.executable)} -m memdedup "$@"; }}\n'
    done = subprocess.run(
        ["bash", "-c", preamble + text],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        cwd=cwd,
        env=_shell_env(),
        timeout=600,
    )
    return done.returncode, done.stdout, done.stderr


@contextlib.contextmanager
def _inside(cwd: Path) -> Iterator[None]:
    """Run in ``cwd`` with ``COLUMNS=100`` (argparse wraps help to it), as a terminal of that width."""
    before, columns = os.getcwd(), os.environ.get("COLUMNS")
    os.chdir(cwd)
    os.environ["COLUMNS"] = "100"
    try:
        yield
    finally:
        os.chdir(before)
        if columns is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = columns


def run_command(command: Command, cwd: Path, *, in_process: bool = True) -> tuple[int, str]:
    """Run a console command in ``cwd``: ``(status, stdout then stderr)``. A pipeline with one memdedup
    stage runs it here and the stages before and after it in bash; anything else runs in bash."""
    text = command.text
    simple = in_process and not re.search(r"&&|\|\||;|`|\$\(|2>|&>|<", text)
    pieces = _split_pipes(text) if simple else [text]
    mine = [k for k, piece in enumerate(pieces) if _memdedup_piece(piece) is not None]
    if not simple or len(mine) != 1:
        status, out, err = _bash(text, cwd)
        return status, (out + err).decode("utf-8", errors="replace")
    k = mine[0]
    before, piece, after = pieces[:k], pieces[k], pieces[k + 1 :]
    args, target = _memdedup_piece(piece) or ([], None)
    errs = b""
    stdin = None
    if before:
        _, stdin, err = _bash(" | ".join(before), cwd)
        errs += err
    with _inside(cwd):
        result = run_here(*args, input=stdin)
    out, status = result.out_bytes, result.status
    errs = result.err.encode() + errs
    if target is not None:
        (cwd / target).write_bytes(out)
        out = b""
    if after:
        status, out, err = _bash(" | ".join(after), cwd, stdin=out)
        errs += err
    return status, (out + errs).decode("utf-8", errors="replace")


def _split_pipes(text: str) -> list[str]:
    """A pipeline's stages as text, split at the ``|`` outside quotes."""
    pieces, current, quote = [], [], ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "|":
            pieces.append("".join(current).strip())
            current = []
            continue
        current.append(ch)
    pieces.append("".join(current).strip())
    return pieces


def _memdedup_piece(piece: str) -> tuple[list[str], str | None] | None:
    """A pipeline stage that is memdedup: its arguments and the file a final ``> FILE`` names."""
    words = shlex.split(piece, comments=True)
    target = None
    if len(words) >= 2 and words[-2] == ">":
        words, target = words[:-2], words[-1]
    if any(w in (">", ">>") or w.startswith(">") for w in words):
        return None
    args = memdedup_args(words)
    return None if args is None else (args, target)


def matches(expected: list[str], actual: str) -> bool:
    """Whether ``actual`` is what ``expected`` shows: lines compared without trailing spaces, ``...``
    alone for any lines, ``...`` in a line for any text; trailing blank lines ignored."""
    lines = [line.rstrip() for line in actual.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    pattern = []
    for line in expected:
        if line.strip() == "...":
            pattern.append(r"(?:[^\n]*\n)*?")
        else:
            parts = [re.escape(part) for part in line.rstrip().split("...")]
            pattern.append("[^\\n]*?".join(parts) + "\\n")
    return re.fullmatch("".join(pattern), "".join(line + "\n" for line in lines)) is not None


def run_console(block: Block, cwd: Path, *, in_process: bool = True) -> list[str]:
    """Run a console block's commands in order; a message for each whose output or status differs."""
    found = []
    for command in commands(block):
        status, output = run_command(command, cwd, in_process=in_process)
        if status != command.status or not matches(command.expected, output):
            shown = "\n".join(f"    {line}" for line in output.rstrip().splitlines())
            found.append(
                f"{block.where}: line {command.line}: $ {command.text}\n  exit {status} (expected "
                f"{command.status}); it printed:\n{shown}"
            )
    return found


def run_python(block: Block, cwd: Path, namespace: dict[str, Any]) -> list[str]:
    """Run a python block in ``namespace`` (a doctest, or a script that must not raise)."""
    with _inside(cwd):
        if block.kind == "doctest":
            parser = doctest.DocTestParser()
            test = parser.get_doctest(block.text, namespace, block.where, block.path, block.line)
            report = io.StringIO()
            runner = doctest.DocTestRunner(
                optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
            )
            runner.run(test, out=report.write, clear_globs=False)
            return [report.getvalue()] if runner.failures else []
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):
                exec(compile(block.text, block.where, "exec"), namespace)
        except Exception as exc:
            return [f"{block.where}: {type(exc).__name__}: {exc}\n{printed.getvalue()[-2000:]}"]
    return []


def run_python_child(block: Block, cwd: Path) -> list[str]:
    """Run a python script block as a file in a child ``python`` (a slow block: it may change the
    process, or start processes that import the main module, as Dask's workers do)."""
    script = cwd / "example.py"
    script.write_text(block.text + "\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        cwd=cwd,
        env=_shell_env(),
        timeout=600,
    )
    if done.returncode != 0:
        return [f"{block.where}: exit {done.returncode}\n{done.stderr.decode(errors='replace')[-3000:]}"]
    return []
