"""Which users can be served at all at one z: each alone, in each mode (shared by the proving solvers).

Latency and memory only grow when users are added, so a user who fails alone fails in
every schedule; the MILP fixes its binary to 0 and the box search leaves it out.
"""

from __future__ import annotations

import numpy as np

from balance_opt.evaluator import Schedule, evaluate
from balance_opt.instance import Instance
from balance_opt.model import AD, SD, ad_alone, has_compute, sd_alone, tolerated

EDGE = 1e-7  # relative distance to a limit within which the evaluator decides eligibility


def eligible_users(inst: Instance, z: float) -> tuple[list[int], list[int]]:
    """Users that can be served alone in AD, resp. SD, at z (latency and memory).

    Latency and memory only grow when users are added (all maxima and sums are
    monotone), so a user who fails alone fails in every schedule: fixing its binary to
    0 keeps the model exact. Every singleton is computed at once (``ad_alone``,
    ``sd_alone``); one within ``EDGE`` of a limit is judged by the evaluator itself, so
    float order can never decide eligibility.
    """
    out: tuple[list[int], list[int]] = ([], [])
    weights = inst.weights_at(z)
    cap = tolerated(inst.server.memory_bytes)  # (21d)
    for mode, alone, users in ((AD, ad_alone, out[0]), (SD, sd_alone, out[1])):
        if not has_compute(mode, z):  # D7
            continue
        latency, kv = alone(inst, z)
        late = (latency + inst.download_s) / tolerated(inst.deadline_s) - 1.0  # (20), (21c)
        margin = np.maximum(late, (weights + kv) / cap - 1.0)
        for u in np.flatnonzero(margin <= EDGE).tolist():
            if margin[u] < -EDGE or _alone_feasible(inst, z, mode, u):
                users.append(u)
    return out


def _alone_feasible(inst: Instance, z: float, mode: int, user: int) -> bool:
    """The evaluator's verdict on ``user`` served alone in ``mode`` at z."""
    modes = np.zeros(inst.num_users, dtype=np.int8)
    modes[user] = mode
    return evaluate(inst, Schedule(z, modes)).feasible
