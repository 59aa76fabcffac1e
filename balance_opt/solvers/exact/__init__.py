"""``exact``: the suite's strongest exact method, a branch and bound over threshold boxes.

Per z, the schedules with both modes non-empty are split into boxes by their tightest
latency limits and padded lengths; each box is bounded by a small LP over the convex
hulls of its maxima and minima, and a box reduced to single thresholds is solved as a
small mixed-binary program. Single-mode schedules are bounded and solved exactly by
Algorithms 1 and 2 (Propositions 4 and 5). docs/exact.md gives the method and why it
is exact.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from balance_opt.clock import Deadline, TimeBudget
from balance_opt.errors import SolveRefused
from balance_opt.evaluator import Schedule, evaluate
from balance_opt.instance import Instance
from balance_opt.result import SolverOutput
from balance_opt.solvers.base import Option, Solver, param, threads_option
from balance_opt.status import Termination

if TYPE_CHECKING:
    from balance_opt.solvers.exact.search import BoxSearch

TIME_RESERVE = 0.03  # share of the limit kept for the last evaluation and the result
HEURISTIC_SHARE = 0.3  # of a time limit, at most this goes to the warm-start heuristic
# under a time limit, a search still open at IMPROVE_AT of it tries to beat the incumbent
# (:func:`_improve`), and no such search starts after IMPROVE_UNTIL of it
IMPROVE_AT, IMPROVE_UNTIL = 0.3, 0.7


@dataclass(frozen=True)
class ExactParams:
    """``exact``'s parameters (docs/exact.md)."""

    warm_start: bool = param(Option(True, description="start from balance's schedule (and the hint, if any)"))
    # the result is the same for any value; the search uses at most 2
    threads: int = param(threads_option(description="2 bounds the two halves of each split at once"))
    improve: int = param(
        Option(
            2,
            minimum=0,
            maximum=1000,
            description="z values of highest open bound balance-plus's search tries",
        )
    )
    work_limit: int | None = param(
        Option(
            None,
            kind=int,
            minimum=1,
            maximum=10**12,
            description="stop after this many boxes (deterministic work units, docs/exact.md)",
        )
    )


class ExactSolver(Solver):
    """Proved optima of P1, or under a time limit the best schedule with a proved bound."""

    name = "exact"
    Params = ExactParams
    params: ExactParams
    proves = "P1"
    requires = ("highspy",)
    install = "highspy"

    def _solve(
        self, instance: Instance, *, time_limit: float | None, seed: int, hint: Schedule | None
    ) -> SolverOutput:
        p = self.params
        return solve_exact(
            instance,
            time_limit=time_limit,
            hint=hint,
            warm_start=p.warm_start,
            threads=p.threads,
            improve=p.improve,
            work_limit=p.work_limit,
        )


def solve_exact(
    inst: Instance,
    *,
    time_limit: float | None = None,
    hint: Schedule | None = None,
    warm_start: bool = True,
    threads: int = 1,
    improve: int = 2,
    work_limit: int | None = None,
) -> SolverOutput:
    """Run the box search over the whole z grid; the bound holds whenever it stops.

    With ``warm_start``, ``balance``'s schedule starts the search; under a time limit, a
    search still open at ``IMPROVE_AT`` of it runs balance-plus's search at the
    ``improve`` z values of highest open bound (:func:`_improve`). A ``work_limit`` stops
    the search after that many boxes, and its ``IMPROVE_AT`` share starts the improvement
    instead of the clock: without a time limit, bound and schedule are the same on every
    machine."""
    from balance_opt.solvers.exact.search import BoxSearch
    from balance_opt.solvers.incumbent import Incumbent

    budget = TimeBudget(time_limit)
    grid = _servable(inst)
    nobody = Schedule.empty(inst.num_users, grid[0])
    incumbent = Incumbent(nobody, nobody, 0, "empty")  # feasible: the weights fit at grid[0]
    search = BoxSearch(inst, incumbent, budget.reserved(TIME_RESERVE), threads, work_limit)
    try:
        return _search(search, inst, grid, budget, hint, warm_start, improve)
    finally:
        search.close()


def _servable(inst: Instance) -> tuple[float, ...]:
    """The z values where the weights fit, so that serving nobody is feasible (the evaluator
    decides); SolveRefused when there is none: then no schedule at all is feasible."""
    grid = tuple(z for z in inst.server.z_grid if evaluate(inst, Schedule.empty(inst.num_users, z)).feasible)
    if not grid:
        need = min(inst.weights_at(z) for z in inst.server.z_grid)
        raise SolveRefused(
            f"no schedule is feasible: the weights need at least {need:.6g} B at every z of the grid, "
            f"the server holds {inst.server.memory_bytes:.6g} B"
        )
    return grid


def _search(
    search: BoxSearch,
    inst: Instance,
    grid: tuple[float, ...],
    budget: TimeBudget,
    hint: Schedule | None,
    warm: bool,
    improve: int,
) -> SolverOutput:
    """The incumbent, the first pass over the z grid, then the box search."""
    from balance_opt.solvers.common.warm_start import balance_fast

    if hint is not None:
        search.offer(hint, "hint")
    if warm:  # under a limit, leave most of it to the bounds and the search
        until = budget.share(HEURISTIC_SHARE)
        search.offer(balance_fast(inst, grid, inst.server.lambda_grid, until).schedule(inst), "heuristic")
    proved = True
    for z in grid:
        if search.out_of_time():
            search.outside.append(inst.num_users)  # z values never looked at: the trivial bound
            proved = False
            break
        search.add_z(z)
    work = search.work_limit
    improve_until = budget.share(IMPROVE_UNTIL)
    if warm and improve and work is not None:  # the work limit's share, not the clock's
        search.hook = (int(IMPROVE_AT * work), lambda: _improve(search, inst, improve_until, improve))
    elif warm and improve and budget.limit is not None:
        search.hook = (budget.share(IMPROVE_AT), lambda: _improve(search, inst, improve_until, improve))
    setup = budget.elapsed()
    proved = search.run() and proved
    bound = search.bound()
    served = evaluate(inst, search.inc.schedule).served
    search.stats.setup_s = round(setup, 4)
    counters = asdict(search.stats)
    per_z, trace = counters.pop("per_z"), counters.pop("trace")
    stats = {
        **counters,
        "work_units": search.stats.boxes,  # boxes taken from the heap (option work_limit)
        "incumbent_source": search.inc.source,  # what found the schedule returned
        "z_searched": [f"{z:g}" for z in search.zdata],
        "per_z": per_z,
        "trace": [list(t) for t in trace],  # (seconds, served, bound) whenever either changes
    }
    if not proved and search.work_limit is not None and search.stats.boxes >= search.work_limit:
        stats["stopped_by"] = "work_limit"  # a limit all the same: termination time_limit
    stop = Termination.of_search(served, bound, finished=proved)
    return SolverOutput(search.inc.schedule, stop, bound=bound, objective=served, stats=stats)


def _improve(search: BoxSearch, inst: Instance, until: Deadline, count: int) -> None:
    """balance-plus's search (:func:`.warm_start.improve_at_z`) at the ``count`` z values
    of the highest open bounds, each asked to beat the incumbent.

    Where memory binds, the box search's incumbent stays ``balance``'s schedule, one or
    two users short, long after the bounds near the optimum (fig5 K = 70: 27, 26, 28, 26,
    29 against optima 28, 27, 29, 27, 31), and the optima lie at the z of high bounds.
    Only a run that a time limit will stop needs it early; a proof gains less than it
    costs (docs/exact.md).
    """
    from balance_opt.solvers.common.warm_start import improve_at_z

    started = time.perf_counter()
    for z in search.open_z()[:count]:
        if until.passed():
            break
        better = improve_at_z(inst, z, search.inc.schedule, until)
        if better is not None:
            search.offer(better, "improve")
    search.stats.improve_s = round(time.perf_counter() - started, 4)


__all__ = ["ExactSolver", "solve_exact"]
