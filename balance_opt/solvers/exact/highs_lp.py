"""A small linear (or mixed-binary) program handed to HiGHS as numpy arrays.

The box bounds of :mod:`.boxes` solve thousands of tiny programs; building them as
triplets and passing them to ``highspy`` directly costs well under a millisecond, where
a modelling layer would cost more than the solve.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from balance_opt.solvers.common.output import quiet_stdout

FloatArray = NDArray[np.float64]

# A count objective: an LP value v bounds the integer optimum by floor(v + eps). HiGHS's
# optimal LP objective is within ~1e-7 of the exact one on these well-scaled rows.
BOUND_EPS = 1e-5


@dataclass
class Program:
    """``max sum(obj * v)`` over ``lb <= v <= ub`` and ``rlo <= A v <= rhi`` (rows as triplets)."""

    obj: list[float] = field(default_factory=list)
    lb: list[float] = field(default_factory=list)
    ub: list[float] = field(default_factory=list)
    binary: list[bool] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)
    cols: list[int] = field(default_factory=list)
    vals: list[float] = field(default_factory=list)
    rlo: list[float] = field(default_factory=list)
    rhi: list[float] = field(default_factory=list)

    def columns(self, n: int, obj: float, lb: float, ub: float, binary: bool) -> NDArray[np.int64]:
        """Add ``n`` columns; their indices."""
        start = len(self.obj)
        self.obj += [obj] * n
        self.lb += [lb] * n
        self.ub += [ub] * n
        self.binary += [binary] * n
        return np.arange(start, start + n, dtype=np.int64)

    def row(self, cols: NDArray[np.int64], vals: FloatArray, lo: float, hi: float) -> None:
        """One row ``lo <= sum(vals * v[cols]) <= hi``."""
        if len(cols) != len(vals):
            raise ValueError(f"a row with {len(cols)} columns and {len(vals)} coefficients")
        r = len(self.rlo)
        self.rows += [r] * len(cols)
        self.cols += [int(c) for c in cols]
        self.vals += [float(v) for v in vals]
        self.rlo.append(lo)
        self.rhi.append(hi)

    def pairs(self, a: NDArray[np.int64], b: NDArray[np.int64], ca: float, cb: float, hi: float) -> None:
        """Rows ``ca * v[a_i] + cb * v[b_i] <= hi``, one per i (vectorized)."""
        r0 = len(self.rlo)
        n = len(a)
        idx = np.arange(r0, r0 + n)
        self.rows += np.repeat(idx, 2).tolist()
        self.cols += np.column_stack((a, b)).ravel().tolist()
        self.vals += [ca, cb] * n
        self.rlo += [-math.inf] * n
        self.rhi += [hi] * n


@dataclass(frozen=True)
class Solved:
    """What HiGHS proved: the bound (LP value or MIP dual bound) and a point, if any."""

    bound: float  # -inf when infeasible
    values: FloatArray | None
    optimal: bool


def solve(p: Program, integer: bool, time_limit: float | None = None) -> Solved:
    """Solve ``p`` with HiGHS (one thread); binaries stay continuous unless ``integer``."""
    import highspy

    with quiet_stdout():
        h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.setOptionValue("primal_feasibility_tolerance", 1e-9)
    h.setOptionValue("dual_feasibility_tolerance", 1e-9)  # the LP value is a bound: keep it close
    h.setOptionValue("mip_feasibility_tolerance", 1e-9)
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("mip_abs_gap", 1.0 - 1e-6)  # a count: a gap below 1 is closed
    if not integer:  # tiny LPs: presolve costs more than it saves
        h.setOptionValue("presolve", "off")
    if time_limit is not None:
        h.setOptionValue("time_limit", max(float(time_limit), 1e-3))
    n, m = len(p.obj), len(p.rlo)
    order = np.lexsort((np.asarray(p.rows), np.asarray(p.cols)))
    cols = np.asarray(p.cols, dtype=np.int64)[order]
    start = np.searchsorted(cols, np.arange(n + 1)).astype(np.int32)
    index = np.asarray(p.rows, dtype=np.int32)[order]
    value = np.asarray(p.vals, dtype=np.float64)[order]
    integrality = np.asarray([1 if (b and integer) else 0 for b in p.binary], dtype=np.int32)
    h.passModel(
        n, m, len(value), 1, -1, 0.0,  # column-wise matrix, maximize, no offset
        np.asarray(p.obj), np.asarray(p.lb), np.asarray(p.ub),
        np.asarray(p.rlo), np.asarray(p.rhi), start, index, value, integrality,
    )  # fmt: skip
    h.run()
    status = h.getModelStatus()
    S = highspy.HighsModelStatus
    if status == S.kInfeasible:
        return Solved(-math.inf, None, True)
    if status == S.kModelEmpty:  # no columns: the zero point, if every row admits it
        empty = all(lo <= 0.0 <= hi for lo, hi in zip(p.rlo, p.rhi, strict=True))
        return Solved(0.0 if empty else -math.inf, np.zeros(n) if empty else None, True)
    info = h.getInfo()
    has_point = info.primal_solution_status == 2  # kSolutionStatusFeasible
    values = np.asarray(h.getSolution().col_value) if has_point else None
    if integer:
        bound = float(info.mip_dual_bound)
        return Solved(bound, values, status == S.kOptimal)
    if status != S.kOptimal:  # an LP that stopped early proves nothing
        return Solved(math.inf, None, False)
    return Solved(float(info.objective_function_value), values, True)


def count_bound(value: float) -> int | float:
    """The integer bound of a count objective (``-inf`` stays, ``inf`` stays)."""
    if math.isinf(value):
        return value
    return math.floor(value + BOUND_EPS)
