"""balance-plus: BALANCE's schedule, improved by a search over both modes at every z.

Algorithm 3 picks the AD users first, blind to what SD could serve, and splits the free
memory only on the grid ``Lambda``. balance-plus keeps Algorithm 3's schedule as its
incumbent and, at every ``z`` of the grid (nearest to Algorithm 3's first), searches for a
better pair of sets with the exact single-mode searches of the fast implementation
(Algorithm 1 over any set of users is exact for AD alone, Proposition 4; Algorithm 2 for
SD alone, Proposition 5), each given the memory the other mode's users actually leave
(21d) instead of a grid share: SD first, AD first, deadline splits (AD among the loosest
budgets), then alternation of the two modes from every schedule that beat the incumbent;
last, exchanges of one user at the best schedule (docs/algorithms.md, "balance-plus").

Each search is asked only for sets that can beat the incumbent (a floor), which prunes
most of the work, and a work limit (``effort``) caps the number of searches. Every
schedule is judged by the evaluator and replaces the incumbent only when it serves more,
so balance-plus never serves fewer users than ``balance``, and its answer depends only on
the instance and the options. The searches are :mod:`.mode_search`.
"""

from __future__ import annotations

from collections.abc import Sequence

from balance_opt.instance import Instance
from balance_opt.solvers.heuristic.blocks import Counters
from balance_opt.solvers.heuristic.fast import balance_fast
from balance_opt.solvers.heuristic.mode_search import (
    AdByShare,
    ModeSearches,
    PlusOutcome,
    SearchBudget,
    alternate,
    exchange,
    first_incumbent,
    improve_at,
    one_mode,
    seed_shares,
)
from balance_opt.solvers.heuristic.primitives import check_grid

# The searches stay importable from here, where balance-plus first defined them.
__all__ = [
    "EFFORT",
    "AdByShare",
    "ModeSearches",
    "PlusOutcome",
    "SearchBudget",
    "balance_plus",
    "improve_at",
    "seed_shares",
]

EFFORT = 50_000  # searches times users: about 1,600 searches at K = 30, 50 at K = 1000


def balance_plus(
    inst: Instance,
    z_grid: Sequence[float],
    lam_grid: Sequence[float],
    splits: int = 10,
    cuts: int = 64,
    effort: int = EFFORT,
) -> PlusOutcome:
    """Algorithm 3's schedule, then the search of :func:`improve_at` at every ``z``.

    The z values are taken nearest to Algorithm 3's first; then :func:`exchange` and
    :func:`alternate` improve the best schedule while they can. At most ``max(1, effort // K)``
    single-mode searches run before the exchanges and half as many in them: a work limit,
    not a time limit, so the answer does not depend on the machine.
    """
    check_grid("z_grid", z_grid)
    check_grid("lam_grid", lam_grid)
    if min(splits, cuts, effort) < 1:
        raise ValueError(f"splits, cuts and effort must be at least 1, got {splits}, {cuts}, {effort}")
    stats = Counters()
    base = balance_fast(inst, z_grid, lam_grid)
    inc = first_incumbent(inst, PlusOutcome(base.z, base.lam, base.ad, base.sd))
    shares = seed_shares([*lam_grid, 1.0], splits)
    K = inst.num_users
    budget = SearchBudget(max(1, effort // max(1, K)))
    order = sorted(
        (float(z) for z in z_grid if inst.free_memory(z) > 0.0), key=lambda z: (abs(z - base.z), z)
    )
    zs = [z for z in order if 0.0 < z < 1.0]
    ad_sets = AdByShare(inst, zs, shares, stats) if K else None
    for z in order:
        if K == 0 or budget.left <= 0:
            break
        ms = ModeSearches(inst, z, stats, budget)
        if z in zs and ad_sets is not None:
            start = [(base.ad, base.sd)] if z == base.z else []
            improve_at(inc, ms, shares, ad_sets.at(z), start, cuts)
        else:
            one_mode(inc, ms)
    # the exchanges have a budget of their own, half the search's
    budget = SearchBudget(max(1, effort // max(1, K) // 2))
    while K and 0.0 < inc.best.z < 1.0 and budget.left > 0:
        ms = ModeSearches(inst, inc.best.z, stats, budget)
        if not exchange(inc, ms):
            break
        alternate(inc, ms, inc.best.ad, inc.best.sd)
    best = inc.best
    stats.n["balance_served"] = base.served
    return PlusOutcome(best.z, best.lam, best.ad, best.sd, {**stats.n})
