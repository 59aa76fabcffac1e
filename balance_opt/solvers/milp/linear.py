"""A linear model in plain data: variables, rows and the records of level variables.

:mod:`.formulation` fills a :class:`Formulation` with P1's rows at one z; the backends
translate it, and :mod:`.warm_start` evaluates rows at a point.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from balance_opt.evaluator import AD, SD, Schedule

US_PER_S = 1e6  # time rows are in microseconds
BYTES_PER_MB = 1e6  # memory rows are in megabytes

# Row and variable units; each backend picks its own scale per unit.
TIME, MEMORY, TOKENS, COUNT = "time", "memory", "tokens", "count"


@dataclass(frozen=True)
class Selector:
    """Binary levels ``a_n = [the maximum >= v_n]`` over the distinct values ``v_n``.

    Rows: ``a_{n+1} <= a_n`` (a chain) and ``b_k <= a_{level(k)}`` (a served user lifts
    the maximum to its own value). Candidate row n is enforced by ``a_n``; when
    ``a_n = 0`` every user with value >= v_n is out, which bounds the row's big-M. In the
    branch and bound, ``a_n`` splits on the padded length itself.
    """

    binaries: tuple[int, ...]
    values: tuple[float, ...]  # per binary
    distinct: tuple[float, ...]  # ascending
    avars: tuple[int, ...]  # one binary per distinct value


@dataclass(frozen=True)
class Hull:
    """Level variables of a maximum (or minimum) of served values, as a convex hull.

    ``h_n`` means "some served value is >= level n" (``max``; decreasing in n) or
    "... <= level n" (``min``; increasing in n). For binary ``b`` they are binary at
    the tightest point, and ``max = sum_n (level_n - level_{n-1}) h_n``, resp.
    ``min = level_last - sum_n (level_{n+1} - level_n) h_n``: the concave / convex
    envelope of the max / min over the binaries, tighter than one big-M row per user.
    """

    sense: str  # "max" | "min"
    binaries: tuple[int, ...]
    values: tuple[float, ...]  # per binary
    levels: tuple[float, ...]  # ascending distinct values
    hvars: tuple[int, ...]


@dataclass(frozen=True)
class Var:
    """A decision variable: ``binary`` or ``continuous`` in ``[lb, ub]``.

    ``role`` says how a continuous variable is pinned down: ``max`` variables are bounded
    below by their defining rows (a maximum or a sum), ``min`` variables above (the
    tightest deadline of a mode). Integer backends round ``max`` down and ``min`` up.
    """

    name: str
    kind: str  # "binary" | "continuous"
    lb: float
    ub: float
    unit: str = COUNT
    role: str = ""  # "max" | "min" for continuous variables


@dataclass(frozen=True)
class Row:
    """``sum coef * var <= rhs``, enforced only when binary ``indicator`` is 1 (if given).

    ``big_m`` bounds ``lhs - rhs`` whenever the indicator is 0, so the big-M form
    ``lhs + big_m * ind <= rhs + big_m`` is exact.
    """

    name: str
    index: tuple[int, ...]
    coef: tuple[float, ...]
    rhs: float
    unit: str
    indicator: int | None = None
    big_m: float = 0.0


@dataclass
class Formulation:
    """The MILP of P1 at one z: maximize the number of served users."""

    z: float
    use_selectors: bool = False
    vars: list[Var] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    ad_users: list[int] = field(default_factory=list)  # user position of each x variable
    sd_users: list[int] = field(default_factory=list)  # user position of each y variable
    x: list[int] = field(default_factory=list)  # variable index of x_k (AD) per ad_users
    y: list[int] = field(default_factory=list)  # variable index of y_k (SD) per sd_users
    selectors: list[Selector] = field(default_factory=list)
    hulls: list[Hull] = field(default_factory=list)

    @property
    def objective(self) -> list[int]:
        """Variables of the objective ``sum x + sum y`` (each with coefficient 1)."""
        return self.x + self.y

    @property
    def count_bound(self) -> int:
        """Users eligible for some mode: a bound on this z's optimum without solving."""
        return len(set(self.ad_users) | set(self.sd_users))

    def add_var(self, name: str, kind: str, lb: float, ub: float, unit: str = COUNT, role: str = "") -> int:
        self.vars.append(Var(name, kind, float(lb), float(ub), unit, role))
        return len(self.vars) - 1

    def add_row(
        self,
        name: str,
        terms: dict[int, float],
        rhs: float,
        unit: str,
        indicator: int | None = None,
        big_m: float = 0.0,
    ) -> None:
        keep = {i: float(c) for i, c in terms.items() if c != 0.0}
        self.rows.append(
            Row(name, tuple(keep), tuple(keep.values()), float(rhs), unit, indicator, max(0.0, float(big_m)))
        )

    def schedule(self, values: NDArray[np.float64], num_users: int) -> Schedule:
        """The schedule of a (rounded) solution vector."""
        modes = np.zeros(num_users, dtype=np.int8)
        for k, i in zip(self.ad_users, self.x, strict=True):
            if values[i] > 0.5:
                modes[k] = AD
        for k, i in zip(self.sd_users, self.y, strict=True):
            if values[i] > 0.5:
                modes[k] = SD
        return Schedule(self.z, modes)
