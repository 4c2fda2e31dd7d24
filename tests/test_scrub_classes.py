"""The classes of issue 36, each in many contexts, on both engines: generated vectors (from
benches/bench_scrub_classes.py, which writes them from the grammars the rules document; no other
scanner's test file), a thinned sample of each class here, all of them in the benchmark.

Positives: the secret (every 8-character part of it) is gone from what a record's scrubbing returns.
Negatives (references, placeholders, paths, identifiers, prose, public material, numbers): left alone,
but for a few cases of prose and identifiers the policy cannot tell from a password (docs/scrub.md,
"Known limits").
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from memdedup.scrub import CredentialScrubber

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benches"))
import bench_scrub_classes as classes

VECTORS = classes.vectors(seed=36, per_class=40)
POSITIVE = sorted({v.cls for v in VECTORS if v.positive})
NEGATIVE = sorted({v.cls for v in VECTORS if not v.positive})
# The share of a negative class the scrubber may alter (the rest must come back byte for byte).
ALTERED_AT_MOST = {"identifier": 0.2, "prose": 0.15}


@pytest.mark.parametrize("engine", ["rust", "python"])
@pytest.mark.parametrize("cls", POSITIVE)
def test_every_secret_of_the_class_is_removed(engine: str, cls: str) -> None:
    scrubber = CredentialScrubber(implementation=engine)
    leaks = [
        v.texts
        for v in VECTORS
        if v.cls == cls
        and v.positive
        and any(classes.leaked(s, classes.scrub_texts(scrubber, v.texts)) for s in v.secrets)
    ]
    assert not leaks, leaks[:3]


@pytest.mark.parametrize("engine", ["rust", "python"])
@pytest.mark.parametrize("cls", NEGATIVE)
def test_clean_negatives_are_left_alone(engine: str, cls: str) -> None:
    scrubber = CredentialScrubber(implementation=engine)
    cases = [v for v in VECTORS if v.cls == cls and not v.positive]
    altered = [v.texts for v in cases if classes.scrub_texts(scrubber, v.texts) != v.texts]
    assert len(altered) <= ALTERED_AT_MOST.get(cls, 0.0) * len(cases), altered[:3]


def test_the_generator_covers_every_class_and_context() -> None:
    assert set(POSITIVE) == set(classes.POSITIVE_CLASSES)
    assert set(NEGATIVE) == set(classes.NEGATIVE_CLASSES)
    assert all(v.secrets for v in VECTORS if v.positive)
    # The same seed, the same vectors: a failure names a case that can be run again.
    assert classes.vectors(seed=36, per_class=40) == VECTORS
