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
from balance_opt.model import sd_prefill_seconds, sd_user_cost_table, sd_user_costs, sd_user_memory
from balance_opt.solvers.heuristic.blocks import (
    Block,
    BoolArray,
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
from balance_opt.solvers.heuristic.primitives import sd_time_budget
from balance_opt.solvers.heuristic.tree import TreeSearch, Walk

RESOLUTIONS = (1, 4, 32)  # groups of t per bound, coarse to fine
START_NODES = 40  # about as many starting nodes: runs of whole L3 rows (fewer rows, one each)


def sd_costs(inst: Instance, L3s: FloatArray, L4s: FloatArray, n: IntArray, z: float) -> FloatArray:
    """``sd_user_costs`` (30) for one ``(L3, L4)`` per row: the model's own table (the same bits)."""
    return sd_user_cost_table(inst, L3s, L4s, n, z)


def sd_costs_closed(inst: Instance, L3s: FloatArray, L4s: FloatArray, n: IntArray, z: float) -> FloatArray:
    """:func:`sd_costs` in closed form: the same numbers up to rounding, for bounds only.

    An iteration's seconds (11), (12) are affine in its prefix ``P_n``, which grows by
    ``L4 + 1`` per iteration from ``n = 2`` on, so the sum over ``n = 1..N`` is quadratic in ``N``.
    """
    w, ld = 1.0 - z, inst.server.draft_length
    slm, llm = inst.slm, inst.llm
    a_s, a_l = slm.alpha_s_per_flop * slm.layers, llm.alpha_s_per_flop * llm.layers

    def affine(steps: int, verified: int) -> tuple[float, float]:
        # seconds of one iteration = A + B P: drafting ``steps`` tokens, verifying ``verified``
        lin = a_s * steps * slm.linear_flops_per_token + a_l * verified * llm.linear_flops_per_token
        tri = a_s * slm.attention_flops_per_pair * steps * (steps + 1) / 2
        tri += a_l * llm.attention_flops_per_pair * verified * (verified + 1) / 2
        per_p = a_s * slm.attention_flops_per_pair * steps + a_l * llm.attention_flops_per_pair * verified
        return (lin + tri) / w, per_p / w

    (a1, b1), (a2, b2) = affine(ld - 1, ld), affine(ld, ld + 1)
    L3, L4, N = L3s[:, None], L4s[:, None], n[None, :].astype(np.float64)
    pre = sd_prefill_seconds(inst, L3, w)
    return np.asarray(
        pre + a1 + b1 * L3 + (N - 1) * (a2 + b2 * (L3 + L4)) + (N - 2) * (N - 1) / 2 * b2 * (L4 + 1)
    )


def sd_memory(inst: Instance, L3s: FloatArray, L4s: FloatArray, n: IntArray) -> FloatArray:
    """(31) for one ``(L3, L4)`` per row: elementwise, as above."""
    return sd_user_memory(inst, L3s[:, None], L4s[:, None], n[None, :])


class SdContext:
    """What Algorithm 2 needs at one ``z`` for any set of remaining users: all users in ``(N, k)`` order."""

    def __init__(self, inst: Instance, z: float) -> None:
        self.inst, self.z = inst, z
        n = inst.sd_iterations
        self.order = np.lexsort((np.arange(inst.num_users), n))  # (N, k)
        self.key = n[self.order]
        self.tp, self.up = inst.budget_s[self.order], inst.upload_s[self.order]
        self.li = inst.input_tokens[self.order].astype(np.float64)
        self.la = inst.accepted_drafts[self.order]
        self.users = Users(self.key, self.tp, self.up, self.budget)
        # any partition of t bounds correctly: the groups of all users' Tp serve every pair
        self.edges = ladder(self.tp, RESOLUTIONS)
        self.strict = self._all_strict()

    def budget(self, t: Any, tau: Any, v: Any) -> Any:
        return sd_time_budget(self.inst, t, tau, v)  # (32)

    def _all_strict(self) -> bool:
        """Whether every block of every set of users has contributions strictly increasing with the key.

        A sufficient test: one more iteration adds its per-iteration seconds, which grow with
        ``L3`` and ``L4``; when the smallest of them (at the smallest ``LI`` and ``LA``) is
        above 1e-9 of the largest contribution, no float rounding can merge two keys.
        """
        if self.key.size == 0:
            return True
        n_max = int(self.key.max())
        lo3, hi3 = np.array([self.li.min()]), np.array([self.li.max()])
        lo4, hi4 = np.array([self.la.min()]), np.array([self.la.max()])
        lo = sd_costs(self.inst, lo3, lo4, np.arange(n_max + 1), self.z)[0]
        hi = sd_costs(self.inst, hi3, hi4, np.array([n_max]), self.z)[0, 0]
        return bool(np.diff(lo).min(initial=np.inf) > 1e-9 * hi)


class SdFamily:
    """Algorithm 2's blocks ``(L3, L4)`` over the users ``rest``, numbered in lexicographic order.

    Arrays run over all users in ``(N, k)`` order (:class:`SdContext`); pools hold ``rest`` only.
    """

    def __init__(self, ctx: SdContext, rest: BoolArray) -> None:
        self.ctx, self.rest = ctx, rest[ctx.order]  # in key order
        li, la = ctx.li[self.rest], ctx.la[self.rest]
        self.L3s = np.unique(li)
        # each distinct LA joins the pools from the smallest LI among its users on
        self.la_vals, inv = np.unique(la, return_inverse=True)
        self.la_from = np.full(self.la_vals.size, np.inf)
        np.minimum.at(self.la_from, inv, li)
        by_from = np.argsort(self.la_from, kind="stable")
        count = np.searchsorted(self.la_from[by_from], self.L3s, side="right")  # L4 values per row
        self.pool_min = np.minimum.accumulate(self.la_vals[by_from])[count - 1] if count.size else count
        self.pool_max = np.maximum.accumulate(self.la_vals[by_from])[count - 1] if count.size else count
        self.count = count
        self.start = np.concatenate(([0], np.cumsum(count)[:-1])).astype(np.int64)
        self.size = int(count.sum())
        # the blocks' L4, row after row: row r holds the LA values that have joined by L3s[r]
        _, cols = np.nonzero(self.la_from[None, :] <= self.L3s[:, None])
        self.l4_flat: FloatArray = self.la_vals[cols]

    def row(self, i: Any) -> Any:
        return np.searchsorted(self.start, i, side="right") - 1

    def l4s(self, r: int) -> FloatArray:
        """Row ``r``'s values of ``L4``: the distinct ``LA`` of its pool, ascending."""
        return self.l4_flat[self.start[r] : self.start[r] + self.count[r]]

    def split(self, s: IntArray, e: IntArray) -> IntArray:
        r0, r1 = self.row(s), self.row(e - 1)
        # whole rows split at a row start near the middle; one row at its middle
        at = np.clip(np.searchsorted(self.start, (s + e) // 2), r0 + 1, np.maximum(r1, r0 + 1))
        whole = self.start[np.minimum(at, self.start.size - 1)]
        return np.where(r0 < r1, whole, (s + e) // 2)

    def relax(self, s: IntArray, e: IntArray) -> Relaxed:
        ctx = self.ctx
        r0, r1 = self.row(s), self.row(e - 1)
        whole = r0 < r1
        lo4, hi4 = self.pool_min[r1].astype(np.float64), self.pool_max[r1].astype(np.float64)
        one = np.flatnonzero(~whole)
        if one.size:
            lo4[one], hi4[one] = self.l4_flat[s[one]], self.l4_flat[e[one] - 1]
        pool = self.rest & (ctx.li[None, :] <= self.L3s[r1][:, None]) & (ctx.la[None, :] <= hi4[:, None])
        # (30) and (31) grow with L3 and L4: the smallest of the node are below every block's
        lo3 = self.L3s[r0]
        if ctx.strict:
            # a tuple of (L3, L4) without a user of LI = L3 is dominated by the previous L3's block
            # (same L4, or the largest one below it: the same candidates); within a row, one
            # without a user of LA = L4 by the previous L4's block
            lim3 = new_user_limits(pool & (ctx.li[None, :] >= lo3[:, None]), ctx.tp, ctx.up, ctx.key)
            lim4 = new_user_limits(pool & (ctx.la[None, :] >= lo4[:, None]), ctx.tp, ctx.up, ctx.key)
            t_cap = np.minimum(lim3[0], lim4[0])
            tau_low, v_low = np.maximum(lim3[1], lim4[1]), np.maximum(lim3[2], lim4[2])
        else:
            t_cap, tau_low, v_low = np.full(s.size, np.inf), np.full(s.size, -np.inf), np.zeros(s.size)
        # the closed form bounds (with the slack); a single block's own, exact, give lower bounds too
        cost = sd_costs_closed(ctx.inst, lo3, lo4, ctx.key, ctx.z)
        leaf = np.flatnonzero(e - s == 1)
        if leaf.size:
            cost[leaf] = sd_costs(ctx.inst, lo3[leaf], lo4[leaf], ctx.key, ctx.z)
        return Relaxed(pool, cost, sd_memory(ctx.inst, lo3, lo4, ctx.key), t_cap, tau_low, v_low)

    def block(self, i: int) -> Block:
        ctx = self.ctx
        r = int(self.row(i))
        L3, L4 = float(self.L3s[r]), float(self.l4_flat[i])
        m = self.rest & (ctx.li <= L3) & (ctx.la <= L4)
        key = ctx.key[m]
        cost = sd_user_costs(ctx.inst, L3, L4, key, ctx.z)  # (30)
        mem = sd_user_memory(ctx.inst, L3, L4, key)  # (31)
        t_vals = tuple_range(ctx.tp[self.rest])  # t over the remaining users
        return Block(ctx.order[m], key, ctx.tp[m], ctx.up[m], cost, mem, t_vals, ctx.budget)


def _row_runs(rows: IntArray, most: int) -> tuple[IntArray, IntArray]:
    """``rows`` (ascending) cut into runs of consecutive rows, ``most`` at most: first and last of each."""
    if rows.size == 0:
        return rows, rows
    new_run = np.diff(rows, prepend=rows[0] - 2) != 1
    run_start = np.maximum.accumulate(np.where(new_run, np.arange(rows.size), 0))
    cut = np.flatnonzero(new_run | ((np.arange(rows.size) - run_start) % most == 0))
    return rows[cut], np.append(rows[cut[1:] - 1], rows[-1])


class SdSearch:
    """Algorithm 2 for one ``(z, lambda)`` (memory ``q2``) over the users ``rest``."""

    def __init__(self, ctx: SdContext, q2: float | FloatArray, rest: IntArray, stats: Counters) -> None:
        """``q2`` may hold several memories: :meth:`top` bounds each; :meth:`run` takes a single one."""
        mask = np.zeros(ctx.inst.num_users, dtype=bool)
        mask[rest] = True
        self.fam = SdFamily(ctx, mask)
        self.qs, self.stats = np.atleast_1d(np.asarray(q2, dtype=np.float64)), stats
        self.q2 = float(self.qs[0])
        # start from one node per L3: a range of L3 bounds poorly (the smallest L3's contributions)
        self.tree = TreeSearch(
            self.fam,
            ctx.users,
            ctx.edges,
            Budgets.of(self.qs),
            lambda c: strict_rows(c, ctx.key),
            self.fam.start,
        )

    def top(self, res: int = 0) -> IntArray:
        """Per memory: a bound on Algorithm 2's best ``d*`` (the starting nodes' at resolution ``res``)."""
        return self.tree.top(res) if self.fam.size else np.zeros(self.qs.size, dtype=np.int64)

    def row_bounds(self, res: int = 0) -> IntArray:
        """``[row, memory]``: a bound on each ``L3`` row's best ``d*`` (at resolution ``res``)."""
        ubs, _ = self.tree.bounds(*self.tree.start, min(res, len(self.tree.edges) - 1))
        return np.stack(ubs).max(axis=1) if ubs else np.zeros((0, self.qs.size), dtype=np.int64)

    def walk(self, floor: int, L3s: FloatArray | None = None, row_ub: IntArray | None = None) -> Walk:
        """Algorithm 2's search above ``floor``, to be taken a step at a time (:class:`Walk`).

        ``row_ub[j]``, when given, bounds the best ``d*`` of the row ``L3 = L3s[j]`` over a
        superset of the users (say all of them): the rows it holds at or below ``floor``
        cannot beat it and are left out.
        """
        fam, ctx = self.fam, self.fam.ctx
        keep = np.ones(fam.L3s.size, dtype=bool)
        if L3s is not None and row_ub is not None:
            keep = row_ub[np.searchsorted(L3s, fam.L3s)] > floor
        first, last = _row_runs(np.flatnonzero(keep), max(1, fam.L3s.size // START_NODES))
        start = (fam.start[first], fam.start[last] + fam.count[last])

        def search(b: int, f: int, group_ub: IntArray, edges: FloatArray) -> Hit | None:
            def rows(tp_rows: FloatArray) -> IntArray:
                return rows_in_groups(tp_rows, edges, group_ub > f)

            rest = fam.rest
            v_vals, tau_vals = tuple_range(ctx.key[rest]), tuple_range(ctx.up[rest])
            return search_leaf(fam.block(b), self.q2, f, rows, v_vals, tau_vals, self.stats)

        return Walk(self.tree, 0, floor, search, start=start)

    def run(self, floor: int) -> Hit | None:
        """The literal Algorithm 2 answer if its best ``d*`` exceeds ``floor``, else None."""
        walk = self.walk(floor)
        while not walk.done:
            walk.step()
        self.stats.add("sd_nodes", self.tree.nodes)
        return walk.best
