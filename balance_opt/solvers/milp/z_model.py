"""One z model of the sweep: its state, the rows added to it, and its solve with repairs.

A z model asks for ``served >= cutoff``; every schedule the backend returns is judged by
the evaluator, and a rejected one (float tolerances, integer rounding) is cut off by a
no-good row and the model re-solved.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from balance_opt.evaluator import Schedule, evaluate
from balance_opt.instance import Instance
from balance_opt.solvers.common.bounds import AD_MODE
from balance_opt.solvers.incumbent import Incumbent
from balance_opt.solvers.milp.formulation import BackendResult
from balance_opt.solvers.milp.linear import COUNT, Formulation
from balance_opt.solvers.milp.warm_start import solution_values
from balance_opt.status import Termination

# backend(f, time_limit, start, strict) -> BackendResult; ``strict`` after a rejection
Backend = Callable[[Formulation, float | None, NDArray[np.float64] | None, bool], BackendResult]

# heuristic(instance) -> a schedule to start from, or None
Heuristic = Callable[[Instance], Schedule | None]

BOUND_EPS = 1e-6  # integer bound = floor(bound + eps): the objective is a count
MAX_REPAIRS = 5  # re-solves of one z after evaluator rejections
# Translating a K = 70 model for the backend takes about half a second outside the
# backend's own limit: a z model's share leaves this much room for it, and none is started
# with less than twice this left.
TRANSLATE_S = 0.5


@dataclass
class ZState:
    """One z's model, its proved bound and what its solves recorded."""

    form: Formulation
    bound: int  # proved upper bound on this z's optimum
    done: bool = False  # bound proved final (solved, infeasible or skipped)
    caps: dict[str, int] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)


def with_rows(
    f: Formulation, cutoff: int, no_goods: list[Schedule], caps: dict[str, int] | None = None
) -> Formulation:
    """``f`` plus ``served >= cutoff``, per-mode caps and a no-good row per rejected schedule."""
    g = replace(f, rows=list(f.rows))
    for mode, cap in (caps or {}).items():
        members = f.x if mode == AD_MODE else f.y
        if members and cap < len(members):
            g.add_row(f"cap_{mode}", dict.fromkeys(members, 1.0), float(cap), COUNT)
    if cutoff > 0:
        g.add_row("cutoff", {i: -1.0 for i in f.objective}, -float(cutoff), COUNT)
    for n, bad in enumerate(no_goods):
        vals = solution_values(f, bad)
        if vals is None:
            continue
        ones = [i for i in f.objective if vals[i] > 0.5]
        terms = {i: (-1.0 if vals[i] > 0.5 else 1.0) for i in f.objective}
        g.add_row(f"no_good_{n}", terms, len(ones) - 1.0, COUNT)  # differ in >= 1 binary
    return g


def solve_model(
    inst: Instance,
    backend: Backend,
    f: Formulation,
    cutoff: int,
    start: NDArray[np.float64] | None,
    limit: float | None,
    caps: dict[str, int] | None = None,
) -> tuple[Incumbent[Schedule] | None, list[int], bool, dict[str, Any]]:
    """Solve ``f`` with ``served >= cutoff``, re-solving after evaluator rejections.

    Returns the evaluator-approved schedule (if any), the proved bounds on ``f``'s
    optimum, whether the limit stopped the solve, and the backend's counters.
    """
    t0 = time.perf_counter()
    no_goods: list[Schedule] = []
    bounds: list[int] = []
    found: Incumbent[Schedule] | None = None
    timed_out = False
    stats: dict[str, Any] = {}
    for attempt in range(MAX_REPAIRS + 1):
        left = None if limit is None else limit - (time.perf_counter() - t0)
        if left is not None and left <= 0.0:
            return found, bounds, True, stats
        res = backend(with_rows(f, cutoff, no_goods, caps), left, start, attempt > 0)
        stats.update(res.stats)
        bounds.extend(_proved(res, cutoff))
        timed_out = res.termination == Termination.TIME_LIMIT
        if res.values is None:
            break
        sched = f.schedule(res.values, inst.num_users)
        ev = evaluate(inst, sched)
        if ev.feasible:
            claimed = round(float(sum(res.values[i] for i in f.objective)))
            found = Incumbent(sched, sched, ev.served, "milp", claimed)
            break
        no_goods.append(sched)
        start = None
        stats["rejected"] = len(no_goods)
    return found, bounds, timed_out, stats


def _proved(res: BackendResult, cutoff: int) -> list[int]:
    """The bounds one backend answer proves on the optimum of a model with ``served >= cutoff``."""
    out = []
    if res.exact and res.bound is not None:
        # the model holds every P1 schedule at z with served >= cutoff
        proved = math.floor(res.bound + BOUND_EPS)
        # a stopped solve whose bound is below the cutoff has proved nothing: a real
        # proof of that ends as "infeasible" (CP-SAT stopped in presolve reports 0)
        if res.termination != Termination.TIME_LIMIT or proved >= cutoff:
            out.append(max(cutoff - 1, proved))
    if res.exact and res.termination == Termination.INFEASIBLE:
        out.append(cutoff - 1)
    return out
