"""Combinatorial upper bounds per z: single-mode optima of user subsets (ranks).

A schedule's AD users alone form an AD-only schedule at the same z (every max and sum
only shrinks when users leave, so any subset of a feasible set is feasible), and
likewise for SD. For one mode, Algorithm 1 (AD) and Algorithm 2 (SD) with the whole free
memory ``F(z)`` are exact (Propositions 4 and 5: with the max-length tuple fixed, every
user's latency and memory contributions are ordered the same way, so the cheapest
prefix is optimal). The *rank* of a user set U in a mode is that optimum over U.

Ranks are computed on a *relaxed* copy of the instance (deadlines and memory scaled by
``1 + 2e-9``, twice the model's tolerance, docs/model.md section 6): Algorithms 1 and 2 compare without
tolerance, so on the relaxed copy every P1-feasible set stays feasible, and a rank is
an upper bound whatever the floating-point order of the sums.

:func:`deadline_pair_bound` bounds one z's optimum by splitting on the tightest deadline
of each mode, :func:`shared_memory_bound` and :func:`memory_split_bound` by the memory
both modes share (``docs/milp.md``, "Combinatorial bounds per z").
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike

from balance_opt.clock import NEVER, Deadline
from balance_opt.instance import FloatArray, Instance
from balance_opt.model import (
    BOUND_TOL,
    MODE_CODES,
    Mode,
    ad_user_memory,
    has_compute,
    latency_limits,
    loosened,
    sd_user_memory,
)
from balance_opt.solvers.common.warm_start import balance_fast

MEMORY_STEP = 2e6  # bytes: precision of the least-memory estimates

AD_MODE, SD_MODE = Mode.AD.key, Mode.SD.key  # ranks and caps are keyed by the mode's name


def relaxed_copy(inst: Instance) -> Instance:
    """``inst`` with deadlines and memory scaled by ``1 + BOUND_TOL``."""
    server = replace(inst.server, memory_bytes=loosened(inst.server.memory_bytes))
    return inst.replace(deadline_s=loosened(inst.deadline_s), server=server)


class Ranks:
    """Exact single-mode optima of user subsets at one z, cached.

    ``rank(mode, users)`` is the most users of ``users`` one mode can serve alone at z.
    With ``limit`` (seconds, a latency budget excluding download), every user's own
    limit ``T_k (1 + REL_TOL) - down_k`` is replaced by ``limit``: the optimum over the
    sets whose latency is at most ``limit``.
    """

    def __init__(self, inst: Instance, z: float) -> None:
        self.inst = inst
        self.z = float(z)
        self._relaxed = relaxed_copy(inst)
        self._cache: dict[tuple[str, frozenset[int], float | None, float | None], int] = {}
        self.calls = 0

    def rank(
        self, mode: str, users: Iterable[int], limit: float | None = None, memory: float | None = None
    ) -> int:
        """The optimum; ``memory`` (bytes) replaces the free memory ``F(z)`` when given."""
        key = (mode, frozenset(users), limit, memory)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        value = self._compute(mode, sorted(key[1]), limit, memory)
        self._cache[key] = value
        return value

    def of_pools(
        self, mode: str, pools: dict[float, frozenset[int]], limited: bool, until: Deadline
    ) -> dict[float, int] | None:
        """The rank of each pool, with its key as the latency limit when ``limited``.

        None when ``until`` passes first.
        """
        out: dict[float, int] = {}
        for key, pool in pools.items():
            if until.passed():
                return None
            out[key] = self.rank(mode, pool, key if limited else None)
        return out

    def _compute(self, mode: str, users: list[int], limit: float | None, memory: float | None) -> int:
        if not users or not has_compute(MODE_CODES[mode], self.z):
            return 0
        self.calls += 1
        sub = self._relaxed.subset(users)
        if limit is not None:
            down = sub.download_s
            sub = sub.replace(deadline_s=down + loosened(limit) + BOUND_TOL * down)
        if memory is not None:  # F(z) = Q - weights, so Q = weights + memory (relaxed)
            weights = sub.server.memory_bytes - sub.free_memory(self.z)
            server = replace(sub.server, memory_bytes=weights + loosened(memory))
            sub = sub.replace(server=server)
        # lambda = 1 gives Algorithm 1 all of F(z), lambda = 0 gives Algorithm 2 all of it
        out = balance_fast(sub, [self.z], [1.0 if mode == AD_MODE else 0.0])
        return len(out.ad) + len(out.sd)


@dataclass
class PairBound:
    """The deadline-pair bound of one z and how it was reached."""

    bound: int
    caps: dict[str, int]  # each mode's optimum alone at z
    pairs: int = 0  # pairs (AD tightest limit, SD tightest limit) examined
    complete: bool = True  # False when the time limit cut the refinement short
    seconds: float = 0.0
    argmax: tuple[float, float] | None = None
    rank_calls: int = 0


def deadline_pair_bound(
    inst: Instance,
    z: float,
    ad_users: list[int],
    sd_users: list[int],
    time_limit: float | None = None,
    ranks: Ranks | None = None,
) -> PairBound:
    """An upper bound on the most users any P1 schedule serves at z.

    Split the schedules by the users a and s with the tightest latency limits
    ``r = T (1 + REL_TOL) - down`` in AD and in SD. Then the AD users lie in
    ``PA = {k : r_k >= r_a}`` and finish within ``r_a``, the SD users in
    ``PS = {k : r_k >= r_s}`` within ``r_s``. With ``I = PA & PS`` and the two exclusive
    parts ``XA``, ``XS``:

        served <= min( rank_AD(PA, r_a) + rank_SD(PS, r_s),  |PA | PS|,
                       min(|I|, rank_AD(I, r_a) + rank_SD(I, r_s))
                       + rank_AD(XA, r_a) + rank_SD(XS, r_s) )

    (a user is served once; subsets of feasible sets are feasible). The bound is the max
    over the pairs and over the schedules with one mode empty (the caps). Pairs are
    visited by their cheap bound, descending, and the search stops when the cheap bound
    cannot beat the best refined one; when ``time_limit`` runs out first, the cheap
    bound of the first pair not refined is kept (still valid), or the sum of the caps
    when it runs out before the pairs' cheap bounds are known.
    """
    t0 = time.perf_counter()
    ranks = Ranks(inst, z) if ranks is None else ranks
    r = latency_limits(inst).tolist()
    caps = {AD_MODE: ranks.rank(AD_MODE, ad_users), SD_MODE: ranks.rank(SD_MODE, sd_users)}
    best = max(caps.values())
    if not ad_users or not sd_users:
        return PairBound(best, caps, seconds=time.perf_counter() - t0, rank_calls=ranks.calls)
    a_levels = sorted({r[k] for k in ad_users})
    s_levels = sorted({r[k] for k in sd_users})
    pool_a = {t: frozenset(k for k in ad_users if r[k] >= t) for t in a_levels}
    pool_s = {t: frozenset(k for k in sd_users if r[k] >= t) for t in s_levels}
    until = Deadline(None if time_limit is None else t0 + time_limit)
    top_a = ranks.of_pools(AD_MODE, pool_a, True, until)
    top_s = None if top_a is None else ranks.of_pools(SD_MODE, pool_s, True, until)
    if top_a is None or top_s is None:
        loose = min(caps[AD_MODE] + caps[SD_MODE], len(set(ad_users) | set(sd_users)))
        seconds = time.perf_counter() - t0
        return PairBound(loose, caps, complete=False, seconds=seconds, rank_calls=ranks.calls)
    cheap = [(min(top_a[a] + top_s[s], len(pool_a[a] | pool_s[s])), a, s) for a in a_levels for s in s_levels]
    cheap.sort(key=lambda c: (-c[0], c[1], c[2]))
    out = PairBound(best, caps)
    _refine(out, ranks, cheap, pool_a, pool_s, until)
    out.seconds = time.perf_counter() - t0
    out.rank_calls = ranks.calls
    return out


def _refine(
    out: PairBound,
    ranks: Ranks,
    cheap: list[tuple[int, float, float]],
    pool_a: dict[float, frozenset[int]],
    pool_s: dict[float, frozenset[int]],
    until: Deadline,
) -> None:
    """Raise ``out`` to the best refined pair bound, in the order of ``cheap`` (see above)."""
    for n, (b, a, s) in enumerate(cheap):
        if b <= out.bound:
            break
        if until.passed():
            out.bound, out.complete = b, False
            break
        pa, ps = pool_a[a], pool_s[s]
        both = pa & ps
        shared = min(len(both), ranks.rank(AD_MODE, both, a) + ranks.rank(SD_MODE, both, s))
        b = min(b, shared + ranks.rank(AD_MODE, pa - both, a) + ranks.rank(SD_MODE, ps - both, s))
        out.pairs = n + 1
        if b > out.bound:
            out.bound, out.argmax = b, (a, s)


def _least(
    ranks: Ranks,
    mode: str,
    users: list[int],
    n: int,
    lo: float,
    step: float,
    free: float,
    until: Deadline,
) -> float | None:
    """A value ``m >= lo`` with ``rank(memory=m) < n`` and ``rank(memory=m + MEMORY_STEP) >= n``
    (up to the step), given ``rank(memory=lo) < n <= rank(memory=free)``; galloping from
    ``lo`` with ``step``, then bisection. None when ``until`` passes."""
    hi = min(free, lo + step)
    while hi < free and ranks.rank(mode, users, None, hi) < n:
        if until.passed():
            return None
        lo, step = hi, 2.0 * step
        hi = min(free, lo + step)
    while hi - lo > MEMORY_STEP:
        if until.passed():
            return None
        mid = 0.5 * (lo + hi)
        if ranks.rank(mode, users, None, mid) >= n:
            hi = mid
        else:
            lo = mid
    return lo


def least_memory(
    ranks: Ranks, mode: str, users: list[int], cap: int, free: float, until: Deadline = NEVER
) -> list[float] | None:
    """Lower estimates of the least KV memory (bytes) any ``n`` users need in one mode.

    Entry ``n`` (``n = 0..cap``) is a value ``m`` with ``rank(mode, users, memory=m) < n``:
    no n-user set of the mode fits in ``m`` bytes, so every feasible one needs more. Found
    by galloping up from the previous entry, then bisection to ``MEMORY_STEP`` bytes.
    ``free`` must be at least the memory of the cap's rank. None when ``until`` passes
    first.
    """
    out = [0.0]
    for n in range(1, cap + 1):
        step = out[-1] - out[-2] if n > 1 else free / cap
        m = _least(ranks, mode, users, n, out[-1], max(MEMORY_STEP, step), free, until)
        if m is None:
            return None
        out.append(m)
    return out


def split_free_memory(inst: Instance, z: float) -> float:
    """``F(z)`` loosened past the model's tolerance: ``F (1 + 2e-9) + 2e-9 Q`` bytes."""
    return loosened(inst.free_memory(z)) + BOUND_TOL * inst.server.memory_bytes


def memory_split_bound(
    inst: Instance,
    z: float,
    ranks: Ranks,
    caps: dict[str, int],
    ad_users: list[int],
    sd_users: list[int],
    ceiling: int,
    until: Deadline = NEVER,
) -> int | None:
    """``max {a + s : least_AD(a) + least_SD(s) <= F(z)}``, at most ``ceiling``.

    The AD and SD users of a schedule share the free memory ``F(z)`` (21d), and each
    mode's part alone is a feasible single-mode set, so it needs at least that mode's
    least memory for its size. When even both caps fit together, the bound is their sum
    (returned at once, after two bisections). None when ``until`` passes first.
    """
    free = split_free_memory(inst, z)
    cap_a, cap_s = caps[AD_MODE], caps[SD_MODE]
    if cap_a == 0 or cap_s == 0:
        return min(cap_a + cap_s, ceiling)
    top_a = _least(ranks, AD_MODE, ad_users, cap_a, 0.0, free / 2, free, until)
    top_s = _least(ranks, SD_MODE, sd_users, cap_s, 0.0, free / 2, free, until)
    if top_a is None or top_s is None:
        return None
    if top_a + top_s + 2 * MEMORY_STEP <= free:  # the caps fit side by side
        return min(cap_a + cap_s, ceiling)
    ma = least_memory(ranks, AD_MODE, ad_users, cap_a, free, until)
    ms = least_memory(ranks, SD_MODE, sd_users, cap_s, free, until)
    if ma is None or ms is None:
        return None
    return min(most_together(ma, ms, free), ceiling)


def most_together(least_a: ArrayLike, least_s: ArrayLike, free: float) -> int:
    """``max {a + s : least_a[a] + least_s[s] <= free}`` (0 when only ``a = s = 0`` fits):
    the most users two modes whose n-user sets need at least ``least[n]`` bytes can hold
    together within ``free``."""
    a, s = np.nonzero(np.add.outer(np.asarray(least_a), np.asarray(least_s)) <= free)
    return int((a + s).max()) if a.size else 0


def _best_disjoint_split(
    cost_a: FloatArray, cost_s: FloatArray, free: float, cap_a: int, cap_s: int, floor: int = -1
) -> int:
    """``max a + s``: a users at ``cost_a`` and s others at ``cost_s`` within ``free``.

    ``inf`` marks a user the mode cannot take; ``a <= cap_a``, ``s <= cap_s``. With the
    users sorted by ``cost_a - cost_s``, some cheapest pair of sets has every AD user
    before every SD user (swapping an AD user i and an SD user j with
    ``d_i > d_j`` saves ``d_i - d_j``), so the splits of the sorted list cover it.
    When a quick upper value (each mode's cheapest users, shared or not) is at most
    ``floor``, that value is returned instead (the caller needs no more).
    """
    if free < 0.0:
        return 0
    some = np.isfinite(cost_a) | np.isfinite(cost_s)  # inf - inf would be nan
    cost_a, cost_s = cost_a[some], cost_s[some]
    order = np.argsort(cost_a - cost_s, kind="stable")
    cost_a, cost_s = cost_a[order], cost_s[order]
    # without the disjointness: each mode's cheapest users from all of them
    loose = _most_within(cost_a, cost_s, free, cap_a, cap_s)
    if loose <= floor:
        return loose
    return max(_most_within(cost_a[:p], cost_s[p:], free, cap_a, cap_s) for p in range(len(order) + 1))


def _most_within(cost_a: FloatArray, cost_s: FloatArray, free: float, cap_a: int, cap_s: int) -> int:
    """``max a + s`` with the a cheapest of ``cost_a`` and the s cheapest of ``cost_s``
    (finite entries only, ``a <= cap_a``, ``s <= cap_s``) within ``free >= 0``."""
    head = np.sort(cost_a[np.isfinite(cost_a)])[:cap_a]
    tail = np.sort(cost_s[np.isfinite(cost_s)])[:cap_s]
    pa = np.concatenate(([0.0], np.cumsum(head)))
    ps = np.concatenate(([0.0], np.cumsum(tail)))
    fits = pa <= free
    s_max = np.searchsorted(ps, free - pa[fits], side="right") - 1
    return int((np.flatnonzero(fits) + s_max).max())


def shared_memory_bound(
    inst: Instance,
    z: float,
    ranks: Ranks,
    ad_users: list[int],
    sd_users: list[int],
    ceiling: int,
    until: Deadline = NEVER,
) -> int | None:
    """An upper bound at z from the memory both modes share, counting each user once.

    Split the schedules by the padded inputs ``L1 = v`` (AD) and ``L3 = w`` (SD). Then
    the AD users lie in ``{LI <= v}`` and each holds exactly ``(v + LO_k) kv^L`` (15);
    the SD users lie in ``{LI <= w}`` and each holds at least its memory (16) at
    ``L3 = w``, ``L4 = LA_k`` (``L4 >= LA_k``, and memory grows with L4). The two sets
    are disjoint, fit together in ``F(z)`` (21d), and are at most the modes' ranks of
    their pools. So the z optimum is at most the max over (v, w) of the most users two
    disjoint sets with these fixed costs can hold (:func:`_best_disjoint_split`), and
    at most each mode's cap (the other mode empty). Pairs are visited by the sum of
    their pool ranks, descending; at most ``ceiling``; None when ``until`` passes first.
    """
    free = split_free_memory(inst, z)
    li = inst.input_tokens.astype(np.float64)
    lo = inst.output_tokens
    la = inst.accepted_drafts
    n_it = inst.sd_iterations
    kv_sum = inst.slm_kv_bytes_per_token + inst.llm_kv_bytes_per_token
    a_levels = sorted({float(li[k]) for k in ad_users})
    s_levels = sorted({float(li[k]) for k in sd_users})
    pool_a = {v: frozenset(k for k in ad_users if li[k] <= v) for v in a_levels}
    pool_s = {w: frozenset(k for k in sd_users if li[k] <= w) for w in s_levels}
    cap_a = ranks.of_pools(AD_MODE, pool_a, False, until)
    cap_s = None if cap_a is None else ranks.of_pools(SD_MODE, pool_s, False, until)
    if cap_a is None or cap_s is None:
        return None
    best = max([0, *cap_a.values(), *cap_s.values()])
    pairs = sorted(((cap_a[v] + cap_s[w], v, w) for v in a_levels for w in s_levels), reverse=True)
    steps = np.maximum(n_it - 1, 0).astype(np.float64)
    for b, v, w in pairs:
        if b <= best or best >= ceiling:
            break
        if until.passed():
            return None
        ka, ks = sorted(pool_a[v]), sorted(pool_s[w])
        cost_a = np.full(inst.num_users, np.inf)  # inf: not in the mode's pool
        cost_s = np.full(inst.num_users, np.inf)
        cost_a[ka] = ad_user_memory(inst, v, lo[ka])
        cost_s[ks] = sd_user_memory(inst, w, 0.0, n_it[ks]) + kv_sum * steps[ks] * la[ks]
        best = max(best, _best_disjoint_split(cost_a, cost_s, free, cap_a[v], cap_s[w], best))
    return min(best, ceiling)
