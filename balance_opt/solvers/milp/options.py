"""The MILP solvers' option domains, and the sweep's options typed (declared and checked by each solver)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal, get_args

# When to add each mode's optimum alone (a rank, see .bounds) as a row capping that
# mode's count: in every solve, only after the first sweep, or never. The caps bound
# every z either way.
ModeBounds = Literal["always", "retry", "never"]
# Sweeps under a time limit: "gap-first" (quick, then incumbent + 2, then incumbent + 1)
# or "plain" (an even split, then the leftover); see z_sweep.search().
Plan = Literal["gap-first", "plain"]
# Which z models enforce their padding rows by binary levels of the padded lengths
# (formulation.build(selectors=True)): those where the memory both modes share binds
# ("auto": a memory bound is below the deadline-pair bound), all, or none.
Selectors = Literal["auto", "always", "never"]
# How CP-SAT enforces an indicator row: natively, or by a data-derived big-M row.
Indicators = Literal["enforce", "bigm"]

# How a refutation splits a z left open (split.py): by the number of AD users, by the
# tightest latency limit of AD or of SD, or by both tightest limits.
SplitBy = Literal["ad-count", "ad-limit", "sd-limit", "limits"]

# The value ``library refs`` replaces by each instance's best known count (option ``cutoff``).
BEST_KNOWN = "best-known"

MODE_BOUNDS: tuple[ModeBounds, ...] = get_args(ModeBounds)
PLANS: tuple[Plan, ...] = get_args(Plan)
SELECTORS: tuple[Selectors, ...] = get_args(Selectors)
INDICATORS: tuple[Indicators, ...] = get_args(Indicators)
SPLITS_BY: tuple[SplitBy, ...] = get_args(SplitBy)


@dataclass(frozen=True)
class SweepOptions:
    """How the z sweep runs (:func:`balance_opt.solvers.milp.z_sweep.search`).

    No defaults for the first four: each solver declares its own (its ``Params``, in
    :mod:`.params`, whose options check the values' types and domains), and every solver
    passes all four. The refutation options (docs/milp.md, "Refutation") are off by default.
    """

    warm_start: bool  # start from the heuristic's schedule when there is no hint
    mode_bounds: ModeBounds
    plan: Plan
    selectors: Selectors
    cutoff: int | None = None  # refute "more than cutoff served" instead of optimising
    z_time_limit: float | None = None  # seconds per z model solve (None: the sweep's share)
    split: int = 0  # refutation: parts per z after a whole-z timeout
    split_by: SplitBy = "ad-count"  # what the parts split
    split_depth: int = 0  # refutation: times a part left open is bisected again
    whole_time_limit: float | None = None  # with split: seconds per whole-z solve (None: z_time_limit)

    def __post_init__(self) -> None:
        """The rules between values; each value's own domain is its option's (the solvers'
        ``Params``, checked before this record is made)."""
        if self.cutoff == BEST_KNOWN:
            raise ValueError(
                f"cutoff {BEST_KNOWN!r} is resolved per instance by `balance-opt library refs`; "
                "give an integer elsewhere"
            )
        if self.split == 1:
            raise ValueError(f"split must be 0 (off) or an integer >= 2, got {self.split!r}")
        if self.split_depth and not self.split:
            raise ValueError(f"split_depth {self.split_depth} bisects the parts of a split: set split >= 2")
        if self.whole_time_limit is not None and not self.split:
            raise ValueError(
                f"whole_time_limit {self.whole_time_limit} limits the solves before a split: set split >= 2"
            )

    @property
    def whole_limit(self) -> float | None:
        """Seconds for each whole-z solve: ``whole_time_limit`` where a split follows it
        (a refutation, ``cutoff`` set), else ``z_time_limit``."""
        if self.cutoff is None or not self.split or self.whole_time_limit is None:
            return self.z_time_limit
        return self.whole_time_limit

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> SweepOptions:
        """The sweep's fields picked from a solver's options (the others are the backend's)."""
        picked = {f.name: options[f.name] for f in fields(cls) if f.name in options}
        picked["warm_start"] = bool(picked["warm_start"])
        return cls(**picked)
