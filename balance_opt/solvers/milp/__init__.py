"""Exact P1 as a MILP: one formulation, solved by HiGHS (through Pyomo), CP-SAT or SCIP.

``milp-highs``, ``milp-cpsat`` and ``milp-scip`` share :mod:`.formulation` (:mod:`.linear`
variables and linear or indicator rows, one model per z) and :mod:`.z_sweep` (the z loop, warm start, cutoffs,
bounds and the evaluator check); only the translation to the backend differs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import fields, replace
from pathlib import Path
from typing import Any, ClassVar

from balance_opt.evaluator import Schedule
from balance_opt.instance import Instance
from balance_opt.result import SolverOutput
from balance_opt.solvers.base import Option, Solver, seconds_option, threads_option
from balance_opt.solvers.common.warm_start import balance_schedule
from balance_opt.solvers.milp.options import (
    BEST_KNOWN,
    INDICATORS,
    MODE_BOUNDS,
    PLANS,
    SELECTORS,
    SPLITS_BY,
    SweepOptions,
)

SWEEP_KEYS = frozenset(f.name for f in fields(SweepOptions))
# Portable ceilings (docs/solvers.md): a cutoff above any instance's users is no cutoff,
# and 2^20 parts per z, or 40 bisections of each, are far past any refutation's needs.
MAX_USERS = 10**6
MAX_SPLIT = 2**20
MAX_SPLIT_DEPTH = 40


def sweep_options(
    threads: Option, mode_bounds: str, plan: str, selectors: str, **backend: Option
) -> dict[str, Option]:
    """The options every MILP backend has, with that backend's defaults (:class:`SweepOptions`),
    and the backend's own (after ``warm_start``, the order the results record them in)."""
    return {
        "threads": threads,
        "warm_start": Option(True, description="start from balance's schedule when no hint is given"),
        **backend,
        "mode_bounds": Option(
            mode_bounds, MODE_BOUNDS, description="when each mode's optimum alone caps that mode's count"
        ),
        "plan": Option(plan, PLANS, description="how the sweeps share a time limit (docs/milp.md)"),
        "selectors": Option(
            selectors, SELECTORS, description="which z models enforce their padding rows by binary levels"
        ),
        # refutation (docs/milp.md): off unless set; their values are checked together
        "cutoff": Option(
            None, kind=int, minimum=0, maximum=MAX_USERS, description='refute "more than cutoff served"'
        ),
        "z_time_limit": seconds_option("seconds per z model solve (null: the sweep's share)"),
        "split": Option(
            0, minimum=0, maximum=MAX_SPLIT, description="refutation: parts per z after a timeout"
        ),
        "split_by": Option("ad-count", SPLITS_BY, description="what the parts of a split divide"),
        "split_depth": Option(
            0, minimum=0, maximum=MAX_SPLIT_DEPTH, description="times a part left open is bisected again"
        ),
        "whole_time_limit": seconds_option("with split: seconds per whole-z solve (null: z_time_limit)"),
        # an explicit option, so the journal is part of the configuration (and its hash)
        "journal": Option(
            None,
            kind=str,
            description="folder of a journal of MILP answers kept by model, so a stopped refutation "
            "resumes (docs/milp.md); null: none",
        ),
    }


class MilpSolver(Solver):
    """The shared z search over one backend; subclasses name the backend and its modules."""

    proves = "P1"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.sweep = SweepOptions.from_options(self.options)

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
        folder = self.options.get("journal")
        # proofs kept across runs, named by the option only: a journal is part of the configuration
        journal = Journal.at(Path(folder)) if folder else None
        if journal is not None:
            clock = self.options.get("clock")
            backend = journaled(backend, journal, self.name, None if clock is None else str(clock))
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
    option_specs: ClassVar[Mapping[str, Option]] = sweep_options(
        threads_option(), "never", "gap-first", "auto"
    )
    requires = ("pyomo", "highspy")
    install = "pyomo highspy"

    def _backend(self, seed: int) -> Callable[[Any, float | None, Any, bool], Any]:
        from balance_opt.solvers.milp.pyomo_backend import solve_highs

        threads = int(self.options["threads"])

        def backend(f: Any, limit: float | None, start: Any, strict: bool) -> Any:
            return solve_highs(f, time_limit=limit, threads=threads, seed=seed, start=start)

        return backend


class CpSatMilpSolver(MilpSolver):
    """The same formulation solved by OR-Tools CP-SAT in integer units."""

    name = "milp-cpsat"
    # with selectors, 8 workers proved a false infeasibility (docs/milp.md)
    option_specs: ClassVar[Mapping[str, Option]] = sweep_options(
        threads_option(description="CP-SAT's workers (num_workers)"),
        "always",
        "plain",
        "never",
        indicators=Option(
            "enforce",
            INDICATORS,
            description="indicator rows enforced natively or as data-derived big-M rows",
        ),
    )
    requires = ("ortools",)
    install = "ortools"

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
    # SCIP's branch and bound is sequential: one thread is the only value accepted
    option_specs: ClassVar[Mapping[str, Option]] = {
        **sweep_options(threads_option(), "never", "gap-first", "auto"),
        "threads": Option(1, choices=(1,), description="SCIP's branch and bound is sequential: 1 only"),
        "clock": Option(
            "wall",
            ("wall", "cpu"),
            description="what limits count: wall-clock seconds, or CPU seconds (for runs that may be paused)",
        ),
    }
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

        clock = str(self.options["clock"])

        def backend(f: Any, limit: float | None, start: Any, strict: bool) -> Any:
            return solve_scip(f, time_limit=limit, seed=seed, start=start, clock=clock)

        return backend


__all__ = ["CpSatMilpSolver", "HighsMilpSolver", "MilpSolver", "ScipMilpSolver"]
