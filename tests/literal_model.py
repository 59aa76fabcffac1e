"""The slow literal twin of balance_opt.model / evaluate: docs/model.md sections 2-6 as written.

Plain Python floats and loops: every decoding step ``l``, every SD iteration ``n`` and
every drafting step, with per-user workloads summed one user at a time. No closed
forms, no numpy. Only for tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from balance_opt.instance import Instance, LanguageModel

REL_TOL = 1e-9


@dataclass(frozen=True)
class LiteralUser:
    """One user's section-1 inputs as Python scalars."""

    LI: int
    LO: int
    T: float
    A: float
    B: float
    R: float
    Bd: float
    Rd: float


def users_of(inst: Instance) -> list[LiteralUser]:
    return [
        LiteralUser(
            int(inst.input_tokens[k]),
            int(inst.output_tokens[k]),
            float(inst.deadline_s[k]),
            float(inst.acceptance[k]),
            float(inst.uplink_bandwidth_hz[k]),
            float(inst.uplink_spectral_efficiency[k]),
            float(inst.downlink_bandwidth_hz[k]),
            float(inst.downlink_spectral_efficiency[k]),
        )
        for k in range(inst.num_users)
    ]


# --- section 2 ------------------------------------------------------------------------


def up(u: LiteralUser, gamma: float) -> float:
    return gamma * u.LI / (u.B * u.R)


def down(u: LiteralUser, gamma: float) -> float:
    return gamma * u.LO / (u.Bd * u.Rd)


def LA(u: LiteralUser, LD: int) -> float:
    return u.A * (1 - u.A**LD) / (1 - u.A)


def N(u: LiteralUser, LD: int) -> int:
    return max(1, math.ceil(u.LO / (LA(u, LD) + 1) - 1e-9))


def Tp(u: LiteralUser, gamma: float) -> float:
    return u.T - down(u, gamma)


def weights(m: LanguageModel, theta: float) -> float:
    return m.layers * theta * (4 * m.hidden * m.head_dim * m.heads + 2 * m.hidden * m.ffn)


def kv(m: LanguageModel, theta: float) -> float:
    return m.layers * theta * 2 * m.head_dim * m.heads


# --- section 3 ------------------------------------------------------------------------


def G_p(m: LanguageModel, L: float) -> float:
    Dm, Dh, H, Df = m.hidden, m.head_dim, m.heads, m.ffn
    return m.layers * (8 * L * Dm * Dh * H + 4 * L**2 * Dh * H + 4 * L * Dm * Df)


def G_a(m: LanguageModel, L: float, l: int) -> float:
    Dm, Dh, H, Df = m.hidden, m.head_dim, m.heads, m.ffn
    return m.layers * (8 * Dm * Dh * H + 4 * (L + l) * Dh * H + 4 * Dm * Df)


def G_v(m: LanguageModel, P: float, n_tokens: int) -> float:
    Dm, Dh, H, Df = m.hidden, m.head_dim, m.heads, m.ffn
    attention = 0.0
    for l in range(1, n_tokens + 1):
        attention += 4 * (P + l) * Dh * H
    return m.layers * (8 * n_tokens * Dm * Dh * H + attention + 4 * n_tokens * Dm * Df)


# --- section 4 ------------------------------------------------------------------------


@dataclass(frozen=True)
class LiteralMode:
    latency: float | None  # excluding download; None for an empty set
    kv_bytes: float


def ad_literal(inst: Instance, S: list[int], z: float) -> LiteralMode:
    if not S:
        return LiteralMode(None, 0.0)
    us, gamma, theta, llm = users_of(inst), inst.server.bits_per_token, inst.server.bytes_per_param, inst.llm
    L1 = max(us[k].LI for k in S)  # (5)
    L2 = max(us[k].LO for k in S)
    tau_up = max(up(us[k], gamma) for k in S)  # (1)
    tau_p = llm.alpha_s_per_flop * len(S) * G_p(llm, L1) / z + llm.beta_s  # (4)
    decoding = 0.0
    for l in range(1, L2):  # (6)
        work = 0.0
        for k in S:
            if l <= us[k].LO - 1:
                work += G_a(llm, L1, l)
        decoding += llm.alpha_s_per_flop * work / z + llm.beta_s
    q_ad = 0.0
    for k in S:
        q_ad += (L1 + us[k].LO) * kv(llm, theta)  # (15)
    return LiteralMode(tau_up + tau_p + decoding, q_ad)  # (17)


# --- section 5 ------------------------------------------------------------------------


def prefix(L3: float, L4: float, n: int) -> float:
    """(10), decision D2."""
    return L3 if n == 1 else L3 + (n - 2) * (L4 + 1) + L4


def sd_literal(inst: Instance, S: list[int], z: float) -> LiteralMode:
    if not S:
        return LiteralMode(None, 0.0)
    us, gamma, theta = users_of(inst), inst.server.bits_per_token, inst.server.bytes_per_param
    llm, slm, LD = inst.llm, inst.slm, inst.server.draft_length
    w = 1 - z
    L3 = max(us[k].LI for k in S)  # (9)
    L4 = max(LA(us[k], LD) for k in S)
    Ns = {k: N(us[k], LD) for k in S}
    Nmax = max(Ns.values())
    tau_up = max(up(us[k], gamma) for k in S)  # (2)
    tau_Lp = llm.alpha_s_per_flop * len(S) * G_p(llm, L3) / w + llm.beta_s  # (7)
    tau_Sp = slm.alpha_s_per_flop * len(S) * G_p(slm, L3) / w + slm.beta_s  # (8)
    iterations = 0.0
    for n in range(1, Nmax + 1):
        active = [k for k in S if n <= Ns[k]]  # S_n
        P = prefix(L3, L4, n)
        last_step = LD - 1 if n == 1 else LD
        for l in range(1, last_step + 1):  # drafting (11)
            work = 0.0
            for _k in active:
                work += G_a(slm, P, l)
            iterations += slm.alpha_s_per_flop * work / w + slm.beta_s
        m = LD if n == 1 else LD + 1
        work = 0.0
        for _k in active:  # verification (12)
            work += G_v(llm, P, m)
        iterations += llm.alpha_s_per_flop * work / w + llm.beta_s
    q_sd = 0.0
    for k in S:  # (16), decision D4
        PN = prefix(L3, L4, Ns[k])
        q_sd += (PN + LD) * kv(slm, theta) + (PN + LD + (1 if Ns[k] >= 2 else 0)) * kv(llm, theta)
    return LiteralMode(tau_up + tau_Lp + tau_Sp + iterations, q_sd)  # (19)


# --- section 6 ------------------------------------------------------------------------


@dataclass(frozen=True)
class LiteralVerdict:
    feasible: bool
    served: int
    t_ad: float | None
    t_sd: float | None
    memory: float
    late: list[int]
    memory_ok: bool


def evaluate_literal(inst: Instance, z: float, modes: list[int]) -> LiteralVerdict:
    """P1 feasibility of ``modes`` (0 none, 1 AD, 2 SD) at ``z``; z must be on the grid."""
    us, gamma, theta = users_of(inst), inst.server.bits_per_token, inst.server.bytes_per_param
    ad_set = [k for k, m in enumerate(modes) if m == 1]
    sd_set = [k for k, m in enumerate(modes) if m == 2]
    ok = not (ad_set and z == 0) and not (sd_set and z == 1)  # D7
    ad = ad_literal(inst, ad_set, z) if z > 0 else LiteralMode(math.inf if ad_set else None, 0.0)
    sd = sd_literal(inst, sd_set, z) if z < 1 else LiteralMode(math.inf if sd_set else None, 0.0)
    if ad_set and z == 0:
        ad = LiteralMode(math.inf, ad_literal(inst, ad_set, 1.0).kv_bytes)
    if sd_set and z == 1:
        sd = LiteralMode(math.inf, sd_literal(inst, sd_set, 0.0).kv_bytes)
    late = []
    for k in ad_set:
        if ad.latency is not None and ad.latency + down(us[k], gamma) > us[k].T * (1 + REL_TOL):
            late.append(k)
    for k in sd_set:
        if sd.latency is not None and sd.latency + down(us[k], gamma) > us[k].T * (1 + REL_TOL):
            late.append(k)
    memory = weights(inst.llm, theta) + (weights(inst.slm, theta) if z < 1 else 0.0)
    memory += ad.kv_bytes + sd.kv_bytes  # (21d)
    memory_ok = memory <= inst.server.memory_bytes * (1 + REL_TOL)
    feasible = ok and not late and memory_ok
    return LiteralVerdict(
        feasible, len(ad_set) + len(sd_set), ad.latency, sd.latency, memory, late, memory_ok
    )
