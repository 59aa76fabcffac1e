"""Schedules and the evaluator, the one judge of every schedule.

- :class:`Schedule`: a decision of P1 (the compute fraction ``z`` and one mode code per
  user), built from sets or from a solution file's assignment; :func:`on_grid` tells
  whether a ``z`` is one of the grid's values.
- :func:`evaluate`: P1 feasibility and its breakdown (docs/model.md sections 2-6) as an
  :class:`Evaluation`: latencies per mode, memory, each user's completion and slack, and
  every violated constraint in words.

The mode codes (``NONE`` / ``AD`` / ``SD``, ``MODE_NAMES``, ``MODE_CODES``) and the
tolerance ``REL_TOL`` are the model's (:mod:`balance_opt.model`), re-exported here for a
schedule's users. Solvers return schedules; whether one is feasible and how many it
serves is decided here and nowhere else.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from balance_opt.instance import FloatArray, Instance
from balance_opt.model import (
    AD,
    MODE_CODES,
    MODE_NAMES,
    NONE,
    REL_TOL,
    SD,
    ModeCost,
    ad_mode,
    has_compute,
    sd_mode,
    tolerated,
)

# How close a schedule's z must be to a grid value to count as that value.
GRID_TOL = 1e-12


@dataclass(frozen=True, eq=False)
class Schedule:
    """A decision of P1: the compute fraction ``z`` and one mode code per user."""

    z: float
    modes: NDArray[np.int8]  # NONE / AD / SD per user position

    def __post_init__(self) -> None:
        modes = np.array(self.modes, dtype=np.int8)
        if modes.ndim != 1 or ((modes < NONE) | (modes > SD)).any():
            raise ValueError("modes must be a 1-D array of 0 (none), 1 (ad) or 2 (sd)")
        modes.setflags(write=False)
        object.__setattr__(self, "modes", modes)
        object.__setattr__(self, "z", float(self.z))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Schedule):
            return NotImplemented
        return self.z == other.z and np.array_equal(self.modes, other.modes)

    __hash__ = None  # type: ignore[assignment]

    @classmethod
    def empty(cls, num_users: int, z: float) -> Schedule:
        """Serve nobody."""
        return cls(z, np.zeros(num_users, dtype=np.int8))

    @classmethod
    def from_sets(cls, num_users: int, z: float, ad: Sequence[int], sd: Sequence[int]) -> Schedule:
        """Build from the positions of the AD users and of the SD users."""
        modes = np.zeros(num_users, dtype=np.int8)
        modes[list(ad)] = AD
        modes[list(sd)] = SD
        if len(set(ad) & set(sd)):
            raise ValueError("a user cannot be in both AD and SD")
        return cls(z, modes)

    @classmethod
    def from_assignment(cls, inst: Instance, z: float, assignment: Mapping[str, str]) -> Schedule:
        """Build from ``{user id: "ad" | "sd" | "none"}`` (the solution file's form)."""
        return cls(z, np.array([MODE_CODES[assignment[u]] for u in inst.user_ids], dtype=np.int8))

    def assignment(self, inst: Instance) -> dict[str, str]:
        """``{user id: mode name}`` in instance order."""
        return {u: MODE_NAMES[m] for u, m in zip(inst.user_ids, self.modes.tolist(), strict=True)}

    @property
    def served(self) -> int:
        """Users given a mode (not necessarily on time: see :func:`evaluate`)."""
        return int(np.count_nonzero(self.modes))


@dataclass(frozen=True, eq=False)
class Evaluation:
    """What the evaluator found for one schedule."""

    feasible: bool
    served: int  # users in AD or SD (counts only when feasible)
    num_ad: int
    num_sd: int
    z: float
    ad: ModeCost
    sd: ModeCost
    completion_s: FloatArray  # per user: mode latency + download; NaN for unserved
    slack_s: FloatArray  # per user: deadline - completion; NaN for unserved
    weights_llm_bytes: float
    weights_slm_bytes: float
    violations: tuple[str, ...]
    memory_bytes: float  # weights + KV caches
    free_bytes: float  # Q - memory_bytes

    @property
    def t_ad(self) -> float | None:
        """AD latency excluding download (17), None when nobody is in AD."""
        return self.ad.latency_s

    @property
    def t_sd(self) -> float | None:
        """SD latency excluding download (19), None when nobody is in SD."""
        return self.sd.latency_s

    @property
    def throughput(self) -> float:
        """Normalized task throughput: served / K (0 for an infeasible schedule)."""
        k = len(self.completion_s)
        return (self.served / k if k else 0.0) if self.feasible else 0.0

    def to_dict(self, inst: Instance) -> dict[str, Any]:
        """JSON form (docs/formats.md: ``balance-opt evaluate --json``).

        JSON has no infinity: a latency that never ends (a mode given no compute, D7)
        and an unserved user's completion become ``null``; the violations say why.
        """

        def num(x: float | None) -> float | None:
            return None if x is None or not math.isfinite(x) else float(x)

        return {
            "feasible": self.feasible,
            "served": self.served,
            "num_ad": self.num_ad,
            "num_sd": self.num_sd,
            "z": self.z,
            "t_ad": num(self.t_ad),
            "t_sd": num(self.t_sd),
            "memory_bytes": self.memory_bytes,
            "memory": {
                "capacity": inst.server.memory_bytes,
                "weights_llm": self.weights_llm_bytes,
                "weights_slm": self.weights_slm_bytes,
                "kv_ad": self.ad.kv_bytes,
                "kv_sd": self.sd.kv_bytes,
                "free": self.free_bytes,
            },
            "modes": {
                name: {
                    "latency_s": num(cost.latency_s),
                    "upload_s": cost.upload_s,
                    "compute_s": num(cost.compute_s),
                    "fixed_s": cost.fixed_s,
                    "kv_bytes": cost.kv_bytes,
                }
                for name, cost in (("ad", self.ad), ("sd", self.sd))
            },
            "users": [
                {
                    "id": uid,
                    "completion_s": num(c),
                    "deadline_s": float(t),
                    "slack_s": num(s),
                }
                for uid, c, t, s in zip(
                    inst.user_ids,
                    self.completion_s.tolist(),
                    inst.deadline_s.tolist(),
                    self.slack_s.tolist(),
                    strict=True,
                )
            ],
            "violations": list(self.violations),
        }


def nobody_z(inst: Instance, grid: Sequence[float]) -> float:
    """The first z of ``grid`` where serving nobody is feasible: where the weights resident
    at z fit the memory (13), (14), (21d). A solver that serves nobody answers there; on an
    instance whose weights fit nowhere on the grid, no schedule is feasible and this is
    ``grid[0]``."""
    for z in grid:
        if evaluate(inst, Schedule.empty(inst.num_users, float(z))).feasible:
            return float(z)
    return float(grid[0])


def on_grid(value: float, grid: Sequence[float]) -> bool:
    """Is ``value`` one of the grid's values (up to float noise)?"""
    return any(abs(value - g) <= GRID_TOL for g in grid)


def evaluate(inst: Instance, schedule: Schedule) -> Evaluation:
    """Latencies, memory and every P1 violation of ``schedule`` (docs/model.md section 6)."""
    if schedule.modes.shape != (inst.num_users,):
        raise ValueError(f"schedule has {schedule.modes.shape[0]} users, instance {inst.num_users}")
    z = schedule.z
    is_ad = schedule.modes == AD
    is_sd = schedule.modes == SD
    violations = _z_violations(inst, z, is_ad, is_sd)
    ad = ad_mode(inst, is_ad, z)
    sd = sd_mode(inst, is_sd, z)

    completion = np.full(inst.num_users, np.nan)
    if ad.latency_s is not None:
        completion[is_ad] = ad.latency_s + inst.download_s[is_ad]
    if sd.latency_s is not None:
        completion[is_sd] = sd.latency_s + inst.download_s[is_sd]
    slack = inst.deadline_s - completion
    violations += _late_violations(inst, schedule, completion)

    w_llm = inst.llm_weight_bytes
    w_slm = inst.slm_weights_at(z)  # D7, (21d)
    memory = w_llm + w_slm + ad.kv_bytes + sd.kv_bytes
    cap = inst.server.memory_bytes
    if memory > tolerated(cap):
        violations.append(
            f"memory {memory:.9g} B exceeds the capacity {cap:.9g} B by {memory - cap:.6g} B (21d)"
        )
    num_ad, num_sd = int(is_ad.sum()), int(is_sd.sum())
    completion.setflags(write=False)
    slack.setflags(write=False)
    return Evaluation(
        feasible=not violations,
        served=num_ad + num_sd,
        num_ad=num_ad,
        num_sd=num_sd,
        z=z,
        ad=ad,
        sd=sd,
        completion_s=completion,
        slack_s=slack,
        weights_llm_bytes=w_llm,
        weights_slm_bytes=w_slm,
        violations=tuple(violations),
        memory_bytes=memory,
        free_bytes=cap - memory,
    )


def _z_violations(inst: Instance, z: float, is_ad: NDArray[np.bool_], is_sd: NDArray[np.bool_]) -> list[str]:
    """The violations of ``z`` itself (21g) and of users in a mode without compute at it (D7)."""
    violations: list[str] = []
    if not 0.0 <= z <= 1.0 or math.isnan(z):
        violations.append(f"z={z!r} is outside [0, 1] (21g)")
    elif not on_grid(z, inst.server.z_grid):
        violations.append(f"z={z!r} is not in the instance's z_grid (21g)")
    # D7: at z = 0 AD has no compute, at z = 1 SD has none; such users are never served.
    for users, name, mode, at in ((is_ad, "AD", AD, 0), (is_sd, "SD", SD, 1)):
        if users.any() and not has_compute(mode, z):
            first = inst.user_ids[int(np.flatnonzero(users)[0])]
            violations.append(
                f"{int(users.sum())} {name} user(s) at z = {at}, first user {first} "
                f"({name} has no compute, D7)"
            )
    return violations


def _late_violations(inst: Instance, schedule: Schedule, completion: FloatArray) -> list[str]:
    """One violation per served user that completes after its deadline, (20), (21c)."""
    late = (completion > tolerated(inst.deadline_s)) & ~np.isnan(completion)
    violations = []
    for k in np.flatnonzero(late).tolist():
        late_s = completion[k] - inst.deadline_s[k]
        violations.append(
            f"user {inst.user_ids[k]} ({MODE_NAMES[schedule.modes[k]]}) completes at "
            f"{completion[k]:.9g} s, {late_s:.6g} s after its deadline {inst.deadline_s[k]:.9g} s (20), (21c)"
        )
    return violations


# The mode codes and the tolerance are the model's (balance_opt.model); re-exported for a schedule's users.
__all__ = [
    "AD",
    "GRID_TOL",
    "MODE_CODES",
    "MODE_NAMES",
    "NONE",
    "REL_TOL",
    "SD",
    "Evaluation",
    "Schedule",
    "evaluate",
    "on_grid",
]
