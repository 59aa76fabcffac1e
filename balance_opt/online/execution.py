"""How a started batch really runs: realized lengths and, for SD, realized acceptance.

``inst`` is the workload's instance, whose ``output_tokens`` are the realized lengths. A
run is the model's compute and forward-pass time (docs/model.md sections 4 and 5) at the
batch's compute share, and its KV bytes; the upload wait is the simulator's business.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from balance_opt.instance import Instance
from balance_opt.model import (
    ad_mode,
    sd_iteration_seconds_per_user,
    sd_mode,
    sd_prefill_seconds_per_user,
    sd_user_memory,
)


@dataclass(frozen=True)
class Run:
    """A batch's realized duration after its uploads, split as the model splits it, and its KV."""

    compute_s: float  # alpha-terms at the batch's share
    fixed_s: float  # beta-terms: forward passes
    kv_bytes: float

    @property
    def duration_s(self) -> float:
        """From the start of compute to the batch's end."""
        return self.compute_s + self.fixed_s


def _mask(inst: Instance, users: NDArray[np.int64]) -> NDArray[np.bool_]:
    served = np.zeros(inst.num_users, dtype=np.bool_)
    served[users] = True
    return served


def ad_run(inst: Instance, users: NDArray[np.int64], share: float) -> Run:
    """The AD batch of ``users`` at compute share ``share`` (17), (15): deterministic."""
    cost = ad_mode(inst, _mask(inst, users), share)
    return Run(cost.compute_s, cost.fixed_s, cost.kv_bytes)


def sd_expected_run(inst: Instance, users: NDArray[np.int64], share: float) -> Run:
    """The SD batch at share ``share`` with the model's expected acceptance (19), (16)."""
    cost = sd_mode(inst, _mask(inst, users), 1.0 - share)
    return Run(cost.compute_s, cost.fixed_s, cost.kv_bytes)


def sd_random_run(
    inst: Instance, users: NDArray[np.int64], emitted: Sequence[NDArray[np.int64]], share: float
) -> Run:
    """The SD batch at share ``share`` with each user's realized emissions (docs/stochastic.md).

    ``emitted[i]`` holds user ``users[i]``'s tokens emitted after each of its iterations; its
    length is the user's realized ``N_k``. Iteration ``n`` runs the users with ``N_k >= n``;
    its prefix is ``L3`` for ``n = 1`` and ``L3 + E_n - 1`` after, ``E_n`` the most tokens an
    active user emitted before it, exactly as ``balance_opt.stochastic.simulate`` runs it.
    """
    n_k = np.array([len(e) for e in emitted], dtype=np.int64)
    n_max = int(n_k.max())
    before = np.zeros((len(users), n_max), dtype=np.int64)  # emitted before iteration n
    for i, e in enumerate(emitted):
        before[i, 1 : len(e)] = e[:-1]
    active = np.arange(1, n_max + 1)[None, :] <= n_k[:, None]
    extra = np.where(active, before, 0).max(axis=0)
    count = active.sum(axis=0)
    L3 = float(inst.input_tokens[users].max())  # (9)
    ld = inst.server.draft_length
    if share > 0.0:
        span = np.arange(int(extra.max()) + 1, dtype=np.float64)
        table = sd_iteration_seconds_per_user(inst, L3 + span[:, None], 0.0, 2, share)
        per_iter = table[np.maximum(extra - 1, 0), 1]  # P_n = L3 + E_n - 1, n >= 2
        per_iter[0] = table[0, 0]  # P_1 = L3
        # fsum: a fixed rounding, whatever kernel the CPU selects
        compute = len(users) * sd_prefill_seconds_per_user(inst, L3, share) + math.fsum(
            (count * per_iter).tolist()
        )
    else:  # no compute for SD (D7)
        compute = math.inf
    fixed = (n_max + 1) * inst.llm.beta_s + n_max * ld * inst.slm.beta_s
    last_extra = extra[n_k - 1]
    last_prefix = np.where(n_k >= 2, L3 + last_extra - 1, L3)
    kv = math.fsum(sd_user_memory(inst, last_prefix, 0.0, np.minimum(n_k, 2)).tolist())
    return Run(compute, fixed, kv)
