"""What a single-linkage clustering (``clusters(..., mode="components")``, ``memdedup dedup --cluster
components``) says about each label, so that an output row can be read on its own.

Single linkage chains: A ~ B and B ~ C put A and C in one component even when A and C do not match at
all, so a row's ``canonical_label`` may have nothing in common with its ``label``, and the row's reason
and score are those of the pair that linked it (``via``), not of the canonical. For every row this
module gives:

* ``via``, ``via_label``: the label it matched, whose pair gives the row's ``reason`` and ``score``
  (None for a canonical);
* ``component_size``: how many labels its component holds;
* ``matches_canonical``: whether it matches its canonical label directly, under the same contract
  (None for a canonical);

and for the run, the components where fewer than half of the members (the canonical aside) match the
canonical label: chains, where the canonical label stands for little of what the component holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memdedup.batch._pairs import match_pairs

__all__ = ["COMPONENT_COLUMNS", "Components", "describe"]

#: The columns a components run adds to each output row.
COMPONENT_COLUMNS = ("via", "via_label", "component_size", "matches_canonical")


@dataclass(frozen=True)
class Components:
    """Per label: the label it matched (``via``), its component's size and whether it matches its
    canonical label; and the components where fewer than half of the members do (``loose``)."""

    via: list[int | None]
    size: np.ndarray
    matches: list[bool | None]
    loose: list[dict[str, Any]]

    def row(self, k: int, labels: Sequence[str]) -> dict[str, Any]:
        """Row ``k``'s :data:`COMPONENT_COLUMNS`."""
        v = self.via[k]
        return {
            "via": v,
            "via_label": None if v is None else labels[v],
            "component_size": int(self.size[k]),
            "matches_canonical": self.matches[k],
        }

    def summary(self) -> dict[str, Any]:
        """The counts for a run's summary: components, the largest, the collapsed labels that do not
        match their canonical label, and every loose component (largest first)."""
        canonicals = [k for k, m in enumerate(self.matches) if m is None]
        sizes = [int(self.size[k]) for k in canonicals]
        return {
            "components": len(canonicals),
            "largest": max(sizes, default=0),
            "not_matching_canonical": sum(1 for m in self.matches if m is False),
            "loose": self.loose,
        }


def describe(
    labels: Sequence[str],
    canonical: np.ndarray,
    via: Sequence[int | None],
    *,
    threshold: float,
    min_chars: int,
) -> Components:
    """The :class:`Components` of a components clustering of ``labels`` (``canonical``: each label's
    component's smallest index; ``via``: the label that linked it), each member decided against its
    canonical label with the run's ``threshold`` and ``min_chars``."""
    n = len(labels)
    canonical = np.asarray(canonical, dtype=np.int64)
    size = np.bincount(canonical, minlength=n)[canonical] if n else np.zeros(0, dtype=np.int64)
    members = np.flatnonzero(canonical != np.arange(n))
    matches: list[bool | None] = [None] * n
    if len(members):
        decided = match_pairs(
            [labels[c] for c in canonical[members].tolist()],
            [labels[k] for k in members.tolist()],
            threshold=threshold,
            min_chars=min_chars,
        )
        for k, m in zip(members.tolist(), decided.tolist(), strict=True):
            matches[k] = bool(m)
    agreeing = np.asarray([matches[k] for k in members.tolist()], dtype=float)
    matching = np.bincount(canonical[members], weights=agreeing, minlength=n)
    loose: list[dict[str, Any]] = []
    for c in np.flatnonzero((size > 1) & (canonical == np.arange(n))).tolist():
        others = int(size[c]) - 1
        agree = int(matching[c])
        if 2 * agree < others:
            loose.append(
                {
                    "canonical": c,
                    "canonical_label": labels[c],
                    "size": int(size[c]),
                    "matching": agree,
                    "share": agree / others,
                }
            )
    loose.sort(key=lambda item: (-item["size"], item["canonical"]))
    return Components([None if v is None else int(v) for v in via], size, matches, loose)
