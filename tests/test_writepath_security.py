"""Nothing unscrubbed leaves the write path: not the store or its WAL, not the ledger, the report (JSON
and text), the command's output, an exception message or a log line; and every text is scrubbed once."""

from __future__ import annotations

import json
import logging
import sqlite3
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import cli_support
import pytest
from memdedup.ingest import ingest_file, ingest_turns
from memdedup.operations import ExtractionRequest, ProviderFamily, mint_operation, parse_extraction
from memdedup.scope import Scope
from memdedup.scrub import CredentialScrubber
from memdedup.store import SQLiteGraphStore

ROOT = Path(__file__).resolve().parents[1]
DANA = [{"kind": "org", "id": "acme"}, {"kind": "user", "id": "dana"}]

GITHUB = "ghp_Zt9xQw3Lm8Rk2Vb7Nc4Hj6Pd1Fs5Gy0Ae2Kx"
AWS = "AKIAIOSFODNN7EXAMPLE"
ANTHROPIC = "sk-ant-api03-Qx7Lm2Rk9Vb4Nc8Hj1Pd6Fs3Gy5Ae0Kw"
SLACK = "xoxb-2048-4096-Zt9xQw3Lm8Rk2Vb7"
SECRETS = [GITHUB, AWS, ANTHROPIC, SLACK, "Sup3rS3cret!"]


def hostile_turns() -> list[Any]:
    """Every place a turn carries text, each holding a secret."""
    classified = {"memory_category": "fact", "subject": "user"}

    def op(**fields: Any) -> dict[str, Any]:
        return {"action": "upsert_node", "layer": "semantic", "importance": 6, **fields}

    ops = [
        op(label=f"CI authenticates with {GITHUB}", properties=dict(classified)),  # label
        op(label="deploy key", properties={**classified, "note": f"uses {AWS}"}),  # property value
        op(label="nested", properties={**classified, "db": {"password": "Sup3rS3cret!", "hosts": [AWS]}}),
        op(label="a key named by a token", properties={**classified, f"{GITHUB} token": "x"}),  # dropped key
        op(label="a key holding a secret", properties={**classified, f"note {SLACK}": "kept"}),  # kept key
        op(label="bad category", properties={"memory_category": f"cat {ANTHROPIC}", "subject": "user"}),
        op(label="bad subject", properties={"memory_category": "fact", "subject": f"{ANTHROPIC} " * 20}),
        op(label="bad layer", layer=f"layer {GITHUB}", properties=dict(classified)),
        {"action": f"do {AWS}", "label": "bad action"},
        op(id=f"id {SLACK}", properties=dict(classified)),  # the id as the text
        op(label="importance", importance=f"{GITHUB}", properties=dict(classified)),
    ]
    messages = [
        {"role": "user", "content": f"my token is {GITHUB} and the password is Sup3rS3cret!"},
        {"role": "assistant", "content": f"noted, I will not repeat {ANTHROPIC}"},
    ]
    return [
        {"scope": DANA, "turn": 1, "messages": messages, "output": json.dumps({"ops": ops})},
        {"scope": DANA, "turn": f"turn {GITHUB}", "output": "{}"},  # a bad turn number quoting a secret
        {"scope": [{"kind": "org", "id": GITHUB}], "turn": 2, "output": "{}"},  # a secret as a scope id
        {"scope": [{"kind": "org", "id": f"a\x1f{AWS}"}], "turn": 2, "output": "{}"},  # forged, quoted
        {"scope": DANA, "turn": 3, "output": f'{{"ops": [{{"action": "upsert_node", "label": "{SLACK}"'},
        # A turn whose write fails on its own data (through the library only): its message is reported.
        {
            "scope": DANA,
            "turn": 4,
            "output": {"ops": [op(label=f"pair {AWS}", properties={**classified, "k": {(AWS, 1): 1}})]},
        },
    ]


def leaks(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


def database_bytes(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in db.parent.iterdir() if p.name.startswith(db.name))


def test_no_secret_reaches_the_store_the_ledger_the_report_or_a_log(tmp_path: Path, caplog: Any) -> None:
    db = tmp_path / "m.sqlite"
    caplog.set_level(logging.DEBUG)
    report = ingest_turns(hostile_turns(), db)
    assert report.counts()["written"] >= 4 and report.transcript_rows == 2
    assert [(p.line, p.code) for p in report.problems] == [
        (2, "invalid_turn"),
        (3, "invalid_scope"),
        (4, "invalid_scope"),
    ]  # line 6's tuple key is scrubbed as its str(): the turn is written, not failed
    assert {d.code for d in report.dropped} >= {"classification_invalid", "unknown_layer", "unknown_action"}
    as_json = json.dumps(report.to_dict(), ensure_ascii=False)
    assert leaks(as_json) == []
    assert leaks(caplog.text) == []
    with SQLiteGraphStore(db) as store:
        stored = json.dumps(
            [n.to_dict() for n in store.all_nodes()]
            + [list(map(str, asdict(e).values())) for e in store.ledger()]
        )
    assert leaks(stored) == []
    raw = database_bytes(db)
    assert not [s for s in SECRETS if s.encode() in raw]
    assert "[REDACTED:" in stored and "[REDACTED:" in as_json


def test_the_command_prints_no_secret(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in hostile_turns()[:-1]), encoding="utf-8")
    env = cli_support.env()
    for extra in ([], ["--json"]):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "memdedup",
                "ingest",
                str(path),
                "--db",
                str(tmp_path / "m.sqlite"),
                *extra,
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 1, done.stderr
        assert leaks(done.stdout + done.stderr) == []
    with sqlite3.connect(tmp_path / "m.sqlite") as conn:
        dump = "\n".join(conn.iterdump())
    conn.close()
    assert leaks(dump) == []


def test_each_text_is_scrubbed_once_and_each_redaction_counted_once() -> None:
    calls: list[str] = []

    class Counting(CredentialScrubber):
        def scrub_text(self, text: str) -> Any:
            calls.append(text)
            return super().scrub_text(text)

    scope = Scope.parse(DANA)
    label = f"CI authenticates with {GITHUB}"
    result = parse_extraction(
        json.dumps(
            {
                "ops": [
                    {
                        "action": "upsert_node",
                        "label": label,
                        "properties": {"memory_category": "fact", "subject": "user"},
                    }
                ]
            }
        ),
        ExtractionRequest(scope=scope, turn=1),
        scrubber=Counting(),
    )
    (memory,) = result.memories
    assert memory.redactions == ("GITHUB_TOKEN",)
    assert calls.count(label) == 1  # the label, once
    assert not any("[REDACTED:" in text for text in calls)  # no scrubbed text is scrubbed again
    # mint_operation (the seed's signature) does the same: the scrub, then the mint.
    again = mint_operation(
        {
            "action": "upsert_node",
            "label": label,
            "properties": {"memory_category": "fact", "subject": "user"},
        },
        0,
        ExtractionRequest(scope=scope, turn=1),
        ProviderFamily.UNKNOWN,
        CredentialScrubber(),
    )
    assert again.record == memory.record  # type: ignore[union-attr]


def test_a_dropped_key_path_is_scrubbed() -> None:
    result = parse_extraction(
        {
            "ops": [
                {
                    "action": "upsert_node",
                    "label": "x",
                    "properties": {
                        "memory_category": "fact",
                        "subject": "user",
                        "cfg": {f"{GITHUB} token": "v"},
                    },
                }
            ]
        },
        ExtractionRequest(scope=Scope.parse(DANA), turn=1),
    )
    (memory,) = result.memories
    # The key name's token is redacted (GITHUB_TOKEN), then the credential-named key is dropped, its
    # path built from the scrubbed name.
    assert "KEY:cfg.[REDACTED:GITHUB_TOKEN] token" in memory.redactions
    assert leaks(repr(memory)) == []


def test_a_credential_scope_id_is_refused_without_quoting_it(tmp_path: Path) -> None:
    report = ingest_turns([{"scope": {"org": AWS}, "turn": 1, "output": "{}"}], tmp_path / "m.sqlite")
    (problem,) = report.problems
    assert problem.code == "invalid_scope" and AWS not in problem.reason and "credential" in problem.reason
    # An e-mail address is a usual user id: refused by nothing, even with PII redaction on.
    report = ingest_turns(
        [{"scope": {"user": "dana@example.com"}, "turn": 1, "output": "{}"}],
        tmp_path / "m.sqlite",
        scrubber=CredentialScrubber(pii=True),
    )
    assert report.problems == [] and report.turns == 1


def test_store_errors_never_quote_the_text(tmp_path: Path) -> None:
    with SQLiteGraphStore(tmp_path / "m.sqlite") as store:
        with pytest.raises(Exception) as raised:
            store.upsert_node(Scope.parse(DANA), node_id="n", layer="semantic", label=f"{GITHUB} \ud800")
        assert GITHUB not in str(raised.value) and "surrogate" in str(raised.value)


def test_the_example_still_reads_back_its_secrets_scrubbed(tmp_path: Path) -> None:
    report = ingest_file(ROOT / "examples" / "turns.jsonl", tmp_path / "m.sqlite")
    assert dict(report.redactions)["GITHUB_TOKEN"] == 1
