"""What a solver hands back (:class:`SolverOutput`, stopping for one of ``SOLVER_TERMINATIONS``)
and the checked result made of it (:class:`Result`).

Two status axes (:mod:`balance_opt.status`): the solver says why it stopped and what it
proved; :func:`make_result` runs the evaluator on the schedule (the verdict), has
:mod:`balance_opt.claims` compare the solver's claims with it and derives the reported
status. A solver's own objective is only a claim: when the evaluator refutes one, the
result becomes an ``error`` carrying both numbers. :func:`unsolved_result` is the result
of a solve that brought no schedule back. A result's file form is a
:class:`~balance_opt.solution.Solution` (:meth:`Result.solution`).
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
from balance_opt.solution import RunRecord, Solution, broken_rule, summary_line
from balance_opt.status import Status, Termination, Verdict, reported_status
from balance_opt.work import Work

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


@dataclass(frozen=True, eq=False)
class Result:
    """A checked solve: the schedule, what the evaluator found, and the reported status."""

    solver: str
    options: Mapping[str, Any]
    status: Status  # derived from termination and the evaluator's verdict
    schedule: Schedule
    lam: float | None
    bound: int | None
    runtime_s: float
    evaluation: Evaluation
    stats: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None
    termination: Termination = Termination.COMPLETED
    scheduled: bool = True  # False: the solve brought no schedule back (an empty one stands in)

    def __post_init__(self) -> None:
        if self.status not in Status.__members__.values():
            raise ValueError(f"unknown status {self.status!r}")
        claims = Claims(self.served, None, self.status, self.bound, bound_given=True)
        broken = broken_rule(claims, self.error, strict=True)  # the solution document's rules
        if broken is not None:
            raise ValueError(f"{broken[0]}: {broken[1]}")

    @property
    def feasible(self) -> bool:
        """The evaluator's verdict on the schedule."""
        return self.evaluation.feasible

    @property
    def work(self) -> Work:
        """The work counters and P2 optimum of ``stats``, typed (as its solution holds them)."""
        return Work.of(self.stats)

    @property
    def verdict(self) -> Verdict:
        """What we hold: a schedule the evaluator accepts or rejects, or none at all."""
        if not self.scheduled:
            return Verdict.NO_SCHEDULE
        return Verdict.FEASIBLE if self.feasible else Verdict.INFEASIBLE

    @property
    def served(self) -> int:
        """Served users of a feasible schedule; 0 for errors (docs/formats.md)."""
        return 0 if self.status == Status.ERROR else self.evaluation.served

    @property
    def z(self) -> float:
        return self.schedule.z

    def gap(self) -> int | None:
        """Proved bound minus served, when there is a bound."""
        return None if self.bound is None else self.bound - self.served

    def summary(self) -> str:
        """One line for humans: status, served, bound, z, lambda, verdict, runtime."""
        return summary_line(self, self.solver)

    def solution(self, inst: Instance, instance_sha256: str, run: RunRecord | None = None) -> Solution:
        """The docs/formats.md solution document of this result, typed."""
        return Solution(
            instance=inst.name,
            instance_sha256=instance_sha256,
            solver=self.solver,
            options=self.options,
            status=self.status,
            served=self.served,
            bound=self.bound,
            z=self.z,
            lam=self.lam,
            assignment=self.schedule.assignment(inst),
            runtime_s=self.runtime_s,
            feasible=self.feasible,
            termination=self.termination,
            error=self.error,
            stats=self.stats,
            run=run,
        )

    def to_solution(self, inst: Instance, instance_sha256: str) -> dict[str, Any]:
        """The docs/formats.md solution document, as written to a file."""
        return self.solution(inst, instance_sha256).to_dict()


def make_result(
    inst: Instance,
    solver: str,
    options: Mapping[str, Any],
    out: SolverOutput,
    runtime_s: float,
) -> Result:
    """Evaluate ``out``'s schedule and turn the solver's claims into a checked Result."""
    ev = evaluate(inst, out.schedule)
    claims = Claims.of_solver(out.objective, out.bound, out.termination)
    problems = [f"solver {m}" for m in mismatches(claims, ev)]
    optimal = out.termination == Termination.OPTIMAL
    bound = out.bound
    if optimal and bound is None:
        bound = ev.served  # exact enumeration proves its own optimum
    return Result(
        solver=solver,
        options=dict(options),
        status=reported_status(out.termination, not problems),
        schedule=out.schedule,
        lam=out.lam,
        bound=bound,
        runtime_s=runtime_s,
        evaluation=ev,
        stats=json_safe_stats(out.stats),
        error="; ".join(problems) if problems else None,
        termination=out.termination,
    )


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
) -> Result:
    """A solve that brought back no schedule (refused, crashed or killed): nobody served.

    The message is the ``error`` of an ``error`` result; a solve killed past its time limit
    is reported as ``time_limit`` and keeps it in ``stats["killed"]``.
    """
    schedule = Schedule.empty(inst.num_users, inst.server.z_grid[0])
    status = reported_status(termination, claims_hold=True)
    error = message if status == Status.ERROR else None
    return Result(
        solver=solver,
        options=dict(options),
        status=status,
        schedule=schedule,
        lam=None,
        bound=None,
        runtime_s=runtime_s,
        evaluation=evaluate(inst, schedule),
        stats={} if error is not None else {"killed": message},
        error=error,
        termination=termination,
        scheduled=False,
    )
