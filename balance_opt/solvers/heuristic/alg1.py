"""Algorithm 1 (AD users) for every ``z`` and ``lambda``: the literal answers, fast.

Blocks are the distinct ``L1`` (ascending); users are in ``(LO, k)`` order, the literal
``(c_k, k)`` order of every strict block. One tree of bounds
(:class:`balance_opt.solvers.heuristic.tree.TreeSearch`) serves every pair: the
contributions (26) at ``z`` are those at ``z = 1`` divided by ``z``, and only ``Q1`` changes
with ``lambda``. Per pair the tree is searched best first above a floor that only actual
tuples have set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from balance_opt.instance import Instance
from balance_opt.model import ad_user_costs, ad_user_memory
from balance_opt.solvers.heuristic.blocks import (
    Block,
    Counters,
    FloatArray,
    Hit,
    IntArray,
    search_leaf,
    strict_rows,
    tuple_range,
)
from balance_opt.solvers.heuristic.bounds import (
    Budgets,
    Relaxed,
    Users,
    ladder,
    new_user_limits,
    rows_in_groups,
)
from balance_opt.solvers.heuristic.primitives import ad_time_budget, memory_split
from balance_opt.solvers.heuristic.tree import TreeSearch

RESOLUTIONS = (1, 4, 32)  # groups of t per bound, coarse to fine: more is tighter and costs more


def ad_costs(inst: Instance, L1s: IntArray, lo: IntArray, z: float) -> FloatArray:
    """(26) for one ``L1`` per row: elementwise, so bit for bit the scalar call."""
    return ad_user_costs(inst, L1s[:, None], lo[None, :], z)


def ad_memory(inst: Instance, L1s: IntArray, lo: IntArray) -> FloatArray:
    """D3 for one ``L1`` per row."""
    return ad_user_memory(inst, L1s[:, None], lo[None, :])


@dataclass(frozen=True)
class AdTuple:
    """A tuple ``(L1, L2, t1, tau1)`` of Algorithm 1 and the users it serves, in ``(c_k, k)`` order."""

    L1: int
    v: float
    t: float
    tau: float
    users: tuple[int, ...]


class AdFamily:
    """Algorithm 1's blocks, one per distinct ``LI`` (``L1``), users in ``(LO, k)`` order.

    The relaxed contributions are those at ``z = 1`` (bounds divide them by ``z``); the
    blocks searched carry their own at their ``z``.
    """

    def __init__(self, inst: Instance, zs: Sequence[float]) -> None:
        self.inst = inst
        self.order = np.lexsort((np.arange(inst.num_users), inst.output_tokens))
        self.li, self.key = inst.input_tokens[self.order], inst.output_tokens[self.order]
        self.tp, self.up = inst.budget_s[self.order], inst.upload_s[self.order]
        self.L1s = np.unique(inst.input_tokens)
        self.size = int(self.L1s.size)
        self.t_vals = tuple_range(inst.budget_s)
        self.blocks: dict[tuple[int, float], Block] = {}
        # every block strict at every z: one (c_k, k) order, the key order, for all (bounds.Relaxed)
        self.strict = all(
            bool(strict_rows(ad_costs(inst, self.L1s, self.key, z), self.key).all()) for z in zs
        )

    def budget(self, t: Any, tau: Any, v: Any) -> Any:
        return ad_time_budget(self.inst, t, tau, v)  # (28)

    def split(self, s: IntArray, e: IntArray) -> IntArray:
        return (s + e) // 2

    def relax(self, s: IntArray, e: IntArray) -> Relaxed:
        # the largest L1's pool, the smallest L1's contributions: (26) and D3 grow with L1
        hi = self.L1s[e - 1][:, None]
        pool = self.li[None, :] <= hi
        lo = self.L1s[s]
        # a tuple of block L1 without a user of LI = L1 is dominated by the block before
        new = pool & (self.li[None, :] >= lo[:, None]) if self.strict else pool
        limits = new_user_limits(new, self.tp, self.up, self.key)
        cost, mem = ad_costs(self.inst, lo, self.key, 1.0), ad_memory(self.inst, lo, self.key)
        return Relaxed(pool, cost, mem, *limits)

    def block(self, i: int, z: float) -> Block:
        """Block ``i`` (``L1 = L1s[i]``) at ``z``, with its own contributions (kept for every ``lambda``)."""
        if (i, z) not in self.blocks:
            L1 = self.L1s[i : i + 1]
            m = self.li <= L1[0]
            cost = ad_costs(self.inst, L1, self.key[m], z)[0]
            mem = ad_memory(self.inst, L1, self.key[m])[0]
            self.blocks[i, z] = Block(
                self.order[m], self.key[m], self.tp[m], self.up[m], cost, mem, self.t_vals, self.budget
            )
        return self.blocks[i, z]

    def block_cap(self, i: int, z: float) -> float:
        """The memory of block ``i``'s whole pool: no candidate set of it needs more (inf if not strict)."""
        blk = self.block(i, z)
        if not strict_rows(blk.cost[None, :], blk.key)[0]:
            return np.inf
        return float(np.cumsum(blk.mem)[-1])

    def block_of(self, L1: int) -> int:
        return int(np.searchsorted(self.L1s, L1))

    def memory_cap(self, most: int) -> float:
        """A ``Q1`` above which no tuple's ``d*`` depends on ``Q1``, given that none exceeds ``most``.

        A ``d*`` is set by its first ``d* + 1 <= most`` candidates (or all of them): none needs
        more memory than the ``most`` largest of its block's pool, in any order (a relative
        1e-9 covers the rounding). Inf when some block is not strict.
        """
        if not self.strict:
            return np.inf
        pool = (self.li[None, :] <= self.L1s[:, None])[:, ::-1]
        mem = np.where(pool, ad_memory(self.inst, self.L1s, self.key)[:, ::-1], 0.0)
        top = np.cumsum(mem, axis=1)[np.arange(self.size), (np.cumsum(pool, axis=1) <= most).sum(axis=1) - 1]
        return float(top.max(initial=0.0)) * (1.0 + 1e-9)


def ad_tuple_dstar(inst: Instance, z: float, tup: AdTuple, qs: FloatArray) -> IntArray:
    """``d*`` (28) of one tuple at ``z``, for each ``Q1`` in ``qs``, computed as the literal code does."""
    li, lo = inst.input_tokens, inst.output_tokens
    inside = (li <= tup.L1) & (lo <= tup.v) & (inst.budget_s >= tup.t) & (inst.upload_s <= tup.tau)
    cand = np.flatnonzero(inside)
    cost = ad_user_costs(inst, tup.L1, lo[cand], z)
    o = np.lexsort((cand, cost))  # (c_k, k)
    s = np.cumsum(cost[o])
    mem = np.cumsum(ad_user_memory(inst, tup.L1, lo[cand])[o])
    # both sums are non-decreasing: the prefixes within each budget are leading ones
    fit = int((s <= ad_time_budget(inst, tup.t, tup.tau, tup.v)).sum())
    return np.minimum(fit, (mem[None, :] <= qs[:, None]).sum(axis=1))


class AdSearch:
    """Algorithm 1 at every pair of ``zs`` (each > 0) and ``lams`` (each > 0), one tree of bounds for all."""

    def __init__(self, inst: Instance, zs: Sequence[float], lams: Sequence[float], stats: Counters) -> None:
        self.inst, self.zs, self.lams, self.stats = inst, list(zs), list(lams), stats
        self.fam = fam = AdFamily(inst, zs)
        pairs = [(z, lam) for z in zs for lam in lams]
        qs = np.array([memory_split(inst, z, lam)[0] for z, lam in pairs], dtype=np.float64)
        budgets = Budgets(qs, np.array([z for z, _ in pairs], dtype=np.float64))
        users = Users(fam.key, fam.tp, fam.up, fam.budget)
        edges = ladder(fam.tp, RESOLUTIONS)
        # a range of L1 bounds poorly (the smallest L1's contributions): start from each L1 alone
        self.tree = TreeSearch(
            fam, users, edges, budgets, lambda c: strict_rows(c, fam.key), np.arange(fam.size)
        )
        self.qs = qs.reshape(len(zs), len(lams))
        self.v_vals, self.tau_vals = tuple_range(inst.output_tokens), tuple_range(inst.upload_s)

    def answers(self, zi: int, known: Sequence[AdTuple] = ()) -> list[AdTuple | None]:
        """The answer at ``zs[zi]`` for each ``lambda``: its tuple, None if nobody.

        ``known`` tuples (say the answers at another ``z``) are evaluated here to start each
        search from an actual ``d*``, as are the answers found at the other ``lambda``.
        """
        fam, z, qs = self.fam, self.zs[zi], self.qs[zi]
        out: dict[int, AdTuple | None] = {}
        # the largest Q1 first: its best d* bounds every d* at every Q1, hence where Q1 stops mattering
        top = int(np.argmax(qs)) if qs.size else 0
        cap = np.inf
        searches = _Searches(self, z)
        # per tuple known: its d* at every Q1 of z, and its block
        seeds = {t: (ad_tuple_dstar(self.inst, z, t, qs), fam.block_of(t.L1)) for t in known}
        for i in [top, *(j for j in range(qs.size) if j != top)]:
            q = float(qs[i])
            if i != top and q >= cap:
                out[i] = out[top]  # Q1 binds nowhere, here as at the largest Q1
                self.stats.add("ad_reused")
                continue
            for t in out.values():
                if t is not None and t not in seeds:
                    seeds[t] = (ad_tuple_dstar(self.inst, z, t, qs), fam.block_of(t.L1))
            searches.at_top = i == top
            start = [(int(d[i]), b) for d, b in seeds.values()]
            found = self.tree.run(zi * qs.size + i, 0, partial(searches.search, q=q), start)
            if found is None:
                out[i] = None
            else:
                b, hit = found
                out[i] = AdTuple(int(fam.L1s[b]), *hit.tuple_key, hit.users)
            if i == top:
                cap = fam.memory_cap(len(found[1].users) if found else 0)
        self.stats.n["ad_nodes"] = self.tree.nodes
        return [out[i] for i in range(qs.size)]


class _Searches:
    """Block searches at one ``z``, with what the earlier ones there tell.

    * A block's best ``d*`` grows with ``Q1``: what a search at the largest ``Q1`` found
      (its best, or that it is at most the floor) bounds it at every other.
    * A block whose whole pool fits ``Q1`` gives the same result at every such ``Q1``.
    """

    def __init__(self, ad: AdSearch, z: float) -> None:
        self.ad, self.z = ad, z
        self.at_top = True
        self.most: dict[int, int] = {}  # block -> a bound on its best d* at every Q1 of z
        self.done: dict[int, tuple[int, Hit | None]] = {}  # block -> (floor, result), Q1 binding nowhere

    def search(self, b: int, f: int, group_ub: IntArray, edges: FloatArray, q: float) -> Hit | None:
        ad, fam = self.ad, self.ad.fam
        if self.most.get(b, f + 1) <= f:
            return None
        unbound = q >= fam.block_cap(b, self.z)
        if unbound and b in self.done:
            f0, res = self.done[b]
            if res is not None or f >= f0:
                return res if res is not None and res.served > f else None

        def rows(tp_rows: FloatArray) -> IntArray:
            return rows_in_groups(tp_rows, edges, group_ub > f)

        res = search_leaf(fam.block(b, self.z), q, f, rows, ad.v_vals, ad.tau_vals, ad.stats)
        if unbound:
            self.done[b] = (f, res)
        if self.at_top:
            self.most[b] = res.served if res is not None else f
        return res


def algorithm1_all(
    inst: Instance, z: float, lams: Sequence[float], stats: Counters, known: Sequence[AdTuple] = ()
) -> list[AdTuple | None]:
    """Algorithm 1's answer at ``z`` (> 0) for each ``lambda`` in ``lams`` (each > 0), None if nobody."""
    return AdSearch(inst, [z], lams, stats).answers(0, known)
