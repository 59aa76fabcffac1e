"""Threshold boxes of one z and the programs that bound or solve them.

Fix z in (0, 1) and consider the schedules whose AD and SD sets are both non-empty. Each
is described by its *thresholds*: the tightest latency limit of its AD users ``DA``
(``r_k = T_k (1 + REL_TOL) - down_k``, (20)), its padded input ``L1`` (5), the tightest SD
limit ``DS``, the SD padded input ``L3`` and padded acceptance ``L4`` (9). A *box* gives
each threshold a range of the values the users take; the boxes of a split partition
the schedules.

Inside a box the P1 rows relax to a two-mode knapsack (docs/exact.md):

- AD user k is a candidate when ``r_k >= DA_lo`` and ``LI_k <= L1_hi``; its compute
  (26) is at least ``c_k(max(L1_lo, LI_k))`` and its memory (15) at least
  ``(max(L1_lo, LI_k) + LO_k) kv^L``; latency ``tau_up + sum c + beta^L L2 <= DA_hi`` (17).
- SD user k is a candidate when ``r_k >= DS_lo``, ``LI_k <= L3_hi``, ``LA_k <= L4_hi``;
  its share (30) and memory (16) are taken at ``max(L3_lo, LI_k)``, ``max(L4_lo, LA_k)``;
  latency ``tau_up + sum c + (beta^L + LD beta^S) Nmax + beta^L <= DS_hi`` (19), (32).
- One memory row over both modes (21d); ``x_k + y_k <= 1``.

``L2``, ``Nmax`` and the upload maxima are variables over the convex hull of a max
(docs/milp.md), exact for binary x and y. Every cost only grows with the paddings, so
the program's optimum bounds every schedule of the box; with binaries and the box
reduced to single values it is that box's exact optimum up to the ``L4`` range.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from balance_opt.instance import FloatArray, Instance
from balance_opt.model import (
    BOUND_TOL,
    ad_user_costs,
    ad_user_memory,
    latency_limits,
    sd_user_costs,
    sd_user_memory,
    tolerated,
)
from balance_opt.solvers.common.eligibility import eligible_users
from balance_opt.solvers.exact.highs_lp import Program

IntArray = NDArray[np.int64]
DIMS = ("DA", "L1", "DS", "L3", "L4")
Box = tuple[tuple[int, int], ...]  # (lo, hi) value indices, one pair per name in DIMS


@dataclass(frozen=True)
class Side:
    """The relaxed or the restricted reading of a box (see :meth:`ZData.program`)."""

    relax: bool


RELAX, RESTRICT = Side(True), Side(False)


class ZData:
    """Everything about one z that does not depend on the box, computed once."""

    def __init__(self, inst: Instance, z: float) -> None:
        self.inst, self.z = inst, float(z)
        ad, sd = eligible_users(inst, z)
        self.ad = np.asarray(ad, dtype=np.int64)
        self.sd = np.asarray(sd, dtype=np.int64)
        self.limit = latency_limits(inst)  # r_k (20), (21c)
        self.loose = self.limit + BOUND_TOL * inst.deadline_s
        weights = inst.server.memory_bytes - inst.free_memory(z)
        self.memory = tolerated(inst.server.memory_bytes) - weights  # (21d)
        self.memory_loose = self.memory + BOUND_TOL * inst.server.memory_bytes
        li, la = inst.input_tokens.astype(np.float64), inst.accepted_drafts
        self.values = {
            "DA": np.unique(self.limit[self.ad]),
            "L1": np.unique(li[self.ad]),
            "DS": np.unique(self.limit[self.sd]),
            "L3": np.unique(li[self.sd]),
            "L4": np.unique(la[self.sd]),
        }
        # each tightest-limit value's latency budget: the loosest copy of that limit
        self.budget = {"DA": self._budgets(self.ad, "DA"), "DS": self._budgets(self.sd, "DS")}
        self._tables()

    def _budgets(self, users: IntArray, dim: str) -> FloatArray:
        out = np.full(self.values[dim].size, -np.inf)
        np.maximum.at(out, np.searchsorted(self.values[dim], self.limit[users]), self.loose[users])
        return out

    def _tables(self) -> None:
        """Costs per padding value: AD ``c[j, k]`` at ``L1 = L1v[j]``; SD affine in L4.
        (A mode without eligible users gets empty tables: z = 0 gives AD no compute.)"""
        inst, z = self.inst, self.z
        self.ad_cost = np.zeros((0, inst.num_users))
        self.sd_cost0 = self.sd_cost1 = np.zeros((0, inst.num_users))
        if self.ad.size:
            self.ad_cost = ad_user_costs(inst, self.values["L1"][:, None], inst.output_tokens[None, :], z)
        if self.sd.size == 0:
            return
        n = inst.sd_iterations
        l3 = self.values["L3"]
        base = np.stack([sd_user_costs(inst, float(v), 0.0, n, z) for v in l3])
        unit = np.stack([sd_user_costs(inst, float(v), 1.0, n, z) for v in l3])
        # the share (30) is affine in L4 (the prefixes (10) are); the bound slack covers rounding
        self.sd_cost0, self.sd_cost1 = base, unit - base

    def full(self) -> Box:
        """Every value of every threshold (an empty range ``(0, -1)`` for a mode without users)."""
        return tuple((0, len(self.values[d]) - 1) for d in DIMS)

    def root(self) -> Box | None:
        """The box of every schedule with both modes non-empty; None when there is none."""
        if self.ad.size == 0 or self.sd.size == 0 or self.z in (0.0, 1.0):
            return None
        return self.full()

    def program(self, box: Box, side: Side, upload: bool = True) -> BoxProgram:
        """The box's program, its columns and a quick count bound.

        ``RELAX`` bounds every schedule of the box (lowest costs, loosest limits);
        ``RESTRICT`` is a restriction (highest costs, tightest limits): each of its
        integer points is a P1-feasible schedule, up to float rounding that the
        evaluator judges. Without ``upload`` the upload maxima (1), (2) are left out (a
        relaxation, and a smaller program: the LP bound of :mod:`.warm_lp`).
        """
        return _build(self.inst, self.terms(box, side), side, upload)

    def terms(self, box: Box, side: Side) -> Terms:
        """Candidates, per-user costs and memory, and the two latency limits of a box."""
        inst, v = self.inst, self.values
        (da0, da1), (l10, l11), (ds0, ds1), (l30, l31), (l40, l41) = box
        li, lo, la, nk = inst.input_tokens, inst.output_tokens, inst.accepted_drafts, inst.sd_iterations
        ad, sd = self.ad, self.sd
        ua = ad[(self.limit[ad] >= v["DA"][da0]) & (li[ad] <= v["L1"][l11])]
        us = sd[(self.limit[sd] >= v["DS"][ds0]) & (li[sd] <= v["L3"][l31]) & (la[sd] <= v["L4"][l41])]
        # paddings: the box's low end, or the user's own value if larger (relax); the high end
        j1 = np.maximum(np.searchsorted(v["L1"], li[ua]), l10) if side.relax else np.full(ua.size, l11)
        j3 = np.maximum(np.searchsorted(v["L3"], li[us]), l30) if side.relax else np.full(us.size, l31)
        l4 = np.maximum(la[us], v["L4"][l40]) if side.relax else np.full(us.size, v["L4"][l41])
        n = nk[us]
        lim = self.loose if side.relax else self.limit
        da = lim[ad][self.limit[ad] == v["DA"][da1 if side.relax else da0]].max()
        ds = lim[sd][self.limit[sd] == v["DS"][ds1 if side.relax else ds0]].max()
        room = self.memory_loose
        if not side.relax:  # keep clear of the evaluator's rounding at the very edge
            da, ds, room = da * (1.0 - 1e-12), ds * (1.0 - 1e-12), self.memory * (1.0 - 1e-12)
        return Terms(
            ua=ua,
            us=us,
            ca=self.ad_cost[j1, ua],
            ma=ad_user_memory(inst, v["L1"][j1], lo[ua]),
            cs=self.sd_cost0[j3, us] + l4 * self.sd_cost1[j3, us],
            ms=sd_user_memory(inst, v["L3"][j3], l4, n),
            n=n,
            da=float(da),
            ds=float(ds),
            room=float(room),
            limit_a=lim[ua],
            limit_s=lim[us],
        )


@dataclass(frozen=True)
class Terms:
    ua: IntArray  # AD candidates
    us: IntArray  # SD candidates
    ca: FloatArray  # AD compute seconds per candidate (26)
    ma: FloatArray  # AD KV bytes per candidate (15)
    cs: FloatArray  # SD share of compute seconds per candidate (30)
    ms: FloatArray  # SD KV bytes per candidate (16)
    n: IntArray  # SD iterations of the SD candidates
    da: float  # AD latency limit of the box
    ds: float  # SD latency limit of the box
    room: float  # bytes for both KV caches (21d)
    limit_a: FloatArray  # each candidate's own limit
    limit_s: FloatArray


def _build(inst: Instance, t: Terms, side: Side, upload: bool) -> BoxProgram:
    """The program of :meth:`ZData.program` from a box's terms."""
    beta_l, per_iter = inst.llm.beta_s, inst.llm.beta_s + inst.server.draft_length * inst.slm.beta_s
    both = np.intersect1d(t.ua, t.us, return_indices=True)
    cap_a, cap_s, quick = caps(inst, t)
    p = Program()
    x = p.columns(t.ua.size, 1.0, 0.0, 1.0, True)
    y = p.columns(t.us.size, 1.0, 0.0, 1.0, True)
    lo = inst.output_tokens[t.ua].astype(np.float64)
    hull_a, hull_s = _hull(p, x, lo, beta_l), _hull(p, y, t.n.astype(np.float64), per_iter)
    terms_a, terms_s = [(x, t.ca), hull_a], [(y, t.cs), hull_s]
    if side.relax:  # the tightest limit of the served users: its hull over the box's range
        terms_a.append(_min_hull(p, x, np.minimum(t.limit_a, t.da), t.da))
        terms_s.append(_min_hull(p, y, np.minimum(t.limit_s, t.ds), t.ds))
    if upload:
        terms_a.append(_hull(p, x, inst.upload_s[t.ua].astype(np.float64), 1.0))
        terms_s.append(_hull(p, y, inst.upload_s[t.us].astype(np.float64), 1.0))
    for terms, rhs in ((terms_a, t.da), (terms_s, t.ds - beta_l)):  # (17); (19), (32)
        p.row(np.concatenate([c for c, _ in terms]), np.concatenate([w for _, w in terms]), -np.inf, rhs)
    scale = 1e-9  # memory row (21d) in GB
    p.row(np.concatenate((x, y)), np.concatenate((t.ma, t.ms)) * scale, -np.inf, t.room * scale)
    for b, hull, values, cap in ((x, hull_a, lo, cap_a), (y, hull_s, t.n, cap_s)):
        weights, rhs = cap.row(np.unique(values).astype(np.float64))
        p.row(np.concatenate((b, hull[0])), np.concatenate((np.ones(b.size), weights)), -np.inf, rhs)
    p.pairs(x[both[1]], y[both[2]], 1.0, 1.0, 1.0)
    return BoxProgram(p, x, y, t.ua, t.us, quick)


@dataclass(frozen=True)
class ModeCaps:
    """The most users one mode of a box can serve with its maximum key (``L2`` for AD,
    ``Nmax`` for SD) at most each candidate key value: nondecreasing in the key."""

    keys: IntArray
    by_key: IntArray

    @property
    def total(self) -> int:
        return int(self.by_key[-1]) if self.by_key.size else 0

    def at(self, levels: FloatArray) -> FloatArray:
        """The cap with the maximum key at most each of ``levels`` (0 below every key)."""
        i = np.searchsorted(self.keys, levels, side="right") - 1
        return (
            np.where(i >= 0, self.by_key[np.maximum(i, 0)], 0) if self.by_key.size else np.zeros(len(levels))
        )

    def row(self, levels: FloatArray) -> tuple[FloatArray, float]:
        """The level row ``sum b - sum_n (cap(v_n) - cap(v_{n-1})) h_n <= 0`` (``cap(v_{-1})
        = 0``): the weights of the levels ``h`` and the right-hand side. For a schedule with
        maximum key ``v_j`` the levels up to j are 1 and the rest 0, so it reads
        ``sum b <= cap(v_j)``; with the mode empty every level may be 0. The count and the
        maximum bound each other in the LP, and a fractional count pays for its levels.
        Levels below every candidate's key get weight 0, so extra levels change nothing."""
        at = self.at(levels).astype(np.float64)
        if at.size == 0:
            return np.zeros(0), 0.0
        return -np.diff(np.concatenate(([0.0], at))), 0.0


def caps(inst: Instance, t: Terms) -> tuple[ModeCaps, ModeCaps, int]:
    """Integer single-mode caps of a box (the cheapest candidates under each ``L2``,
    resp. ``Nmax``) and their sum capped by the number of candidates."""
    beta_l, per_iter = inst.llm.beta_s, inst.llm.beta_s + inst.server.draft_length * inst.slm.beta_s
    cap_a = _prefix_cap(t.ca, inst.output_tokens[t.ua], t.da, beta_l, t.ma, t.room)
    cap_s = _prefix_cap(t.cs, t.n, t.ds - beta_l, per_iter, t.ms, t.room)
    union = np.union1d(t.ua, t.us).size
    return cap_a, cap_s, min(cap_a.total + cap_s.total, union)


@dataclass(frozen=True)
class BoxProgram:
    """A box's program, its x and y columns with their users, and a cheap count bound."""

    program: Program
    x: IntArray
    y: IntArray
    ad_users: IntArray
    sd_users: IntArray
    quick: int  # single-mode caps summed, at most the candidates: no program needed


def _prefix_cap(
    cost: FloatArray, key: IntArray, budget: float, per_key: float, mem: FloatArray, room: float
) -> ModeCaps:
    """Most candidates one mode can hold: for each key maximum ``v`` (L2 or Nmax), the
    cheapest candidates with ``key <= v`` under ``budget - per_key v``, and the least
    memory of that many under ``room``. Every feasible set is counted (a relaxation).
    """
    keys = np.unique(key)
    if cost.size == 0:
        return ModeCaps(keys, np.zeros(0, dtype=np.int64))
    order = np.argsort(cost, kind="stable")
    member = key[order][None, :] <= keys[:, None]
    spent = np.cumsum(np.where(member, cost[order], 0.0), axis=1)
    rank = np.cumsum(member, axis=1)
    fits = member & (spent <= (budget - per_key * keys)[:, None])
    by_time = np.where(fits, rank, 0).max(axis=1)
    least = np.cumsum(np.sort(mem))
    by_memory = int(np.searchsorted(least, room, side="right"))
    return ModeCaps(keys, np.minimum(np.maximum.accumulate(by_time), by_memory))


def _hull(p: Program, b: IntArray, values: FloatArray, weight: float) -> tuple[IntArray, FloatArray]:
    """Levels of ``max_k values_k b_k`` (the concave envelope, docs/milp.md).

    Adds levels ``h_n`` over the distinct values with ``h_{n+1} <= h_n`` and
    ``b_k <= h_{level(k)}``; returns the columns and weights of ``weight * max`` as
    ``sum_n weight (v_n - v_{n-1}) h_n``.
    """
    if b.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    vals, level = np.unique(values, return_inverse=True)
    h = p.columns(vals.size, 0.0, 0.0, 1.0, False)
    if vals.size > 1:
        p.pairs(h[1:], h[:-1], 1.0, -1.0, 0.0)
    p.pairs(b, h[level], 1.0, -1.0, 0.0)
    steps = np.diff(np.concatenate(([0.0], vals)))
    return h, weight * steps


def _min_hull(p: Program, b: IntArray, values: FloatArray, top: float) -> tuple[IntArray, FloatArray]:
    """Levels of ``top - min(top, min_k values_k b_k)`` (the convex envelope of a min).

    Levels ``u_n`` over the distinct values below ``top`` with ``u_n <= u_{n+1}`` and
    ``b_k <= u_{level(k)}``; the min is ``top - sum_n (v_{n+1} - v_n) u_n``.
    """
    vals, level = np.unique(values, return_inverse=True)
    if vals.size == 0 or vals[-1] < top:
        vals = np.append(vals, top)
    below = level < vals.size - 1
    u = p.columns(vals.size - 1, 0.0, 0.0, 1.0, False)
    if u.size > 1:
        p.pairs(u[:-1], u[1:], 1.0, -1.0, 0.0)
    p.pairs(b[below], u[level[below]], 1.0, -1.0, 0.0)
    return u, np.diff(vals)
