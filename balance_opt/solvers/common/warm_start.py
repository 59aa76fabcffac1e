"""The heuristic schedules the proving solvers start from, and the single-mode algorithms they bound with.

``balance_fast`` (Algorithms 1 and 2 over a grid) gives the box search its incumbents and
the ranks of :mod:`.bounds` (for one mode it is exact, Propositions 4 and 5);
:func:`balance_schedule` is the MILP sweep's warm start. The proving solvers reach the
heuristics through here only.
"""

from __future__ import annotations

import numpy as np

from balance_opt.clock import NEVER, Deadline
from balance_opt.evaluator import AD, SD, Schedule
from balance_opt.instance import Instance
from balance_opt.solvers.heuristic.blocks import Counters
from balance_opt.solvers.heuristic.fast import balance_fast
from balance_opt.solvers.heuristic.mode_search import (
    AdByShare,
    ModeSearches,
    PlusOutcome,
    SearchBudget,
    first_incumbent,
    improve_at,
    seed_shares,
)
from balance_opt.solvers.heuristic.plus import EFFORT
from balance_opt.solvers.heuristic.solvers import BalanceSolver

# balance-plus's memory shares i / 10; no deadline splits (they cost most of the search's
# time at fig5 K = 70 and none of its gains came from them, docs/exact.md)
SPLITS, CUTS = 10, 0


def balance_schedule(inst: Instance) -> Schedule | None:
    """The ``balance`` heuristic's schedule if the evaluator accepts it."""
    res = BalanceSolver().solve(inst)
    return res.schedule if res.feasible else None


def improve_at_z(inst: Instance, z: float, schedule: Schedule, until: Deadline = NEVER) -> Schedule | None:
    """balance-plus's search at one ``z`` in (0, 1) (SD first, AD first, alternation; no
    deadline splits), asked for schedules serving more than ``schedule``; the best found, or
    None. At most balance-plus's whole budget of single-mode searches (``EFFORT / K``)
    runs, and none starts after ``until``."""
    stats = Counters()
    ad = tuple(np.flatnonzero(schedule.modes == AD).tolist())
    sd = tuple(np.flatnonzero(schedule.modes == SD).tolist())
    inc = first_incumbent(inst, PlusOutcome(schedule.z, None, ad, sd))
    shares = seed_shares([*inst.server.lambda_grid, 1.0], SPLITS)
    ms = ModeSearches(inst, z, stats, SearchBudget(max(1, EFFORT // max(1, inst.num_users))), until)
    start = [(ad, sd)] if schedule.z == z else []
    improve_at(inc, ms, shares, AdByShare(inst, [z], shares, stats).at(z), start, CUTS)
    return inc.best.schedule(inst) if inc.served > len(ad) + len(sd) else None


__all__ = ["balance_fast", "balance_schedule", "improve_at_z"]
