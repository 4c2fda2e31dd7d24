"""Consolidating a store that already holds duplicates: the write path's rule over the rows it kept, dry run
and --apply alike, a second --apply a no-op, nothing deleted, every version in the history."""

from __future__ import annotations

import json
import random
import shutil
import sys
from pathlib import Path
from typing import Any

import cli_support
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memdedup import _reference
from memdedup.consolidate import consolidate
from memdedup.facts import kind_of
from memdedup.scope import Scope
from memdedup.store import SQLiteGraphStore
from strategies import n_examples

sys.path.insert(0, str(cli_support.ROOT / "benches"))
from _corpus import read_labels  # benches/: the bundled sample, or the shared PyPI corpus when present

ORG = Scope.root("org", "acme")
DANA = ORG.child("user", "dana")
LEE = ORG.child("user", "lee")
ROOT = Path(__file__).resolve().parents[1]


def write(
    store: SQLiteGraphStore, node_id: str, label: str, *, scope: Scope = DANA, layer: str = "semantic"
) -> None:
    store.upsert_node(scope, node_id=node_id, layer=layer, label=label)


def merges_of(report: Any) -> list[tuple[str, str, str, str]]:
    return [(m.scope, m.node_id, m.merged_id, m.kind) for m in report.merges]


@pytest.fixture
def duplicated(tmp_path: Path) -> Path:
    """A store written without dedup: restatements, an update, a reworded prefix, two scopes, two layers,
    a transcript row and an episodic event that consolidation must leave alone."""
    path = tmp_path / "dup.sqlite"
    with SQLiteGraphStore(path) as store:
        store.upsert_node(
            DANA,
            node_id="t1",
            layer="episodic",
            label="Dana's staging database port is 5432",
            origin="transcript",
        )
        write(store, "port", "Dana's staging database port is 5432")
        write(store, "shell", "Dana's default shell is zsh on every machine")
        write(store, "port2", "Dana's staging database port is 6543")
        write(store, "port3", "Dana's staging database port is 6543.")
        write(
            store, "shell2", "Her default shell is zsh on every machine"
        )  # its first 20 characters reworded
        write(store, "org", "Dana's staging database port is 5432", scope=ORG)  # the org's own row
        write(store, "lee", "Dana's staging database port is 5432", scope=LEE)
        write(store, "proc", "Run pytest and ruff before every commit", layer="procedural")
        write(store, "proc2", "Run pytest and ruff before every commit, with ruff format", layer="procedural")
        write(store, "event", "Dana deployed the release", layer="episodic")
        write(store, "event2", "Dana deployed the release", layer="episodic")
    return path


def test_a_dry_run_lists_every_merge_and_writes_nothing(duplicated: Path) -> None:
    before = duplicated.read_bytes()
    report = consolidate(duplicated)
    assert not report.applied
    assert merges_of(report) == [
        ("org:acme/user:dana", "port", "port2", "updated"),
        ("org:acme/user:dana", "port", "port3", "restated"),
        ("org:acme/user:dana", "shell", "shell2", "updated"),
        ("org:acme/user:dana", "proc", "proc2", "updated"),
    ]
    port2 = report.merges[0]
    assert (
        port2.reason == "ratio 0.972; value 5432 -> 6543"
        and port2.current == "Dana's staging database port is 5432"
    )
    # The restatement is compared with the current text: the update's.
    assert (
        report.merges[1].current == "Dana's staging database port is 6543"
        and report.merges[1].rule == "ratio"
    )
    assert report.counts() == {"scopes": 3, "rows": 9, "merges": 4, "restated": 1, "updated": 3, "rounds": 1}
    assert duplicated.read_bytes() == before


def test_apply_makes_exactly_the_dry_run_s_merges_and_a_second_apply_changes_nothing(
    duplicated: Path,
) -> None:
    dry = consolidate(duplicated)
    applied = consolidate(duplicated, apply=True)
    assert applied.applied and applied.merges == dry.merges
    again = consolidate(duplicated, apply=True)
    assert again.merges == []
    with SQLiteGraphStore(duplicated) as store:
        live = {(n.scope, n.id): n.label for n in store.all_nodes(include_retracted=False)}
        assert live[("org:acme/user:dana", "port")] == "Dana's staging database port is 6543"
        assert live[("org:acme/user:dana", "shell")] == "Her default shell is zsh on every machine"
        # The org's and Lee's rows are untouched; the episodic layer and the transcript too.
        assert (
            live[("org:acme", "org")]
            == live[("org:acme/user:lee", "lee")]
            == "Dana's staging database port is 5432"
        )
        assert {("org:acme/user:dana", k) for k in ("event", "event2", "t1")} <= set(live)
        assert store.owned_node(DANA, "port").mentions == 3
        # Nothing is deleted: the merged rows are retracted, naming the row they went into.
        port2 = store.owned_node(DANA, "port2")
        assert port2.retracted and port2.retraction_reason.startswith(
            "consolidated into port: updated (ratio 0.972"
        )
        assert [(h.kind, h.text) for h in store.history(DANA, "port")] == [
            ("updated", "Dana's staging database port is 5432"),
            ("restated", "Dana's staging database port is 6543."),
            ("current", "Dana's staging database port is 6543"),
        ]


def test_an_older_statement_never_replaces_a_newer_one(tmp_path: Path) -> None:
    with SQLiteGraphStore(tmp_path / "m.sqlite") as store:
        write(store, "a", "Dana's staging database port is 6543")
        write(store, "b", "Dana's staging database port is 5432")
        store.restate(DANA, "a", text="Dana's staging database port is 6543")  # a was stated again, later
        report = consolidate(store)
        (merge,) = report.merges
        assert (merge.node_id, merge.merged_id, merge.kind) == ("a", "b", "restated")
        assert merge.change == "stated before the current text"
        consolidate(store, apply=True)
        assert store.owned_node(DANA, "a").label == "Dana's staging database port is 6543"


def test_passes_repeat_until_nothing_merges(tmp_path: Path) -> None:
    # c does not restate a; d updates a; then c restates a's new text (d's), as a second pass finds.
    a, c, d = "abcdefghijklmnopqrst", "abcdefghijklmnopZWXY", "abcdefghijklmnopqrXY"
    assert not _reference.labels_match(a, c, min_chars=100) and _reference.labels_match(a, d, min_chars=100)
    assert _reference.labels_match(d, c, min_chars=100)
    with SQLiteGraphStore(tmp_path / "m.sqlite") as store:
        for node_id, label in (("a", a), ("c", c), ("d", d)):
            write(store, node_id, label)
        report = consolidate(store, min_chars=100)
        assert [(m.node_id, m.merged_id, m.kind, m.round) for m in report.merges] == [
            ("a", "d", "updated", 1),
            ("a", "c", "restated", 2),  # c was stated before d's text: it does not replace it
        ]
        consolidate(store, min_chars=100, apply=True)
        assert consolidate(store, min_chars=100).merges == []
        assert store.owned_node(DANA, "a").label == d


def test_guards_keep_a_changed_value_as_another_fact(duplicated: Path) -> None:
    report = consolidate(duplicated, guards="value,negation")
    assert ("org:acme/user:dana", "port", "port2", "updated") not in merges_of(report)
    assert ("org:acme/user:dana", "port2", "port3", "restated") in merges_of(report)


def test_the_scope_option_limits_it_to_one_owner(duplicated: Path) -> None:
    assert {m.scope for m in consolidate(duplicated, scope="org:acme/user:dana").merges} == {
        "org:acme/user:dana"
    }
    assert consolidate(duplicated, scope=ORG).merges == []


# --- against a plain oracle -------------------------------------------------------------------------------


def oracle(
    labels: list[str], stated: list[int], threshold: float, min_chars: int
) -> list[tuple[int, int, str]]:
    """The rule plainly, by brute force: passes in store order until one merges nothing; each row against the
    current rows before it, the first match on their current texts; newer rows update unless terser."""
    current = list(range(len(labels)))
    text = dict(enumerate(labels))
    when = dict(enumerate(stated))
    merges = []
    while True:
        kept: list[int] = []
        found = False
        for i in current:
            into = next(
                (
                    k
                    for k in kept
                    if _reference.labels_match(text[k], text[i], threshold=threshold, min_chars=min_chars)
                ),
                None,
            )
            if into is None:
                kept.append(i)
                continue
            found = True
            newer = when[i] > when[into]
            kind = kind_of(text[into], text[i]) if newer else "restated"
            merges.append((into, i, kind))
            when[into] = max(when[into], when[i])
            if kind == "updated":
                text[into] = text[i]
        current = kept
        if not found:
            return merges


WORDS = ["port", "is", "5432", "6543", "dana", "staging", "db", "shell", "zsh", "fish", "the"]


@pytest.fixture(params=["joined", "queried"])
def first_pass(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The first pass from the all-pairs join (the core, no guards) or from one index query a row (guards,
    the pure-Python backend): the same merges either way."""
    if request.param == "queried":
        monkeypatch.setattr("memdedup.consolidate._JOIN_MIN", 1 << 62)
    return str(request.param)


@settings(max_examples=n_examples(60), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sentences=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join), max_size=12),
    restated=st.lists(st.integers(0, 11), max_size=4),
    threshold=st.sampled_from([0.6, 0.85, 1.0]),
    min_chars=st.sampled_from([0, 8, 16]),
)
def test_consolidate_equals_the_oracle(
    first_pass: str, sentences: list[str], restated: list[int], threshold: float, min_chars: int
) -> None:
    with SQLiteGraphStore(":memory:") as store:
        for k, sentence in enumerate(sentences):
            write(store, f"r{k:02d}", sentence)
        for k in restated:  # later statements of earlier rows: store order and statement order differ
            if k < len(sentences):
                store.restate(DANA, f"r{k:02d}")
        rows = store.owned_nodes(DANA.scope_path)
        expected = oracle([r.label for r in rows], [r.stated for r in rows], threshold, min_chars)
        report = consolidate(store, threshold=threshold, min_chars=min_chars)
        got = [(int(m.node_id[1:]), int(m.merged_id[1:]), m.kind) for m in report.merges]
        assert got == expected
        consolidate(store, threshold=threshold, min_chars=min_chars, apply=True)
        assert consolidate(store, threshold=threshold, min_chars=min_chars).merges == []


@pytest.fixture(params=[0, 16, 3, 1], ids=["joined", "batch-16", "batch-3", "batch-1"])
def batch(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    """The first pass from the join (0), or looking rows up in batches (two threads) and correcting each
    batch's answers row by row: the same answers whatever the batch's size."""
    if request.param:
        monkeypatch.setattr("memdedup.consolidate._JOIN_MIN", 1 << 62)
        monkeypatch.setattr("memdedup.consolidate._BATCH", request.param)
    return int(request.param)


@settings(max_examples=n_examples(60), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    edits=st.lists(st.lists(st.tuples(st.integers(0, 19), st.sampled_from("XYZW")), max_size=3), max_size=10),
    restated=st.lists(st.integers(0, 9), max_size=3),
)
def test_chains_of_small_edits_need_several_passes_and_equal_the_oracle(
    batch: int, edits: list[list[tuple[int, str]]], restated: list[int]
) -> None:
    # Labels a few edits apart: a changed text reaches rows the first pass could not (the rounds).
    labels = []
    for row in edits:
        chars = list("abcdefghijklmnopqrst")
        for at, char in row:
            chars[at] = char
        labels.append("".join(chars))
    with SQLiteGraphStore(":memory:") as store:
        for k, label in enumerate(labels):
            write(store, f"r{k:02d}", label)
        for k in restated:
            if k < len(labels):
                store.restate(DANA, f"r{k:02d}")
        rows = store.owned_nodes(DANA.scope_path)
        expected = oracle([r.label for r in rows], [r.stated for r in rows], 0.85, 100)
        report = consolidate(store, min_chars=100)
        assert [(int(m.node_id[1:]), int(m.merged_id[1:]), m.kind) for m in report.merges] == expected


def test_the_joined_and_queried_first_passes_agree_on_real_labels(monkeypatch: pytest.MonkeyPatch) -> None:
    """Real short labels with their restatements (each later copy reworded, cut, or with another value),
    stated out of store order: the first pass from the join and the one from index queries make the same
    merges, in the same order, over every pass."""
    from memdedup.consolidate import plan

    labels = read_labels(None, 1500)
    rng = random.Random(7)
    rows = list(labels)
    for label in rng.sample(labels, 600):
        words = label.split()
        edit = rng.randrange(4)
        if edit == 0:
            rows.append(label.lower())
        elif edit == 1 and len(words) > 3:
            rows.append(" ".join(words[:-1]))
        elif edit == 2:
            rows.append(label + " 2")
        else:
            rows.append(label.replace(" ", "  ", 1) + ".")
    rng.shuffle(rows)
    with SQLiteGraphStore(":memory:") as store:
        for k, label in enumerate(rows):
            write(store, f"r{k:05d}", label)
        for k in rng.sample(range(len(rows)), 200):
            store.restate(DANA, f"r{k:05d}")
        joined, _, _ = plan(store)
        monkeypatch.setattr("memdedup.consolidate._JOIN_MIN", 1 << 62)
        queried, _, _ = plan(store)
    assert len(joined) > 300 and {m.kind for m in joined} == {"restated", "updated"}
    assert joined == queried


def test_a_join_out_of_memory_falls_back_to_the_queried_pass(
    duplicated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A low threshold can pair most texts with most others: when the join runs out of memory (the core
    raises MemoryError before it allocates), the first pass is answered by index queries instead, the same."""
    expected = consolidate(duplicated, threshold=0.5).merges

    def out_of_memory(*_args: Any, **_kwargs: Any) -> Any:
        raise MemoryError("the join's pairs")

    monkeypatch.setattr("memdedup.consolidate._join", out_of_memory)
    assert expected and consolidate(duplicated, threshold=0.5).merges == expected


# --- the command ---------------------------------------------------------------------------------------


def test_the_command_dry_run_apply_and_json(duplicated: Path) -> None:
    dry = cli_support.run("consolidate", "--db", duplicated)
    assert dry.status == 0, dry.err
    assert "4 merges (1 restated, 3 updated)" in dry.out and "dry run: nothing was written" in dry.out
    assert "ratio 0.972; value 5432 -> 6543" in dry.out
    as_json = json.loads(cli_support.run("consolidate", "--db", duplicated, "--json").out)
    applied = json.loads(cli_support.run("consolidate", "--db", duplicated, "--apply", "--json").out)
    assert as_json["merges"] == applied["merges"] and applied["applied"]
    assert (
        json.loads(cli_support.run("consolidate", "--db", duplicated, "--apply", "--json").out)["merges"]
        == []
    )
    history = cli_support.run("history", "--db", duplicated, "--scope", "org:acme/user:dana", "port")
    assert history.status == 0 and "Dana's staging database port is 5432" in history.out
    recall = cli_support.run("recall", "--db", duplicated, "--scope", "org:acme/user:dana")
    assert "Dana's staging database port is 6543" in recall.out and "5432" not in recall.out


def test_the_commands_refuse_clearly(tmp_path: Path, duplicated: Path) -> None:
    for argv in (
        ("consolidate", "--db", tmp_path / "missing.sqlite"),
        ("history", "--db", duplicated, "--scope", "org:acme/user:dana", "no-such-id"),
        ("history", "--db", duplicated, "--scope", "org:acme/us:er:dana"),
        ("recall", "--db", tmp_path / "missing.sqlite", "--scope", "org:acme"),
    ):
        done = cli_support.run(*argv)
        assert done.status == 2, (argv, done.out, done.err)
        lines = [line for line in done.err.strip().splitlines() if not line.startswith("usage:")]
        assert len(lines) == 1 and "Traceback" not in done.err, done.err
    assert not (tmp_path / "missing.sqlite").exists()


def test_a_version_1_file_is_read_by_a_dry_run_and_migrated_by_apply(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    shutil.copyfile(ROOT / "tests" / "data" / "store-v1.db", path)
    before = path.read_bytes()
    dry = cli_support.run("consolidate", "--db", path, "--json")
    assert dry.status == 0, dry.err
    assert path.read_bytes() == before and not Path(f"{path}.bak-v1").exists()
    applied = cli_support.run("consolidate", "--db", path, "--apply", "--json")
    assert applied.status == 0 and json.loads(applied.out)["merges"] == json.loads(dry.out)["merges"]
    assert Path(f"{path}.bak-v1").exists()


# --- the bundled example and a store of many turns ------------------------------------------------------


def _turns(count: int, seed: int) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    subjects = [
        "staging database port",
        "default shell",
        "monthly cloud budget",
        "API rate limit",
        "editor theme",
    ]
    values = ["5432", "6543", "zsh", "fish", "$4,000", "$5,500", "100 requests a minute", "dark", "light"]
    users = ["dana", "lee", "sam"]
    out = []
    for n in range(1, count + 1):
        user = rnd.choice(users)
        subject = rnd.choice(subjects)
        label = f"{user.title()}'s {subject} is {rnd.choice(values)}" + rnd.choice(["", ".", " now"])
        op = {"action": "upsert_node", "layer": "semantic", "label": label, "importance": rnd.randint(3, 9),
              "properties": {"memory_category": "fact", "subject": user}}  # fmt: skip
        out.append({"scope": {"org": "acme", "user": user}, "turn": n, "output": json.dumps({"ops": [op]})})
    return out


@pytest.mark.parametrize(
    "count", [pytest.param(1_000, id="1k"), pytest.param(10_000, id="10k", marks=pytest.mark.slow)]
)
def test_a_store_built_from_many_turns_consolidates_the_same_dry_and_applied(
    tmp_path: Path, count: int
) -> None:
    from memdedup.ingest import ingest_turns

    db = tmp_path / "many.sqlite"
    ingest_turns(_turns(count, seed=count), db, threshold=0.95)  # a stricter threshold leaves duplicates
    dry = consolidate(db)
    assert dry.merges
    applied = consolidate(db, apply=True)
    assert applied.merges == dry.merges
    assert consolidate(db, apply=True).merges == []


def test_the_bundled_example_consolidates_the_same_dry_and_applied(tmp_path: Path) -> None:
    from memdedup.ingest import ingest_file

    db = tmp_path / "example.sqlite"
    ingest_file(ROOT / "examples" / "turns.jsonl", db)
    dry = consolidate(db)
    assert consolidate(db, apply=True).merges == dry.merges
    assert consolidate(db, apply=True).merges == []
