"""Once a secret, always a secret, store-wide: the secret memory on a real SQLite connection,
and the write path that learns from every turn and redacts every later and earlier copy.

The memory (:mod:`memdedup.secret_memory`) remembers HMAC-SHA256 digests of values with at least 64
estimated bits under a per-store random key, redacts later text by hashing its token-like spans, and
rewrites the earlier text of the tables it is given when it learns a value.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from memdedup.ingest import ingest_file
from memdedup.scope import Scope
from memdedup.scrub import CredentialScrubber
from memdedup.secret_memory import MIN_BITS, Rewrite, SecretMemory, pack_shapes
from memdedup.store import SQLiteGraphStore
from test_scrub_vectors import fake

ENGINES = ("rust", "python")
# A secret with no provider shape: only a key tells it apart from any other token.
SECRET = fake("an", 32, "memory")
OTHER = fake("an", 28, "memory-other")


def _connection(tmp_path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(tmp_path / "m.db", isolation_level=None)
    # A revisions table (as the lead's schema 2 adds) is rewritten like any other named table.
    conn.executescript(
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL, props TEXT NOT NULL DEFAULT '{}');"
        "CREATE TABLE revisions (id INTEGER PRIMARY KEY, text TEXT NOT NULL);"
    )
    return conn


def _memory(conn: sqlite3.Connection, engine: str) -> SecretMemory:
    memory = SecretMemory(conn, implementation=engine)
    conn.execute("BEGIN IMMEDIATE")
    memory.ensure_schema()
    conn.execute("COMMIT")
    return memory


REWRITE = (Rewrite("notes", ("text", "props")), Rewrite("revisions", ("text",)))


@pytest.mark.parametrize("engine", ENGINES)
def test_a_learned_value_is_redacted_in_later_and_earlier_text(tmp_path: Path, engine: str) -> None:
    conn = _connection(tmp_path)
    memory = _memory(conn, engine)
    conn.execute("INSERT INTO notes (text, props) VALUES (?, ?)", (f"pasted {SECRET} into the form", "{}"))
    conn.execute("INSERT INTO notes (text, props) VALUES (?, ?)", ("nothing here", json.dumps({"k": SECRET})))
    conn.execute("INSERT INTO revisions (text) VALUES (?)", (f"was {SECRET}.",))
    assert memory.redact(f"later: {SECRET}") == f"later: {SECRET}"  # not learned yet
    conn.execute("BEGIN IMMEDIATE")
    assert memory.learn([(SECRET, "API_KEY")], REWRITE) == 1
    conn.execute("COMMIT")
    texts = [row[0] + row[1] for row in conn.execute("SELECT text, props FROM notes")]
    texts += [row[0] for row in conn.execute("SELECT text FROM revisions")]
    assert all(SECRET not in text for text in texts), texts
    assert texts[0] == "pasted [REDACTED:API_KEY] into the form{}"
    assert json.loads(texts[1][len("nothing here") :]) == {"k": "[REDACTED:API_KEY]"}
    assert texts[2] == "was [REDACTED:API_KEY]."
    for later in (
        f"I pasted {SECRET} again",
        f"key={SECRET}&x=1",
        f'"{SECRET}"',
        f"({SECRET}).",
        f"t:{SECRET}",
    ):
        assert SECRET not in memory.redact(later), later
    assert memory.redact(f"x{SECRET}") == f"x{SECRET}"  # glued to a letter: another token
    assert memory.redact(f"{OTHER} stays") == f"{OTHER} stays"


@pytest.mark.parametrize("engine", ENGINES)
def test_only_values_past_the_threshold_are_remembered_and_nothing_in_clear(
    tmp_path: Path, engine: str
) -> None:
    conn = _connection(tmp_path)
    memory = _memory(conn, engine)
    weak = [
        "hunter2-Blue-Falcon-77",
        "correct horse battery staple",
        "4821",
        "2024-01-01T00:00:00Z",
        "password",
    ]
    conn.execute("BEGIN IMMEDIATE")
    assert memory.learn([(value, "PASSWORD") for value in weak], REWRITE) == 0
    assert memory.learn([(SECRET, "SECRET"), (SECRET, "SECRET")], REWRITE) == 1
    conn.execute("COMMIT")
    assert len(memory) == 1
    # What the file holds: a key, a digest, a length and a kind; never the value.
    dump = "\n".join(conn.iterdump())
    assert SECRET not in dump
    (key,) = conn.execute("SELECT key FROM secret_memory_key").fetchone()
    assert len(key) == 32
    (digest, length) = conn.execute("SELECT digest, length FROM secret_memory").fetchone()
    assert len(digest) == 32 and length == len(SECRET)
    assert all(memory._engine.secret_bits(v) < MIN_BITS for v in weak)


def test_two_stores_hash_one_value_differently(tmp_path: Path) -> None:
    digests = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        conn = _connection(tmp_path / name)
        memory = _memory(conn, "rust")
        conn.execute("BEGIN IMMEDIATE")
        memory.learn([(SECRET, "SECRET")])
        conn.execute("COMMIT")
        digests.append(conn.execute("SELECT digest FROM secret_memory").fetchone()[0])
    assert digests[0] != digests[1]


def test_a_rolled_back_learn_is_forgotten(tmp_path: Path) -> None:
    conn = _connection(tmp_path)
    memory = _memory(conn, "rust")
    conn.execute("BEGIN IMMEDIATE")
    memory.learn([(SECRET, "SECRET")])
    assert SECRET not in memory.redact(SECRET)
    conn.execute("ROLLBACK")
    memory.rolled_back()
    assert memory.redact(SECRET) == SECRET
    # Another connection's learn is read on the next use.
    other = SecretMemory(sqlite3.connect(tmp_path / "m.db", isolation_level=None))
    other._conn.execute("BEGIN IMMEDIATE")
    other.learn([(OTHER, "TOKEN")])
    other._conn.execute("COMMIT")
    assert memory.redact(f"{OTHER}!") == "[REDACTED:TOKEN]!"


def test_a_rewrite_names_plain_identifiers_only() -> None:
    with pytest.raises(Exception, match="identifiers"):
        Rewrite("notes; DROP TABLE notes", ("text",))


def test_both_engines_estimate_and_find_spans_alike() -> None:
    rust, python = CredentialScrubber(implementation="rust"), CredentialScrubber(implementation="python")
    texts = [
        f"a {SECRET} b key={SECRET}&x t:{SECRET}. ({OTHER}) [{SECRET}]",
        "a-a-a-a-a-a-a-a " * 50,
        "é" + SECRET + " ü " + SECRET,
        "",
    ]
    shapes = [(len(v), rust._engine.secret_bits(v)) for v in (SECRET, OTHER)] + [(3, 0.0), (20, 1.5)]
    found = [rust._engine.secret_spans(text, pack_shapes(shapes)) for text in texts]
    assert found == [python._engine.secret_spans(text, pack_shapes(shapes)) for text in texts]
    assert [texts[0][s:e] for s, e in found[0]] == [SECRET, SECRET, SECRET, OTHER, SECRET]
    for value in [SECRET, OTHER, "hunter2-Blue-Falcon-77", "aaaaaaaaaaaaaaaaaaaaaaaaaaaa", "Zq8v" * 6, ""]:
        assert rust._engine.secret_bits(value) == python._engine.secret_bits(value)


@pytest.mark.parametrize("engine", ENGINES)
def test_overlapping_spans_map_to_code_points_after_non_ascii_text(engine: str) -> None:
    # A run and its part after `=` overlap; after a non-ASCII character their offsets are code points
    # (this once panicked in the core and gave wrong offsets in the mirror).
    text = f"é ü key={SECRET} and ü {SECRET}"
    bits = CredentialScrubber(implementation=engine)._engine.secret_bits
    shapes = [(len(v), bits(v)) for v in (SECRET, "key=" + SECRET)]
    spans = CredentialScrubber(implementation=engine)._engine.secret_spans(text, pack_shapes(shapes))
    assert [text[s:e] for s, e in spans] == ["key=" + SECRET, SECRET, SECRET]


# ---------------------------------------------------------------------------------------------------
# The write path: the store test
# ---------------------------------------------------------------------------------------------------
def _turn(number: int, user: str, label: str) -> dict[str, object]:
    properties = {"memory_category": "fact", "subject": "dana"}
    ops = [
        {
            "action": "upsert_node",
            "layer": "semantic",
            "label": label,
            "properties": properties,
            "importance": 6,
        }
    ]
    return {
        "scope": {"org": "acme", "user": "dana"},
        "turn": number,
        "messages": [{"role": "user", "content": user}, {"role": "assistant", "content": "noted"}],
        "output": json.dumps({"ops": ops}),
    }


def _everything(store: SQLiteGraphStore) -> list[str]:
    texts = [node.label + json.dumps(node.properties) for node in store.all_nodes()]
    texts += [entry.text for entry in store.ledger()]
    return texts


def test_a_secret_said_with_a_key_is_redacted_in_every_turn_the_ledger_and_the_transcript(
    tmp_path: Path,
) -> None:
    turns = [
        _turn(1, f"I pasted {SECRET} into the form", f"Dana pasted {SECRET} into the billing form"),
        _turn(3, "what is the weather", "Dana asks about the weather in Lisbon"),
        _turn(5, f"set api_key={SECRET} for billing", "The billing service needs an API key"),
        _turn(9, f"is {SECRET} still valid?", f"Dana asked whether {SECRET} is still valid"),
    ]
    path = tmp_path / "turns.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in turns), encoding="utf-8")
    db = tmp_path / "store.db"
    first = ingest_file(path, db)
    with SQLiteGraphStore(db) as store:
        texts = _everything(store)
        count = store.count_nodes()
        ledger = len(store.ledger())
    assert len(texts) > 8
    assert not [t for t in texts if SECRET in t], texts
    labels = [t for t in texts if "billing form" in t or "still valid" in t]
    assert labels and all("[REDACTED:API_KEY]" in t for t in labels), labels
    transcript = [t for t in texts if t.startswith(("I pasted", "is ", "set api_key"))]
    assert len(transcript) >= 3 and all(SECRET not in t for t in transcript), transcript
    assert not [o for o in first.records if SECRET in o.text]
    # The file holds the secret nowhere, in no table and no page left behind.
    raw = (
        db.read_bytes() + (tmp_path / "store.db-wal").read_bytes()
        if (tmp_path / "store.db-wal").exists()
        else db.read_bytes()
    )
    assert SECRET.encode() not in raw
    # Re-ingesting the file writes nothing twice.
    again = ingest_file(path, db)
    with SQLiteGraphStore(db) as store:
        assert store.count_nodes() == count
        assert len(store.ledger()) == ledger
        assert not [t for t in _everything(store) if SECRET in t]
    assert again.records and all(o.outcome == "already_ingested" for o in again.records)


def test_one_turn_is_one_record_its_messages_and_ops_share_their_secrets(tmp_path: Path) -> None:
    turn = _turn(1, f"my password is {OTHER}!", f"Dana typed {OTHER} at the prompt")
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(turn) + "\n", encoding="utf-8")
    report = ingest_file(path, tmp_path / "s.db")
    with SQLiteGraphStore(tmp_path / "s.db") as store:
        assert not [t for t in _everything(store) if OTHER in t]
    assert [o.text for o in report.records] == ["Dana typed [REDACTED:PASSWORD] at the prompt"]


def test_a_learned_value_is_redacted_in_a_facts_history(tmp_path: Path) -> None:
    """A row updated before its value was known as a secret keeps the old text as a revision; learning
    the value later rewrites the revision too (its text, properties and reason)."""
    turns = [
        _turn(1, "noted", f"Dana pasted {SECRET} into the billing form"),
        _turn(2, "noted", f"Dana pasted {SECRET} into the billing form on Monday morning"),
        _turn(5, f"set api_key={SECRET} for billing", "The billing service needs an API key"),
    ]
    path = tmp_path / "turns.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in turns), encoding="utf-8")
    db = tmp_path / "store.db"
    report = ingest_file(path, db)
    assert [o.outcome for o in report.records][:2] == ["written", "updated"]
    with SQLiteGraphStore(db) as store:
        node = next(n for n in store.all_nodes() if "billing form" in n.label)
        history = store.history(Scope.from_readable(node.scope), node.id)
    assert [r.kind for r in history] == ["updated", "current"]
    assert all(SECRET not in r.text + r.reason + json.dumps(r.properties) for r in history), history
    assert "[REDACTED:API_KEY]" in history[0].text
    assert SECRET.encode() not in db.read_bytes()


def test_the_cores_sampled_span_scan_finds_what_a_byte_by_byte_scan_finds() -> None:
    """The core samples every ``shortest``-th byte for the runs that may hold a span; the mirror reads
    every byte. Texts dense in short runs, separators and ``=``/``:`` parts, with shapes taken from their
    own runs (so spans are found) at many lengths, must give the same spans."""
    import random

    rng = random.Random(5)
    rust, python = (CredentialScrubber(implementation=e)._engine for e in ENGINES)
    alphabet = "aZ9k=:.!-_ \n\t'(" + "Qx7"
    for _ in range(1500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 120)))
        cuts = [text[a : a + n] for a, n in ((rng.randint(0, 100), rng.randint(1, 40)) for _ in range(3))]
        shapes = [(len(c), rust.secret_bits(c)) for c in cuts if c] + [(rng.randint(1, 30), 0.0)]
        packed = pack_shapes(shapes)
        assert rust.secret_spans(text, packed) == python.secret_spans(text, packed), (text, shapes)
