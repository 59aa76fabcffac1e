"""Hand-built instance families: ``theorem1-tight``, where BALANCE serves exactly half (docs/worst-case.md).

An instance of ``theorem1-tight`` with ``K = 2m`` users has two groups of ``m``:

- **cheap** users: a prompt of 1-4 tokens, an answer of 1-4 tokens, high acceptance. They fit
  in one AD batch at the smallest positive ``z`` and in one SD batch at the largest ``z``
  below 1 (``z* = 0.9``);
- **long** users: a prompt of 5-8 tokens, an answer of 200-210 tokens, acceptance 0.01-0.02.
  All of them fit in one AD batch at ``z*``, but none, even alone, in SD at any ``z >= 0.1``:
  with almost every draft rejected an SD iteration costs ``LD`` SLM passes and an LLM pass
  for about one token, and their deadline lies between the two latencies.

No batch of either mode mixes the groups: a long user keeps a batch running for at least
``LO beta^L`` seconds, past every cheap user's deadline. The optimum serves everybody (long
users in AD, cheap users in SD, at ``z*``), but at every ``(z, lambda)`` pair with both modes
possible Algorithm 1 takes the cheap users (the most users AD can serve, and the first tuple
that reaches them) and leaves Algorithm 2 only long users, which SD cannot serve; every other
pair has one mode only. So ``balance`` serves exactly ``m = K / 2``: Theorem 1's bound is tight.

Every condition is checked here with bounds computed from the group ranges alone, so whether
an ``m`` is possible does not depend on the seed; :func:`largest_m` finds where the family
stops. Stored numbers come from ``+ - * /`` only (no numpy transcendental function), so an
instance file has the same bytes on every machine.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from balance_opt.evaluator import AD, SD, Schedule, evaluate
from balance_opt.generator import DEFAULT_GRID, RNG, generate
from balance_opt.instance import Instance, LanguageModel, Server
from balance_opt.model import (
    decode_flops_sum,
    prefill_flops,
    sd_iteration_seconds_per_user,
    sd_prefill_seconds_per_user,
    sd_prefix,
)
from balance_opt.profiles import (
    DEFAULT_HARDWARE,
    DEFAULT_LLM,
    DEFAULT_SLM,
    hardware_memory_bytes,
    language_model_on,
)

TIGHT = "theorem1-tight"
FAMILIES = (TIGHT,)
# Each window a deadline is put in must be at least this much wider than its lower end, so
# the deadline (its middle) is 0.05% away from both ends, far above float rounding.
MARGIN = 1e-3
# Draws, in this fixed order, for the cheap group and then the long group.
DRAW_ORDER = ("input_tokens", "output_tokens", "acceptance", "uplink_spectral_efficiency",
              "downlink_spectral_efficiency")  # fmt: skip


@dataclass(frozen=True)
class TightParams:
    """The knobs of ``theorem1-tight``; ``users`` must be even (``m = users / 2``)."""

    users: int = 20
    seed: int = 0
    name: str | None = None
    llm: str = DEFAULT_LLM
    slm: str = DEFAULT_SLM
    hardware: str = DEFAULT_HARDWARE
    bytes_per_param: float = 2.0
    # LD: with LD = 1 an SD iteration is too cheap for the long users past m = 11 (docs/worst-case.md)
    draft_length: int = 8
    bits_per_token: float = 32.0
    cheap_input: tuple[int, int] = (1, 4)
    cheap_output: tuple[int, int] = (1, 4)
    cheap_acceptance: tuple[float, float] = (0.85, 0.95)
    long_input: tuple[int, int] = (5, 8)
    long_output: tuple[int, int] = (200, 210)
    long_acceptance: tuple[float, float] = (0.01, 0.02)
    uplink_spectral_efficiency: tuple[float, float] = (4.0, 8.0)
    downlink_spectral_efficiency: tuple[float, float] = (6.0, 10.0)
    uplink_bandwidth_hz: float = 1e6
    downlink_bandwidth_hz: float = 2e6

    def __post_init__(self) -> None:
        rules = [
            ("users must be even and >= 2 (m cheap, m long)", self.users >= 2 and self.users % 2 == 0),
            ("seed must be >= 0", self.seed >= 0),
            ("draft_length must be >= 1", self.draft_length >= 1),
            ("cheap_input must end below long_input", self.cheap_input[1] < self.long_input[0]),
        ]
        for f in ("cheap_input", "cheap_output", "long_input", "long_output"):
            lo, hi = getattr(self, f)
            rules.append((f"{f} must be whole numbers 1 <= min <= max", 1 <= lo <= hi))
        for f in ("cheap_acceptance", "long_acceptance"):
            lo, hi = getattr(self, f)
            rules.append((f"{f} must satisfy 0 < min <= max < 1", 0 < lo <= hi < 1))
        for f in ("uplink_spectral_efficiency", "downlink_spectral_efficiency"):
            lo, hi = getattr(self, f)
            rules.append((f"{f} must satisfy 0 < min <= max", 0 < lo <= hi))
        for rule, ok in rules:
            if not ok:
                raise ValueError(f"{TIGHT}: {rule}")
        hardware_memory_bytes(self.hardware)

    @property
    def m(self) -> int:
        return self.users // 2

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"preset": TIGHT}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            out[f.name] = list(v) if isinstance(v, tuple) else v
        return out


@dataclass(frozen=True)
class Design:
    """The deadlines' windows and the optimum's split, from the group ranges alone."""

    z_low: float  # the smallest positive z of the grid: cheap users all fit in AD there
    z_opt: float  # the largest z below 1: the optimum's z
    lam_opt: float  # the optimum's memory split on the grid (P2 needs one)
    cheap_window: tuple[float, float]  # (AD and SD batches of all cheap users, any batch with a long user)
    long_window: tuple[float, float]  # (AD batch of all long users at z_opt, a long user alone in SD)
    problems: tuple[str, ...]  # empty when every condition holds

    @property
    def cheap_budget_s(self) -> float:
        return (self.cheap_window[0] + self.cheap_window[1]) / 2

    @property
    def long_budget_s(self) -> float:
        return (self.long_window[0] + self.long_window[1]) / 2


def _accepted(a: float, ld: int) -> float:
    """``LA = a + a^2 + ... + a^LD`` (docs/model.md section 2) by products: no pow."""
    total, power = 0.0, 1.0
    for _ in range(ld):
        power *= a
        total += power
    return total


def _ad_seconds(llm: LanguageModel, L1: int, lo: int, z: float) -> float:
    """One AD user's compute share (26): ``alpha (G_p(L1) + sum_{l<LO} G_a(L1, l)) / z``."""
    return float(llm.alpha_s_per_flop * (prefill_flops(llm, L1) + decode_flops_sum(llm, L1, lo - 1)) / z)


def _sd_seconds(probe: Instance, L3: float, L4: float, n: int, w: float) -> float:
    """One SD user's compute share (30) over ``n`` iterations, summed with fsum."""
    per_iter = sd_iteration_seconds_per_user(probe, L3, L4, n, w).tolist()
    return sd_prefill_seconds_per_user(probe, L3, w) + math.fsum(per_iter)


def design(p: TightParams, probe: Instance) -> Design:
    """Windows for the deadlines of ``p`` and the conditions they need (docs/worst-case.md).

    ``probe`` supplies the models and the server of ``p``; its users are not read.
    """
    m, ld = p.m, p.draft_length
    llm, beta_l, beta_s = probe.llm, probe.llm.beta_s, probe.slm.beta_s
    z_low = min(z for z in DEFAULT_GRID if z > 0)
    z_opt = max(z for z in DEFAULT_GRID if z < 1)
    gamma = p.bits_per_token
    up_max = gamma * p.long_input[1] / (p.uplink_bandwidth_hz * p.uplink_spectral_efficiency[0])
    up_min = gamma * p.long_input[0] / (p.uplink_bandwidth_hz * p.uplink_spectral_efficiency[1])
    cheap_up_max = gamma * p.cheap_input[1] / (p.uplink_bandwidth_hz * p.uplink_spectral_efficiency[0])
    # A long user's SD iterations: N >= LO / (1 + LA) - 1e-9 (D5), with LA at its largest.
    long_la = _accepted(p.long_acceptance[1], ld) * (1 + 1e-9)
    long_n = max(1, math.floor(p.long_output[0] / (1 + long_la)))
    # Lower bound of a long user alone in SD at w <= 1 - z_low (19): its passes, and the
    # compute of its shortest prompt and iterations with L4 = 0 (P_n grows with L4, (10)).
    long_sd = (up_min + (long_n + 1) * beta_l + long_n * ld * beta_s
               + _sd_seconds(probe, p.long_input[0], 0.0, long_n, 1 - z_low))  # fmt: skip
    # Upper bound of the long users' AD batch at z_opt (17): every user the longest.
    long_ad = (up_max + m * _ad_seconds(llm, p.long_input[1], p.long_output[1], z_opt)
               + p.long_output[1] * beta_l)  # fmt: skip
    # Cheap users: AD batch at z_low, SD batch at z_opt with N and L4 at their largest.
    cheap_la_min = _accepted(p.cheap_acceptance[0], ld) * (1 - 1e-9)
    cheap_n = max(1, math.ceil(p.cheap_output[1] / (1 + cheap_la_min)))
    cheap_l4 = _accepted(p.cheap_acceptance[1], ld) * (1 + 1e-9)
    cheap_ad = (cheap_up_max + m * _ad_seconds(llm, p.cheap_input[1], p.cheap_output[1], z_low)
                + p.cheap_output[1] * beta_l)  # fmt: skip
    cheap_sd = (cheap_up_max + m * _sd_seconds(probe, p.cheap_input[1], cheap_l4, cheap_n, 1 - z_opt)
                + (cheap_n + 1) * beta_l + cheap_n * ld * beta_s)  # fmt: skip
    # Any batch with a long user runs at least L2 = LO passes (AD) or Nmax + 1 LLM passes (SD).
    mixed = min(p.long_output[0] * beta_l, (long_n + 1) * beta_l + long_n * ld * beta_s)
    cheap_window, long_window = (max(cheap_ad, cheap_sd), mixed), (long_ad, long_sd)
    problems = [
        f"{what} needs up to {lo:.6g} s but must finish before {hi:.6g} s"
        for what, (lo, hi) in (
            ("every cheap user's batch (AD at z = 0.1, SD at z = 0.9)", cheap_window),
            ("the long users' AD batch at z = 0.9 (SD alone takes at least the second figure)", long_window),
        )
        if hi < lo * (1 + MARGIN)
    ]
    lam_opt, memory_problems = _memory(p, probe, cheap_n, cheap_l4)
    return Design(z_low, z_opt, lam_opt, cheap_window, long_window, (*problems, *memory_problems))


def _memory(p: TightParams, probe: Instance, cheap_n: int, cheap_l4: float) -> tuple[float, list[str]]:
    """The optimum's memory split on the grid, and what does not fit (15), (16), (22)."""
    m, ld = p.m, p.draft_length
    kv_l, kv_s = probe.llm_kv_bytes_per_token, probe.slm_kv_bytes_per_token
    free = probe.free_memory(0.5) * (1 - MARGIN)  # F(z) for every z < 1, with room for rounding
    long_ad = m * (p.long_input[1] + p.long_output[1]) * kv_l
    prefix = float(sd_prefix(p.cheap_input[1], cheap_l4, cheap_n))
    cheap_sd = m * ((prefix + ld) * kv_s + (prefix + ld + (cheap_n >= 2)) * kv_l)
    cheap_ad = m * (p.cheap_input[1] + p.cheap_output[1]) * kv_l
    lam_low = min(v for v in DEFAULT_GRID if v > 0)
    problems = [] if cheap_ad <= lam_low * free else [f"the cheap users' AD cache exceeds {lam_low} F"]
    fits = [lam for lam in DEFAULT_GRID if long_ad <= lam * free and cheap_sd <= (1 - lam) * free]
    if not fits:
        problems.append(f"the optimum's caches ({long_ad + cheap_sd:.4g} B) fit no memory split of F(z)")
    return (fits[0] if fits else 1.0), problems


def _models(p: TightParams) -> tuple[LanguageModel, LanguageModel]:
    return (language_model_on(p.hardware, p.llm, p.bytes_per_param),
            language_model_on(p.hardware, p.slm, p.bytes_per_param))  # fmt: skip


def _server(p: TightParams) -> Server:
    return Server(
        memory_bytes=float(hardware_memory_bytes(p.hardware)),
        bytes_per_param=float(p.bytes_per_param),
        draft_length=p.draft_length,
        bits_per_token=float(p.bits_per_token),
        z_grid=DEFAULT_GRID,
        lambda_grid=DEFAULT_GRID,
    )


def _draw(p: TightParams, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Per-user values of both groups (cheap first), in DRAW_ORDER for each group."""

    def uniform(lo_hi: tuple[float, float]) -> np.ndarray:
        # lo + (hi - lo) U with U = rng.random(): two IEEE operations, no fused multiply-add
        return lo_hi[0] + (lo_hi[1] - lo_hi[0]) * rng.random(p.m)

    cols: dict[str, list[np.ndarray]] = {f: [] for f in DRAW_ORDER}
    for group in ("cheap", "long"):
        li, lo = getattr(p, f"{group}_input"), getattr(p, f"{group}_output")
        cols["input_tokens"].append(rng.integers(li[0], li[1], size=p.m, endpoint=True))
        cols["output_tokens"].append(rng.integers(lo[0], lo[1], size=p.m, endpoint=True))
        cols["acceptance"].append(uniform(getattr(p, f"{group}_acceptance")))
        cols["uplink_spectral_efficiency"].append(uniform(p.uplink_spectral_efficiency))
        cols["downlink_spectral_efficiency"].append(uniform(p.downlink_spectral_efficiency))
    return {f: np.concatenate(v) for f, v in cols.items()}


def _probe(p: TightParams, name: str, values: dict[str, np.ndarray]) -> Instance:
    """An instance of ``p``'s server and models with the given users; every deadline 1 s."""
    llm, slm = _models(p)
    k = len(values["input_tokens"])
    return Instance(
        name=name,
        server=_server(p),
        llm=llm,
        slm=slm,
        user_ids=tuple(f"u{i}" for i in range(k)),
        input_tokens=values["input_tokens"],
        output_tokens=values["output_tokens"],
        deadline_s=np.ones(k),
        acceptance=values["acceptance"],
        uplink_bandwidth_hz=np.full(k, float(p.uplink_bandwidth_hz)),
        uplink_spectral_efficiency=values["uplink_spectral_efficiency"],
        downlink_bandwidth_hz=np.full(k, float(p.downlink_bandwidth_hz)),
        downlink_spectral_efficiency=values["downlink_spectral_efficiency"],
    )


def tight_instance(p: TightParams) -> Instance:
    """The ``theorem1-tight`` instance of ``p``; ValueError when its ``m`` is past :func:`largest_m`."""
    rng = np.random.default_rng(p.seed)
    values = _draw(p, rng)
    order = rng.permutation(p.users)  # users in a seeded order; the first m drawn are the cheap group
    k = p.users
    name = p.name or f"{TIGHT}-K{k}-s{p.seed:04d}"
    probe = _probe(p, name, {f: v[order] for f, v in values.items()})
    d = design(p, probe)
    if d.problems:
        stop = largest_m(dataclasses.replace(p, users=2))
        raise ValueError(
            f"{TIGHT}: no instance with m = {p.m} (K = {k}): {'; '.join(d.problems)}; with these knobs "
            f"the family stops at m = {stop} (K = {2 * stop}; docs/worst-case.md)"
        )
    cheap = order < p.m  # position i holds drawn user order[i]
    budget = np.where(cheap, d.cheap_budget_s, d.long_budget_s)
    record = {
        **p.record(),
        "m": p.m,
        "z_grid": list(DEFAULT_GRID),
        "lambda_grid": list(DEFAULT_GRID),
        "optimum_z": d.z_opt,
        "optimum_lambda": d.lam_opt,
        "cheap_budget_s": d.cheap_budget_s,
        "long_budget_s": d.long_budget_s,
        "cheap_users": [u for u, c in zip(probe.user_ids, cheap.tolist(), strict=True) if c],
        "rng": RNG,
        "draw_order": [f"{g}.{f}" for g in ("cheap", "long") for f in DRAW_ORDER] + ["permutation"],
    }
    # T = budget + download, so Tp = T - down is the budget (docs/model.md section 2)
    inst = probe.replace(deadline_s=budget + probe.download_s, generator=record)
    _check_optimum(inst, cheap, d.z_opt)
    return inst


def optimum_schedule(inst: Instance) -> Schedule:
    """The family's optimum: long users in AD, cheap users in SD, at ``optimum_z``."""
    gen = inst.generator or {}
    if gen.get("preset") != TIGHT:
        raise ValueError(f"{inst.name} is not a {TIGHT} instance")
    cheap = np.array([u in set(gen["cheap_users"]) for u in inst.user_ids])
    return Schedule(float(gen["optimum_z"]), np.where(cheap, SD, AD).astype(np.int8))


def _check_optimum(inst: Instance, cheap: np.ndarray, z: float) -> None:
    """The evaluator accepts the schedule that serves everybody (a guard on :func:`design`)."""
    ev = evaluate(inst, Schedule(z, np.where(cheap, SD, AD).astype(np.int8)))
    if not (ev.feasible and ev.served == inst.num_users):
        raise RuntimeError(f"{inst.name}: the family's optimum is rejected: {'; '.join(ev.violations[:3])}")


def largest_m(p: TightParams, limit: int = 10_000) -> int:
    """The largest ``m`` for which :func:`design` holds with the other knobs of ``p`` (0: none)."""
    one = {f: np.ones(1) for f in DRAW_ORDER} | {"acceptance": np.full(1, 0.5)}
    probe = _probe(p, "probe", one)
    best = 0
    for m in range(1, limit + 1):  # every bound grows with m: the first failure ends the family
        if design(dataclasses.replace(p, users=2 * m), probe).problems:
            break
        best = m
    return best


def generate_any(preset: str, users: int | None = None, seed: int = 0, **overrides: Any) -> Instance:
    """A family's instance, or :func:`balance_opt.generator.generate`'s for a drawn preset."""
    if preset in FAMILIES:
        return build_family(preset, users=users, seed=seed, **overrides)
    return generate(preset, users=users, seed=seed, **overrides)


def build_family(preset: str, users: int | None = None, seed: int = 0, **overrides: Any) -> Instance:
    """An instance of the named family; ValueError on a bad knob."""
    if preset != TIGHT:
        raise ValueError(f"unknown family {preset!r}; known: {', '.join(FAMILIES)}")
    names = {f.name for f in dataclasses.fields(TightParams)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise ValueError(f"{TIGHT} has no knob {', '.join(unknown)} (its knobs: {', '.join(sorted(names))})")
    if users is not None:
        overrides["users"] = users
    return tight_instance(TightParams(seed=seed, **overrides))
