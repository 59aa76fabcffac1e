"""The solver registry: every solver by name, imported only when asked for.

Heavy backends (Pyomo, HiGHS, OR-Tools) load on first use, so ``balance-opt --help``
and the heuristic stay fast.
"""

from __future__ import annotations

import importlib
from typing import Any, Literal

from balance_opt.errors import SolverUnavailable
from balance_opt.solvers.base import Solver

# name -> "module:class"; docs/formats.md fixes the public names.
_REGISTRY: dict[str, str] = {
    "balance": "balance_opt.solvers.heuristic.solvers:BalanceSolver",
    "balance-literal": "balance_opt.solvers.heuristic.solvers:LiteralBalanceSolver",
    "ad-only": "balance_opt.solvers.heuristic.solvers:AdOnlySolver",
    "sd-only": "balance_opt.solvers.heuristic.solvers:SdOnlySolver",
    "ecra": "balance_opt.solvers.heuristic.solvers:EcraSolver",
    "ema": "balance_opt.solvers.heuristic.solvers:EmaSolver",
    "ecrma": "balance_opt.solvers.heuristic.solvers:EcrmaSolver",
    "exhaustive": "balance_opt.solvers.exhaustive:ExhaustiveSolver",
    "exhaustive-p2": "balance_opt.solvers.exhaustive:ExhaustiveP2Solver",
    "milp-highs": "balance_opt.solvers.milp:HighsMilpSolver",
    "milp-cpsat": "balance_opt.solvers.milp:CpSatMilpSolver",
    "milp-scip": "balance_opt.solvers.milp:ScipMilpSolver",
    "exact": "balance_opt.solvers.exact:ExactSolver",
}


# The solvers that prove optima, by the problem they solve exactly: P1 (the model's
# problem) or P2 (P1 with the memory split fixed by lambda). The tests hold every one to
# enumeration, so registering a backend here is what puts it under test.
_EXACT: dict[str, Literal["P1", "P2"]] = {
    "exhaustive": "P1",
    "exhaustive-p2": "P2",
    "milp-highs": "P1",
    "milp-cpsat": "P1",
    "milp-scip": "P1",
    "exact": "P1",
}


def solver_names(exact_for: Literal["P1", "P2"] | None = None) -> list[str]:
    """Every registered solver name, or those that prove optima of problem ``exact_for``."""
    if exact_for is None:
        return list(_REGISTRY)
    return [name for name in _REGISTRY if _EXACT.get(name) == exact_for]


def heuristic_names() -> list[str]:
    """The registered solvers that prove nothing (their schedules are only feasible)."""
    return [name for name in _REGISTRY if name not in _EXACT]


def solver_class(name: str) -> type[Solver]:
    """The class behind ``name``; ValueError for an unknown name."""
    try:
        target = _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown solver {name!r}; known: {', '.join(_REGISTRY)}") from None
    module, _, attr = target.partition(":")
    cls: type[Solver] = getattr(importlib.import_module(module), attr)
    return cls


def get_solver(name: str, **options: Any) -> Solver:
    """An instance of the named solver with the given options."""
    cls = solver_class(name)
    if not cls.is_available():
        raise SolverUnavailable(f"solver {name!r} is not available here")
    return cls(**options)


__all__ = ["Solver", "SolverUnavailable", "get_solver", "heuristic_names", "solver_class", "solver_names"]
