"""A workload of the online model: users with arrival times, realized and predicted lengths.

The static :class:`~balance_opt.instance.Instance` holds every user of the run in arrival order,
with the realized output lengths and deadlines counted from each user's arrival
(docs/online.md). What the server believes a user's output length is lives beside it, and so
does the seed of every user's draft-acceptance stream.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from balance_opt.instance import Instance

Acceptance = Literal["random", "expected"]


@dataclass(frozen=True, eq=False)
class Workload:
    """Users arriving over time (docs/online.md, "Data")."""

    instance: Instance  # every user in arrival order; output_tokens are the realized lengths
    arrival_s: NDArray[np.float64]  # a_k, non-decreasing, >= 0
    predicted_output_tokens: NDArray[np.int64]  # what the server plans with
    acceptance_seed: int = 0  # seed of the per-user acceptance streams
    acceptance: Acceptance = "random"

    def __post_init__(self) -> None:
        k = self.instance.num_users
        arrival = np.array(self.arrival_s, dtype=np.float64)
        predicted = np.array(self.predicted_output_tokens, dtype=np.int64)
        if arrival.shape != (k,) or predicted.shape != (k,):
            raise ValueError(f"a workload of {k} users needs {k} arrival times and predicted lengths")
        if k and (not np.isfinite(arrival).all() or arrival.min() < 0.0 or np.any(np.diff(arrival) < 0.0)):
            raise ValueError("arrival times must be finite, >= 0 and non-decreasing")
        if k and predicted.min() < 1:
            raise ValueError("predicted output lengths must be at least 1 token")
        if self.acceptance not in ("random", "expected"):
            raise ValueError(f"acceptance must be 'random' or 'expected', got {self.acceptance!r}")
        arrival.setflags(write=False)
        predicted.setflags(write=False)
        object.__setattr__(self, "arrival_s", arrival)
        object.__setattr__(self, "predicted_output_tokens", predicted)

    @property
    def num_users(self) -> int:
        """K."""
        return self.instance.num_users

    def absolute_deadline_s(self) -> NDArray[np.float64]:
        """``a_k + T_k``: when user k's response must be complete."""
        return np.asarray(self.arrival_s + self.instance.deadline_s, dtype=np.float64)
