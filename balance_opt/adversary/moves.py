"""The adversary's moves: random instances over the generator's knobs, and local changes to one.

Every move draws from one ``numpy.random.Generator`` in a fixed order, and every stored number
it makes comes from ``+ - * /`` and Python's ``round`` (no transcendental function on a
stored value), so a seed and a number of evaluations give the same instances on any machine
(the random phase's channel values come from :func:`balance_opt.generator.generate_from`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from balance_opt.generator import DEFAULT_GRID, GeneratorParams, generate_from, preset_params
from balance_opt.instance import USER_ARRAY_FIELDS, Instance
from balance_opt.profiles import HARDWARE

BASE_PRESETS = ("fig4", "fig5", "tight-memory")
# The per-user fields a local move may change (bandwidths stay as generated).
USER_FIELDS = ("input_tokens", "output_tokens", "deadline_s", "acceptance",
               "uplink_spectral_efficiency", "downlink_spectral_efficiency")  # fmt: skip
MAX_TOKENS = 2000
MAX_DRAFT = 8


def _uniform(rng: np.random.Generator, lo: float, hi: float, digits: int = 3) -> float:
    """A draw from [lo, hi], rounded to ``digits`` decimals (short, readable numbers)."""
    return round(lo + (hi - lo) * float(rng.random()), digits)


def random_params(rng: np.random.Generator, users: int, free_grids: bool) -> GeneratorParams:
    """Generator knobs drawn from wide ranges around the paper's (one random instance)."""
    preset = BASE_PRESETS[int(rng.integers(len(BASE_PRESETS)))]
    t_min = _uniform(rng, 0.2, 4.0)
    li_max = int(rng.integers(1, 1001))
    lo_max = int(rng.integers(1, 501))
    a_min = _uniform(rng, 0.01, 0.95)
    knobs: dict[str, Any] = {
        "users": users,
        "seed": int(rng.integers(0, 2**31)),
        "deadline_min_s": t_min,
        "deadline_max_s": round(t_min + _uniform(rng, 0.0, 10.0), 3),
        "input_min": int(rng.integers(1, li_max + 1)),
        "input_max": li_max,
        "output_min": int(rng.integers(1, lo_max + 1)),
        "output_max": lo_max,
        "acceptance_min": a_min,
        "acceptance_max": min(0.99, round(a_min + _uniform(rng, 0.0, 0.5), 3)),
        "draft_length": int(rng.integers(1, MAX_DRAFT + 1)),
        "hardware": sorted(HARDWARE)[int(rng.integers(len(HARDWARE)))],
    }
    if rng.random() < 0.5:  # memory binds: room for this many tokens of LLM + SLM KV cache
        knobs["kv_budget_tokens"] = float(rng.integers(100, 20001))
    elif preset == "tight-memory":
        knobs["kv_budget_tokens"] = 3000.0
    if free_grids:
        knobs["z_grid"] = random_grid(rng)
        knobs["lambda_grid"] = random_grid(rng)
    return preset_params(preset, **knobs)


def random_grid(rng: np.random.Generator) -> tuple[float, ...]:
    """One to four distinct values of the paper's grid {0, 0.1, ..., 1}, ascending (coarse grids
    are where Theorem 1 says least about P1)."""
    size = int(rng.integers(1, 5))
    picked = rng.choice(len(DEFAULT_GRID), size=size, replace=False)
    return tuple(DEFAULT_GRID[i] for i in sorted(picked.tolist()))


def random_instance(rng: np.random.Generator, users: int, free_grids: bool) -> Instance:
    return generate_from(random_params(rng, users, free_grids))


def _scaled(rng: np.random.Generator, value: float) -> float:
    """``value`` times a factor drawn from [0.5, 2)."""
    return value * (0.5 + 1.5 * float(rng.random()))


def _tweak_user(rng: np.random.Generator, inst: Instance) -> dict[str, Any]:
    """One per-user value scaled (lengths, deadline, channel) or redrawn (acceptance)."""
    k = int(rng.integers(inst.num_users))
    field = USER_FIELDS[int(rng.integers(len(USER_FIELDS)))]
    arr = getattr(inst, field).copy()
    if field in ("input_tokens", "output_tokens"):
        arr[k] = min(MAX_TOKENS, max(1, round(_scaled(rng, float(arr[k])))))
    elif field == "acceptance":
        arr[k] = _uniform(rng, 0.001, 0.999)
    else:
        arr[k] = _scaled(rng, float(arr[k]))
    return {field: arr}


def _copy_user(rng: np.random.Generator, inst: Instance) -> dict[str, Any]:
    """User k takes user j's values: groups of alike users, as in the worst cases known."""
    j, k = (int(v) for v in rng.integers(inst.num_users, size=2))
    return {f: _with(getattr(inst, f), k, getattr(inst, f)[j]) for f, _ in USER_ARRAY_FIELDS}


def _redraw_user(rng: np.random.Generator, inst: Instance) -> dict[str, Any]:
    """User k replaced by a user of a fresh random instance (the set of users changes)."""
    k = int(rng.integers(inst.num_users))
    other = random_instance(rng, 1, free_grids=False)
    return {f: _with(getattr(inst, f), k, getattr(other, f)[0]) for f, _ in USER_ARRAY_FIELDS}


def _with(arr: np.ndarray, k: int, value: Any) -> np.ndarray:
    out = arr.copy()
    out[k] = value
    return out


def _tweak_server(rng: np.random.Generator, inst: Instance) -> dict[str, Any]:
    """Memory scaled (never below both models' weights: serving nobody stays feasible), or the
    draft length one step up or down."""
    s = inst.server
    if rng.random() < 0.5:
        weights = inst.llm_weight_bytes + inst.slm_weight_bytes
        return {"server": _replace(s, memory_bytes=max(weights, _scaled(rng, s.memory_bytes)))}
    step = 1 if rng.random() < 0.5 else -1
    return {"server": _replace(s, draft_length=min(MAX_DRAFT, max(1, s.draft_length + step)))}


def _tweak_grid(rng: np.random.Generator, inst: Instance) -> dict[str, Any]:
    """One value of the z or the lambda grid added or removed (free grids only)."""
    name = "z_grid" if rng.random() < 0.5 else "lambda_grid"
    grid = set(getattr(inst.server, name))
    v = DEFAULT_GRID[int(rng.integers(len(DEFAULT_GRID)))]
    grid.symmetric_difference_update({v})
    if not grid:
        return {}
    return {"server": _replace(inst.server, **{name: tuple(sorted(grid))})}


def _replace(server: Any, **changes: Any) -> Any:
    return dataclasses.replace(server, **changes)


MOVES: tuple[Callable[[np.random.Generator, Instance], dict[str, Any]], ...] = (
    _tweak_user, _tweak_user, _tweak_user, _copy_user, _redraw_user, _tweak_server,
)  # fmt: skip


def neighbour(rng: np.random.Generator, inst: Instance, free_grids: bool) -> Instance:
    """``inst`` after one to three random moves (the same users, ids and generator record)."""
    moves = MOVES + ((_tweak_grid,) if free_grids else ())
    current = inst
    for _ in range(int(rng.integers(1, 4))):
        step = moves[int(rng.integers(len(moves)))](rng, current)
        current = current.replace(**step) if step else current
    return current
