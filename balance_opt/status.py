"""The status vocabulary: why a solve stopped, and what the project holds afterwards.

Two axes, as Pyomo's ``contrib.solver`` results (termination condition, solution status)
and linopy's constants keep them apart:

- :class:`Termination`: why the solve stopped, in the solver's words or, when the
  solver gave none (it raised, its worker died or was killed), the batch's.
- :class:`Verdict`: what we hold, the evaluator's verdict on the schedule brought back
  (with the served count and the proved bound kept beside it in :class:`~balance_opt.solution.Solution`).

The solution file's ``status`` (:class:`Status`) is derived from the two by
:func:`reported_status`. All are ``StrEnum``s: each member equals the string written to
files and tables, so ``Status.ERROR == "error"`` and files read back compare directly.
docs/formats.md lists every value.
"""

from __future__ import annotations

from enum import StrEnum


class Termination(StrEnum):
    """Why a solve stopped (solution files: ``termination``)."""

    OPTIMAL = "optimal"  # the search finished and proved its schedule optimal
    COMPLETED = "completed"  # the algorithm ran to its end without proving optimality
    TIME_LIMIT = "time_limit"  # stopped at its time limit, holding its best schedule
    INFEASIBLE = "infeasible"  # a backend proved its model has no solution (never a whole solve)
    REFUSED = "refused"  # the solver declined the instance (e.g. exhaustive search, large K)
    CRASHED = "crashed"  # the solver raised, or its worker process died
    KILLED = "killed"  # the batch stopped the worker past its time limit

    @classmethod
    def of_search(cls, served: int, bound: int | None, finished: bool) -> Termination:
        """Why a search stopped, by the one rule of every solver that bounds: OPTIMAL when
        its proved ``bound`` equals the ``served`` count (however it stopped); else
        COMPLETED when it ran to its end (its proof did not close, or it proves nothing
        about P1: ``bound`` None), TIME_LIMIT when a limit stopped it."""
        if bound is not None and bound == served:
            return cls.OPTIMAL
        return cls.COMPLETED if finished else cls.TIME_LIMIT


class Verdict(StrEnum):
    """What we hold after a solve: the evaluator's verdict on the schedule."""

    FEASIBLE = "feasible"  # a schedule the evaluator accepts
    INFEASIBLE = "infeasible"  # a schedule the evaluator rejects
    NO_SCHEDULE = "no_schedule"  # the solve brought none back; nobody is served


class Status(StrEnum):
    """The reported status of a solve (solution files and results tables: ``status``)."""

    OPTIMAL = "optimal"  # a feasible schedule proved optimal
    FEASIBLE = "feasible"  # a feasible schedule, no proof of optimality
    TIME_LIMIT = "time_limit"  # stopped at the time limit (killed ones serve nobody)
    ERROR = "error"  # refused, crashed, or a schedule or claim the evaluator rejects


# A solve that ends like this gave no answer of its own (``solve --fail-on-error`` counts it).
UNANSWERED = frozenset({Termination.REFUSED, Termination.CRASHED, Termination.KILLED})

# The one mapping from termination to reported status, for claims the evaluator accepts.
_REPORTED: dict[Termination, Status] = {
    Termination.OPTIMAL: Status.OPTIMAL,
    Termination.COMPLETED: Status.FEASIBLE,
    Termination.TIME_LIMIT: Status.TIME_LIMIT,
    Termination.KILLED: Status.TIME_LIMIT,
    Termination.INFEASIBLE: Status.ERROR,
    Termination.REFUSED: Status.ERROR,
    Termination.CRASHED: Status.ERROR,
}

# Reported statuses that claim a feasible schedule.
SOLVED = (Status.OPTIMAL, Status.FEASIBLE)


def reported_status(termination: Termination, claims_hold: bool) -> Status:
    """The file's ``status``: ``error`` whenever the evaluator rejects a claim."""
    return _REPORTED[termination] if claims_hold else Status.ERROR
