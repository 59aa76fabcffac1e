"""``exact``: the suite's strongest exact method, a branch and bound over threshold boxes.

Per z, the schedules with both modes non-empty are split into boxes by their tightest
latency limits and padded lengths; each box is bounded by a small LP over the convex
hulls of its maxima and minima, and a box reduced to single thresholds is solved as a
small mixed-binary program. Single-mode schedules are bounded and solved exactly by
Algorithms 1 and 2 (Propositions 4 and 5). docs/exact.md gives the method and why it
is exact.
"""

from __future__ import annotations

import importlib.util
import time
from typing import TYPE_CHECKING, Any, ClassVar

from balance_opt.errors import SolverUnavailable
from balance_opt.evaluate import Schedule, evaluate
from balance_opt.instance import Instance
from balance_opt.result import SolverOutput
from balance_opt.solvers.base import Solver
from balance_opt.status import Termination

if TYPE_CHECKING:
    from balance_opt.solvers.exact.search import BoxSearch

TIME_RESERVE = 0.03  # share of the limit kept for the last evaluation and the result
HEURISTIC_SHARE = 0.3  # of a time limit, at most this goes to the warm-start heuristic


class ExactSolver(Solver):
    """Proved optima of P1, or under a time limit the best schedule with a proved bound."""

    name = "exact"
    # threads: 2 bounds the two halves of each split at once; the result is the same for any value
    option_defaults: ClassVar[dict[str, Any]] = {"warm_start": True, "threads": 2}

    @classmethod
    def is_available(cls) -> bool:
        return importlib.util.find_spec("highspy") is not None

    def _solve(
        self, instance: Instance, *, time_limit: float | None, seed: int, hint: Schedule | None
    ) -> SolverOutput:
        if not self.is_available():
            raise SolverUnavailable("solver 'exact' needs highspy: install it with `pip install highspy`")
        warm = bool(self.options["warm_start"])
        threads = int(self.options["threads"])
        if threads < 1:
            raise ValueError(f"solver 'exact': threads must be at least 1, got {threads}")
        return solve_exact(instance, time_limit=time_limit, hint=hint, warm_start=warm, threads=threads)


def solve_exact(
    inst: Instance,
    *,
    time_limit: float | None = None,
    hint: Schedule | None = None,
    warm_start: bool = True,
    threads: int = 1,
) -> SolverOutput:
    """Run the box search over the whole z grid; the bound holds whenever it stops."""
    from balance_opt.solvers.exact.search import BoxSearch, Incumbent

    start = time.perf_counter()
    deadline = None if time_limit is None else start + time_limit * (1.0 - TIME_RESERVE)
    grid = inst.server.z_grid
    incumbent = Incumbent(Schedule.empty(inst.num_users, grid[0]), 0)
    search = BoxSearch(inst, incumbent, deadline, threads)
    try:
        return _search(search, inst, start, time_limit, hint, warm_start)
    finally:
        search.close()


def _search(
    search: BoxSearch,
    inst: Instance,
    start: float,
    time_limit: float | None,
    hint: Schedule | None,
    warm: bool,
) -> SolverOutput:
    """The incumbent, the first pass over the z grid, then the box search."""
    from balance_opt.solvers.heuristic.fast import balance_fast

    grid = inst.server.z_grid
    if hint is not None:
        search.offer(hint)
    if warm:  # under a limit, leave most of it to the bounds and the search
        until = None if time_limit is None else start + HEURISTIC_SHARE * time_limit
        search.offer(balance_fast(inst, grid, inst.server.lambda_grid, until).schedule(inst))
    proved = True
    for z in grid:
        if search.out_of_time():
            search.outside.append(inst.num_users)  # z values never looked at: the trivial bound
            proved = False
            break
        search.add_z(z)
    setup = time.perf_counter() - start
    proved = search.run() and proved
    bound = search.bound()
    served = evaluate(inst, search.inc.schedule).served
    st = search.stats
    stats = {
        "boxes": st.boxes,
        "lps": st.lps,
        "narrowed": st.narrowed,
        "mips": st.mips,
        "leaves": st.leaves,
        "pruned": st.pruned,
        "rejected": st.rejected,
        "setup_s": round(setup, 4),
        "z_searched": [f"{z:g}" for z in search.zdata],
        "per_z": st.per_z,
        "trace": [list(t) for t in st.trace],  # (seconds, served, bound) whenever either changes
    }
    ended = Termination.COMPLETED if proved else Termination.TIME_LIMIT
    stop = Termination.OPTIMAL if bound == served else ended
    return SolverOutput(search.inc.schedule, stop, bound=bound, objective=served, stats=stats)


__all__ = ["ExactSolver", "solve_exact"]
