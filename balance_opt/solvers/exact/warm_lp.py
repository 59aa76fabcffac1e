"""The relaxed box LP of one z kept in one HiGHS object, re-solved from a parent's basis.

All boxes of a z share one column and row structure (every eligible user, every level
of the hulls); a box only changes column bounds (non-candidates fixed to 0), the cost and
memory coefficients of the users (their paddings), the weights of the min-hull levels
(the box's top limit) and the right-hand sides. A child box then starts from its
parent's optimal basis, which typically needs a few dozen simplex iterations instead of
hundreds from scratch. The program is the same as :func:`boxes._build` with
``RELAX`` (``tests/test_exact.py`` checks that both give the same value).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from balance_opt.solvers.common.output import quiet_stdout
from balance_opt.solvers.exact.boxes import Box, IntArray, ModeCaps, Terms, ZData
from balance_opt.solvers.exact.highs_lp import Program

GB = 1e-9  # memory row in GB


class WarmLp:
    """One z's relaxed LP; :meth:`solve` bounds a box from an optional starting basis."""

    def __init__(self, zd: ZData) -> None:
        self.zd = zd
        self.ad, self.sd = zd.ad, zd.sd
        self.beta_l = zd.inst.llm.beta_s
        p = self._program()
        self.h = _highs(p)
        self._xy = np.concatenate((self.x, self.y)).astype(np.int32)
        # the coefficients HiGHS holds in each changing row (NaN: not set through _set yet)
        self._coef = {int(r): np.full(len(p.obj), np.nan) for r in self.rows}

    def _program(self) -> Program:
        """The columns and rows shared by every box of the z; records where each part lies."""
        inst = self.zd.inst
        beta_l = self.beta_l
        per_iter = beta_l + inst.server.draft_length * inst.slm.beta_s
        p = Program()
        self.x = p.columns(self.ad.size, 1.0, 0.0, 1.0, False)
        self.y = p.columns(self.sd.size, 1.0, 0.0, 1.0, False)
        self.lv_a = np.unique(inst.output_tokens[self.ad]).astype(np.float64)
        self.lv_s = np.unique(inst.sd_iterations[self.sd]).astype(np.float64)
        ha, wa = _levels(p, self.x, inst.output_tokens[self.ad].astype(np.float64))
        hs, ws = _levels(p, self.y, inst.sd_iterations[self.sd].astype(np.float64))
        self.ha, self.hs = ha, hs
        self.ua, self.va = _levels(p, self.x, self.zd.loose[self.ad], rising=False)
        self.us, self.vs = _levels(p, self.y, self.zd.loose[self.sd], rising=False)
        row0 = len(p.rlo)  # AD time (17), SD time (19), memory (21d), the two caps
        p.row(np.concatenate((self.x, ha, self.ua)), np.concatenate((np.ones(self.x.size), beta_l * wa,
              np.zeros(self.ua.size))), -math.inf, 0.0)  # fmt: skip
        p.row(np.concatenate((self.y, hs, self.us)), np.concatenate((np.ones(self.y.size), per_iter * ws,
              np.zeros(self.us.size))), -math.inf, 0.0)  # fmt: skip
        p.row(np.concatenate((self.x, self.y)), np.ones(self.x.size + self.y.size), -math.inf, 0.0)
        p.row(
            np.concatenate((self.x, ha)),
            np.concatenate((np.ones(self.x.size), np.zeros(ha.size))),
            -math.inf,
            0.0,
        )
        p.row(
            np.concatenate((self.y, hs)),
            np.concatenate((np.ones(self.y.size), np.zeros(hs.size))),
            -math.inf,
            0.0,
        )
        self.rows = np.arange(row0, row0 + 5, dtype=np.int32)
        _, ia, is_ = np.intersect1d(self.ad, self.sd, return_indices=True)
        p.pairs(self.x[ia], self.y[is_], 1.0, 1.0, 1.0)
        return p

    def solve(self, t: Terms, cap_a: ModeCaps, cap_s: ModeCaps, basis: Any | None) -> tuple[float, Any]:
        """The LP value of the box with terms ``t``, and the optimal basis to start children from."""
        h: Any = self.h  # (changeRowsBounds is missing from highspy's stubs)
        xa = np.searchsorted(self.ad, t.ua)
        ys = np.searchsorted(self.sd, t.us)
        ub = np.zeros(self.x.size + self.y.size)
        ub[xa] = 1.0
        ub[self.x.size + ys] = 1.0
        h.changeColsBounds(self._xy.size, self._xy, np.zeros(self._xy.size), ub)
        r_ad, r_sd, r_mem, r_ca, r_cs = self.rows.tolist()
        # a non-candidate is fixed to 0, so its coefficients may keep their last values
        self._set(r_ad, self.x[xa], t.ca)
        self._set(r_sd, self.y[ys], t.cs)
        self._set(r_mem, np.concatenate((self.x[xa], self.y[ys])), np.concatenate((t.ma, t.ms)) * GB)
        self._set(r_ad, self.ua, _min_weights(self.va, t.da))
        self._set(r_sd, self.us, _min_weights(self.vs, t.ds))
        weights_a, top_a = cap_a.row(self.lv_a)
        weights_s, top_s = cap_s.row(self.lv_s)
        self._set(r_ca, self.ha, weights_a)
        self._set(r_cs, self.hs, weights_s)
        rhs = np.array([t.da, t.ds - self.beta_l, t.room * GB, top_a, top_s])
        h.changeRowsBounds(5, self.rows, np.full(5, -math.inf), rhs)
        if basis is not None:
            h.setBasis(basis)
        h.run()
        if h.getModelStatus() != _status().kOptimal:
            infeasible = h.getModelStatus() == _status().kInfeasible
            return (-math.inf if infeasible else math.inf), None
        return float(h.getInfo().objective_function_value), h.getBasis()

    def _set(self, row: int, cols: IntArray, values: Any) -> None:
        """Set the coefficients of ``row`` in ``cols``, calling HiGHS only where one changes."""
        cur = self._coef[row]
        changed = cur[cols] != values
        for c, v in zip(cols[changed].tolist(), values[changed].tolist(), strict=True):
            self.h.changeCoeff(row, c, v)
        cur[cols[changed]] = values[changed]


def _highs(p: Program) -> Any:
    """A HiGHS object holding ``p``, set up for many warm-started re-solves."""
    import highspy

    with quiet_stdout():
        h = highspy.Highs()
    for key, value in (("output_flag", False), ("threads", 1), ("presolve", "off")):
        h.setOptionValue(key, value)
    h.setOptionValue("primal_feasibility_tolerance", 1e-9)
    h.setOptionValue("dual_feasibility_tolerance", 1e-9)  # the LP value is a bound: keep it close
    # a child needs a few dozen iterations from its parent's basis; exact steepest-edge
    # weights cost more to set up than they save there (measured: 15% less LP time)
    h.setOptionValue("simplex_dual_edge_weight_strategy", 1)
    order = np.lexsort((np.asarray(p.rows), np.asarray(p.cols)))
    cols = np.asarray(p.cols, dtype=np.int64)[order]
    n = len(p.obj)
    h.passModel(
        n, len(p.rlo), len(order), 1, -1, 0.0,
        np.asarray(p.obj), np.asarray(p.lb), np.asarray(p.ub), np.asarray(p.rlo), np.asarray(p.rhi),
        np.searchsorted(cols, np.arange(n + 1)).astype(np.int32),
        np.asarray(p.rows, dtype=np.int32)[order], np.asarray(p.vals)[order], np.zeros(n, dtype=np.int32),
    )  # fmt: skip
    return h


def _status() -> Any:
    import highspy

    return highspy.HighsModelStatus


def _levels(p: Program, b: IntArray, values: Any, rising: bool = True) -> tuple[IntArray, Any]:
    """Hull levels over the distinct ``values`` with ``b_k <= level(k)``.

    Rising (a max): ``h_{n+1} <= h_n``, returns the levels and their steps. Falling (a
    min): ``u_n <= u_{n+1}``, returns the levels and their values (weights are set per box).
    """
    vals, level = np.unique(values, return_inverse=True)
    h = p.columns(vals.size, 0.0, 0.0, 1.0, False)
    if vals.size > 1:
        if rising:
            p.pairs(h[1:], h[:-1], 1.0, -1.0, 0.0)
        else:
            p.pairs(h[:-1], h[1:], 1.0, -1.0, 0.0)
    p.pairs(b, h[level], 1.0, -1.0, 0.0)
    return h, (np.diff(np.concatenate(([0.0], vals))) if rising else vals)


def _min_weights(vals: Any, top: float) -> Any:
    """Weights ``max(0, min(v_{n+1}, top) - v_n)`` of a min's levels under ``top``."""
    nxt = np.minimum(np.append(vals[1:], top), top)
    return np.maximum(nxt - vals, 0.0)


__all__ = ["Box", "WarmLp"]
