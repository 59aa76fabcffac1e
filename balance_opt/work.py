"""A solve's work counters, typed: :class:`Work`, read once from the solver's ``stats``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Work counters a solver may report in its stats (docs/formats.md), each a column of the table.
WORK_COUNTERS = ("nodes", "lp_iterations", "deterministic_time")


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def work_counter(stats: Mapping[str, Any], key: str) -> float | None:
    """A work counter: top-level, or summed over per-part records (``{"z_models": {z: {...}}}``).

    Proving solvers that split P1 into one model per z report nodes per model; the row
    carries their total.
    """
    if _number(stats.get(key)):
        return float(stats[key])
    parts = [
        part[key]
        for group in stats.values()
        if isinstance(group, Mapping)
        for part in group.values()
        if isinstance(part, Mapping) and _number(part.get(key))
    ]
    return float(sum(parts)) if parts else None


@dataclass(frozen=True)
class Work:
    """A solve's work counters and P2 optimum, read once from its ``stats`` (None: not reported).

    The file keeps ``stats`` as the solver gave it; this is the typed view of the keys that
    have their own columns in the results table.
    """

    nodes: float | None = None
    lp_iterations: float | None = None
    deterministic_time: float | None = None
    p2_optimum: int | float | None = None

    @classmethod
    def of(cls, stats: Mapping[str, Any]) -> Work:
        p2 = stats.get("p2_optimum")
        counters = {key: work_counter(stats, key) for key in WORK_COUNTERS}
        return cls(**counters, p2_optimum=p2 if _number(p2) else None)
