"""The classes of shapes other scanners know, each in many contexts, on both engines: generated vectors (from
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


def test_random_values_seldom_read_as_words_and_both_engines_agree() -> None:
    """A value judged on weak evidence (a weak key, a provider named nearby) is no secret when it reads as
    words (a slug, a name: ``DataCrawler/booking-com15``). Random values must seldom pass for words: of
    random 12-character values over ``[A-Za-z0-9_-]``, under 1 in 300 (about 1 in 1,000 measured), and
    none of those without a separator (a lone random word of letters and digits is never a slug)."""
    import random

    from memdedup import _core
    from memdedup._scrub_py.values import made_of_words

    rng = random.Random(12)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
    values = ["".join(rng.choice(alphabet) for _ in range(12)) for _ in range(20_000)]
    words = [v for v in values if made_of_words(v.encode(), True)]
    assert len(words) < len(values) / 300, words[:10]
    assert not [v for v in words if "_" not in v and "-" not in v]
    slugs = ["DataCrawler/booking-com15", "team-alerts/incident-digest", "billingPortal/customerSession"]
    assert all(made_of_words(v.encode(), True) for v in slugs)
    python = CredentialScrubber(implementation="python")._engine
    for value in [*values[:2000], *words, *slugs]:
        assert _core.credential_value_random(value) == python.value_random(value), value
