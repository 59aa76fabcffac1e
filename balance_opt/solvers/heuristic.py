"""BALANCE (Algorithm 3) and its baselines and ablations as registered solvers (docs/model.md section 8).

Each solver is Algorithm 3 on a pair of grids: the instance's own (``balance``), or
fixed ones (``ad-only``: Z = {1}, Lambda = {1}; ``sd-only``: Z = {0}, Lambda = {0};
``ecra``: Z = {0.5}; ``ema``: Lambda = {0.5}; ``ecrma``: both 0.5).

The evaluator checks P1 literally, including (21g): the schedule's z must be on the
instance's z grid. A baseline whose fixed z (1, 0 or 0.5) is not on that grid therefore
yields an infeasible schedule and an ``error`` result; on the default grids
``{0, 0.1, ..., 1}`` every baseline's z is present.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, ClassVar

from balance_opt.evaluate import Schedule
from balance_opt.instance import Instance
from balance_opt.result import SolverOutput
from balance_opt.solvers.algorithm import BalanceOutcome
from balance_opt.solvers.base import Solver
from balance_opt.solvers.literal import balance_literal
from balance_opt.status import Termination

IMPLEMENTATIONS = ("fast", "literal")
_FAST_MODULE = "balance_opt.solvers.fast"


def run_algorithm3(
    inst: Instance, z_grid: tuple[float, ...], lam_grid: tuple[float, ...], implementation: str
) -> tuple[BalanceOutcome, str]:
    """Algorithm 3 by the named implementation; returns the outcome and who computed it.

    ``"fast"`` uses :func:`balance_opt.solvers.fast.balance_fast` when that module is
    installed and falls back to the literal reference otherwise (both return the same
    outcome by contract); the second element says which one ran.
    """
    if implementation not in IMPLEMENTATIONS:
        raise ValueError(
            f"implementation must be one of {', '.join(IMPLEMENTATIONS)}, got {implementation!r}"
        )
    if implementation == "fast":
        try:
            fast = importlib.import_module(_FAST_MODULE)
        except ModuleNotFoundError as exc:
            if exc.name != _FAST_MODULE:
                raise
        else:
            outcome: BalanceOutcome = fast.balance_fast(inst, z_grid, lam_grid)
            return outcome, "fast"
    return balance_literal(inst, z_grid, lam_grid), "literal"


class _Algorithm3Solver(Solver):
    """Algorithm 3 on the grids chosen by :meth:`grids`."""

    option_defaults: ClassVar[Mapping[str, Any]] = {"implementation": "fast"}

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        impl = self.options.get("implementation", "literal")
        if impl not in IMPLEMENTATIONS:
            raise ValueError(
                f"solver {self.name!r}: implementation must be one of {', '.join(IMPLEMENTATIONS)}, "
                f"got {impl!r}"
            )

    def grids(self, inst: Instance) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """The (Z, Lambda) that Algorithm 3 searches."""
        return inst.server.z_grid, inst.server.lambda_grid

    def _solve(
        self,
        instance: Instance,
        *,
        time_limit: float | None,
        seed: int,
        hint: Schedule | None,
    ) -> SolverOutput:
        z_grid, lam_grid = self.grids(instance)
        impl = self.options.get("implementation", "literal")
        outcome, used = run_algorithm3(instance, z_grid, lam_grid, impl)
        stats = {**outcome.stats, "implementation": used}
        return SolverOutput(
            schedule=outcome.schedule(instance),
            termination=Termination.COMPLETED,
            lam=outcome.lam,
            bound=None,
            objective=outcome.served,
            stats=stats,
        )


class BalanceSolver(_Algorithm3Solver):
    """BALANCE: Algorithm 3 on the instance's grids (fast implementation when installed)."""

    name = "balance"


class LiteralBalanceSolver(_Algorithm3Solver):
    """BALANCE by the literal reference implementation (for cross-checks and timing)."""

    name = "balance-literal"
    option_defaults: ClassVar[Mapping[str, Any]] = {}


class AdOnlySolver(_Algorithm3Solver):
    """AD only: Algorithm 1 at z = 1, lambda = 1 (Proposition 4: optimal among AD-only)."""

    name = "ad-only"

    def grids(self, inst: Instance) -> tuple[tuple[float, ...], tuple[float, ...]]:
        return (1.0,), (1.0,)


class SdOnlySolver(_Algorithm3Solver):
    """SD only: Algorithm 2 on every user at z = 0, lambda = 0 (Proposition 5)."""

    name = "sd-only"

    def grids(self, inst: Instance) -> tuple[tuple[float, ...], tuple[float, ...]]:
        return (0.0,), (0.0,)


class EcraSolver(_Algorithm3Solver):
    """ECRA: equal compute split, z = 0.5; lambda and scheduling optimized."""

    name = "ecra"

    def grids(self, inst: Instance) -> tuple[tuple[float, ...], tuple[float, ...]]:
        return (0.5,), inst.server.lambda_grid


class EmaSolver(_Algorithm3Solver):
    """EMA: equal memory split, lambda = 0.5; z and scheduling optimized."""

    name = "ema"

    def grids(self, inst: Instance) -> tuple[tuple[float, ...], tuple[float, ...]]:
        return inst.server.z_grid, (0.5,)


class EcrmaSolver(_Algorithm3Solver):
    """ECRMA: z = 0.5 and lambda = 0.5; only the scheduling is optimized."""

    name = "ecrma"

    def grids(self, inst: Instance) -> tuple[tuple[float, ...], tuple[float, ...]]:
        return (0.5,), (0.5,)
