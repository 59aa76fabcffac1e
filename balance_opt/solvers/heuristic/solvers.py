"""BALANCE (Algorithm 3) and its baselines and ablations as registered solvers (docs/model.md section 8).

Each solver is Algorithm 3 on a pair of grids: the instance's own (``balance``), or
fixed ones (``ad-only``: Z = {1}, Lambda = {1}; ``sd-only``: Z = {0}, Lambda = {0};
``ecra``: Z = {0.5}; ``ema``: Lambda = {0.5}; ``ecrma``: both 0.5), and ``balance-plus``,
BALANCE's schedule improved by a search over both modes (not the paper's algorithm).

The evaluator checks P1 literally, including (21g): the schedule's z must be on the
instance's z grid. A baseline whose fixed z (1, 0 or 0.5) is not on that grid therefore
yields an infeasible schedule and an ``error`` result; on the default grids
``{0, 0.1, ..., 1}`` every baseline's z is present.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from balance_opt.evaluator import Schedule
from balance_opt.instance import Instance
from balance_opt.result import SolverOutput
from balance_opt.solvers.base import Option, Solver, param
from balance_opt.solvers.heuristic.fast import balance_fast
from balance_opt.solvers.heuristic.literal import balance_literal
from balance_opt.solvers.heuristic.plus import EFFORT, balance_plus
from balance_opt.status import Termination

Implementation = Literal["fast", "literal"]
IMPLEMENTATIONS: tuple[Implementation, ...] = ("fast", "literal")


@dataclass(frozen=True)
class Algorithm3Params:
    """The parameters of ``balance`` and its baselines."""

    implementation: Implementation = param(
        Option(
            "fast",
            IMPLEMENTATIONS,
            description="Algorithm 3 by the vectorized implementation or the literal reference one "
            "(the same outcome by contract)",
        )
    )


class _Algorithm3Solver(Solver):
    """Algorithm 3 on the grids chosen by :meth:`grids`, by the implementation chosen once."""

    Params: ClassVar[type | None] = Algorithm3Params
    params: Algorithm3Params

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.implementation = self._implementation()

    def _implementation(self) -> Implementation:
        """The ``implementation`` parameter."""
        return self.params.implementation

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
        # both return the same outcome by contract (docs/algorithms.md)
        run = balance_fast if self.implementation == "fast" else balance_literal
        outcome = run(instance, z_grid, lam_grid)
        stats = {**outcome.stats, "implementation": self.implementation}
        return SolverOutput(
            schedule=outcome.schedule(instance),
            termination=Termination.COMPLETED,
            lam=outcome.lam,
            bound=None,
            objective=outcome.served,
            stats=stats,
        )


class BalanceSolver(_Algorithm3Solver):
    """BALANCE: Algorithm 3 on the instance's grids (the fast implementation by default)."""

    name = "balance"


class LiteralBalanceSolver(_Algorithm3Solver):
    """BALANCE by the literal reference implementation (for cross-checks and timing)."""

    name = "balance-literal"
    Params = None  # the implementation is not an option here
    option_specs: ClassVar[Mapping[str, Option]] = {}

    def _implementation(self) -> Implementation:
        return "literal"


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


@dataclass(frozen=True)
class PlusParams:
    """``balance-plus``'s parameters: a work limit, not a time limit (docs/algorithms.md).
    The maxima are ceilings far above any useful value (docs/solvers.md, "Domains")."""

    splits: int = param(
        Option(10, minimum=1, maximum=10_000, description="the seeds' memory shares are i / splits")
    )
    cuts: int = param(Option(64, minimum=1, maximum=100_000, description="the most deadline splits per z"))
    effort: int = param(
        Option(
            EFFORT, minimum=1, maximum=10**9, description="at most effort // K single-mode searches in all"
        )
    )


class BalancePlusSolver(Solver):
    """BALANCE's schedule, then a search over both modes at every z (never fewer users).

    Options (docs/algorithms.md, "balance-plus"): ``splits``, the seeds' memory shares are
    ``i / splits`` and the instance's Lambda; ``cuts``, the most deadline splits per z;
    ``effort``, at most ``effort // K`` single-mode searches in all. A work limit, not a
    time limit: the schedule depends only on the instance and the options.
    """

    name = "balance-plus"
    Params = PlusParams
    params: PlusParams

    def _solve(
        self,
        instance: Instance,
        *,
        time_limit: float | None,
        seed: int,
        hint: Schedule | None,
    ) -> SolverOutput:
        z_grid, lam_grid = instance.server.z_grid, instance.server.lambda_grid
        p = self.params
        outcome = balance_plus(instance, z_grid, lam_grid, splits=p.splits, cuts=p.cuts, effort=p.effort)
        return SolverOutput(
            schedule=outcome.schedule(instance),
            termination=Termination.COMPLETED,
            lam=outcome.lam,
            bound=None,
            objective=outcome.served,
            stats=outcome.stats,
        )
