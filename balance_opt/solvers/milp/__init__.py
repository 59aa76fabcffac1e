"""Exact P1 as a MILP: one formulation, solved by HiGHS (through Pyomo), CP-SAT or SCIP.

``milp-highs``, ``milp-cpsat`` and ``milp-scip`` share :mod:`.formulation` (:mod:`.linear`
variables and linear or indicator rows, one model per z) and :mod:`.z_sweep` (the z loop, warm start, cutoffs,
bounds and the evaluator check); only the translation to the backend differs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from balance_opt.evaluator import Schedule
from balance_opt.instance import Instance
from balance_opt.result import SolverOutput
from balance_opt.solvers.base import Solver
from balance_opt.solvers.common.warm_start import balance_schedule
from balance_opt.solvers.milp.options import BEST_KNOWN, SweepOptions
from balance_opt.solvers.milp.params import SWEEP_KEYS, CpSatParams, MilpParams, ScipParams


class MilpSolver(Solver):
    """The shared z search over one backend; subclasses name the backend and its modules."""

    proves = "P1"
    Params: ClassVar[type | None] = MilpParams
    params: MilpParams

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.sweep = self.params.sweep()

    @classmethod
    def check_options(cls, options: Mapping[str, Any]) -> None:
        """Names and types (the declarations), then the sweep's values together (ValueError);
        ``cutoff = "best-known"`` passes here: ``library refs`` replaces it per instance, and
        the solver itself refuses it."""
        best_known = options.get("cutoff") == BEST_KNOWN
        super().check_options({k: v for k, v in options.items() if not (best_known and k == "cutoff")})
        values = {k: v for k, v in {**cls.option_defaults(), **options}.items() if k in SWEEP_KEYS}
        if best_known:
            values.pop("cutoff")
        SweepOptions.from_options(values)

    def _backend(self, seed: int) -> Callable[[Any, float | None, Any, bool], Any]:
        """``backend(formulation, time_limit, start, strict) -> BackendResult``."""
        raise NotImplementedError

    def _solve(
        self, instance: Instance, *, time_limit: float | None, seed: int, hint: Schedule | None
    ) -> SolverOutput:
        from balance_opt.solvers.milp.journal import Journal, journaled
        from balance_opt.solvers.milp.z_sweep import search

        backend = self._backend(seed)
        folder = self.params.journal
        # proofs kept across runs, named by the parameter only: a journal is part of the configuration
        journal = Journal.at(Path(folder)) if folder else None
        if journal is not None:
            backend = journaled(backend, journal, self.name, getattr(self.params, "clock", None))
        out = search(
            instance,
            backend,
            time_limit=time_limit,
            hint=hint,
            options=self.sweep,
            heuristic=balance_schedule,
        )
        if journal is not None:
            out = replace(out, stats={**out.stats, "journal": journal.summary()})
        return out


class HighsMilpSolver(MilpSolver):
    """P1 solved exactly by HiGHS through Pyomo's solver interface."""

    name = "milp-highs"
    requires = ("pyomo", "highspy")
    install = "pyomo highspy"

    def _backend(self, seed: int) -> Callable[[Any, float | None, Any, bool], Any]:
        from balance_opt.solvers.milp.pyomo_backend import solve_highs

        threads = self.params.threads

        def backend(f: Any, limit: float | None, start: Any, strict: bool) -> Any:
            return solve_highs(f, time_limit=limit, threads=threads, seed=seed, start=start)

        return backend


class CpSatMilpSolver(MilpSolver):
    """The same formulation solved by OR-Tools CP-SAT in integer units."""

    name = "milp-cpsat"
    Params = CpSatParams
    params: CpSatParams
    requires = ("ortools",)
    install = "ortools"

    def _backend(self, seed: int) -> Callable[[Any, float | None, Any, bool], Any]:
        from balance_opt.solvers.milp.cpsat_backend import solve_cpsat

        threads, indicators = self.params.threads, self.params.indicators

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
    Params = ScipParams
    params: ScipParams
    requires = ("pyscipopt",)
    install = "'balance-opt[scip]' (or pyscipopt)"

    @classmethod
    def check_options(cls, options: Mapping[str, Any]) -> None:
        threads = options.get("threads", 1)
        if threads != 1:
            raise ValueError(f"milp-scip runs on one thread, got threads={threads!r}")
        super().check_options(options)

    def _backend(self, seed: int) -> Callable[[Any, float | None, Any, bool], Any]:
        from balance_opt.solvers.milp.scip_backend import solve_scip

        clock = self.params.clock

        def backend(f: Any, limit: float | None, start: Any, strict: bool) -> Any:
            return solve_scip(f, time_limit=limit, seed=seed, start=start, clock=clock)

        return backend


__all__ = ["CpSatMilpSolver", "HighsMilpSolver", "MilpSolver", "ScipMilpSolver"]
