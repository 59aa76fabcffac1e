"""The fast implementation of Algorithm 3: the literal answer, with most tuples never visited.

:func:`balance_fast` returns exactly what :func:`balance_opt.solvers.heuristic.literal.balance_literal`
returns (same ``z``, ``lam``, AD and SD users in the same order) on every instance; it
only skips work that cannot change that answer (docs/algorithms.md, "The fast
implementation", explains why):

* the literal answer of Algorithm 1 or 2 is the lexicographically first tuple reaching the
  best ``d*``, so a block whose upper bound does not exceed a floor below that best is
  skipped; blocks are bounded a range at a time, as a tree, with ``t`` cut into groups
  (:mod:`~balance_opt.solvers.heuristic.bounds`), and only the blocks left are searched
  exactly, in lexicographic order (:mod:`~balance_opt.solvers.heuristic.blocks`);
* Algorithm 1 (:mod:`~balance_opt.solvers.heuristic.alg1`) bounds all ``lambda`` of one
  ``z`` at once; its floors come from actual tuples: the answers at the previous ``z``,
  re-evaluated, and at the previous ``lambda``;
* Algorithm 2 (:mod:`~balance_opt.solvers.heuristic.alg2`) is asked only whether a pair
  can beat the incumbent total, and skipped when an earlier pair of the same ``z`` had the
  same AD set and at least as much SD memory.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from balance_opt.instance import Instance
from balance_opt.solvers.heuristic.alg1 import AdTuple, algorithm1_all
from balance_opt.solvers.heuristic.alg2 import SdSearch
from balance_opt.solvers.heuristic.blocks import Counters
from balance_opt.solvers.heuristic.primitives import BalanceOutcome, check_grid, memory_split


def balance_fast(
    inst: Instance, z_grid: Sequence[float], lam_grid: Sequence[float], until: float | None = None
) -> BalanceOutcome:
    """Algorithm 3 (z ascending outer, lambda ascending inner, strict improvement), fast.

    With ``until`` (a ``time.perf_counter()`` value) the z values left when it passes are
    skipped: the best schedule of the z values done (an exact solver's warm start).
    """
    check_grid("z_grid", z_grid)
    check_grid("lam_grid", lam_grid)
    stats = Counters()
    K = inst.num_users
    best = BalanceOutcome(float(z_grid[0]), float(lam_grid[0]), (), ())
    everyone = np.arange(K)
    known: list[AdTuple] = []  # Algorithm 1's answers at the previous z
    for z in z_grid if K else ():
        if until is not None and time.perf_counter() > until:
            break
        # same z and same AD set with no more SD memory: D2 cannot grow, the total cannot win
        seen: dict[tuple[int, ...], float] = {}
        active = [lam for lam in lam_grid if z != 0.0 and lam != 0.0]
        ad_sets: dict[float, tuple[int, ...]] = {}
        if active:
            found = algorithm1_all(inst, z, active, stats, known)
            ad_sets = {lam: tup.users for lam, tup in zip(active, found, strict=True) if tup is not None}
            known = list({tup for tup in found if tup is not None})
        for lam in lam_grid:
            stats.add("pairs")
            ad = ad_sets.get(lam, ())
            sd: tuple[int, ...] = ()
            if z != 1.0 and lam != 1.0:
                floor = max(0, best.served - len(ad))
                _, q2 = memory_split(inst, z, lam)
                if K - len(ad) > floor and seen.get(ad, -np.inf) < q2:
                    seen[ad] = q2
                    rest = np.setdiff1d(everyone, np.asarray(ad, dtype=np.int64))
                    hit = SdSearch(inst, z, q2, rest, stats).run(floor)
                    sd = hit.users if hit else ()
                else:
                    stats.add("pairs_skipped")
            if len(ad) + len(sd) > best.served:
                best = BalanceOutcome(float(z), float(lam), tuple(ad), sd)
    return BalanceOutcome(best.z, best.lam, best.ad, best.sd, {"implementation": "fast", **stats.n})
