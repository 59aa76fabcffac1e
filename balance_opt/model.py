"""Workloads, latencies and KV memory of the AD and SD modes (docs/model.md sections 3-5).

Everything here is a pure function of an :class:`~balance_opt.instance.Instance` and a
served set. The decoding sums have closed forms (sums of arithmetic series), so a mode
costs O(|S|) plus O(Nmax) for SD, never O(LO) Python steps. The test suite keeps a
literal step-by-step twin of every function and checks agreement.

FLOP counts are integers below 2**53 for every realistic instance, so they are exact in
float64; the order of float operations is fixed here because the algorithms compare
sums of these numbers against budgets and two implementations must agree bit for bit.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Any, TypeVar, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from balance_opt.instance import FloatArray, Instance, LanguageModel

# --- modes and the tolerance (sections 2 and 6) ---------------------------------------


class Mode(enum.IntEnum):
    """A user's mode in a schedule: its code (in a schedule's array) and its key (in files)."""

    NONE = 0
    AD = 1
    SD = 2

    @property
    def key(self) -> str:
        """The mode's name in the solution file and in per-mode tables: ``"none"``, ``"ad"``, ``"sd"``."""
        return self.name.lower()


# The codes as plain ints: they fill and compare numpy arrays in the solvers' inner loops
# and show as numbers in messages. The solution file names them (MODE_NAMES by code).
NONE, AD, SD = (int(m) for m in Mode)
MODE_NAMES = tuple(m.key for m in Mode)
MODE_CODES = {m.key: int(m) for m in Mode}

# Relative tolerance of every feasibility comparison: t <= T (1 + REL_TOL), memory <= Q (1 + REL_TOL).
REL_TOL = 1e-9
# Bounds (ranks, box bounds) compare against limits loosened by twice the tolerance, so
# that no order of float sums can make a bound exclude a set the evaluator accepts.
BOUND_TOL = 2.0 * REL_TOL

Limit = TypeVar("Limit", float, FloatArray)


def has_compute(mode: int, z: float) -> bool:
    """D7: AD gets the share ``z`` of the compute and SD ``1 - z``; a mode without any serves nobody."""
    return z > 0.0 if mode == AD else z < 1.0


_FLOAT_MAX = float(np.finfo(np.float64).max)


def tolerated(limit: Limit) -> Limit:
    """``limit (1 + REL_TOL)``: the largest value the evaluator accepts (section 6).

    A finite limit near the float maximum would overflow to ``inf`` and let any value pass:
    such a limit is tolerated as the largest finite float instead (an infinite value still
    breaks it). The value rules keep every limit far below that; this is the last guard."""
    if isinstance(limit, float):
        out = limit * (1.0 + REL_TOL)
        return out if math.isfinite(out) or not math.isfinite(limit) else math.copysign(_FLOAT_MAX, limit)
    with np.errstate(over="ignore"):
        arr = limit * (1.0 + REL_TOL)
    if not np.isfinite(arr).all():  # rare: only then the slower repair
        arr = np.where(np.isinf(arr) & np.isfinite(limit), np.copysign(_FLOAT_MAX, limit), arr)
    return arr


def latency_limits(inst: Instance) -> FloatArray:
    """Each user's latency limit ``r_k = T_k (1 + REL_TOL) - down_k``: a mode's latency
    must stay within the smallest ``r_k`` of its users (20), (21c)."""
    return np.asarray(tolerated(inst.deadline_s) - inst.download_s, dtype=np.float64)


@overload
def within(value: float, limit: float) -> bool: ...
@overload
def within(value: FloatArray, limit: FloatArray | float) -> NDArray[np.bool_]: ...
def within(value: Any, limit: Any) -> Any:  # typed by the overloads above
    """``value <= limit (1 + REL_TOL)``, elementwise for arrays (section 6)."""
    return value <= tolerated(limit)


def loosened(limit: Limit) -> Limit:
    """``limit (1 + BOUND_TOL)``: a limit as the bounds see it."""
    return limit * (1.0 + BOUND_TOL)


def memory_split(inst: Instance, z: float, lam: float) -> tuple[float, float]:
    """``(Q1, Q2) = (lambda F(z), (1 - lambda) F(z))`` of P2 (22)."""
    free = inst.free_memory(z)
    return lam * free, (1.0 - lam) * free


# --- workloads (section 3) ---------------------------------------------------------


def prefill_flops(model: LanguageModel, length: ArrayLike) -> NDArray[np.float64]:
    """``G_p(L) = M (8 L Dm Dh H + 4 L^2 Dh H + 4 L Dm Df)`` (prefill of one prompt; D1)."""
    L = np.asarray(length, dtype=np.float64)
    return model.layers * (L * model.linear_flops_per_token + L * L * model.attention_flops_per_pair)


def decode_flops(model: LanguageModel, length: ArrayLike, step: ArrayLike) -> NDArray[np.float64]:
    """``G_a(L, l) = M (8 Dm Dh H + 4 (L + l) Dh H + 4 Dm Df)`` (one decoding step)."""
    L = np.asarray(length, dtype=np.float64)
    s = np.asarray(step, dtype=np.float64)
    return model.layers * (model.linear_flops_per_token + (L + s) * model.attention_flops_per_pair)


def decode_flops_sum(model: LanguageModel, length: ArrayLike, steps: ArrayLike) -> NDArray[np.float64]:
    """``sum_{l=1..n} G_a(L, l)`` in closed form: ``M (n lin + att (n L + n (n + 1) / 2))``."""
    L = np.asarray(length, dtype=np.float64)
    n = np.asarray(steps, dtype=np.float64)
    return model.layers * (
        n * model.linear_flops_per_token + model.attention_flops_per_pair * (n * L + n * (n + 1) / 2)
    )


def verify_flops(model: LanguageModel, prefix: ArrayLike, tokens: ArrayLike) -> NDArray[np.float64]:
    """``G_v(P, m) = M (8 m Dm Dh H + 4 sum_{l=1..m} (P + l) Dh H + 4 m Dm Df)``."""
    P = np.asarray(prefix, dtype=np.float64)
    m = np.asarray(tokens, dtype=np.float64)
    return model.layers * (
        m * model.linear_flops_per_token + model.attention_flops_per_pair * (m * P + m * (m + 1) / 2)
    )


# --- AD mode (section 4) -------------------------------------------------------------


def ad_compute_flops(inst: Instance, L1: ArrayLike, lo: ArrayLike) -> NDArray[np.float64]:
    """Per-user AD workload at padded input ``L1``: ``G_p(L1) + sum_{l=1..LO-1} G_a(L1, l)``.

    This is the numerator of Algorithm 1's contribution (26); summed over a served set it
    is the whole compute of (17): each user takes part in prefill and in its LO - 1 steps.
    Like every per-user function here it is elementwise: ``L1`` and ``lo`` broadcast.
    """
    lo_arr = np.asarray(lo, dtype=np.float64)
    return prefill_flops(inst.llm, L1) + decode_flops_sum(inst.llm, L1, lo_arr - 1.0)


def ad_user_costs(inst: Instance, L1: ArrayLike, lo: ArrayLike, z: float) -> NDArray[np.float64]:
    """Algorithm 1's latency contribution ``c_k = alpha^L (...) / z`` (26)."""
    return inst.llm.alpha_s_per_flop * ad_compute_flops(inst, L1, lo) / z


def ad_user_memory(inst: Instance, L1: ArrayLike, lo: ArrayLike) -> NDArray[np.float64]:
    """KV bytes of one AD user: ``(L1 + LO_k) kv^L`` (15; decision D3)."""
    return (np.asarray(L1, dtype=np.float64) + np.asarray(lo, dtype=np.float64)) * inst.llm_kv_bytes_per_token


@dataclass(frozen=True)
class ModeCost:
    """Latency (excluding download) and KV memory of one mode for one served set."""

    latency_s: float | None  # None: the mode serves nobody
    upload_s: float
    compute_s: float  # alpha-terms over the compute fraction
    fixed_s: float  # beta-terms: forward passes
    kv_bytes: float


EMPTY_MODE = ModeCost(None, 0.0, 0.0, 0.0, 0.0)


def ad_mode(inst: Instance, served: NDArray[np.bool_], z: float) -> ModeCost:
    """``t_ad`` (17) and ``q_ad`` (15) of the AD users ``served`` at compute fraction z."""
    if not served.any():
        return EMPTY_MODE
    lo = inst.output_tokens[served]
    L1 = float(inst.input_tokens[served].max())  # (5)
    L2 = int(lo.max())
    tau_up = float(inst.upload_s[served].max())  # (1)
    work = float(ad_compute_flops(inst, L1, lo).sum())
    # z = 0 gives AD no compute: the mode never finishes (D7), its memory still counts
    compute = inst.llm.alpha_s_per_flop * work / z if z > 0.0 else math.inf
    fixed = L2 * inst.llm.beta_s  # one prefill pass and L2 - 1 decoding passes
    kv = float(ad_user_memory(inst, L1, lo).sum())
    return ModeCost(tau_up + compute + fixed, tau_up, compute, fixed, kv)


# --- SD mode (section 5) -------------------------------------------------------------


def sd_prefix(L3: ArrayLike, L4: ArrayLike, n: ArrayLike) -> NDArray[np.float64]:
    """Retained prefix before iteration n (10; decision D2)."""
    l3, l4 = np.asarray(L3, dtype=np.float64), np.asarray(L4, dtype=np.float64)
    n_arr = np.asarray(n, dtype=np.float64)
    return np.where(n_arr <= 1, l3, l3 + (n_arr - 2) * (l4 + 1) + l4)


def sd_iteration_flops(
    inst: Instance, L3: ArrayLike, L4: ArrayLike, n_max: int
) -> tuple[FloatArray, FloatArray]:
    """Per-user SLM and LLM FLOPs of iterations ``n = 1..n_max`` (11), (12), (18).

    Returns ``(slm, llm)``, each with a last axis of length ``n_max``: drafting steps
    ``l = 1..LD-1`` in iteration 1 and ``l = 1..LD`` afterwards; verification of ``LD``
    tokens in iteration 1 and ``LD + 1`` afterwards, all after the prefix ``P_n``.
    ``L3`` and ``L4`` broadcast against the iterations (a column of them gives a table).
    """
    ld = inst.server.draft_length
    n = np.arange(1, n_max + 1, dtype=np.float64)
    P = sd_prefix(L3, L4, n)
    steps = np.where(n == 1, ld - 1, ld)
    # sum_{l=1..s} G^S_a(P, l): the same arithmetic series as AD decoding
    slm = decode_flops_sum(inst.slm, P, steps)
    llm = verify_flops(inst.llm, P, np.where(n == 1, ld, ld + 1))
    return slm, llm


def sd_iteration_seconds_per_user(
    inst: Instance, L3: ArrayLike, L4: ArrayLike, n_max: int, w: float
) -> FloatArray:
    """Compute seconds each active user adds to iterations ``1..n_max`` (before beta)."""
    slm, llm = sd_iteration_flops(inst, L3, L4, n_max)
    return (inst.slm.alpha_s_per_flop * slm + inst.llm.alpha_s_per_flop * llm) / w


def sd_prefill_seconds(inst: Instance, L3: ArrayLike, w: float) -> FloatArray:
    """Compute seconds each SD user adds to the two prefills (7), (8), elementwise in ``L3``."""
    return (
        inst.llm.alpha_s_per_flop * prefill_flops(inst.llm, L3)
        + inst.slm.alpha_s_per_flop * prefill_flops(inst.slm, L3)
    ) / w


def sd_prefill_seconds_per_user(inst: Instance, L3: float, w: float) -> float:
    """:func:`sd_prefill_seconds` at one ``L3``."""
    return float(sd_prefill_seconds(inst, L3, w))


def sd_user_cost_table(
    inst: Instance, L3s: FloatArray, L4s: FloatArray, n_users: ArrayLike, z: float
) -> FloatArray:
    """Algorithm 2's latency contribution (30): one row per pair ``(L3s[i], L4s[i])``, one column per user.

    Algorithm 2's fast search calls it with many rows at once; :func:`sd_user_costs` is the
    same formula at one pair, so both give the same bits.
    """
    return _sd_costs(inst, L3s[:, None], L4s[:, None], n_users, z)


def sd_user_costs(inst: Instance, L3: float, L4: float, n_users: ArrayLike, z: float) -> NDArray[np.float64]:
    """Algorithm 2's latency contribution (30) of users with ``N_k = n_users`` at one ``(L3, L4)``."""
    return _sd_costs(inst, L3, L4, n_users, z)


def _sd_costs(inst: Instance, L3: ArrayLike, L4: ArrayLike, n_users: ArrayLike, z: float) -> FloatArray:
    """(30) for ``L3``, ``L4`` scalars or columns: the prefill share plus the sequential cumulative
    sum of the per-iteration seconds up to each user's ``N_k`` (along the last axis)."""
    n_arr = np.asarray(n_users, dtype=np.int64)
    w = 1.0 - z
    n_max = int(n_arr.max()) if n_arr.size else 0
    per_iter = sd_iteration_seconds_per_user(inst, L3, L4, n_max, w)
    cum = np.concatenate((np.zeros((*per_iter.shape[:-1], 1)), np.cumsum(per_iter, axis=-1)), axis=-1)
    return np.asarray(sd_prefill_seconds(inst, L3, w) + cum[..., n_arr])


def sd_user_memory(inst: Instance, L3: ArrayLike, L4: ArrayLike, n_users: ArrayLike) -> NDArray[np.float64]:
    """KV bytes of one SD user (16), (31): SLM ``P_N + LD`` and LLM ``P_N + LD + [N >= 2]``."""
    n_arr = np.asarray(n_users, dtype=np.int64)
    ld = inst.server.draft_length
    P = sd_prefix(L3, L4, n_arr)
    return (P + ld) * inst.slm_kv_bytes_per_token + (P + ld + (n_arr >= 2)) * inst.llm_kv_bytes_per_token


def sd_mode(inst: Instance, served: NDArray[np.bool_], z: float) -> ModeCost:
    """``t_sd`` (19) and ``q_sd`` (16) of the SD users ``served`` at compute fraction z."""
    if not served.any():
        return EMPTY_MODE
    w = 1.0 - z
    ld = inst.server.draft_length
    L3 = float(inst.input_tokens[served].max())  # (9)
    L4 = float(inst.accepted_drafts[served].max())
    N = inst.sd_iterations[served]
    n_max = int(N.max())
    tau_up = float(inst.upload_s[served].max())  # (2)
    if w > 0.0:
        per_iter = sd_iteration_seconds_per_user(inst, L3, L4, n_max, w)
        active = np.bincount(N, minlength=n_max + 1)[::-1].cumsum()[::-1][1:]  # |S_n|, n = 1..n_max
        # fsum, not a BLAS dot: its rounding is fixed, whatever kernel the CPU selects
        compute = len(N) * sd_prefill_seconds_per_user(inst, L3, w) + math.fsum((active * per_iter).tolist())
    else:  # z = 1 gives SD no compute (D7)
        compute = math.inf
    # passes: LLM prefill, SLM prefill, LD - 1 drafts + 1 verify in iteration 1, LD + 1 later
    fixed = (n_max + 1) * inst.llm.beta_s + n_max * ld * inst.slm.beta_s
    kv = float(sd_user_memory(inst, L3, L4, N).sum())
    return ModeCost(tau_up + compute + fixed, tau_up, compute, fixed, kv)


# --- one user alone (eligibility) ------------------------------------------------------


def ad_alone(inst: Instance, z: float) -> tuple[FloatArray, FloatArray]:
    """Latency (17) and KV bytes (15) of each user served alone in AD at ``z > 0``:
    ``ad_mode`` of every singleton at once (its own input is the padding)."""
    li = inst.input_tokens.astype(np.float64)
    lo = inst.output_tokens.astype(np.float64)
    compute = inst.llm.alpha_s_per_flop * ad_compute_flops(inst, li, lo) / z
    latency = inst.upload_s + compute + lo * inst.llm.beta_s
    return latency, ad_user_memory(inst, li, lo)


def sd_alone(inst: Instance, z: float) -> tuple[FloatArray, FloatArray]:
    """Latency (19) and KV bytes (16) of each user served alone in SD at ``z < 1``:
    ``sd_mode`` of every singleton at once, iterations ``n = 1..N_k`` as a masked table."""
    w = 1.0 - z
    ld = inst.server.draft_length
    l3 = inst.input_tokens.astype(np.float64)[:, None]
    l4 = inst.accepted_drafts.astype(np.float64)[:, None]
    nk = inst.sd_iterations.astype(np.int64)
    n_max = int(nk.max())
    per_iter = sd_iteration_seconds_per_user(inst, l3, l4, n_max, w)
    n = np.arange(1, n_max + 1)[None, :]
    iterations = np.where(n <= nk[:, None], per_iter, 0.0).sum(axis=1)
    prefill = sd_prefill_seconds(inst, l3[:, 0], w)
    fixed = (nk + 1) * inst.llm.beta_s + nk * ld * inst.slm.beta_s
    latency = inst.upload_s + prefill + iterations + fixed
    return latency, sd_user_memory(inst, l3[:, 0], l4[:, 0], nk)
