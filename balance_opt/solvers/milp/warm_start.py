"""The warm start: a schedule's full variable vector in the formulation.

Also used for no-good rows (the binaries of a rejected schedule) and by the tests, which
compare the rows it satisfies with the evaluator's verdict.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from balance_opt.evaluator import AD, SD, Schedule
from balance_opt.solvers.milp.linear import Formulation, Row


def solution_values(f: Formulation, schedule: Schedule) -> NDArray[np.float64] | None:
    """A full variable vector for ``schedule`` (a warm start), or None if not representable.

    Binaries from the modes; each continuous variable at its tightest value implied by
    its defining rows (rows in which it is the only continuous variable).
    """
    vals = np.zeros(len(f.vars))
    modes = schedule.modes
    for k, i in zip(f.ad_users, f.x, strict=True):
        vals[i] = float(modes[k] == AD)
    for k, i in zip(f.sd_users, f.y, strict=True):
        vals[i] = float(modes[k] == SD)
    placed = {k for k, i in zip(f.ad_users, f.x, strict=True) if vals[i]}
    placed |= {k for k, i in zip(f.sd_users, f.y, strict=True) if vals[i]}
    if set(np.flatnonzero(modes).tolist()) != placed:
        return None  # a user in a mode it is not eligible for
    for sel in f.selectors:
        top = max((v for b, v in zip(sel.binaries, sel.values, strict=True) if vals[b] > 0.5), default=-1.0)
        for d, a in zip(sel.distinct, sel.avars, strict=True):
            vals[a] = float(d <= top)
    for h in f.hulls:
        served = [v for b, v in zip(h.binaries, h.values, strict=True) if vals[b] > 0.5]
        for level, hv in zip(h.levels, h.hvars, strict=True):
            hit = any(v >= level for v in served) if h.sense == "max" else any(v <= level for v in served)
            vals[hv] = float(hit)
    _derive_continuous(f, vals, {hv for h in f.hulls for hv in h.hvars})
    return vals


def _derive_continuous(f: Formulation, vals: NDArray[np.float64], known: set[int]) -> None:
    """Set each remaining continuous variable to its tightest value (fixed point).

    A ``max`` variable takes the largest lower bound of the active rows where it has a
    negative coefficient, a ``min`` variable the smallest upper bound of the rows where
    it has a positive one, once every other variable of those rows is known.
    """
    known = known | {i for i, v in enumerate(f.vars) if v.kind == "binary"}
    rows_of: dict[int, list[tuple[Row, float]]] = {}
    for row in f.rows:
        if row.indicator is not None and vals[row.indicator] < 0.5:
            continue
        for i, c in zip(row.index, row.coef, strict=True):
            if f.vars[i].kind == "continuous" and (c < 0) == (f.vars[i].role == "max"):
                rows_of.setdefault(i, []).append((row, c))
    pending = [i for i, v in enumerate(f.vars) if v.kind == "continuous" and i not in known]
    while pending:
        ready = [i for i in pending if all(set(r.index) - {i} <= known for r, _ in rows_of.get(i, []))]
        if not ready:
            raise RuntimeError("the formulation's continuous variables are not well founded")
        for i in ready:
            v = f.vars[i]
            val = v.lb if v.role == "max" else v.ub
            for row, a in rows_of.get(i, []):
                rest = sum(c * vals[j] for j, c in zip(row.index, row.coef, strict=True) if j != i)
                bound = (row.rhs - rest) / a
                val = max(val, bound) if a < 0 else min(val, bound)
            vals[i] = val
            known.add(i)
        pending = [i for i in pending if i not in known]
