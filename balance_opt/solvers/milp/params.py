"""The MILP solvers' parameters: one typed record per backend, each field declared by its option.

The sweep's fields are every backend's (:class:`MilpParams`, with ``milp-highs``'s
defaults); ``milp-cpsat`` and ``milp-scip`` change some defaults and add their own. The
values are checked once, when the solver is made: each field's domain by its option, the
rules between fields by :class:`~.options.SweepOptions`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Literal, get_args

from balance_opt.solvers.base import Option, param, seconds_option, threads_option
from balance_opt.solvers.milp.options import (
    INDICATORS,
    MODE_BOUNDS,
    PLANS,
    SELECTORS,
    SPLITS_BY,
    Indicators,
    ModeBounds,
    Plan,
    Selectors,
    SplitBy,
    SweepOptions,
)

# Portable ceilings (docs/solvers.md): a cutoff above any instance's users is no cutoff,
# and 2^20 parts per z, or 40 bisections of each, are far past any refutation's needs.
MAX_USERS = 10**6
MAX_SPLIT = 2**20
MAX_SPLIT_DEPTH = 40

SWEEP_KEYS = frozenset(f.name for f in fields(SweepOptions))

# What milp-scip's limits count: wall-clock seconds, or CPU seconds.
Clock = Literal["wall", "cpu"]


# the three fields whose defaults differ by backend
def _mode_bounds(default: ModeBounds) -> Option:
    return Option(default, MODE_BOUNDS, description="when each mode's optimum alone caps that mode's count")


def _plan(default: Plan) -> Option:
    return Option(default, PLANS, description="how the sweeps share a time limit (docs/milp.md)")


def _selectors(default: Selectors) -> Option:
    return Option(
        default, SELECTORS, description="which z models enforce their padding rows by binary levels"
    )


@dataclass(frozen=True)
class MilpParams:
    """The parameters every MILP backend has (``milp-highs``'s defaults); a refutation
    (docs/milp.md, "Refutation") is off unless ``cutoff`` is set."""

    threads: int = param(threads_option())
    warm_start: bool = param(Option(True, description="start from balance's schedule when no hint is given"))
    mode_bounds: ModeBounds = param(_mode_bounds("never"))
    plan: Plan = param(_plan("gap-first"))
    selectors: Selectors = param(_selectors("auto"))
    # ``library refs`` gives "best-known" here and replaces it per instance (MilpSolver.check_options)
    cutoff: int | None = param(
        Option(None, kind=int, minimum=0, maximum=MAX_USERS, description='refute "more than cutoff served"')
    )
    z_time_limit: float | None = param(seconds_option("seconds per z model solve (null: the sweep's share)"))
    split: int = param(
        Option(0, minimum=0, maximum=MAX_SPLIT, description="refutation: parts per z after a timeout")
    )
    split_by: SplitBy = param(Option("ad-count", SPLITS_BY, description="what the parts of a split divide"))
    split_depth: int = param(
        Option(0, minimum=0, maximum=MAX_SPLIT_DEPTH, description="times a part left open is bisected again")
    )
    whole_time_limit: float | None = param(
        seconds_option("with split: seconds per whole-z solve (null: z_time_limit)")
    )
    # an explicit parameter, so the journal is part of the configuration (and its hash)
    journal: str | None = param(
        Option(
            None,
            kind=str,
            description="folder of a journal of MILP answers kept by model, so a stopped refutation "
            "resumes (docs/milp.md); null: none",
        )
    )

    def sweep(self) -> SweepOptions:
        """The z sweep's options (the rules between them checked there)."""
        return SweepOptions.from_options(asdict(self))


@dataclass(frozen=True)
class CpSatParams(MilpParams):
    """``milp-cpsat``: with selectors, 8 workers proved a false infeasibility (docs/milp.md)."""

    threads: int = param(threads_option(description="CP-SAT's workers (num_workers)"))
    mode_bounds: ModeBounds = param(_mode_bounds("always"))
    plan: Plan = param(_plan("plain"))
    selectors: Selectors = param(_selectors("never"))
    indicators: Indicators = param(
        Option(
            "enforce",
            INDICATORS,
            description="indicator rows enforced natively or as data-derived big-M rows",
        )
    )


@dataclass(frozen=True)
class ScipParams(MilpParams):
    """``milp-scip``: SCIP's branch and bound is sequential, so one thread only."""

    threads: int = param(Option(1, choices=(1,), description="SCIP's branch and bound is sequential: 1 only"))
    clock: Clock = param(
        Option(
            "wall",
            get_args(Clock),
            description="what limits count: wall-clock seconds, or CPU seconds (for runs that may be paused)",
        )
    )


__all__ = [
    "MAX_SPLIT",
    "MAX_SPLIT_DEPTH",
    "MAX_USERS",
    "SWEEP_KEYS",
    "CpSatParams",
    "MilpParams",
    "ScipParams",
]
