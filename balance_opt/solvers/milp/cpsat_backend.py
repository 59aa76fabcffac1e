"""The same formulation as an OR-Tools CP-SAT model, in integers.

CP-SAT takes integer coefficients, so each row is scaled to fine units (time rows to
10 ns, memory rows to kB) and rounded in one of two directions. Finer units gave CP-SAT
coefficients near 1e10, and it then returned a wrong optimum (6 instead of 7 on a K = 7
instance that the tests found); at these units coefficients stay below about 1e9.

* ``relaxed`` (the default): left-hand coefficients down, right-hand sides up. Every
  P1-feasible schedule stays feasible (its maxima rounded down, its tightest deadline
  up, see ``docs/milp.md``), so the model's optimum and proved bound are upper bounds
  of P1 at this z. A schedule it returns is feasible up to ``(K + 2)`` units per row;
  the evaluator re-checks it on the real numbers.
* ``strict``: left-hand coefficients up, right-hand sides down. Every schedule it
  accepts is P1-feasible, but it may miss schedules within a few units of a limit, so
  its bound proves nothing about P1. Used only when the evaluator rejects a relaxed
  schedule.

Indicator rows become either ``only_enforce_if`` constraints or explicit big-M rows
(``indicators="bigm"``), whose small data-derived M gives CP-SAT's LP a tighter start.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from balance_opt.solvers.milp.formulation import BackendResult
from balance_opt.solvers.milp.linear import COUNT, MEMORY, TIME, TOKENS, Formulation
from balance_opt.status import Termination

# Integer units per formulation unit: 10 ns per time unit (us), kB per MB.
SCALE = {TIME: 1e2, MEMORY: 1e3, TOKENS: 1.0, COUNT: 1.0}


def _down(v: float) -> int:
    return math.floor(v)


def _up(v: float) -> int:
    return math.ceil(v)


def to_cpsat(
    f: Formulation, *, rounding: str = "relaxed", indicators: str = "enforce"
) -> tuple[Any, list[Any]]:
    """The CP-SAT model of ``f`` and its variables (formulation order)."""
    from ortools.sat.python import cp_model

    if rounding not in ("relaxed", "strict"):
        raise ValueError(f"unknown rounding {rounding!r}")
    relaxed = rounding == "relaxed"
    coef_round, rhs_round = (_down, _up) if relaxed else (_up, _down)
    model = cp_model.CpModel()
    xs: list[Any] = []
    for v in f.vars:
        if v.kind == "binary":
            xs.append(model.new_bool_var(v.name))
            continue
        s = SCALE[v.unit]
        lo, hi = (_down(v.lb * s), _up(v.ub * s)) if relaxed else (_up(v.lb * s), _down(v.ub * s))
        xs.append(model.new_int_var(lo, max(lo, hi), v.name))
    for row in f.rows:
        rs = SCALE[row.unit]
        coefs = [coef_round(c * rs / _var_scale(f, i)) for i, c in zip(row.index, row.coef, strict=True)]
        expr = sum(c * xs[i] for c, i in zip(coefs, row.index, strict=True) if c != 0)
        rhs = rhs_round(row.rhs * rs)
        if row.indicator is None:
            model.add(expr <= rhs)
        elif indicators == "bigm":
            big_m = _up(row.big_m * rs) + (len(row.index) + 1 if not relaxed else 0)
            model.add(expr + big_m * xs[row.indicator] <= rhs + big_m)
        else:
            model.add(expr <= rhs).only_enforce_if(xs[row.indicator])
    model.maximize(sum(xs[i] for i in f.objective))
    return model, xs


def _var_scale(f: Formulation, i: int) -> float:
    v = f.vars[i]
    return 1.0 if v.kind == "binary" else SCALE[v.unit]


def integer_start(f: Formulation, values: NDArray[np.float64]) -> list[int]:
    """A real solution vector in CP-SAT units (``max`` variables down, ``min`` up)."""
    out = []
    for v, val in zip(f.vars, values.tolist(), strict=True):
        if v.kind == "binary":
            out.append(round(val))
        else:
            s = SCALE[v.unit] * val
            out.append(_up(s) if v.role == "min" else _down(s))
    return out


def solve_cpsat(
    f: Formulation,
    *,
    time_limit: float | None,
    threads: int,
    seed: int,
    start: NDArray[np.float64] | None = None,
    rounding: str = "relaxed",
    indicators: str = "enforce",
) -> BackendResult:
    """Solve ``f`` with CP-SAT; values are returned in the formulation's real units."""
    from ortools.sat.python import cp_model

    model, xs = to_cpsat(f, rounding=rounding, indicators=indicators)
    if start is not None:
        for var, val in zip(xs, integer_start(f, start), strict=True):
            model.add_hint(var, val)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = threads
    solver.parameters.random_seed = seed
    if time_limit is not None:
        solver.parameters.max_time_in_seconds = max(time_limit, 0.01)
    code = solver.solve(model)
    stats: dict[str, Any] = {
        "branches": solver.num_branches,
        "deterministic_time": solver.deterministic_time,
        "rounding": rounding,
    }
    exact = rounding == "relaxed"
    stop = _termination(solver, code, f.z)
    if stop == Termination.INFEASIBLE:
        return BackendResult(stop, None, None, stats, exact)
    bound = float(solver.best_objective_bound) if rounding == "relaxed" else None
    if code == cp_model.UNKNOWN:
        # stopped before any bound was derived (e.g. in presolve), CP-SAT reports 0
        if bound is not None and (solver.num_branches == 0 or not math.isfinite(bound)):
            bound = None
        return BackendResult(stop, None, bound, stats, exact)
    values = np.array([solver.value(x) / _var_scale(f, i) for i, x in enumerate(xs)], dtype=np.float64)
    return BackendResult(stop, values, bound, stats, exact)


def _termination(solver: Any, code: Any, z: float) -> Termination:
    """CP-SAT's status through the one table; an invalid model is a bug, raised."""
    from ortools.sat.python import cp_model

    table = {
        cp_model.OPTIMAL: Termination.OPTIMAL,
        cp_model.FEASIBLE: Termination.TIME_LIMIT,  # a solution, stopped before the proof
        cp_model.UNKNOWN: Termination.TIME_LIMIT,  # stopped before any solution
        cp_model.INFEASIBLE: Termination.INFEASIBLE,
    }
    if code not in table:
        raise RuntimeError(f"CP-SAT returned {solver.status_name(code)} on the z={z:g} model")
    return table[code]
