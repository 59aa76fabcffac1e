"""What a policy sees at a decision epoch, and the protocol it follows (docs/online.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np
from numpy.typing import NDArray

from balance_opt.evaluator import Schedule
from balance_opt.instance import Instance

Lanes = Literal["both", "ad", "sd"]  # the lanes free at the epoch


@dataclass(frozen=True, eq=False)
class View:
    """One decision epoch (docs/online.md, "Decision epochs and policies").

    ``instance`` is the planning instance: the waiting users in arrival order, with their
    remaining deadlines, predicted lengths, the memory the running batches leave and the
    split the free lanes allow (its ``server.z_grid``). ``users`` are their positions in
    the workload, ``arrival_s`` their arrival times.
    """

    time_s: float
    instance: Instance
    users: NDArray[np.int64]
    arrival_s: NDArray[np.float64]
    lanes: Lanes


class Policy(Protocol):
    """Decides, at each epoch, a static schedule of the planning instance.

    The schedule must be feasible for ``view.instance`` under the static evaluator; its AD
    users start as one batch and its SD users as another.
    """

    name: str

    def decide(self, view: View) -> Schedule:
        """The schedule to start now (``Schedule.empty`` to start nothing)."""
        ...
