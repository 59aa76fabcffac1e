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

import time
from collections.abc import Sequence

import numpy as np

from balance_opt.instance import Instance
from balance_opt.solvers.heuristic.alg1 import AdSearch, AdTuple
from balance_opt.solvers.heuristic.alg2 import SdContext, SdSearch
from balance_opt.solvers.heuristic.blocks import Counters
from balance_opt.solvers.heuristic.primitives import BalanceOutcome, check_grid, memory_split

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
                top = SdSearch(self.context(z), q2s, np.arange(K), Counters()).top(BOUND_RES)
                sd_top.update(zip(((z, lam) for lam in lams), top.tolist(), strict=True))
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
        if self.ad is None or z == 0.0 or lam == 0.0:
            return ()
        if z not in self.found:
            known = list({t for got in self.found.values() for t in got.values() if t is not None})
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
    inst: Instance, z_grid: Sequence[float], lam_grid: Sequence[float], until: float | None = None
) -> BalanceOutcome:
    """Algorithm 3 (z ascending outer, lambda ascending inner, strict improvement), fast.

    With ``until`` (a ``time.perf_counter()`` value) the work stops when it passes: the best
    schedule found by then (an exact solver's warm start), not necessarily the literal one.
    """
    check_grid("z_grid", z_grid)
    check_grid("lam_grid", lam_grid)
    stats = Counters()
    K = inst.num_users
    best = BalanceOutcome(float(z_grid[0]), float(lam_grid[0]), (), ())  # nobody served: first pair
    if K == 0 or (until is not None and time.perf_counter() > until):
        return BalanceOutcome(best.z, best.lam, (), (), {"implementation": "fast"})
    pairs = _Pairs(inst, z_grid, lam_grid, stats)
    bound = pairs.bounds()
    # the incumbent: the first pair known to reach `value`; a pair before it must reach it, after beat it
    value, at = 1, len(bound)
    for i in sorted(range(len(bound)), key=lambda i: (-bound[i], i)):
        if bound[i] < value or (until is not None and time.perf_counter() > until):
            break  # visited by bound: no pair left reaches any need
        need = value if i < at else value + 1
        z, lam = pairs.pairs[i]
        if bound[i] < need:
            continue
        taken = pairs.ad_users(z, lam)
        if len(taken) + min(pairs.sd_ub[i], K - len(taken)) < need:
            continue
        stats.add("pairs")
        users: tuple[int, ...] = ()
        if pairs.sd_active(z, lam):
            if pairs.dominated(i):
                stats.add("pairs_skipped")
                continue
            rest = np.setdiff1d(np.arange(K), np.asarray(taken, dtype=np.int64))
            hit = SdSearch(pairs.context(z), pairs.q2(z, lam), rest, stats).run(max(0, need - 1 - len(taken)))
            users = hit.users if hit else ()
        if len(taken) + len(users) >= need:
            value, at = len(taken) + len(users), i
            best = BalanceOutcome(z, lam, taken, users)
    return BalanceOutcome(best.z, best.lam, best.ad, best.sd, {"implementation": "fast", **stats.n})
