"""Seeded instance generator with the paper's presets (docs/model.md section 10).

``generate("fig4", users=30, seed=1)`` builds the same :class:`Instance` on every
machine: one ``numpy.random.default_rng(seed)`` draws, in this FIXED order, one array of
``K`` values per quantity:

1. ``U ~ U[0, 1)``: distance ``d = max(min_distance_m, radius_m * sqrt(U))`` (uniform in
   the disk; the angle does not matter and is not drawn)
2. deadline ``T ~ U[deadline_min_s, deadline_max_s]``
3. input length ``LI ~ U{input_min..input_max}`` (integers, inclusive)
4. output length ``LO ~ U{output_min..output_max}``
5. acceptance ``A ~ U[acceptance_min, acceptance_max]``

Nothing the model uses is rounded. The channel is deterministic given ``d``: path loss
``PL = 128.1 + 37.6 log10(d / 1 km)`` dB, ``SNR = PSD - PL - noise`` in dB (per-Hz
quantities, so the bandwidth cancels) and ``R = log2(1 + SNR)``, with the uplink and
downlink PSDs. Every parameter and the seed are recorded in the file's ``generator``.

The same parameters give the same bytes on every machine: ``log10``, ``10 ** x`` and
``log2`` are each correctly rounded (:mod:`balance_opt.crmath`), and the uniform draws are
``low + (high - low) * u`` with the product and the sum rounded separately.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from balance_opt import crmath
from balance_opt.instance import Instance, LanguageModel, Server
from balance_opt.profiles import (
    DEFAULT_HARDWARE,
    DEFAULT_LLM,
    DEFAULT_SLM,
    hardware_memory_bytes,
    language_model_on,
)

DEFAULT_GRID: tuple[float, ...] = tuple(i / 10 for i in range(11))
DRAW_ORDER = ("distance", "deadline_s", "input_tokens", "output_tokens", "acceptance")
RNG = "numpy.random.default_rng(seed) (PCG64)"
# Measured constants that replace the hardware profile's (generate --hardware-file); they
# are recorded only when set, so files generated without them keep their bytes.
CONSTANT_OVERRIDES = ("llm_alpha_s_per_flop", "llm_beta_s", "slm_alpha_s_per_flop", "slm_beta_s")


@dataclass(frozen=True)
class GeneratorParams:
    """Every knob of the generator; defaults are docs/model.md section 10 with Fig. 4's ranges."""

    preset: str = "fig4"
    users: int = 30  # K
    seed: int = 0
    name: str | None = None  # instance name; default "<preset>-K<K>-s<seed:04d>"
    # models and hardware (balance_opt.profiles)
    llm: str = DEFAULT_LLM
    slm: str = DEFAULT_SLM
    hardware: str = DEFAULT_HARDWARE
    bytes_per_param: float = 2.0  # theta (FP16)
    llm_alpha_s_per_flop: float | None = None  # None: the hardware profile's
    llm_beta_s: float | None = None
    slm_alpha_s_per_flop: float | None = None
    slm_beta_s: float | None = None
    memory_bytes: float | None = None  # Q; None: the hardware's capacity
    kv_budget_tokens: float | None = None  # Q = q^L + q^S + tokens * (kv^L + kv^S) when set
    draft_length: int = 1  # LD
    bits_per_token: float = 32.0  # gamma (D8)
    z_grid: tuple[float, ...] = DEFAULT_GRID
    lambda_grid: tuple[float, ...] = DEFAULT_GRID
    # users
    deadline_min_s: float = 0.5
    deadline_max_s: float = 4.0
    input_min: int = 1
    input_max: int = 300
    output_min: int = 1
    output_max: int = 100
    acceptance_min: float = 0.6
    acceptance_max: float = 0.8
    # channel (D8 where the paper is silent)
    radius_m: float = 250.0
    min_distance_m: float = 10.0
    uplink_bandwidth_hz: float = 1e6
    downlink_bandwidth_hz: float = 2e6
    uplink_psd_dbm_hz: float = -50.0
    downlink_psd_dbm_hz: float = -29.0
    noise_dbm_hz: float = -174.0
    path_loss_db_at_1km: float = 128.1
    path_loss_db_per_decade: float = 37.6

    def __post_init__(self) -> None:
        for f in ("z_grid", "lambda_grid"):
            object.__setattr__(self, f, tuple(float(v) for v in getattr(self, f)))
        self.check()

    def check(self) -> None:
        """ValueError naming the first knob with an impossible value."""
        hardware_memory_bytes(self.hardware)
        language_model_on(self.hardware, self.llm), language_model_on(self.hardware, self.slm)
        rules: list[tuple[str, bool]] = [
            ("users must be >= 1", self.users >= 1),
            ("seed must be >= 0", self.seed >= 0),
            ("draft_length must be >= 1", self.draft_length >= 1),
            ("input_min must be >= 1 and <= input_max", 1 <= self.input_min <= self.input_max),
            ("output_min must be >= 1 and <= output_max", 1 <= self.output_min <= self.output_max),
            ("need 0 < deadline_min_s <= deadline_max_s", 0 < self.deadline_min_s <= self.deadline_max_s),
            (
                "need 0 < acceptance_min <= acceptance_max < 1",
                0 < self.acceptance_min <= self.acceptance_max < 1,
            ),
            (
                "memory_bytes and kv_budget_tokens exclude each other",
                self.memory_bytes is None or self.kv_budget_tokens is None,
            ),
            ("memory_bytes must be > 0", self.memory_bytes is None or self.memory_bytes > 0),
            ("kv_budget_tokens must be >= 0", self.kv_budget_tokens is None or self.kv_budget_tokens >= 0),
            ("need 0 < min_distance_m <= radius_m", 0 < self.min_distance_m <= self.radius_m),
            ("bytes_per_param must be > 0", self.bytes_per_param > 0),
            ("bits_per_token must be > 0", self.bits_per_token > 0),
            ("bandwidths must be > 0", self.uplink_bandwidth_hz > 0 and self.downlink_bandwidth_hz > 0),
            # physical ranges: the dB arithmetic (10^(x/10)) stays a finite float
            (
                "power spectral densities must be in [-300, 100] dBm/Hz",
                all(
                    -300 <= v <= 100
                    for v in (self.uplink_psd_dbm_hz, self.downlink_psd_dbm_hz, self.noise_dbm_hz)
                ),
            ),
            ("path_loss_db_at_1km must be in [0, 400]", 0 <= self.path_loss_db_at_1km <= 400),
            ("path_loss_db_per_decade must be in [0, 200]", 0 <= self.path_loss_db_per_decade <= 200),
            ("radius_m must be at most 1e7 (10,000 km)", self.radius_m <= 1e7),
        ]
        for f in CONSTANT_OVERRIDES:
            v = getattr(self, f)
            if f.endswith("beta_s"):
                rules.append((f"{f} must be >= 0", v is None or v >= 0))
            else:
                rules.append((f"{f} must be > 0", v is None or v > 0))
        for f in ("z_grid", "lambda_grid"):
            g = getattr(self, f)
            rules.append(
                (
                    f"{f} must be a non-empty, strictly increasing list within [0, 1]",
                    bool(g)
                    and all(0.0 <= v <= 1.0 for v in g)
                    and all(a < b for a, b in itertools.pairwise(g)),
                )
            )
        floats = [getattr(self, f.name) for f in dataclasses.fields(self)]
        rules.append(("every number must be finite", all(_finite(v) for v in floats)))
        for rule, ok in rules:
            if not ok:
                raise ValueError(rule)

    def record(self) -> dict[str, Any]:
        """The JSON ``generator`` section: every parameter, the RNG and the draw order."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name in CONSTANT_OVERRIDES and v is None:
                continue
            out[f.name] = list(v) if isinstance(v, tuple) else v
        out["rng"] = RNG
        out["draw_order"] = list(DRAW_ORDER)
        return out

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> GeneratorParams:
        """Rebuild the parameters from a file's ``generator`` section."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in record.items() if k in names})


def _finite(v: Any) -> bool:
    if isinstance(v, float):
        return math.isfinite(v)
    if isinstance(v, tuple):
        return all(_finite(x) for x in v)
    return True


PRESETS: dict[str, dict[str, Any]] = {
    # Fig. 4 (docs/model.md section 10): K = 30, T ~ U[0.5, 4], LI 1..300, LO 1..100
    "fig4": {},
    # Fig. 5: T ~ U[2, 12], LI 1..1000, LO 1..500
    "fig5": {"deadline_min_s": 2.0, "deadline_max_s": 12.0, "input_max": 1000, "output_max": 500},
    # Fig. 1: one user, 500 input tokens, A = 0.7 (midpoint), a deadline that never binds
    "fig1": {
        "users": 1,
        "deadline_min_s": 1000.0,
        "deadline_max_s": 1000.0,
        "input_min": 500,
        "input_max": 500,
        "output_min": 600,
        "output_max": 600,
        "acceptance_min": 0.7,
        "acceptance_max": 0.7,
    },
    # Fig. 4's users with room for about 3000 tokens of LLM+SLM KV cache: memory binds
    "tight-memory": {"kv_budget_tokens": 3000.0},
}


# Shorthands that fix a range to one value: ``output_tokens=600`` sets min = max = 600.
FIXED_VALUE_ALIASES: dict[str, tuple[str, str]] = {
    "input_tokens": ("input_min", "input_max"),
    "output_tokens": ("output_min", "output_max"),
    "deadline_s": ("deadline_min_s", "deadline_max_s"),
    "acceptance": ("acceptance_min", "acceptance_max"),
}


def preset_params(preset: str = "fig4", **overrides: Any) -> GeneratorParams:
    """The preset's parameters with ``overrides`` (GeneratorParams field names) applied."""
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
    for alias, (lo, hi) in FIXED_VALUE_ALIASES.items():
        if alias in overrides:
            value = overrides.pop(alias)
            overrides[lo] = overrides[hi] = value
    names = {f.name for f in dataclasses.fields(GeneratorParams)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise ValueError(f"unknown generator parameter(s): {', '.join(unknown)}")
    values: dict[str, Any] = {**PRESETS[preset], **overrides, "preset": preset}
    if "memory_bytes" in overrides and "kv_budget_tokens" not in overrides:
        values["kv_budget_tokens"] = None  # an explicit capacity replaces a preset's KV budget
    return GeneratorParams(**values)


def generate(preset: str = "fig4", users: int | None = None, seed: int = 0, **overrides: Any) -> Instance:
    """One instance of ``preset`` (``users`` defaults to the preset's K)."""
    if users is not None:
        overrides["users"] = users
    return generate_from(preset_params(preset, seed=seed, **overrides))


def instance_name(p: GeneratorParams) -> str:
    """``<preset>-K<K>-s<seed:04d>`` unless a name is given.

    Fig. 1 instances differ by their output length, so theirs carries it too
    (``fig1-K1-LO600-s0000``) and runs for 200 / 600 / 1000 tokens can share a folder.
    """
    if p.name is not None:
        return p.name
    if p.preset == "fig1" and p.output_min == p.output_max:
        return f"{p.preset}-K{p.users}-LO{p.output_min}-s{p.seed:04d}"
    return f"{p.preset}-K{p.users}-s{p.seed:04d}"


def spectral_efficiency(distance_m: np.ndarray, psd_dbm_hz: float, p: GeneratorParams) -> np.ndarray:
    """``log2(1 + SNR)`` with ``SNR_dB = PSD - PL(d) - noise`` (docs/model.md section 10).

    ``log10``, ``10 ** x`` and ``log2`` are each rounded once from 50 digits
    (:mod:`balance_opt.crmath`), so every CPU writes the same bits.
    """
    return crmath.apply(partial(_spectral_efficiency, psd_dbm_hz=psd_dbm_hz, p=p), distance_m)


def _spectral_efficiency(distance_m: float, psd_dbm_hz: float, p: GeneratorParams) -> float:
    path_loss_db = p.path_loss_db_at_1km + p.path_loss_db_per_decade * crmath.log10(distance_m / 1000.0)
    snr_db = psd_dbm_hz - path_loss_db - p.noise_dbm_hz
    return crmath.log2(1.0 + crmath.exp10(snr_db / 10.0))


def _uniform(rng: np.random.Generator, low: float, high: float, k: int) -> np.ndarray:
    """``U[low, high)``: the draws of ``rng.uniform(low, high, k)``, as two rounded steps.

    numpy's C code may fuse ``low + range * u`` into one FMA on a CPU that has it; two
    ufuncs round the product and the sum separately everywhere.
    """
    scaled: np.ndarray = np.multiply(high - low, rng.random(k))
    return np.add(low, scaled)


def _models(p: GeneratorParams) -> tuple[LanguageModel, LanguageModel]:
    """LLM and SLM on ``p.hardware``, with any measured constants of ``p`` in place."""
    out = []
    for key in ("llm", "slm"):
        model = language_model_on(p.hardware, getattr(p, key), p.bytes_per_param)
        alpha, beta = getattr(p, f"{key}_alpha_s_per_flop"), getattr(p, f"{key}_beta_s")
        if alpha is not None:
            model = dataclasses.replace(model, alpha_s_per_flop=float(alpha))
        if beta is not None:
            model = dataclasses.replace(model, beta_s=float(beta))
        out.append(model)
    return out[0], out[1]


def generate_from(p: GeneratorParams) -> Instance:
    """The instance of parameters ``p`` (draws in the order of the module docstring)."""
    llm, slm = _models(p)
    k = p.users
    rng = np.random.default_rng(p.seed)
    distance = np.maximum(p.min_distance_m, p.radius_m * np.sqrt(rng.random(k)))
    deadline = _uniform(rng, p.deadline_min_s, p.deadline_max_s, k)
    li = rng.integers(p.input_min, p.input_max, size=k, endpoint=True)
    lo = rng.integers(p.output_min, p.output_max, size=k, endpoint=True)
    acceptance = _uniform(rng, p.acceptance_min, p.acceptance_max, k)
    theta = p.bytes_per_param
    if p.kv_budget_tokens is not None:
        kv_token = llm.kv_bytes_per_token(theta) + slm.kv_bytes_per_token(theta)
        memory = llm.weight_bytes(theta) + slm.weight_bytes(theta) + p.kv_budget_tokens * kv_token
    else:
        memory = hardware_memory_bytes(p.hardware) if p.memory_bytes is None else float(p.memory_bytes)
    return Instance(
        name=instance_name(p),
        server=Server(
            memory_bytes=float(memory),
            bytes_per_param=float(theta),
            draft_length=p.draft_length,
            bits_per_token=float(p.bits_per_token),
            z_grid=p.z_grid,
            lambda_grid=p.lambda_grid,
        ),
        llm=llm,
        slm=slm,
        user_ids=tuple(f"u{i}" for i in range(k)),
        input_tokens=li,
        output_tokens=lo,
        deadline_s=deadline,
        acceptance=acceptance,
        uplink_bandwidth_hz=np.full(k, float(p.uplink_bandwidth_hz)),
        uplink_spectral_efficiency=spectral_efficiency(distance, p.uplink_psd_dbm_hz, p),
        downlink_bandwidth_hz=np.full(k, float(p.downlink_bandwidth_hz)),
        downlink_spectral_efficiency=spectral_efficiency(distance, p.downlink_psd_dbm_hz, p),
        distance_m=tuple(distance.tolist()),
        generator=p.record(),
    )
