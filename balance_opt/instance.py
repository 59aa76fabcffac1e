"""The immutable problem instance: server, the two language models and the users.

Notation follows docs/model.md section 1; field names follow docs/formats.md. The value
rules are :mod:`balance_opt.instance_checks` (re-exported here); every :class:`Instance`
checks them when it is built.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from balance_opt import crmath
from balance_opt.instance_checks import (
    COUNT,
    MAX_DIM,
    MAX_DRAFT,
    MAX_TOKENS,
    NON_NEGATIVE,
    OPEN_UNIT,
    POSITIVE,
    UNIT,
    VALUE_RULES,
    YEAR_S,
    InvalidInstance,
    Rule,
    check_part,
    check_users,
    grid_problem,
    in_range,
    positive_up_to,
    show_value,
)

# The value rules' names stay importable from here, where they were first stated.
__all__ = [
    "COUNT",
    "MAX_DIM",
    "MAX_DRAFT",
    "MAX_TOKENS",
    "NON_NEGATIVE",
    "OPEN_UNIT",
    "POSITIVE",
    "UNIT",
    "USER_ARRAY_FIELDS",
    "VALUE_RULES",
    "YEAR_S",
    "FloatArray",
    "Instance",
    "IntArray",
    "InvalidInstance",
    "LanguageModel",
    "Rule",
    "Server",
    "check_values",
    "grid_problem",
    "in_range",
    "positive_up_to",
    "show_value",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# Per-user array fields in docs/formats.md order: (JSON name, dtype).
USER_ARRAY_FIELDS: tuple[tuple[str, type], ...] = (
    ("input_tokens", np.int64),
    ("output_tokens", np.int64),
    ("deadline_s", np.float64),
    ("acceptance", np.float64),
    ("uplink_bandwidth_hz", np.float64),
    ("uplink_spectral_efficiency", np.float64),
    ("downlink_bandwidth_hz", np.float64),
    ("downlink_spectral_efficiency", np.float64),
)


def check_values(inst: Instance) -> None:
    """Raise :class:`InvalidInstance` for the first value of ``inst`` that breaks a rule."""
    check_part("server", inst.server)
    check_part("llm", inst.llm)
    check_part("slm", inst.slm)
    if not inst.user_ids:
        raise InvalidInstance("users", "must be a non-empty list of user objects, got []")
    check_users(
        inst.user_ids,
        [(name, getattr(inst, name)) for name, _ in USER_ARRAY_FIELDS],
        (("distance_m", inst.distance_m), ("sd_iterations", inst.sd_iterations_override)),
    )


@dataclass(frozen=True)
class LanguageModel:
    """Architecture and hardware constants of one model (docs/model.md section 1)."""

    layers: int  # M
    hidden: int  # Dm
    head_dim: int  # Dh
    heads: int  # H
    ffn: int  # Df
    alpha_s_per_flop: float  # alpha
    beta_s: float  # beta
    name: str | None = None

    def weight_bytes(self, bytes_per_param: float) -> float:
        """Weights in bytes, (13)/(14): ``M * theta * (4 Dm Dh H + 2 Dm Df)``."""
        per_layer = 4 * self.hidden * self.head_dim * self.heads + 2 * self.hidden * self.ffn
        return float(self.layers * per_layer) * bytes_per_param

    def kv_bytes_per_token(self, bytes_per_param: float) -> float:
        """KV cache bytes per token: ``M * theta * 2 Dh H`` (from (15)/(16))."""
        return float(self.layers * 2 * self.head_dim * self.heads) * bytes_per_param

    @property
    def linear_flops_per_token(self) -> int:
        """Per-layer FLOPs that scale with tokens only: ``8 Dm Dh H + 4 Dm Df``."""
        return 8 * self.hidden * self.head_dim * self.heads + 4 * self.hidden * self.ffn

    @property
    def attention_flops_per_pair(self) -> int:
        """Per-layer attention FLOPs per (query, key) pair: ``4 Dh H``."""
        return 4 * self.head_dim * self.heads


@dataclass(frozen=True)
class Server:
    """Server-side parameters (docs/model.md section 1)."""

    memory_bytes: float  # Q
    bytes_per_param: float  # theta
    draft_length: int  # LD
    bits_per_token: float  # gamma
    z_grid: tuple[float, ...]  # Z
    lambda_grid: tuple[float, ...]  # Lambda


def _frozen(values: Any, dtype: type, name: str) -> NDArray[Any]:
    raw = np.asarray(values)
    if raw.ndim != 1:
        raise ValueError("per-user arrays must be one-dimensional")
    if dtype is np.int64 and raw.dtype.kind == "f":
        cut = np.flatnonzero(~np.isfinite(raw) | (raw != np.floor(raw)))
        if len(cut):  # a float that is not a whole number would be truncated
            raise InvalidInstance(f"users[{cut[0]}].{name}", str(COUNT.broken(raw[cut[0]].item())))
    arr: NDArray[Any] = raw.astype(dtype)
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class Instance:
    """One BALANCE instance. Arrays are read-only and indexed by user position."""

    name: str
    server: Server
    llm: LanguageModel
    slm: LanguageModel
    user_ids: tuple[str, ...]
    input_tokens: IntArray  # LI
    output_tokens: IntArray  # LO
    deadline_s: FloatArray  # T
    acceptance: FloatArray  # A
    uplink_bandwidth_hz: FloatArray  # B
    uplink_spectral_efficiency: FloatArray  # R
    downlink_bandwidth_hz: FloatArray  # Bd
    downlink_spectral_efficiency: FloatArray  # Rd
    distance_m: tuple[float | None, ...] | None = None
    # Optional per-user SD iteration levels (docs/formats.md ``sd_iterations``): where given,
    # they replace the formula's N_k, so every solver plans for that level unchanged.
    sd_iterations_override: tuple[int | None, ...] | None = None
    generator: Mapping[str, Any] | None = None
    description: str | None = None

    def __post_init__(self) -> None:
        k = len(self.user_ids)
        for fname, dtype in USER_ARRAY_FIELDS:
            arr = _frozen(getattr(self, fname), dtype, fname)
            if arr.shape != (k,):
                raise ValueError(f"{fname} has {arr.shape[0]} entries for {k} users")
            object.__setattr__(self, fname, arr)
        object.__setattr__(self, "user_ids", tuple(self.user_ids))
        if self.distance_m is not None:
            if len(self.distance_m) != k:
                raise ValueError(f"distance_m has {len(self.distance_m)} entries for {k} users")
            object.__setattr__(self, "distance_m", tuple(self.distance_m))
        if self.sd_iterations_override is not None:
            levels = tuple(self.sd_iterations_override)
            if len(levels) != k:
                raise ValueError(f"sd_iterations_override has {len(levels)} entries for {k} users")
            object.__setattr__(self, "sd_iterations_override", levels)
        check_values(self)

    # -- identity ---------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Instance):
            return NotImplemented
        for f in dataclasses.fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            if isinstance(a, np.ndarray):
                if not np.array_equal(a, b):
                    return False
            elif a != b:
                return False
        return True

    __hash__ = None  # type: ignore[assignment]

    def replace(self, **changes: Any) -> Instance:
        """A copy with some fields changed (validated like a new instance)."""
        return dataclasses.replace(self, **changes)

    def subset(self, users: Any) -> Instance:
        """The instance restricted to the users at the given positions."""
        idx = np.asarray(users, dtype=np.int64)
        changes: dict[str, Any] = {f: getattr(self, f)[idx] for f, _ in USER_ARRAY_FIELDS}
        changes["user_ids"] = tuple(self.user_ids[i] for i in idx)
        if self.distance_m is not None:
            changes["distance_m"] = tuple(self.distance_m[i] for i in idx)
        if self.sd_iterations_override is not None:
            changes["sd_iterations_override"] = tuple(self.sd_iterations_override[i] for i in idx)
        return self.replace(**changes)

    # -- sizes -------------------------------------------------------------------
    @property
    def num_users(self) -> int:
        """K."""
        return len(self.user_ids)

    # -- derived per-user quantities (docs/model.md section 2) ------------------------
    @cached_property
    def upload_s(self) -> FloatArray:
        """``up_k = gamma LI_k / (B_k R_k)``."""
        g = self.server.bits_per_token
        return _ro(g * self.input_tokens / (self.uplink_bandwidth_hz * self.uplink_spectral_efficiency))

    @cached_property
    def download_s(self) -> FloatArray:
        """``down_k = gamma LO_k / (Bd_k Rd_k)``."""
        g = self.server.bits_per_token
        return _ro(g * self.output_tokens / (self.downlink_bandwidth_hz * self.downlink_spectral_efficiency))

    @cached_property
    def accepted_drafts(self) -> FloatArray:
        """``LA_k = A_k (1 - A_k^LD) / (1 - A_k)`` (``A_k^LD`` correctly rounded: same bits on every CPU)."""
        a = self.acceptance
        a_ld = crmath.apply(functools.partial(crmath.ipow, n=self.server.draft_length), a)
        return _ro(a * (1.0 - a_ld) / (1.0 - a))

    @cached_property
    def formula_sd_iterations(self) -> IntArray:
        """``N_k = ceil(LO_k / (LA_k + 1) - 1e-9)``, at least 1 (decision D5)."""
        n = [
            max(1, math.ceil(lo / (la + 1.0) - 1e-9))
            for lo, la in zip(self.output_tokens.tolist(), self.accepted_drafts.tolist(), strict=True)
        ]
        return _ro(np.array(n, dtype=np.int64))

    @cached_property
    def sd_iterations(self) -> IntArray:
        """``N_k`` as planned: the file's ``sd_iterations`` where given, else the formula's."""
        if self.sd_iterations_override is None:
            return self.formula_sd_iterations
        n = [
            f if o is None else o
            for f, o in zip(self.formula_sd_iterations.tolist(), self.sd_iterations_override, strict=True)
        ]
        return _ro(np.array(n, dtype=np.int64))

    @cached_property
    def budget_s(self) -> FloatArray:
        """``Tp_k = T_k - down_k``: time left for upload and compute."""
        return _ro(self.deadline_s - self.download_s)

    @cached_property
    def llm_weight_bytes(self) -> float:
        """``q^L`` (13)."""
        return self.llm.weight_bytes(self.server.bytes_per_param)

    @cached_property
    def slm_weight_bytes(self) -> float:
        """``q^S`` (14)."""
        return self.slm.weight_bytes(self.server.bytes_per_param)

    @cached_property
    def llm_kv_bytes_per_token(self) -> float:
        """``kv^L``."""
        return self.llm.kv_bytes_per_token(self.server.bytes_per_param)

    @cached_property
    def slm_kv_bytes_per_token(self) -> float:
        """``kv^S``."""
        return self.slm.kv_bytes_per_token(self.server.bytes_per_param)

    def slm_weights_at(self, z: float) -> float:
        """``[z < 1] q^S``: the SLM's weights are loaded only while SD has compute (D7, (21d))."""
        return self.slm_weight_bytes if z < 1.0 else 0.0

    def weights_at(self, z: float) -> float:
        """``q^L + [z < 1] q^S``: the weights resident at compute fraction z (13), (14), (21d)."""
        return self.llm_weight_bytes + self.slm_weights_at(z)

    def free_memory(self, z: float) -> float:
        """``F(z) = Q - q^L - [z < 1] q^S``: memory left for KV caches (P2, (22))."""
        return self.server.memory_bytes - self.llm_weight_bytes - self.slm_weights_at(z)


def _ro(arr: NDArray[Any]) -> NDArray[Any]:
    arr = np.asarray(arr)
    arr.setflags(write=False)
    return arr
