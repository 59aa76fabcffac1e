"""The heuristic schedules the proving solvers start from, and the single-mode algorithms they bound with.

``balance_fast`` (Algorithms 1 and 2 over a grid) gives the box search its incumbents and
the ranks of :mod:`.bounds` (for one mode it is exact, Propositions 4 and 5);
:func:`balance_schedule` is the MILP sweep's warm start. The proving solvers reach the
heuristics through here only.
"""

from __future__ import annotations

from balance_opt.evaluate import Schedule
from balance_opt.instance import Instance
from balance_opt.solvers.heuristic.fast import balance_fast
from balance_opt.solvers.heuristic.solvers import BalanceSolver


def balance_schedule(inst: Instance) -> Schedule | None:
    """The ``balance`` heuristic's schedule if the evaluator accepts it."""
    res = BalanceSolver().solve(inst)
    return res.schedule if res.feasible else None


__all__ = ["balance_fast", "balance_schedule"]
