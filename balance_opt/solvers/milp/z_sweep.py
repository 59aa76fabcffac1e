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
"""

from __future__ import annotations

import math
import time
import warnings
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from balance_opt.evaluate import Schedule, evaluate
from balance_opt.instance import Instance
from balance_opt.model import latency_limits
from balance_opt.result import SolverOutput
from balance_opt.solvers.common.bounds import (
    AD_MODE,
    Ranks,
    deadline_pair_bound,
    memory_split_bound,
    shared_memory_bound,
)
from balance_opt.solvers.milp.formulation import BackendResult, build
from balance_opt.solvers.milp.linear import COUNT, Formulation
from balance_opt.solvers.milp.options import SweepOptions
from balance_opt.solvers.milp.split import Spec, bisect, label_of, part_of, split_specs
from balance_opt.solvers.milp.warm_start import solution_values
from balance_opt.status import Termination

# backend(f, time_limit, start, strict) -> BackendResult; ``strict`` after a rejection
Backend = Callable[[Formulation, float | None, NDArray[np.float64] | None, bool], BackendResult]

BOUND_EPS = 1e-6  # integer bound = floor(bound + eps): the objective is a count
MAX_REPAIRS = 5  # re-solves of one z after evaluator rejections
TIME_RESERVE = 0.05  # share of the limit kept for model building and evaluation
PAIR_BOUND_SHARE = 0.15  # at most this share of the limit goes to the combinatorial bounds
QUICK_SHARE = 0.1  # first sweep: this share of an even split of the time per z ...
QUICK_FLOOR = 5.0  # ... but at least this many seconds (or the even split, if smaller)
# Translating a K = 70 model for the backend takes about half a second outside the
# backend's own limit: a z model's share leaves this much room for it, and none is started
# with less than twice this left.
TRANSLATE_S = 0.5


@dataclass
class _Incumbent:
    schedule: Schedule
    served: int
    objective: int  # the served count the producing solver claims
    source: str


@dataclass
class _ZState:
    form: Formulation
    bound: int  # proved upper bound on this z's optimum
    done: bool = False  # bound proved final (solved, infeasible or skipped)
    caps: dict[str, int] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)


# heuristic(instance) -> a schedule to start from, or None
Heuristic = Callable[[Instance], Schedule | None]


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
    start = time.perf_counter()
    deadline = None if time_limit is None else start + time_limit * (1.0 - TIME_RESERVE)
    inc = _first_incumbent(inst, hint, heuristic if options.warm_start else None)
    floor = options.cutoff or 0  # refutation: every z must beat this as well as the incumbent
    always = options.selectors == "always"
    states = {z: _ZState(build(inst, z, selectors=always), 0) for z in inst.server.z_grid}
    budget_end = None
    if time_limit is not None and deadline is not None:  # within the limit even after a long setup
        budget_end = min(time.perf_counter() + time_limit * PAIR_BOUND_SHARE, deadline)
    _bound_every_z(inst, states, max(inc.served, floor), budget_end, options.selectors)
    order = sorted(states, key=lambda z: (z != inc.schedule.z, -states[z].bound, abs(z - inc.schedule.z), z))
    inc = _sweep(inst, backend, states, order, inc, deadline, options)
    if options.cutoff is not None and options.split:
        for z in order:
            if not states[z].done:
                inc = _refute_by_parts(inst, backend, states[z], inc, floor, deadline, options)
    bound = max([inc.served, *(st.bound for st in states.values())])
    all_done = all(st.done for st in states.values())
    ended = Termination.COMPLETED if all_done else Termination.TIME_LIMIT
    stop = Termination.OPTIMAL if bound == inc.served else ended
    stats = {
        "incumbent_source": inc.source,
        **({} if options.cutoff is None else {"cutoff": options.cutoff, "refuted": bound <= options.cutoff}),
        "z_models": {f"{z:g}": {"bound": st.bound, "done": st.done, **st.stats} for z, st in states.items()},
    }
    return SolverOutput(inc.schedule, stop, None, bound, inc.objective, stats)


def _bound_every_z(
    inst: Instance, states: dict[float, _ZState], floor: int, budget_end: float | None, selectors: str
) -> None:
    """Each z's combinatorial bound within ``budget_end``; selectors where memory binds (``auto``)."""
    last = 0.0  # seconds the previous z's bounds took: the next one would take about as long
    for n, st in enumerate(states.values()):  # time a z leaves over flows to the next
        share = None if budget_end is None else max(0.0, budget_end - time.perf_counter()) / (len(states) - n)
        if budget_end is not None and time.perf_counter() + last >= budget_end:
            # the bounds' share of the limit is (about to be) spent: the count bound holds
            st.bound = st.form.count_bound
            st.stats["selectors"] = st.form.use_selectors
            continue
        t0 = time.perf_counter()
        _combinatorial_bound(inst, st, floor, share)
        last = time.perf_counter() - t0
        if selectors == "auto" and _memory_binds(st):
            st.form = build(inst, st.form.z, selectors=True)
        st.stats["selectors"] = st.form.use_selectors


def _sweep(
    inst: Instance,
    backend: Backend,
    states: dict[float, _ZState],
    order: list[float],
    inc: _Incumbent,
    deadline: float | None,
    options: SweepOptions,
) -> _Incumbent:
    """Solve the z models in sweeps; returns the final incumbent (``states`` record the bounds).

    A sweep is (cutoff above the incumbent, share of the time): without a limit, one sweep
    solves every z. With one, a quick sweep closes the easy z models; then every z is
    asked only for incumbent + 2 (proving a gap of at most 1 is far quicker than
    closing it), and the last sweep closes what is left with all the time remaining.
    """
    floor = options.cutoff or 0
    if deadline is None or options.cutoff is not None:  # a refutation asks each z once
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
            if deadline is not None:
                left = deadline - time.perf_counter()
                if left <= 2.0 * TRANSLATE_S:
                    break
                rest = sum(1 for w in pending[n:] if states[w].bound >= target + extra)
                even = left / rest
                even = even if fraction >= 1.0 else max(fraction * even, min(even, QUICK_FLOOR))
                share = min(even, left - TRANSLATE_S, share or math.inf)
            inc = _solve_z(inst, backend, st, inc, share, caps_now, extra, floor)
        if deadline is None or all(st.done for st in states.values()):
            break
    return inc


def _combinatorial_bound(inst: Instance, st: _ZState, inc: int, time_limit: float | None) -> None:
    """Lower ``st.bound`` by the deadline-pair, shared-memory and memory-split bounds; record the caps."""
    f = st.form
    st.bound = f.count_bound
    if not f.objective:
        return
    t0 = time.perf_counter()
    ranks = Ranks(inst, f.z)
    pb = deadline_pair_bound(inst, f.z, f.ad_users, f.sd_users, time_limit, ranks)
    st.caps = {mode: cap for mode, cap in pb.caps.items() if (f.x if mode == AD_MODE else f.y)}
    st.bound = min(st.bound, pb.bound)
    info: dict[str, Any] = {"pair_bound": pb.bound, "pairs": pb.pairs, "complete": pb.complete}
    until = None if time_limit is None else t0 + time_limit
    if f.x and f.y and st.bound > inc:  # about a second at K = 70
        shared = shared_memory_bound(inst, f.z, ranks, f.ad_users, f.sd_users, st.bound, until)
        info["shared_memory_bound"] = shared
        if shared is not None:
            st.bound = min(st.bound, shared)
    if f.x and f.y and st.bound > inc:  # several seconds at K = 70 when memory binds
        split = memory_split_bound(inst, f.z, ranks, pb.caps, f.ad_users, f.sd_users, st.bound, until)
        info["memory_split_bound"] = split
        if split is not None:
            st.bound = min(st.bound, split)
    info["seconds"] = round(time.perf_counter() - t0, 3)
    st.stats["combinatorial"] = info


def _memory_binds(st: _ZState) -> bool:
    """Whether a memory bound of this z cut the deadline-pair bound (both modes share F(z)).

    There the padding excess is what the LP relaxation loses: on fig5 K = 70 seed 3 at
    z = 0.5, HiGHS proved ``served >= 31`` infeasible in 26 s with selectors and had a
    bound of 35 after 90 s without; on fig4 (memory never binds) they slow it down.
    """
    info = st.stats.get("combinatorial", {})
    pair = info.get("pair_bound")
    memory = [info.get(k) for k in ("shared_memory_bound", "memory_split_bound")]
    return pair is not None and any(m is not None and m < pair for m in memory)


def _first_incumbent(inst: Instance, hint: Schedule | None, heuristic: Heuristic | None) -> _Incumbent:
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
                return _Incumbent(Schedule(z, sched.modes), ev.served, ev.served, source)
    return _Incumbent(Schedule.empty(inst.num_users, inst.server.z_grid[0]), 0, 0, "empty")


def _solve_z(
    inst: Instance,
    backend: Backend,
    st: _ZState,
    inc: _Incumbent,
    share: float | None,
    use_caps: bool,
    extra: int,
    floor: int = 0,
) -> _Incumbent:
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
    found, bounds, timed_out, stats = _solve_model(inst, backend, f, cutoff, start, share, caps)
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
    improved = found is not None and found.served > inc.served
    if improved:
        assert found is not None
        inc = found
    st.bound = min([st.bound, *bounds])
    # final when the model was solved through: its optimum (or "none >= cutoff") is known
    st.done = (
        not timed_out and bool(bounds) and (st.bound <= max(inc.served, floor) or improved or extra == 1)
    )
    st.stats["runtime_s"] = st.stats.get("runtime_s", 0.0) + time.perf_counter() - z_start
    st.stats.setdefault("cutoffs", []).append(cutoff)
    st.stats.update(stats)
    return inc


def _solve_model(
    inst: Instance,
    backend: Backend,
    f: Formulation,
    cutoff: int,
    start: NDArray[np.float64] | None,
    limit: float | None,
    caps: dict[str, int] | None = None,
) -> tuple[_Incumbent | None, list[int], bool, dict[str, Any]]:
    """Solve ``f`` with ``served >= cutoff``, re-solving after evaluator rejections.

    Returns the evaluator-approved schedule (if any), the proved bounds on ``f``'s
    optimum, whether the limit stopped the solve, and the backend's counters.
    """
    t0 = time.perf_counter()
    no_goods: list[Schedule] = []
    bounds: list[int] = []
    found: _Incumbent | None = None
    timed_out = False
    stats: dict[str, Any] = {}
    for attempt in range(MAX_REPAIRS + 1):
        left = None if limit is None else limit - (time.perf_counter() - t0)
        if left is not None and left <= 0.0:
            return found, bounds, True, stats
        res = backend(with_rows(f, cutoff, no_goods, caps), left, start, attempt > 0)
        stats.update(res.stats)
        if res.exact and res.bound is not None:
            # the model holds every P1 schedule at z with served >= cutoff
            proved = math.floor(res.bound + BOUND_EPS)
            # a stopped solve whose bound is below the cutoff has proved nothing: a real
            # proof of that ends as "infeasible" (CP-SAT stopped in presolve reports 0)
            if res.termination != Termination.TIME_LIMIT or proved >= cutoff:
                bounds.append(max(cutoff - 1, proved))
        if res.exact and res.termination == Termination.INFEASIBLE:
            bounds.append(cutoff - 1)
        timed_out = res.termination == Termination.TIME_LIMIT
        if res.values is None:
            break
        sched = f.schedule(res.values, inst.num_users)
        ev = evaluate(inst, sched)
        if ev.feasible:
            claimed = round(float(sum(res.values[i] for i in f.objective)))
            found = _Incumbent(sched, ev.served, claimed, "milp")
            break
        no_goods.append(sched)
        start = None
        stats["rejected"] = len(no_goods)
    return found, bounds, timed_out, stats


def _refute_by_parts(
    inst: Instance,
    backend: Backend,
    st: _ZState,
    inc: _Incumbent,
    floor: int,
    deadline: float | None,
    options: SweepOptions,
) -> _Incumbent:
    """Refute ``served > max(incumbent, floor)`` at ``st``'s z part by part, a part left
    open bisected again up to ``options.split_depth`` times; returns the incumbent."""
    target = max(inc.served, floor)
    limits = latency_limits(inst)
    specs = split_specs(st.form, limits, st.caps, target + 1, options.split, options.split_by)
    # (part, depth, its parent's bound): depth first, a part's halves come next
    queue: deque[tuple[Spec, int, int | None]] = deque((spec, 0, None) for spec in specs)
    leaf_bounds: list[int | None] = []  # the leaves partition the z (each bisection checked)
    record: list[dict[str, Any]] = []
    while queue:
        spec, depth, cap = queue.popleft()
        limit = options.z_time_limit
        if deadline is not None:
            left = deadline - time.perf_counter()
            if left <= 2.0 * TRANSLATE_S:
                leaf_bounds.append(None)
                continue
            limit = min(left - TRANSLATE_S, limit or math.inf)
        t0 = time.perf_counter()
        model = part_of(st.form, limits, spec)
        found, bounds, timed_out, _ = _solve_model(inst, backend, model, target + 1, None, limit, st.caps)
        if found is not None and found.served > inc.served:
            inc = found
        proved = min([*bounds, *([] if cap is None else [cap])], default=None)  # a half is in its parent
        open_part = timed_out and (proved is None or proved > target) and inc.served <= target
        halves = bisect(spec) if open_part and depth < options.split_depth else []
        seconds = round(time.perf_counter() - t0, 3)
        label = {**label_of(st.form, limits, spec), "depth": depth}
        record.append({**label, "bound": proved, "timed_out": timed_out, "runtime_s": seconds})
        if halves:  # this part's bound is replaced by its halves'
            record[-1]["bisected"] = True
            queue.extendleft((h, depth + 1, proved) for h in reversed(halves))
        else:
            leaf_bounds.append(proved)
    st.stats["split"] = record
    if all(b is not None for b in leaf_bounds):
        st.bound = min(st.bound, max(b for b in leaf_bounds if b is not None))
    st.done = st.bound <= max(inc.served, floor)
    return inc
