"""The solver registry: every solver by name, imported only when asked for.

A solver is one :func:`register` call: its public name and ``"module:Class"``. What it
proves, its options and what it needs are declared by the class itself
(:class:`~balance_opt.solvers.base.Solver`). Heavy backends (Pyomo, HiGHS, OR-Tools)
load on first use, so ``balance-opt --help`` and the heuristic stay fast.

A package adds solvers as entry points of the group ``balance_opt.solvers`` (name =
``"module:Class"``, docs/solvers.md): they are read when a name is first looked up and
imported only when used; a built-in name is never replaced by a plug-in.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from typing import Any, Literal

from balance_opt.errors import SolverUnavailable
from balance_opt.solvers.base import Solver

ENTRY_POINT_GROUP = "balance_opt.solvers"

# name -> "module:class"
_REGISTRY: dict[str, str] = {}
_PLUGINS: dict[str, str] = {}  # the names that came from entry points
_discovered: list[bool] = []  # [True] once the entry points were read


def _discover() -> None:
    """Register the entry points of :data:`ENTRY_POINT_GROUP` once (nothing is imported)."""
    if _discovered:
        return
    _discovered.append(True)
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name not in _REGISTRY:
            _REGISTRY[ep.name] = _PLUGINS[ep.name] = ep.value


def rediscover() -> None:
    """Read the entry points again (after installing a plug-in in a running process)."""
    for name in _PLUGINS:
        if _REGISTRY.get(name) == _PLUGINS[name]:
            del _REGISTRY[name]
    _PLUGINS.clear()
    _discovered.clear()


def register(name: str, target: str, *, replace: bool = False) -> None:
    """Make the solver class at ``target`` (``"module:Class"``) available as ``name``.

    A name already taken by another target is a ValueError unless ``replace``.
    """
    module, sep, attr = target.partition(":")
    if not (module and sep and attr):
        raise ValueError(f"solver {name!r}: target must be 'module:Class', got {target!r}")
    if not replace and _REGISTRY.get(name, target) != target:
        raise ValueError(f"solver {name!r} is already registered as {_REGISTRY[name]!r}")
    _REGISTRY[name] = target


def unregister(name: str) -> None:
    """Forget ``name`` (nothing happens when it is not registered)."""
    _REGISTRY.pop(name, None)


def solver_target(name: str) -> str | None:
    """The ``"module:Class"`` registered as ``name``, if any."""
    _discover()
    return _REGISTRY.get(name)


# docs/formats.md fixes the public names.
register("balance", "balance_opt.solvers.heuristic.solvers:BalanceSolver")
register("balance-literal", "balance_opt.solvers.heuristic.solvers:LiteralBalanceSolver")
register("ad-only", "balance_opt.solvers.heuristic.solvers:AdOnlySolver")
register("sd-only", "balance_opt.solvers.heuristic.solvers:SdOnlySolver")
register("ecra", "balance_opt.solvers.heuristic.solvers:EcraSolver")
register("ema", "balance_opt.solvers.heuristic.solvers:EmaSolver")
register("ecrma", "balance_opt.solvers.heuristic.solvers:EcrmaSolver")
register("balance-plus", "balance_opt.solvers.heuristic.solvers:BalancePlusSolver")
register("exhaustive", "balance_opt.solvers.exhaustive:ExhaustiveSolver")
register("exhaustive-p2", "balance_opt.solvers.exhaustive:ExhaustiveP2Solver")
register("milp-highs", "balance_opt.solvers.milp:HighsMilpSolver")
register("milp-cpsat", "balance_opt.solvers.milp:CpSatMilpSolver")
register("milp-scip", "balance_opt.solvers.milp:ScipMilpSolver")
register("exact", "balance_opt.solvers.exact:ExactSolver")


def solver_names(exact_for: Literal["P1", "P2"] | None = None) -> list[str]:
    """Every registered solver name, or the proving solvers of problem ``exact_for``.

    The tests hold every proving solver to enumeration, so declaring ``proves`` on a
    solver class is what puts it under test.
    """
    _discover()
    if exact_for is None:
        return list(_REGISTRY)
    return [name for name in _REGISTRY if solver_class(name).proves == exact_for]


def heuristic_names() -> list[str]:
    """The registered solvers that prove nothing (their schedules are only feasible)."""
    _discover()
    return [name for name in _REGISTRY if solver_class(name).proves is None]


def solver_class(name: str) -> type[Solver]:
    """The class behind ``name``; ValueError for an unknown name, ImportError (naming the
    solver, its target and, for a plug-in, the entry-point group) when it cannot be loaded."""
    _discover()
    try:
        target = _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown solver {name!r}; known: {', '.join(_REGISTRY)}") from None
    module, _, attr = target.partition(":")
    try:
        cls = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        origin = f" (entry point of {ENTRY_POINT_GROUP!r})" if _PLUGINS.get(name) == target else ""
        raise ImportError(f"solver {name!r}{origin}: {target!r} cannot be loaded: {exc}") from exc
    if not (isinstance(cls, type) and issubclass(cls, Solver)):
        raise ImportError(f"solver {name!r}: {target!r} is not a Solver subclass")
    solver: type[Solver] = cls
    return solver


def get_solver(name: str, **options: Any) -> Solver:
    """An instance of the named solver with the given options (checked here)."""
    cls = solver_class(name)
    available = cls.availability()
    if not available:
        raise SolverUnavailable(f"solver {name!r} is not available here: {available.reason}")
    return cls(**options)


__all__ = [
    "ENTRY_POINT_GROUP",
    "Solver",
    "SolverUnavailable",
    "get_solver",
    "heuristic_names",
    "rediscover",
    "register",
    "solver_class",
    "solver_names",
    "solver_target",
    "unregister",
]
