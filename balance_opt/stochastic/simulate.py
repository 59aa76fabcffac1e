"""Monte-Carlo of a schedule under random draft acceptance (and optional length noise).

The random model (docs/stochastic.md): in every SD iteration each active user's drafts
are accepted one by one with probability ``A_k`` until the first rejection; a user is
active until its emitted tokens reach its output length. The realized SD batch then
follows docs/model.md section 5 with the realized counts: the active set of iteration ``n``
is the users with ``n <= N_k``, the batch runs ``max N_k`` iterations, and the prefix
before iteration ``n >= 2`` is ``L3`` plus the most tokens any active user has emitted
so far, minus one. AD is deterministic. Every trial is simulated at once: the loop
runs over iterations, the arrays over trials and users.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from balance_opt import crmath
from balance_opt.evaluator import Schedule, evaluate
from balance_opt.instance import FloatArray, Instance
from balance_opt.model import (
    AD,
    MODE_NAMES,
    SD,
    ad_compute_flops,
    ad_mode,
    ad_user_memory,
    sd_iteration_seconds_per_user,
    sd_prefill_seconds_per_user,
    sd_user_memory,
    within,
)


@dataclass(frozen=True)
class Trials:
    """Per-trial outcomes (rows: trials; columns: the served users in instance order)."""

    users: NDArray[np.int64]  # positions of the served users
    output_tokens: NDArray[np.int64]  # (trials, served): realized output lengths
    completion_s: FloatArray  # (trials, served): mode latency + download
    met: NDArray[np.bool_]  # (trials, served): completion within the deadline
    memory_bytes: FloatArray  # (trials,): weights + realized KV caches
    t_sd: FloatArray  # (trials,): realized SD latency excluding download (NaN: no SD user)
    sd_iterations: NDArray[np.int64]  # (trials, SD users): realized N_k
    sd_within_plan: NDArray[np.bool_]  # (trials,): every SD user within its planned N_k

    @property
    def goodput(self) -> NDArray[np.int64]:
        """Users served within their deadline, per trial."""
        return np.asarray(self.met.sum(axis=1), dtype=np.int64)


def lognormal_lengths(
    lengths: NDArray[np.int64], cv: float, trials: int, rng: np.random.Generator
) -> NDArray[np.int64]:
    """Realized output lengths: ``LO`` times a mean-one log-normal factor of CV ``cv``, >= 1 token."""
    if cv <= 0.0:
        return np.broadcast_to(lengths, (trials, len(lengths)))
    sigma = math.sqrt(crmath.log1p(cv * cv))
    # exp with a fixed rounding (crmath): the lengths are rounded to tokens after it
    factor = crmath.exp_array(sigma * rng.standard_normal((trials, len(lengths))) - sigma * sigma / 2.0)
    return np.maximum(1, np.rint(lengths * factor)).astype(np.int64)


def sample_sd_batch(
    inst: Instance, users: NDArray[np.int64], lengths: NDArray[np.int64], rng: np.random.Generator
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """Run the SD batch's iterations in every trial at once.

    Returns ``(active, extra, last_extra, n_real)``: per trial and iteration the number of
    active users and the most tokens an active user has emitted before it (so that
    ``P_n = L3 + extra - 1`` for ``n >= 2``), and per trial and user the emitted-token
    count before its last iteration and its realized iteration count.
    """
    trials, k = lengths.shape
    ld = inst.server.draft_length
    # a uniform u accepts draft j when u < A^j: P(G >= j) = A^j, the first rejection stops
    powers = np.array([crmath.ipowers(a, ld + 1)[1:] for a in inst.acceptance[users].tolist()])[None, :, :]
    # float32 uniforms and int32 counts halve the memory traffic of the loop; the
    # float32 grid (2^-24) biases an acceptance probability by less than 1e-7
    powers = powers.astype(np.float32)
    lengths = lengths.astype(np.int32)
    emitted = np.zeros((trials, k), dtype=np.int32)
    last_extra = np.zeros((trials, k), dtype=np.int32)
    n_real = np.zeros((trials, k), dtype=np.int32)
    live = np.ones((trials, k), dtype=np.bool_)
    # users done in every trial leave the working arrays (their results move to `out`):
    # in a batch of mixed lengths most iterations then touch only the long users
    cols = np.arange(k)
    out_extra, out_n = np.zeros((trials, k), dtype=np.int64), np.zeros((trials, k), dtype=np.int64)
    counts, extras = [], []
    while live.any():
        counts.append(np.count_nonzero(live, axis=1))
        extra = (emitted * live).max(axis=1)  # inactive users count 0: no one has emitted less
        extras.append(extra)
        np.copyto(last_extra, extra[:, None], where=live)
        n_real += live
        u = rng.random((trials, len(cols)), dtype=np.float32)
        accepted = (u[:, :, None] < powers).sum(axis=2, dtype=np.int32) if ld > 1 else (u < powers[:, :, 0])
        emitted += accepted + 1  # a finished user's count no longer matters: live masks it
        live &= emitted < lengths
        keep = live.any(axis=0)
        if not keep.all():
            out_extra[:, cols[~keep]], out_n[:, cols[~keep]] = last_extra[:, ~keep], n_real[:, ~keep]
            cols = cols[keep]
            emitted, last_extra, n_real = emitted[:, keep], last_extra[:, keep], n_real[:, keep]
            live, lengths, powers = live[:, keep], lengths[:, keep], powers[:, keep]
    return (
        np.stack(counts, axis=1).astype(np.int64),
        np.stack(extras, axis=1).astype(np.int64),
        out_extra,
        out_n,
    )


def sd_outcome(
    inst: Instance, users: NDArray[np.int64], lengths: NDArray[np.int64], z: float, rng: np.random.Generator
) -> tuple[FloatArray, FloatArray, NDArray[np.int64]]:
    """Realized SD latency (19) and KV memory (16) per trial, and the realized ``N_k``."""
    active, extra, last_extra, n_real = sample_sd_batch(inst, users, lengths, rng)
    L3 = float(inst.input_tokens[users].max())  # (9)
    n_max = (active > 0).sum(axis=1)
    ld = inst.server.draft_length
    # sd_prefix(L3, 0, n) is L3 itself for n <= 2, so the model's per-iteration seconds
    # and memory evaluated "at L3 = P, L4 = 0" are those of a realized prefix P. Prefixes
    # are whole tokens, so one table over P = L3 .. L3 + max extra serves every trial.
    w = 1.0 - z
    if w > 0.0:
        span = np.arange(int(extra.max()) + 1, dtype=np.float64)
        table = sd_iteration_seconds_per_user(
            inst, L3 + span[:, None], 0.0, 2, w
        )  # [P - L3, 0]: iteration 1; [., 1]: later
        per_iter = table[np.maximum(extra - 1, 0), 1]  # P_n = L3 + extra - 1 for n >= 2
        per_iter[:, 0] = table[0, 0]  # P_1 = L3
        compute = len(users) * sd_prefill_seconds_per_user(inst, L3, w) + (active * per_iter).sum(axis=1)
    else:  # z = 1 gives SD no compute (D7)
        compute = np.full(len(n_max), math.inf)
    fixed = (n_max + 1) * inst.llm.beta_s + n_max * ld * inst.slm.beta_s
    t_sd = float(inst.upload_s[users].max()) + compute + fixed  # (2), (19)
    last_prefix = np.where(n_real >= 2, L3 + last_extra - 1, L3)
    kv = sd_user_memory(inst, last_prefix, 0.0, np.minimum(n_real, 2)).sum(axis=1)
    return np.asarray(t_sd, dtype=np.float64), np.asarray(kv, dtype=np.float64), n_real


def ad_outcome(
    inst: Instance, users: NDArray[np.int64], lengths: NDArray[np.int64], z: float
) -> tuple[FloatArray, FloatArray]:
    """AD latency (17) and KV memory (15) per trial; with fixed lengths, exactly ``ad_mode``."""
    trials = lengths.shape[0]
    if np.array_equal(lengths[0], inst.output_tokens[users]) and (lengths == lengths[0]).all():
        served = np.zeros(inst.num_users, dtype=np.bool_)
        served[users] = True
        cost = ad_mode(inst, served, z)
        latency = math.inf if cost.latency_s is None else cost.latency_s
        return np.full(trials, latency), np.full(trials, cost.kv_bytes)
    L1 = float(inst.input_tokens[users].max())  # (5)
    work = ad_compute_flops(inst, L1, lengths).sum(axis=1)
    compute = inst.llm.alpha_s_per_flop * work / z if z > 0.0 else np.full(trials, math.inf)
    t_ad = float(inst.upload_s[users].max()) + compute + lengths.max(axis=1) * inst.llm.beta_s
    return np.asarray(t_ad, dtype=np.float64), ad_user_memory(inst, L1, lengths).sum(axis=1)


def simulate(inst: Instance, schedule: Schedule, trials: int, seed: int, output_cv: float = 0.0) -> Trials:
    """``trials`` independent runs of ``schedule`` under the random model, seeded."""
    if trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")
    rng = np.random.default_rng(seed)
    users = np.flatnonzero(schedule.modes).astype(np.int64)
    lengths = lognormal_lengths(inst.output_tokens[users], output_cv, trials, rng)
    modes = schedule.modes[users]
    is_ad, is_sd = modes == AD, modes == SD
    completion = np.zeros((trials, len(users)))
    memory = np.full(trials, inst.weights_at(schedule.z))
    t_sd = np.full(trials, np.nan)
    n_real = np.zeros((trials, 0), dtype=np.int64)
    if is_ad.any():
        t_ad, kv_ad = ad_outcome(inst, users[is_ad], lengths[:, is_ad], schedule.z)
        completion[:, is_ad] = t_ad[:, None]
        memory = memory + kv_ad
    if is_sd.any():
        t_sd, kv_sd, n_real = sd_outcome(
            inst, users[is_sd], np.ascontiguousarray(lengths[:, is_sd]), schedule.z, rng
        )
        completion[:, is_sd] = t_sd[:, None]
        memory = memory + kv_sd
    # the answer's download time scales with its realized length
    completion += inst.download_s[users] * (lengths / inst.output_tokens[users])
    met = within(completion, inst.deadline_s[users])  # (20), (21c)
    planned = (n_real <= inst.sd_iterations[users[is_sd]]).all(axis=1)
    return Trials(users, np.asarray(lengths), completion, met, memory, t_sd, n_real, planned)


def summary(
    inst: Instance, schedule: Schedule, result: Trials, seed: int, output_cv: float = 0.0
) -> dict[str, Any]:
    """The ``balance-opt simulate --json`` document."""
    ev = evaluate(inst, schedule)
    good = result.goodput
    trials = len(good)
    served_sd = schedule.modes[result.users] == SD
    p_meet = result.met.mean(axis=0)

    def stat(x: FloatArray, q: float) -> float | None:
        return float(np.quantile(x, q)) if x.size and np.isfinite(x).all() else None

    t_sd = result.t_sd if served_sd.any() else np.zeros(0)
    return {
        "trials": trials,
        "seed": seed,
        "output_cv": output_cv,
        "z": schedule.z,
        "served": ev.served,
        "feasible": ev.feasible,
        "num_ad": ev.num_ad,
        "num_sd": ev.num_sd,
        "goodput_mean": float(good.mean()),
        # the order statistic at 5%: at least 95% of trials serve this many or more
        "goodput_p05": int(np.quantile(good, 0.05, method="lower")),
        "goodput_min": int(good.min()),
        "p_all_meet": float((good == len(result.users)).mean()),
        "deadline_miss_rate": float(1.0 - p_meet.mean()) if len(p_meet) else 0.0,
        "p_memory_overflow": float((~within(result.memory_bytes, inst.server.memory_bytes)).mean()),
        "p_sd_within_plan": float(result.sd_within_plan.mean()) if served_sd.any() else None,
        "t_sd_nominal": ev.t_sd if ev.t_sd is not None and math.isfinite(ev.t_sd) else None,
        "t_sd_mean": float(t_sd.mean()) if t_sd.size and np.isfinite(t_sd).all() else None,
        "t_sd_p95": stat(t_sd, 0.95),
        "memory_bytes_nominal": ev.memory_bytes,
        "memory_bytes_p95": float(np.quantile(result.memory_bytes, 0.95)),
        "users": [
            {"id": inst.user_ids[k], "mode": MODE_NAMES[schedule.modes[k]], "p_meet": float(p)}
            for k, p in zip(result.users.tolist(), p_meet.tolist(), strict=True)
        ],
    }
