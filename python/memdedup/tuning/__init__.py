"""Benchmark-driven tuning: the write-time decision evaluated over labelled pairs and parameter grids.

A labelled pair is ``(stored, incoming, class, same_fact)``: ``same_fact`` is the human truth (does the
incoming label restate the stored one?), ``class`` the kind of restatement or near-miss it is. The
decision evaluated for a pair under a :class:`Setting` is the whole write-time path:

1. the prefix gate: ``"raw"`` (the seed's candidate fetch: the incoming label, stripped, cut to its first
   ``prefix_len`` = 20 characters, must be a case-sensitive prefix of the stripped stored label; a label
   shorter than that uses all of itself), ``"normalised"`` (the same on normalised labels) or ``"none"``
   (always compared);
2. :func:`memdedup.labels_match` with ``threshold`` and ``min_chars`` (ratio OR containment);
3. the guards (:mod:`memdedup.guards`), off unless asked for.

(The seed's candidate limit of 20 rows does not apply to a single pair.) :func:`decide` is that decision
for one pair, written plainly; the vectorised paths below give exactly its answer for every pair.

Everything a decision needs is computed once per pair set (:func:`prepare`): the gates, whether the
shorter normalised label occurs in the longer and its length, the exact ratio of the normalised labels
with the stored label first (the number ``labels_match`` compares with the threshold) and the guards'
verdicts, the last two only for the pairs whose decision can depend on them. A setting is then decided as
``gate & (score >= t | contained & shorter >= m) & ~blocked`` on numpy arrays, and a whole threshold sweep
with one sort and a binary search per (class, truth) group, so a 100-threshold sweep costs about one
pass.

What a gate costs (:func:`gate_costs`) is read off the same arrays: with no gate the decision is the
contract itself, so a gate's lost restatements are the same-fact pairs the contract accepts and the gate
does not fetch, and the false merges it stops are the different-fact pairs it keeps from an accepting
contract.

The package has one file per concept: ``pairs`` (labelled-pair input), ``decision`` (the plain one-pair
oracle), ``prepared`` (per-pair arrays, computed once), ``evaluation`` (one setting in detail), ``sweeps``
(threshold sweeps and grids), ``gates`` (what each prefix gate costs), ``plot`` (the only matplotlib
importer) and ``report`` (what ``memdedup tune`` prints). Import the public names from here.
"""

from __future__ import annotations

from memdedup.tuning.decision import PREFIX_MODES, Setting, decide, gate_passes
from memdedup.tuning.evaluation import ClassStats, Evaluation, PairOutcome, evaluate
from memdedup.tuning.gates import GateCost, best_gate_costs, gate_costs, gate_notes
from memdedup.tuning.pairs import LabelledPair, corpus_path, load_pairs, parse_pairs
from memdedup.tuning.plot import check_plot_path, plot_formats, plot_sweep
from memdedup.tuning.prepared import Prepared, prepare
from memdedup.tuning.report import TuneReport, tune
from memdedup.tuning.sweeps import (
    Sweep,
    grid,
    guard_tradeoff,
    parse_thresholds,
    sweep,
    threshold_range,
)

__all__ = [
    "PREFIX_MODES",
    "ClassStats",
    "Evaluation",
    "GateCost",
    "LabelledPair",
    "PairOutcome",
    "Prepared",
    "Setting",
    "Sweep",
    "TuneReport",
    "best_gate_costs",
    "check_plot_path",
    "corpus_path",
    "decide",
    "evaluate",
    "gate_costs",
    "gate_notes",
    "gate_passes",
    "grid",
    "guard_tradeoff",
    "load_pairs",
    "parse_pairs",
    "parse_thresholds",
    "plot_formats",
    "plot_sweep",
    "prepare",
    "sweep",
    "threshold_range",
    "tune",
]
