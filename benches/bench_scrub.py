"""Credential scrubbing: throughput on mixed text and growth with size, beside detect-secrets, in one run.

    python benches/bench_scrub.py [--size-kb 4096] [--rounds 3] [--peer-kb 256] [--python-kb 256]
                                  [--no-growth]

Corpora, generated deterministically from the bundled label sample (real one-line PyPI summaries):

- prose: the labels as paragraphs;
- chat: user/assistant transcripts with fenced code (python, bash, yaml, json) and prose, with a fake
  credential of a known shape every ~8 KB;
- logs: application log lines (timestamps, levels, key=value fields, URLs, request ids);
- json: extraction outputs with nested properties;
- mixed: the four interleaved.

Figures: MB/s (the best of --rounds) of ``CredentialScrubber.scrub_text`` on the compiled core (and,
``+lookup``, followed by the store-wide lookup of :mod:`memdedup.secret_memory` with 64 secrets
remembered: what a store's write costs since it remembers secrets), of the
pure-Python fallback (the same catalogue through ``re``, on --python-kb), and of detect-secrets 1.5's
``scan_line`` over the same text line by line with its default plugins (--peer-kb: it is slow). The
peer only detects (no spans, no redaction), so its figure is an upper bound for a scrubber built on it.
Then the growth: the time to scrub 16 KB, 64 KB, 256 KB and 1 MB of prose and of adversarial inputs
('a.' * n, runs of key-like bytes, many 'password: ' prefixes, deep '@' and ':' runs, ...), with each
size's time per byte as a multiple of the 16 KB one (1.0 is linear). A peer that is not installed is
skipped and said so.

    python benches/bench_scrub.py --false-positives [--pypi PATH] [--examples 5]

counts what the scrubber finds in REAL benign text, where every finding is a false positive to inspect:
the 841,708 PyPI summaries of the shared corpus (/work/shared/data/pypi-summaries.txt.gz, or --pypi),
this repository's own source (python, rust, docs, benches, scripts, examples; not tests, whose vectors
are fakes on purpose), Python's standard library, the installed site-packages, and the benign
look-alikes of tests/data/leak_corpus/benign.json. It prints the findings per rule with a few examples.
Run it with another checkout's PYTHONPATH to compare catalogues (docs/scrub.md has the figures).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sqlite3
import string
import sys
import sysconfig
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _corpus import read_labels
from memdedup.scrub import CredentialScrubber

KB = 1024


def _fake(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


AN = string.ascii_letters + string.digits
HEX = "0123456789abcdef"


def fake_secret(rng: random.Random) -> str:
    """A credential of a known shape (never a real one), in a sentence a user might type."""
    shapes = [
        lambda: "my token is ghp_" + _fake(rng, AN, 36),
        lambda: "OPENAI_API_KEY=sk-proj-" + _fake(rng, AN + "_-", 60),
        lambda: "postgres://app:" + _fake(rng, AN, 14) + "@db.internal:5432/app",
        lambda: "password: " + _fake(rng, AN, 12),
        lambda: "AWS key AKIA" + _fake(rng, string.ascii_uppercase + string.digits, 16),
        lambda: "Authorization: Bearer " + _fake(rng, AN, 40),
        lambda: "slack xoxb-" + _fake(rng, string.digits, 12) + "-" + _fake(rng, AN, 24),
        lambda: "stripe sk_live_" + _fake(rng, AN, 24),
        lambda: (
            "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI"
            + _fake(rng, AN, 60)
            + "\n-----END EC PRIVATE KEY-----"
        ),
    ]
    return rng.choice(shapes)()


def paragraphs(labels: list[str], rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(labels).rstrip(".") + "." for _ in range(n))


CODE = [
    "```python\nimport os\nclient = Client(api_key=os.environ['API_KEY'], timeout=30)\n"
    "for item in client.list(limit=100):\n    print(item.id, item.name)\n```",
    "```bash\nexport PATH=$HOME/.local/bin:$PATH\npip install -r requirements.txt\n"
    "curl -s https://api.example.com/v1/status | jq .\n```",
    "```yaml\nservices:\n  web:\n    image: nginx:1.25\n    ports: ['8080:80']\n    environment:\n"
    "      LOG_LEVEL: info\n      MAX_TOKENS: 4096\n```",
    '```json\n{"model": "gpt-4o", "max_tokens": 512, "temperature": 0.2, "messages": []}\n```',
]


def chat(labels: list[str], rng: random.Random, size: int) -> str:
    out: list[str] = []
    total = next_secret = 0
    while total < size:
        role = rng.choice(["User", "Assistant"])
        body = paragraphs(labels, rng, rng.randint(2, 6))
        if role == "Assistant" and rng.random() < 0.5:
            body += "\n\n" + rng.choice(CODE) + "\n\n" + paragraphs(labels, rng, 2)
        if total >= next_secret:
            body += " " + fake_secret(rng)
            next_secret = total + 8 * KB
        turn = f"{role}: {body}\n\n"
        out.append(turn)
        total += len(turn)
    return "".join(out)[:size]


def logs(rng: random.Random, size: int) -> str:
    levels = ["INFO", "DEBUG", "WARN", "ERROR"]
    paths = ["/api/v1/users", "/api/v1/orders/42", "/healthz", "/login", "/static/app.js"]
    out, total, t = [], 0, 1_700_000_000
    while total < size:
        t += rng.randint(0, 3)
        line = (
            f"2024-05-{1 + t % 28:02d}T{t % 24:02d}:{t % 60:02d}:{(t * 7) % 60:02d}Z {rng.choice(levels)} "
            f"request_id={_fake(rng, HEX, 16)} method=GET path={rng.choice(paths)} "
            f"status={rng.choice([200, 201, 404, 500])} duration_ms={rng.randint(1, 900)} "
            f'user_agent="Mozilla/5.0" upstream=http://10.0.{t % 255}.{t % 7}:8080\n'
        )
        out.append(line)
        total += len(line)
    return "".join(out)[:size]


def json_records(labels: list[str], rng: random.Random, size: int) -> str:
    out, total = [], 0
    while total < size:
        op = {
            "action": "upsert_node",
            "layer": rng.choice(["semantic", "episodic"]),
            "label": rng.choice(labels),
            "importance": rng.randint(1, 10),
            "properties": {
                "memory_category": "fact",
                "subject": "user",
                "source": {"turn": rng.randint(0, 99)},
            },
        }
        line = json.dumps({"ops": [op]}) + "\n"
        out.append(line)
        total += len(line)
    return "".join(out)[:size]


def corpora(size: int) -> dict[str, str]:
    labels = read_labels()
    rng = random.Random(23)
    parts = {
        "prose": "\n\n".join(paragraphs(labels, rng, 8) for _ in range(size // 400))[:size],
        "chat": chat(labels, rng, size),
        "logs": logs(rng, size),
        "json": json_records(labels, rng, size),
    }
    quarter = size // 4
    parts["mixed"] = "".join(text[:quarter] for text in parts.values())
    return parts


def _run(n: int) -> str:
    """``n`` random letters and digits: one token with no stop byte in it."""
    return "".join(random.Random(n).choices(AN, k=n))


def adversarial(n: int) -> dict[str, str]:
    return {
        "'a.' * n": "a." * (n // 2),
        "key-like run": "A" * n,
        "key=AAAA...": "key=" + "A" * (n - 4),
        "password: * n": "password: " * (n // 10),
        "scheme + 'b@' * n": "http://a:" + "b@" * (n // 2),
        "x:// + ':' * n": "x://" + ":" * n,
        "'@' * n": "@" * n,
        "BEGIN KEY * n": "-----BEGIN RSA PRIVATE KEY-----\n" * (n // 32),
        "'eyJ' * n": "eyJ" * (n // 3),
        "tokens= * n": "tokens=" * (n // 7),
        "key: val * n": "key: val " * (n // 9),
        "'ab_' * n": "ab_" * (n // 3),
        "x- + 'Ab1' * n": "x-" + "Ab1" * (n // 3),
        "'sk-Ab1_' * n": "sk-Ab1_" * (n // 7),
        # Repeated keys: every key's value runs into the next key (issue 23, bug 2).
        "'key=' * n": "key=" * (n // 4),
        "'secret=' * n": "secret=" * (n // 7),
        "'api_key=' * n": "api_key=" * (n // 8),
        "('x' * 40 + '_token=') * n": ("x" * 40 + "_token=") * (n // 47),
        "'password:' * n": "password:" * (n // 9),
        "'token: \"' * n": 'token: "' * (n // 8),
        "'?token=' * n": "?token=" * (n // 7),
        "'--password ' * n": "--password " * (n // 11),
        # One secret as long as the input after each kind of key (issue 23, bug 1).
        "api_key= + run": "api_key=" + _run(n - 8),
        "password: + run": "password: " + _run(n - 10),
        "password is + run": "the password is " + _run(n - 16),
        'token=" + run': 'token="' + _run(n - 7),
    }


def best_seconds(fn: Callable[[], object], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def store_lookup() -> Callable[[str], str] | None:
    """The store-wide lookup of a store that remembers 64 random secrets, or None on a build
    without it."""
    try:
        from memdedup.secret_memory import SecretMemory
    except ImportError:
        return None
    conn = sqlite3.connect(":memory:", isolation_level=None)
    memory = SecretMemory(conn, implementation="rust")
    rng = random.Random(36)
    conn.execute("BEGIN")
    memory.ensure_schema()
    memory.learn([(_fake(rng, AN, rng.randint(20, 48)), "API_KEY") for _ in range(64)])
    conn.execute("COMMIT")
    # As the store looks up what it writes: inside its write transaction (it reads what other
    # connections remembered once per transaction).
    conn.execute("BEGIN")
    memory.begin()
    return memory.redact


def detect_secrets_scan() -> Callable[[str], int] | None:
    try:
        from detect_secrets.core.scan import scan_line
        from detect_secrets.settings import default_settings
    except ImportError:
        return None

    def scan(text: str) -> int:
        with default_settings():
            return sum(1 for line in text.splitlines() for _ in scan_line(line))

    return scan


ROOT = Path(__file__).resolve().parents[1]
PYPI = Path("/work/shared/data/pypi-summaries.txt.gz")
SOURCE_DIRS = ("python", "rust", "docs", "benches", "scripts", "examples")
SOURCE_SUFFIXES = {".py", ".rs", ".md", ".toml", ".txt", ".json", ".jsonl", ".sh", ".yml", ".yaml"}
CHUNK_LINES = 2000


def _files(root: Path, suffixes: set[str], skip: tuple[str, ...] = ()) -> Iterator[str]:
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in suffixes and not any(part in skip for part in path.parts):
            yield path.read_text(encoding="utf-8", errors="replace")


def _chunks(lines: Iterator[str]) -> Iterator[str]:
    batch: list[str] = []
    for line in lines:
        batch.append(line)
        if len(batch) == CHUNK_LINES:
            yield "\n".join(batch)
            batch = []
    if batch:
        yield "\n".join(batch)


def benign_corpora(pypi: Path) -> dict[str, Callable[[], Iterator[str]]]:
    """Real text with no secret in it (so every finding is a false positive), by name."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    purelib = Path(sysconfig.get_paths()["purelib"])
    benign = json.loads((ROOT / "tests/data/leak_corpus/benign.json").read_text(encoding="utf-8"))

    def benign_texts() -> Iterator[str]:
        yield from (entry["text"] for entry in benign["texts"])
        yield from (json.dumps(entry["properties"]) for entry in benign["properties"])

    corpora: dict[str, Callable[[], Iterator[str]]] = {}
    if pypi.exists():
        corpora["pypi summaries"] = lambda: _chunks(
            line.rstrip("\n") for line in gzip.open(pypi, "rt", encoding="utf-8", errors="replace")
        )
    corpora["repo source"] = lambda: (
        text for d in SOURCE_DIRS for text in _files(ROOT / d, SOURCE_SUFFIXES, ("target", "__pycache__"))
    )
    corpora["stdlib"] = lambda: _files(stdlib, {".py"}, ("site-packages", "test", "tests"))
    corpora["site-packages"] = lambda: _files(purelib, {".py"}, ("memdedup",))
    corpora["benign look-alikes"] = benign_texts
    return corpora


def false_positives(pypi: Path, examples: int) -> None:
    scrubber = CredentialScrubber(implementation="rust")
    for name, texts in benign_corpora(pypi).items():
        by_rule: Counter[str] = Counter()
        shown: dict[str, list[str]] = defaultdict(list)
        size = 0
        start = time.perf_counter()
        for text in texts():
            size += len(text.encode("utf-8", "surrogatepass"))
            for finding in scrubber.scan(text):
                by_rule[finding.rule] += 1
                if len(shown[finding.rule]) < examples:
                    shown[finding.rule].append(text[finding.start : finding.end][:70])
        seconds = time.perf_counter() - start
        total = sum(by_rule.values())
        print(f"{name}: {size / 1e6:.1f} MB, {total} findings ({seconds:.1f} s)")
        for rule, count in by_rule.most_common():
            print(f"  {count:6d}  {rule:32} e.g. {shown[rule]!r}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size-kb", type=int, default=4096, help="corpus size per kind (default 4096)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--peer-kb", type=int, default=256, help="text given to detect-secrets (default 256)")
    parser.add_argument("--python-kb", type=int, default=256, help="text given to the Python fallback")
    parser.add_argument(
        "--false-positives", action="store_true", help="count findings in real benign text, then stop"
    )
    parser.add_argument("--no-growth", action="store_true", help="throughput only (skip the growth table)")
    parser.add_argument("--pypi", type=Path, default=PYPI, help="the PyPI summaries (.txt.gz)")
    parser.add_argument("--examples", type=int, default=5, help="examples shown per rule")
    args = parser.parse_args()
    if args.false_positives:
        false_positives(args.pypi, args.examples)
        return

    core = CredentialScrubber(implementation="rust")
    fallback = CredentialScrubber(implementation="python")
    peer = detect_secrets_scan()
    texts = corpora(args.size_kb * KB)

    lookup = store_lookup()
    print(f"throughput, MB/s (best of {args.rounds}); memdedup on {args.size_kb} KB per corpus")
    print(
        "(+lookup: scrub_text, then the store-wide lookup of a store that remembers 64 secrets; "
        "n/a on a build without it)"
    )
    header = (
        f"{'corpus':8} {'memdedup':>10} {'+lookup':>9} {'redacted':>9} {'fallback':>10} "
        f"{'detect-secrets':>15} {'ratio':>8}"
    )
    print(header)
    for name, text in texts.items():
        mb = len(text.encode()) / 1e6
        found = len(core.scrub_text(text).redactions)
        rust = mb / best_seconds(lambda text=text: core.scrub_text(text), args.rounds)
        if lookup is not None:
            both = mb / best_seconds(lambda text=text: lookup(core.scrub_text(text).text), args.rounds)
            both_text = f"{both:9.1f}"
        else:
            both_text = f"{'n/a':>9}"
        small = text[: args.python_kb * KB]
        py = len(small.encode()) / 1e6 / best_seconds(lambda small=small: fallback.scrub_text(small), 1)
        if peer is not None:
            sample = text[: args.peer_kb * KB]
            ds = len(sample.encode()) / 1e6 / best_seconds(lambda sample=sample: peer(sample), 1)
            ds_text, ratio = f"{ds:15.3f}", f"{rust / ds:7.0f}x"
        else:
            ds_text, ratio = f"{'not installed':>15}", f"{'-':>8}"
        print(f"{name:8} {rust:10.1f} {both_text} {found:9d} {py:10.2f} {ds_text} {ratio}")
    if args.no_growth:
        return

    print("\ngrowth: ms to scrub n bytes (compiled core), and time per byte relative to 16 KB")
    sizes = [16 * KB, 64 * KB, 256 * KB, 1024 * KB]
    print(f"{'input':28} " + " ".join(f"{s // KB:>8} KB" for s in sizes) + "   per-byte x (1 MB / 16 KB)")
    # Prose of the same density at every size (a 16 KB block repeated): a longer slice of real text
    # would name more providers and so wake more rules, which is not what growth is about.
    block = paragraphs(read_labels(), random.Random(5), 400)[: 16 * KB]
    rows = {"prose": [(block * (s // len(block) + 1))[:s] for s in sizes]}
    for size in sizes:
        for name, text in adversarial(size).items():
            rows.setdefault(name, []).append(text)
    worst_1mb = 0.0
    for name, inputs in rows.items():
        times = [best_seconds(lambda t=t: core.scrub_text(t), args.rounds) for t in inputs]
        worst_1mb = max(worst_1mb, times[-1])
        per_byte = (times[-1] / len(inputs[-1])) / (times[0] / len(inputs[0]))
        print(f"{name:28} " + " ".join(f"{t * 1000:11.2f}" for t in times) + f"   {per_byte:8.2f}")
    print(f"\nslowest 1 MB input: {worst_1mb * 1000:.1f} ms (target < 100 ms)")


if __name__ == "__main__":
    main()
