"""One block of Algorithm 1 or 2 for the fast implementation: bounds and exact search.

A *block* fixes the tuple components that set the contributions (``L1`` in Algorithm 1,
``(L3, L4)`` in Algorithm 2). Inside it the contribution of a user depends only on its
*key* (``LO_k`` resp. ``N_k``) and is strictly increasing in it (checked by the caller),
so the literal ``(c_k, k)`` order is the ``(key, k)`` order of the pool, and the
candidates of a tuple ``(v, t, tau)`` (``v`` is ``L2`` resp. ``N1``) are the pool users
with ``key <= v``, ``Tp >= t``, ``up <= tau``: a *prefix in key order* of the users with
``Tp >= t`` and ``up <= tau``.

Rows group the values of ``t`` by the pool's distinct ``Tp``: every ``t`` in
``(T_{g-1}, T_g]`` has the same member set ``P_g = {Tp >= T_g}``. Masked cumulative sums
(``numpy.cumsum`` over the row with non-members set to ``0.0``; adding ``0.0`` is exact)
give the literal sequential prefix sums of every subset bit for bit.

Bounds use order statistics: a subset's i-th prefix sum is never below the i-th prefix
sum of a superset (contributions are monotone in the key and float rounding is
monotone), and the budget is monotone in each of ``t``, ``tau``, ``v``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]
# budget(t, tau, v) -> time budget, elementwise (the shared primitive of primitives.py)
Budget = Callable[[Any, Any, Any], Any]


@dataclass(frozen=True)
class Hit:
    """The lexicographically first tuple of a search that reached ``served`` users."""

    served: int
    users: tuple[int, ...]  # user positions in (c_k, k) order
    tuple_key: tuple[float, float, float]  # (v, t, tau)


@dataclass(eq=False)
class Block:
    """The pool of one block in ``(key, k)`` order and its contributions."""

    users: IntArray  # user positions, sorted by (key, k)
    key: IntArray
    tp: FloatArray
    up: FloatArray
    cost: FloatArray
    mem: FloatArray
    t_vals: FloatArray  # the algorithm's t range, ascending
    budget: Budget

    @cached_property
    def rows(self) -> RowSums:
        return RowSums(self)


class RowSums:
    """Per-row masked prefix sums of a block (rows: distinct ``Tp`` of the pool, ascending)."""

    def __init__(self, blk: Block) -> None:
        self.tp_rows: FloatArray = np.unique(blk.tp)
        member = blk.tp[None, :] >= self.tp_rows[:, None]
        self.member: BoolArray = member
        self.cost_sums: FloatArray = np.cumsum(np.where(member, blk.cost, 0.0), axis=1)
        self.mem_sums: FloatArray = np.cumsum(np.where(member, blk.mem, 0.0), axis=1)
        self.rank: IntArray = np.cumsum(member, axis=1, dtype=np.int64)
        self.count: IntArray = self.rank[:, -1]
        self.upmin: FloatArray = np.where(member, blk.up, np.inf).min(axis=1)
        # distinct keys of the pool and their position ranges
        self.kvals, kstart = np.unique(blk.key, return_index=True)
        self.kend: IntArray = np.append(kstart[1:], blk.key.size)
        self.kstart: IntArray = kstart
        self.last: IntArray = self.kend[np.searchsorted(self.kvals, blk.key)] - 1

    def present(self) -> BoolArray:
        """``[g, ki]``: row g has a member whose key is ``kvals[ki]``."""
        before = np.where(self.kstart > 0, self.rank[:, np.maximum(self.kstart - 1, 0)], 0)
        return self.rank[:, self.kend - 1] > before


def frontier(blk: Block, real: bool) -> tuple[FloatArray, IntArray, FloatArray, IntArray]:
    """Step functions ``Q -> bound`` of the block's best ``d*``: (upper) and, if real, (lower).

    Each is given as ascending memory thresholds and the bound reached at or above them.
    The upper bound covers every tuple of the block; the lower bound is the ``d*`` of
    actual tuples ``(v = key_j, t = T_g, tau = max up of the members with key <= v)``.
    """
    r = blk.rows
    ub_budget = blk.budget(r.tp_rows[:, None], r.upmin[:, None], blk.key[None, :])
    ub = _step(r.member & (ub_budget >= r.cost_sums), r)
    if not real:
        return (*ub, np.zeros(0), np.zeros(0, dtype=np.int64))
    upmax = np.maximum.accumulate(np.where(r.member, blk.up, -np.inf), axis=1)[:, r.last]
    lb_budget = blk.budget(r.tp_rows[:, None], upmax, blk.key[None, :])
    return (*ub, *_step(r.member & (lb_budget >= r.cost_sums), r))


def _step(ok: BoolArray, r: RowSums) -> tuple[FloatArray, IntArray]:
    mem = r.mem_sums[ok]
    rank = r.rank[ok]
    if mem.size == 0:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    order = np.lexsort((-rank, mem))
    mem, best = mem[order], np.maximum.accumulate(rank[order])
    first = np.append(True, best[1:] > best[:-1])  # the first threshold of each new level
    return mem[first], best[first]


def step_value(thresholds: FloatArray, levels: IntArray, mem_budget: float) -> int:
    """The level of a step function (from :func:`frontier`) at memory budget ``mem_budget``."""
    i = int(np.searchsorted(thresholds, mem_budget, side="right"))
    return int(levels[i - 1]) if i > 0 else 0


def search_block(blk: Block, mem_budget: float, floor: int) -> Hit | None:
    """The literal walk over the block's tuples: the first tuple with the block's best ``d*``.

    Returns None unless that best exceeds ``floor``. Tuples are visited in lexicographic
    order ``(v, t, tau)``; a unit ``(v, row g)`` is opened only when its upper bound
    exceeds the current best, and ``v`` only when some member of the row has that key
    (otherwise an earlier ``v`` has the same candidates and a larger budget).
    """
    r = blk.rows
    present = r.present()
    best: Hit | None = None
    start = 0  # flat index (key-major) of the next unit to consider
    while True:
        units = _open_units(blk, mem_budget, floor, present)
        units = units[units >= start]
        hit = None
        for flat in units.tolist():
            ki, g = divmod(flat, r.tp_rows.size)
            hit = _unit(blk, mem_budget, floor, ki, g)
            if hit is not None:
                start = flat + 1
                break
        if hit is None:
            return best
        best, floor = hit, hit.served


def _open_units(blk: Block, mem_budget: float, floor: int, present: BoolArray) -> IntArray:
    """Flat indices ``ki * rows + g`` of the units that may reach ``floor + 1``."""
    r = blk.rows
    need = floor + 1
    rows = np.flatnonzero(r.count >= need)
    if rows.size == 0:
        return np.zeros(0, dtype=np.int64)
    j = np.argmax(r.rank[rows] >= need, axis=1)  # position of the need-th member
    s, m, k = r.cost_sums[rows, j], r.mem_sums[rows, j], blk.key[j]
    rows, s, k = rows[m <= mem_budget], s[m <= mem_budget], k[m <= mem_budget]
    if rows.size == 0:
        return np.zeros(0, dtype=np.int64)
    budget = blk.budget(r.tp_rows[rows, None], r.upmin[rows, None], r.kvals[None, :])
    ok = (budget >= s[:, None]) & (r.kvals[None, :] >= k[:, None]) & present[rows]
    g_idx, q_idx = np.nonzero(ok)
    flat = q_idx * r.tp_rows.size + rows[g_idx]
    return np.sort(flat)


def _unit(blk: Block, mem_budget: float, floor: int, ki: int, g: int) -> Hit | None:
    """Exact ``d*`` of every tuple with ``v = kvals[ki]`` and ``t`` in row g's range."""
    r = blk.rows
    v = r.kvals[ki]
    idx = np.flatnonzero(r.member[g, : r.kend[ki]])
    if idx.size <= floor:
        return None
    up = blk.up[idx]
    taus = np.unique(up)  # tight tau: the largest upload time among the candidates
    cand = up[None, :] <= taus[:, None]
    cost_sums = np.cumsum(np.where(cand, blk.cost[idx], 0.0), axis=1)
    mem_sums = np.cumsum(np.where(cand, blk.mem[idx], 0.0), axis=1)
    fits = cand & (mem_budget >= mem_sums)
    top = blk.budget(r.tp_rows[g], taus, v)  # t = T_g: the loosest t of the row
    d_top = (fits & (top[:, None] >= cost_sums)).sum(axis=1)
    served = int(d_top.max())
    if served <= floor:
        return None
    # d* is non-decreasing in t within the row: find the smallest t reaching `served`
    lo = r.tp_rows[g - 1] if g > 0 else -np.inf
    tt = blk.t_vals[(blk.t_vals > lo) & (blk.t_vals <= r.tp_rows[g])]
    rows = np.flatnonzero(d_top == served)
    j = np.argmax(np.cumsum(cand[rows], axis=1) >= served, axis=1)
    s_need = cost_sums[rows, j]
    budgets = blk.budget(tt[:, None], taus[rows][None, :], v)
    reach = budgets >= s_need[None, :]
    it, ir = np.unravel_index(int(np.argmax(reach)), reach.shape)
    tau_row = rows[ir]
    chosen = idx[cand[tau_row]][:served]
    users = tuple(int(u) for u in blk.users[chosen])
    return Hit(served, users, (float(v), float(tt[it]), float(taus[tau_row])))


def search_block_literal(
    blk: Block, mem_budget: float, floor: int, v_vals: FloatArray, tau_vals: FloatArray
) -> Hit | None:
    """Tuple-by-tuple walk of the block in its true ``(c_k, k)`` order.

    The fallback for a block whose contributions are not strictly increasing in the key
    (float rounding merged two keys), where the prefix structure above does not hold.
    """
    order = np.lexsort((blk.users, blk.cost))
    best: Hit | None = None
    for v in v_vals.tolist():
        for t in blk.t_vals.tolist():
            for tau in tau_vals.tolist():
                sel = order[(blk.key[order] <= v) & (blk.tp[order] >= t) & (blk.up[order] <= tau)]
                if sel.size <= floor:
                    continue
                fits = (np.cumsum(blk.cost[sel]) <= blk.budget(t, tau, v)) & (
                    np.cumsum(blk.mem[sel]) <= mem_budget
                )
                d = int(fits.sum())
                if d > floor:
                    best = Hit(d, tuple(int(u) for u in blk.users[sel[:d]]), (v, t, tau))
                    floor = d
    return best


def batch_bounds(
    key: IntArray,
    tp: FloatArray,
    up: FloatArray,
    inpool: BoolArray,
    variants: Sequence[tuple[FloatArray, FloatArray, bool]],
    budget: Budget,
    mem_budgets: FloatArray,
    floor: int = 0,
    chunk_cells: int = 1 << 21,
) -> list[tuple[IntArray, IntArray]]:
    """Bounds of many blocks over one user order at once: ``(ub, lb)`` per variant.

    Block b's pool is ``inpool[b]``; each variant gives contributions ``(cost, mem)`` of
    shape ``(blocks, users)`` and whether they are the block's own (``real``: only then is
    ``lb`` computed, else it is zero). ``ub`` and ``lb`` have shape ``(blocks, len(mem_budgets))``.
    Rows are the distinct ``Tp`` of all users (a superset of each pool's rows: an extra
    row has the members of a real row and a smaller ``t``, so it neither raises the upper
    bound nor stops the lower bound being the ``d*`` of an actual tuple). Rows with at
    most ``floor`` members of the largest pool are left out: bounds at or below ``floor``
    are reported as they are needed, as "not above floor".
    """
    nb, p = inpool.shape
    tp_rows = np.unique(tp)
    tp_rows = tp_rows[(tp[None, :] >= tp_rows[:, None]).sum(axis=1) > floor]
    if floor > 0 and tp_rows.size:
        # a row reaches floor + 1 only if its loosest budget covers the floor + 1
        # cheapest contributions of some pool (order statistics; budget is monotone)
        cheapest = np.inf
        for cost, _, _ in variants:
            s = np.cumsum(np.where(inpool, cost, 0.0), axis=1)
            at = np.argmax(np.cumsum(inpool, axis=1) > floor, axis=1)
            full = inpool.sum(axis=1) > floor
            if full.any():
                cheapest = min(cheapest, float(s[full, at[full]].min()))
        tp_rows = tp_rows[budget(tp_rows, up.min(), key.min()) >= cheapest]
    shape = (nb, mem_budgets.size)
    out = [(np.zeros(shape, dtype=np.int64), np.zeros(shape, dtype=np.int64)) for _ in variants]
    if tp_rows.size == 0:
        return out
    kvals, kstart = np.unique(key, return_index=True)
    last = np.append(kstart[1:], key.size)[np.searchsorted(kvals, key)] - 1
    step = max(1, chunk_cells // max(1, tp_rows.size * p))
    for a in range(0, nb, step):
        b = slice(a, min(nb, a + step))
        member = inpool[b, None, :] & (tp[None, None, :] >= tp_rows[None, :, None])
        rank = np.cumsum(member, axis=2, dtype=np.int32)
        upmin = np.where(member, up, np.inf).min(axis=2)
        upmax = None
        for (cost, mem, real), (ub, lb) in zip(variants, out, strict=True):
            cost_sums = np.cumsum(np.where(member, cost[b, None, :], 0.0), axis=2)
            mem_sums = np.cumsum(np.where(member, mem[b, None, :], 0.0), axis=2)
            ok = member & (budget(tp_rows[None, :, None], upmin[:, :, None], key[None, None, :]) >= cost_sums)
            ub[b] = _levels(ok, rank, mem_sums, mem_budgets)
            if real:
                if upmax is None:
                    upmax = np.maximum.accumulate(np.where(member, up, -np.inf), axis=2)[:, :, last]
                ok = member & (budget(tp_rows[None, :, None], upmax, key[None, None, :]) >= cost_sums)
                lb[b] = _levels(ok, rank, mem_sums, mem_budgets)
    return out


def _levels(
    ok: BoolArray, rank: NDArray[np.int32], mem_sums: FloatArray, mem_budgets: FloatArray
) -> IntArray:
    """Per block and memory budget: the largest rank of an ``ok`` cell whose memory sum fits it.

    ``mem_sums`` is non-decreasing along a row, so the cells that fit a budget are a row prefix and
    the answer is a prefix maximum read at the prefix's end.
    """
    pm = np.maximum.accumulate(np.where(ok, rank, 0), axis=2)
    out = np.empty((ok.shape[0], mem_budgets.size), dtype=np.int64)
    for i, mem_budget in enumerate(mem_budgets.tolist()):
        cnt = (mem_budget >= mem_sums).sum(axis=2)
        val = np.take_along_axis(pm, np.maximum(cnt - 1, 0)[..., None], axis=2)[..., 0]
        out[:, i] = np.where(cnt > 0, val, 0).max(axis=1)
    return out
