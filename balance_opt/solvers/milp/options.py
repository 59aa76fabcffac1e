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

MODE_BOUNDS: tuple[ModeBounds, ...] = get_args(ModeBounds)
PLANS: tuple[Plan, ...] = get_args(Plan)
SELECTORS: tuple[Selectors, ...] = get_args(Selectors)
INDICATORS: tuple[Indicators, ...] = get_args(Indicators)


@dataclass(frozen=True)
class SweepOptions:
    """How the z sweep runs (:func:`balance_opt.solvers.milp.z_sweep.search`).

    No defaults here: each solver declares its own (``option_specs``, where the values are
    checked), and every solver passes all four.
    """

    warm_start: bool  # start from the heuristic's schedule when there is no hint
    mode_bounds: ModeBounds
    plan: Plan
    selectors: Selectors

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> SweepOptions:
        """The sweep's fields picked from a solver's options (the others are the backend's)."""
        picked = {f.name: options[f.name] for f in fields(cls)}
        picked["warm_start"] = bool(picked["warm_start"])
        return cls(**picked)
