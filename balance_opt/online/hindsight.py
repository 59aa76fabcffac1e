"""The hindsight bound (docs/online.md, "The hindsight bound").

No policy of :func:`balance_opt.online.simulate`, however clairvoyant, serves more users of a
workload than :func:`hindsight_bound` says. Why each step is valid:

1. *A user costs at least what it costs alone at full compute, in the mode it runs in.*
   A batch pads every member to the batch's largest input (``L1``, ``L3``), the SD prefix
   ``P_n`` to the largest accepted count of the active members, and every FLOP count grows
   with these; a member's own iterations (its realized ``N_k``, from its own acceptance
   stream) are the same in any batch. So in a batch of mode ``m`` at share ``s`` the member
   adds at least ``c_k^m / s`` compute seconds (``c_k^m``: alone, share 1), the batch lasts
   at least ``l_k^m`` (alone duration at share 1) after its compute starts, and its realized
   KV footprint holds at least ``kv_k^m`` (alone) of the member's bytes. The server reserves
   ``max(planned, realized)`` KV bytes for the whole batch, so that reservation too.
2. *Windows.* Compute starts once every member's upload is complete, ``r_k = a_k + up_k``,
   and a served member's batch ends by ``d_k = a_k + T_k (1 + REL_TOL) - down_k``.
3. *One GPU.* The split ``z`` is fixed while either lane runs, so the shares of the running
   batches sum to at most 1: in any interval ``[s, e]`` the share-weighted busy time is at
   most ``e - s``, and a batch at share ``s`` with a member whose window lies in ``[s, e]``
   lies inside it and contributes ``s (c_batch / s) >= sum`` of its members' ``c_k^m``.
4. *Memory.* Every batch's reservation is checked against ``Q`` less the resident weights
   and the other lane's reservation (and the plan against the evaluator's memory rule), so
   at any time the reservations sum to at most ``Q (1 + REL_TOL) - q^L``: in ``[s, e]`` the
   members' ``kv_k^m l_k^m`` sum to at most ``(Q (1 + REL_TOL) - q^L)(e - s)``.

Per user the costs are minimized over the modes it can be served in alone (its alone
duration fits its window, its alone KV fits beside the weights, the grid gives the mode
compute); a user with no such mode is never served. The rest is a packing problem solved
exactly (a MILP, small workloads) or bounded (groups of a partition of time, large ones).
Every limit is loosened by ``BOUND_TOL`` so float rounding never excludes a served user.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from balance_opt.instance import Instance
from balance_opt.model import (
    BOUND_TOL,
    ad_compute_flops,
    ad_user_memory,
    loosened,
    sd_iteration_seconds_per_user,
    sd_prefill_seconds,
    sd_user_memory,
    tolerated,
)
from balance_opt.online.acceptance import emitted_tokens, user_rng
from balance_opt.online.workload import Workload

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

# the partitions the block bound tries: lengths as multiples of the median window, offsets
# as fractions of the length; one more partition puts everyone in one group
BLOCK_FACTORS = (1.0, 2.0, 4.0, 8.0, 16.0, 64.0)
BLOCK_OFFSETS = (0.0, 1.0 / 3.0, 2.0 / 3.0)
_U = float(np.finfo(np.float64).eps)


@dataclass(frozen=True, eq=False)
class HindsightBound:
    """An upper bound on the users any policy serves, and the per-user data it rests on.

    ``release_s``/``due_s`` are the loosened windows ``[r_k, d_k]``; ``compute_s`` is
    ``c_k``, ``length_s`` is ``l_k`` and ``memory_s`` is ``mt_k / M`` (KV byte-seconds over
    the KV capacity ``M = Q (1 + REL_TOL)(1 + BOUND_TOL) - q^L``, in seconds), each the
    least over the user's alone-feasible modes, ``inf`` for a user with none.
    """

    bound: int
    alone_feasible: int
    method: str  # "milp", "blocks" or "alone": which argument gave the bound
    proved: bool  # the bound is the packing optimum: the MILP solved to optimality, or nobody fits
    blocks_bound: int
    milp_bound: int | None  # None: more alone-feasible users than exact_up_to
    feasible: BoolArray
    release_s: FloatArray
    due_s: FloatArray
    compute_s: FloatArray
    length_s: FloatArray
    memory_s: FloatArray


@dataclass(frozen=True)
class AloneRuns:
    """Per user, column 0 AD and column 1 SD: alone at share 1 (as ``execution`` runs it)."""

    compute_s: FloatArray
    duration_s: FloatArray
    kv_bytes: FloatArray


def _ad_alone(inst: Instance) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``ad_run(inst, [k], 1.0)`` for every k at once: its own input is the padding."""
    li = inst.input_tokens.astype(np.float64)
    lo = inst.output_tokens.astype(np.float64)
    compute = inst.llm.alpha_s_per_flop * ad_compute_flops(inst, li, lo)
    return compute, compute + lo * inst.llm.beta_s, ad_user_memory(inst, li, lo)


def _sd_fixed(inst: Instance, n: NDArray[np.int64]) -> FloatArray:
    return np.asarray((n + 1) * inst.llm.beta_s + n * inst.server.draft_length * inst.slm.beta_s)


def _sd_expected_alone(inst: Instance) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``sd_expected_run(inst, [k], 1.0)`` for every k: iterations 1..N_k as a masked table."""
    l3 = inst.input_tokens.astype(np.float64)
    l4 = inst.accepted_drafts.astype(np.float64)
    nk = inst.sd_iterations.astype(np.int64)
    per_iter = sd_iteration_seconds_per_user(inst, l3[:, None], l4[:, None], int(nk.max()), 1.0)
    active = np.arange(1, per_iter.shape[1] + 1)[None, :] <= nk[:, None]
    compute = sd_prefill_seconds(inst, l3, 1.0) + np.where(active, per_iter, 0.0).sum(axis=1)
    return compute, compute + _sd_fixed(inst, nk), sd_user_memory(inst, l3, l4, nk)


def _sd_random_alone(inst: Instance, seed: int) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``sd_random_run(inst, [k], [emitted_k], 1.0)`` for every k, over all iterations at once.

    Alone, iteration 1 runs at the prefix ``L3 = LI_k`` and iteration ``n >= 2`` at
    ``LI_k + e_{n-1} - 1``, ``e_{n-1}`` the tokens emitted before it."""
    k = inst.num_users
    ld = inst.server.draft_length
    emitted = [
        emitted_tokens(float(inst.acceptance[i]), ld, int(inst.output_tokens[i]), user_rng(seed, i))
        for i in range(k)
    ]
    nk = np.array([len(e) for e in emitted], dtype=np.int64)
    li = inst.input_tokens.astype(np.float64)
    owner = np.repeat(np.arange(k), nk - 1)  # one entry per iteration n >= 2
    before = np.concatenate([e[:-1] for e in emitted]).astype(np.float64)
    prefix = li[owner] + before - 1.0
    later = sd_iteration_seconds_per_user(inst, prefix[:, None], 0.0, 2, 1.0)[:, 1]
    first = sd_iteration_seconds_per_user(inst, li[:, None], 0.0, 1, 1.0)[:, 0]
    compute = sd_prefill_seconds(inst, li, 1.0) + first + np.bincount(owner, later, minlength=k)
    last = np.array([e[-2] if len(e) >= 2 else 1 for e in emitted], dtype=np.float64)
    kv = sd_user_memory(inst, li + last - 1.0, 0.0, np.minimum(nk, 2))
    return compute, compute + _sd_fixed(inst, nk), kv


def alone_runs(workload: Workload) -> AloneRuns:
    """Every user alone at full compute in AD and in SD (the workload's acceptance)."""
    inst = workload.instance
    ad = _ad_alone(inst)
    if workload.acceptance == "random":
        sd = _sd_random_alone(inst, workload.acceptance_seed)
    else:
        sd = _sd_expected_alone(inst)
    c, d, m = (
        np.column_stack((np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)))
        for a, b in zip(ad, sd, strict=True)
    )
    return AloneRuns(c, d, m)


@dataclass(frozen=True)
class _Users:
    """The packing problem, per user: loosened window, alone feasibility, least costs (inf: none)."""

    feasible: BoolArray
    release_s: FloatArray
    due_s: FloatArray
    compute_s: FloatArray
    length_s: FloatArray
    memory_s: FloatArray


def packing_data(workload: Workload) -> _Users:
    """Windows, alone feasibility and least per-user costs (the module docstring's 1-4)."""
    inst = workload.instance
    a = workload.arrival_s
    runs = alone_runs(workload)
    # absolute slack: the simulator's end times and deadline test round at the scale of a + T
    slack = BOUND_TOL * (a + inst.deadline_s + inst.upload_s + inst.download_s)
    release = a + inst.upload_s - slack
    due = a + tolerated(inst.deadline_s) - inst.download_s + slack
    kv_cap = loosened(tolerated(inst.server.memory_bytes)) - inst.llm_weight_bytes
    grid = inst.server.z_grid
    # AD needs some z > 0, SD some z < 1 (D7); SD also keeps the SLM's weights resident
    fits = np.column_stack(
        (
            runs.kv_bytes[:, 0] <= kv_cap if max(grid) > 0.0 else np.zeros(len(a), dtype=np.bool_),
            runs.kv_bytes[:, 1] <= kv_cap - inst.slm_weight_bytes
            if min(grid) < 1.0
            else np.zeros(len(a), dtype=np.bool_),
        )
    )
    ok = fits & (release[:, None] + runs.duration_s <= due[:, None])
    feasible = np.asarray(ok.any(axis=1), dtype=np.bool_)

    def least(values: FloatArray) -> FloatArray:
        return np.asarray(np.where(ok, values, np.inf).min(axis=1), dtype=np.float64)

    # byte-seconds over the KV capacity (no capacity: nobody fits, ``ok`` is all false)
    memory = runs.kv_bytes * runs.duration_s / kv_cap if kv_cap > 0.0 else np.full_like(runs.kv_bytes, np.inf)
    return _Users(feasible, release, due, least(runs.compute_s), least(runs.duration_s), least(memory))


def _greedy_counts(group: NDArray[np.int64], cost: FloatArray, cap: FloatArray) -> NDArray[np.int64]:
    """Per group: the most members whose costs, smallest first, sum to at most the group's cap.

    The most of a set fitting a budget are its smallest. The in-group running sums come from
    one global running sum, whose rounding is below ``n u`` of its total: that much is added
    to every cap, so a set that fits is never counted short."""
    order = np.lexsort((cost, group))
    g, c = group[order], cost[order]
    total = np.cumsum(c)
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    before = np.where(starts > 0, total[np.maximum(starts - 1, 0)], 0.0)
    sizes = np.diff(np.r_[starts, len(g)])
    within = total - np.repeat(before, sizes)
    guard = 2.0 * len(c) * _U * (float(total[-1]) if len(c) else 0.0)
    fit = within <= cap[g] + guard
    return np.bincount(g, weights=fit, minlength=len(cap)).astype(np.int64)


def _partition_bound(u: _Users, length: float, offset: float) -> int:
    """Users grouped by (block of r_k, block of d_k): each group's served members lie in the
    group's span, so they fit its compute and memory-time; the counts add up."""
    rb = np.floor((u.release_s - offset) / length)
    db = np.floor((u.due_s - offset) / length)
    _, group = np.unique(np.column_stack((rb, db)), axis=0, return_inverse=True)
    group = group.reshape(-1).astype(np.int64)
    n_groups = int(group.max()) + 1
    lo = np.full(n_groups, np.inf)
    hi = np.full(n_groups, -np.inf)
    np.minimum.at(lo, group, u.release_s)
    np.maximum.at(hi, group, u.due_s)
    span = hi - lo
    by_compute = _greedy_counts(group, u.compute_s, span)
    by_memory = _greedy_counts(group, u.memory_s, span)
    return int(np.minimum(by_compute, by_memory).sum())


def blocks_bound(u: _Users) -> int:
    """The least partition bound over several block lengths and offsets (feasible users only)."""
    f = _subset(u, u.feasible)
    if not len(f.release_s):
        return 0
    start = float(f.release_s.min())
    horizon = float(f.due_s.max()) - start
    best = _partition_bound(f, 2.0 * horizon + 1.0, start - 1.0)  # everyone in one group
    median = float(np.median(f.due_s - f.release_s))
    for factor in BLOCK_FACTORS:
        length = factor * median
        if not (length > 0.0 and math.isfinite(length)) or length > horizon:
            continue
        for frac in BLOCK_OFFSETS:
            best = min(best, _partition_bound(f, length, start - frac * length))
    return best


def _subset(u: _Users, keep: BoolArray) -> _Users:
    return _Users(
        u.feasible[keep],
        u.release_s[keep],
        u.due_s[keep],
        u.compute_s[keep],
        u.length_s[keep],
        u.memory_s[keep],
    )


def interval_rows(u: _Users) -> tuple[FloatArray, FloatArray]:
    """The binding interval constraints of the feasible users ``u``: ``A x <= cap``, dense.

    Any interval's constraint is implied by the one on the span ``[min r, max d]`` of the
    users inside it, whose ends are some ``r_i`` and ``d_j`` of users inside: so only the
    intervals ``[r_i, d_j]`` that are the span of their users are kept, and of those only
    the rows that the whole set would break (a row its whole set meets binds no subset).
    Each kept interval gives a compute row (``c_k``) and a memory-time row (``mt_k / M``)."""
    s = np.unique(u.release_s)
    e = np.unique(u.due_s)
    r, d = u.release_s[None, None, :], u.due_s[None, None, :]
    inside = (r >= s[:, None, None]) & (d <= e[None, :, None])
    starts = (inside & (r == s[:, None, None])).any(axis=2)
    ends = (inside & (d == e[None, :, None])).any(axis=2)
    si, ej = np.nonzero(starts & ends)
    member = inside[si, ej]
    span = e[ej] - s[si]
    rows: list[FloatArray] = []
    caps: list[FloatArray] = []
    for cost in (u.compute_s, u.memory_s):
        a = np.where(member, cost[None, :], 0.0)
        binding = a.sum(axis=1) > span
        rows.append(a[binding])
        caps.append(span[binding])
    return np.concatenate(rows), np.concatenate(caps)


def milp_bound(u: _Users, time_limit_s: float) -> tuple[int, bool]:
    """The most users meeting every interval row (HiGHS), and whether that is proved optimal.

    Stopped early, HiGHS's dual bound still bounds the optimum: ``floor(bound + 1e-6)``."""
    n = len(u.release_s)
    a, cap = interval_rows(u)
    if not len(cap):  # no interval is overfull: everyone fits
        return n, True
    import highspy

    from balance_opt.solvers.common.output import quiet_stdout

    with quiet_stdout():  # the first Highs() prints a banner at C level
        h = highspy.Highs()
    for key, value in (
        ("output_flag", False),
        ("threads", 1),
        ("time_limit", max(float(time_limit_s), 1e-3)),
        ("mip_rel_gap", 0.0),
        ("mip_abs_gap", 1.0 - 1e-6),  # a count: a gap below 1 is closed
        ("mip_feasibility_tolerance", 1e-9),
        ("primal_feasibility_tolerance", 1e-9),
    ):
        h.setOptionValue(key, value)
    col, row = np.nonzero(a.T)  # column-wise, rows ascending within a column
    start = np.searchsorted(col, np.arange(n + 1)).astype(np.int32)
    h.passModel(
        n, len(cap), len(col), 1, -1, 0.0,  # column-wise matrix, maximize, no offset
        np.ones(n), np.zeros(n), np.ones(n), np.full(len(cap), -np.inf), cap,
        start, row.astype(np.int32), a.T[col, row], np.ones(n, dtype=np.int32),
    )  # fmt: skip
    h.run()
    info = h.getInfo()
    if h.getModelStatus() == highspy.HighsModelStatus.kOptimal:
        return min(n, round(info.objective_function_value)), True
    dual = float(info.mip_dual_bound)
    return (min(n, math.floor(dual + 1e-6)) if math.isfinite(dual) else n), False


def hindsight_bound(
    workload: Workload, *, exact_up_to: int = 60, time_limit_s: float = 30.0
) -> HindsightBound:
    """An upper bound on the users any policy serves on ``workload`` (docs/online.md).

    At most ``exact_up_to`` alone-feasible users: the exact MILP over the interval rows
    (``time_limit_s`` for HiGHS); more: the least partition bound. Never above the count of
    alone-feasible users. Deterministic unless HiGHS hits its time limit."""
    u = packing_data(workload)
    feasible = _subset(u, u.feasible)
    n = int(u.feasible.sum())
    blocks = blocks_bound(u)
    milp: int | None = None
    proved = n == 0
    if 0 < n <= exact_up_to:
        milp, proved = milp_bound(feasible, time_limit_s)
    bound = min(n, blocks, n if milp is None else milp)
    # the argument that gave the number (the MILP when it ties)
    method = "milp" if milp == bound else ("blocks" if blocks < n else "alone")
    return HindsightBound(
        bound=bound,
        alone_feasible=n,
        method=method,
        proved=proved,
        blocks_bound=blocks,
        milp_bound=milp,
        feasible=u.feasible,
        release_s=u.release_s,
        due_s=u.due_s,
        compute_s=u.compute_s,
        length_s=u.length_s,
        memory_s=u.memory_s,
    )
