"""The fast implementation of Algorithm 3: the literal answer, with most tuples never visited.

:func:`balance_fast` returns exactly what :func:`balance_opt.solvers.heuristic.literal.balance_literal`
returns (same ``z``, ``lam``, AD and SD users in the same order) on every instance; it
only skips work that cannot change that answer (docs/algorithms.md, "The fast
implementation", explains why):

* the literal answer of Algorithm 1 or 2 is the lexicographically first tuple reaching the
  best ``d*``, so a block whose upper bound does not exceed a floor below that best is
  skipped; blocks are bounded a range at a time, as a tree, with ``t`` cut into groups
  (:mod:`~balance_opt.solvers.heuristic.bounds`), and only the blocks left are searched
  exactly (:mod:`~balance_opt.solvers.heuristic.blocks`);
* Algorithm 1 (:mod:`~balance_opt.solvers.heuristic.alg1`) runs first, at every pair, with
  one tree of bounds for all of them and floors from actual tuples;
* likewise Algorithm 3's answer is the first pair (z, then lambda) reaching the best total:
  pairs are visited in the order of an upper bound on their total (Algorithm 1's count plus
  a bound on Algorithm 2's over all users), and Algorithm 2
  (:mod:`~balance_opt.solvers.heuristic.alg2`) is asked only whether a pair reaches the
  best total found so far (beats it, for a pair after the incumbent's).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numpy as np

from balance_opt.clock import NEVER, Deadline
from balance_opt.evaluator import nobody_z
from balance_opt.instance import Instance
from balance_opt.model import AD, has_compute
from balance_opt.solvers.heuristic.alg1 import AdSearch, AdTuple
from balance_opt.solvers.heuristic.alg2 import SdContext, SdSearch
from balance_opt.solvers.heuristic.blocks import Counters, FloatArray, IntArray
from balance_opt.solvers.heuristic.primitives import BalanceOutcome, check_grid, memory_split
from balance_opt.solvers.heuristic.tree import Walk

BOUND_RES = 1  # resolution of the bounds that order the pairs (bounds.TreeSearch)


class _Pairs:
    """The pairs of Algorithm 3 with what is known of them: bounds first, answers when asked."""

    def __init__(self, inst: Instance, z_grid: Sequence[float], lam_grid: Sequence[float], stats: Counters):
        self.inst, self.stats = inst, stats
        self.pairs = [(float(z), float(lam)) for z in z_grid for lam in lam_grid]  # the literal order
        self.zs = [float(z) for z in z_grid if z != 0.0]
        self.lams = [float(lam) for lam in lam_grid if lam != 0.0]
        self.ad = AdSearch(inst, self.zs, self.lams, stats) if self.zs and self.lams else None
        self.found: dict[float, dict[float, AdTuple | None]] = {}  # Algorithm 1's answers, per z
        self.contexts: dict[float, SdContext] = {}
        self.ad_ub: list[int] = []  # per pair, by bounds()
        self.sd_ub: list[int] = []
        self.row_ub: dict[tuple[float, float], tuple[FloatArray, IntArray]] = {}  # per pair: L3s, bounds

    def sd_active(self, z: float, lam: float) -> bool:
        return z != 1.0 and lam != 1.0

    def q2(self, z: float, lam: float) -> float:
        return memory_split(self.inst, z, lam)[1]

    def context(self, z: float) -> SdContext:
        if z not in self.contexts:
            self.contexts[z] = SdContext(self.inst, z)
        return self.contexts[z]

    def bounds(self) -> list[int]:
        """Per pair: an upper bound on its total, Algorithm 1's bound plus Algorithm 2's over all users."""
        K, nl = self.inst.num_users, len(self.lams)
        ad_top = self.ad.tree.top(BOUND_RES) if self.ad else np.zeros(0, dtype=np.int64)
        sd_top: dict[tuple[float, float], int] = {}
        for z in dict.fromkeys(z for z, _ in self.pairs):
            lams = [lam for zz, lam in self.pairs if zz == z and self.sd_active(z, lam)]
            if lams:
                q2s = np.array([self.q2(z, lam) for lam in lams])
                everyone = SdSearch(self.context(z), q2s, np.arange(K), Counters())
                top = everyone.top(BOUND_RES)
                sd_top.update(zip(((z, lam) for lam in lams), top.tolist(), strict=True))
                # each L3 row's bound over all users bounds that row over any remaining users
                rows = everyone.row_bounds(BOUND_RES)
                self.row_ub.update({(z, lam): (everyone.fam.L3s, rows[:, j]) for j, lam in enumerate(lams)})
        self.ad_ub, self.sd_ub = [], []
        for z, lam in self.pairs:
            ad = 0
            if self.ad is not None and z != 0.0 and lam != 0.0:
                ad = int(ad_top[self.zs.index(z) * nl + self.lams.index(lam)])
            self.ad_ub.append(ad)
            self.sd_ub.append(sd_top.get((z, lam), 0))
        return [min(K, a + b) for a, b in zip(self.ad_ub, self.sd_ub, strict=True)]

    def ad_users(self, z: float, lam: float) -> tuple[int, ...]:
        """Algorithm 1's users at ``(z, lam)``: all lambda of ``z`` at once, from the answers known."""
        if self.ad is None or not has_compute(AD, z) or lam == 0.0:  # D7, or no memory
            return ()
        if z not in self.found:
            # the answers at the nearest z done on either side start the searches (d* is monotone in z)
            below = [x for x in self.found if x < z]
            above = [x for x in self.found if x > z]
            near = ([max(below)] if below else []) + ([min(above)] if above else [])
            known = list({t for x in near for t in self.found[x].values() if t is not None})
            got = self.ad.answers(self.zs.index(z), known)
            self.found[z] = dict(zip(self.lams, got, strict=True))
        tup = self.found[z][lam]
        return tup.users if tup else ()

    def dominated(self, i: int) -> bool:
        """An earlier pair with the same z and AD set and at least as much SD memory: no larger total."""
        z, lam = self.pairs[i]
        taken, q2 = self.ad_users(z, lam), self.q2(z, lam)
        return any(
            zz == z and self.ad_users(zz, ll) == taken and self.q2(zz, ll) >= q2 for zz, ll in self.pairs[:i]
        )


def balance_fast(
    inst: Instance, z_grid: Sequence[float], lam_grid: Sequence[float], until: Deadline = NEVER
) -> BalanceOutcome:
    """Algorithm 3 (z ascending outer, lambda ascending inner, strict improvement), fast.

    With ``until`` the work stops when it passes: the best schedule found by then (a
    proving solver's warm start), not necessarily the literal one.
    """
    check_grid("z_grid", z_grid)
    check_grid("lam_grid", lam_grid)
    stats = Counters()
    K = inst.num_users
    # nobody served: the first pair whose weights fit (the first pair, unless memory is that tight)
    best = BalanceOutcome(nobody_z(inst, z_grid), float(lam_grid[0]), (), ())
    if K == 0 or until.passed():
        return BalanceOutcome(best.z, best.lam, (), (), {"implementation": "fast"})
    pairs = _Pairs(inst, z_grid, lam_grid, stats)
    # best first over the pairs: (bound on the total, pair, stage); a pair's bound tightens as it
    # is taken again: Algorithm 1's exact count (stage 1), then Algorithm 2's search a batch at a time
    heap = [(-b, i, 0) for i, b in enumerate(pairs.bounds())]
    heapq.heapify(heap)
    searches: dict[int, tuple[SdSearch, Walk]] = {}
    # the incumbent: the first pair known to reach `value`; a pair before it must reach it, after beat it
    value, at = 1, len(heap)
    while heap and -heap[0][0] >= value and not until.passed():
        b, i, stage = heapq.heappop(heap)
        need = value if i < at else value + 1
        if -b < need:
            continue
        z, lam = pairs.pairs[i]
        taken = pairs.ad_users(z, lam)
        if stage == 0:
            sd = min(pairs.sd_ub[i], K - len(taken)) if pairs.sd_active(z, lam) else 0
            heapq.heappush(heap, (-(len(taken) + sd), i, 1 if sd else 3))
            continue
        floor = max(0, need - 1 - len(taken))  # Algorithm 2 must beat it for the total to reach need
        if stage == 1:
            if pairs.dominated(i):
                stats.add("pairs_skipped")
                continue
            stats.add("pairs")
            rest = np.setdiff1d(np.arange(K), np.asarray(taken, dtype=np.int64))
            search = SdSearch(pairs.context(z), pairs.q2(z, lam), rest, stats)
            searches[i] = (search, search.walk(floor, *pairs.row_ub[z, lam]))
        users: tuple[int, ...] = ()
        if stage in (1, 2):
            search, walk = searches[i]
            walk.raise_floor(floor)
            if not walk.done:
                if stage == 2:
                    walk.step()
                heapq.heappush(heap, (-(len(taken) + walk.bound), i, 2))
                continue
            stats.add("sd_nodes", search.tree.nodes)
            del searches[i]
            users = walk.best.users if walk.best else ()
        if len(taken) + len(users) >= need:
            value, at = len(taken) + len(users), i
            best = BalanceOutcome(z, lam, taken, users)
    return BalanceOutcome(best.z, best.lam, best.ad, best.sd, {"implementation": "fast", **stats.n})
