"""What an online run measured, as the serving literature reports it (docs/online.md, "Metrics")."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from balance_opt.model import AD, SD
from balance_opt.online.server import DEADLINE, MEMORY, NEVER_ADMITTED, SERVED, OnlineRun


def horizon_s(run: OnlineRun) -> float:
    """Simulated time: from 0 to the last arrival or the last batch's end, whichever is later."""
    ends = [b.end_s for b in run.batches]
    last = float(run.workload.arrival_s[-1]) if run.workload.num_users else 0.0
    return max([last, *ends]) if ends or last > 0.0 else 0.0


def _percentile(values: NDArray[np.float64], q: float) -> float:
    """The ``q``-th percentile (linear between order statistics); NaN for no values."""
    return float(np.percentile(values, q)) if len(values) else math.nan


def _utilisation(run: OnlineRun, horizon: float) -> tuple[float, float]:
    """Mean compute share in use and mean memory in use over ``[0, horizon]`` (shares of 1 and of Q)."""
    if horizon <= 0.0:
        return 0.0, 0.0
    inst = run.workload.instance
    compute = math.fsum(b.share * (b.end_s - b.compute_start_s) for b in run.batches)
    byte_s = math.fsum(b.kv_bytes * (b.end_s - b.start_s) for b in run.batches)
    # q^S is resident while SD runs or while AD runs with a share below 1 (z < 1)
    slm_s = _busy_time([(b.start_s, b.end_s) for b in run.batches if b.mode == SD or b.share < 1.0])
    memory = inst.llm_weight_bytes * horizon + inst.slm_weight_bytes * slm_s + byte_s
    return compute / horizon, memory / (inst.server.memory_bytes * horizon)


def _busy_time(spans: list[tuple[float, float]]) -> float:
    """Length of the union of the intervals."""
    total, end = 0.0, -math.inf
    for s, e in sorted(spans):
        if e <= end:
            continue
        total += e - max(s, end)
        end = e
    return total


def summary(run: OnlineRun) -> dict[str, Any]:
    """One flat row: attainment, goodput, drops by cause, latency percentiles, utilisation."""
    k = run.workload.num_users
    served = run.outcome == SERVED
    latency = (run.completion_s - run.workload.arrival_s)[served]
    horizon = horizon_s(run)
    compute_util, memory_util = _utilisation(run, horizon)
    n_served = int(served.sum())
    return {
        "policy": run.policy,
        "users": k,
        "served": n_served,
        "attainment": n_served / k if k else math.nan,
        "goodput_per_s": n_served / horizon if horizon > 0.0 else math.nan,
        "served_ad": int((served & (run.mode == AD)).sum()),
        "served_sd": int((served & (run.mode == SD)).sum()),
        "dropped_deadline": int((run.outcome == DEADLINE).sum()),
        "dropped_memory": int((run.outcome == MEMORY).sum()),
        "dropped_never_admitted": int((run.outcome == NEVER_ADMITTED).sum()),
        "latency_p50_s": _percentile(latency, 50.0),
        "latency_p90_s": _percentile(latency, 90.0),
        "latency_p99_s": _percentile(latency, 99.0),
        "compute_utilisation": compute_util,
        "memory_utilisation": memory_util,
        "batches": len(run.batches),
        "decisions": len(run.epoch_s),
        "horizon_s": horizon,
    }


def _count_on(
    grid: NDArray[np.float64], starts: NDArray[np.float64], ends: NDArray[np.float64], weight: Any
) -> Any:
    """Per grid time ``t``: the sum of ``weight`` over the spans with ``start <= t < end``."""
    diff = np.zeros(len(grid) + 1)
    np.add.at(diff, np.searchsorted(grid, starts, side="left"), weight)
    np.add.at(diff, np.searchsorted(grid, ends, side="left"), -np.asarray(weight))
    return np.cumsum(diff)[:-1]


def timeline(run: OnlineRun, points: int = 600) -> pd.DataFrame:
    """Queue length, memory in use and each mode's compute share at ``points`` times over the run."""
    horizon = horizon_s(run)
    grid = np.linspace(0.0, horizon, points) if horizon > 0.0 else np.zeros(1)
    arrival, leave = run.workload.arrival_s, run.leave_s
    queue = _count_on(grid, arrival, leave, np.ones(len(arrival)))
    b_start = np.array([b.start_s for b in run.batches], dtype=np.float64)
    b_end = np.array([b.end_s for b in run.batches], dtype=np.float64)
    kv = np.array([b.kv_bytes for b in run.batches], dtype=np.float64)
    share = np.array([b.share for b in run.batches], dtype=np.float64)
    is_ad = np.array([b.mode == AD for b in run.batches], dtype=np.bool_)
    inst = run.workload.instance
    slm = np.where(~is_ad | (share < 1.0), 1.0, 0.0)
    slm_on = np.minimum(_count_on(grid, b_start, b_end, slm), 1.0)
    memory = inst.llm_weight_bytes + inst.slm_weight_bytes * slm_on + _count_on(grid, b_start, b_end, kv)
    return pd.DataFrame(
        {
            "time_s": grid,
            "queue": np.rint(queue).astype(np.int64),
            "memory_bytes": memory,
            "memory_share": memory / inst.server.memory_bytes,
            "ad_share": _count_on(grid, b_start, b_end, np.where(is_ad, share, 0.0)),
            "sd_share": _count_on(grid, b_start, b_end, np.where(is_ad, 0.0, share)),
        }
    )


def user_table(run: OnlineRun) -> pd.DataFrame:
    """One row per user: arrival, mode, start, completion, latency, outcome."""
    from balance_opt.model import MODE_NAMES
    from balance_opt.online.server import OUTCOME_NAMES

    inst = run.workload.instance
    return pd.DataFrame(
        {
            "user": list(inst.user_ids),
            "arrival_s": run.workload.arrival_s,
            "deadline_s": inst.deadline_s,
            "output_tokens": inst.output_tokens,
            "predicted_output_tokens": run.workload.predicted_output_tokens,
            "mode": [MODE_NAMES[m] for m in run.mode.tolist()],
            "start_s": run.start_s,
            "completion_s": run.completion_s,
            "latency_s": run.completion_s - run.workload.arrival_s,
            "outcome": [OUTCOME_NAMES[o] for o in run.outcome.tolist()],
        }
    )
