"""Memory that stays true, end to end: a corpus of fact-update conversations (benches/_facts_corpus.py:
numeric, named and negated values; restatements with and without detail, and terser; a child updating
an org's fact; a fact moving between layers; a change that rewords the first 20 characters), ingested with
the real command and recalled with the defaults. Every block shows each fact's current text once and no
stale value; nothing stated is lost; the org's rows and a sibling's view are untouched."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import cli_support
import pytest
from memdedup.scope import Scope
from memdedup.store import SQLiteGraphStore

sys.path.insert(0, str(cli_support.ROOT / "benches"))
import _facts_corpus as facts  # benches/: a support module shared with bench_facts.py


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[facts.Case]]:
    path = tmp_path_factory.mktemp("facts") / "turns.jsonl"
    return path, facts.write_corpus(str(path), seed=1)


def ingest(corpus: Path, db: Path, *options: str) -> dict[str, Any]:
    done = cli_support.run("ingest", corpus, "--db", db, "--json", *options)
    assert done.status == 0, done.err
    return json.loads(done.out)  # type: ignore[no-any-return]


def recall_with_the_command(db: Path) -> Any:
    def recall(scope: list[list[str]]) -> str:
        done = cli_support.run("recall", "--db", db, "--scope", facts.printed(scope))
        assert done.status == 0, done.err
        return done.out.rstrip("\n")

    return recall


def recall_with_the_library(db: Path) -> Any:
    def recall(scope: list[list[str]]) -> str:
        with SQLiteGraphStore(db, readonly=True) as store:
            return store.recall(Scope.from_path(scope)).text

    return recall


def stored_texts(db: Path) -> set[str]:
    """Every text the store holds: each row's current text and every revision's."""
    with SQLiteGraphStore(db, readonly=True) as store:
        texts = set()
        for node in store.all_nodes():
            texts.update(
                entry.text for entry in store.history(Scope.from_scope_path(node.scope_path), node.id)
            )
    return texts


def no_problems(problems: dict[str, list[str]]) -> None:
    assert {cls: found for cls, found in problems.items() if found} == {}
    assert set(problems) == set(facts.CLASSES)


@pytest.mark.slow
def test_the_corpus_with_the_commands_and_defaults(tmp_path: Path, corpus_file: Any) -> None:
    corpus, cases = corpus_file
    db = tmp_path / "m.sqlite"
    report = ingest(corpus, db)
    assert report["counts"]["updated"] and report["counts"]["restated"]
    no_problems(facts.check(cases, recall_with_the_command(db)))


@pytest.mark.parametrize(
    "options",
    [
        pytest.param((), id="defaults"),
        pytest.param(("--guards", "value,negation"), id="guards"),
        pytest.param(("--gate", "index"), id="index-gate"),
    ],
)
def test_every_block_shows_the_current_text_once_and_nothing_is_lost(
    tmp_path: Path, corpus_file: Any, options: tuple[str, ...]
) -> None:
    corpus, cases = corpus_file
    db = tmp_path / "m.sqlite"
    ingest(corpus, db, *options)
    no_problems(facts.check(cases, recall_with_the_library(db)))
    # Nothing stated is lost: every statement's text is a row's current text or in its history.
    assert {text for case in cases for text in case.texts} <= stored_texts(db)
    with SQLiteGraphStore(db, readonly=True) as store:
        # The org's rows hold what the org said, whatever its users said since.
        owned = store.owned_nodes(Scope.from_path(facts.ORG).scope_path)
        org_rows = {n.label for n in owned if n.origin != "transcript"}
        org_said = {text for case in cases for scope, _, text, _ in case.statements if scope == facts.ORG}
        assert org_rows == org_said


def test_the_reworded_prefix_is_one_row_after_consolidate(tmp_path: Path, corpus_file: Any) -> None:
    corpus, cases = corpus_file
    db = tmp_path / "m.sqlite"
    ingest(corpus, db)  # the prefix gate: a reworded change is a second row
    reworded = [case for case in cases if case.cls == "reworded-prefix"]
    with SQLiteGraphStore(db, readonly=True) as store:
        live = {n.label for n in store.all_nodes(include_retracted=False)}
    assert all(set(case.texts) <= live for case in reworded)
    done = cli_support.run("consolidate", "--db", db, "--apply", "--json")
    assert done.status == 0, done.err
    with SQLiteGraphStore(db, readonly=True) as store:
        live = {n.label for n in store.all_nodes(include_retracted=False)}
    for case in reworded:
        assert case.current in live and not set(case.stale) & live
    no_problems(facts.check(cases, recall_with_the_library(db)))
    assert {text for case in cases for text in case.texts} <= stored_texts(db)
