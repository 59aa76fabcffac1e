"""Algorithms 1-3 written out literally (docs/model.md section 7): the reference implementation.

Every max-length tuple is visited in lexicographic ascending order, the candidate set is
filtered with exactly the stated comparisons, sorted by ``(c_k, k)``, and ``d*`` is found
with sequential prefix sums. Plain Python loops on purpose: this module is the
definition that any faster implementation of Algorithm 3 must reproduce exactly.

Shared conventions (see :mod:`balance_opt.solvers.heuristic.primitives`): contributions come from
the elementwise functions of :mod:`balance_opt.model`, budgets from ``primitives.py``,
both ``d*`` comparisons are plain ``<=``, and when no pair serves anybody the outcome
is ``(Z[0], Lambda[0])`` with empty sets.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from balance_opt.evaluator import nobody_z
from balance_opt.instance import Instance
from balance_opt.model import ad_user_costs, ad_user_memory, sd_user_costs, sd_user_memory
from balance_opt.solvers.heuristic.primitives import (
    BalanceOutcome,
    ad_time_budget,
    check_grid,
    memory_split,
    sd_time_budget,
)


def tuple_values(values: Iterable[float]) -> list[float]:
    """One tuple component's range: ``sorted({0} ∪ values)``, as numbers (Tp_k may be < 0)."""
    return sorted({0, *values})


def leading_count(
    order: Sequence[int],
    costs: Sequence[float],
    mems: Sequence[float],
    time_budget: float,
    mem_budget: float,
) -> int:
    """``d*`` of (28) / (32): how many leading prefixes of ``order`` fit both budgets.

    Prefix sums are sequential from 0.0 (as ``numpy.cumsum``); contributions are
    non-negative, so the prefixes that fit are exactly those before the first that fails.
    """
    s = 0.0
    mem = 0.0
    d = 0
    for k in order:
        s = s + costs[k]
        mem = mem + mems[k]
        if not (s <= time_budget and mem <= mem_budget):
            break
        d += 1
    return d


def algorithm1(inst: Instance, z: float, lam: float) -> tuple[tuple[int, ...], int]:
    """Algorithm 1: the AD users for ``(z, lam)``, and the number of tuples examined.

    The candidate test ``LI_k <= L1, LO_k <= L2, t1 <= Tp_k, up_k <= tau1`` is applied one
    component per loop level, and users are put in ``(c_k, k)`` order once per L1 (the
    contributions depend on the tuple only through L1): filtering a sorted list keeps it
    sorted, so every tuple sees exactly its candidate set, sorted by ``(c_k, k)``.
    """
    if z == 0.0 or lam == 0.0:
        return (), 0
    q1, _ = memory_split(inst, z, lam)
    li = inst.input_tokens.tolist()
    lo = inst.output_tokens.tolist()
    tp = inst.budget_s.tolist()
    up = inst.upload_s.tolist()
    best: tuple[int, ...] = ()
    examined = 0
    for L1 in tuple_values(li):
        # (26) and D3, elementwise: computing them for every user at once gives each
        # candidate exactly its own value
        costs = ad_user_costs(inst, L1, inst.output_tokens, z).tolist()
        mems = ad_user_memory(inst, L1, inst.output_tokens).tolist()
        by_cost = sorted(range(inst.num_users), key=lambda k: (costs[k], k))
        c1 = [k for k in by_cost if li[k] <= L1]
        for L2 in tuple_values(lo):
            c2 = [k for k in c1 if lo[k] <= L2]
            for t1 in tuple_values(tp):
                c3 = [k for k in c2 if t1 <= tp[k]]
                for tau1 in tuple_values(up):
                    examined += 1
                    cand = [k for k in c3 if up[k] <= tau1]  # K1, in (c_k, k) order
                    d = leading_count(cand, costs, mems, ad_time_budget(inst, t1, tau1, L2), q1)  # (28)
                    if d > len(best):  # strict improvement
                        best = tuple(cand[:d])  # (29)
    return best, examined


def algorithm2(inst: Instance, z: float, lam: float, excluded: Iterable[int]) -> tuple[tuple[int, ...], int]:
    """Algorithm 2: SD users among those not ``excluded``, and the number of tuples examined.

    Tuple components range over the remaining users only. Filtering and sorting as in
    :func:`algorithm1`; the contributions depend on the tuple only through (L3, L4).
    """
    if z == 1.0 or lam == 1.0:
        return (), 0
    _, q2 = memory_split(inst, z, lam)
    taken = set(excluded)
    rest = [k for k in range(inst.num_users) if k not in taken]
    li = inst.input_tokens.tolist()
    la = inst.accepted_drafts.tolist()
    n = inst.sd_iterations.tolist()
    tp = inst.budget_s.tolist()
    up = inst.upload_s.tolist()
    best: tuple[int, ...] = ()
    examined = 0
    for L3 in tuple_values(li[k] for k in rest):
        c1 = [k for k in rest if li[k] <= L3]
        for L4 in tuple_values(la[k] for k in rest):
            # (30), (31), elementwise as above
            costs = sd_user_costs(inst, L3, L4, inst.sd_iterations, z).tolist()
            mems = sd_user_memory(inst, L3, L4, inst.sd_iterations).tolist()
            c2 = sorted((k for k in c1 if la[k] <= L4), key=lambda k: (costs[k], k))
            for N1 in tuple_values(n[k] for k in rest):
                c3 = [k for k in c2 if n[k] <= N1]
                for t2 in tuple_values(tp[k] for k in rest):
                    c4 = [k for k in c3 if t2 <= tp[k]]
                    for tau2 in tuple_values(up[k] for k in rest):
                        examined += 1
                        cand = [k for k in c4 if up[k] <= tau2]  # K2, in (c_k, k) order
                        d = leading_count(cand, costs, mems, sd_time_budget(inst, t2, tau2, N1), q2)  # (32)
                        if d > len(best):  # strict improvement
                            best = tuple(cand[:d])  # (33)
    return best, examined


def balance_literal(inst: Instance, z_grid: Sequence[float], lam_grid: Sequence[float]) -> BalanceOutcome:
    """Algorithm 3: z ascending (outer), lambda ascending (inner), strict improvement."""
    check_grid("z_grid", z_grid)
    check_grid("lam_grid", lam_grid)
    best = BalanceOutcome(nobody_z(inst, z_grid), float(lam_grid[0]), (), ())  # nobody: where weights fit
    ad_tuples = sd_tuples = 0
    for z in z_grid:
        for lam in lam_grid:
            ad, n1 = algorithm1(inst, z, lam)
            sd, n2 = algorithm2(inst, z, lam, ad)
            ad_tuples += n1
            sd_tuples += n2
            if len(ad) + len(sd) > best.served:
                best = BalanceOutcome(float(z), float(lam), ad, sd)
    stats = {
        "implementation": "literal",
        "pairs": len(z_grid) * len(lam_grid),
        "tuples": ad_tuples + sd_tuples,
        "ad_tuples": ad_tuples,
        "sd_tuples": sd_tuples,
    }
    return BalanceOutcome(best.z, best.lam, best.ad, best.sd, stats)
