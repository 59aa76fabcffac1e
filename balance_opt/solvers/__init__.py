"""The solver registry: every solver by name, imported only when asked for.

Heavy backends (Pyomo, HiGHS, OR-Tools) load on first use, so ``balance-opt --help``
and the heuristic stay fast.
"""

from __future__ import annotations

import importlib
from typing import Any

from balance_opt.solvers.base import Solver, SolverUnavailable

# name -> "module:class"; docs/formats.md fixes the public names.
_REGISTRY: dict[str, str] = {
    "balance": "balance_opt.solvers.heuristic:BalanceSolver",
    "balance-literal": "balance_opt.solvers.heuristic:LiteralBalanceSolver",
    "ad-only": "balance_opt.solvers.heuristic:AdOnlySolver",
    "sd-only": "balance_opt.solvers.heuristic:SdOnlySolver",
    "ecra": "balance_opt.solvers.heuristic:EcraSolver",
    "ema": "balance_opt.solvers.heuristic:EmaSolver",
    "ecrma": "balance_opt.solvers.heuristic:EcrmaSolver",
    "exhaustive": "balance_opt.solvers.exhaustive:ExhaustiveSolver",
    "exhaustive-p2": "balance_opt.solvers.exhaustive:ExhaustiveP2Solver",
    "milp-highs": "balance_opt.solvers.milp:HighsMilpSolver",
    "milp-cpsat": "balance_opt.solvers.milp:CpSatMilpSolver",
    "exact": "balance_opt.solvers.exact:ExactSolver",
}


def solver_names() -> list[str]:
    """Every registered solver name."""
    return list(_REGISTRY)


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


__all__ = ["Solver", "SolverUnavailable", "get_solver", "solver_class", "solver_names"]
