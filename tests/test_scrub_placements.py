"""End to end: no secret reaches the store or the report, and benign text comes out unchanged.

Black-box, against the real ``memdedup ingest`` command and real SQLite, independent of how the scrubber
works. A corpus of secret SHAPES (tests/data/leak_corpus/secret_shapes.json: provider prefixes, alphabets
and lengths, expanded with a seeded generator, so the repository holds no secret-looking string and none
is real) is written into turns JSONL files, one file per PLACEMENT (prose in a label, a property value, a
nested value, a key name, a chat message, the label itself, prose around the model's JSON, op fields
the report echoes, a dropped key under a secret parent key, ...). Each file is ingested twice, once with
the text report (under ``-X dev`` with DEBUG logging on, so log lines and warnings land in stderr) and
once with ``--json``, into its own database. After the process exits, the scan reads the raw bytes of
every file the run left beside the database (the database, ``-wal``, ``-shm``) and the stdout and stderr
of the command, and looks for every secret substring in the forms a leak could take (UTF-8, JSON escapes,
``\\/``, UTF-16, lower case) and for 16-character fragments of long secrets (a report that truncates a
label, a redaction that stops short). Failures are printed as tables of shape x placement with a short
prefix of each secret, never the secret itself.

Controls prove the scan can fail: secrets planted directly into a copy of a database are found in every
form, the held-open WAL really holds the run's rows, and a store built from benign text matches no
secret (no false positives from the schema, timestamps or ids).

Benign look-alikes (tests/data/leak_corpus/benign.json) are ingested in the same placements and must come
out byte for byte: labels, property keys and values, transcript rows, and the ``--json`` report with no
redaction at all.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import sqlite3
import subprocess
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cli_support
import numpy as np
import pytest
from memdedup.scope import Scope
from memdedup.store import SQLiteGraphStore

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(__file__).resolve().parent / "data" / "leak_corpus"
CLI_TIMEOUT = 300  # seconds for one ingest run; a run that needs longer fails as a hang

# The providers issue 23 names; the corpus must keep a shape for each (it may grow, never shrink).
REQUIRED_PROVIDERS = frozenset(
    {
        "AWS", "GCP", "Azure", "DigitalOcean", "Alibaba", "GitHub", "GitLab", "Bitbucket", "npm", "PyPI",
        "Docker", "NuGet", "RubyGems", "OpenAI", "Anthropic", "Hugging Face", "Cohere", "Replicate", "Groq",
        "Stripe", "Square", "PayPal", "Shopify", "Twilio", "SendGrid", "Mailgun", "Mailchimp", "Slack",
        "Discord", "Telegram", "Notion", "Linear", "Atlassian", "Datadog", "New Relic", "Sentry",
        "HashiCorp Vault", "Terraform", "Heroku", "Vercel", "Netlify", "Cloudflare", "Okta", "Auth0", "JWT",
        "private key", "URL credentials", "connection string", "CLI", "netrc", "assignment", "passphrase",
        "HTTP header",
    }
)  # fmt: skip
# The credential-named keys issue 23 found kept; the key corpus must keep each.
REQUIRED_KEYS = frozenset(
    {
        "bearer", "pass", "creds", "pin", "key", "AccountKey", "signature", "session_id", "otp",
        "private_key_id", "client_secret", "apiKey", "x-api-key", "db_pass",
    }
)  # fmt: skip
MIN_SHAPES = 65
MIN_BENIGN = 40


# ---------------------------------------------------------------------------------------------------
# The corpus: templates expanded with a seeded generator
# ---------------------------------------------------------------------------------------------------
_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_LOWER = "abcdefghijklmnopqrstuvwxyz"
_DIGITS = "0123456789"
ALPHABETS = {
    "alnum": _UPPER + _LOWER + _DIGITS,
    "alpha": _UPPER + _LOWER,
    "upper": _UPPER + _DIGITS,
    "lower": _LOWER + _DIGITS,
    "hex": _DIGITS + "abcdef",
    "HEX": _DIGITS + "ABCDEF",
    "digits": _DIGITS,
    "b64": _UPPER + _LOWER + _DIGITS + "+/",
    "b64url": _UPPER + _LOWER + _DIGITS + "-_",
    "bech32": "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L",
    "pw": _UPPER + _LOWER + _DIGITS + "!$%*-_+.^",
}
_LITERALS = {"nl": "\n", "crlf": "\r\n", "bsn": "\\n"}
_TEMPLATE_TOKEN = re.compile(r"<<|>>|\{\{|\}\}|\{([A-Za-z0-9]+)(?::([0-9]+))?\}")
# Short secrets match by chance in a few hundred KB of database bytes (timestamps hold 6-digit runs).
MIN_SECRET_CHARS = 8
FRAGMENT = 16  # the fragment length searched for inside long secrets
FRAGMENT_MIN_BODY = 24  # secrets whose random body is at least this long are also searched by fragment


@dataclass(frozen=True)
class Secret:
    """One span that must not survive: its text and the length of its literal public prefix."""

    text: str
    public: int = 0

    @property
    def body(self) -> str:
        return self.text[self.public :]

    @property
    def hint(self) -> str:
        """A short prefix to name the secret in a failure message without printing it."""
        shown = max(2, min(self.public + 4, len(self.text) // 3))
        return f"{self.text[:shown]!r}...({len(self.text)} chars)"


@dataclass(frozen=True)
class Expanded:
    text: str
    secrets: tuple[Secret, ...]


def _random_run(alphabet_name: str, size: int, rng: random.Random) -> str:
    """``size`` characters of the class; realistic: a long mixed run has a digit and a letter, and a run
    with punctuation in its class starts and ends with a letter or digit."""
    alphabet = ALPHABETS[alphabet_name]
    edges = "".join(c for c in alphabet if c.isalnum())
    needs_digit = any(c.isdigit() for c in alphabet) and any(c.isalpha() for c in alphabet) and size >= 8
    while True:
        chars = [rng.choice(alphabet) for _ in range(size)]
        if size >= 2 and edges != alphabet:
            chars[0], chars[-1] = rng.choice(edges), rng.choice(edges)
        run = "".join(chars)
        if not needs_digit or (any(c.isdigit() for c in run) and any(c.isalpha() for c in run)):
            return run


_ONSETS = "bdfgklmnprstvz"
_VOWELS = "aeiou"


def _word(rng: random.Random) -> str:
    """A passphrase word: four consonant-vowel syllables and a closing consonant (``tavorekumis``)."""
    return "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(4)) + rng.choice(_ONSETS)


def expand(template: str, rng: random.Random) -> Expanded:
    """Expand a template of the corpus syntax (see secret_shapes.json's 'about')."""
    out: list[str] = []
    secrets: list[Secret] = []
    current: list[str] | None = None
    public: int | None = None
    position = 0

    def emit(text: str, *, random_part: bool) -> None:
        nonlocal public
        out.append(text)
        if current is not None:
            if random_part and public is None:
                public = sum(map(len, current))
            current.append(text)

    for match in _TEMPLATE_TOKEN.finditer(template):
        if match.start() > position:
            emit(template[position : match.start()], random_part=False)
        position = match.end()
        token = match.group(0)
        if token == "<<":
            assert current is None, f"nested << in {template!r}"
            current, public = [], None
        elif token == ">>":
            assert current is not None, f"unbalanced >> in {template!r}"
            text = "".join(current)
            secrets.append(Secret(text, public if public is not None else len(text)))
            current = None
        elif token in ("{{", "}}"):
            emit(token[0], random_part=False)
        elif match.group(1) in _LITERALS:
            emit(_LITERALS[match.group(1)], random_part=False)
        elif match.group(1) == "word":
            emit(_word(rng), random_part=True)
        else:
            assert match.group(1) in ALPHABETS and match.group(2), f"bad token {token!r} in {template!r}"
            emit(_random_run(match.group(1), int(match.group(2)), rng), random_part=True)
    emit(template[position:], random_part=False)
    assert current is None, f"unterminated << in {template!r}"
    return Expanded("".join(out), tuple(secrets))


def _rng(*parts: str) -> random.Random:
    return random.Random(hashlib.sha256("\x1f".join(("leakscan", *parts)).encode()).digest())


@dataclass(frozen=True)
class Sample:
    """One secret-bearing text in one placement; ``owner`` is the shape id or the credential key."""

    owner: str
    placement: str
    text: str
    secrets: tuple[Secret, ...]
    provider: str = ""
    key: str = ""


def _load(name: str) -> dict[str, Any]:
    with open(CORPUS / name, encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


SHAPES: list[dict[str, Any]] = _load("secret_shapes.json")["shapes"]
CREDENTIAL_KEYS: list[dict[str, Any]] = _load("credential_keys.json")["keys"]
BENIGN = _load("benign.json")
BENIGN_TEXTS: list[dict[str, Any]] = BENIGN["texts"]
BENIGN_PROPERTIES: list[dict[str, Any]] = BENIGN["properties"]


def shape_sample(shape: Mapping[str, Any], placement: str) -> Sample:
    """The shape expanded for one placement: every (shape, placement) has its own secrets, so a hit in
    any database names exactly where it came from."""
    expanded = expand(shape["template"], _rng("shape", shape["id"], placement))
    return Sample(shape["id"], placement, expanded.text, expanded.secrets, provider=shape["provider"])


def key_sample(entry: Mapping[str, Any], placement: str) -> Sample:
    expanded = expand(entry["value"], _rng("key", entry["key"], placement))
    return Sample(entry["key"], placement, expanded.text, expanded.secrets, key=entry["key"])


# ---------------------------------------------------------------------------------------------------
# Placements: a sample -> the turns (JSON objects, or raw lines) that carry it
# ---------------------------------------------------------------------------------------------------
def scope_of(family: str, placement: str, owner: str) -> list[dict[str, str]]:
    # One scope per (placement, owner): nothing collapses across samples, and rows map back to a sample.
    return [
        {"kind": "org", "id": f"leakscan-{family}"},
        {"kind": "placement", "id": placement},
        {"kind": "case", "id": owner},
    ]


def scope_path_of(family: str, placement: str, owner: str) -> str:
    return Scope.parse(scope_of(family, placement, owner)).scope_path


def op(label: Any, properties: Mapping[Any, Any] | None = None, **fields: Any) -> dict[str, Any]:
    props: dict[Any, Any] = {"memory_category": "configuration", "subject": "leakscan"}
    props.update(properties or {})
    built = {
        "action": "upsert_node",
        "layer": "semantic",
        "label": label,
        "properties": props,
        "importance": 7,
    }
    built.update(fields)
    return built


def marker_label(placement: str, owner: str) -> str:
    return f"leakscan marker {placement} {owner}"


def turn(
    family: str,
    sample: Sample,
    ops: list[Any] | None = None,
    *,
    number: int = 1,
    messages: list[dict[str, Any]] | None = None,
    output: str | None = None,
) -> dict[str, Any]:
    if output is None:
        output = json.dumps({"ops": ops or []})
    return {
        "scope": scope_of(family, sample.placement, sample.owner),
        "turn": number,
        "provider": "openai",
        "messages": messages
        if messages is not None
        else [
            {"role": "user", "content": f"leakscan request {sample.placement} {sample.owner}"},
            {"role": "assistant", "content": "Noted."},
        ],
        "output": output,
    }


def marker(sample: Sample) -> dict[str, Any]:
    """A benign op in every secret-bearing turn: its row proves the turn was committed, not lost."""
    return op(marker_label(sample.placement, sample.owner))


Line = dict[str, Any] | bytes
Builder = Callable[[str, Sample], list[Line]]


def _label_prose(family: str, s: Sample) -> list[Line]:
    label = f"The {s.provider or s.owner} deploy uses {s.text} until the next rotation"
    return [turn(family, s, [op(label), marker(s)])]


def _property_value(family: str, s: Sample) -> list[Line]:
    return [turn(family, s, [op(f"{s.owner} deploy notes", {"note": s.text}), marker(s)])]


def _nested_value(family: str, s: Sample) -> list[Line]:
    nested = {"hosts": [{"name": "web-1", "env": {"notes": s.text}}]}
    return [turn(family, s, [op(f"{s.owner} host settings", {"deploy": nested}), marker(s)])]


def _key_name(family: str, s: Sample) -> list[Line]:
    return [turn(family, s, [op(f"{s.owner} key settings", {s.text: "rotated monthly"}), marker(s)])]


def _chat_message(family: str, s: Sample) -> list[Line]:
    messages = [
        {"role": "user", "content": f"Here is the {s.provider} setup: {s.text} thanks"},
        {"role": "assistant", "content": f"Noted, I will not repeat {s.text} anywhere."},
    ]
    return [turn(family, s, [marker(s)], messages=messages)]


def _label_is_secret(family: str, s: Sample) -> list[Line]:
    return [turn(family, s, [op(s.text), marker(s)])]


def _output_prose(family: str, s: Sample) -> list[Line]:
    """The secret in the model's text around and beside its JSON, never inside an op."""
    ops = json.dumps({"ops": [marker(s)]}, indent=2)
    fenced = f"I saw {s.text} in the chat.\n```json\n{ops}\n```\nRemember {s.text}."
    prose_only = f"Nothing to store, but {s.text} was mentioned."
    truncated = json.dumps({"ops": [marker(s)]})[:-2] + ', {"action": "upsert_node", "label": "' + s.text
    return [
        turn(family, s, output=fenced),
        turn(family, s, number=2, output=prose_only),
        turn(family, s, number=3, output=truncated),
    ]


def _op_fields(family: str, s: Sample) -> list[Line]:
    """The secret in op fields a refusal reason may quote: action, layer, category; and the subject."""
    ops = [
        op(f"{s.owner} action field", action=s.text),
        op(f"{s.owner} layer field", layer=s.text),
        op(f"{s.owner} category field", {"memory_category": s.text}),
        op(f"{s.owner} subject field", {"subject": s.text}),
        op(f"{s.owner} importance field", importance=s.text),
        marker(s),
    ]
    return [turn(family, s, ops)]


def _line_fields(family: str, s: Sample) -> list[Line]:
    """The secret in a line that is not a valid turn: the turn number, broken JSON. (A line that is not
    UTF-8 makes the CLI refuse the whole input: :func:`test_an_input_that_is_not_utf8_leaks_nothing`.)"""
    bad_turn = turn(family, s, [marker(s)])
    bad_turn["turn"] = s.text
    scope = json.dumps(scope_of(family, s.placement, s.owner))
    broken_json = ('{"scope": ' + scope + ', "turn": 2, "output": "' + s.text).encode()
    return [turn(family, s, [marker(s)], number=1), bad_turn, broken_json]


def _broken_utf8_line(family: str, s: Sample) -> bytes:
    scope = json.dumps(scope_of(family, s.placement, s.owner))
    return ('{"scope": ' + scope + ', "turn": 3, "output": "').encode() + s.text.encode() + b'\xff"}'


def _scope_id(family: str, s: Sample) -> list[Line]:
    """The secret as a scope id (a token pasted where an id belongs), in each form a scope takes, glued to
    ``_token`` too: every such turn is refused (``invalid_scope``), so the id is never stored in a
    ``scope_path`` nor printed; the marker turn, in a clean scope, is written."""
    own = scope_of(family, s.placement, s.owner)
    ops = [op(f"{s.owner} scoped by a secret"), marker(s)]
    levels = turn(family, s, ops, number=2)
    levels["scope"] = [*own, {"kind": "token", "id": s.text}]
    pairs = turn(family, s, ops, number=3)
    pairs["scope"] = [*own[:2], own[2], ["key", s.text + "_token"]]
    mapping = turn(family, s, ops, number=4)
    mapping["scope"] = {**{level["kind"]: level["id"] for level in own}, "account": s.text}
    mapping["case"] = own[2]  # ignored by ingest: names the sample's scope in the line, as the others do
    for refused in (levels, pairs, mapping):
        refused["expect"] = "invalid_scope"  # not a field of a turn: ingest ignores it, the test reads it
    return [turn(family, s, [marker(s)], number=1), levels, pairs, mapping]


def _key_parent(family: str, s: Sample) -> list[Line]:
    """A credential-named key dropped under a secret PARENT key: the dropped path must not print it."""
    child = {"password": "Zz9" + hashlib.sha256(s.text.encode()).hexdigest()[:13], "region": "eu-west-1"}
    properties = {s.text: child, "hosts": [{s.text: {"token": "abc"}}]}
    return [turn(family, s, [op(f"{s.owner} parent key", properties), marker(s)])]


SECRET_PLACEMENTS: dict[str, Builder] = {
    "label_prose": _label_prose,
    "property_value": _property_value,
    "nested_value": _nested_value,
    "key_name": _key_name,
    "chat_message": _chat_message,
    "label_is_secret": _label_is_secret,
    "output_prose": _output_prose,
    "op_fields": _op_fields,
    "line_fields": _line_fields,
    "key_parent": _key_parent,
    "scope_id": _scope_id,
}


def _credential_key_top(family: str, s: Sample) -> list[Line]:
    return [turn(family, s, [op(f"{s.owner} service account", {s.key: s.text}), marker(s)])]


def _credential_key_nested(family: str, s: Sample) -> list[Line]:
    nested = {"services": [{"name": "api", "settings": {s.key: s.text}}]}
    return [turn(family, s, [op(f"{s.owner} nested services", nested), marker(s)])]


KEY_PLACEMENTS: dict[str, Builder] = {"key_top": _credential_key_top, "key_nested": _credential_key_nested}


def samples_for(placement: str) -> list[Sample]:
    if placement in KEY_PLACEMENTS:
        return [key_sample(entry, placement) for entry in CREDENTIAL_KEYS]
    return [shape_sample(shape, placement) for shape in SHAPES]


def build_lines(placement: str) -> tuple[list[Sample], list[Line]]:
    family = "keys" if placement in KEY_PLACEMENTS else "shapes"
    builder = KEY_PLACEMENTS.get(placement) or SECRET_PLACEMENTS[placement]
    samples = samples_for(placement)
    return samples, [line for sample in samples for line in builder(family, sample)]


def write_jsonl(path: Path, lines: Iterable[Line]) -> Path:
    with open(path, "wb") as handle:
        for line in lines:
            raw = line if isinstance(line, bytes) else json.dumps(line, ensure_ascii=False).encode()
            handle.write(raw + b"\n")
    return path


# ---------------------------------------------------------------------------------------------------
# Running the real command
# ---------------------------------------------------------------------------------------------------
# The text run: the real CLI entry point, with every logger at DEBUG into stderr, under -X dev (warnings).
_LOGGING_MAIN = (
    "import logging, sys\n"
    "logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)\n"
    "from memdedup.cli import main\n"
    "raise SystemExit(main(sys.argv[1:]))\n"
)


def cli_env() -> dict[str, str]:
    return cli_support.env()


@dataclass
class Run:
    """One ``memdedup ingest`` run: its database directory (nothing else is in it) and its output."""

    mode: str  # "text" or "json"
    directory: Path
    db: Path
    returncode: int
    stdout: bytes
    stderr: bytes
    #: Every file the run left beside the database (db, -wal, -shm, anything else), read the moment the
    #: process exited: opening the database later (to read rows) would checkpoint a WAL away.
    files: dict[str, bytes]

    def report(self) -> dict[str, Any] | None:
        if self.mode != "json":
            return None
        try:
            data: dict[str, Any] = json.loads(self.stdout)
        except ValueError:
            return None
        return data


def run_ingest(turns: Path, directory: Path, *, mode: str, extra: Sequence[str] = ()) -> Run:
    directory.mkdir(parents=True, exist_ok=True)
    db = directory / "memory.sqlite"
    if mode == "json":
        argv = [sys.executable, "-m", "memdedup", "ingest", str(turns), "--db", str(db), "--json", *extra]
    else:
        argv = [
            sys.executable,
            "-X",
            "dev",
            "-c",
            _LOGGING_MAIN,
            "ingest",
            str(turns),
            "--db",
            str(db),
            *extra,
        ]
    done = subprocess.run(argv, capture_output=True, env=cli_env(), timeout=CLI_TIMEOUT, check=False)
    return Run(mode, directory, db, done.returncode, done.stdout, done.stderr, directory_bytes(directory))


def directory_bytes(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def masked(text: bytes | str, samples: Iterable[Sample], limit: int = 1500) -> str:
    """Output safe to print in a failure: every secret of ``samples`` replaced, then the tail."""
    shown = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    for sample in samples:
        for secret in sample.secrets:
            shown = shown.replace(secret.text, "[SECRET]")
            if len(secret.body) >= FRAGMENT:
                shown = shown.replace(secret.body[:FRAGMENT], "[SECRET...]")
    return shown[-limit:]


def check_run_is_real(run: Run, samples: Sequence[Sample], *, turns_expected: int | None = None) -> None:
    """The run ingested its file: it exited as a run with a report does, with no traceback, and (json)
    its report says how many turns it read. A crashed run would otherwise pass every leak check."""
    if run.returncode not in (0, 1) or b"Traceback (most recent call last)" in run.stderr:
        pytest.fail(
            f"memdedup ingest ({run.mode}) exited {run.returncode}; stderr (secrets masked):\n"
            + masked(run.stderr, samples),
            pytrace=False,
        )
    if run.mode == "json":
        report = run.report()
        if report is None:
            pytest.fail("memdedup ingest --json printed no JSON report", pytrace=False)
        if turns_expected is not None and report["counts"]["turns"] != turns_expected:
            pytest.fail(
                f"the report counts {report['counts']['turns']} turns, the file has {turns_expected}",
                pytrace=False,
            )


# ---------------------------------------------------------------------------------------------------
# The scan
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Needle:
    form: str
    data: bytes
    fragment: bool = False
    folded: bool = False  # searched in the lower-cased haystack


def _json_inner(text: str, *, ensure_ascii: bool) -> str:
    return json.dumps(text, ensure_ascii=ensure_ascii)[1:-1]


def needles_of(secret: Secret) -> list[Needle]:
    """Every form the secret (and each 16-character fragment of a long random body) could leak in."""
    pieces: list[tuple[str, bool]] = [(secret.text, False)]
    body = secret.body
    if len(body) >= FRAGMENT_MIN_BODY:
        starts = {0, (len(body) - FRAGMENT) // 2, len(body) - FRAGMENT}
        pieces += [(body[start : start + FRAGMENT], True) for start in sorted(starts)]
    found: dict[bytes, Needle] = {}
    for text, fragment in pieces:
        forms = {
            "utf-8": text,
            "json": _json_inner(text, ensure_ascii=False),
            "json-ascii": _json_inner(text, ensure_ascii=True),
            "json-\\/": _json_inner(text, ensure_ascii=True).replace("/", "\\/"),
        }
        for form, value in forms.items():
            data = value.encode("utf-8", "surrogatepass")
            found.setdefault(data, Needle(form, data, fragment))
        for codec in ("utf-16-le", "utf-16-be"):
            data = text.encode(codec, "surrogatepass")
            found.setdefault(data, Needle(codec, data, fragment))
        lowered = text.lower().encode("utf-8", "surrogatepass")
        if lowered != text.encode("utf-8", "surrogatepass"):
            found.setdefault(b"\0lower" + lowered, Needle("lower-case", lowered, fragment, folded=True))
    return list(found.values())


@dataclass(frozen=True)
class Hit:
    owner: str
    placement: str
    sink: str
    form: str
    hint: str
    fragment: bool


_GRAM = 8  # candidates are found by their first 8 bytes in an index of the haystack, then confirmed


def _gram_index(data: bytes) -> np.ndarray:
    """Every 8-byte window of ``data`` as a little-endian uint64, sorted and unique (numpy, so a WAL of
    megabytes is indexed in a fraction of a second)."""
    if len(data) < _GRAM:
        return np.empty(0, dtype="<u8")
    parts = [np.frombuffer(data, dtype="<u8", count=(len(data) - k) // _GRAM, offset=k) for k in range(_GRAM)]
    return np.unique(np.concatenate(parts))


def _present(prefixes: Sequence[bytes], data: bytes) -> set[bytes]:
    """The 8-byte prefixes that occur somewhere in ``data``."""
    if not prefixes:
        return set()
    index = _gram_index(data)
    if not len(index):
        return set()
    keys = np.array([int.from_bytes(prefix, "little") for prefix in prefixes], dtype="<u8")
    slots = np.minimum(np.searchsorted(index, keys), len(index) - 1)
    return {prefix for prefix, found in zip(prefixes, index[slots] == keys, strict=True) if found}


def scan(haystacks: Mapping[str, bytes], samples: Iterable[Sample]) -> list[Hit]:
    """Every (sample secret, sink) pair where a form of the secret is in the sink's bytes."""
    entries = [(sample, secret, needles_of(secret)) for sample in samples for secret in sample.secrets]
    raw_prefixes = sorted(
        {n.data[:_GRAM] for *_, ns in entries for n in ns if len(n.data) >= _GRAM and not n.folded}
    )
    folded_prefixes = sorted(
        {n.data[:_GRAM] for *_, ns in entries for n in ns if len(n.data) >= _GRAM and n.folded}
    )
    hits: list[Hit] = []
    for sink, data in haystacks.items():
        folded = data.lower()
        candidates = {False: _present(raw_prefixes, data), True: _present(folded_prefixes, folded)}
        for sample, secret, needles in entries:
            for needle in needles:
                if len(needle.data) >= _GRAM and needle.data[:_GRAM] not in candidates[needle.folded]:
                    continue
                if needle.data in (folded if needle.folded else data):
                    hits.append(
                        Hit(sample.owner, sample.placement, sink, needle.form, secret.hint, needle.fragment)
                    )
                    break
    return hits


def hits_table(hits: Sequence[Hit], title: str) -> str:
    """Owner (x placement, when the hits span several) x sink, with the form each was found in and a
    short prefix of the secret."""
    by_owner: dict[str, list[Hit]] = defaultdict(list)
    mixed = len({hit.placement for hit in hits}) > 1
    for hit in hits:
        by_owner[f"{hit.owner} @ {hit.placement}" if mixed else hit.owner].append(hit)
    lines = [f"{title}: {len(by_owner)} leaking, {len(hits)} (secret, sink) hits", ""]
    width = max((len(owner) for owner in by_owner), default=5)
    for owner, owned in sorted(by_owner.items()):
        cells = sorted({f"{h.sink}[{h.form}{', fragment' if h.fragment else ''}] {h.hint}" for h in owned})
        lines.append(f"  {owner:<{width}}  " + f"\n  {'':<{width}}  ".join(cells))
    return "\n".join(lines)


def store_haystacks(runs: Sequence[Run]) -> dict[str, bytes]:
    return {f"{run.mode}:{name}": data for run in runs for name, data in run.files.items()}


def report_haystacks(runs: Sequence[Run]) -> dict[str, bytes]:
    sinks: dict[str, bytes] = {}
    for run in runs:
        sinks[f"{run.mode}:stdout"] = run.stdout
        sinks[f"{run.mode}:stderr"] = run.stderr
    return sinks


# ---------------------------------------------------------------------------------------------------
# One ingest per placement family (text and --json), run once per module, two at a time
# ---------------------------------------------------------------------------------------------------
@dataclass
class PlacementRuns:
    placement: str
    samples: list[Sample]
    lines: list[Line]
    runs: list[Run] = field(default_factory=list)

    _hits: dict[str, list[Hit]] = field(default_factory=dict)

    @property
    def turns(self) -> int:
        return sum(
            1
            for line in self.lines
            if isinstance(line, dict) and isinstance(line.get("turn"), int) and "expect" not in line
        )

    def store_hits(self) -> list[Hit]:
        if "store" not in self._hits:
            self._hits["store"] = scan(store_haystacks(self.runs), self.samples)
        return self._hits["store"]

    def report_hits(self) -> list[Hit]:
        if "report" not in self._hits:
            self._hits["report"] = scan(report_haystacks(self.runs), self.samples)
        return self._hits["report"]


ALL_SECRET_PLACEMENTS = (*SECRET_PLACEMENTS, *KEY_PLACEMENTS)


@pytest.fixture(scope="module")
def secret_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, PlacementRuns]:
    base = tmp_path_factory.mktemp("leakscan")
    inputs = base / "inputs"
    inputs.mkdir()
    families: dict[str, PlacementRuns] = {}
    jobs: list[tuple[PlacementRuns, Path, Path, str]] = []
    for placement in ALL_SECRET_PLACEMENTS:
        samples, lines = build_lines(placement)
        family = families[placement] = PlacementRuns(placement, samples, lines)
        path = write_jsonl(inputs / f"{placement}.jsonl", lines)
        for mode in ("text", "json"):
            jobs.append((family, path, base / f"{placement}-{mode}", mode))
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(lambda job: run_ingest(job[1], job[2], mode=job[3]), jobs))
    for (family, *_), run in zip(jobs, runs, strict=True):
        family.runs.append(run)
    return families


def stored_labels(db: Path) -> dict[str, list[str]]:
    """scope path -> the labels stored there (through the store's own reader)."""
    labels: dict[str, list[str]] = defaultdict(list)
    with SQLiteGraphStore(db) as store:
        for node in store.all_nodes():
            labels[node.scope_path].append(node.label)
    return labels


def missing_markers(runs: PlacementRuns) -> list[str]:
    """Samples whose marker row is missing from a run's store: the turn was lost, not scrubbed."""
    family = "keys" if runs.placement in KEY_PLACEMENTS else "shapes"
    missing = []
    for run in runs.runs:
        labels = stored_labels(run.db)
        for sample in runs.samples:
            path = scope_path_of(family, sample.placement, sample.owner)
            if marker_label(sample.placement, sample.owner) not in labels.get(path, []):
                missing.append(f"{run.mode}:{sample.owner}")
    return missing


# ---------------------------------------------------------------------------------------------------
# The corpus itself
# ---------------------------------------------------------------------------------------------------
def test_corpus_is_broad_and_well_formed() -> None:
    ids = [shape["id"] for shape in SHAPES]
    assert len(ids) == len(set(ids)), "shape ids must be unique"
    assert len(ids) >= MIN_SHAPES, f"{len(ids)} shapes; issue 23 implies at least {MIN_SHAPES}"
    providers = {shape["provider"] for shape in SHAPES}
    assert REQUIRED_PROVIDERS <= providers, f"no shape for {sorted(REQUIRED_PROVIDERS - providers)}"
    keys = [entry["key"] for entry in CREDENTIAL_KEYS]
    assert len(keys) == len(set(keys)) and REQUIRED_KEYS <= set(keys), sorted(REQUIRED_KEYS - set(keys))
    assert len(BENIGN_TEXTS) >= MIN_BENIGN, f"{len(BENIGN_TEXTS)} benign look-alikes, want {MIN_BENIGN}+"
    seen: dict[str, tuple[str, str]] = {}
    for placement in ALL_SECRET_PLACEMENTS:
        samples, lines = build_lines(placement)
        for sample in samples:
            assert sample.secrets, f"{sample.owner}: a template without a << >> secret span"
            for secret in sample.secrets:
                assert secret.text in sample.text
                assert len(secret.text) >= MIN_SECRET_CHARS, (
                    f"{sample.owner}: {secret.hint} is too short to scan"
                )
                other = seen.setdefault(secret.text, (sample.owner, placement))
                assert other == (sample.owner, placement), f"{secret.hint} generated twice"
        # A secret may appear only in the lines that carry its own sample (scopes and markers never hold
        # one), or a hit could not be mapped back to its shape and placement.
        encoded = [_line_bytes(line) for line in lines]
        for sample in samples:
            own_scope = json.dumps(scope_of("x", placement, sample.owner)[2])[:-1].encode()
            for secret in sample.secrets:
                needle = secret.text.encode()
                carriers = [data for data in encoded if needle in data]
                assert carriers and all(own_scope in data for data in carriers), sample.owner


def _line_bytes(line: Line) -> bytes:
    return line if isinstance(line, bytes) else json.dumps(line, ensure_ascii=False).encode()


def test_expansion_is_deterministic_and_marks_secrets() -> None:
    template = "pre <<sk-ant-api03-{b64url:30}AA>> mid <<{word}>> {{x}} {bsn}{nl}"
    one = expand(template, _rng("t"))
    two = expand(template, _rng("t"))
    assert one == two
    first, word = one.secrets
    assert first.text.startswith("sk-ant-api03-") and first.public == len("sk-ant-api03-")
    assert len(first.text) == len("sk-ant-api03-") + 32 and re.fullmatch("[a-z]{9}", word.text)
    assert one.text.endswith(" {x} \\n\n") and one.text.startswith("pre sk-ant-api03-")


# ---------------------------------------------------------------------------------------------------
# Controls: the scan finds what is there, and only that
# ---------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_scanner_finds_planted_secrets_in_every_form(
    secret_runs: dict[str, PlacementRuns], tmp_path: Path
) -> None:
    """Plant secrets straight into a copy of a real run's database, in each encoding a leak could take,
    and in a report: the scan must find every one (so a clean scan means something)."""
    source = secret_runs["property_value"].runs[1]
    copy_dir = tmp_path / "planted"
    copy_dir.mkdir()
    for name, data in source.files.items():
        (copy_dir / name).write_bytes(data)
    by_owner = {sample.owner: sample for sample in secret_runs["label_prose"].samples}
    planted = {
        "github_classic_pat": lambda s: s.encode(),
        "url_password_with_slash": lambda s: json.dumps(s).replace("/", "\\/").encode(),
        "pem_rsa_newlines": lambda s: s.encode("utf-16-le"),
        "openai_project_key": lambda s: s.lower().encode(),
        "anthropic_api_key": lambda s: s[:40].encode(),  # truncated, as a report column would print it
    }
    conn = sqlite3.connect(copy_dir / "memory.sqlite")
    try:
        conn.execute("CREATE TABLE planted (data BLOB)")
        for owner, encode in planted.items():
            for secret in by_owner[owner].secrets:
                conn.execute("INSERT INTO planted VALUES (?)", (encode(secret.text),))
        conn.commit()
    finally:
        conn.close()
    haystacks = {name: (copy_dir / name).read_bytes() for name in os.listdir(copy_dir)}
    samples = [by_owner[owner] for owner in planted]
    found = {(hit.owner, hit.form) for hit in scan(haystacks, samples)}
    assert {owner for owner, _ in found} == set(planted), found
    assert ("url_password_with_slash", "json-\\/") in found
    assert ("pem_rsa_newlines", "utf-16-le") in found
    assert ("openai_project_key", "lower-case") in found
    # In a report: a secret printed once, in the middle of a line.
    report = (
        b"Written (1)\n  3  org:x  1  semantic  ab12  the key "
        + by_owner["npm_token"].secrets[0].text.encode()
    )
    assert [hit.owner for hit in scan({"stdout": report}, [by_owner["npm_token"]])] == ["npm_token"]


@pytest.mark.slow
def test_scanner_matches_nothing_in_a_store_of_benign_text(benign_runs: dict[str, Run]) -> None:
    """No false positives: the bytes of stores and reports built from benign text hold no form of any
    secret of the corpus (schema text, timestamps, record ids and hashes match nothing)."""
    samples = [sample for placement in ALL_SECRET_PLACEMENTS for sample in samples_for(placement)]
    runs = list(benign_runs.values())
    haystacks = {**store_haystacks(runs), **report_haystacks(runs)}
    assert sum(len(data) for data in haystacks.values()) > 50_000  # the stores are there to be scanned
    hits = scan(haystacks, samples)
    assert not hits, hits_table(hits, "secrets matched in benign stores (a false positive of the scan)")


# ---------------------------------------------------------------------------------------------------
# No secret in the store, no secret in the report: per placement, and the shape x placement matrix
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("placement", ALL_SECRET_PLACEMENTS)
def test_store_holds_no_secret(secret_runs: dict[str, PlacementRuns], placement: str) -> None:
    """Database, -wal and -shm bytes after ``memdedup ingest`` exits: no secret in any form."""
    runs = secret_runs[placement]
    for run in runs.runs:
        check_run_is_real(run, runs.samples, turns_expected=runs.turns)
    lost = missing_markers(runs)
    if lost:
        pytest.fail(f"{len(lost)} turns were not committed (their marker rows are missing): {lost[:20]}")
    hits = runs.store_hits()
    if hits:
        pytest.fail(hits_table(hits, f"secrets in the store, placement {placement}"), pytrace=False)


@pytest.mark.parametrize("placement", ALL_SECRET_PLACEMENTS)
def test_report_prints_no_secret(secret_runs: dict[str, PlacementRuns], placement: str) -> None:
    """The text summary, the ``--json`` report, stderr and DEBUG log lines: no secret in any form."""
    runs = secret_runs[placement]
    for run in runs.runs:
        check_run_is_real(run, runs.samples, turns_expected=runs.turns)
    hits = runs.report_hits()
    if hits:
        pytest.fail(hits_table(hits, f"secrets in the report, placement {placement}"), pytrace=False)


def test_refused_scopes_are_reported_as_invalid_scope(secret_runs: dict[str, PlacementRuns]) -> None:
    """Every turn whose scope holds a secret is a bad line with the reason invalid_scope (and so wrote
    nothing); its sibling marker turn in a clean scope was written (test_store_holds_no_secret)."""
    runs = secret_runs["scope_id"]
    expected = sorted(
        index + 1 for index, line in enumerate(runs.lines) if isinstance(line, dict) and "expect" in line
    )
    report = runs.runs[1].report()
    assert report is not None
    refused = sorted(p["line"] for p in report["bad_lines"] if p["reason"].startswith("invalid_scope:"))
    assert refused == expected


def test_an_input_that_is_not_utf8_leaks_nothing(tmp_path: Path) -> None:
    """A file with a line that is not UTF-8 is refused whole (issue 25: exit 2, the file, the line and the
    byte, nothing written); the refusal quotes no byte of the line, and no database is created."""
    samples = samples_for("line_fields")
    lines: list[Line] = []
    for sample in samples:
        lines += [turn("shapes", sample, [marker(sample)]), _broken_utf8_line("shapes", sample)]
    path = write_jsonl(tmp_path / "broken.jsonl", lines)
    for mode in ("text", "json"):
        run = run_ingest(path, tmp_path / f"db-{mode}", mode=mode)
        assert run.returncode == 2, masked(run.stderr, samples)
        assert b"broken.jsonl:2: not UTF-8" in run.stderr, masked(run.stderr, samples)
        assert b"Traceback" not in run.stderr
        assert "memory.sqlite" not in run.files, "the refused input created a database"
        hits = scan({**report_haystacks([run]), **store_haystacks([run])}, samples)
        if hits:
            pytest.fail(hits_table(hits, f"secrets in the refusal of a file that is not UTF-8 ({mode})"))


def _matrix(families: Sequence[PlacementRuns], owners: Sequence[str], title: str) -> str | None:
    """Owner x placement: S = in the store (db/wal/shm), R = in the report (stdout/stderr/logs)."""
    cells: dict[tuple[str, str], set[str]] = defaultdict(set)
    for runs in families:
        for hit in runs.store_hits():
            cells[hit.owner, runs.placement].add("S")
        for hit in runs.report_hits():
            cells[hit.owner, runs.placement].add("R")
    if not cells:
        return None
    placements = [runs.placement for runs in families]
    leaking = [owner for owner in owners if any((owner, p) in cells for p in placements)]
    width = max(len(owner) for owner in owners)
    header = " " * (width + 2) + " ".join(f"{i:>2}" for i in range(len(placements)))
    legend = ", ".join(f"{i}={p}" for i, p in enumerate(placements))
    rows = [
        f"  {owner:<{width}}"
        + " ".join(f"{''.join(sorted(cells.get((owner, p), set()))) or '.':>2}" for p in placements)
        for owner in leaking
    ]
    return (
        f"{title}: {len(leaking)} of {len(owners)} leaked in at least one placement "
        f"({len(cells)} of {len(owners) * len(placements)} cases; S = store, R = report)\n"
        f"placements: {legend}\n{header}\n" + "\n".join(rows)
    )


def test_leak_matrix_shapes(secret_runs: dict[str, PlacementRuns]) -> None:
    """Every shape in every placement, in one table (the figure issue 23 reports)."""
    families = [secret_runs[p] for p in SECRET_PLACEMENTS]
    table = _matrix(families, [shape["id"] for shape in SHAPES], "secret shapes")
    if table:
        pytest.fail(table, pytrace=False)


def test_leak_matrix_credential_keys(secret_runs: dict[str, PlacementRuns]) -> None:
    """Values under credential-named keys, top level and nested: none may survive."""
    families = [secret_runs[p] for p in KEY_PLACEMENTS]
    table = _matrix(families, [entry["key"] for entry in CREDENTIAL_KEYS], "credential-named keys")
    if table:
        pytest.fail(table, pytrace=False)


# ---------------------------------------------------------------------------------------------------
# The WAL held open by a reader, and freed pages
# ---------------------------------------------------------------------------------------------------
# The WAL run takes every placement but a subset of owners: with a reader holding the WAL, every turn's
# pages stay in it (the whole corpus makes a WAL of over 100 MB); these cover each family of shape.
WAL_OWNERS = frozenset(
    {
        "github_classic_pat", "aws_secret_key_prose", "gcp_service_account_json", "slack_webhook_url",
        "azure_storage_connection_string", "pem_pkcs8_escaped", "pem_rsa_newlines", "url_password_with_all",
        "password_passphrase", "curl_u", "gitlab_pat", "huggingface_token", "jwt", "netrc_line",
        "telegram_bot_token", "sendgrid_api_key", "bearer", "pass", "AccountKey", "session_id",
    }
)  # fmt: skip


@pytest.mark.slow
def test_wal_held_open_by_a_reader_holds_no_secret(tmp_path: Path) -> None:
    """A reader keeps the WAL from being checkpointed, so the run's pages stay in ``-wal``: scan those
    bytes too (every placement, the owners in WAL_OWNERS, in one file), while the reader is still open."""
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    directory = tmp_path / "db"
    samples: list[Sample] = []
    lines: list[Line] = []
    for placement in ALL_SECRET_PLACEMENTS:
        family = "keys" if placement in KEY_PLACEMENTS else "shapes"
        builder = KEY_PLACEMENTS.get(placement) or SECRET_PLACEMENTS[placement]
        for sample in samples_for(placement):
            if sample.owner in WAL_OWNERS:
                samples.append(sample)
                lines += builder(family, sample)
    seed = inputs / "seed.jsonl"
    write_jsonl(seed, [{"scope": [{"kind": "org", "id": "leakscan-wal"}], "turn": 1, "output": "{}"}])
    created = run_ingest(seed, directory, mode="json")
    check_run_is_real(created, [])
    reader = sqlite3.connect(directory / "memory.sqlite", isolation_level=None)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM sqlite_master").fetchone()  # holds a read snapshot
        run = run_ingest(write_jsonl(inputs / "all.jsonl", lines), directory, mode="json")
        check_run_is_real(run, samples)
        files = run.files
        wal = files.get("memory.sqlite-wal", b"")
        # The control: this run's rows are in the WAL bytes (and not yet in the main file).
        probe = marker_label("label_prose", "github_classic_pat").encode()
        assert probe in wal and probe not in files["memory.sqlite"], "the WAL was checkpointed after all"
        hits = scan({f"held:{name}": data for name, data in files.items()}, samples)
    finally:
        reader.close()
    if hits:
        pytest.fail(hits_table(hits, "secrets in the database or its held-open WAL"), pytrace=False)


# A child that writes a row holding a secret, then updates it to clean text, through the real store; an
# update keeps the old text as a revision (a fact's history), so the child then purges the history, as a
# user who wants the old text gone does.
# ``default_off`` stands in for a SQLite built without SQLITE_SECURE_DELETE (this machine's Debian build
# has it on; python.org and manylinux builds have it off): every connection starts with the pragma off,
# so only the store turning it on itself keeps freed cells from holding the old bytes.
_UPDATE_CHILD = r"""
import json, sqlite3, sys
db, default_off, secrets = sys.argv[1], sys.argv[2] == "1", json.loads(sys.argv[3])
if default_off:
    _connect = sqlite3.connect
    def connect(*args, **kwargs):
        conn = _connect(*args, **kwargs)
        conn.execute("PRAGMA secure_delete = OFF")
        return conn
    sqlite3.connect = connect
from memdedup.scope import Scope
from memdedup.store import SQLiteGraphStore
scope = Scope.parse([{"kind": "org", "id": "freed"}])
with SQLiteGraphStore(db) as store:
    for i, secret in enumerate(secrets):
        store.upsert_node(scope, node_id=f"n{i}", layer="semantic", label=f"temporary {secret}",
                          properties={"note": secret})
    for i, _ in enumerate(secrets):
        store.upsert_node(scope, node_id=f"n{i}", layer="semantic", label=f"rotated credential {i}",
                          properties={})
    kept = [entry.text for i in range(len(secrets)) for entry in store.history(scope, f"n{i}")]
    assert all(f"temporary {secret}" in kept for secret in secrets), "the update kept no revision"
    assert sum(store.purge_history(scope, f"n{i}") for i in range(len(secrets))) == len(secrets)
"""


@pytest.mark.parametrize("default_off", [False, True], ids=["sqlite-default", "secure-delete-default-off"])
def test_updated_row_leaves_no_secret_in_free_pages(tmp_path: Path, default_off: bool) -> None:
    """A row written with a secret, updated, and its history purged must not leave the old bytes in free
    space (the update moves them into a revision; the purge deletes it)."""
    samples = [shape_sample(shape, "freed") for shape in SHAPES[:6]]
    secrets = [secret.text for sample in samples for secret in sample.secrets]
    db = tmp_path / "freed.sqlite"
    done = subprocess.run(
        [sys.executable, "-c", _UPDATE_CHILD, str(db), "1" if default_off else "0", json.dumps(secrets)],
        capture_output=True,
        env=cli_env(),
        timeout=CLI_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, masked(done.stderr, samples)
    haystacks = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("freed.sqlite")}
    assert b"rotated credential 0" in b"".join(haystacks.values())
    hits = scan(haystacks, samples)
    if hits:
        pytest.fail(hits_table(hits, "secrets left in free pages after an update"), pytrace=False)


def test_free_page_control_finds_old_bytes_without_secure_delete(tmp_path: Path) -> None:
    """The control: with secure_delete off, an updated row's old text stays in the file and the scan
    sees it, so the test above can fail."""
    sample = shape_sample(SHAPES[0], "freed-control")
    db = tmp_path / "control.sqlite"
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA secure_delete = OFF")
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, label TEXT)")
        conn.execute("INSERT INTO t VALUES (1, ?)", (f"temporary {sample.secrets[0].text} " + "x" * 200,))
        conn.commit()
        conn.execute("UPDATE t SET label = 'rotated' WHERE id = 1")
        conn.commit()
    finally:
        conn.close()
    assert scan({"db": db.read_bytes()}, [sample]), "the scan did not see the freed cell's old bytes"


# ---------------------------------------------------------------------------------------------------
# Benign look-alikes: byte for byte
# ---------------------------------------------------------------------------------------------------
BENIGN_PLACEMENTS = (
    "label_prose",
    "property_value",
    "nested_value",
    "key_name",
    "chat_message",
    "label_is_text",
    "properties",
)
_KEY_VALUE = "see the runbook"


def _benign_label(text: str) -> str:
    return f"Team note: {text} (from the onboarding doc)"


def _nested(text: str) -> dict[str, Any]:
    return {"hosts": [{"name": "web-1", "env": {"notes": text}}]}


def _benign_turn(placement: str, case: str, text: str) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """The ops and messages that carry one benign text in one placement."""
    messages = [{"role": "user", "content": f"benign {placement} {case}"}]
    if placement == "label_prose":
        return [op(_benign_label(text))], messages
    if placement == "property_value":
        return [op(f"benign value {case}", {"note": text})], messages
    if placement == "nested_value":
        return [op(f"benign nested {case}", {"deploy": _nested(text)})], messages
    if placement == "key_name":
        return [op(f"benign key {case}", {text: _KEY_VALUE})], messages
    if placement == "chat_message":
        messages = [
            {"role": "user", "content": f"Note for later: {text}"},
            {"role": "assistant", "content": f"Got it: {text}"},
        ]
        return [op(f"benign chat {case}")], messages
    assert placement == "label_is_text", placement
    return [op(text)], messages


def benign_cases(placement: str) -> list[tuple[str, dict[str, Any]]]:
    """(case id, turn) for one placement; each case in its own scope."""
    cases: list[tuple[str, list[dict[str, Any]], list[dict[str, str]]]] = []
    if placement == "properties":
        for entry in BENIGN_PROPERTIES:
            messages = [{"role": "user", "content": f"benign {placement} {entry['id']}"}]
            cases.append(
                (entry["id"], [op(f"benign property set {entry['id']}", entry["properties"])], messages)
            )
    else:
        for entry in BENIGN_TEXTS:
            if placement not in entry.get("skip", ()):
                cases.append((entry["id"], *_benign_turn(placement, entry["id"], entry["text"])))
    return [
        (
            case,
            {
                "scope": scope_of("benign", placement, case),
                "turn": 1,
                "provider": "anthropic",
                "messages": messages,
                "output": json.dumps({"ops": ops}),
            },
        )
        for case, ops, messages in cases
    ]


@pytest.fixture(scope="module")
def benign_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """Every benign placement in one file per placement, ingested with ``--json`` (the PII option off)."""
    base = tmp_path_factory.mktemp("benign")
    jobs = []
    for placement in BENIGN_PLACEMENTS:
        path = write_jsonl(base / f"{placement}.jsonl", [line for _, line in benign_cases(placement)])
        jobs.append((placement, path, base / f"db-{placement}"))
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(lambda job: run_ingest(job[1], job[2], mode="json"), jobs))
    return {placement: run for (placement, *_), run in zip(jobs, runs, strict=True)}


def _rows_by_scope(db: Path) -> dict[str, list[Any]]:
    rows: dict[str, list[Any]] = defaultdict(list)
    with SQLiteGraphStore(db) as store:
        for node in store.all_nodes():
            rows[node.scope_path].append(node)
    return rows


def _changed(placement: str, case: str, line: Mapping[str, Any], rows: Sequence[Any]) -> str | None:
    """Why the stored rows of one benign case do not hold its text byte for byte, or None."""
    if not rows:
        return "no row stored"
    for row in rows:
        if "[REDACTED" in row.label or "[REDACTED" in json.dumps(row.properties):
            return f"a placeholder in the stored row: {row.label[:120]!r}"
    (memory_op,) = json.loads(line["output"])["ops"]
    memories = [row for row in rows if row.label != line["messages"][0]["content"]]
    memories = [row for row in memories if all(row.label != m["content"] for m in line["messages"])]
    if len(memories) != 1:
        return f"{len(memories)} memory rows, expected 1"
    (memory,) = memories
    expected = {k: v for k, v in memory_op["properties"].items() if k not in ("memory_category", "subject")}
    stored = {k: memory.properties.get(k, "<missing>") for k in expected}
    if stored != expected:
        return f"properties changed: stored {json.dumps(stored)[:300]} expected {json.dumps(expected)[:300]}"
    if memory_op["label"] not in memory.label:
        return f"label changed: stored {memory.label[:200]!r}"
    if placement == "chat_message":
        labels = {row.label for row in rows}
        for message in line["messages"]:
            if message["content"] not in labels:
                return f"transcript row changed or missing for {message['content'][:120]!r}"
    return None


@pytest.mark.parametrize("placement", BENIGN_PLACEMENTS)
def test_benign_text_is_stored_unchanged(benign_runs: dict[str, Run], placement: str) -> None:
    run = benign_runs[placement]
    check_run_is_real(run, [])
    rows = _rows_by_scope(run.db)
    changed = []
    for case, line in benign_cases(placement):
        why = _changed(placement, case, line, rows.get(scope_path_of("benign", placement, case), []))
        if why:
            changed.append(f"  {case}: {why}")
    if changed:
        pytest.fail(
            f"benign look-alikes altered in the store ({placement}): {len(changed)}\n" + "\n".join(changed),
            pytrace=False,
        )


@pytest.mark.parametrize("placement", BENIGN_PLACEMENTS)
def test_benign_text_is_reported_unchanged(benign_runs: dict[str, Run], placement: str) -> None:
    """The ``--json`` report: nothing redacted, no key dropped, every memory's text holds its label."""
    run = benign_runs[placement]
    check_run_is_real(run, [])
    report = run.report()
    assert report is not None
    problems = []
    if report.get("redactions"):
        problems.append(f"redactions reported: {report['redactions']}")
    for case, line in benign_cases(placement):
        label = json.loads(line["output"])["ops"][0]["label"]
        records = [
            r
            for r in report["written"] + report["restated"] + report["updated"]
            if r["scope_path"] == scope_path_of("benign", placement, case)
        ]
        if len(records) != 1:
            problems.append(f"{case}: {len(records)} records in the report, expected 1 written")
        elif label not in records[0]["text"] or records[0].get("redactions"):
            problems.append(
                f"{case}: reported as {records[0]['text'][:160]!r}, redactions {records[0].get('redactions')}"
            )
    dropped = report["dropped"]
    if dropped:
        problems.append(f"dropped ops: {[(d['scope'], d['reason'][:80]) for d in dropped][:10]}")
    if problems:
        pytest.fail(f"benign report altered ({placement}):\n  " + "\n  ".join(problems), pytrace=False)
