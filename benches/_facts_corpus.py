"""A corpus of fact-update conversations, and the check of what a store recalls from it.

Each *case* is one fact of one class, stated and later changed or restated, in a conversation of several
users under an org, between distractor turns; the stale statement is often the more important one. The
classes (``CLASSES``):

- ``numeric``: a number changes (a port, a budget, a rate limit);
- ``named``: a named value changes (a shell, an editor, a city);
- ``negated``: the fact is negated ("is allergic" -> "is not allergic");
- ``restated``: the same text again, with other case or punctuation: shown once;
- ``detail``: a restatement that adds detail: the fuller text is shown;
- ``terser``: a terser restatement after a fuller one: the fuller text stays;
- ``child-updates-org``: the org states a fact, a user states their own value: the user sees theirs, the
  org and a sibling still see the org's;
- ``layer-move``: a semantic fact and a later episodic statement of a new value: the newest is shown;
- ``reworded-prefix``: the change also rewords the first 20 characters, which the seed's prefix gate never
  fetches (only ``--gate index``, recall's collapse and ``consolidate`` reach it).

:func:`corpus` builds the turns (the JSON lines ``memdedup ingest`` reads) and the cases;
:func:`check` recalls each case's scope from a store and says, per case, whether the block shows the fact
exactly once, as its current text (a restatement's variant in case or punctuation counts as it). The
module uses the standard library and the store's ``recall`` only, so it runs against older builds too
(the "before" figures).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CLASSES", "Case", "check", "corpus", "write_corpus"]

ORG = [["org", "acme"]]
USERS = ["dana", "raj", "mia", "sam", "lee", "ana", "tom", "eve"]


def user(name: str) -> list[list[str]]:
    return [*ORG, ["user", name]]


def printed(scope: list[list[str]]) -> str:
    return "/".join(f"{k}:{v}" for k, v in scope)


@dataclass
class Case:
    """One fact: its statements in order (scope, layer, text, importance), the scope to recall it at, the
    text that block must show once (``current``), the texts it must not show (``stale``), and other scopes
    whose blocks must still show a given text (``elsewhere``: the org's own, a sibling's)."""

    cls: str
    name: str
    statements: list[tuple[list[list[str]], str, str, int]]
    recall_at: list[list[str]]
    current: str
    stale: list[str]
    elsewhere: list[tuple[list[list[str]], str]] = field(default_factory=list)

    @property
    def texts(self) -> list[str]:
        return [text for _, _, text, _ in self.statements]


# Org-wide facts a user overrides with their own value: one per user, no two the same fact.
_ORG_FACTS = [
    ("The on-call shift for the payments platform is {} hours long", ["24", "12", "8", "6"]),
    ("Code reviews need {} approvals before a merge to main", ["two", "three", "one"]),
    ("The staging cluster is rebuilt every {} days by the infra bot", ["7", "14", "30"]),
    ("Expense reports above {} dollars need a director's sign-off", ["500", "1000", "2500"]),
    ("The default meeting length in the calendar is {} minutes", ["30", "45", "25"]),
    ("Laptops are replaced every {} years under the hardware policy", ["three", "four", "five"]),
    ("The VPN session times out after {} hours of inactivity", ["8", "12", "2"]),
    ("Backups of the analytics warehouse are kept for {} days", ["35", "90", "365"]),
]


def _cases(rnd: random.Random) -> list[Case]:
    cases: list[Case] = []
    for k, name in enumerate(USERS):
        who, n = name.title(), user(name)
        sibling = user(USERS[(k + 1) % len(USERS)])
        port_a, port_b = rnd.sample(["5432", "6543", "5433", "15432", "6432"], 2)
        cases.append(
            Case(
                "numeric",
                name,
                [(n, "semantic", f"{who}'s staging database port is {port_a}", 9),
                 (n, "semantic", f"{who}'s staging database port is {port_b}", 5)],
                n,
                f"{who}'s staging database port is {port_b}",
                [f"{who}'s staging database port is {port_a}"],
            )
        )  # fmt: skip
        budget_a, budget_b = rnd.sample(["$4,000", "$5,500", "$3,200", "$7,750"], 2)
        cases.append(
            Case(
                "numeric",
                name,
                [(n, "semantic", f"The monthly cloud budget for {who}'s team is {budget_a}", 8),
                 (n, "semantic", f"The monthly cloud budget for {who}'s team is {budget_b}", 6)],
                n,
                f"The monthly cloud budget for {who}'s team is {budget_b}",
                [f"The monthly cloud budget for {who}'s team is {budget_a}"],
            )
        )  # fmt: skip
        shell_a, shell_b = rnd.sample(["zsh", "fish", "bash", "nushell"], 2)
        cases.append(
            Case(
                "named",
                name,
                [(n, "semantic", f"{who}'s default shell is {shell_a} on every machine", 9),
                 (n, "semantic", f"{who}'s default shell is {shell_b} on every machine", 4)],
                n,
                f"{who}'s default shell is {shell_b} on every machine",
                [f"{who}'s default shell is {shell_a} on every machine"],
            )
        )  # fmt: skip
        allergy = f"{who} is allergic to peanuts and tree nuts"
        cleared = f"{who} is not allergic to peanuts and tree nuts"
        first, then = (allergy, cleared) if k % 2 == 0 else (cleared, allergy)
        cases.append(
            Case("negated", name, [(n, "semantic", first, 10), (n, "semantic", then, 7)], n, then, [first])
        )
        fact = f"{who} prefers dark mode in every editor"
        cases.append(
            Case(
                "restated",
                name,
                [
                    (n, "semantic", fact, 6),
                    (n, "semantic", fact.lower() + ".", 6),
                    (n, "semantic", fact + "!", 3),
                ],
                n,
                fact,
                [],
            )
        )
        short = f"{who} is training for a half marathon"
        full = f"{who} is training for a half marathon in Valencia this December"
        cases.append(Case("detail", name, [(n, "semantic", short, 8), (n, "semantic", full, 5)], n, full, []))
        cases.append(Case("terser", name, [(n, "semantic", full, 5), (n, "semantic", short, 8)], n, full, []))
        template, values = _ORG_FACTS[k % len(_ORG_FACTS)]
        org_value, own_value = rnd.sample(values, 2)
        org_text, own_text = template.format(org_value), template.format(own_value)
        # The org states it (more important), the user states their own value later.
        cases.append(
            Case(
                "child-updates-org",
                name,
                [(ORG, "semantic", org_text, 10), (n, "semantic", own_text, 6)],
                n,
                own_text,
                [org_text],
                elsewhere=[(ORG, org_text), (sibling, org_text)],
            )
        )
        flight_a, flight_b = rnd.sample(["09:40", "19:40", "07:15", "21:05"], 2)
        cases.append(
            Case(
                "layer-move",
                name,
                [(n, "semantic", f"{who}'s flight to Lisbon leaves at {flight_a}", 9),
                 (n, "episodic", f"{who}'s flight to Lisbon leaves at {flight_b}", 4)],
                n,
                f"{who}'s flight to Lisbon leaves at {flight_b}",
                [f"{who}'s flight to Lisbon leaves at {flight_a}"],
            )
        )  # fmt: skip
        editor_a, editor_b = rnd.sample(["VS Code", "Neovim", "Helix", "Emacs"], 2)
        cases.append(
            Case(
                "reworded-prefix",
                name,
                [(n, "semantic", f"{who}'s default editor is {editor_a} on the work laptop", 9),
                 (n, "semantic", f"{who}\u2019s default editor is {editor_b} on the work laptop", 5)],
                n,
                f"{who}\u2019s default editor is {editor_b} on the work laptop",
                [f"{who}'s default editor is {editor_a} on the work laptop"],
            )
        )  # fmt: skip
    return cases


CLASSES = (
    "numeric",
    "named",
    "negated",
    "restated",
    "detail",
    "terser",
    "child-updates-org",
    "layer-move",
    "reworded-prefix",
)

_DISTRACTORS = [
    "{who} asked about the release notes for version {n}",
    "{who} reviewed pull request number {n} today",
    "{who} booked meeting room {n} for the planning session",
    "{who} filed ticket OPS-{n} about the flaky build",
]


def _op(layer: str, text: str, importance: int, subject: str) -> dict[str, Any]:
    category = "event" if layer == "episodic" else "fact"
    return {
        "action": "upsert_node",
        "layer": layer,
        "label": text,
        "importance": importance,
        "properties": {"memory_category": category, "subject": subject},
    }


def corpus(seed: int = 0) -> tuple[list[dict[str, Any]], list[Case]]:
    """The turns (in the order they happened) and the cases, from ``seed``."""
    rnd = random.Random(seed)
    cases = _cases(rnd)
    # Statements happen in order within a case; cases interleave; distractor turns come between.
    pending = [list(case.statements) for case in cases]
    turn_of: dict[str, int] = {}
    turns: list[dict[str, Any]] = []

    def emit(scope: list[list[str]], layer: str, text: str, importance: int) -> None:
        key = printed(scope)
        turn_of[key] = turn_of.get(key, 0) + 1
        subject = scope[-1][1]
        output = json.dumps({"ops": [_op(layer, text, importance, subject)]})
        turns.append({"scope": scope, "turn": turn_of[key], "output": output, "provider": "anthropic",
                      "messages": [{"role": "user", "content": f"note: {text}"}]})  # fmt: skip

    while any(pending):
        k = rnd.choice([i for i, left in enumerate(pending) if left])
        emit(*pending[k].pop(0))
        if rnd.random() < 0.5:
            name = rnd.choice(USERS)
            text = rnd.choice(_DISTRACTORS).format(who=name.title(), n=rnd.randint(10, 9999))
            emit(user(name), "episodic", text, rnd.randint(3, 9))
    return turns, cases


def write_corpus(path: str, seed: int = 0) -> list[Case]:
    """Write the corpus's turns as JSON lines to ``path``; the cases."""
    turns, cases = corpus(seed)
    with open(path, "w", encoding="utf-8") as out:
        for turn in turns:
            out.write(json.dumps(turn) + "\n")
    return cases


def check(cases: Iterable[Case], recall: Callable[[list[list[str]]], str]) -> dict[str, list[str]]:
    """Per class, the problems of its cases (an empty list: every case right). ``recall(scope)`` is the
    block a scope recalls (with the library's defaults)."""
    blocks: dict[str, str] = {}

    def block(scope: list[list[str]]) -> str:
        key = printed(scope)
        if key not in blocks:
            blocks[key] = recall(scope)
        return blocks[key]

    problems: dict[str, list[str]] = {cls: [] for cls in CLASSES}
    for case in cases:
        lines = block(case.recall_at).split("\n")
        shown = [line for line in lines if line in case.texts or line in case.stale]
        if len(shown) != 1:
            problems[case.cls].append(f"{case.name}: the fact is shown {len(shown)} times")
        elif shown[0] != case.current and not (case.cls == "restated" and shown[0] in case.texts):
            # A restatement in other case or punctuation is the same text for a reader; any other line is not.
            problems[case.cls].append(f"{case.name}: {shown[0]!r} is shown, not {case.current!r}")
        for scope, text in case.elsewhere:
            if block(scope).split("\n").count(text) != 1:
                problems[case.cls].append(f"{case.name}: {printed(scope)} no longer shows {text!r} once")
    return problems
