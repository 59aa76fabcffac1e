"""HiGHS through Pyomo: the formulation as a Pyomo model, solved by ``pyomo.contrib.solver``.

- :func:`to_pyomo`: the linear formulation as a ``ConcreteModel`` (big-M rows).
- :func:`solve_highs`: one solve, mapped to the project's :class:`~balance_opt.status.Termination`
  through one table. A warm start goes through Pyomo's persistent model, which has no
  option for it: after ``set_instance`` the HiGHS object and the variable-to-column map
  are there, and ``Highs.setSolution`` hands HiGHS a starting incumbent (where those
  attributes are missing the solve runs without one). HiGHS's process-wide thread
  scheduler is restarted when the thread count changes, and a MIP that ends with status
  "unknown" is solved once more from scratch.

HiGHS's C-level output is silenced by :func:`balance_opt.solvers.common.output.quiet_stdout`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from balance_opt.solvers.common.output import quiet_stdout
from balance_opt.solvers.milp.formulation import BackendResult
from balance_opt.solvers.milp.linear import Formulation
from balance_opt.status import Termination

# HiGHS's default feasibility tolerances are 1e-6 / 1e-7 absolute; in microseconds and
# megabytes that is far below the model's 1e-9 relative slack (docs/model.md section 6),
# and tighter integrality keeps big-M rows from leaking (the evaluator would catch a leak).
HIGHS_OPTIONS: dict[str, Any] = {
    "mip_feasibility_tolerance": 1e-9,
    "primal_feasibility_tolerance": 1e-9,
    "output_flag": False,
}

# Pyomo's termination conditions (by name: Pyomo is imported only when solving) through
# the one table; "unknown" is retried (see solve_highs) and anything else is raised.
_TERMINATIONS: dict[str, Termination] = {
    "convergenceCriteriaSatisfied": Termination.OPTIMAL,
    "provenInfeasible": Termination.INFEASIBLE,
    "infeasibleOrUnbounded": Termination.INFEASIBLE,
    "maxTimeLimit": Termination.TIME_LIMIT,
    "iterationLimit": Termination.TIME_LIMIT,
}


def to_pyomo(f: Formulation) -> Any:
    """A ``ConcreteModel`` with variables ``v[name]``, rows ``c[name]``, max objective."""
    import pyomo.environ as pyo
    from pyomo.core.expr.numeric_expr import LinearExpression

    m = pyo.ConcreteModel(name=f"balance_p1_z{f.z:g}")
    names = [v.name for v in f.vars]
    m.v = pyo.Var(names)
    for v in f.vars:
        var = m.v[v.name]
        var.domain = pyo.Binary if v.kind == "binary" else pyo.NonNegativeReals
        var.setlb(v.lb)
        var.setub(v.ub)
    pv = [m.v[n] for n in names]

    def rule(_m: Any, name: str) -> Any:
        row = rows[name]
        coefs = list(row.coef)
        variables = [pv[i] for i in row.index]
        rhs = row.rhs
        if row.indicator is not None:  # lhs + M ind <= rhs + M: free when ind = 0
            coefs.append(row.big_m)
            variables.append(pv[row.indicator])
            rhs += row.big_m
        return LinearExpression(constant=0.0, linear_coefs=coefs, linear_vars=variables) <= rhs

    rows = {r.name: r for r in f.rows}
    m.c = pyo.Constraint(list(rows), rule=rule)
    m.served = pyo.Objective(expr=sum(pv[i] for i in f.objective), sense=pyo.maximize)
    return m


def solve_highs(
    f: Formulation,
    *,
    time_limit: float | None,
    threads: int,
    seed: int,
    start: NDArray[np.float64] | None = None,
) -> BackendResult:
    """Solve ``f`` with HiGHS via Pyomo; ``start`` is an optional warm-start vector.

    HiGHS can end a MIP with status "unknown" (seen once in a parallel test run); the
    solve is then repeated once from scratch with another random seed, and a second
    "unknown" is returned as an unproved stop (no bound, ``exact=False``).
    """
    try:
        return _solve_highs_once(f, time_limit=time_limit, threads=threads, seed=seed, start=start)
    except _UnknownStop:
        # a scheduler started elsewhere in the process (another thread count, e.g. by
        # a direct highspy user) makes HiGHS fail this way: restart it, then retry
        _scheduler_threads.clear()
        _reset_scheduler()
    try:
        return _solve_highs_once(f, time_limit=time_limit, threads=threads, seed=seed + 1, start=start)
    except _UnknownStop as stop:
        return BackendResult(Termination.TIME_LIMIT, stop.values, None, {"highs_unknown": True}, exact=False)


_scheduler_threads: list[int] = []  # thread count HiGHS's global scheduler was started with


def _match_scheduler(threads: int) -> None:
    """Restart HiGHS's process-wide thread scheduler when the thread count changes.

    The scheduler is started once per process; a later solve asking for another count
    fails inside HiGHS, which Pyomo reports as status "unknown".
    """
    if _scheduler_threads and _scheduler_threads[-1] != threads:
        _reset_scheduler()
    _scheduler_threads[:] = [threads]


def _reset_scheduler() -> None:
    import highspy

    reset = getattr(highspy.Highs, "resetGlobalScheduler", None)
    if reset is not None:
        reset(True)


class _UnknownStop(RuntimeError):
    def __init__(self, values: NDArray[np.float64] | None) -> None:
        super().__init__("HiGHS stopped with an unknown status")
        self.values = values


def _solve_highs_once(
    f: Formulation,
    *,
    time_limit: float | None,
    threads: int,
    seed: int,
    start: NDArray[np.float64] | None,
) -> BackendResult:
    from pyomo.contrib.solver.common.factory import SolverFactory
    from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition

    _match_scheduler(threads)
    m = to_pyomo(f)
    opt = SolverFactory("highs")
    options = {**HIGHS_OPTIONS, "random_seed": int(seed)}
    kwargs: dict[str, Any] = {
        "load_solutions": False,
        "raise_exception_on_nonoptimal_result": False,
        "threads": threads,
        "solver_options": options,
    }
    if time_limit is not None:
        kwargs["time_limit"] = max(time_limit, 0.01)
    warm = False
    with quiet_stdout():
        if start is not None:
            opt.set_instance(m)
            warm = _set_start(opt, m, f, start)
        res = opt.solve(m, **kwargs)
    tc = res.termination_condition
    has_solution = res.solution_status in (SolutionStatus.optimal, SolutionStatus.feasible)
    values = None
    if has_solution:
        primals = res.solution_loader.get_vars()
        values = np.array([float(primals[m.v[v.name]]) for v in f.vars])
    if tc == TerminationCondition.unknown:
        raise _UnknownStop(values)
    stop = _TERMINATIONS.get(tc.name)
    if stop is None:
        raise RuntimeError(f"HiGHS stopped with {tc} on the z={f.z:g} model")
    bound = res.objective_bound
    if stop == Termination.OPTIMAL and values is not None:
        bound = float(res.incumbent_objective) if bound is None else bound
    if bound is not None and not math.isfinite(bound):
        bound = None
    extra = getattr(res, "extra_info", None)
    nodes = getattr(extra, "mip_node_count", None) if extra is not None else None
    lp_iterations = getattr(extra, "simplex_iteration_count", None) if extra is not None else None
    stats = {"nodes": nodes, "lp_iterations": lp_iterations, "warm_start": warm}
    return BackendResult(stop, values, None if bound is None else float(bound), stats)


def _set_start(opt: Any, m: Any, f: Formulation, start: NDArray[np.float64]) -> bool:
    """Pass ``start`` to the persistent HiGHS object; False where the interface hides it."""
    highs = getattr(opt, "_solver_model", None)
    col_of = getattr(opt, "_pyomo_var_to_solver_var_map", None)
    if highs is None or col_of is None:
        return False
    import highspy

    cols = np.zeros(highs.getNumCol())
    for v, val in zip(f.vars, start.tolist(), strict=True):
        col = col_of.get(id(m.v[v.name]))
        if col is None:
            return False
        cols[col] = val
    sol = highspy.HighsSolution()
    sol.col_value = cols.tolist()
    sol.value_valid = True
    return bool(highs.setSolution(sol) == highspy.HighsStatus.kOk)
