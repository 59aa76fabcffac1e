"""What a solver hands back, and the one place where its claims are checked.

Two status axes (as in Pyomo's and linopy's results): the solver says why it stopped
and what it proved (:class:`SolverOutput`); :func:`make_result` runs the evaluator on
the schedule and decides what the project reports (:class:`Result`). A solver's own
objective is only a claim: when it disagrees with the evaluator, the result becomes an
``error`` carrying both numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from balance_opt.evaluate import Evaluation, Schedule, evaluate
from balance_opt.instance import Instance
from balance_opt.io import FORMAT_VERSION, SOLUTION_SCHEMA, STATUSES

# Why a solver stopped, as the solver reports it.
SOLVER_STATUSES = ("optimal", "feasible", "time_limit")


@dataclass(frozen=True, eq=False)
class SolverOutput:
    """A solver's raw answer, before the evaluator has looked at it."""

    schedule: Schedule
    status: str  # one of SOLVER_STATUSES
    lam: float | None = None
    bound: int | None = None  # proved upper bound on P1's optimum, if any
    objective: int | None = None  # the served count the solver believes its schedule has
    stats: Mapping[str, Any] = field(default_factory=dict)  # work counters (nodes, ...)

    def __post_init__(self) -> None:
        if self.status not in SOLVER_STATUSES:
            raise ValueError(f"unknown solver status {self.status!r}")


@dataclass(frozen=True, eq=False)
class Result:
    """A checked solve: the schedule, what the evaluator found, and the reported status."""

    solver: str
    options: Mapping[str, Any]
    status: str  # one of io.STATUSES
    schedule: Schedule
    lam: float | None
    bound: int | None
    runtime_s: float
    evaluation: Evaluation
    stats: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown status {self.status!r}")
        if (self.status == "error") != (self.error is not None):
            raise ValueError("an error message goes with status 'error' and only with it")
        if self.status == "optimal" and self.bound != self.served:
            raise ValueError("status 'optimal' needs bound == served")

    @property
    def feasible(self) -> bool:
        """The evaluator's verdict on the schedule."""
        return self.evaluation.feasible

    @property
    def served(self) -> int:
        """Served users of a feasible schedule; 0 for errors (FORMATS.md)."""
        return 0 if self.status == "error" else self.evaluation.served

    @property
    def z(self) -> float:
        return self.schedule.z

    def is_feasible(self) -> bool:
        return self.feasible

    def gap(self) -> int | None:
        """Proved bound minus served, when there is a bound."""
        return None if self.bound is None else self.bound - self.served

    def summary(self) -> str:
        """One line for humans."""
        bound = "" if self.bound is None else f" bound={self.bound}"
        lam = "" if self.lam is None else f" lambda={self.lam:g}"
        tail = f" ({self.error})" if self.error else ""
        return (
            f"{self.solver}: {self.status} served={self.served}{bound} z={self.z:g}{lam} "
            f"ad={self.evaluation.num_ad} sd={self.evaluation.num_sd} "
            f"feasible={self.feasible} {self.runtime_s:.3f}s{tail}"
        )

    def to_solution(self, inst: Instance, instance_sha256: str) -> dict[str, Any]:
        """The FORMATS.md solution document."""
        doc: dict[str, Any] = {
            "schema": SOLUTION_SCHEMA,
            "version": FORMAT_VERSION,
            "instance": inst.name,
            "instance_sha256": instance_sha256,
            "solver": self.solver,
            "options": dict(self.options),
            "status": self.status,
            "served": self.served,
            "bound": self.bound,
            "z": self.z,
            "lambda": self.lam,
            "assignment": self.schedule.assignment(inst),
            "runtime_s": self.runtime_s,
            "feasible": self.feasible,
        }
        if self.error is not None:
            doc["error"] = self.error
        if self.stats:
            doc["stats"] = dict(self.stats)
        return doc


def make_result(
    inst: Instance,
    solver: str,
    options: Mapping[str, Any],
    out: SolverOutput,
    runtime_s: float,
) -> Result:
    """Evaluate ``out``'s schedule and turn the solver's claims into a checked Result."""
    ev = evaluate(inst, out.schedule)
    problems: list[str] = []
    if not ev.feasible:
        problems.append("schedule is infeasible: " + "; ".join(ev.violations[:3]))
    if out.objective is not None and out.objective != ev.served:
        problems.append(f"solver claims {out.objective} served, the evaluator counts {ev.served}")
    if out.bound is not None and ev.feasible and out.bound < ev.served:
        problems.append(f"solver's bound {out.bound} is below the evaluated {ev.served} served")
    if out.status == "optimal" and out.bound is not None and out.bound != ev.served:
        problems.append(
            f"solver claims optimality with bound {out.bound} but the schedule serves {ev.served}"
        )
    status = out.status
    bound = out.bound
    if status == "optimal" and bound is None:
        bound = ev.served  # exact enumeration proves its own optimum
    error = None
    if problems:
        status, error = "error", "; ".join(problems)
    return Result(
        solver=solver,
        options=dict(options),
        status=status,
        schedule=out.schedule,
        lam=out.lam,
        bound=bound,
        runtime_s=runtime_s,
        evaluation=ev,
        stats=dict(out.stats),
        error=error,
    )


def unsolved_result(
    inst: Instance,
    solver: str,
    options: Mapping[str, Any],
    runtime_s: float,
    *,
    error: str | None = None,
    status: str = "error",
    stats: Mapping[str, Any] | None = None,
) -> Result:
    """A solve that brought back no schedule (it raised, crashed or was killed): nobody served."""
    schedule = Schedule.empty(inst.num_users, inst.server.z_grid[0])
    return Result(
        solver=solver,
        options=dict(options),
        status=status,
        schedule=schedule,
        lam=None,
        bound=None,
        runtime_s=runtime_s,
        evaluation=evaluate(inst, schedule),
        stats=dict(stats or {}),
        error=error,
    )


def error_result(
    inst: Instance, solver: str, options: Mapping[str, Any], message: str, runtime_s: float
) -> Result:
    """A solve that raised: status ``error``, nobody served."""
    return unsolved_result(inst, solver, options, runtime_s, error=message)
