"""One block of Algorithm 1 or 2 for the fast implementation: the exact search.

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
give the literal sequential prefix sums of every subset bit for bit. A search may be
limited to some rows (:attr:`Block.row_sel`) when the others are known not to matter
(:mod:`balance_opt.solvers.heuristic.bounds`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
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
    row_sel: IntArray | None = None  # rows to search (indices into the pool's distinct Tp); None: all

    @cached_property
    def rows(self) -> RowSums:
        return RowSums(self)


class RowSums:
    """Per-row masked prefix sums of a block (rows: distinct ``Tp`` of the pool, ascending)."""

    def __init__(self, blk: Block) -> None:
        tp_all = np.unique(blk.tp)
        sel = np.arange(tp_all.size) if blk.row_sel is None else blk.row_sel
        self.tp_rows: FloatArray = tp_all[sel]
        # the t range of row g is (tp_prev[g], tp_rows[g]]
        self.tp_prev: FloatArray = np.where(sel > 0, tp_all[np.maximum(sel - 1, 0)], -np.inf)
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
    lo = r.tp_prev[g]
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


# --- shared by the fast Algorithms 1 and 2 -------------------------------------------


def tuple_range(x: Any) -> FloatArray:
    """A tuple component's range ``sorted({0} ∪ x)`` (as in the literal implementation)."""
    return np.unique(np.append(np.asarray(x, dtype=np.float64), 0.0))


class Counters:
    """Work counts of one run (``BalanceOutcome.stats``)."""

    def __init__(self) -> None:
        self.n: dict[str, int] = {}

    def add(self, name: str, k: int = 1) -> None:
        self.n[name] = self.n.get(name, 0) + k


def strict_rows(cost: FloatArray, key: IntArray) -> BoolArray:
    """Per row of ``cost`` (users in key order): strictly increasing from one distinct key to the next."""
    kstart = np.flatnonzero(np.diff(key, prepend=key[:1] - 1))  # where a new key starts (sorted keys)
    c = cost[:, kstart]
    return np.asarray(np.all(c[:, 1:] > c[:, :-1], axis=1))


def search_leaf(
    blk: Block,
    mem_budget: float,
    floor: int,
    rows: Callable[[FloatArray], IntArray],
    v_vals: FloatArray,
    tau_vals: FloatArray,
    stats: Counters,
) -> Hit | None:
    """The block's first tuple beating ``floor``: by prefixes in ``rows(distinct Tp)``, or tuple by tuple.

    ``rows`` picks the rows that may beat ``floor``; a block whose contributions are not
    strictly increasing in the key is walked tuple by tuple instead.
    """
    if not strict_rows(blk.cost[None, :], blk.key)[0]:
        stats.add("literal_blocks")
        return search_block_literal(blk, mem_budget, floor, v_vals, tau_vals)
    stats.add("searched_blocks")
    return search_block(dataclasses.replace(blk, row_sel=rows(np.unique(blk.tp))), mem_budget, floor)
