"""symfonic-core 9.12.0's own dedup paths, as symfonic ships them and with memdedup installed into it.

    python benches/bench_symfonic.py [--corpus PATH] [--rounds R] [--pairs N] [--nodes N]

Each row calls symfonic's code through symfonic's own names (``symfonic.memory.dedup.labels_match``,
``symfonic.agent.engine.find_canonical_node``, ``SemanticMerge``, ``_pair_similarity``), once with
symfonic's functions and once inside :func:`memdedup.integrations.symfonic.enabled`, the two
configurations taking turns over ``--rounds`` rounds in this one process; each keeps its best round.
Every answer of the memdedup configuration is checked equal to symfonic's (the run stops otherwise).
Labels are real: the shared PyPI corpus when present, else the bundled sample.

Rows: ``labels_match`` on candidate pairs sharing a 20-character prefix; ``find_canonical_node`` on
candidates already fetched (a graph answering from memory: the lookup's own cost); the janitor's
``SemanticMerge.find_duplicates`` and ``deduplicate_all`` with only ``SequenceMatcher`` swapped (symfonic's
``_similarity`` kept), then with ``_similarity`` answered by ``memdedup.ratio`` (the installed default);
the semantic-merge phase's lexical prefilter (``_pair_similarity`` without embeddings).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import symfonic.agent.engine as engine
import symfonic.core.learning.phases_semantic_merge as merge
import symfonic.memory.dedup as dedup
import symfonic.memory.janitor as janitor
from _corpus import default_corpus, prefix_pairs, read_labels
from memdedup.integrations import symfonic as integ
from symfonic.memory.backends.in_memory import InMemoryGraphBackend
from symfonic.memory.graph.store import GraphMemoryStore
from symfonic.memory.models.node import MemoryNode
from symfonic.memory.types import MemoryLayer, TenantScope

SCOPE = TenantScope.root("tenant", "acme").child("agent", "planner")
SYMFONIC_SIMILARITY = janitor._similarity  # symfonic's own, captured before any install


class Node:
    """A fetched candidate in the shape find_canonical_node reads."""

    def __init__(self, node_id: str, label: str) -> None:
        self.id = node_id
        self.label = label
        self.properties = {"scope_path": SCOPE.scope_path}
        self.tenant_id = "acme"


class FetchedGraph:
    """Answers query_nodes from memory: the candidates sharing the 20-character prefix."""

    def __init__(self, labels: list[str]) -> None:
        self.by_prefix: dict[str, list[Node]] = defaultdict(list)
        for k, label in enumerate(labels):
            self.by_prefix[label.strip()[:20]].append(Node(f"n{k}", label))

    async def query_nodes(self, scope: Any, *, layer: Any, label_prefix: str) -> list[Node]:
        return self.by_prefix.get(label_prefix, [])


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def workloads(labels: list[str], pairs: list[tuple[str, str]], nodes: int) -> dict[str, Callable[[], Any]]:
    stored = [a for a, _ in pairs]
    incoming = [b for _, b in pairs]
    graph = FetchedGraph(stored)
    texts = [t for t in dict.fromkeys(labels) if len(t) >= 20][: nodes * 2]
    procedural = [
        MemoryNode(id=f"p{k}", layer=MemoryLayer.PROCEDURAL, tenant_id="acme", label=t)
        for k, t in enumerate(texts[:nodes])
    ]
    newcomers = [
        MemoryNode(id=f"q{k}", layer=MemoryLayer.PROCEDURAL, tenant_id="acme", label=t)
        for k, t in enumerate(texts[nodes : nodes + 50])
    ]
    semantic = [
        (
            MemoryNode(id=f"a{k}", layer=MemoryLayer.SEMANTIC, tenant_id="acme", label=a),
            MemoryNode(id=f"b{k}", layer=MemoryLayer.SEMANTIC, tenant_id="acme", label=b),
        )
        for k, (a, b) in enumerate(pairs)
    ]

    def labels_match() -> Any:
        match = dedup.labels_match
        return [match(a, b, threshold=0.85) for a, b in pairs]

    def find_canonical_node() -> Any:
        async def go() -> list[Any]:
            out = []
            for label in incoming:
                node = await engine.find_canonical_node(graph, SCOPE, layer=MemoryLayer.SEMANTIC, label=label)
                out.append(None if node is None else node.id)
            return out

        return run(go())

    def find_duplicates() -> Any:
        async def go() -> list[Any]:
            sm = janitor.SemanticMerge()
            return [[d.id for d in await sm.find_duplicates(SCOPE, procedural, new)] for new in newcomers]

        return run(go())

    def deduplicate_all() -> Any:
        async def go() -> Any:
            store = GraphMemoryStore(InMemoryGraphBackend())
            for node in procedural:
                await store.add_node(SCOPE, node.model_copy())
            count, remaining = await janitor.SemanticMerge().deduplicate_all(SCOPE, store)
            return count, sorted((n.id, n.label) for n in remaining)

        return run(go())

    def lexical_prefilter() -> Any:
        async def go() -> list[Any]:
            return [await merge._pair_similarity(a, b, None) for a, b in semantic]

        return run(go())

    return {
        "labels_match": labels_match,
        "find_canonical_node on fetched candidates": find_canonical_node,
        "janitor find_duplicates, SequenceMatcher swapped": find_duplicates,
        "janitor deduplicate_all, SequenceMatcher swapped": deduplicate_all,
        "janitor find_duplicates, _similarity = memdedup.ratio": find_duplicates,
        "janitor deduplicate_all, _similarity = memdedup.ratio": deduplicate_all,
        "phases_semantic_merge lexical prefilter": lexical_prefilter,
    }


def timed(fn: Callable[[], Any], min_seconds: float) -> tuple[float, Any]:
    """Seconds per call (whole calls repeated for at least ``min_seconds``) and the last answer."""
    calls, start = 0, time.perf_counter()
    while True:
        answer = fn()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return elapsed / calls, answer


def measure(name: str, fn: Callable[[], Any], rounds: int, min_seconds: float) -> tuple[float, float]:
    """Best round of symfonic's own functions and of memdedup installed, taking turns."""
    swapped_only = "SequenceMatcher swapped" in name
    best = {"symfonic": float("inf"), "memdedup": float("inf")}
    answers: dict[str, Any] = {}
    for _ in range(rounds):
        for config in ("symfonic", "memdedup"):
            if config == "symfonic":
                seconds, answer = timed(fn, min_seconds)
            else:
                with integ.enabled():
                    if swapped_only:  # symfonic's _similarity, on the swapped module-level SequenceMatcher
                        janitor._similarity = SYMFONIC_SIMILARITY
                    try:
                        seconds, answer = timed(fn, min_seconds)
                    finally:
                        if swapped_only:
                            janitor._similarity = integ.similarity
            best[config] = min(best[config], seconds)
            if config in answers and answers[config] != answer:
                raise SystemExit(f"{name}: {config} answered differently from one round to the next")
            answers[config] = answer
        if answers["memdedup"] != answers["symfonic"]:
            raise SystemExit(f"{name}: memdedup's answers differ from symfonic's")
    return best["symfonic"], best["memdedup"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument("--labels", type=int, default=200_000, help="labels read from the corpus")
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=150, help="procedural nodes for the janitor rows")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--min-seconds", type=float, default=0.3)
    args = parser.parse_args()
    corpus = args.corpus or default_corpus()
    labels = read_labels(corpus, args.labels)
    pairs = prefix_pairs(labels, args.pairs)
    print(f"symfonic-core 9.12.0 without and with memdedup; corpus {corpus.name}: {len(labels)} labels, ")
    print(
        f"{len(pairs)} prefix pairs, {args.nodes} procedural nodes; best of {args.rounds} alternating rounds"
    )
    print(f"\n{'symfonic path':56s} {'symfonic':>11s} {'memdedup':>11s} {'speed-up':>9s}")
    for name, fn in workloads(labels, pairs, args.nodes).items():
        theirs, ours = measure(name, fn, args.rounds, args.min_seconds)
        print(f"{name:56s} {theirs * 1e3:9.2f}ms {ours * 1e3:9.2f}ms {theirs / ours:8.1f}x", flush=True)
    print("\nEvery memdedup answer above equals symfonic's (checked in every round).")


if __name__ == "__main__":
    main()
