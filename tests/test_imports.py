"""The package's import graph: no circle, and the leaves import nothing of the package but errors.

A circle (``_backend`` -> ``_reference`` -> ``guards`` -> ``index`` -> ``batch`` -> ``guards`` once) makes
import order matter and lets the oracle depend on what it checks. The graph is read from the source
(every ``import``, at module level, inside functions and under ``TYPE_CHECKING`` alike), so a deferred
import cannot hide a circle.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import memdedup
import pytest

PACKAGE = Path(memdedup.__file__).resolve().parent

#: Modules that shared rules may live in: each imports nothing of the package but ``memdedup.errors``.
LEAVES = ["errors", "_rules", "guards", "missing", "scope", "progress", "inputs"]


def _modules() -> dict[str, Path]:
    found = {"memdedup._core": PACKAGE / "_core.pyi"}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports anywhere in its source (the package itself for a name
    that is not a module, e.g. ``from memdedup import __version__``)."""
    modules = _modules()

    def owner(name: str) -> str:
        while name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        if path.suffix != ".py":
            graph[name] = set()
            continue
        is_package = path.name == "__init__.py"
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                edges |= {owner(a.name) for a in node.names if a.name.split(".")[0] == "memdedup"}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    here = name.split(".") if is_package else name.split(".")[:-1]
                    base = ".".join(here[: len(here) - node.level + 1] + ([base] if base else []))
                if base.split(".")[0] != "memdedup":
                    continue
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    edges.add(full if full in modules else owner(base))
        edges.discard(name)
        graph[name] = edges
    return graph


def find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle (its modules in order, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def test_the_circle_finder_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_circle(graph) == ["a", "b", "c", "a"]
    assert find_circle({"a": {"b"}, "b": set()}) is None


def test_the_graph_sees_function_level_and_relative_imports() -> None:
    graph = import_graph()
    assert "memdedup._core" in graph["memdedup._backend"]  # imported inside a function
    assert "memdedup._reference" in graph["memdedup._backend"]
    assert "memdedup.batch._join" in graph["memdedup.batch._clusters"]


def test_no_import_circle_in_the_package() -> None:
    circle = find_circle(import_graph())
    assert circle is None, "import circle: " + " -> ".join(circle or [])


def test_the_oracle_imports_nothing_it_checks() -> None:
    """``_reference`` is the oracle of the core and of the guards the core applies (``memdedup.guards``):
    it imports only the shared rules and leaves it is not the oracle for."""
    allowed = {"memdedup._rules", "memdedup.errors", "memdedup.missing", "memdedup.scope"}
    assert import_graph()["memdedup._reference"] <= allowed


@pytest.mark.parametrize("leaf", LEAVES)
def test_a_leaf_pulls_in_no_other_module_of_the_package(leaf: str) -> None:
    """Imported in a fresh interpreter (the package's ``__init__`` stubbed, so only the leaf's own imports
    run), the leaf loads no module of the package but ``memdedup.errors``."""
    code = (
        "import importlib, json, sys, types\n"
        "package = types.ModuleType('memdedup')\n"
        f"package.__path__ = [{str(PACKAGE)!r}]\n"
        "sys.modules['memdedup'] = package\n"
        f"importlib.import_module('memdedup.{leaf}')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('memdedup.'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout))
    assert loaded - {f"memdedup.{leaf}", "memdedup.errors"} == set()
    assert f"memdedup.{leaf}" in loaded
