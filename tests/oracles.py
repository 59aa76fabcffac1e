"""Brute-force P1 and P2: the obviously correct twins of every proving solver.

Every z of the grid (and every lambda, for P2) and every one of the 3^K assignments,
judged by the evaluator alone; nothing is pruned but assignments that serve no more users
than the best found so far (they cannot replace it). The first best assignment wins, in
``itertools.product`` order over :data:`MODE_ORDER`: the documented tie-break of the
``exhaustive`` solvers.
"""

from __future__ import annotations

import itertools

import numpy as np

from balance_opt.evaluator import AD, NONE, SD, Schedule, evaluate
from balance_opt.instance import Instance
from balance_opt.solvers.heuristic.primitives import memory_split

MODE_ORDER = (AD, SD, NONE)

Best = tuple[int, float, tuple[int, ...]]


def brute_p1(inst: Instance) -> Best:
    """P1's optimum ``(served, z, modes)``: every z and every assignment, the first best one."""
    best: Best = (0, inst.server.z_grid[0], (NONE,) * inst.num_users)
    for z in inst.server.z_grid:
        for modes in itertools.product(MODE_ORDER, repeat=inst.num_users):
            if sum(m != NONE for m in modes) <= best[0]:
                continue
            ev = evaluate(inst, Schedule(z, np.array(modes, dtype=np.int8)))
            if ev.feasible and ev.served > best[0]:
                best = (ev.served, z, tuple(modes))
    return best


def p1_optimum(inst: Instance) -> int:
    """P1's optimum served count."""
    return brute_p1(inst)[0]


def brute_p2(inst: Instance) -> tuple[int, float, float, tuple[int, ...]]:
    """P2 (22): P1 plus ``q_ad <= Q1`` and ``q_sd <= Q2`` (the evaluator's tolerance on
    memory); ``(served, z, lambda, modes)``, the first best one."""
    grid = inst.server
    best = (0, grid.z_grid[0], grid.lambda_grid[0], (NONE,) * inst.num_users)
    slack = 1e-9 * grid.memory_bytes
    for z in grid.z_grid:
        for lam in grid.lambda_grid:
            q1, q2 = memory_split(inst, z, lam)
            for modes in itertools.product(MODE_ORDER, repeat=inst.num_users):
                if sum(m != NONE for m in modes) <= best[0]:
                    continue
                ev = evaluate(inst, Schedule(z, np.array(modes, dtype=np.int8)))
                fits = ev.ad.kv_bytes <= q1 + slack and ev.sd.kv_bytes <= q2 + slack
                if ev.feasible and fits and ev.served > best[0]:
                    best = (ev.served, z, lam, tuple(modes))
    return best
