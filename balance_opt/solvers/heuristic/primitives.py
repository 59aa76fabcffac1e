"""What an implementation of Algorithm 3 returns, and the shared numeric primitives.

Two implementations exist (the literal reference and the fast default); both return a
:class:`BalanceOutcome` and must agree on every field except ``stats``. To make bitwise
agreement possible they share the float expressions below:

* contributions: :func:`balance_opt.model.ad_user_costs`, ``ad_user_memory``,
  ``sd_user_costs``, ``sd_user_memory`` (elementwise, so scalar and vector calls agree);
* budgets: :func:`ad_time_budget`, :func:`sd_time_budget`, :func:`memory_split`;
* prefix sums: sequential (``s_d = s_{d-1} + c_d`` from 0.0, as ``numpy.cumsum`` does),
  in the order ``(c_k, k)`` ascending; ``d*`` is the number of leading prefixes with
  ``s_d <= time budget`` and ``mem_d <= memory budget`` (both plain ``<=``, no tolerance);
* when no (z, lambda) pair serves anybody, the outcome is the first pair examined,
  ``(Z[0], Lambda[0])``, with empty sets (the paper initialises the incumbent there).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from balance_opt.evaluator import Schedule
from balance_opt.instance import Instance
from balance_opt.model import memory_split as memory_split  # P2's split (22), the model's


@dataclass(frozen=True)
class BalanceOutcome:
    """Algorithm 3's answer: the pair (z, lambda) and the served users, in selection order."""

    z: float
    lam: float
    ad: tuple[int, ...]  # user positions chosen by Algorithm 1, in sorted (c_k, k) order
    sd: tuple[int, ...]  # user positions chosen by Algorithm 2, in sorted (c_k, k) order
    stats: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def served(self) -> int:
        return len(self.ad) + len(self.sd)

    def schedule(self, inst: Instance) -> Schedule:
        return Schedule.from_sets(inst.num_users, self.z, self.ad, self.sd)


def check_grid(name: str, grid: Sequence[float]) -> None:
    """A grid Algorithm 3 can walk: non-empty and strictly increasing."""
    if not grid or any(b <= a for a, b in pairwise(grid)):
        raise ValueError(f"{name} must be a non-empty, strictly increasing sequence, got {list(grid)}")


def ad_time_budget(inst: Instance, t1: float, tau1: float, L2: float) -> float:
    """Right-hand side of (28): ``t1 - tau1 - L2 beta^L``."""
    return t1 - tau1 - L2 * inst.llm.beta_s


def sd_time_budget(inst: Instance, t2: float, tau2: float, N1: float) -> float:
    """Right-hand side of (32): ``t2 - tau2 - ((N1 + 1) beta^L + N1 LD beta^S)``."""
    ld = inst.server.draft_length
    return t2 - tau2 - ((N1 + 1) * inst.llm.beta_s + N1 * ld * inst.slm.beta_s)
