"""The restatement corpus, its pinned matrix, and memdedup.tuning: sweeps equal separate evaluations."""

from __future__ import annotations

import json
import math
import struct
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from cli_support import run
from memdedup import (
    _reference,
    labels_match,  # the extended matcher, with defaults
    tuning,
)
from memdedup.cli import main
from memdedup.errors import InvalidInputError
from memdedup.guards import Guards

CLASSES = {
    # class: same_fact
    "identical": True,
    "case_space_punct": True,
    "case_at_start": True,
    "trailing_punct": True,
    "tail_reword": True,
    "extra_detail": True,
    "terser": True,
    "terser_short": True,
    "opening_reworded": True,
    "value_number": False,
    "value_name": False,
    "value_version": False,
    "negation": False,
    "shared_opening": False,
    "long_labels": True,
    "non_ascii": True,
}

# The default contract (raw 20-char prefix gate, ratio 0.85, containment >= 16 chars, no guards) on the
# bundled corpus: class -> (collapsed, pairs). Change a rule or a threshold and this shows which classes flip.
DEFAULT_MATRIX = {
    "identical": (16, 16),  # equal labels: ratio 1.0
    "case_space_punct": (12, 16),  # normalisation absorbs it; 4 differ in case inside the first 20 chars
    "case_at_start": (0, 16),  # the raw gate is case-sensitive: never even compared
    "trailing_punct": (16, 16),  # stripped by normalisation
    "tail_reword": (11, 16),  # ratio >= 0.85 for most; 2 fall below, 3 reword inside the first 20 chars
    "extra_detail": (12, 17),  # containment; a stored label under 20 chars is never fetched by its extension
    "terser": (15, 17),  # containment; 2 drop the opening, so the gate fails
    "terser_short": (0, 16),  # contained but under 16 chars, and the ratio is far below 0.85
    "opening_reworded": (0, 16),  # the gate: the seed leaves this class to semantic merge
    "value_number": (10, 16),  # FALSE merges: ratio ~0.97; 6 are saved by a value in the first 20 chars
    "value_name": (10, 16),  # false merges
    "value_version": (15, 16),  # false merges: versions sit at the end of the label
    "negation": (2, 17),  # false merges where the negation comes after the first 20 chars
    "shared_opening": (4, 17),  # false merges: one swapped common word in a long shared label
    "long_labels": (13, 16),  # 2 case changes at the start; 1 below 0.85 (autojunk's popular characters)
    "non_ascii": (8, 16),  # short CJK labels (the whole label is the key) and early edits fail the gate
}


@pytest.fixture(scope="module")
def pairs() -> list[tuning.LabelledPair]:
    return tuning.load_pairs()


@pytest.fixture(scope="module")
def prepared(pairs: list[tuning.LabelledPair]) -> tuning.Prepared:
    return tuning.prepare(pairs)


# ---------------------------------------------------------------------------------------------------
# The corpus
# ---------------------------------------------------------------------------------------------------
def test_corpus_is_package_data() -> None:
    path = tuning.corpus_path()
    assert path.is_file()
    assert path.name == "restatements.jsonl"


def test_corpus_shape(pairs: list[tuning.LabelledPair]) -> None:
    counts = Counter(p.cls for p in pairs)
    assert set(counts) == set(CLASSES)
    assert all(n >= 15 for n in counts.values()), counts
    for p in pairs:
        assert p.same_fact is CLASSES[p.cls], p
        assert p.stored.strip() and p.incoming.strip()
    assert len({(p.stored, p.incoming) for p in pairs}) == len(pairs)  # no duplicate pairs
    for p in pairs:
        if p.cls == "identical":
            assert p.stored == p.incoming
        else:
            assert p.stored != p.incoming, p
        if p.cls == "long_labels":
            assert len(p.stored) > 200 and len(p.incoming) > 200
        if p.cls == "non_ascii":
            assert not (p.stored + p.incoming).isascii()
        if p.cls == "terser_short":
            assert len(_reference.normalise_label(p.incoming)) < 16
            assert _reference.normalise_label(p.incoming) in _reference.normalise_label(p.stored)
        if p.cls == "trailing_punct":
            assert _reference.normalise_label(p.stored) == _reference.normalise_label(p.incoming)
        if p.cls == "shared_opening":
            assert p.stored[:20] == p.incoming[:20]


def test_pinned_matrix(prepared: tuning.Prepared) -> None:
    ev = tuning.evaluate(prepared)
    assert ev.setting == tuning.Setting(0.85, 16, "raw", Guards(), 20)
    assert ev.matrix() == DEFAULT_MATRIX
    assert (ev.tp, ev.fp, ev.fn, ev.tn) == (103, 41, 75, 41)


def test_pinned_matrix_other_gates_and_guards(prepared: tuning.Prepared) -> None:
    collapsed = {c: n for c, (n, _) in DEFAULT_MATRIX.items()}
    normalised = tuning.evaluate(prepared, prefix="normalised").matrix()
    # The normalised gate recovers the case/space classes and nothing else changes class-wise but
    # the long and non-ASCII labels whose difference was a case change at the start.
    assert {c: n for c, (n, _) in normalised.items() if n != collapsed[c]} == {
        "case_space_punct": 16,
        "case_at_start": 16,
        "long_labels": 15,
        "non_ascii": 9,
    }
    guarded = tuning.evaluate(prepared, guards="all").matrix()
    assert {c: n for c, (n, _) in guarded.items() if n != collapsed[c]} == {
        "extra_detail": 11,  # ", never coffee": the negation guard's cost
        "value_number": 0,
        "value_name": 0,
        "value_version": 0,
        "negation": 0,
        "shared_opening": 2,
        "non_ascii": 7,  # "Genève" -> "Geneva": the value guard's cost
    }


def test_guard_tradeoff(prepared: tuning.Prepared) -> None:
    t = tuning.guard_tradeoff(prepared)
    assert {k: (v["stopped"], v["lost"]) for k, v in t.items()} == {
        "none": (0, 0),
        "value": (37, 1),
        "negation": (2, 1),
        "all": (39, 2),
    }
    assert t["all"]["precision"] > 0.97 > t["none"]["precision"]


# ---------------------------------------------------------------------------------------------------
# What each gate costs
# ---------------------------------------------------------------------------------------------------
def _plain_f1(precision: float, recall: float) -> float:
    if math.isnan(precision) or math.isnan(recall) or precision + recall == 0:
        return math.nan
    return 2 * precision * recall / (precision + recall)


def _plain_gate_cost(
    pairs: list[tuning.LabelledPair], gate: str, threshold: float, min_chars: int, guards: str | None
) -> dict[str, float]:
    """One gate at one setting, pair by pair: the contract (labels_match with the guards) decides, the gate
    decides what is fetched; a pair collapses when both say yes."""
    tp = fp = fn = tn = lost = stopped = 0
    for p in pairs:
        accepted = labels_match(p.stored, p.incoming, threshold=threshold, min_chars=min_chars, guards=guards)
        fetched = tuning.gate_passes(p.stored, p.incoming, gate)
        collapsed = accepted and fetched
        if p.same_fact:
            tp, fn, lost = tp + collapsed, fn + (not collapsed), lost + (accepted and not fetched)
        else:
            fp, tn, stopped = fp + collapsed, tn + (not collapsed), stopped + (accepted and not fetched)
    precision = tp / (tp + fp) if tp + fp else math.nan
    recall = tp / (tp + fn) if tp + fn else math.nan
    return {
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "lost": lost,
        "stopped": stopped,
        "precision": precision,
        "recall": recall,
        "f1": _plain_f1(precision, recall),
        "recall_lost": lost / (tp + fn) if tp + fn else math.nan,
    }


def _figures(cost: tuning.GateCost) -> dict[str, float]:
    return {
        "tp": cost.tp,
        "fp": cost.fp,
        "fn": cost.fn,
        "tn": cost.tn,
        "lost": cost.lost,
        "stopped": cost.stopped,
        "precision": cost.precision,
        "recall": cost.recall,
        "f1": cost.f1,
        "recall_lost": cost.recall_lost,
    }


def _same(a: dict[str, float], b: dict[str, float]) -> bool:
    """Equal, NaN equal to NaN (no tolerance: the figures are the same arithmetic on the same counts)."""
    return a.keys() == b.keys() and all(
        (isinstance(a[k], float) and math.isnan(a[k]) and math.isnan(b[k])) or a[k] == b[k] for k in a
    )


def test_gate_costs_equal_a_plain_recomputation(pairs: list[tuning.LabelledPair]) -> None:
    everything = pairs + EDGE_PAIRS
    prepared = tuning.prepare(everything)
    scores = sorted(set(prepared.score.tolist()))
    thresholds = [0.85, 0.73, 0.0, 1.0, scores[len(scores) // 3], scores[2 * len(scores) // 3]]
    for threshold in thresholds:
        for min_chars in (0, 16):
            for guards in (None, "all"):
                costs = tuning.gate_costs(prepared, threshold=threshold, min_chars=min_chars, guards=guards)
                assert list(costs) == list(tuning.PREFIX_MODES)
                for gate, cost in costs.items():
                    plain = _plain_gate_cost(everything, gate, threshold, min_chars, guards)
                    assert _same(_figures(cost), plain), (gate, threshold, min_chars, guards)
                    assert (cost.gate, cost.threshold) == (gate, threshold)
                    assert cost.collapsed == cost.tp + cost.fp
                    assert (cost.false_merges, cost.misses) == (cost.fp, cost.fn)
                    d = cost.to_dict()
                    assert d["fp"] == cost.fp and d["lost"] == cost.lost and json.dumps(d)
                # No gate loses nothing and stops nothing: it is the contract itself.
                assert (costs["none"].lost, costs["none"].stopped) == (0, 0)


def test_gate_costs_on_a_single_gate_and_no_pairs(prepared: tuning.Prepared) -> None:
    only = tuning.gate_costs(prepared, gates=("normalized",))
    assert list(only) == ["normalised"]
    assert only["normalised"] == tuning.gate_costs(prepared)["normalised"]
    empty = tuning.gate_costs([])
    assert all(c.tp == c.fp == c.lost == 0 and math.isnan(c.recall_lost) for c in empty.values())
    assert json.dumps({g: c.to_dict() for g, c in empty.items()})
    with pytest.raises(InvalidInputError, match="prefix must be one of"):
        tuning.gate_costs(prepared, gates=("bogus",))


def test_tune_report_gates_at_the_threshold_and_at_each_best(pairs: list[tuning.LabelledPair]) -> None:
    ts = tuning.parse_thresholds("0.70:0.95:0.01")
    for guards in (None, "all"):
        report = tuning.tune(thresholds=ts, threshold=0.85, guards=guards)
        for gate in tuning.PREFIX_MODES:
            assert _same(_figures(report.gates[gate]), _plain_gate_cost(pairs, gate, 0.85, 16, guards))
            # The recommended threshold of each gate: its best F1 over the sweep (the lowest on ties).
            f1s = [_plain_gate_cost(pairs, gate, float(t), 16, guards)["f1"] for t in ts]
            best = float(ts[f1s.index(max(f for f in f1s if not math.isnan(f)))])
            chosen = report.gates_best[gate]
            assert chosen.threshold == best, (gate, guards)
            assert _same(_figures(chosen), _plain_gate_cost(pairs, gate, best, 16, guards))
        d = report.to_dict()
        assert d["gates_at_detail_threshold"] == {g: c.to_dict() for g, c in report.gates.items()}
        assert d["gates_at_best_f1"] == {g: c.to_dict() for g, c in report.gates_best.items()}


def _gate_rows(out: str, title: str) -> dict[str, list[str]]:
    block = out.split(title, 1)[1].split("\n\n", 1)[0].splitlines()
    header = next(k for k, line in enumerate(block) if line.split()[:2] == ["gate", "threshold"])
    return {line.split()[0]: line.split()[1:] for line in block[header + 1 :] if line.strip()}


def _expected_row(cost: tuning.GateCost) -> list[str]:
    def p(x: float) -> str:
        return "-" if math.isnan(x) else f"{x:.3f}"

    return [
        f"{cost.threshold:g}",
        str(cost.collapsed),
        str(cost.fp),
        str(cost.fn),
        str(cost.lost),
        p(cost.recall_lost),
        str(cost.stopped),
        p(cost.precision),
        p(cost.recall),
        p(cost.f1),
    ]


def test_cli_tune_prints_the_gate_tables() -> None:
    report = tuning.tune(guards="all")
    out = run("tune", "--guards", "all", "--show", "1").ok().out
    at = _gate_rows(out, "Gates at threshold 0.85")
    assert at == {g: _expected_row(c) for g, c in report.gates.items()}
    best = _gate_rows(out, "Gates at each gate's best-F1 threshold")
    assert best == {g: _expected_row(c) for g, c in report.gates_best.items()}
    assert "none: no gate" in out  # the legend says what each gate is
    as_json = json.loads(run("tune", "--guards", "all", "--json").ok().out)
    assert as_json["gates_at_detail_threshold"] == json.loads(
        json.dumps({g: c.to_dict() for g, c in report.gates.items()})
    )
    assert as_json["gates_at_best_f1"] == json.loads(
        json.dumps({g: c.to_dict() for g, c in report.gates_best.items()})
    )


# ---------------------------------------------------------------------------------------------------
# The decision and its vectorised forms
# ---------------------------------------------------------------------------------------------------
def test_gate_passes() -> None:
    assert tuning.gate_passes("Uses pytest and ruff for Python", "Uses pytest and ruff")
    assert tuning.gate_passes("  Uses pytest and ruff, Python", "Uses pytest and ruff for Python  ")
    assert tuning.gate_passes("Uses pytest and ruff", "Uses pytest and ruff for Python")  # exactly 20 chars
    assert not tuning.gate_passes("Uses pytest", "Uses pytest and ruff")  # the 20-char key outgrows it
    assert not tuning.gate_passes("uses pytest", "Uses pytest")  # raw is case-sensitive
    assert tuning.gate_passes("uses pytest", "Uses pytest", "normalised")
    assert tuning.gate_passes("Uses pytest", "USES PYTEST!", "normalised")
    assert tuning.gate_passes("totally different", "unrelated", "none")
    assert not tuning.gate_passes("abc", "   ") and not tuning.gate_passes("abc", "...", "normalised")
    with pytest.raises(InvalidInputError):
        tuning.gate_passes("a", "b", "bogus")


EDGE_PAIRS = [
    tuning.LabelledPair("", "", "edge", True),
    tuning.LabelledPair("   ", "abc", "edge", False),
    tuning.LabelledPair("...", "...", "edge", True),
    tuning.LabelledPair("Uses pytest and ruff.", "uses pytest and ruff", "edge", True),
    tuning.LabelledPair("abcdefghijklmnop", "abcdefghijklmnopq", "edge", True),
    tuning.LabelledPair("x" * 250, "x" * 249 + "y", "edge", True),
]


def _thresholds_with_boundaries(prepared: tuning.Prepared) -> np.ndarray:
    # Every exact score is a threshold too: the decision must flip exactly there, as labels_match does.
    grid = np.linspace(0.0, 1.0, 21)
    return np.unique(np.concatenate([grid, prepared.score, np.nextafter(prepared.score, 2.0), [1.5]]))


def test_sweep_equals_separate_evaluations_and_the_plain_decision(pairs: list[tuning.LabelledPair]) -> None:
    prepared = tuning.prepare(pairs + EDGE_PAIRS)
    thresholds = _thresholds_with_boundaries(prepared)
    # The per-pair oracle and the full evaluation on a sample of thresholds, exact scores among them.
    sample = set(thresholds[:: max(1, len(thresholds) // 6)].tolist()) | {0.85}
    for min_chars in (0, 16, 40):
        for prefix in tuning.PREFIX_MODES:
            for guards in (None, "all"):
                sw = tuning.sweep(prepared, thresholds, min_chars=min_chars, prefix=prefix, guards=guards)
                for k, t in enumerate(thresholds):
                    setting = tuning.Setting(t, min_chars, prefix, Guards.parse(guards or "none"))
                    collapsed = prepared.collapsed(setting)
                    same = prepared.same
                    counts = (
                        np.count_nonzero(collapsed & same),
                        np.count_nonzero(collapsed & ~same),
                        np.count_nonzero(~collapsed & same),
                        np.count_nonzero(~collapsed & ~same),
                    )
                    assert (sw.tp[k], sw.fp[k], sw.fn[k], sw.tn[k]) == counts
                    per_class = np.bincount(prepared.class_ids[collapsed], minlength=len(sw.classes))
                    assert per_class.tolist() == sw.class_collapsed[k].tolist()
                    if t not in sample:
                        continue
                    ev = tuning.evaluate(
                        prepared, threshold=t, min_chars=min_chars, prefix=prefix, guards=guards
                    )
                    assert (ev.tp, ev.fp, ev.fn, ev.tn) == counts
                    assert [ev.classes[c].collapsed for c in sw.classes] == per_class.tolist()
                    plain = [
                        tuning.decide(
                            p.stored,
                            p.incoming,
                            threshold=t,
                            min_chars=min_chars,
                            prefix=prefix,
                            guards=guards,
                        )
                        for p in prepared.pairs
                    ]
                    assert ev.collapsed.tolist() == plain, (t, min_chars, prefix, guards)


def test_lazy_scores_and_verdicts(pairs: list[tuning.LabelledPair]) -> None:
    """Scores and guard verdicts are computed only where a decision needs them, and answers do not depend
    on what was computed before."""
    thresholds = [0.85, 0.9]
    fresh = tuning.prepare(pairs + EDGE_PAIRS)
    sw = tuning.sweep(fresh, thresholds, guards="all")
    computed = ~np.isnan(fresh._score)
    assert 0 < computed.sum() < len(fresh)  # the length bound spared some ratios
    assert np.all(fresh.bound[computed] >= 0.85)
    assert (fresh._verdicts["value"] >= 0).sum() < len(fresh)  # guards only where the contract can match
    for k, t in enumerate(thresholds):
        other = tuning.prepare(pairs + EDGE_PAIRS)
        ev = tuning.evaluate(other, threshold=t, guards="all")
        assert (sw.tp[k], sw.fp[k], sw.fn[k], sw.tn[k]) == (ev.tp, ev.fp, ev.fn, ev.tn)
        plain = [tuning.decide(p.stored, p.incoming, threshold=t, guards="all") for p in other.pairs]
        assert ev.collapsed.tolist() == plain
        assert all(not np.isnan(o.score) for o in ev.false_merges + ev.misses)
    full = tuning.prepare(pairs + EDGE_PAIRS).score
    assert np.all(fresh.bound >= full)  # the bound never undercuts a ratio
    assert fresh.score[computed].tolist() == full[computed].tolist()


def test_decide_is_gate_then_labels_match(pairs: list[tuning.LabelledPair]) -> None:
    for p in pairs:
        for prefix in tuning.PREFIX_MODES:
            expected = tuning.gate_passes(p.stored, p.incoming, prefix) and labels_match(p.stored, p.incoming)
            assert tuning.decide(p.stored, p.incoming, prefix=prefix) is expected


def test_scores_are_the_contract_scores(prepared: tuning.Prepared, monkeypatch: pytest.MonkeyPatch) -> None:
    for k, p in enumerate(prepared.pairs):
        a, b = _reference.normalise_label(p.stored), _reference.normalise_label(p.incoming)
        assert prepared.score[k] == _reference.ratio(a, b)
        shorter, longer = (a, b) if len(a) <= len(b) else (b, a)
        assert prepared.contained[k] == (shorter in longer)
    # The pure-Python path (no core) gives the same arrays.
    monkeypatch.setattr(tuning.prepared, "_impl", _reference)
    slow = tuning.prepare(prepared.pairs)
    assert np.array_equal(slow.score, prepared.score) and np.array_equal(slow.contained, prepared.contained)
    for prefix in tuning.PREFIX_MODES:
        assert np.array_equal(slow.gates[prefix], prepared.gates[prefix])


def test_evaluation_lists(prepared: tuning.Prepared) -> None:
    ev = tuning.evaluate(prepared, threshold=0.85)
    assert len(ev.false_merges) == ev.fp and len(ev.misses) == ev.fn
    assert all(
        not o.pair.same_fact and o.collapsed and o.why in {"ratio", "containment"} for o in ev.false_merges
    )
    assert all(o.pair.same_fact and not o.collapsed for o in ev.misses)
    whys = Counter(o.why.split(";")[0] for o in ev.misses)
    assert set(whys) == {"prefix gate", "below threshold"}
    short = [o for o in ev.misses if o.pair.cls == "terser_short"]
    assert all(o.why == "below threshold; contained but shorter than 16" for o in short)
    guarded = tuning.evaluate(prepared, threshold=0.85, guards="all")
    assert any(o.why.startswith("guard negation:") for o in guarded.misses)
    assert any(o.why.startswith("guard value:") for o in guarded.misses)
    # A guard is named only when it made the difference: "Bikes to work" drops a negation, but the
    # contract would not have matched anyway.
    bikes = next(o for o in guarded.misses if o.pair.incoming == "Bikes to work")
    assert bikes.why == "below threshold; contained but shorter than 16"
    assert ev.precision == pytest.approx(103 / 144) and ev.recall == pytest.approx(103 / 178)
    assert ev.f1 == pytest.approx(2 * ev.precision * ev.recall / (ev.precision + ev.recall))
    d = ev.to_dict()
    assert d["fp"] == ev.fp and len(d["false_merges"]) == ev.fp and json.dumps(d)


def test_sweep_extras(prepared: tuning.Prepared) -> None:
    sw = tuning.sweep(prepared, tuning.parse_thresholds("0.70:0.95:0.01"))
    assert sw.best("f1") in sw.thresholds
    assert sw.collapse_rate.shape == (26, len(sw.classes))
    assert sw.at(0.85).matrix() == DEFAULT_MATRIX
    rows = sw.rows()
    assert rows[15]["threshold"] == 0.85 and rows[15]["fp"] == 41
    assert json.dumps(sw.to_dict())
    # recall never rises with the threshold, for a fixed gate and guards
    assert np.all(np.diff(sw.recall) <= 0)
    sweeps = tuning.grid(
        prepared, [0.8, 0.9], min_chars=(10, 16), prefixes=("raw", "none"), guards=(None, "all")
    )
    assert len(sweeps) == 8
    assert all(s.prepared is prepared for s in sweeps)
    empty = tuning.sweep([], [0.5, 0.9])
    assert empty.tp.tolist() == [0, 0] and np.isnan(empty.best("f1"))


# ---------------------------------------------------------------------------------------------------
# Thresholds and pair files
# ---------------------------------------------------------------------------------------------------
def test_parse_thresholds() -> None:
    ts = tuning.parse_thresholds("0.70:0.95:0.01")
    assert len(ts) == 26 and ts[0] == 0.70 and ts[-1] == 0.95 and 0.85 in ts.tolist()
    assert ts.tolist() == [float(f"0.{70 + k}") for k in range(26)]  # the decimals, not accumulated steps
    assert tuning.parse_thresholds("0.7:0.95:0.02").tolist()[-1] == 0.94
    assert tuning.parse_thresholds("0:1:0.25").tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert tuning.parse_thresholds("0.9, 0.85,0.9").tolist() == [0.85, 0.9]
    assert tuning.parse_thresholds("0.85").tolist() == [0.85]
    assert len(tuning.parse_thresholds("0.0:0.99:0.01")) == 100
    for bad, message in [
        ("0.9:0.7:0.01", "start <= stop"),
        ("0.7:1.2:0.01", "stop <= 1"),
        ("-0.1:0.5:0.1", "0 <= start"),
        ("0.7:0.9:0", "positive"),
        ("0.7:0.9:-0.01", "positive"),
        ("0.7:0.9", "A:B:STEP"),
        ("a:b:c", "not a number"),
        ("nan:1:0.1", "finite"),
        ("1.5", r"\[0, 1\]"),
        ("", "no thresholds"),
        ("0:1:0.000001", "too many"),
    ]:
        with pytest.raises(InvalidInputError, match=message):
            tuning.parse_thresholds(bad)


def test_load_pairs_file(tmp_path: Path) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_text(
        '{"stored": "Uses pytest", "incoming": "Uses pytest.", "same_fact": true}\n\n'
        '{"stored": "a", "incoming": "b", "same_fact": 0, "class": "x"}\n',
        encoding="utf-8",
    )
    got = tuning.load_pairs(path)
    assert got == [
        tuning.LabelledPair("Uses pytest", "Uses pytest.", "unlabelled", True),
        tuning.LabelledPair("a", "b", "x", False),
    ]
    for text, message in [
        ("{not json}\n", ":1: not JSON"),
        ('{"stored": "a", "incoming": "b"}\n', ":1: no 'same_fact'"),
        ('\n{"stored": "a", "incoming": "b", "same_fact": "maybe"}\n', ":2: same_fact must be"),
        ('{"stored": 1, "incoming": "b", "same_fact": true}\n', "stored must be a string"),
        ("[1, 2]\n", "expected a JSON object"),
    ]:
        path.write_text(text, encoding="utf-8")
        with pytest.raises(InvalidInputError, match=message):
            tuning.load_pairs(path)
    with pytest.raises(InvalidInputError, match="cannot read"):
        tuning.load_pairs(tmp_path / "missing.jsonl")


# ---------------------------------------------------------------------------------------------------
# The command and the picture
# ---------------------------------------------------------------------------------------------------
def test_cli_tune_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "--show", "0"]) == 0
    out = capsys.readouterr().out
    assert "260 pairs, 16 classes" in out
    assert "At threshold 0.85: 144 collapsed, 41 false merges, 75 misses" in out
    assert "case_at_start     same          16  0/16" in out
    assert "False merges at 0.85 (41)" in out and "Misses at 0.85 (75)" in out
    assert "Ticket" not in out.split("False merges")[1].split("Misses")[0]  # ASR1603/5 is gated at 0.85


def test_cli_tune_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["tune", "--json", "--guards", "all", "--prefix", "none", "--thresholds", "0.8:0.9:0.05"]) == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["pairs"] == 260
    assert report["sweep"]["thresholds"] == [0.8, 0.85, 0.9]
    assert report["sweep"]["guards"] == "value,negation" and report["sweep"]["prefix"] == "none"
    assert report["detail"]["fp"] == 3 and report["guards_at_detail_threshold"]["all"]["fp"] == 3
    path = tmp_path / "mine.jsonl"
    path.write_text(
        '{"stored": "Ticket ASR1603 is blocked", "incoming": "Ticket ASR1605 is blocked", '
        '"same_fact": false}\n',
        encoding="utf-8",
    )
    assert main(["tune", str(path), "--json", "--prefix", "none", "--thresholds", "0.9"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["detail"]["false_merges"][0]["why"] == "ratio"
    assert main(["tune", str(path), "--json", "--prefix", "none", "--guards", "value"]) == 0
    assert json.loads(capsys.readouterr().out)["detail"]["fp"] == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--thresholds", "0.9:0.7:0.01"], "start <= stop"),
        (["--thresholds", "x"], "not a number"),
        (["--guards", "bogus"], "unknown guard"),
        (["--threshold", "1.5"], "must lie in"),
        (["--prefix", "bogus"], "invalid choice"),
    ],
)
def test_cli_tune_usage_errors(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["tune", *args])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_cli_tune_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", str(tmp_path / "missing.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert main(["tune", "--min-chars", "-1"]) == 2
    assert "--min-chars must be 0 or more, not -1" in capsys.readouterr().err


def test_cli_plot_without_matplotlib(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # not installed
    monkeypatch.setitem(sys.modules, "matplotlib.backend_bases", None)
    assert main(["tune", "--plot", str(tmp_path / "x.png")]) == 2
    assert "needs matplotlib" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


@pytest.mark.slow
def test_cli_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    path = tmp_path / "tune.png"
    assert main(["tune", "--plot", str(path), "--show", "1"]) == 0
    assert f"wrote {path}" in capsys.readouterr().out
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    assert main(["tune", "--plot", str(tmp_path / "no" / "such" / "dir.png")]) == 2
    assert "cannot write" in capsys.readouterr().err


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


def test_plot_draws_the_gate_panels(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    report = tuning.tune(guards="all")
    plain, gated = tmp_path / "plain.png", tmp_path / "gates.png"
    tuning.plot_sweep(report.sweep, plain, threshold=0.85)
    tuning.plot_sweep(report.sweep, gated, threshold=0.85, gates=report.gates, best=report.gates_best)
    (pw, ph), (gw, gh) = _png_size(plain.read_bytes()), _png_size(gated.read_bytes())
    assert gw == pw and gh > ph  # a second row of panels: the gates
    assert len(gated.read_bytes()) > len(plain.read_bytes()) > 20_000
