"""Algorithm 1 (AD users) for one ``z`` and every ``lambda``: the literal answers, fast.

Blocks are the distinct ``L1`` (ascending); users are in ``(LO, k)`` order, the literal
``(c_k, k)`` order of every strict block. One tree of
bounds (:class:`balance_opt.solvers.heuristic.bounds.TreeSearch`) serves every ``lambda``
(only ``Q1`` changes); per ``lambda`` it is searched best first above a floor that only
actual tuples have set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
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
    Relaxed,
    TreeSearch,
    Users,
    new_user_limits,
    rows_in_groups,
)
from balance_opt.solvers.heuristic.primitives import ad_time_budget, memory_split

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
    """Algorithm 1's blocks at one ``z``, one per distinct ``LI`` (``L1``), users in ``(LO, k)`` order."""

    def __init__(self, inst: Instance, z: float) -> None:
        self.inst, self.z = inst, z
        self.order = np.lexsort((np.arange(inst.num_users), inst.output_tokens))
        self.li, self.key = inst.input_tokens[self.order], inst.output_tokens[self.order]
        self.tp, self.up = inst.budget_s[self.order], inst.upload_s[self.order]
        self.L1s = np.unique(inst.input_tokens)
        self.size = int(self.L1s.size)
        self.t_vals = tuple_range(inst.budget_s)
        self.blocks: dict[int, Block] = {}
        # every block strict: one (c_k, k) order, the key order, for all of them (bounds.Relaxed)
        self.strict = bool(strict_rows(ad_costs(inst, self.L1s, self.key, z), self.key).all())

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
        return Relaxed(
            pool, ad_costs(self.inst, lo, self.key, self.z), ad_memory(self.inst, lo, self.key), *limits
        )

    def block(self, i: int) -> Block:
        """Block ``i`` (``L1 = L1s[i]``) with its own contributions (kept for every ``lambda``)."""
        if i not in self.blocks:
            L1 = self.L1s[i : i + 1]
            m = self.li <= L1[0]
            cost = ad_costs(self.inst, L1, self.key[m], self.z)[0]
            mem = ad_memory(self.inst, L1, self.key[m])[0]
            self.blocks[i] = Block(
                self.order[m], self.key[m], self.tp[m], self.up[m], cost, mem, self.t_vals, self.budget
            )
        return self.blocks[i]

    def block_cap(self, i: int) -> float:
        """The memory of block ``i``'s whole pool: no candidate set of it needs more (inf if not strict)."""
        blk = self.block(i)
        if not strict_rows(blk.cost[None, :], blk.key)[0]:
            return np.inf
        return float(np.cumsum(blk.mem)[-1])

    def block_of(self, L1: int) -> int:
        return int(np.searchsorted(self.L1s, L1))

    def memory_cap(self) -> float:
        """The most memory any candidate set needs; inf when some block is not strict.

        A masked sequential sum is never above the unmasked one, so every ``Q1`` at or
        above this sees every prefix within memory: the same ``d*`` at every tuple.
        """
        if not self.strict:
            return np.inf  # a block summed in another order might exceed the cap by a rounding
        pool = self.li[None, :] <= self.L1s[:, None]
        mem = ad_memory(self.inst, self.L1s, self.key)
        return float(np.cumsum(np.where(pool, mem, 0.0), axis=1)[:, -1].max(initial=0.0))


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


def algorithm1_all(
    inst: Instance, z: float, lams: Sequence[float], stats: Counters, known: Sequence[AdTuple] = ()
) -> list[AdTuple | None]:
    """Algorithm 1's answer at ``z`` for each ``lambda`` in ``lams`` (each > 0): its tuple, None if nobody.

    ``known`` tuples (say the answers at another ``z``) are evaluated here to start each
    search from an actual ``d*``, as is the answer at the previous ``lambda``.
    """
    fam = AdFamily(inst, z)
    qs = np.array([memory_split(inst, z, lam)[0] for lam in lams], dtype=np.float64)
    users = Users(fam.key, fam.tp, fam.up, fam.budget)
    # a range of L1 bounds poorly (the smallest L1's contributions): start from each L1 alone
    tree = TreeSearch(
        fam, users, inst.budget_s, qs, lambda c: strict_rows(c, fam.key), np.arange(fam.size), RESOLUTIONS
    )
    cap = fam.memory_cap() if qs.size else np.inf
    v_vals, tau_vals = tuple_range(inst.output_tokens), tuple_range(inst.upload_s)
    seeds = [(ad_tuple_dstar(inst, z, tup, qs), fam.block_of(tup.L1)) for tup in known]
    out: list[AdTuple | None] = []
    # block -> (floor, result) of a search where Q1 bound nowhere in the block: then the
    # result is the block's first tuple reaching its best if above the floor, for every such Q1
    done: dict[int, tuple[int, Hit | None]] = {}
    for i, q in enumerate(qs.tolist()):
        prev = out[-1] if out else None
        if prev is not None and qs[i - 1] >= cap:
            out.append(prev)  # Q1 binds nowhere, here as at the previous lambda
            stats.add("ad_reused")
            continue
        start = [(int(d[i]), b) for d, b in seeds]
        if prev is not None:
            start.append((int(ad_tuple_dstar(inst, z, prev, qs[i : i + 1])[0]), fam.block_of(prev.L1)))

        def search(b: int, f: int, group_ub: IntArray, edges: FloatArray, q: float = q) -> Hit | None:
            unbound = q >= fam.block_cap(b)
            if unbound and b in done:  # the memory binds nowhere in b: its answer is known
                f0, res = done[b]
                if res is not None or f >= f0:
                    return res if res is not None and res.served > f else None

            def rows(tp_rows: FloatArray) -> IntArray:
                return rows_in_groups(tp_rows, edges, group_ub > f)

            res = search_leaf(fam.block(b), q, f, rows, v_vals, tau_vals, stats)
            if unbound:
                done[b] = (f, res)
            return res

        found = tree.run(i, 0, search, start)
        if found is None:
            out.append(None)
            continue
        b, hit = found
        out.append(AdTuple(int(fam.L1s[b]), *hit.tuple_key, users=hit.users))
    stats.add("ad_nodes", tree.nodes)
    return out
