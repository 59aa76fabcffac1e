"""The search over the z grid shared by both backends: one exact model per z.

Per z, the model has constant ``1/z`` and ``1/(1-z)``, so it is a plain MILP. Before any
model is solved, each z gets a combinatorial bound (:mod:`.bounds`: deadline-pair and memory
bounds over exact single-mode optima), and a z whose bound does not beat the incumbent is
skipped; where a memory bound binds, the z model branches on the padded lengths
(``selectors``). The grid is visited incumbent's z first, then by decreasing bound; a model asks
for ``served >= incumbent + 1``, so a z that cannot beat the incumbent ends as an
infeasibility proof. Under a time limit the z models left open by a quick first sweep
are asked for ``incumbent + 2`` first (a gap of at most one user is proved far sooner
than none), then closed with the time that is left. The instance bound is the max over
z of the per-z bounds. Every schedule a backend returns is judged by the evaluator; a
rejected one (float tolerances, integer rounding) is cut off by a no-good row and the
model re-solved.

Here are the sweep and its time plan; one z model's state and solve are :mod:`.z_model`,
the bounds before any solve :mod:`.z_bounds`, the refutation by parts :mod:`.refute_parts`.
"""

from __future__ import annotations

import math
import time
import warnings

from balance_opt.clock import Deadline, TimeBudget
from balance_opt.evaluator import Schedule, evaluate, nobody_z
from balance_opt.instance import Instance
from balance_opt.result import SolverOutput
from balance_opt.solvers.incumbent import Incumbent
from balance_opt.solvers.milp.formulation import build
from balance_opt.solvers.milp.options import SweepOptions
from balance_opt.solvers.milp.refute_parts import refute_by_parts
from balance_opt.solvers.milp.warm_start import solution_values
from balance_opt.solvers.milp.z_bounds import bound_every_z, combinatorial_bound, memory_binds
from balance_opt.solvers.milp.z_model import (
    TRANSLATE_S,
    Backend,
    Heuristic,
    ZState,
    solve_model,
    with_rows,
)
from balance_opt.status import Termination

# The names the tests and benchmarks import from here, from before the split.
_Incumbent, _ZState, _refute_by_parts = Incumbent, ZState, refute_by_parts
_combinatorial_bound, _memory_binds = combinatorial_bound, memory_binds

__all__ = [
    "Backend",
    "Heuristic",
    "_Incumbent",
    "_ZState",
    "_combinatorial_bound",
    "_memory_binds",
    "_refute_by_parts",
    "search",
    "with_rows",
]

TIME_RESERVE = 0.05  # share of the limit kept for model building and evaluation
PAIR_BOUND_SHARE = 0.15  # at most this share of the limit goes to the combinatorial bounds
QUICK_SHARE = 0.1  # first sweep: this share of an even split of the time per z ...
QUICK_FLOOR = 5.0  # ... but at least this many seconds (or the even split, if smaller)


def search(
    inst: Instance,
    backend: Backend,
    *,
    time_limit: float | None,
    hint: Schedule | None,
    options: SweepOptions,
    heuristic: Heuristic | None = None,
) -> SolverOutput:
    """Solve P1 over every z of the grid with ``backend``; see the module docstring.

    ``heuristic`` gives the warm start (used when ``options.warm_start`` and no hint).
    """
    budget = TimeBudget(time_limit)
    deadline = budget.reserved(TIME_RESERVE)
    inc = _first_incumbent(inst, hint, heuristic if options.warm_start else None)
    floor = options.cutoff or 0  # refutation: every z must beat this as well as the incumbent
    always = options.selectors == "always"
    states = {z: ZState(build(inst, z, selectors=always), 0) for z in inst.server.z_grid}
    bounds_until = budget.from_now(PAIR_BOUND_SHARE).earlier(deadline)  # within the limit after any setup
    bound_every_z(inst, states, max(inc.served, floor), bounds_until, options.selectors)
    order = sorted(states, key=lambda z: (z != inc.schedule.z, -states[z].bound, abs(z - inc.schedule.z), z))
    inc = _sweep(inst, backend, states, order, inc, deadline, options)
    if options.cutoff is not None and options.split:
        for z in order:
            if not states[z].done:
                inc = refute_by_parts(inst, backend, states[z], inc, floor, deadline, options)
    bound = max([inc.served, *(st.bound for st in states.values())])
    stop = Termination.of_search(inc.served, bound, finished=all(st.done for st in states.values()))
    stats = {
        "incumbent_source": inc.source,
        **({} if options.cutoff is None else {"cutoff": options.cutoff, "refuted": bound <= options.cutoff}),
        "z_models": {f"{z:g}": {"bound": st.bound, "done": st.done, **st.stats} for z, st in states.items()},
    }
    return SolverOutput(inc.schedule, stop, None, bound, inc.claimed, stats)


def _sweep(
    inst: Instance,
    backend: Backend,
    states: dict[float, ZState],
    order: list[float],
    inc: Incumbent[Schedule],
    deadline: Deadline,
    options: SweepOptions,
) -> Incumbent[Schedule]:
    """Solve the z models in sweeps; returns the final incumbent (``states`` record the bounds).

    A sweep is (cutoff above the incumbent, share of the time): without a limit, one sweep
    solves every z. With one, a quick sweep closes the easy z models; then every z is
    asked only for incumbent + 2 (proving a gap of at most 1 is far quicker than
    closing it), and the last sweep closes what is left with all the time remaining.
    """
    floor = options.cutoff or 0
    if deadline.at is None or options.cutoff is not None:  # a refutation asks each z once
        sweeps = [(1, 1.0)]
    elif options.plan == "gap-first":
        sweeps = [(1, QUICK_SHARE), (2, 1.0), (1, 1.0)]
    else:  # "plain": an even split, then the z models stopped by it with what is left
        sweeps = [(1, 1.0), (1, 1.0)]
    for n_sweep, (extra, fraction) in enumerate(sweeps):
        caps_now = options.mode_bounds == "always" or (options.mode_bounds == "retry" and n_sweep > 0)
        pending = [z for z in order if not states[z].done]
        if n_sweep > 0 and options.plan == "gap-first":  # the hardest z last: it gets what is left
            pending.sort(key=lambda z: states[z].bound)
        for n, z in enumerate(pending):
            st = states[z]
            target = max(inc.served, floor)
            if st.bound <= target:
                st.done = True
                st.stats.setdefault("skipped", True)
                continue
            if st.bound < target + extra:
                continue  # already proved within this sweep's target
            share = options.whole_limit  # z_time_limit, or less where a split follows
            left = deadline.left()
            if left is not None:
                if left <= 2.0 * TRANSLATE_S:
                    break
                rest = sum(1 for w in pending[n:] if states[w].bound >= target + extra)
                even = left / rest
                even = even if fraction >= 1.0 else max(fraction * even, min(even, QUICK_FLOOR))
                share = min(even, left - TRANSLATE_S, share or math.inf)
            inc = _solve_z(inst, backend, st, inc, share, caps_now, extra, floor)
        if deadline.at is None or all(st.done for st in states.values()):
            break
    return inc


def _first_incumbent(
    inst: Instance, hint: Schedule | None, heuristic: Heuristic | None
) -> Incumbent[Schedule]:
    """The hint if feasible, else the heuristic's schedule (if one is given), else nobody."""
    candidates: list[tuple[str, Schedule | None]] = []
    if hint is not None:
        candidates = [("hint", hint)]
    elif heuristic is not None:
        candidates = [("heuristic", heuristic(inst))]
    for source, sched in candidates:
        if sched is not None and sched.modes.shape == (inst.num_users,):
            ev = evaluate(inst, sched)
            if ev.feasible:  # snap z to the grid value the models use
                z = min(inst.server.z_grid, key=lambda g: abs(g - sched.z))
                snapped = Schedule(z, sched.modes)
                return Incumbent(snapped, snapped, ev.served, source, claimed=ev.served)
    nobody = Schedule.empty(inst.num_users, nobody_z(inst, inst.server.z_grid))
    return Incumbent(nobody, nobody, 0, "empty", claimed=0)


def _solve_z(
    inst: Instance,
    backend: Backend,
    st: ZState,
    inc: Incumbent[Schedule],
    share: float | None,
    use_caps: bool,
    extra: int,
    floor: int = 0,
) -> Incumbent[Schedule]:
    """Solve one z model asking for ``max(incumbent, floor) + extra`` served; update bound and incumbent."""
    f = st.form
    z_start = time.perf_counter()
    target = max(inc.served, floor)
    same_z = inc.schedule.z == f.z and inc.served > 0 and extra == 1 and target == inc.served
    # at the incumbent's z, served >= incumbent with the incumbent as a start proves the
    # same as served >= incumbent + 1 and leaves the solver an incumbent to branch from
    cutoff = inc.served if same_z else target + extra
    start = solution_values(f, inc.schedule) if same_z else None
    caps = st.caps if use_caps else None
    found, bounds, timed_out, stats = solve_model(inst, backend, f, cutoff, start, share, caps)
    if same_z and bounds and min(bounds) < inc.served:
        # the incumbent is an evaluator-approved point of this very model: a proof below
        # it is wrong (CP-SAT with 8 workers once proved fig5 K = 70 seed 1, z = 0.2,
        # served >= 27 infeasible while the hinted 27-user schedule satisfied every row)
        warnings.warn(
            f"the backend proved z = {f.z:g} below the incumbent's {inc.served} served "
            "at that z; the proof is ignored",
            RuntimeWarning,
            stacklevel=2,
        )
        stats["wrong_proof"] = min(bounds)
        bounds = []
    improved = found is not None and inc.take(found)
    st.bound = min([st.bound, *bounds])
    # final when the model was solved through: its optimum (or "none >= cutoff") is known
    st.done = (
        not timed_out and bool(bounds) and (st.bound <= max(inc.served, floor) or improved or extra == 1)
    )
    st.stats["runtime_s"] = st.stats.get("runtime_s", 0.0) + time.perf_counter() - z_start
    st.stats.setdefault("cutoffs", []).append(cutoff)
    st.stats.update(stats)
    return inc
