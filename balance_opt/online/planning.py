"""The planning instance a policy sees at an epoch, and who can no longer be served.

The server plans with what it knows: predicted lengths, deadlines less the time already
waited, the memory the running batches leave, and the split the free lanes allow
(docs/online.md, "Decision epochs and policies").
"""

from __future__ import annotations

import dataclasses

import numpy as np
from numpy.typing import NDArray

from balance_opt.instance import Instance
from balance_opt.model import ad_alone, sd_alone, within
from balance_opt.online.policy import Lanes
from balance_opt.online.workload import Workload


class Planner:
    """Planning instances of one workload."""

    def __init__(self, workload: Workload) -> None:
        self.w = workload
        # what the server believes: the predicted lengths (and so predicted downloads, N_k)
        self.predicted = workload.instance.replace(output_tokens=workload.predicted_output_tokens)
        self.ready_s = workload.arrival_s + self.predicted.upload_s  # uploads complete
        self.best_s = self._alone_best()

    def _alone_best(self) -> NDArray[np.float64]:
        """Per user: compute and forward-pass seconds alone at full compute, in the faster mode
        whose alone KV fits beside the weights (inf: neither fits)."""
        p = self.predicted
        q = p.server.memory_bytes
        up = p.upload_s
        ad_lat, ad_kv = ad_alone(p, 1.0)
        sd_lat, sd_kv = sd_alone(p, 0.0)
        ad = np.where(ad_kv <= q - p.weights_at(1.0), ad_lat - up, np.inf)
        sd = np.where(sd_kv <= q - p.weights_at(0.0), sd_lat - up, np.inf)
        return np.asarray(np.minimum(ad, sd), dtype=np.float64)

    def hopeless(self, users: NDArray[np.int64], time_s: float) -> NDArray[np.bool_]:
        """Users who cannot be met even alone, at full compute, starting now (predicted lengths)."""
        done = np.maximum(time_s, self.ready_s[users]) + self.best_s[users] + self.predicted.download_s[users]
        latency = done - self.w.arrival_s[users]
        return np.asarray(~within(latency, self.w.instance.deadline_s[users]), dtype=np.bool_)

    def instance(
        self, users: NDArray[np.int64], time_s: float, lanes: Lanes, z: float | None, reserved_bytes: float
    ) -> Instance | None:
        """The planning instance of the waiting ``users`` (None: the free lane has no compute or memory).

        ``z`` is the running split when a lane is busy; ``reserved_bytes`` the running
        batches' reservations."""
        p = self.predicted
        server, llm, slm = p.server, p.llm, p.slm
        memory = server.memory_bytes - reserved_bytes
        grid: tuple[float, ...]
        if lanes == "sd":  # AD runs at z: SD gets 1 - z, as all the compute of a slower GPU
            assert z is not None
            if z >= 1.0:
                return None
            grid, w = (0.0,), 1.0 - z
            llm = dataclasses.replace(llm, alpha_s_per_flop=llm.alpha_s_per_flop / w)
            slm = dataclasses.replace(slm, alpha_s_per_flop=slm.alpha_s_per_flop / w)
        elif lanes == "ad":  # SD runs at z: AD gets z; the SLM stays resident for SD
            assert z is not None
            if z <= 0.0:
                return None
            grid = (1.0,)
            llm = dataclasses.replace(llm, alpha_s_per_flop=llm.alpha_s_per_flop / z)
            memory -= p.slm_weight_bytes
        else:
            grid = server.z_grid
        if memory <= p.llm_weight_bytes + (p.slm_weight_bytes if min(grid) < 1.0 else 0.0):
            return None
        remaining = self.w.arrival_s[users] + self.w.instance.deadline_s[users] - time_s
        sub = p.subset(users)
        return sub.replace(
            name=f"{p.name}@t{time_s!r}",
            server=dataclasses.replace(server, memory_bytes=memory, z_grid=grid),
            llm=llm,
            slm=slm,
            deadline_s=remaining,
        )
