"""Pictures of a sweep (``memdedup tune --plot``): the only module that imports matplotlib, and only
when asked to draw."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from memdedup.errors import InvalidInputError
from memdedup.tuning.gates import GateCost
from memdedup.tuning.report import _fmt_p, _fmt_t
from memdedup.tuning.sweeps import Sweep


def plot_formats() -> list[str]:
    """The image file extensions :func:`plot_sweep` can write (matplotlib's), without the dot."""
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError as exc:
        raise InvalidInputError("plotting needs matplotlib: pip install 'memdedup[plot]'") from exc
    return sorted(FigureCanvasBase.get_supported_filetypes())


def check_plot_path(path: str | os.PathLike[str]) -> None:
    """Refuse, before any work, a plot path matplotlib cannot write: no matplotlib, an extension it has
    no writer for (the message lists those it has), or a folder that does not exist."""
    formats = plot_formats()
    name = os.fspath(path)
    extension = os.path.splitext(name)[1].lower().lstrip(".")
    if extension not in formats:
        what = f"a .{extension} file" if extension else "a file without an extension"
        raise InvalidInputError(
            f"--plot {name}: matplotlib cannot write {what}; name it .png (or "
            f"{', '.join('.' + f for f in formats if f != 'png')})"
        )
    folder = os.path.dirname(os.path.abspath(name))
    if not os.path.isdir(folder):
        raise InvalidInputError(f"--plot {name}: cannot write there: no such directory {folder!r}")


def plot_sweep(
    result: Sweep,
    path: str | os.PathLike[str],
    *,
    threshold: float | None = None,
    title: str = "",
    gates: dict[str, GateCost] | None = None,
    best: dict[str, GateCost] | None = None,
) -> None:
    """A PNG (or any format matplotlib writes, by extension: :func:`plot_formats`) with two panels:
    precision, recall and F1 against the threshold, and a class x threshold heatmap of collapse rates
    (truth marked per class). With ``gates`` (:func:`gate_costs`), a second row shows what each gate costs
    at that setting: precision, recall and F1, and the counts of false merges, misses, restatements lost
    to the gate and false merges it stopped; ``best`` (:func:`best_gate_costs`) adds each gate's best-F1
    threshold and F1 to its name. Needs matplotlib (``pip install 'memdedup[plot]'``). An extension
    matplotlib cannot write, a missing folder or a refused write is an
    :class:`~memdedup.errors.InvalidInputError`."""
    check_plot_path(path)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ts = result.thresholds
    n_classes = len(result.classes)
    top = max(5.0, 0.32 * n_classes + 2)
    if gates:
        fig, axes = plt.subplots(
            2,
            2,
            figsize=(15, top + 5.5),
            gridspec_kw={"width_ratios": [1, 1.35], "height_ratios": [top, 5.5]},
        )
        (left, right), bottom = axes[0], axes[1]
        _plot_gates(bottom[0], bottom[1], gates, best or {})
    else:
        fig, (left, right) = plt.subplots(1, 2, figsize=(15, top), gridspec_kw={"width_ratios": [1, 1.35]})
    left.plot(ts, result.precision, label="precision", marker=".", color="tab:blue")
    left.plot(ts, result.recall, label="recall", marker=".", color="tab:orange")
    left.plot(ts, result.f1, label="F1", linestyle="--", color="tab:green")
    if threshold is not None:
        left.axvline(threshold, color="grey", linewidth=0.8, linestyle=":")
        left.text(threshold, 0.02, f" {threshold:g}", color="grey", fontsize=8)
    left.set_xlabel("ratio threshold")
    left.set_ylim(-0.02, 1.02)
    left.set_title("precision / recall vs threshold")
    left.grid(alpha=0.3)
    left.legend(loc="lower left")

    rates = np.nan_to_num(result.collapse_rate.T, nan=0.0)  # (classes, thresholds)
    step = float(ts[1] - ts[0]) if len(ts) > 1 else 0.01
    image = right.imshow(
        rates,
        aspect="auto",
        cmap="viridis",
        vmin=0.0,
        vmax=1.0,
        interpolation="nearest",
        extent=(float(ts[0]) - step / 2, float(ts[-1]) + step / 2, n_classes - 0.5, -0.5),
    )
    labels = []
    for k, c in enumerate(result.classes):
        same, total = int(result.class_same[k]), int(result.class_totals[k])
        truth = "same" if same == total else "different" if same == 0 else f"{same}/{total} same"
        labels.append(f"{c} ({truth})")
    right.set_yticks(range(n_classes))
    right.set_yticklabels(labels, fontsize=8)
    right.set_xlabel("ratio threshold")
    right.set_title("share of each class that collapses")
    if threshold is not None:
        right.axvline(threshold, color="white", linewidth=0.8, linestyle=":")
    fig.colorbar(image, ax=right, fraction=0.04, pad=0.02)
    subtitle = f"prefix {result.prefix}, min-chars {result.min_chars}, guards {result.guards}"
    fig.suptitle(f"{title} ({subtitle})" if title else subtitle)
    fig.tight_layout()
    try:
        fig.savefig(os.fspath(path), dpi=110)
    except OSError as exc:
        raise InvalidInputError(f"cannot write {os.fspath(path)}: {exc.strerror or exc}") from exc
    finally:
        plt.close(fig)


def _plot_gates(scores: Any, counts: Any, gates: dict[str, GateCost], best: dict[str, GateCost]) -> None:
    """The gate row of :func:`plot_sweep`: grouped bars per gate, each bar labelled with its value."""
    names = list(gates)
    x = np.arange(len(names))
    ticks = []
    for g in names:
        b = best.get(g)
        ticks.append(g if b is None else f"{g}\nbest F1 {_fmt_p(b.f1)} at {_fmt_t(b.threshold)}")
    first = gates[names[0]]
    setting = f"threshold {_fmt_t(first.threshold)}, min-chars {first.min_chars}, guards {first.guards}"
    series = [
        ("precision", [gates[g].precision for g in names], "tab:blue"),
        ("recall", [gates[g].recall for g in names], "tab:orange"),
        ("F1", [gates[g].f1 for g in names], "tab:green"),
    ]
    width = 0.8 / len(series)
    for k, (label, values, color) in enumerate(series):
        bars = scores.bar(
            x + (k - 1) * width, np.nan_to_num(values, nan=0.0), width, label=label, color=color
        )
        scores.bar_label(bars, labels=[_fmt_p(v) for v in values], fontsize=7, padding=1)
    scores.set_xticks(x, ticks, fontsize=8)
    scores.set_ylim(0.0, 1.2)
    scores.set_title(f"each gate at {setting}", fontsize=10)
    scores.legend(loc="upper center", ncol=3, fontsize=8)
    scores.grid(alpha=0.3, axis="y")

    tallies = [
        ("false merges", [gates[g].false_merges for g in names], "tab:red"),
        ("misses", [gates[g].misses for g in names], "tab:gray"),
        ("lost to the gate", [gates[g].lost for g in names], "tab:purple"),
        ("false merges the gate stopped", [gates[g].stopped for g in names], "tab:cyan"),
    ]
    width = 0.8 / len(tallies)
    for k, (label, tally, color) in enumerate(tallies):
        bars = counts.bar(x + (k - 1.5) * width, tally, width, label=label, color=color)
        counts.bar_label(bars, fontsize=7, padding=1)
    lost = [
        f"{t}\nrecall lost to the gate {_fmt_p(gates[g].recall_lost)}"
        for g, t in zip(names, ticks, strict=True)
    ]
    counts.set_xticks(x, lost, fontsize=8)
    counts.set_ylabel("pairs")
    counts.margins(y=0.12)
    counts.set_title(
        "what each gate costs (lost: restatements the contract accepts but the gate never fetches)",
        fontsize=10,
    )
    counts.legend(loc="upper right", fontsize=8)
    counts.grid(alpha=0.3, axis="y")
