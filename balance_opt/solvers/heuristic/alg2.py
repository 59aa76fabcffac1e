"""Algorithm 2 (SD users) for one ``(z, lambda)`` over the users Algorithm 1 left: fast.

Blocks are the pairs ``(L3, L4)`` in lexicographic order: ``L3`` over the remaining users'
distinct ``LI``, ``L4`` over the distinct ``LA`` of the users with ``LI <= L3`` (a larger
``L4`` has the candidates of the largest one below it and larger contributions, so it
never improves on it). Users are in ``(N, k)`` order. A node of the tree is either whole
``L3`` rows (the pool of the last row, all its ``LA``; contributions at the first row's
``L3`` and the smallest ``LA`` there) or a range of ``L4`` within one row.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from balance_opt.instance import Instance
from balance_opt.model import prefill_flops, sd_iteration_seconds_per_user, sd_user_costs, sd_user_memory
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
from balance_opt.solvers.heuristic.primitives import sd_time_budget

RESOLUTIONS = (1, 4, 32)  # groups of t per bound, coarse to fine


def sd_costs(inst: Instance, L3s: FloatArray, L4s: FloatArray, n: IntArray, z: float) -> FloatArray:
    """``sd_user_costs`` (30) for one ``(L3, L4)`` per row, bit for bit (the test suite checks).

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


def sd_memory(inst: Instance, L3s: FloatArray, L4s: FloatArray, n: IntArray) -> FloatArray:
    """(31) for one ``(L3, L4)`` per row: elementwise, as above."""
    return sd_user_memory(inst, L3s[:, None], L4s[:, None], n[None, :])


class SdFamily:
    """Algorithm 2's blocks ``(L3, L4)`` over the users ``rest``, numbered in lexicographic order."""

    def __init__(self, inst: Instance, z: float, rest: IntArray) -> None:
        self.inst, self.z = inst, z
        n = inst.sd_iterations
        self.order = rest[np.lexsort((rest, n[rest]))]  # (N, k)
        self.key = n[self.order]
        self.tp, self.up = inst.budget_s[self.order], inst.upload_s[self.order]
        self.li = inst.input_tokens[self.order].astype(np.float64)
        self.la = inst.accepted_drafts[self.order]
        self.L3s = np.unique(self.li)
        # each distinct LA joins the pools from the smallest LI among its users on
        self.la_vals, inv = np.unique(self.la, return_inverse=True)
        self.la_from = np.full(self.la_vals.size, np.inf)
        np.minimum.at(self.la_from, inv, self.li)
        by_from = np.argsort(self.la_from, kind="stable")
        count = np.searchsorted(self.la_from[by_from], self.L3s, side="right")  # L4 values per row
        self.pool_min = np.minimum.accumulate(self.la_vals[by_from])[count - 1] if count.size else count
        self.pool_max = np.maximum.accumulate(self.la_vals[by_from])[count - 1] if count.size else count
        self.start = np.concatenate(([0], np.cumsum(count)[:-1])).astype(np.int64)
        self.size = int(count.sum())
        self.t_vals = tuple_range(self.tp)
        self._l4: dict[int, FloatArray] = {}
        self.strict = self._all_strict()

    def _all_strict(self) -> bool:
        """Whether every block's contributions strictly increase with the key (a sufficient test).

        One more iteration adds its per-iteration seconds, which grow with ``L3`` and ``L4``:
        when the smallest of them is above 1e-9 of the largest contribution, no float
        rounding can merge two keys of any block.
        """
        if self.size == 0:
            return True
        n_max = int(self.key.max())
        lo = sd_costs(self.inst, self.L3s[:1], self.la_vals[:1], np.arange(n_max + 1), self.z)[0]
        hi = sd_costs(self.inst, self.L3s[-1:], self.la_vals[-1:], np.array([n_max]), self.z)[0, 0]
        return bool(np.diff(lo).min(initial=np.inf) > 1e-9 * hi)

    def budget(self, t: Any, tau: Any, v: Any) -> Any:
        return sd_time_budget(self.inst, t, tau, v)  # (32)

    def row(self, i: Any) -> Any:
        return np.searchsorted(self.start, i, side="right") - 1

    def l4s(self, r: int) -> FloatArray:
        """Row ``r``'s values of ``L4``: the distinct ``LA`` of its pool, ascending."""
        if r not in self._l4:
            self._l4[r] = self.la_vals[self.la_from <= self.L3s[r]]
        return self._l4[r]

    def split(self, s: IntArray, e: IntArray) -> IntArray:
        r0, r1 = self.row(s), self.row(e - 1)
        # whole rows split at a row start near the middle; one row at its middle
        at = np.clip(np.searchsorted(self.start, (s + e) // 2), r0 + 1, np.maximum(r1, r0 + 1))
        whole = self.start[np.minimum(at, self.start.size - 1)]
        return np.where(r0 < r1, whole, (s + e) // 2)

    def _l4_at(self, i: IntArray) -> FloatArray:
        r = self.row(i)
        return np.array([self.l4s(int(a))[int(b)] for a, b in zip(r, i - self.start[r], strict=True)])

    def relax(self, s: IntArray, e: IntArray) -> Relaxed:
        r0, r1 = self.row(s), self.row(e - 1)
        whole = r0 < r1
        lo4, hi4 = self.pool_min[r1].astype(np.float64), self.pool_max[r1].astype(np.float64)
        one = np.flatnonzero(~whole)
        if one.size:
            lo4[one], hi4[one] = self._l4_at(s[one]), self._l4_at(e[one] - 1)
        pool = (self.li[None, :] <= self.L3s[r1][:, None]) & (self.la[None, :] <= hi4[:, None])
        # (30) and (31) grow with L3 and L4: the smallest of the node are below every block's
        lo3 = self.L3s[r0]
        if self.strict:
            # a tuple of (L3, L4) without a user of LI = L3 is dominated by the previous L3's block
            # (same L4, or the largest one below it: the same candidates); within a row, one
            # without a user of LA = L4 by the previous L4's block
            new3 = pool & (self.li[None, :] >= lo3[:, None])
            new4 = pool & (self.la[None, :] >= lo4[:, None])
            lim3 = new_user_limits(new3, self.tp, self.up, self.key)
            lim4 = new_user_limits(new4, self.tp, self.up, self.key)
            t_cap = np.minimum(lim3[0], lim4[0])
            tau_low, v_low = np.maximum(lim3[1], lim4[1]), np.maximum(lim3[2], lim4[2])
        else:
            t_cap, tau_low, v_low = (
                np.full(s.size, np.inf),
                np.full(s.size, -np.inf),
                np.full(s.size, -np.inf),
            )
        cost, mem = sd_costs(self.inst, lo3, lo4, self.key, self.z), sd_memory(self.inst, lo3, lo4, self.key)
        return Relaxed(pool, cost, mem, t_cap, tau_low, v_low)

    def block(self, i: int) -> Block:
        r = int(self.row(i))
        L3, L4 = float(self.L3s[r]), float(self.l4s(r)[i - self.start[r]])
        m = (self.li <= L3) & (self.la <= L4)
        key = self.key[m]
        cost = sd_user_costs(self.inst, L3, L4, key, self.z)  # (30)
        mem = sd_user_memory(self.inst, L3, L4, key)  # (31)
        return Block(self.order[m], key, self.tp[m], self.up[m], cost, mem, self.t_vals, self.budget)


class SdSearch:
    """Algorithm 2 for one ``(z, lambda)`` (memory ``q2``) over the users ``rest``."""

    def __init__(self, inst: Instance, z: float, q2: float, rest: IntArray, stats: Counters) -> None:
        self.fam = SdFamily(inst, z, rest)
        self.q2, self.stats = q2, stats

    def run(self, floor: int) -> Hit | None:
        """The literal Algorithm 2 answer if its best ``d*`` exceeds ``floor``, else None."""
        fam = self.fam
        if fam.order.size <= floor:
            return None
        users = Users(fam.key, fam.tp, fam.up, fam.budget)
        qs = np.array([self.q2])
        # start from one node per L3: a range of L3 bounds poorly (the smallest L3's contributions)
        tree = TreeSearch(fam, users, fam.tp, qs, lambda c: strict_rows(c, fam.key), fam.start, RESOLUTIONS)
        v_vals, tau_vals = tuple_range(fam.key), tuple_range(fam.up)

        def search(b: int, f: int, group_ub: IntArray, edges: FloatArray) -> Hit | None:
            def rows(tp_rows: FloatArray) -> IntArray:
                return rows_in_groups(tp_rows, edges, group_ub > f)

            return search_leaf(fam.block(b), self.q2, f, rows, v_vals, tau_vals, self.stats)

        found = tree.run(0, floor, search)
        self.stats.add("sd_nodes", tree.nodes)
        return found[1] if found else None
