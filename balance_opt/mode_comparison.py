"""Everyone in AD at z = 1 against everyone in SD at z = 0: the paper's Fig. 1, by the evaluator."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from balance_opt.evaluator import AD, SD, Evaluation, Schedule, evaluate
from balance_opt.instance import Instance


@dataclass(frozen=True)
class ModeComparison:
    """The two evaluations and what Fig. 1 reads from them."""

    ad: Evaluation  # every user in AD, z = 1
    sd: Evaluation  # every user in SD, z = 0

    @property
    def e2e_ad_s(self) -> float:
        """End-to-end latency of the last AD user (its mode latency plus its download)."""
        return float(np.max(self.ad.completion_s))

    @property
    def e2e_sd_s(self) -> float:
        """End-to-end latency of the last SD user."""
        return float(np.max(self.sd.completion_s))

    @property
    def sd_more_memory_pct(self) -> float:
        return 100.0 * (self.sd.memory_bytes - self.ad.memory_bytes) / self.ad.memory_bytes

    @property
    def sd_less_latency_pct(self) -> float:
        return 100.0 * (self.e2e_ad_s - self.e2e_sd_s) / self.e2e_ad_s


def compare_modes(inst: Instance) -> ModeComparison:
    """Evaluate ``inst`` with all users in AD at z = 1 and with all in SD at z = 0."""
    k = inst.num_users
    ad = evaluate(inst, Schedule(1.0, np.full(k, AD, dtype=np.int8)))
    sd = evaluate(inst, Schedule(0.0, np.full(k, SD, dtype=np.int8)))
    return ModeComparison(ad, sd)
