"""The fast implementation of Algorithm 3: the literal answer, with most tuples never visited.

:func:`balance_fast` returns exactly what :func:`balance_opt.solvers.heuristic.literal.balance_literal`
returns (same ``z``, ``lam``, AD and SD users in the same order) on every instance; it
only skips work that cannot change that answer (docs/algorithms.md, "The fast implementation", explains why):

* the literal answer is the lexicographically first tuple reaching the best ``d*``, so a
  tuple whose upper bound does not exceed the incumbent is skipped, and the incumbent is
  seeded with the best ``d*`` of cheaply evaluated actual tuples, minus one;
* inside a block (fixed ``L1``, resp. ``(L3, L4)``) the order ``(c_k, k)`` is the order
  ``(key, k)`` and candidates form prefixes; see :mod:`balance_opt.solvers.heuristic.blocks`;
* Algorithm 2's blocks ``(L3, L4)`` are searched as a tree over ``L4`` whose nodes bound
  every leaf below them (the pool of the largest ``L4``, the contributions of the smallest);
* Algorithm 1's bounds for one ``z`` serve every ``lambda`` (only ``Q1`` changes), and a
  pair ``(z, lambda)`` asks Algorithm 2 only whether it can beat the incumbent total.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from balance_opt.instance import Instance
from balance_opt.model import (
    ad_user_costs,
    ad_user_memory,
    prefill_flops,
    sd_iteration_seconds_per_user,
    sd_user_costs,
    sd_user_memory,
)
from balance_opt.solvers.heuristic.blocks import (
    Block,
    BoolArray,
    FloatArray,
    Hit,
    IntArray,
    batch_bounds,
    frontier,
    search_block,
    search_block_literal,
    step_value,
)
from balance_opt.solvers.heuristic.primitives import (
    BalanceOutcome,
    ad_time_budget,
    check_grid,
    memory_split,
    sd_time_budget,
)


def _values(x: Any) -> FloatArray:
    """A tuple component's range ``sorted({0} ∪ x)`` (as in the literal implementation)."""
    return np.unique(np.append(np.asarray(x, dtype=np.float64), 0.0))


class _Counters:
    def __init__(self) -> None:
        self.n: dict[str, int] = {}

    def add(self, name: str, k: int = 1) -> None:
        self.n[name] = self.n.get(name, 0) + k


# --- Algorithm 1 ---------------------------------------------------------------------


def _strict_rows(cost: FloatArray, key: IntArray) -> BoolArray:
    """Per block row: contributions strictly increase from one distinct key to the next."""
    _, kstart = np.unique(key, return_index=True)
    c = cost[:, kstart]
    return np.asarray(np.all(c[:, 1:] > c[:, :-1], axis=1))


def algorithm1_all(
    inst: Instance, z: float, lams: Sequence[float], stats: _Counters
) -> list[tuple[int, ...]]:
    """Algorithm 1's AD users for ``z`` and each ``lambda`` in ``lams`` (each > 0).

    One block per ``L1``: the users with ``LI <= L1`` in ``(LO, k)`` order. The bounds of
    all blocks and all ``lambda`` come from one batched computation.
    """
    li, lo = inst.input_tokens, inst.output_tokens
    order = np.lexsort((np.arange(inst.num_users), lo))
    key, tp, up = lo[order], inst.budget_s[order], inst.upload_s[order]
    L1s = np.unique(li)
    inpool = li[order][None, :] <= L1s[:, None]
    cost = _ad_costs(inst, L1s, key, z)  # (26), one row per L1
    mem = _ad_memory(inst, L1s, key)  # D3
    strict = _strict_rows(cost, key)
    t_vals, v_vals, tau_vals = _values(inst.budget_s), _values(lo), _values(inst.upload_s)

    def budget(t: Any, tau: Any, v: Any) -> Any:
        return ad_time_budget(inst, t, tau, v)  # (28)

    qs = np.array([memory_split(inst, z, lam)[0] for lam in lams])
    [(ub, lb)] = batch_bounds(key, tp, up, inpool, [(cost, mem, True)], budget, qs)
    ub[~strict] = inpool[~strict].sum(axis=1)[:, None]
    lb[~strict] = 0
    stats.add("ad_blocks", L1s.size)
    blocks: dict[int, Block] = {}
    # no candidate set needs more memory than a whole pool (sequential sums, as in d*):
    # every lambda whose Q1 covers that sees the same d* everywhere, hence the same answer
    cap = float(np.cumsum(np.where(inpool, mem, 0.0), axis=1)[:, -1].max(initial=0.0))
    if not strict.all():
        cap = np.inf  # a block summed in another order might exceed cap by a rounding
    unbound: tuple[int, ...] | None = None
    out: list[tuple[int, ...]] = []
    for i, q1 in enumerate(qs.tolist()):
        if q1 >= cap and unbound is not None:
            out.append(unbound)
            stats.add("ad_reused")
            continue
        floor = max(0, int(lb[:, i].max(initial=0)) - 1)
        best: Hit | None = None
        for b in np.flatnonzero(ub[:, i] > floor).tolist():
            if ub[b, i] <= floor:
                continue
            if b not in blocks:
                m = inpool[b]
                blocks[b] = Block(order[m], key[m], tp[m], up[m], cost[b, m], mem[b, m], t_vals, budget)
            hit = _best_in_block(blocks[b], bool(strict[b]), q1, floor, v_vals, tau_vals, stats)
            if hit is not None:
                best, floor = hit, hit.served
        out.append(best.users if best else ())
        if q1 >= cap:
            unbound = out[-1]
    return out


def _ad_costs(inst: Instance, L1s: IntArray, lo: IntArray, z: float) -> FloatArray:
    return ad_user_costs(inst, L1s[:, None], lo[None, :], z)  # elementwise: one row per L1


def _ad_memory(inst: Instance, L1s: IntArray, lo: IntArray) -> FloatArray:
    return ad_user_memory(inst, L1s[:, None], lo[None, :])


def _best_in_block(
    blk: Block,
    strict: bool,
    mem_budget: float,
    floor: int,
    v_vals: FloatArray,
    tau_vals: FloatArray,
    stats: _Counters,
) -> Hit | None:
    """The block's first tuple beating ``floor``: by prefixes, or tuple by tuple if not ``strict``."""
    if not strict:
        stats.add("literal_blocks")
        return search_block_literal(blk, mem_budget, floor, v_vals, tau_vals)
    stats.add("searched_blocks")
    return search_block(blk, mem_budget, floor)


# --- Algorithm 2 ---------------------------------------------------------------------


def _sd_costs(inst: Instance, L3s: FloatArray, L4s: FloatArray, n: IntArray, z: float) -> FloatArray:
    """``sd_user_costs`` for one ``(L3, L4)`` per row, bit for bit (the test suite checks).

    The same expression as :func:`balance_opt.model.sd_user_costs`: per-iteration seconds
    from the shared (elementwise) function, a sequential cumulative sum along each row,
    plus the prefill share of :func:`balance_opt.model.sd_prefill_seconds_per_user`.
    """
    w = 1.0 - z
    fn: Any = sd_iteration_seconds_per_user
    per_iter = np.asarray(fn(inst, L3s[:, None], L4s[:, None], int(n.max()), w))
    cum = np.concatenate((np.zeros((L3s.size, 1)), np.cumsum(per_iter, axis=1)), axis=1)
    pre = (
        inst.llm.alpha_s_per_flop * prefill_flops(inst.llm, L3s)
        + inst.slm.alpha_s_per_flop * prefill_flops(inst.slm, L3s)
    ) / w
    return np.asarray(pre[:, None] + cum[:, n])


def _sd_memory(inst: Instance, L3s: FloatArray, L4s: FloatArray, n: IntArray) -> FloatArray:
    return sd_user_memory(inst, L3s[:, None], L4s[:, None], n[None, :])  # elementwise, as above


class _SdSearch:
    """Algorithm 2 for one ``(z, lambda)`` over the users ``rest``."""

    def __init__(self, inst: Instance, z: float, q2: float, rest: IntArray, stats: _Counters) -> None:
        self.inst, self.z, self.q2, self.stats = inst, z, q2, stats
        n = inst.sd_iterations
        self.order = rest[np.lexsort((rest, n[rest]))]  # (N, k)
        self.key = n[self.order]
        self.tp, self.up = inst.budget_s[self.order], inst.upload_s[self.order]
        self.t_vals = _values(inst.budget_s[rest])
        self.v_vals = _values(n[rest])
        self.tau_vals = _values(inst.upload_s[rest])

    def budget(self, t: Any, tau: Any, v: Any) -> Any:
        return sd_time_budget(self.inst, t, tau, v)  # (32)

    def block(self, m: BoolArray, L3: float, L4: float) -> Block:
        inst, key = self.inst, self.key[m]
        cost = sd_user_costs(inst, L3, L4, key, self.z)  # (30)
        mem = sd_user_memory(inst, L3, L4, key)  # (31)
        return Block(self.order[m], key, self.tp[m], self.up[m], cost, mem, self.t_vals, self.budget)

    def run(self, floor: int) -> Hit | None:
        """The literal Algorithm 2 answer if its best ``d*`` exceeds ``floor``, else None."""
        inst = self.inst
        if self.order.size <= floor:
            return None
        li, la = inst.input_tokens[self.order], inst.accepted_drafts[self.order]
        L3s = np.unique(li).astype(np.float64)
        inpool = li[None, :] <= L3s[:, None]
        l4_hi = np.where(inpool, la[None, :], -np.inf).max(axis=1)
        l4_lo = np.where(inpool, la[None, :], np.inf).min(axis=1)
        qs = np.array([self.q2])
        hi_cost = _sd_costs(inst, L3s, l4_hi, self.key, self.z)
        lo_cost = _sd_costs(inst, L3s, l4_lo, self.key, self.z)
        hi = (hi_cost, _sd_memory(inst, L3s, l4_hi, self.key), True)
        lo = (lo_cost, _sd_memory(inst, L3s, l4_lo, self.key), False)
        [(_, top_lb), (root_ub, _)] = batch_bounds(
            self.key, self.tp, self.up, inpool, [hi, lo], self.budget, qs, floor
        )
        # a root bounds its leaves when every leaf's order is the key order (see _node)
        _, kstart = np.unique(self.key, return_index=True)
        bounded = np.all(lo_cost[:, kstart[1:]] > hi_cost[:, kstart[:-1]], axis=1)
        root_ub[~bounded, 0] = inpool[~bounded].sum(axis=1)
        floor = max(floor, int(top_lb.max()) - 1)
        self.stats.add("sd_roots", L3s.size)
        best: Hit | None = None
        for i in np.flatnonzero(root_ub[:, 0] > floor).tolist():
            if root_ub[i, 0] <= floor:
                continue
            m = inpool[i]
            l4 = np.unique(la[m])  # tight L4 only: a larger one has the same candidates
            hit = self._node(float(L3s[i]), m, l4, 0, l4.size - 1, floor, root=True)
            if hit is not None:
                best, floor = hit, hit.served
        return best

    def _node(
        self, L3: float, pool: BoolArray, l4: FloatArray, lo: int, hi: int, floor: int, root: bool = False
    ) -> Hit | None:
        la = self.inst.accepted_drafts[self.order]
        sub = pool & (la <= l4[hi])
        if sub.sum() <= floor:
            return None
        if lo == hi:
            blk = self.block(sub, L3, float(l4[lo]))
            self.stats.add("sd_leaves")
            strict = bool(_strict_rows(blk.cost[None, :], blk.key)[0])
            if strict:
                f = frontier(blk, real=True)
                if step_value(f[0], f[1], self.q2) <= floor:
                    return None
            return _best_in_block(blk, strict, self.q2, floor, self.v_vals, self.tau_vals, self.stats)
        if not root:
            blk = self.block(sub, L3, float(l4[lo]))
            self.stats.add("sd_nodes")
            # every leaf below keeps the key order when the smallest L4's next key costs
            # more than the largest L4's previous key; only then does this node bound them
            _, kstart = np.unique(blk.key, return_index=True)
            upper = sd_user_costs(self.inst, L3, float(l4[hi]), blk.key[kstart], self.z)
            if np.all(blk.cost[kstart][1:] > upper[:-1]):
                f = frontier(blk, real=False)
                if step_value(f[0], f[1], self.q2) <= floor:
                    return None
        mid = (lo + hi) // 2
        best: Hit | None = None
        for a, b in ((lo, mid), (mid + 1, hi)):
            hit = self._node(L3, pool, l4, a, b, floor)
            if hit is not None:
                best, floor = hit, hit.served
        return best


# --- Algorithm 3 ---------------------------------------------------------------------


def balance_fast(
    inst: Instance, z_grid: Sequence[float], lam_grid: Sequence[float], until: float | None = None
) -> BalanceOutcome:
    """Algorithm 3 (z ascending outer, lambda ascending inner, strict improvement), fast.

    With ``until`` (a ``time.perf_counter()`` value) the z values left when it passes are
    skipped: the best schedule of the z values done (an exact solver's warm start).
    """
    check_grid("z_grid", z_grid)
    check_grid("lam_grid", lam_grid)
    stats = _Counters()
    K = inst.num_users
    best = BalanceOutcome(float(z_grid[0]), float(lam_grid[0]), (), ())
    everyone = np.arange(K)
    for z in z_grid if K else ():
        if until is not None and time.perf_counter() > until:
            break
        # same z and same AD set with no more SD memory: D2 cannot grow, the total cannot win
        seen: dict[tuple[int, ...], float] = {}
        active = [lam for lam in lam_grid if z != 0.0 and lam != 0.0]
        ad_sets = dict(zip(active, algorithm1_all(inst, z, active, stats), strict=True)) if active else {}
        for lam in lam_grid:
            stats.add("pairs")
            ad = ad_sets.get(lam, ())
            sd: tuple[int, ...] = ()
            if z != 1.0 and lam != 1.0:
                floor = max(0, best.served - len(ad))
                _, q2 = memory_split(inst, z, lam)
                if K - len(ad) > floor and seen.get(ad, -np.inf) < q2:
                    seen[ad] = q2
                    rest = np.setdiff1d(everyone, np.asarray(ad, dtype=np.int64))
                    hit = _SdSearch(inst, z, q2, rest, stats).run(floor)
                    sd = hit.users if hit else ()
                else:
                    stats.add("pairs_skipped")
            if len(ad) + len(sd) > best.served:
                best = BalanceOutcome(float(z), float(lam), tuple(ad), sd)
    return BalanceOutcome(best.z, best.lam, best.ad, best.sd, {"implementation": "fast", **stats.n})
