"""Every public name of the compiled core (``memdedup/_core.pyi``) has a pure-Python twin that the
package falls back to: the same name and call shape in :mod:`memdedup._reference`, or, for the few the
reference does not hold (yet), the named counterpart listed here. A twin that is missing, or that takes
other parameters, is a fallback that breaks only when the extension is absent."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path
from typing import Any

import memdedup
import pytest
from memdedup import _reference

STUB = Path(memdedup.__file__).resolve().parent / "_core.pyi"

#: Core names whose twin is not (yet) in _reference: where the fallback finds it instead.
ELSEWHERE = {
    "close_matches": "difflib:get_close_matches",
    "Codes": "difflib:SequenceMatcher",
    "SequenceIndex": "difflib:SequenceMatcher",
    "scan_secrets": "memdedup._scrub_py:PyDetector",
    "credential_key_kind": "memdedup._scrub_py:PyDetector",
    "credential_key_words": "memdedup._scrub_py:PyDetector",
    "credential_value_kept": "memdedup._scrub_py:PyDetector",
    "secret_rule_widths": "memdedup._scrub_py:PyDetector",
    "credential_key_class": "memdedup._scrub_py:PyDetector",
    "credential_value_random": "memdedup._scrub_py:PyDetector",
    "secret_bits": "memdedup._scrub_py.memory:secret_bits",
    "secret_spans": "memdedup._scrub_py.memory:secret_spans",
}


def stub_names() -> list[str]:
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)]
    return sorted(name for name in names if not name.startswith("_"))


def shape(obj: Any) -> list[tuple[str, Any, Any]]:
    """A callable's parameters without annotations: name, kind and default."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(obj).parameters.values()]


def test_the_stub_lists_the_core_names() -> None:
    assert {"labels_match", "replay", "LabelIndex", "scan_secrets"} <= set(stub_names())


@pytest.mark.parametrize("name", stub_names())
def test_every_core_name_has_a_twin(name: str) -> None:
    if name in ELSEWHERE:
        assert not hasattr(_reference, name), f"_reference.{name} exists now: drop it from ELSEWHERE"
        module, attr = ELSEWHERE[name].split(":")
        assert hasattr(importlib.import_module(module), attr)
        return
    twin = getattr(_reference, name, None)
    assert twin is not None, f"memdedup._reference has no {name}"
    core = pytest.importorskip("memdedup._core")
    assert shape(getattr(core, name)) == shape(twin), name
