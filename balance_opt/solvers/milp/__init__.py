"""Exact P1 as a MILP: one formulation, solved by HiGHS (through Pyomo), CP-SAT or SCIP.

``milp-highs``, ``milp-cpsat`` and ``milp-scip`` share :mod:`.formulation` (:mod:`.linear`
variables and linear or indicator rows, one model per z) and :mod:`.z_sweep` (the z loop, warm start, cutoffs,
bounds and the evaluator check); only the translation to the backend differs.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import fields
from functools import cache
from typing import Any, ClassVar

from balance_opt.errors import SolverUnavailable
from balance_opt.evaluate import Schedule
from balance_opt.instance import Instance
from balance_opt.result import SolverOutput
from balance_opt.solvers.base import Solver
from balance_opt.solvers.heuristic.solvers import BalanceSolver
from balance_opt.solvers.milp.options import (
    BEST_KNOWN,
    INDICATORS,
    REFUTE_DEFAULTS,
    SweepOptions,
    check_choice,
)

SWEEP_KEYS = frozenset(f.name for f in fields(SweepOptions))


@cache
def _missing(*modules: str) -> tuple[str, ...]:
    """The modules that cannot be imported here (probed once)."""
    return tuple(m for m in modules if importlib.util.find_spec(m) is None)


def _require(solver: str, modules: tuple[str, ...], pip: str) -> None:
    missing = _missing(*modules)
    if missing:
        raise SolverUnavailable(
            f"solver {solver!r} needs {', '.join(missing)}: install it with `pip install {pip}`"
        )


def _balance(inst: Instance) -> Schedule | None:
    """The warm start: the ``balance`` heuristic's schedule if the evaluator accepts it."""
    res = BalanceSolver().solve(inst)
    return res.schedule if res.feasible else None


class MilpSolver(Solver):
    """The shared z search over one backend; subclasses name the backend and its modules."""

    _modules: ClassVar[tuple[str, ...]]
    _pip: ClassVar[str]

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.sweep = SweepOptions.from_options(self.options)

    @classmethod
    def is_available(cls) -> bool:
        return not _missing(*cls._modules)

    @classmethod
    def check_options(cls, options: Mapping[str, Any]) -> None:
        """Unknown keys, then the sweep's values (ValueError); ``cutoff = "best-known"`` passes here.

        ``library refs`` replaces that cutoff per instance; the solver itself refuses it.
        """
        super().check_options(options)
        values = {k: v for k, v in options.items() if k in SWEEP_KEYS}
        if values.get("cutoff") == BEST_KNOWN:
            values.pop("cutoff")
        SweepOptions.from_options(values)

    def _backend(self, seed: int) -> Callable[[Any, float | None, Any, bool], Any]:
        """``backend(formulation, time_limit, start, strict) -> BackendResult``."""
        raise NotImplementedError

    def _solve(
        self, instance: Instance, *, time_limit: float | None, seed: int, hint: Schedule | None
    ) -> SolverOutput:
        _require(self.name, self._modules, self._pip)
        from balance_opt.solvers.milp.z_sweep import search

        return search(
            instance,
            self._backend(seed),
            time_limit=time_limit,
            hint=hint,
            options=self.sweep,
            heuristic=_balance,
        )


class HighsMilpSolver(MilpSolver):
    """P1 solved exactly by HiGHS through Pyomo's solver interface."""

    name = "milp-highs"
    option_defaults: ClassVar[dict[str, Any]] = {
        "threads": 1,
        "warm_start": True,
        "mode_bounds": "never",
        "plan": "gap-first",
        "selectors": "auto",
        **REFUTE_DEFAULTS,
    }
    _modules = ("pyomo", "highspy")
    _pip = "pyomo highspy"

    def _backend(self, seed: int) -> Callable[[Any, float | None, Any, bool], Any]:
        from balance_opt.solvers.milp.pyomo_backend import solve_highs

        threads = int(self.options["threads"])

        def backend(f: Any, limit: float | None, start: Any, strict: bool) -> Any:
            return solve_highs(f, time_limit=limit, threads=threads, seed=seed, start=start)

        return backend


class CpSatMilpSolver(MilpSolver):
    """The same formulation solved by OR-Tools CP-SAT in integer units."""

    name = "milp-cpsat"
    option_defaults: ClassVar[dict[str, Any]] = {
        "threads": 8,
        "warm_start": True,
        "indicators": "enforce",
        "mode_bounds": "always",
        "plan": "plain",
        # with selectors, 8 workers proved a false infeasibility (docs/milp.md)
        "selectors": "never",
        **REFUTE_DEFAULTS,
    }
    _modules = ("ortools",)
    _pip = "ortools"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        check_choice("indicators", self.options["indicators"], INDICATORS)

    def _backend(self, seed: int) -> Callable[[Any, float | None, Any, bool], Any]:
        from balance_opt.solvers.milp.cpsat_backend import solve_cpsat

        threads = int(self.options["threads"])
        indicators = str(self.options["indicators"])

        def backend(f: Any, limit: float | None, start: Any, strict: bool) -> Any:
            return solve_cpsat(
                f,
                time_limit=limit,
                threads=threads,
                seed=seed,
                start=start,
                rounding="strict" if strict else "relaxed",
                indicators=indicators,
            )

        return backend


class ScipMilpSolver(MilpSolver):
    """The same formulation solved by SCIP (PySCIPOpt), one thread, big-M rows."""

    name = "milp-scip"
    option_defaults: ClassVar[dict[str, Any]] = {
        "threads": 1,  # SCIP's branch and bound is sequential; only 1 is accepted
        "warm_start": True,
        "mode_bounds": "never",
        "plan": "gap-first",
        "selectors": "auto",
        **REFUTE_DEFAULTS,
    }
    _modules = ("pyscipopt",)
    _pip = "'balance-opt[scip]' (or pyscipopt)"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        if int(self.options["threads"]) != 1:
            raise ValueError(f"milp-scip runs on one thread, got threads={self.options['threads']!r}")

    def _backend(self, seed: int) -> Callable[[Any, float | None, Any, bool], Any]:
        from balance_opt.solvers.milp.scip_backend import solve_scip

        def backend(f: Any, limit: float | None, start: Any, strict: bool) -> Any:
            return solve_scip(f, time_limit=limit, seed=seed, start=start)

        return backend


__all__ = ["CpSatMilpSolver", "HighsMilpSolver", "MilpSolver", "ScipMilpSolver"]
