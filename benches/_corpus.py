"""Benchmark inputs: real labels from the shared PyPI corpus, or the bundled sample without it."""

from __future__ import annotations

import gzip
import itertools
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED_CORPUS = HERE.parent.parent / "shared" / "data" / "pypi-summaries.txt.gz"
BUNDLED_SAMPLE = HERE / "data" / "labels_sample.txt.gz"


def default_corpus() -> Path:
    return SHARED_CORPUS if SHARED_CORPUS.exists() else BUNDLED_SAMPLE


def read_labels(path: Path | str | None = None, limit: int | None = None) -> list[str]:
    """One label per line (gzip or plain text), blank lines skipped."""
    path = Path(path) if path else default_corpus()
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="surrogateescape") as f:
        lines = (line.rstrip("\n") for line in f)
        return list(itertools.islice((line for line in lines if line.strip()), limit))


def prefix_pairs(labels: list[str], limit: int, prefix_len: int = 20) -> list[tuple[str, str]]:
    """Consecutive distinct labels sharing their first ``prefix_len`` characters: the write-time path's
    candidate pairs (the stored label first)."""
    groups: dict[str, list[str]] = defaultdict(list)
    for label in labels:
        if len(label) >= prefix_len:
            groups[label[:prefix_len]].append(label)
    pairs = []
    for members in groups.values():
        for stored, incoming in itertools.pairwise(members):
            if stored != incoming:
                pairs.append((stored, incoming))
                if len(pairs) >= limit:
                    return pairs
    return pairs
