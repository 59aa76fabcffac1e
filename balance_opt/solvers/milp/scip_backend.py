"""SCIP through PySCIPOpt: the formulation as a SCIP model with big-M rows, one thread.

SCIP is a third, independent branch and bound for the same formulation as HiGHS and
CP-SAT. Its output is switched off (``hideOutput``) and file descriptor 1 is sent to
/dev/null during the solve, so nothing reaches standard output under ``--json``.
The rows are in the units HiGHS sees (microseconds, megabytes); every schedule goes to
the evaluator.
"""

from __future__ import annotations

import contextlib
import math
import re
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray

from balance_opt.solvers.common.output import quiet_stdout, redirected_fd
from balance_opt.solvers.milp.formulation import BackendResult
from balance_opt.solvers.milp.linear import Formulation
from balance_opt.status import Termination

# SCIP's status strings through one table; any other status is raised.
_TERMINATIONS: dict[str, Termination] = {
    "optimal": Termination.OPTIMAL,
    "infeasible": Termination.INFEASIBLE,
    "timelimit": Termination.TIME_LIMIT,
    "nodelimit": Termination.TIME_LIMIT,
    "memlimit": Termination.TIME_LIMIT,
    "userinterrupt": Termination.TIME_LIMIT,
}

# SCIP's row tolerance is relative (1e-8 of a latency limit is under 0.1 us). The evaluator
# re-checks every schedule (a rejected one is cut off and the z re-solved), and a looser
# tolerance only widens the model, so its bounds stay valid.
# SCIP's timing/clocktype: 1 counts user CPU seconds of the process, 2 wall-clock seconds
CLOCK_TYPES: dict[str, int] = {"cpu": 1, "wall": 2}

SCIP_PARAMS: dict[str, Any] = {
    "numerics/feastol": 1e-8,
    "parallel/maxnthreads": 1,
    "lp/threads": 1,
}


# SoPlex tightens its LP tolerance below what it supports without GMP and says so on
# file descriptor 2 at C level, once per LP; that line is dropped, any other is passed on.
_NOISE = re.compile(r"^Cannot set feasibility tolerance to small value .* without GMP - using .*$")


@contextlib.contextmanager
def filtered_stderr() -> Iterator[None]:
    """Capture file descriptor 2 during a solve; re-emit every line but SoPlex's GMP notice."""
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        try:
            with redirected_fd(2, tmp.fileno()):
                yield
        finally:
            tmp.seek(0)
            lines = tmp.read().decode(errors="replace").splitlines()
            kept = [line for line in lines if line.strip() and not _NOISE.match(line.strip())]
            if kept:
                print("\n".join(kept), file=sys.stderr)


def to_scip(f: Formulation) -> tuple[Any, list[Any]]:
    """A PySCIPOpt ``Model`` of ``f`` (maximize served) and its variables in ``f``'s order."""
    from pyscipopt import Model, quicksum

    m = Model(f"balance_p1_z{f.z:g}")
    m.hideOutput()
    xs = [m.addVar(name=v.name, vtype="B" if v.kind == "binary" else "C", lb=v.lb, ub=v.ub) for v in f.vars]
    for row in f.rows:
        expr = quicksum(c * xs[i] for i, c in zip(row.index, row.coef, strict=True))
        rhs = row.rhs
        if row.indicator is not None:  # lhs + M ind <= rhs + M: free when ind = 0
            expr += row.big_m * xs[row.indicator]
            rhs += row.big_m
        m.addCons(expr <= rhs, name=row.name)
    m.setObjective(quicksum(xs[i] for i in f.objective), sense="maximize")
    return m, xs


def solve_scip(
    f: Formulation,
    *,
    time_limit: float | None,
    seed: int,
    start: NDArray[np.float64] | None = None,
    clock: str = "wall",
) -> BackendResult:
    """Solve ``f`` with SCIP; ``start`` is an optional warm-start vector (tried as a solution).

    ``clock="cpu"`` counts ``time_limit`` in the process's user CPU seconds: a solve that is
    paused or crowded gets its whole budget (one solve per process, as SCIP's CPU clock is the
    process's)."""
    with quiet_stdout(), filtered_stderr():
        m, xs = to_scip(f)
        for key, value in SCIP_PARAMS.items():
            m.setParam(key, value)
        m.setParam("randomization/randomseedshift", int(seed) % 2**31)
        if time_limit is not None:
            m.setParam("limits/time", max(float(time_limit), 0.01))
            m.setParam("timing/clocktype", CLOCK_TYPES[clock])
        warm = False
        if start is not None:
            sol = m.createSol()
            for var, val in zip(xs, start.tolist(), strict=True):
                m.setSolVal(sol, var, val)
            warm = bool(m.addSol(sol, free=True))
        m.optimize()
    status = str(m.getStatus())
    stop = _TERMINATIONS.get(status)
    if stop is None:
        raise RuntimeError(f"SCIP stopped with status {status!r} on the z={f.z:g} model")
    values = None
    if m.getNSols() > 0 and stop != Termination.INFEASIBLE:
        best = m.getBestSol()
        values = np.array([float(m.getSolVal(best, v)) for v in xs])
    bound: float | None = None
    if stop != Termination.INFEASIBLE:
        bound = float(m.getDualbound())
        if not math.isfinite(bound) or m.isInfinity(abs(bound)):  # SCIP's infinity is 1e20
            bound = None
    stats = {"nodes": int(m.getNNodes()), "lp_iterations": int(m.getNLPIterations()), "warm_start": warm}
    return BackendResult(stop, values, bound, stats)
