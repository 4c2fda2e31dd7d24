"""The opt-in guards: definitions, per-class behaviour on the bundled corpus, and every integration point."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from typing import Any

import numpy as np
import pytest
from memdedup import _backend, _reference, batch, tuning
from memdedup.batch import replay_guarded
from memdedup.dedup import find_canonical_node
from memdedup.dedup import labels_match_ext as labels_match
from memdedup.errors import InvalidInputError
from memdedup.guards import (
    Guards,
    as_guards,
    fold,
    guards_allow,
    negation_words,
    tokens,
    value_tokens,
    why_blocked,
)

ALL = Guards(value=True, negation=True)
VALUE = Guards(value=True)
NEGATION = Guards(negation=True)


# ---------------------------------------------------------------------------------------------------
# Definitions
# ---------------------------------------------------------------------------------------------------
def test_tokens() -> None:
    assert tokens("Upgrade to v1.2.3 (ASR-1603), see snake_case_name.") == [
        "Upgrade",
        "to",
        "v1.2.3",
        "ASR-1603",
        "see",
        "snake_case_name",
    ]
    assert tokens("Standup at 9:30 -- User's call...") == ["Standup", "at", "9", "30", "User", "s", "call"]
    assert tokens("Zürich—Genève 東京 2024") == ["Zürich", "Genève", "東京", "2024"]
    assert tokens("") == tokens(None) == []


def test_value_tokens() -> None:
    assert value_tokens("Project Alpha uses PostgreSQL 15") == ["Alpha", "PostgreSQL", "15"]
    # The first token is not a proper name just for its capital; it still counts for digits/inner capitals.
    assert value_tokens("Sarah leads payments") == []
    assert value_tokens("ASR1603 is blocked") == ["ASR1603"]
    assert value_tokens("uses camelCase and max_retries in iOS") == ["camelCase", "max_retries", "iOS"]
    # One-letter capitals ("I", "A") are not names.
    assert value_tokens("Then I moved to A block") == []


def test_fold() -> None:
    assert fold("Kraków") == fold("KRAKOW") == "krakow"
    assert fold("Straße") == "strasse"
    assert fold("Tuesdays") == fold("tuesday") == "tuesday"
    assert fold("Ops") == "ops"  # three letters: no plural stripped
    assert fold("v1.2s") == "v1.2s"  # not letters only


def test_negation_words() -> None:
    assert negation_words("User does not like spicy food") == {"not"}
    assert negation_words("User doesn't like it") == negation_words("User doesn\u2019t like it") == {"not"}
    assert negation_words("CANNOT attend; nobody else either") == {"not", "nobody"}
    assert negation_words("Never deploys on Fridays, no exceptions") == {"never", "no"}
    assert negation_words("Uses no-code tools, knows Nordic notation") == frozenset()
    assert negation_words("dont isnt wont cant") == {"not"}  # "wont"/"cant" are words, not negations
    assert negation_words("") == frozenset()


def test_parse_and_coerce() -> None:
    assert Guards.parse("none") == Guards.parse("") == Guards() == as_guards(None)
    assert Guards.parse("all") == Guards.parse("value,negation") == Guards.parse(" Negation , VALUE ") == ALL
    assert Guards.parse("value") == VALUE and Guards.parse("negation") == NEGATION
    assert as_guards(["value"]) == VALUE and as_guards(ALL) is ALL and as_guards("all") == ALL
    assert not Guards() and ALL and VALUE
    assert str(ALL) == "value,negation" and str(Guards()) == "none" and str(NEGATION) == "negation"
    for bad in ("values", "all,bogus", "value;negation"):
        with pytest.raises(InvalidInputError, match="unknown guard"):
            Guards.parse(bad)
    with pytest.raises(TypeError):
        as_guards(3)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("stored", "incoming", "value", "negation"),
    [
        ("Ticket ASR1603 is blocked", "Ticket ASR1605 is blocked", False, True),
        ("Project Alpha uses PostgreSQL", "Project Beta uses PostgreSQL", False, True),
        ("The backend runs on Python 3.11", "The backend runs on Python 3.12", False, True),
        # additions (extra detail), case and accents never block the value guard
        ("Works at Acme Corp", "Works at Acme Corp in Berlin since 2021", True, True),
        ("Team offsite in Kraków", "team offsite in KRAKOW", True, True),
        ("Deploys every Tuesday", "Deploys on Tuesdays", True, True),
        # a respelled value does block (a documented cost)
        ("Lives in Genève", "Lives in Geneva", False, True),
        # negations
        ("The billing job is idempotent", "The billing job is not idempotent", True, False),
        ("User does not eat pork", "User doesn't eat pork", True, True),
        ("Never deploys on Fridays", "Does not deploy on Fridays", True, False),
        ("Drinks green tea", "Drinks green tea, never coffee", True, False),
    ],
)
def test_guards_allow(stored: str, incoming: str, value: bool, negation: bool) -> None:
    assert guards_allow(stored, incoming, VALUE) is value
    assert guards_allow(stored, incoming, NEGATION) is negation
    assert guards_allow(stored, incoming, ALL) is (value and negation)
    assert guards_allow(stored, incoming, None) is True
    assert guards_allow(stored, incoming, Guards()) is True
    # symmetric by construction
    assert guards_allow(incoming, stored, ALL) is (value and negation)
    assert (why_blocked(stored, incoming, ALL) is None) is (value and negation)


def test_why_blocked() -> None:
    assert (
        why_blocked("Ticket ASR1603 is blocked", "Ticket ASR1605 is blocked", ALL)
        == "value: ASR1603 vs ASR1605"
    )
    assert why_blocked("Job is idempotent", "Job is not idempotent", ALL) == "negation: - vs not"
    assert why_blocked("Job is idempotent", "Job is not idempotent", VALUE) is None
    assert why_blocked("Job v1 is not idempotent", "Job v2 is idempotent", ALL) == "value: v1 vs v2"
    assert why_blocked("a", "b", None) is None


# ---------------------------------------------------------------------------------------------------
# Per class on the bundled corpus
# ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pairs() -> list[tuning.LabelledPair]:
    return tuning.load_pairs()


def _blocked_by_class(pairs: list[tuning.LabelledPair], guards: Guards) -> dict[str, int]:
    counts = Counter({p.cls: 0 for p in pairs})
    for p in pairs:
        counts[p.cls] += not guards_allow(p.stored, p.incoming, guards)
    return dict(counts)


def test_value_guard_per_class(pairs: list[tuning.LabelledPair]) -> None:
    blocked = _blocked_by_class(pairs, VALUE)
    totals = Counter(p.cls for p in pairs)
    # Every value change is a substitution the guard sees.
    for cls in ("value_number", "value_name", "value_version"):
        assert blocked[cls] == totals[cls]
    # It never touches the restatements that only differ in form or add detail.
    for cls in (
        "identical",
        "case_space_punct",
        "case_at_start",
        "trailing_punct",
        "extra_detail",
        "terser",
        "terser_short",
        "long_labels",
        "negation",
    ):
        assert blocked[cls] == 0, cls
    # What remains, pinned: "Genève"/"Geneva" (non_ascii, same fact: the cost), and four shared-opening
    # pairs that name different things (Rust/SICP, Tuesdays/Thursdays, Q3/May 2, Confluence/Google Drive).
    assert {c: n for c, n in blocked.items() if c not in {"value_number", "value_name", "value_version"}} == {
        "identical": 0,
        "case_space_punct": 0,
        "case_at_start": 0,
        "trailing_punct": 0,
        "tail_reword": 0,
        "extra_detail": 0,
        "terser": 0,
        "terser_short": 0,
        "opening_reworded": 0,
        "negation": 0,
        "shared_opening": 4,
        "long_labels": 0,
        "non_ascii": 1,
    }


def test_negation_guard_per_class(pairs: list[tuning.LabelledPair]) -> None:
    blocked = _blocked_by_class(pairs, NEGATION)
    # Every negation but the lexical antonym ("enabled"/"disabled"), which no lexicon of negations sees.
    assert blocked["negation"] == Counter(p.cls for p in pairs)["negation"] - 1
    missed = [p for p in pairs if p.cls == "negation" and guards_allow(p.stored, p.incoming, NEGATION)]
    assert [p.incoming for p in missed] == ["Dependabot is disabled on the main repo"]
    for cls in (
        "identical",
        "case_space_punct",
        "case_at_start",
        "trailing_punct",
        "long_labels",
        "non_ascii",
    ):
        assert blocked[cls] == 0, cls
    # The cost: an extra detail that brings a negation ("..., never coffee"), and a terser restatement
    # that drops one ("Bikes to work when it is not raining" -> "Bikes to work").
    assert {c: n for c, n in blocked.items() if n and c != "negation"} == {
        "extra_detail": 1,
        "terser_short": 1,
    }


# ---------------------------------------------------------------------------------------------------
# Integration: labels_match, find_canonical_node, join, clusters, replay
# ---------------------------------------------------------------------------------------------------
def test_labels_match_with_guards(pairs: list[tuning.LabelledPair]) -> None:
    for p in pairs:
        plain = labels_match(p.stored, p.incoming)
        assert labels_match(p.stored, p.incoming, guards=None) is plain
        assert labels_match(p.stored, p.incoming, guards="none") is plain
        for g in (VALUE, NEGATION, ALL):
            assert labels_match(p.stored, p.incoming, guards=g) is (
                plain and guards_allow(p.stored, p.incoming, g)
            )
    assert labels_match("Ticket ASR1603 is blocked", "Ticket ASR1605 is blocked")
    assert not labels_match("Ticket ASR1603 is blocked", "Ticket ASR1605 is blocked", guards="value")
    with pytest.raises(InvalidInputError):
        labels_match("a", "b", guards="bogus")  # an unknown guard is an error even when nothing matches


class _Scope:
    scope_path = "tenant\x1facme"


class _Node:
    def __init__(self, node_id: str, label: Any, owner: str = "tenant\x1facme") -> None:
        self.id, self.label, self.properties, self.tenant_id = node_id, label, {"scope_path": owner}, "acme"


class _Graph:
    def __init__(self, nodes: list[Any]) -> None:
        self.nodes = nodes

    async def query_nodes(self, scope: Any, **kwargs: Any) -> list[Any]:
        return self.nodes


class _StrRaises:
    def __str__(self) -> str:
        raise ValueError("no text")


def _find(nodes: list[Any], label: str, **kwargs: Any) -> Any:
    node = asyncio.run(find_canonical_node(_Graph(nodes), _Scope(), layer="semantic", label=label, **kwargs))
    return None if node is None else node.id


def test_find_canonical_node_with_guards() -> None:
    incoming = "Ticket ASR1605 is blocked on the vendor"
    nodes = [
        _Node("other-ticket", "Ticket ASR1603 is blocked on the vendor"),
        _Node("ancestor", "Ticket ASR1605 is blocked on the vendor.", owner="tenant\x1facme\x1fagent\x1fx"),
        _Node("same", "Ticket ASR1605 is blocked on the vendor!"),
    ]
    assert _find(nodes, incoming) == "other-ticket"  # the seed's answer: a false merge
    assert _find(nodes, incoming, guards=None) == "other-ticket"
    assert _find(nodes, incoming, guards=Guards()) == "other-ticket"
    assert _find(nodes, incoming, guards="value") == "same"
    assert _find(nodes[:2], incoming, guards="all") is None
    # requested_id short-circuits as before, guards or not
    assert _find(nodes, incoming, guards="value", requested_id="other-ticket") == "other-ticket"
    # The sequential path (a label that cannot be read as text): guarded too, and it fails where the
    # seed's loop would (a match before the bad node is still found; after it, nothing).
    assert _find([*nodes, _Node("bad", _StrRaises())], incoming, guards="value") == "same"
    assert _find([nodes[0], _Node("bad", _StrRaises()), nodes[2]], incoming, guards="value") is None
    assert _find([nodes[0], _Node("bad", _StrRaises())], incoming) == "other-ticket"
    with pytest.raises(InvalidInputError):
        _find(nodes, incoming, guards="bogus")


def _mixed_labels(seed: int, n: int) -> list[str]:
    rnd = random.Random(seed)
    base = [
        "Ticket ASR1603 is blocked on the vendor",
        "Ticket ASR1605 is blocked on the vendor",
        "ticket ASR1603 is blocked on the vendor.",
        "The staging server is reachable over VPN",
        "The staging server is not reachable over VPN",
        "The staging server is reachable over VPN from home",
        "Project Alpha uses PostgreSQL",
        "Project Beta uses PostgreSQL",
        "Project Alpha uses PostgreSQL 15 for orders",
        "Uses pytest",
        "Uses pytest and ruff",
        "",
        "  ",
        "...",
    ]
    return [rnd.choice(base) for _ in range(n)]


def test_join_and_clusters_with_guards() -> None:
    labels = _mixed_labels(1, 90)
    scopes = [k % 3 for k in range(len(labels))]
    plain = batch.join(labels, scopes=scopes)
    for g in (VALUE, NEGATION, ALL):
        expected = [
            (i, j)
            for i in range(len(labels))
            for j in range(i + 1, len(labels))
            if scopes[i] == scopes[j] and labels_match(labels[i], labels[j], guards=g)
        ]
        got = batch.join(labels, scopes=scopes, guards=g)
        assert [tuple(map(int, p)) for p in got] == expected
        assert len(expected) < len(plain)
    c = batch.clusters(labels, scopes=scopes, guards=ALL)
    ref = batch.clusters(labels, np.asarray(expected).reshape(-1, 2), scopes=scopes)
    assert c.canonical.tolist() == ref.canonical.tolist()
    assert np.array_equal(batch.join(labels, scopes=scopes, guards="none"), plain)


def _replay_oracle(
    labels: list[str],
    parts: list[int],
    g: Guards,
    *,
    threshold: float,
    min_chars: int,
    prefix: str,
    prefix_len: int,
    query_limit: int,
) -> list[int]:
    """``_reference.replay`` with the guards, written as plainly: the first matching, unblocked candidate."""
    stores: dict[int, list[int]] = {}
    out = []
    for i, (text, part) in enumerate(zip(labels, parts, strict=True)):
        if not text.strip():
            out.append(i)
            continue

        def key(s: str) -> str:
            return s.strip() if prefix == "raw" else _reference.normalise_label(s)

        store = stores.setdefault(part, [])
        if prefix == "none":
            cands = list(store)
        else:
            cands = [j for j in store if key(labels[j]).startswith(key(text)[:prefix_len])][:query_limit]
        hit = next(
            (
                j
                for j in cands
                if _reference.labels_match(labels[j], text, threshold=threshold, min_chars=min_chars)
                and guards_allow(labels[j], text, g)
            ),
            None,
        )
        if hit is None:
            store.append(i)
            out.append(i)
        else:
            out.append(hit)
    return out


@pytest.mark.parametrize("seed", range(4))
def test_replay_with_guards(seed: int) -> None:
    rnd = random.Random(seed)
    labels = _mixed_labels(seed, 150)
    parts = [rnd.randrange(2) for _ in labels]
    for prefix, prefix_len, query_limit in (
        ("raw", 20, 20),
        ("normalised", 20, 20),
        ("raw", 5, 2),
        ("none", 20, 20),
    ):
        for g in (VALUE, NEGATION, ALL):
            r = batch.replay(
                labels, scopes=parts, guards=g, prefix=prefix, prefix_len=prefix_len, query_limit=query_limit
            )
            expected = _replay_oracle(
                labels,
                parts,
                g,
                threshold=0.85,
                min_chars=16,
                prefix=prefix,
                prefix_len=prefix_len,
                query_limit=query_limit,
            )
            assert r.canonical.tolist() == expected
            for k, c in enumerate(expected):
                if c != k:
                    reason, score = _reference.match_reason(labels[c], labels[k])  # type: ignore[misc]
                    assert (r.reason[k], r.score[k]) == (reason, score)
        # no guards: the exact (Rust) replay, unchanged
        plain = batch.replay(
            labels, scopes=parts, prefix=prefix, prefix_len=prefix_len, query_limit=query_limit
        )
        assert plain.canonical.tolist() == _replay_oracle(
            labels,
            parts,
            Guards(),
            threshold=0.85,
            min_chars=16,
            prefix=prefix,
            prefix_len=prefix_len,
            query_limit=query_limit,
        )


def test_replay_guarded_without_guards_is_the_core_replay() -> None:
    """The Python replay behind ``guards=`` is the same lookup as the core's: with every guard off it gives
    the core's answers, reasons and scores on random corpora (short labels, tiny prefixes, empty labels)."""
    rnd = random.Random(7)
    alphabet = ["ab", "abc", "Ab", "a b", " x", "abd", ".", "é"]
    for trial in range(30):
        labels = ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 6))) for _ in range(80)]
        parts = [rnd.randrange(2) for _ in labels]
        prefix = rnd.choice(["raw", "normalised"])
        prefix_len, query_limit = rnd.choice([0, 1, 3, 20]), rnd.choice([1, 2, 20])
        threshold, min_chars = rnd.choice([0.5, 0.85]), rnd.choice([2, 16])
        kw = dict(
            threshold=threshold,
            min_chars=min_chars,
            prefix=prefix,
            prefix_len=prefix_len,
            query_limit=query_limit,
        )
        core = _backend.impl.replay(labels, parts, **kw)
        mine = replay_guarded(labels, parts, guards=None, **kw)
        assert mine[0] == list(core[0]) and mine[1] == list(core[1]), trial
        np.testing.assert_array_equal(np.asarray(mine[2]), np.asarray(core[2]))
    with pytest.raises(InvalidInputError):
        replay_guarded(["a"], [0], guards=None, threshold=0.85, min_chars=16, prefix="bogus")
    with pytest.raises(InvalidInputError):
        replay_guarded(["a"], [0, 1], guards=None, threshold=0.85, min_chars=16)


GUARD_SPECS = [None, "none", "", "value", "negation", "all", "value,negation", "bogus", 42]


@pytest.mark.parametrize("guards", GUARD_SPECS)
def test_native_labels_match_takes_guards_as_the_wrapper_does(guards: Any) -> None:
    # memdedup.labels_match is the extension's own function (with the Rust backend); the Python
    # wrapper it replaced stays the pure-Python backend's. Same answers, same refusals, for
    # matching and differing labels alike (guards are parsed even when the labels differ).
    from memdedup import dedup

    pairs = [
        ("Ticket ASR1603 is blocked", "Ticket ASR1605 is blocked"),
        ("The user likes tea", "The user does not like tea"),
        ("The user likes green tea", "the user likes green tea."),
        ("Completely different", "Nothing alike at all here"),
    ]

    def outcome(fn: Any, stored: str, incoming: str) -> Any:
        try:
            return fn(stored, incoming, guards=guards)
        except Exception as exc:  # the error's type is part of the contract
            return type(exc)

    for stored, incoming in pairs:
        native = outcome(dedup.labels_match_ext, stored, incoming)
        assert native == outcome(_reference.labels_match, stored, incoming)
