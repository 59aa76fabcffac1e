"""Hypothesis strategies shared by the test suite: random small BALANCE instances.

The instances use the real Llama-2-7B / TinyLlama-1.1B architecture on the rtx4090
constants but short prompts, so that deadlines and memory can be set where decisions
matter: ``tight_memory`` leaves room for only a few users' KV caches, ``tight_deadlines``
puts deadlines around single-user latencies, and lengths and deadlines are drawn from
small pools so that ties are frequent.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from balance_opt.evaluator import Schedule
from balance_opt.instance import Instance, LanguageModel, Server

ALPHA = 1.0 / (0.5 * 165.2e12)
BANDWIDTH_BYTES_S = 1.008e12


def _model(name: str, layers: int, hidden: int, head_dim: int, heads: int, ffn: int) -> LanguageModel:
    base = LanguageModel(layers, hidden, head_dim, heads, ffn, ALPHA, 0.0, name)
    return LanguageModel(
        layers, hidden, head_dim, heads, ffn, ALPHA, base.weight_bytes(2) / BANDWIDTH_BYTES_S, name
    )


LLAMA2_7B = _model("llama-2-7b", 32, 4096, 128, 32, 11008)
TINYLLAMA = _model("tinyllama-1.1b", 22, 2048, 64, 32, 5632)

GRIDS = (
    tuple(round(0.1 * i, 10) for i in range(11)),
    (0.0, 0.25, 0.5, 0.75, 1.0),
    (0.0, 0.5, 1.0),
    (0.2, 0.6, 1.0),
    (0.0, 0.3, 0.9),
)


@st.composite
def small_instances(
    draw: st.DrawFn,
    min_users: int = 1,
    max_users: int = 7,
    draft_length: st.SearchStrategy[int] | None = None,
    tight_memory: bool | None = None,
    tight_deadlines: bool | None = None,
) -> Instance:
    """A random instance with ``min_users..max_users`` users (see module docstring)."""
    k = draw(st.integers(min_users, max_users))
    ld = draw(draft_length if draft_length is not None else st.sampled_from([1, 1, 2, 3, 4]))
    tight_mem = draw(st.booleans()) if tight_memory is None else tight_memory
    tight_dl = draw(st.booleans()) if tight_deadlines is None else tight_deadlines
    lengths = st.sampled_from([1, 2, 5, 8, 13, 20, 40]) if draw(st.booleans()) else st.integers(1, 60)
    li = draw(st.lists(lengths, min_size=k, max_size=k))
    lo = draw(st.lists(lengths, min_size=k, max_size=k))
    acc_pool = st.sampled_from([0.6, 0.7, 0.8]) if draw(st.booleans()) else st.floats(0.05, 0.95)
    acc = draw(st.lists(acc_pool, min_size=k, max_size=k))
    # A single decoding pass of the LLM takes ~10 ms here; LO <= 60 steps -> < 1 s.
    hi = 0.8 if tight_dl else 3.0
    dl_pool = st.sampled_from([0.1, 0.25, 0.4, 0.6]) if draw(st.booleans()) else st.floats(0.02, hi)
    deadlines = draw(st.lists(dl_pool, min_size=k, max_size=k))
    up_se = draw(st.lists(st.floats(0.5, 12.0), min_size=k, max_size=k))
    down_se = draw(st.lists(st.floats(0.5, 12.0), min_size=k, max_size=k))
    weights = LLAMA2_7B.weight_bytes(2) + TINYLLAMA.weight_bytes(2)
    kv_token = LLAMA2_7B.kv_bytes_per_token(2) + TINYLLAMA.kv_bytes_per_token(2)
    if tight_mem:
        # room for roughly 0..k*40 tokens of KV: some users fit, not all
        memory = weights + draw(st.floats(0.0, 40.0 * k)) * kv_token
    else:
        memory = draw(st.sampled_from([24e9, 16e9, weights + 2000 * kv_token]))
    z_grid = draw(st.sampled_from(GRIDS))
    lam_grid = draw(st.sampled_from(GRIDS))
    return Instance(
        name=f"hyp-K{k}",
        server=Server(
            memory_bytes=memory,
            bytes_per_param=2.0,
            draft_length=ld,
            bits_per_token=32.0,
            z_grid=z_grid,
            lambda_grid=lam_grid,
        ),
        llm=LLAMA2_7B,
        slm=TINYLLAMA,
        user_ids=tuple(f"u{i}" for i in range(k)),
        input_tokens=np.array(li),
        output_tokens=np.array(lo),
        deadline_s=np.array(deadlines),
        acceptance=np.array(acc),
        uplink_bandwidth_hz=np.full(k, 1e6),
        uplink_spectral_efficiency=np.array(up_se),
        downlink_bandwidth_hz=np.full(k, 2e6),
        downlink_spectral_efficiency=np.array(down_se),
    )


@st.composite
def random_schedules(draw: st.DrawFn, inst: Instance, on_grid: bool = True) -> Schedule:
    """A random (not necessarily feasible) schedule of ``inst``."""
    z = draw(st.sampled_from(inst.server.z_grid)) if on_grid else draw(st.floats(0.0, 1.0))
    modes = draw(st.lists(st.integers(0, 2), min_size=inst.num_users, max_size=inst.num_users))
    return Schedule(z, np.array(modes, dtype=np.int8))


@st.composite
def instances_and_schedules(draw: st.DrawFn, **kwargs: Any) -> tuple[Instance, Schedule]:
    """An instance together with one random schedule of it."""
    inst = draw(small_instances(**kwargs))
    return inst, draw(random_schedules(inst))


@st.composite
def generated_instances(
    draw: st.DrawFn,
    presets: tuple[str, ...] = ("fig4", "fig5", "tight-memory"),
    min_users: int = 1,
    max_users: int = 8,
) -> Instance:
    """An instance from :func:`balance_opt.generator.generate` with a random preset, K and seed."""
    from balance_opt.generator import generate

    preset = draw(st.sampled_from(presets))
    users = draw(st.integers(min_users, max_users))
    return generate(preset, users=users, seed=draw(st.integers(0, 10_000)))
