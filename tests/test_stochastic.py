"""Random draft acceptance: the exact iteration-count distribution and the Monte-Carlo."""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from balance_opt.evaluator import AD, REL_TOL, SD, Schedule, evaluate
from balance_opt.generator import generate
from balance_opt.instance import Instance
from balance_opt.stochastic import iterations_distribution, iterations_quantile, simulate
from balance_opt.stochastic.distribution import tokens_per_iteration
from tests.strategies import small_instances


def brute_force(lo: int, a: float, ld: int) -> dict[int, float]:
    """P(N = n) by recursion over the tokens still missing (independent of the DP)."""

    @cache
    def dist(missing: int) -> tuple[tuple[int, float], ...]:
        out: dict[int, float] = {}
        for g in range(ld + 1):
            pg = a**g * (1 - a) if g < ld else a**ld
            left = missing - (g + 1)
            for n, pn in ((0, 1.0),) if left <= 0 else dist(left):
                out[n + 1] = out.get(n + 1, 0.0) + pg * pn
        return tuple(sorted(out.items()))

    return dict(dist(lo))


def test_distribution_by_hand() -> None:
    # LD = 2, A = 0.7: an iteration emits 1, 2 or 3 tokens w.p. 0.3, 0.21, 0.49
    assert tokens_per_iteration(0.7, 2) == pytest.approx([0.0, 0.3, 0.21, 0.49])
    assert iterations_distribution(3, 0.7, 2) == pytest.approx([0.0, 0.49, 0.42, 0.09], abs=1e-15)
    assert iterations_distribution(1, 0.3, 1).tolist() == [0.0, 1.0]


@given(st.integers(1, 40), st.floats(0.01, 0.99), st.integers(1, 4))
def test_distribution_matches_brute_force(lo: int, a: float, ld: int) -> None:
    p = iterations_distribution(lo, a, ld)
    assert p[0] == 0.0
    assert abs(p.sum() - 1.0) <= 1e-12
    want = brute_force(lo, a, ld)
    got = {n: float(x) for n, x in enumerate(p) if x > 0}
    assert set(got) <= set(range(math.ceil(lo / (ld + 1)), lo + 1))
    for n in range(len(p)):
        assert p[n] == pytest.approx(want.get(n, 0.0), rel=1e-9, abs=1e-15)


@given(st.integers(1, 1000), st.floats(0.01, 0.99), st.integers(1, 6))
@settings(max_examples=30)
def test_distribution_sums_to_one(lo: int, a: float, ld: int) -> None:
    p = iterations_distribution(lo, a, ld)
    assert p[0] == 0.0
    assert abs(p.sum() - 1.0) <= 1e-12
    assert (p >= 0).all()


def test_quantile() -> None:
    p = np.array([0.0, 0.49, 0.42, 0.09])
    assert [iterations_quantile(p, q) for q in (0.3, 0.49, 0.5, 0.91, 0.92, 1.0)] == [1, 1, 2, 2, 3, 3]
    with pytest.raises(ValueError, match="quantile must be in"):
        iterations_quantile(p, 0.0)


def sd_instance(lo: list[int], acc: list[float], ld: int = 1) -> Instance:
    """A fig4 instance with the given SD users' lengths and rates."""
    base = generate("fig4", users=len(lo), seed=3)
    server = base.server.__class__(**{**base.server.__dict__, "draft_length": ld})
    return base.replace(server=server, output_tokens=np.array(lo), acceptance=np.array(acc))


def ks_distance(sample: np.ndarray, p: np.ndarray) -> float:
    """Largest gap between the empirical CDF of ``sample`` and the CDF of ``p``."""
    hist = np.bincount(sample, minlength=len(p))
    n = max(len(hist), len(p))
    emp = np.cumsum(np.pad(hist, (0, n - len(hist)))) / len(sample)
    return float(np.abs(emp - np.cumsum(np.pad(p, (0, n - len(p))))).max())


def test_distribution_against_simulation() -> None:
    """Realized iteration counts follow the DP; a slightly wrong distribution is rejected."""
    lo, acc, ld = [1, 7, 40, 95, 60], [0.6, 0.75, 0.65, 0.8, 0.7], 2
    inst = sd_instance(lo, acc, ld)
    trials = 20_000
    res = simulate(inst, Schedule(0.0, np.full(len(lo), SD, dtype=np.int8)), trials, seed=11)
    # Kolmogorov bound: the gap exceeds 1.95 / sqrt(n) with probability 1e-3 under the truth
    tol = 1.95 / math.sqrt(trials)
    for k in range(len(lo)):
        sample = res.sd_iterations[:, k]
        assert ks_distance(sample, iterations_distribution(lo[k], acc[k], ld)) < tol
        if lo[k] >= 7:  # where N can vary, nearby wrong models are far outside the tolerance
            assert ks_distance(sample, iterations_distribution(lo[k], acc[k] - 0.03, ld)) > tol
            assert ks_distance(sample, iterations_distribution(lo[k], acc[k], ld + 1)) > tol
            assert (
                ks_distance(sample, np.concatenate(([0.0], iterations_distribution(lo[k], acc[k], ld)))) > tol
            )


@given(small_instances(max_users=6), st.data())
@settings(max_examples=40, deadline=None)
def test_all_ad_is_the_evaluator(inst: Instance, data: st.DataObject) -> None:
    """AD is deterministic: every trial is the evaluator's answer, bit for bit."""
    z = data.draw(st.sampled_from([z for z in inst.server.z_grid if z > 0] or [1.0]))
    modes = np.array(
        data.draw(st.lists(st.sampled_from([0, AD]), min_size=inst.num_users, max_size=inst.num_users))
    )
    schedule = Schedule(z, modes.astype(np.int8))
    ev = evaluate(inst, schedule)
    res = simulate(inst, schedule, 50, seed=data.draw(st.integers(0, 99)))
    served = res.users
    assert (res.completion_s == ev.completion_s[served]).all()
    assert (res.memory_bytes == ev.memory_bytes).all()
    on_time = ev.completion_s[served] <= inst.deadline_s[served] * (1.0 + REL_TOL)
    assert (res.met == on_time).all()
    if ev.feasible:
        assert res.met.all()


@given(small_instances(max_users=6), st.data())
@settings(max_examples=40, deadline=None)
def test_fixed_sd_counts_are_the_evaluator(inst: Instance, data: st.DataObject) -> None:
    """With one output token every SD user needs exactly one iteration: no randomness left."""
    inst = inst.replace(output_tokens=np.ones(inst.num_users, dtype=np.int64))
    z = data.draw(st.sampled_from([z for z in inst.server.z_grid if z < 1] or [0.0]))
    modes = data.draw(st.lists(st.integers(0, 2), min_size=inst.num_users, max_size=inst.num_users))
    schedule = Schedule(z, np.array(modes, dtype=np.int8))
    ev = evaluate(inst, schedule)
    res = simulate(inst, schedule, 30, seed=data.draw(st.integers(0, 99)))
    assert (res.sd_iterations == 1).all()
    assert res.completion_s == pytest.approx(
        np.broadcast_to(ev.completion_s[res.users], res.completion_s.shape), rel=1e-12
    )
    assert res.memory_bytes == pytest.approx(np.full(30, ev.memory_bytes), rel=1e-12)
    if ev.t_sd is not None:
        assert res.t_sd == pytest.approx(np.full(30, ev.t_sd), rel=1e-12)
    completion = ev.completion_s[res.users]
    deadline = inst.deadline_s[res.users] * (1.0 + REL_TOL)
    clear = np.abs(completion - deadline) > 1e-9 * deadline  # verdicts away from float noise
    assert (res.met[:, clear] == (completion <= deadline)[clear]).all()
    if ev.feasible:
        assert res.met.all()


def test_realized_prefix_is_the_models_when_every_draft_is_accepted() -> None:
    """At acceptance ~1 every user emits LD + 1 tokens per iteration, the model's P_n."""
    lo = [12, 30, 21]
    inst = sd_instance(lo, [1.0 - 1e-12] * 3, ld=2)
    schedule = Schedule(0.3, np.full(3, SD, dtype=np.int8))
    # the expected-value plan at A -> 1 is N_k = ceil(LO / 3), exactly what happens
    ev = evaluate(inst, schedule)
    res = simulate(inst, schedule, 5, seed=0)
    assert (res.sd_iterations == inst.sd_iterations).all()
    assert res.t_sd == pytest.approx(np.full(5, ev.t_sd), rel=1e-12)
    assert res.memory_bytes == pytest.approx(np.full(5, ev.memory_bytes), rel=1e-12)


def test_output_noise() -> None:
    inst = generate("fig4", users=12, seed=5)
    schedule = Schedule(1.0, np.full(12, AD, dtype=np.int8))
    res = simulate(inst, schedule, 400, seed=2, output_cv=0.5)
    assert (res.output_tokens >= 1).all()
    assert not (res.output_tokens == inst.output_tokens).all()
    ratio = res.output_tokens.sum() / (400 * inst.output_tokens.sum())
    assert 0.95 < ratio < 1.05  # mean-one factor (rounding aside)
    for t in (0, 17, 399):  # each trial is the evaluator on that trial's lengths
        ev = evaluate(inst.replace(output_tokens=res.output_tokens[t]), schedule)
        assert res.completion_s[t] == pytest.approx(ev.completion_s, rel=1e-12)
        assert res.memory_bytes[t] == pytest.approx(ev.memory_bytes, rel=1e-12)


def test_same_seed_same_trials() -> None:
    inst = generate("fig4", users=20, seed=8)
    schedule = Schedule(0.5, np.array([SD, AD] * 10, dtype=np.int8))
    a, b, c = (simulate(inst, schedule, 200, seed=s, output_cv=0.2) for s in (4, 4, 5))
    assert (a.completion_s == b.completion_s).all()
    assert (a.memory_bytes == b.memory_bytes).all()
    assert not (a.completion_s == c.completion_s).all()
