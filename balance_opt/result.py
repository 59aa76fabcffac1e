"""What a solver hands back (:class:`SolverOutput`, stopping for one of ``SOLVER_TERMINATIONS``)
and the judged record made of it (a :class:`~balance_opt.solution.Solution`).

Two status axes (:mod:`balance_opt.status`): the solver says why it stopped and what it
proved; :func:`make_result` runs the evaluator on the schedule (the verdict), has
:mod:`balance_opt.claims` compare the solver's claims with it and derives the reported
status. A solver's own objective is only a claim: when the evaluator refutes one, the
solution becomes an ``error`` carrying both numbers. :func:`unsolved_result` is the
solution of a solve that brought no schedule back.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from balance_opt.claims import Claims, mismatches
from balance_opt.evaluator import Evaluation, Schedule, evaluate
from balance_opt.instance import Instance
from balance_opt.solution import Solution
from balance_opt.status import Status, Termination, reported_status

# Why a solver may say it stopped (the batch adds the others for solves that end without one).
SOLVER_TERMINATIONS = (Termination.OPTIMAL, Termination.COMPLETED, Termination.TIME_LIMIT)


@dataclass(frozen=True, eq=False)
class SolverOutput:
    """A solver's raw answer, before the evaluator has looked at it."""

    schedule: Schedule
    termination: Termination  # one of SOLVER_TERMINATIONS
    lam: float | None = None
    bound: int | None = None  # proved upper bound on P1's optimum, if any
    objective: int | None = None  # the served count the solver believes its schedule has
    stats: Mapping[str, Any] = field(default_factory=dict)  # work counters (nodes, ...)

    def __post_init__(self) -> None:
        if self.termination not in SOLVER_TERMINATIONS:
            raise ValueError(f"a solver cannot stop with {self.termination!r}")


def make_result(
    inst: Instance,
    solver: str,
    options: Mapping[str, Any],
    out: SolverOutput,
    runtime_s: float,
) -> Solution:
    """Evaluate ``out``'s schedule and turn the solver's claims into a judged Solution."""
    ev = evaluate(inst, out.schedule)
    claims = Claims.of_solver(out.objective, out.bound, out.termination)
    problems = [f"solver {m}" for m in mismatches(claims, ev)]
    bound = out.bound
    if out.termination == Termination.OPTIMAL and bound is None:
        bound = ev.served  # exact enumeration proves its own optimum
    status = reported_status(out.termination, not problems)
    return _judged(inst, solver, options, out.schedule, ev, status, runtime_s,
                   lam=out.lam, bound=bound, stats=json_safe_stats(out.stats),
                   error="; ".join(problems) if problems else None, termination=out.termination)  # fmt: skip


def _judged(
    inst: Instance,
    solver: str,
    options: Mapping[str, Any],
    schedule: Schedule,
    ev: Evaluation,
    status: Status,
    runtime_s: float,
    **rest: Any,
) -> Solution:
    """The Solution of ``schedule`` as the evaluator judged it (an error serves nobody, docs/formats.md)."""
    sol = Solution(
        instance=inst.name,
        instance_sha256=None,
        solver=solver,
        options=dict(options),
        status=status,
        served=0 if status == Status.ERROR else ev.served,
        z=schedule.z,
        assignment=schedule.assignment(inst),
        runtime_s=runtime_s,
        feasible=ev.feasible,
        evaluation=ev,
        **rest,
    )
    sol.__dict__["schedule"] = schedule  # the cached property, known already: not rebuilt from the names
    return sol


def _json_value(value: Any) -> Any:
    """``value`` as JSON holds it: numpy scalars and arrays as Python numbers and lists,
    a non-finite float as its name (``"nan"``, ``"inf"``); anything else is left for the
    writer to refuse, naming the solver."""
    if isinstance(value, np.generic | np.ndarray):
        value = value.tolist()
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, Mapping):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    return value


def json_safe_stats(stats: Mapping[str, Any]) -> dict[str, Any]:
    """A solver's statistics made writable: a plug-in may report numpy numbers or NaN."""
    return {str(k): _json_value(v) for k, v in stats.items()}


def unsolved_result(
    inst: Instance,
    solver: str,
    options: Mapping[str, Any],
    runtime_s: float,
    termination: Termination,
    message: str,
) -> Solution:
    """A solve that brought back no schedule (refused, crashed or killed): nobody served.

    The message is the ``error`` of an ``error`` result; a solve killed past its time limit
    is reported as ``time_limit`` and keeps it in ``stats["killed"]``.
    """
    schedule = Schedule.empty(inst.num_users, inst.server.z_grid[0])
    status = reported_status(termination, claims_hold=True)
    error = message if status == Status.ERROR else None
    stats = {} if error is not None else {"killed": message}
    return _judged(inst, solver, options, schedule, evaluate(inst, schedule), status, runtime_s,
                   lam=None, bound=None, stats=stats, error=error, termination=termination)  # fmt: skip
