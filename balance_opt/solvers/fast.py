"""The fast implementation of Algorithm 3: the literal answer, with most tuples never visited.

:func:`balance_fast` returns exactly what :func:`balance_opt.solvers.literal.balance_literal`
returns (same ``z``, ``lam``, AD and SD users in the same order) on every instance; it
only skips work that cannot change that answer (docs/algorithms-fast.md explains why):

* the literal answer is the lexicographically first tuple reaching the best ``d*``, so a
  tuple whose upper bound does not exceed the incumbent is skipped, and the incumbent is
  seeded with the best ``d*`` of cheaply evaluated actual tuples, minus one;
* inside a block (fixed ``L1``, resp. ``(L3, L4)``) the order ``(c_k, k)`` is the order
  ``(key, k)`` and candidates form prefixes; see :mod:`balance_opt.solvers._fast_block`;
* Algorithm 2's blocks ``(L3, L4)`` are searched as a tree over ``L4`` whose nodes bound
  every leaf below them (the pool of the largest ``L4``, the contributions of the smallest);
* Algorithm 1's bounds for one ``z`` serve every ``lambda`` (only ``Q1`` changes), and a
  pair ``(z, lambda)`` asks Algorithm 2 only whether it can beat the incumbent total.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Any

import numpy as np

from balance_opt.instance import Instance
from balance_opt.model import ad_user_costs, ad_user_memory, sd_user_costs, sd_user_memory
from balance_opt.solvers._fast_block import (
    Block,
    FloatArray,
    Hit,
    IntArray,
    frontier,
    literal_search,
    search,
    step_value,
)
from balance_opt.solvers.algorithm import BalanceOutcome, ad_time_budget, memory_split, sd_time_budget


def _values(x: Any) -> FloatArray:
    """A tuple component's range ``sorted({0} ∪ x)`` (as in the literal implementation)."""
    return np.unique(np.append(np.asarray(x, dtype=np.float64), 0.0))


def _strict(cost: FloatArray, blk_keys_start: IntArray) -> bool:
    c = cost[blk_keys_start]
    return bool(np.all(c[1:] > c[:-1]))


class _Counters:
    def __init__(self) -> None:
        self.n: dict[str, int] = {}

    def add(self, name: str, k: int = 1) -> None:
        self.n[name] = self.n.get(name, 0) + k


# --- Algorithm 1 ---------------------------------------------------------------------


def _ad_blocks(inst: Instance, z: float) -> list[Block]:
    """One block per ``L1`` (ascending): the users with ``LI <= L1`` in ``(LO, k)`` order."""
    li, lo = inst.input_tokens, inst.output_tokens
    order = np.lexsort((np.arange(inst.num_users), lo))
    t_vals = _values(inst.budget_s)

    def budget(t: Any, tau: Any, v: Any) -> Any:
        return ad_time_budget(inst, t, tau, v)  # (28)

    blocks = []
    for L1 in np.unique(li).tolist():
        pool = order[li[order] <= L1]
        cost = ad_user_costs(inst, L1, lo, z)[pool]  # (26)
        mem = ad_user_memory(inst, L1, lo)[pool]  # D3
        blocks.append(
            Block(pool, lo[pool], inst.budget_s[pool], inst.upload_s[pool], cost, mem, t_vals, budget)
        )
    return blocks


def _search_block(blk: Block, q: float, floor: int, v_vals: FloatArray, tau_vals: FloatArray,
                  stats: _Counters) -> Hit | None:
    _, kstart = np.unique(blk.key, return_index=True)
    if not _strict(blk.cost, kstart):
        stats.add("literal_blocks")
        return literal_search(blk, q, floor, v_vals, tau_vals)
    stats.add("searched_blocks")
    return search(blk, q, floor)


def algorithm1_all(inst: Instance, z: float, lams: Sequence[float], stats: _Counters) -> list[tuple[int, ...]]:
    """Algorithm 1's AD users for ``z`` and each ``lambda`` in ``lams`` (each > 0)."""
    blocks = _ad_blocks(inst, z)
    v_vals, tau_vals = _values(inst.output_tokens), _values(inst.upload_s)
    fronts = []
    for blk in blocks:
        _, kstart = np.unique(blk.key, return_index=True)
        fronts.append(frontier(blk, real=True) if _strict(blk.cost, kstart) else None)
        blk.__dict__.pop("rows", None)  # rebuilt on demand: keeps memory to one block
    stats.add("ad_blocks", len(blocks))
    out = []
    for lam in lams:
        q1, _ = memory_split(inst, z, lam)
        ub = [step_value(f[0], f[1], q1) if f else blk.users.size for f, blk in zip(fronts, blocks, strict=True)]
        lb = [step_value(f[2], f[3], q1) if f else 0 for f in fronts]
        floor = max(0, max(lb, default=0) - 1)
        best: Hit | None = None
        for blk, bound in zip(blocks, ub, strict=True):
            if bound <= floor:
                continue
            hit = _search_block(blk, q1, floor, v_vals, tau_vals, stats)
            if hit is not None:
                best, floor = hit, hit.served
        out.append(best.users if best else ())
    return out


# --- Algorithm 2 ---------------------------------------------------------------------


class _SdSearch:
    """Algorithm 2 for one ``(z, lambda)`` over the users ``rest``."""

    def __init__(self, inst: Instance, z: float, q2: float, rest: IntArray, stats: _Counters) -> None:
        self.inst, self.z, self.q2, self.stats = inst, z, q2, stats
        n = inst.sd_iterations
        self.order = rest[np.lexsort((rest, n[rest]))]  # (N, k)
        self.t_vals = _values(inst.budget_s[rest])
        self.v_vals = _values(n[rest])
        self.tau_vals = _values(inst.upload_s[rest])
        self.l3_vals = np.unique(inst.input_tokens[rest])

    def budget(self, t: Any, tau: Any, v: Any) -> Any:
        return sd_time_budget(self.inst, t, tau, v)  # (32)

    def block(self, pool: IntArray, L3: float, L4: float) -> Block:
        inst, n = self.inst, self.inst.sd_iterations
        cost = sd_user_costs(inst, L3, L4, n[pool], self.z)  # (30)
        mem = sd_user_memory(inst, L3, L4, n[pool])  # (31)
        return Block(pool, n[pool], inst.budget_s[pool], inst.upload_s[pool], cost, mem, self.t_vals,
                     self.budget)

    def run(self, floor: int) -> Hit | None:
        """The literal Algorithm 2 answer if its best ``d*`` exceeds ``floor``, else None."""
        inst = self.inst
        la = inst.accepted_drafts
        trees = []
        for L3 in self.l3_vals.tolist():
            pool = self.order[inst.input_tokens[self.order] <= L3]
            l4 = np.unique(la[pool])  # tight L4 only: a larger one has the same candidates
            top = self.block(pool, L3, float(l4[-1]))
            _, kstart = np.unique(top.key, return_index=True)
            if _strict(top.cost, kstart):
                f = frontier(top, real=True)
                floor = max(floor, step_value(f[2], f[3], self.q2) - 1)
            top.__dict__.pop("rows", None)
            trees.append((L3, pool, l4))
        best: Hit | None = None
        for L3, pool, l4 in trees:
            hit = self._node(L3, pool, l4, 0, l4.size - 1, floor)
            if hit is not None:
                best, floor = hit, hit.served
        return best

    def _node(self, L3: float, pool: IntArray, l4: FloatArray, lo: int, hi: int, floor: int) -> Hit | None:
        la = self.inst.accepted_drafts
        sub = pool[la[pool] <= l4[hi]]
        if sub.size <= floor:
            return None
        blk = self.block(sub, L3, float(l4[lo]))
        self.stats.add("sd_nodes")
        _, kstart = np.unique(blk.key, return_index=True)
        if lo == hi:
            if not _strict(blk.cost, kstart):
                self.stats.add("literal_blocks")
                return literal_search(blk, self.q2, floor, self.v_vals, self.tau_vals)
            f = frontier(blk, real=True)
            if step_value(f[0], f[1], self.q2) <= floor:
                return None
            self.stats.add("searched_blocks")
            return search(blk, self.q2, floor)
        # every leaf below is strict when the smallest L4's next key costs more than the
        # largest L4's previous key; only then does this node bound its leaves
        upper = sd_user_costs(self.inst, L3, float(l4[hi]), blk.key[kstart], self.z)
        if np.all(blk.cost[kstart][1:] > upper[:-1]):
            f = frontier(blk, real=False)
            if step_value(f[0], f[1], self.q2) <= floor:
                return None
        del blk
        mid = (lo + hi) // 2
        best: Hit | None = None
        for a, b in ((lo, mid), (mid + 1, hi)):
            hit = self._node(L3, pool, l4, a, b, floor)
            if hit is not None:
                best, floor = hit, hit.served
        return best


# --- Algorithm 3 ---------------------------------------------------------------------


def _check_grid(name: str, grid: Sequence[float]) -> None:
    if not grid or any(b <= a for a, b in pairwise(grid)):
        raise ValueError(f"{name} must be a non-empty, strictly increasing sequence, got {list(grid)}")


def balance_fast(inst: Instance, z_grid: Sequence[float], lam_grid: Sequence[float]) -> BalanceOutcome:
    """Algorithm 3 (z ascending outer, lambda ascending inner, strict improvement), fast."""
    _check_grid("z_grid", z_grid)
    _check_grid("lam_grid", lam_grid)
    stats = _Counters()
    K = inst.num_users
    best = BalanceOutcome(float(z_grid[0]), float(lam_grid[0]), (), ())
    everyone = np.arange(K)
    for z in z_grid:
        active = [lam for lam in lam_grid if z != 0.0 and lam != 0.0]
        ad_sets = dict(zip(active, algorithm1_all(inst, z, active, stats), strict=True)) if active else {}
        for lam in lam_grid:
            stats.add("pairs")
            ad = ad_sets.get(lam, ())
            sd: tuple[int, ...] = ()
            if z != 1.0 and lam != 1.0:
                floor = max(0, best.served - len(ad))
                if K - len(ad) > floor:
                    _, q2 = memory_split(inst, z, lam)
                    rest = np.setdiff1d(everyone, np.asarray(ad, dtype=np.int64))
                    hit = _SdSearch(inst, z, q2, rest, stats).run(floor)
                    sd = hit.users if hit else ()
                else:
                    stats.add("pairs_skipped")
            if len(ad) + len(sd) > best.served:
                best = BalanceOutcome(float(z), float(lam), tuple(ad), sd)
    return BalanceOutcome(best.z, best.lam, best.ad, best.sd, {"implementation": "fast", **stats.n})
