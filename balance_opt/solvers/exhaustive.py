"""Exact search over every z and every one of the 3^K assignments, with exact pruning.

``exhaustive`` solves P1, ``exhaustive-p2`` solves P2 (docs/model.md section 6). Both judge
a schedule with the evaluator's own pieces: :func:`balance_opt.model.ad_mode` and
:func:`~balance_opt.model.sd_mode` for latency and KV bytes, and the evaluator's
comparisons ``completion > T (1 + REL_TOL)`` and ``memory > Q (1 + REL_TOL)``.

Pruning keeps the search exact because P1's feasibility is downward closed for a fixed
z: taking a user out of AD or SD never raises a maximum (L1, L2, L3, L4, Nmax, upload),
a workload sum, a latency or a KV total, and drops one deadline. So

* an infeasible partial assignment has no feasible extension (its subtree is skipped),
  and a user that cannot be served alone in a mode at this z is never tried in it;
* a mode's latency never drops when users join it, so a user whose deadline a mode's
  current latency already misses can never join that mode; every user that joins adds
  at least the KV bytes it needs when served alone. Together they bound how many of the
  remaining users can still be served;
* a subtree whose served count plus that bound cannot beat the incumbent is skipped
  (only strict improvements are kept), and the search stops once all K users are served.

Tie-break among optimal schedules: the first z (then lambda, for P2) in ascending order,
then the first assignment in lexicographic order of the users' modes in instance order,
with AD before SD before none (the depth-first order that tries AD, then SD, then none).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from balance_opt.clock import NEVER, Deadline
from balance_opt.errors import SolveRefused
from balance_opt.evaluator import Schedule, nobody_z
from balance_opt.instance import Instance
from balance_opt.model import (
    AD,
    EMPTY_MODE,
    NONE,
    REL_TOL,
    SD,
    ModeCost,
    ad_mode,
    has_compute,
    memory_split,
    sd_mode,
    tolerated,
)
from balance_opt.result import SolverOutput
from balance_opt.solvers.base import Option, Solver, param
from balance_opt.status import Termination

# Above this many users the search is refused unless ``force=True``: 3^K grows past
# 10^8 beyond K = 16, the largest K of the paper's Fig. 6.
MAX_USERS = 16
# How often (in nodes) the clock is read for the time limit.
_CLOCK_EVERY = 512
# Relative widening of the memory room in the pruning bound (safety against rounding).
_BOUND_MARGIN = 1e-6


class _TimeUp(Exception):
    """The time limit was reached inside the search."""


def _on_time(inst: Instance, cost: ModeCost, members: NDArray[np.bool_]) -> bool:
    """Every member completes by its deadline: the evaluator's test of (20), (21c)."""
    if cost.latency_s is None:
        return True
    completion = cost.latency_s + inst.download_s[members]
    return not bool((completion > tolerated(inst.deadline_s[members])).any())


@dataclass
class _Search:
    """Depth-first search over the users' modes at one z (and, for P2, one lambda)."""

    inst: Instance
    z: float
    ad_cap: float  # KV bytes allowed to AD (inf for P1)
    sd_cap: float  # KV bytes allowed to SD (inf for P1)
    best: int  # incumbent served count; only strictly larger counts are recorded
    deadline: Deadline  # when to stop
    nodes: int = 0
    found: NDArray[np.int8] | None = None
    modes: NDArray[np.int8] = field(init=False)
    slm_weights: float = field(init=False)
    limit: float = field(init=False)
    alone: NDArray[np.bool_] = field(init=False)  # per user: servable alone in (AD, SD)
    suffix: list[int] = field(init=False)  # suffix[i]: users i.. servable alone in some mode
    min_kv: list[float] = field(init=False)  # per user: least KV bytes it adds to any set
    by_kv: list[int] = field(init=False)  # servable users, min_kv ascending
    latest: list[float] = field(init=False)  # per user: largest mode latency it tolerates

    def __post_init__(self) -> None:
        inst = self.inst
        self.modes = np.zeros(inst.num_users, dtype=np.int8)
        self.slm_weights = inst.slm_weights_at(self.z)  # D7, (21d)
        self.limit = tolerated(inst.server.memory_bytes)
        late_after = tolerated(inst.deadline_s) * (1.0 + _BOUND_MARGIN) - inst.download_s
        self.latest = late_after.tolist()

    def fits(self, ad: ModeCost, sd: ModeCost) -> bool:
        """Memory (21d), summed in the evaluator's order, and the P2 caps (22c), (22d)."""
        if ad.kv_bytes > self.ad_cap or sd.kv_bytes > self.sd_cap:
            return False
        memory = self.inst.llm_weight_bytes + self.slm_weights + ad.kv_bytes + sd.kv_bytes
        return not memory > self.limit

    def try_mode(self, k: int, mode: int, ad: ModeCost, sd: ModeCost) -> tuple[ModeCost, ModeCost] | None:
        """Put user k in ``mode`` on top of the current sets; the new costs if feasible."""
        self.modes[k] = mode
        members = self.modes == mode
        if mode == AD:
            ad = ad_mode(self.inst, members, self.z)
            ok = _on_time(self.inst, ad, members)
        else:
            sd = sd_mode(self.inst, members, self.z)
            ok = _on_time(self.inst, sd, members)
        self.modes[k] = NONE
        return (ad, sd) if ok and self.fits(ad, sd) else None

    def servable(self) -> NDArray[np.bool_]:
        """Per user and mode: can it be served alone? (columns AD, SD).

        Also records in :attr:`min_kv` the smallest KV bytes of a user served alone: adding
        it to any set adds at least that much, since its own padded lengths can only grow
        and the other members' caches never shrink (15), (16).
        """
        k_all = self.inst.num_users
        alone = np.zeros((k_all, 2), dtype=bool)
        self.min_kv = [np.inf] * k_all
        for k in range(k_all):
            for column, mode in ((0, AD), (1, SD)):
                costs = self.try_mode(k, mode, EMPTY_MODE, EMPTY_MODE) if has_compute(mode, self.z) else None
                if costs is not None:
                    alone[k, column] = True
                    self.min_kv[k] = min(self.min_kv[k], costs[column].kv_bytes)
        return alone

    def run(self) -> None:
        """Search; ``found`` holds the first assignment better than the initial ``best``."""
        self.alone = self.servable()
        servable = (self.alone[:, 0] | self.alone[:, 1]).tolist()
        self.suffix = [sum(servable[i:]) for i in range(len(servable) + 1)]
        self.by_kv = sorted(
            (k for k in range(len(servable)) if servable[k]), key=lambda k: (self.min_kv[k], k)
        )
        self._dfs(0, 0, EMPTY_MODE, EMPTY_MODE)

    def bound(self, i: int, ad: ModeCost, sd: ModeCost) -> int:
        """How many of users ``i..`` any extension of the current sets can still serve.

        Two relaxations, widened by ``_BOUND_MARGIN`` so that rounding cannot make them
        tighter than the evaluator: a mode's latency never drops when users join it, so a
        user whose deadline the current latency of a mode already misses cannot join that
        mode; and each joining user adds at least its ``min_kv`` bytes to memory (21d).
        """
        used = self.inst.llm_weight_bytes + self.slm_weights + ad.kv_bytes + sd.kv_bytes
        room = self.limit * (1.0 + _BOUND_MARGIN) - used
        t_ad = -np.inf if ad.latency_s is None else ad.latency_s
        t_sd = -np.inf if sd.latency_s is None else sd.latency_s
        fit = 0
        for k in self.by_kv:
            if k < i:
                continue
            latest = self.latest[k]
            if not ((self.alone[k, 0] and t_ad <= latest) or (self.alone[k, 1] and t_sd <= latest)):
                continue
            room -= self.min_kv[k]
            if room < 0.0:
                break
            fit += 1
        return fit

    def _dfs(self, i: int, served: int, ad: ModeCost, sd: ModeCost) -> bool:
        """Visit the node where users ``0..i-1`` are decided; True to stop the search."""
        self.nodes += 1
        if self.nodes % _CLOCK_EVERY == 0 and self.deadline.passed():
            raise _TimeUp
        if served > self.best:
            self.best = served
            self.found = self.modes.copy()
            if served == self.inst.num_users:
                return True
        if i == self.inst.num_users or served + self.suffix[i] <= self.best:
            return False
        if served + self.bound(i, ad, sd) <= self.best:
            return False
        for mode, column in ((AD, 0), (SD, 1)):
            if not self.alone[i, column]:
                continue
            costs = self.try_mode(i, mode, ad, sd)
            if costs is None:
                continue
            self.modes[i] = mode
            stop = self._dfs(i + 1, served + 1, *costs)
            self.modes[i] = NONE
            if stop:
                return True
        return self._dfs(i + 1, served, ad, sd)


@dataclass
class _Outcome:
    """The best schedule over all searched (z, lambda) pairs."""

    served: int
    z: float
    lam: float | None
    modes: NDArray[np.int8]
    nodes: int
    complete: bool  # False when the time limit stopped the search
    bound: int  # proved upper bound on the optimum of the searched problem


def _servable_count(inst: Instance, z: float) -> int:
    """Users that some mode can serve alone at z under P1: a bound on P1's optimum at z."""
    return int(_Search(inst, z, np.inf, np.inf, 0, NEVER).servable().any(axis=1).sum())


def _search_all(
    inst: Instance, pairs: list[tuple[float, float | None]], time_limit: float | None
) -> _Outcome:
    """Search every (z, lambda) pair in order; lambda None means P1 (no memory split)."""
    deadline = Deadline.after(time_limit)
    z0 = nobody_z(inst, [z for z, _ in pairs])  # nobody served: the first z whose weights fit
    lam0 = next(lam for z, lam in pairs if z == z0)
    out = _Outcome(0, z0, lam0, np.zeros(inst.num_users, dtype=np.int8), 0, True, 0)
    slack = REL_TOL * inst.server.memory_bytes  # the evaluator's tolerance, as bytes of Q
    for idx, (z, lam) in enumerate(pairs):
        if lam is None:
            caps = (np.inf, np.inf)
        else:
            q1, q2 = memory_split(inst, z, lam)
            caps = (q1 + slack, q2 + slack)
        search = _Search(inst, z, caps[0], caps[1], out.served, deadline)
        try:
            search.run()
        except _TimeUp:
            out.complete = False
            # a schedule at this or a later pair serves only users that P1 lets be served
            # alone there (downward closure; P2's caps only remove more)
            rest = [_servable_count(inst, zz) for zz, _ in pairs[idx:]]
            out.bound = max(out.served, search.best, *rest)
        out.nodes += search.nodes
        if search.found is not None:
            out.served, out.z, out.lam, out.modes = search.best, z, lam, search.found
        if not out.complete or out.served == inst.num_users:
            break
    if out.complete:
        out.bound = out.served
    return out


def _check_size(inst: Instance, force: bool) -> None:
    if inst.num_users > MAX_USERS and not force:
        raise SolveRefused(
            f"{inst.name}: users: {inst.num_users} users is above the exhaustive search limit of "
            f"{MAX_USERS} (3^K assignments); pass force=True to search anyway"
        )


@dataclass(frozen=True)
class ExhaustiveParams:
    """The parameters of both exhaustive searches."""

    force: bool = param(Option(False, description=f"search even above {MAX_USERS} users (3^K assignments)"))


class ExhaustiveSolver(Solver):
    """P1 exactly: every z in Z and every assignment, pruned without losing exactness."""

    name = "exhaustive"
    Params = ExhaustiveParams
    params: ExhaustiveParams
    proves = "P1"

    def _solve(
        self, instance: Instance, *, time_limit: float | None, seed: int, hint: Schedule | None
    ) -> SolverOutput:
        _check_size(instance, self.params.force)
        pairs: list[tuple[float, float | None]] = [(z, None) for z in instance.server.z_grid]
        out = _search_all(instance, pairs, time_limit)
        return SolverOutput(
            schedule=Schedule(out.z, out.modes),
            termination=Termination.of_search(out.served, out.bound, finished=out.complete),
            lam=None,
            bound=out.bound,
            objective=out.served,
            stats={"nodes": out.nodes},
        )


class ExhaustiveP2Solver(Solver):
    """P2 exactly on the instance's grids: P1 plus ``q_ad <= Q1`` and ``q_sd <= Q2`` (22).

    P2's optimum can be below P1's, so it is no bound on P1: the result is ``feasible``
    with no bound, and P2's optimum goes to ``stats["p2_optimum"]`` (None if the time
    limit stopped the search; then ``stats["p2_bound"]`` bounds it).
    """

    name = "exhaustive-p2"
    Params = ExhaustiveParams
    params: ExhaustiveParams
    proves = "P2"

    def _solve(
        self, instance: Instance, *, time_limit: float | None, seed: int, hint: Schedule | None
    ) -> SolverOutput:
        _check_size(instance, self.params.force)
        grid = instance.server
        pairs: list[tuple[float, float | None]] = [(z, lam) for z in grid.z_grid for lam in grid.lambda_grid]
        out = _search_all(instance, pairs, time_limit)
        stats: dict[str, Any] = {"nodes": out.nodes, "p2_optimum": out.served if out.complete else None}
        if not out.complete:
            stats["p2_bound"] = out.bound
        return SolverOutput(
            schedule=Schedule(out.z, out.modes),
            termination=Termination.of_search(out.served, None, finished=out.complete),  # no P1 bound
            lam=out.lam,
            bound=None,
            objective=out.served,
            stats=stats,
        )
