"""The pipeline's shape: decide() chooses what find_canonical_node chooses, with the reason and score the
contract gives, in one call into the core; and the turn is the unit of every write and of the report."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import cli_support
from hypothesis import given, settings
from hypothesis import strategies as st
from memdedup import _backend, _reference, dedup, ingest
from memdedup.ingest import aingest_turns, decide, ingest_file, ingest_turns
from memdedup.scope import Scope
from memdedup.store import SQLiteGraphStore
from strategies import n_examples

ROOT = Path(__file__).resolve().parents[1]
ORG = Scope.root("org", "acme")
DANA = ORG.child("user", "dana")
LEE = ORG.child("user", "lee")
SCOPES = [ORG, DANA, LEE]
BASE = [
    "Dana prefers dark mode in every editor",
    "Dana prefers dark mode",
    "dana prefers dark mode in every editor.",
    "Run pytest and ruff before every commit",
    "Run pytest and ruff before every commit and push",
    "Run pytest",
    "Releases ship every second Tuesday",
]
label_strategy = st.one_of(
    st.sampled_from(BASE),
    st.builds(
        lambda base, tail: base + tail, st.sampled_from(BASE), st.sampled_from(["", ".", " now", "!!"])
    ),
)


@settings(max_examples=n_examples(150), deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 2), label_strategy, st.sampled_from(["semantic", "procedural"])), max_size=30
    ),
    st.integers(0, 2),
    label_strategy,
    st.sampled_from(["semantic", "procedural"]),
    st.sampled_from([0.6, 0.85, 0.95, 1.0]),
)
def test_decide_is_find_canonical_node_with_its_reason(
    rows: list[tuple[int, str, str]], at: int, label: str, layer: str, threshold: float
) -> None:
    with SQLiteGraphStore(":memory:") as store:
        for n, (s, text, row_layer) in enumerate(rows):
            store.upsert_node(SCOPES[s], node_id=f"n{n}", layer=row_layer, label=text)
        scope = SCOPES[at]
        chosen = decide(store, scope, layer=layer, label=label, threshold=threshold)
        expected = asyncio.run(
            dedup.find_canonical_node(store, scope, layer=layer, label=label, threshold=threshold)
        )
        oracle = asyncio.run(
            _reference.find_canonical_node(store, scope, layer=layer, label=label, threshold=threshold)
        )
    assert (expected and (expected.scope_path, expected.id)) == (oracle and (oracle.scope_path, oracle.id))
    if expected is None:
        assert chosen is None
        return
    assert chosen is not None
    assert (chosen.node.scope_path, chosen.node.id) == (expected.scope_path, expected.id)
    assert (chosen.reason, chosen.score) == _reference.match_reason(
        expected.label, label, threshold=threshold
    )


class _Counting:
    """The backend, counting the calls made through it."""

    def __init__(self, impl: Any) -> None:
        self._impl = impl
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        function = getattr(self._impl, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return function(*args, **kwargs)

        return counted


def test_each_lookup_is_one_core_call(tmp_path: Path, monkeypatch: Any) -> None:
    counting = _Counting(_backend.impl)
    monkeypatch.setattr(ingest, "_impl", counting)
    report = ingest_file(ROOT / "examples" / "turns.jsonl", tmp_path / "m.sqlite")
    assert set(counting.calls) == {"pair_reasons"}
    # Every restatement and update was decided by exactly one call, and each call decided one lookup.
    same_fact = [r for r in report.records if r.outcome in ("restated", "updated")]
    assert len(same_fact) == 4 and len(counting.calls) <= len(report.written) + len(same_fact)
    assert [r.why() for r in same_fact] == [
        "ratio 1.000",
        "containment (ratio 0.709)",
        "ratio 0.851",
        "ratio 0.972; value 5432 -> 6543",
    ]


def test_an_async_iterable_of_turns_is_ingested_like_a_list(tmp_path: Path) -> None:
    lines = (ROOT / "examples" / "turns.jsonl").read_text(encoding="utf-8").splitlines()

    async def turns() -> Any:
        for line in lines:
            yield json.loads(line)

    from_async = ingest_turns(turns(), tmp_path / "a.sqlite")
    from_list = ingest_turns([json.loads(line) for line in lines], tmp_path / "b.sqlite")
    assert from_async.counts() == from_list.counts()
    in_loop = asyncio.run(aingest_turns([json.loads(line) for line in lines], tmp_path / "c.sqlite"))
    assert in_loop.counts() == from_list.counts()


def test_a_failed_turn_is_not_in_the_report_and_not_in_the_store(tmp_path: Path) -> None:
    good = {
        "action": "upsert_node",
        "label": "Dana uses vim",
        "properties": {"memory_category": "fact", "subject": "user"},
    }
    bad = {**good, "label": "unwritable", "properties": {**good["properties"], "k": {(1,): 1}}}
    turns = [
        {
            "scope": DANA.to_json(),
            "turn": 1,
            "messages": [{"role": "user", "content": "hi"}],
            "output": {"ops": [good, bad]},
        }
    ]
    report = ingest_turns(turns, tmp_path / "m.sqlite")
    assert report.turns == 0 and report.records == [] and report.transcript_rows == 0
    assert [p.code for p in report.problems] == ["write_failed"]
    with SQLiteGraphStore(tmp_path / "m.sqlite") as store:
        assert store.count_nodes() == 0 and store.ledger() == []


def test_the_recall_example_runs(tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "recall.py"), str(tmp_path / "m.sqlite")],
        capture_output=True,
        text=True,
        env=cli_support.env(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("user: Summaries should stay under 400 tokens")
    assert "left out as repeats of the window: 2" in lines[-1]
    assert "Set up the shared Acme workspace notes." in lines  # the organisation's own turn 1 stays


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=12,
)
good_scope = st.just(DANA.to_json())


@settings(max_examples=n_examples(150), deadline=None)
@given(
    st.lists(
        st.fixed_dictionaries(
            {},
            optional={
                "scope": good_scope | json_values,
                "turn": st.integers(-2, 3) | st.sampled_from([2**63 - 1, 2**63, 10**20]) | json_values,
                "messages": st.lists(
                    st.fixed_dictionaries(
                        {},
                        optional={
                            "role": st.sampled_from(["user", "assistant"]) | json_values,
                            "content": json_values | st.text(),
                        },
                    ),
                    max_size=3,
                )
                | json_values,
                "output": json_values
                | st.builds(lambda ops: json.dumps({"ops": ops}), st.lists(json_values, max_size=3)),
                "provider": json_values,
            },
        )
        | json_values,
        max_size=6,
    )
)
def test_no_line_ends_the_run_and_every_line_is_accounted_for(lines: list[Any]) -> None:
    with SQLiteGraphStore(":memory:") as store:
        report = ingest_turns(lines, store)
        assert report.lines == len(lines) == report.turns + len(report.problems)
        json.dumps(report.to_dict(), ensure_ascii=False).encode("utf-8")
        ledger = store.ledger()
    assert len(ledger) == len(report.written) + len(report.restated) + len(report.updated)
