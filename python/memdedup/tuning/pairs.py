"""Labelled pairs: the input of a tuning run (``stored``, ``incoming``, class, same fact), parsed from
JSON lines, and the bundled restatement corpus."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from memdedup.errors import InvalidInputError
from memdedup.inputs import display_name, read_text, split_lines
from memdedup.tables import check_fields


@dataclass(frozen=True)
class LabelledPair:
    """A stored label, an incoming one, the restatement class and whether they state the same fact."""

    stored: str
    incoming: str
    cls: str
    same_fact: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "class": self.cls,
            "same_fact": self.same_fact,
            "stored": self.stored,
            "incoming": self.incoming,
        }


def corpus_path() -> Any:
    """The bundled restatement corpus (a :class:`importlib.resources.abc.Traversable`)."""
    import importlib.resources

    return importlib.resources.files("memdedup") / "data" / "restatements.jsonl"


def _bool(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if value in (0, 1) and not isinstance(value, float):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in {"true", "false", "yes", "no", "1", "0"}:
        return value.strip().lower() in {"true", "yes", "1"}
    raise InvalidInputError(f"{where}: same_fact must be true or false, not {value!r}")


def parse_pairs(lines: Iterable[str], source: str = "<pairs>") -> list[LabelledPair]:
    """Labelled pairs from JSONL lines: objects with ``stored``, ``incoming``, ``same_fact`` and an
    optional ``class`` (default ``"unlabelled"``); blank lines are skipped, anything else is an error
    naming the line."""
    pairs = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"{where}: not JSON ({exc.msg})") from exc
        except RecursionError:
            raise InvalidInputError(f"{where}: not JSON (nested too deeply)") from None
        if not isinstance(row, dict):
            raise InvalidInputError(f"{where}: expected a JSON object")
        check_fields(line, row, ("stored", "incoming", "same_fact", "class"), where)
        missing = [key for key in ("stored", "incoming", "same_fact") if key not in row]
        if missing:
            raise InvalidInputError(f"{where}: no {missing[0]!r} field")
        for key in ("stored", "incoming"):
            if not isinstance(row[key], str):
                raise InvalidInputError(f"{where}: {key} must be a string")
        cls = row.get("class", "unlabelled")
        pairs.append(
            LabelledPair(
                row["stored"],
                row["incoming"],
                str(cls) if cls is not None else "unlabelled",
                _bool(row["same_fact"], where),
            )
        )
    return pairs


def load_pairs(path: str | os.PathLike[str] | None = None) -> list[LabelledPair]:
    """Labelled pairs from a JSONL file (see :func:`parse_pairs`; ``-`` reads stdin, gzip is read
    decompressed, the text must be UTF-8: :mod:`memdedup.inputs`); the bundled corpus when ``path`` is
    None."""
    if path is None:
        return parse_pairs(split_lines(corpus_path().read_text(encoding="utf-8")), "restatements.jsonl")
    return parse_pairs(split_lines(read_text(path)), display_name(path))
