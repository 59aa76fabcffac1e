"""Upper bounds on ``d*`` for ranges of blocks, and the tree search that keeps the blocks worth searching.

The blocks of Algorithm 1 (one per ``L1``) or 2 (one per ``(L3, L4)``) are numbered in the
lexicographic order of their parameters. A *node* is a range ``[s, e)`` of them; a
:class:`Family` relaxes it to one pool that contains every block's pool and contributions
that are below every block's (contributions grow with the parameters, docs/model.md
section 7). The users are in key order (``LO`` resp. ``N``, then position).

The threshold ``t`` is cut into *groups*: group ``a`` holds ``t`` in ``(E_a, E_{a+1}]``. Any
tuple of a node with ``t`` in group ``a`` has candidates among the node pool's users with
``Tp > E_a``, a budget at most ``budget(E_{a+1}, upmin, v)`` (``upmin``: the smallest upload
time of those users) and ``v`` at least the key of its ``d``-th candidate. Its ``d``-th prefix
sums (time and memory) are at least those of the ``d`` first such users in key order,
because their contributions are the ``d`` smallest (order statistics). So the largest ``d``
whose key-order prefix passes ``S_d <= budget(E_{a+1}, upmin, key_d)`` and ``M_d <= Q`` bounds
``d*`` of every tuple of the node in that group.

The comparisons of an upper bound give up a relative ``SLACK`` of the sums. Float sums of
the same numbers in another order can differ in the last bits, and the literal order
``(c_k, k)`` is the key order only where contributions strictly increase with the key: the
slack keeps the bound valid in every case, at no cost worth counting.

A lower bound comes from actual tuples of a single block (a leaf) whose contributions
strictly increase with the key: ``(v = key_j, t = the smallest Tp of the group's users,
tau = the largest upload time of those with key <= v)``, whose ``d*`` is computed exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from balance_opt.solvers.heuristic.blocks import BoolArray, FloatArray, IntArray

SLACK = 1e-9  # relative: far above float rounding of sums of <= 1e6 terms, far below any real margin
CHUNK_CELLS = 1 << 20  # nodes x groups x users per batch (a few arrays of 8 MB)
Budget = Callable[[Any, Any, Any], Any]


@dataclass(frozen=True)
class Relaxed:
    """What bounds a node: arrays of shape ``(nodes, users)`` and limits of shape ``(nodes,)``.

    Only tuples that are not *dominated* need a bound: a tuple is dominated when an earlier
    tuple (lexicographically) has the same candidates and contributions no larger, hence
    a ``d*`` at least as large (when all blocks are strict, so both sum in key order); it
    can never be the literal answer. A block's tuples whose candidates miss every user new
    to the block (not in the previous block's pool) are dominated by the same ``(v, t, tau)``
    in the previous block. So every tuple that matters has a new user among its candidates:
    ``t <= t_cap`` (the largest ``Tp`` of the node's new users), ``tau >= tau_low``, ``v >= v_low``.
    """

    pool: BoolArray
    cost: FloatArray
    mem: FloatArray
    t_cap: FloatArray
    tau_low: FloatArray
    v_low: FloatArray


def new_user_limits(new: BoolArray, tp: FloatArray, up: FloatArray, key: Any) -> tuple[FloatArray, ...]:
    """``(t_cap, tau_low, v_low)`` of nodes whose tuples must each hold one of the users ``new[node]``.

    A node with no such user holds no tuple that matters: ``t_cap = -inf``.
    """
    t_cap = np.where(new, tp, -np.inf).max(axis=1)
    some = np.isfinite(t_cap)
    tau_low = np.where(some, np.where(new, up, np.inf).min(axis=1), 0.0)
    v_low = np.where(some, np.where(new, key, np.inf).min(axis=1), 0.0)
    return t_cap, tau_low, v_low


@dataclass(frozen=True)
class Users:
    """The users in key order, as the bounds see them."""

    key: IntArray
    tp: FloatArray
    up: FloatArray
    budget: Budget


LADDER_MIN_USERS = 48  # with fewer users, a node costs less than a batch's overhead: finest only


def ladder(tp: FloatArray, resolutions: Sequence[int]) -> list[FloatArray]:
    """The groups of ``t`` (:func:`group_edges`) at each resolution, coarse to fine.

    The coarse ones save cells on large pools; with fewer than ``LADDER_MIN_USERS`` users
    only the finest is kept (measured: fewer batches matter more there).
    """
    kept = resolutions if tp.size >= LADDER_MIN_USERS else resolutions[-1:]
    return [group_edges(tp, c) for c in kept]


def group_edges(tp: FloatArray, groups: int) -> FloatArray:
    """Edges ``E_0 = -inf < E_1 < ... < E_C = max Tp`` cutting the ``t`` axis into ``C`` groups.

    Each group holds about as many distinct ``Tp`` values; with at most ``groups`` values,
    each is a group of its own (the bound is then per row, as tight as it gets).
    """
    vals = np.unique(tp)
    if vals.size == 0:
        return np.array([-np.inf, -np.inf])
    inner = vals[:-1] if vals.size <= groups else vals[(np.arange(1, groups) * vals.size) // groups - 1]
    return np.concatenate(([-np.inf], np.unique(inner), [vals[-1]]))


@dataclass(frozen=True)
class Budgets:
    """The budgets a bound is asked for: memory ``qs[i]`` with contributions divided by ``scales[i]``.

    A scale lets one set of contributions serve several compute fractions: Algorithm 1's
    contributions (26) at ``z`` are those at ``z = 1`` divided by ``z`` (up to rounding,
    which the slack covers). Lower bounds are computed only when every scale is 1.
    """

    qs: FloatArray
    scales: FloatArray

    @classmethod
    def of(cls, qs: FloatArray) -> Budgets:
        return cls(qs, np.ones_like(qs))

    @property
    def exact(self) -> bool:
        return bool(np.all(self.scales == 1.0))

    @cached_property
    def distinct_qs(self) -> tuple[FloatArray, IntArray]:
        """The distinct memory budgets, and which one each budget is."""
        values, which = np.unique(self.qs, return_inverse=True)
        return values, which.ravel()

    @cached_property
    def by_scale(self) -> list[tuple[float, IntArray]]:
        """Each distinct scale and the budgets at it."""
        return [(s, np.flatnonzero(self.scales == s)) for s in np.unique(self.scales).tolist()]


def group_bounds(
    users: Users, edges: FloatArray, rel: Relaxed, budgets: Budgets, real: BoolArray
) -> tuple[IntArray, IntArray]:
    """``(ub, lb)``: ``ub[node, group, i]`` bounds ``d*`` from above, ``lb[node, i]`` is an actual ``d*``.

    ``ub`` covers every tuple of the node that is not dominated (:class:`Relaxed`). ``lb`` is
    computed for the nodes marked ``real`` (single blocks whose contributions strictly
    increase with the key) and is 0 elsewhere. Nodes are taken in chunks of about
    ``CHUNK_CELLS`` cells, each over the users in some pool of the chunk only.
    """
    n, p = rel.pool.shape
    ng, nq = edges.size - 1, budgets.qs.size
    ub = np.zeros((n, ng, nq), dtype=np.int64)
    lb = np.zeros((n, nq), dtype=np.int64)
    step = max(1, CHUNK_CELLS // (ng * max(p, 1)))
    for a in range(0, n, step):
        b = slice(a, min(n, a + step))
        cols = np.flatnonzero(rel.pool[b].any(axis=0))
        if cols.size:
            ub[b], lb[b] = _chunk_bounds(users, cols, edges, rel, b, budgets, real[b])
    return ub, lb


def _chunk_bounds(
    users: Users, cols: IntArray, edges: FloatArray, rel: Relaxed, b: slice, budgets: Budgets, real: BoolArray
) -> tuple[IntArray, IntArray]:
    """:func:`group_bounds` for the nodes ``b``, over the users ``cols`` (all their pools).

    Cells off a group's members repeat the last member's sums and rank under a smaller
    budget, so they never raise a bound and need no mask.
    """
    key, tp, up = users.key[cols], users.tp[cols], users.up[cols]
    pool = rel.pool[b][:, cols]
    p = cols.size
    lo_edges, hi_edges = edges[:-1], edges[1:]
    member = pool[:, None, :] & (tp[None, :] > lo_edges[:, None])[None, :, :]
    rank = np.cumsum(member, axis=2, dtype=np.int32)
    cs = np.cumsum(member * rel.cost[b][:, None, cols], axis=2)  # adding 0.0 is exact
    ms = np.cumsum(member * rel.mem[b][:, None, cols], axis=2)
    # groups are nested: group a's users are the last ones in Tp order
    by_tp = np.argsort(tp, kind="stable")
    first = np.searchsorted(tp[by_tp], lo_edges, side="right")  # group a: by_tp[first[a]:]
    at = np.minimum(first, p - 1)
    upmin = np.minimum.accumulate(np.where(pool, up, np.inf)[:, by_tp[::-1]], axis=1)[:, ::-1][:, at]
    upmin = np.where(first < p, np.maximum(upmin, rel.tau_low[b, None]), np.inf)
    valid = np.isfinite(upmin) & (lo_edges[None, :] < rel.t_cap[b, None])
    upmin = np.where(valid, upmin, 0.0)
    t_top = np.where(valid, np.minimum(hi_edges[None, :], rel.t_cap[b, None]), 0.0)
    # the slack, as seconds added to t: above any rounding of sums of this size
    h_max = abs(float(users.budget(0.0, 0.0, float(key.max()))))
    t_top = np.where(valid, t_top + SLACK * (np.abs(t_top) + upmin + h_max), -np.inf)
    v = np.maximum(key[None, :], rel.v_low[b, None])[:, None, :]
    budget = users.budget(t_top[:, :, None], upmin[:, :, None], v)
    qs, which = budgets.distinct_qs
    ends = _ends(ms, qs + SLACK * np.abs(qs))[:, :, which]
    ub: IntArray = np.empty(ends.shape, dtype=np.int64)
    for scale, at_scale in budgets.by_scale:
        ok = cs <= (budget if scale == 1.0 else budget * scale)  # cost / scale <= budget
        ub[:, :, at_scale] = _levels(ok, rank, ends[:, :, at_scale])
    lb = np.zeros((pool.shape[0], which.size), dtype=np.int64)
    r = np.flatnonzero(real) if budgets.exact else np.zeros(0, dtype=np.int64)
    if r.size:
        # the smallest Tp of a group's users: an actual t with exactly those users
        t_real = np.minimum.accumulate(np.where(pool[r], tp, np.inf)[:, by_tp][:, ::-1], axis=1)[:, ::-1][
            :, at
        ]
        t_real = np.where(first < p, t_real, -np.inf)
        upmax = np.maximum.accumulate(np.where(member[r], up, -np.inf), axis=2)[:, :, _key_last(key)]
        with np.errstate(invalid="ignore"):  # no user yet: -inf - -inf, rank 0 anyway
            ok = cs[r] <= users.budget(t_real[:, :, None], upmax, key[None, None, :])
        lb[r] = _levels(ok, rank[r], _ends(ms[r], qs)[:, :, which]).max(axis=1)
    return ub, lb


def _key_last(key: IntArray) -> IntArray:
    """Per position of a key-sorted array: the last position with the same key."""
    kstart = np.flatnonzero(np.diff(key, prepend=key[:1] - 1))
    return np.append(kstart[1:], key.size)[np.cumsum(np.diff(key, prepend=key[:1]) != 0)] - 1


def _ends(mem_sums: FloatArray, qs: FloatArray) -> IntArray:
    """``[node, group, q]``: how many leading cells of a row are within the memory budget ``q``.

    ``mem_sums`` is non-decreasing along a row, so the cells within a budget are a prefix.
    """
    ends = np.empty((*mem_sums.shape[:2], qs.size), dtype=np.int64)
    for i, q in enumerate(qs.tolist()):
        over = mem_sums > q
        ends[:, :, i] = np.where(over[:, :, -1], np.argmax(over, axis=2), mem_sums.shape[2])
    return ends


def _levels(ok: BoolArray, rank: Any, ends: IntArray) -> IntArray:
    """Per ``[node, group, q]``: the largest rank of an ``ok`` cell among the first ``ends`` cells.

    That is the running maximum of ``ok`` ranks at the prefix's end.
    """
    pm = np.maximum.accumulate(rank * ok, axis=2)
    val = np.take_along_axis(pm, np.maximum(ends - 1, 0), axis=2)
    return np.where(ends > 0, val, 0).astype(np.int64)


def rows_in_groups(tp_rows: FloatArray, edges: FloatArray, groups: BoolArray) -> IntArray:
    """Rows (distinct ``Tp`` of a pool, ascending) whose ``t`` range meets a chosen group.

    Row ``g`` holds ``t`` in ``(tp_rows[g-1], tp_rows[g]]``, group ``a`` holds ``(E_a, E_{a+1}]``.
    """
    prev = np.concatenate(([-np.inf], tp_rows[:-1]))
    lo, hi = edges[:-1][groups], edges[1:][groups]
    meet = (prev[:, None] < hi[None, :]) & (tp_rows[:, None] > lo[None, :])
    return np.flatnonzero(meet.any(axis=1))
