"""P1 for one compute fraction z as a backend-neutral MILP (docs/model.md sections 4-6).

One description of variables and linear rows, translated to Pyomo (big-M rows) and to
CP-SAT (``only_enforce_if``), so the two backends cannot drift apart. ``docs/milp.md``
derives every row; in short, for fixed z every latency and memory term is linear in the
mode binaries once the padded lengths are fixed, and the padded lengths are maxima over
the served set: each max gets one *candidate row* per user j, written with the padded
value ``max(LI_k, LI_j)`` and enforced when user j is served. The candidate row of the
true argmax is the exact constraint; the others are implied by it (latency and memory
grow with the padded lengths). An unconditional *base row* (every user padded to its own
length) is valid too, and it makes the big-M of each candidate row small:
``M_j = sum_k (coefficient with padding to LI_j - own coefficient)``.

Units: time rows in microseconds, memory rows in megabytes (1e6 B), token counts as is.
The right-hand sides carry the model's relative tolerance (docs/model.md section 6,
``tolerated(T) = T (1 + REL_TOL)``), so the model's feasible set is exactly the evaluator's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from balance_opt.instance import FloatArray, Instance
from balance_opt.model import (
    AD,
    MODE_NAMES,
    SD,
    decode_flops_sum,
    prefill_flops,
    sd_user_costs,
    tolerated,
)
from balance_opt.solvers.common.eligibility import eligible_users
from balance_opt.solvers.milp.linear import (
    BYTES_PER_MB,
    COUNT,
    MEMORY,
    TIME,
    TOKENS,
    US_PER_S,
    Formulation,
    Hull,
    Selector,
)
from balance_opt.status import Termination


@dataclass
class BackendResult:
    """What one backend solve of one formulation found."""

    termination: Termination  # OPTIMAL, INFEASIBLE or TIME_LIMIT
    values: NDArray[np.float64] | None  # solution vector (formulation order), if any
    bound: float | None  # proved upper bound on the objective, if any
    stats: dict[str, Any]
    exact: bool = True  # bound and infeasibility hold for every P1 schedule of the model


def time_rhs_us(inst: Instance, users: list[int]) -> FloatArray:
    """Per-user latency limit ``T (1 + REL_TOL) - down`` in microseconds (20), (21c)."""
    idx = np.asarray(users, dtype=np.int64)
    return (tolerated(inst.deadline_s[idx]) - inst.download_s[idx]) * US_PER_S


def _padded(values: FloatArray) -> NDArray[np.float64]:
    """``P[j, k] = max(v_k, v_j)``: user k padded to candidate j's value."""
    return np.maximum(values[None, :], values[:, None])


def _add_selector(f: Formulation, tag: str, binaries: list[int], values: FloatArray) -> Selector:
    distinct = sorted(set(values.tolist()))
    avars = [f.add_var(f"a_{tag}_{n}", "binary", 0, 1) for n in range(len(distinct))]
    for n in range(len(distinct) - 1):
        f.add_row(f"chain_{tag}_{n}", {avars[n + 1]: 1.0, avars[n]: -1.0}, 0.0, COUNT)
    level = {v: n for n, v in enumerate(distinct)}
    for b, v in zip(binaries, values.tolist(), strict=True):
        f.add_row(f"cover_{tag}_{b}", {b: 1.0, avars[level[v]]: -1.0}, 0.0, COUNT)
    sel = Selector(tuple(binaries), tuple(values.tolist()), tuple(distinct), tuple(avars))
    f.selectors.append(sel)
    return sel


def _add_max_rows(
    f: Formulation,
    name: str,
    binaries: list[int],
    matrix: NDArray[np.float64],
    extra: dict[int, float],
    rhs: float,
    unit: str,
    selector: Selector | None = None,
) -> None:
    """Base row (diagonal coefficients) and one candidate row per strictly larger padding.

    ``matrix[j, k]`` is user k's coefficient when the maximum is candidate j's value; it
    must be >= the diagonal ``matrix[k, k]`` (monotone in the padding). Without a
    selector, candidate j's row is enforced by ``b_j``; with one, there is one row per
    distinct value, enforced by its ``a_v``, over the users whose value is at most v.
    """
    own = np.diag(matrix)
    base = {b: c for b, c in zip(binaries, own.tolist(), strict=True)}
    f.add_row(f"{name}_base", {**base, **extra}, rhs, unit)
    if selector is None:
        for j, bj in enumerate(binaries):
            excess = matrix[j] - own
            if (excess > 0.0).any():  # else the same row as the base row
                terms = {b: c for b, c in zip(binaries, matrix[j].tolist(), strict=True)}
                big_m = float(excess.sum())
                f.add_row(f"{name}_{j}", {**terms, **extra}, rhs, unit, indicator=bj, big_m=big_m)
        return
    values = np.asarray(selector.values)
    for n, (v, a) in enumerate(zip(selector.distinct, selector.avars, strict=True)):
        j = int(np.flatnonzero(values == v)[0])
        excess = matrix[j] - own  # zero for users with a value >= v
        if (excess > 0.0).any():
            terms = {b: c for b, c in zip(binaries, matrix[j].tolist(), strict=True)}
            f.add_row(f"{name}_v{n}", {**terms, **extra}, rhs, unit, indicator=a, big_m=float(excess.sum()))


def _add_hull(
    f: Formulation, tag: str, binaries: list[int], values: FloatArray, target: int, sense: str, unit: str
) -> None:
    """``target >= max`` (sense ``max``) or ``target <= min`` of the served ``values``."""
    levels = sorted(set(values.tolist()))
    hv = [f.add_var(f"h_{tag}_{n}", "continuous", 0.0, 1.0, COUNT, "max") for n in range(len(levels))]
    level_of = {v: n for n, v in enumerate(levels)}
    for b, v in zip(binaries, values.tolist(), strict=True):
        f.add_row(f"h_{tag}_{b}", {b: 1.0, hv[level_of[v]]: -1.0}, 0.0, COUNT)
    for n in range(len(levels) - 1):
        lo, hi = (hv[n + 1], hv[n]) if sense == "max" else (hv[n], hv[n + 1])
        f.add_row(f"h_{tag}_chain_{n}", {lo: 1.0, hi: -1.0}, 0.0, COUNT)
    if sense == "max":
        steps = np.diff([0.0, *levels])
        f.add_row(f"{tag}_hull", {**dict(zip(hv, steps.tolist(), strict=True)), target: -1.0}, 0.0, unit)
    else:
        steps = np.diff(levels)
        terms = dict(zip(hv[:-1], steps.tolist(), strict=True))
        f.add_row(f"{tag}_hull", {target: 1.0, **terms}, levels[-1], unit)
    f.hulls.append(Hull(sense, tuple(binaries), tuple(values.tolist()), tuple(levels), tuple(hv)))


def _add_mode_common(
    f: Formulation, inst: Instance, tag: str, users: list[int], binaries: list[int]
) -> tuple[int, int]:
    """Upload maximum ``tau`` (1), (2) and the tightest deadline ``D`` of a mode."""
    up = inst.upload_s[users] * US_PER_S
    rhs = time_rhs_us(inst, users)
    tau = f.add_var(f"tau_{tag}", "continuous", 0.0, float(up.max()), TIME, "max")
    d = f.add_var(f"D_{tag}", "continuous", 0.0, float(rhs.max()), TIME, "min")
    _add_hull(f, f"tau_{tag}", binaries, up, tau, "max", TIME)
    _add_hull(f, f"D_{tag}", binaries, rhs, d, "min", TIME)
    return tau, d


def _add_ad(f: Formulation, inst: Instance, z: float) -> int | None:
    """AD latency (17) <= every served deadline, and the AD KV memory variable (15)."""
    users = f.ad_users
    if not users:
        return None
    li = inst.input_tokens[users].astype(np.float64)
    lo = inst.output_tokens[users].astype(np.float64)
    f.x = [f.add_var(f"x_{k}", "binary", 0, 1) for k in users]
    tau, d = _add_mode_common(f, inst, "ad", users, f.x)
    l2 = f.add_var("L2", "continuous", 0.0, float(lo.max()), TOKENS, "max")  # (5)
    _add_hull(f, "L2", f.x, lo, l2, "max", TOKENS)
    pad = _padded(li)
    # c_k(L1) = alpha^L (G_p(L1) + sum_{l<LO_k} G_a(L1, l)) / z  (17), (26)
    flops = prefill_flops(inst.llm, pad) + decode_flops_sum(inst.llm, pad, lo[None, :] - 1.0)
    work = inst.llm.alpha_s_per_flop * flops / z * US_PER_S
    extra = {tau: 1.0, l2: inst.llm.beta_s * US_PER_S, d: -1.0}
    sel = _add_selector(f, "L1", f.x, li) if f.use_selectors else None
    _add_max_rows(f, "t_ad", f.x, work, extra, 0.0, TIME, sel)
    kv = inst.llm_kv_bytes_per_token / BYTES_PER_MB
    ma = f.add_var("MA", "continuous", 0.0, kv * float((li.max() + lo).sum()), MEMORY, "max")
    _add_max_rows(f, "q_ad", f.x, kv * (pad + lo[None, :]), {ma: -1.0}, 0.0, MEMORY, sel)  # (15)
    return ma


def sd_l4_coefficients(inst: Instance, z: float, n_iter: NDArray[np.int64]) -> FloatArray:
    """``C_k``: seconds per unit of ``L4`` in user k's SD iterations (30).

    ``P_n = L3 + (n - 1) L4 + (n - 2)`` for ``n >= 2`` (10, D2), and each iteration
    ``n >= 2`` costs ``b P_n`` plus a constant with
    ``b = (alpha^S M^S 4 Dh^S H^S LD + alpha^L M^L 4 Dh^L H^L (LD + 1)) / (1 - z)``,
    so ``C_k = b sum_{n=2..N_k} (n - 1) = b N_k (N_k - 1) / 2``.
    """
    ld = inst.server.draft_length
    slm, llm = inst.slm, inst.llm
    b = (
        slm.alpha_s_per_flop * slm.layers * slm.attention_flops_per_pair * ld
        + llm.alpha_s_per_flop * llm.layers * llm.attention_flops_per_pair * (ld + 1)
    ) / (1.0 - z)
    n = n_iter.astype(np.float64)
    return b * n * (n - 1.0) / 2.0


def _add_sd(f: Formulation, inst: Instance, z: float) -> tuple[int, int, dict[int, float]] | None:
    """SD latency (19) <= every served deadline, and the SD KV memory terms (16)."""
    users = f.sd_users
    if not users:
        return None
    ld = inst.server.draft_length
    li = inst.input_tokens[users].astype(np.float64)
    la = inst.accepted_drafts[users]
    n_it = inst.sd_iterations[users]
    f.y = [f.add_var(f"y_{k}", "binary", 0, 1) for k in users]
    tau, d = _add_mode_common(f, inst, "sd", users, f.y)
    nm = f.add_var("Nmax", "continuous", 0.0, float(n_it.max()), TOKENS, "max")  # (9)
    _add_hull(f, "Nmax", f.y, n_it.astype(np.float64), nm, "max", TOKENS)
    # user k's prefill and iteration seconds at L3 = max(LI_k, LI_j), L4 = 0 (7), (8), (30)
    g = np.empty((len(users), len(users)))
    for j, v in enumerate(li.tolist()):
        g[j] = sd_user_costs(inst, v, 0.0, n_it, z)
    g = np.where(li[None, :] >= li[:, None], np.diag(g)[None, :], g) * US_PER_S
    c4 = sd_l4_coefficients(inst, z, n_it) * US_PER_S
    v4 = f.add_var("V4", "continuous", 0.0, float(c4.sum() * la.max()), TIME, "max")
    sel3 = _add_selector(f, "L3", f.y, li) if f.use_selectors else None
    sel4 = _add_selector(f, "L4", f.y, la) if f.use_selectors else None
    _add_max_rows(f, "v4_sd", f.y, c4[None, :] * _padded(la), {v4: -1.0}, 0.0, TIME, sel4)
    fixed = (inst.llm.beta_s + ld * inst.slm.beta_s) * US_PER_S  # per iteration; + beta^L once
    extra = {tau: 1.0, v4: 1.0, nm: fixed, d: -1.0}
    _add_max_rows(f, "t_sd", f.y, g, extra, -inst.llm.beta_s * US_PER_S, TIME, sel3)
    # q_sd: (kv^S + kv^L) (L3 + (N_k - 1) L4) + e_k per user (16), (31), D4
    kv_s, kv_l = inst.slm_kv_bytes_per_token, inst.llm_kv_bytes_per_token
    kv = (kv_s + kv_l) / BYTES_PER_MB
    ms3 = f.add_var("MS3", "continuous", 0.0, kv * float(li.max()) * len(users), MEMORY, "max")
    _add_max_rows(f, "q_sd_L3", f.y, kv * _padded(li), {ms3: -1.0}, 0.0, MEMORY, sel3)
    steps = (n_it - 1).astype(np.float64)
    ms4 = f.add_var("MS4", "continuous", 0.0, kv * float((steps * la.max()).sum()), MEMORY, "max")
    _add_max_rows(f, "q_sd_L4", f.y, kv * steps[None, :] * _padded(la), {ms4: -1.0}, 0.0, MEMORY, sel4)
    offset = np.maximum(n_it - 2, 0).astype(np.float64)
    e = ((kv_s + kv_l) * (ld + offset) + kv_l * (n_it >= 2)) / BYTES_PER_MB
    return ms3, ms4, {b: float(c) for b, c in zip(f.y, e.tolist(), strict=True)}


def build(
    inst: Instance,
    z: float,
    *,
    min_served: int = 0,
    selectors: bool = False,
    modes: tuple[str, ...] = (MODE_NAMES[AD], MODE_NAMES[SD]),
) -> Formulation:
    """The MILP of P1 at compute fraction ``z``, optionally with ``served >= min_served``.

    ``selectors=True`` enforces the candidate rows by binary levels of the padded length
    instead of the candidate users' own binaries (same optimum, another LP). ``modes``
    restricts the model to some modes (a single-mode model bounds that mode's count).
    """
    f = Formulation(z, selectors)
    ad_ok, sd_ok = eligible_users(inst, z)
    f.ad_users = ad_ok if MODE_NAMES[AD] in modes else []
    f.sd_users = sd_ok if MODE_NAMES[SD] in modes else []
    ma = _add_ad(f, inst, z)
    sd = _add_sd(f, inst, z)
    memory: dict[int, float] = {}
    if ma is not None:
        memory[ma] = 1.0
    if sd is not None:
        memory.update({sd[0]: 1.0, sd[1]: 1.0, **sd[2]})
    if memory:  # (21d)
        cap = (tolerated(inst.server.memory_bytes) - inst.weights_at(z)) / BYTES_PER_MB
        f.add_row("memory", memory, cap, MEMORY)
    x_of = dict(zip(f.ad_users, f.x, strict=True))
    for k, yk in zip(f.sd_users, f.y, strict=True):
        if k in x_of:
            f.add_row(f"one_mode_{k}", {x_of[k]: 1.0, yk: 1.0}, 1.0, COUNT)
    if min_served > 0:
        f.add_row("cutoff", {i: -1.0 for i in f.objective}, -float(min_served), COUNT)
    return f
