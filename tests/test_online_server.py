"""The online server: the static special case, realized SD batches, drops, determinism."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from balance_opt.evaluator import Schedule, evaluate
from balance_opt.generator import generate
from balance_opt.instance import Instance
from balance_opt.model import AD, SD, sd_iteration_flops, sd_prefill_seconds, sd_user_memory
from balance_opt.online import Workload, simulate, summary, timeline
from balance_opt.online.acceptance import emitted_tokens, user_rng
from balance_opt.online.execution import sd_random_run
from balance_opt.online.policy import View
from balance_opt.online.server import DEADLINE, MEMORY, NEVER_ADMITTED, SERVED
from balance_opt.solvers import solver_class


class Solve:
    """A static solver as a policy (the registry's SolverPolicy has its own tests)."""

    def __init__(self, solver: str) -> None:
        self.name = solver
        self.solver = solver_class(solver)()

    def decide(self, view: View) -> Schedule:
        return self.solver.solve(view.instance).schedule


class Fixed:
    """Starts one given schedule at the first epoch, nothing after."""

    name = "fixed"

    def __init__(self, schedule: Schedule) -> None:
        self.schedule, self.calls = schedule, 0

    def decide(self, view: View) -> Schedule:
        self.calls += 1
        if self.calls == 1:
            return self.schedule
        return Schedule.empty(view.instance.num_users, view.instance.server.z_grid[0])


def at_zero(inst: Instance, acceptance: str = "expected") -> Workload:
    return Workload(inst, np.zeros(inst.num_users), inst.output_tokens, acceptance=acceptance)  # type: ignore[arg-type]


@pytest.mark.parametrize("solver", ["balance", "ad-only", "sd-only", "ecra", "exhaustive"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_one_epoch_at_zero_is_the_static_evaluator(solver: str, seed: int) -> None:
    """docs/online.md, "The static special case": same served users, same completion times."""
    inst = generate("fig4", users=7, seed=seed)
    schedule = solver_class(solver)().solve(inst).schedule
    ev = evaluate(inst, schedule)
    run = simulate(at_zero(inst), Fixed(schedule), epochs="window", window_s=1e6)
    assert ev.feasible
    assert (run.outcome == SERVED).tolist() == (schedule.modes != 0).tolist()
    served = schedule.modes != 0
    np.testing.assert_allclose(run.completion_s[served], ev.completion_s[served], rtol=1e-12)
    assert run.served == ev.served


def test_the_policy_sees_the_static_instance_at_zero() -> None:
    inst = generate("fig4", users=6, seed=4)
    seen: list[Instance] = []

    class Spy(Solve):
        def decide(self, view: View) -> Schedule:
            seen.append(view.instance)
            return super().decide(view)

    simulate(at_zero(inst), Spy("balance"), epochs="window", window_s=1e6)
    assert seen[0].replace(name=inst.name) == inst


def slow_sd_run(
    inst: Instance, users: list[int], emitted: list[np.ndarray], share: float
) -> tuple[float, float]:
    """Iteration by iteration, straight from docs/stochastic.md: (compute seconds, KV bytes)."""
    L3 = float(inst.input_tokens[users].max())
    n_k = [len(e) for e in emitted]
    compute = len(users) * float(sd_prefill_seconds(inst, L3, share))
    kv = 0.0
    for n in range(1, max(n_k) + 1):
        active = [i for i in range(len(users)) if n_k[i] >= n]
        before = max((int(emitted[i][n - 2]) if n >= 2 else 0) for i in active)
        prefix = L3 if n == 1 else L3 + before - 1
        slm, llm = sd_iteration_flops(inst, prefix, 0.0, 2)
        col = 0 if n == 1 else 1
        per = (inst.slm.alpha_s_per_flop * slm[..., col] + inst.llm.alpha_s_per_flop * llm[..., col]) / share
        compute += len(active) * float(per)
        for i in active:
            if n == n_k[i]:
                kv += float(sd_user_memory(inst, prefix, 0.0, min(n, 2)))
    return compute, kv


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 10_000), st.integers(1, 6), st.sampled_from([0.3, 0.7, 1.0]))
def test_sd_random_run_matches_its_slow_twin(seed: int, users: int, share: float) -> None:
    inst = generate("fig4", users=users, seed=seed, draft_length=1 + seed % 5)
    idx = list(range(users))
    em = [
        emitted_tokens(
            float(inst.acceptance[k]), inst.server.draft_length, int(inst.output_tokens[k]), user_rng(seed, k)
        )
        for k in idx
    ]
    run = sd_random_run(inst, np.array(idx), em, share)
    compute, kv = slow_sd_run(inst, idx, em, share)
    assert math.isclose(run.compute_s, compute, rel_tol=1e-12)
    assert math.isclose(run.kv_bytes, kv, rel_tol=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 10_000), st.integers(1, 300), st.floats(0.05, 0.95))
def test_emissions_end_at_the_length_and_follow_the_acceptance(seed: int, length: int, a: float) -> None:
    e = emitted_tokens(a, 4, length, user_rng(seed, 0))
    steps = np.diff(np.concatenate(([0], e)))
    assert e[-1] >= length
    assert len(e) == 1 or e[-2] < length
    assert steps.min() >= 1
    assert steps.max() <= 5
    again = emitted_tokens(a, 4, length, user_rng(seed, 0))
    assert np.array_equal(e, again)


def test_acceptance_streams_belong_to_users() -> None:
    """A user's realized iterations do not depend on the batch it joins."""
    inst = generate("fig4", users=5, seed=9)
    e3 = emitted_tokens(float(inst.acceptance[3]), 4, int(inst.output_tokens[3]), user_rng(7, 3))
    again = emitted_tokens(float(inst.acceptance[3]), 4, int(inst.output_tokens[3]), user_rng(7, 3))
    other = emitted_tokens(float(inst.acceptance[3]), 4, int(inst.output_tokens[3]), user_rng(8, 3))
    assert np.array_equal(e3, again)
    assert not np.array_equal(e3, other) or len(e3) == 1


def spread(users: int, seed: int, gap: float, acceptance: str = "random", noise: float = 0.0) -> Workload:
    inst = generate("fig4", users=users, seed=seed)
    rng = np.random.default_rng(seed)
    arrival = np.cumsum(rng.exponential(gap, users))
    predicted = np.maximum(1, np.rint(inst.output_tokens * (1.0 + noise * rng.standard_normal(users))))
    return Workload(inst, arrival, predicted.astype(np.int64), acceptance_seed=seed, acceptance=acceptance)  # type: ignore[arg-type]


@pytest.mark.parametrize("epochs", ["event", "window"])
def test_every_user_ends_in_one_state_and_served_means_on_time(epochs: str) -> None:
    w = spread(60, 5, 0.3, noise=0.4)
    run = simulate(w, Solve("balance"), epochs=epochs, window_s=0.5)  # type: ignore[arg-type]
    assert set(np.unique(run.outcome)) <= {SERVED, DEADLINE, MEMORY, NEVER_ADMITTED}
    served = run.outcome == SERVED
    late = run.completion_s - w.arrival_s
    assert (late[served] <= w.instance.deadline_s[served] * (1 + 1e-9)).all()
    assert (late[run.outcome == DEADLINE] > w.instance.deadline_s[run.outcome == DEADLINE]).all()
    assert np.isnan(run.completion_s[run.outcome == NEVER_ADMITTED]).all()
    row = summary(run)
    assert (
        row["served"] + row["dropped_deadline"] + row["dropped_memory"] + row["dropped_never_admitted"] == 60
    )
    assert 0.0 <= row["compute_utilisation"] <= 1.0 + 1e-9
    assert 0.0 < row["memory_utilisation"] <= 1.0 + 1e-9


def test_batches_respect_lanes_and_memory() -> None:
    w = spread(80, 11, 0.1)
    run = simulate(w, Solve("balance"))
    inst = w.instance
    for mode in (AD, SD):
        spans = sorted((b.start_s, b.end_s) for b in run.batches if b.mode == mode)
        assert all(e <= s2 for (_, e), (s2, _) in itertools.pairwise(spans))  # one per lane
    for b in run.batches:
        beside = [o for o in run.batches if o is not b and o.start_s < b.end_s and b.start_s < o.end_s]
        for o in beside:  # the other lane, at the complementary share, both in memory
            assert o.mode != b.mode
            assert math.isclose(o.share + b.share, 1.0)
            assert inst.weights_at(0.0) + b.kv_bytes + o.kv_bytes <= inst.server.memory_bytes * (1 + 1e-9)


def test_same_seed_same_run_and_the_timeline_is_consistent() -> None:
    w = spread(50, 3, 0.2, noise=0.3)
    a, b = simulate(w, Solve("balance")), simulate(w, Solve("balance"))
    assert np.array_equal(a.outcome, b.outcome)
    assert np.array_equal(a.completion_s, b.completion_s, equal_nan=True)
    tl = timeline(a, 50)
    assert (tl["queue"] >= 0).all()
    assert (tl["ad_share"] + tl["sd_share"] <= 1.0 + 1e-9).all()
    assert (tl["memory_share"] <= 1.0 + 1e-9).all()


def test_predicted_too_short_gives_deadline_or_memory_drops() -> None:
    """Plans made with lengths far too short are met late or evicted, never silently served."""
    inst = generate("fig4", users=40, seed=2)
    w = Workload(inst, np.linspace(0, 4, 40), np.maximum(1, inst.output_tokens // 8), acceptance="expected")
    run = simulate(w, Solve("balance"))
    assert (run.outcome == DEADLINE).sum() + (run.outcome == MEMORY).sum() > 0


def test_an_infeasible_schedule_is_refused_naming_the_policy() -> None:
    from balance_opt.online import PolicyError

    class Everyone:
        name = "everyone"

        def decide(self, view: View) -> Schedule:
            return Schedule(0.5, np.full(view.instance.num_users, AD, dtype=np.int8))

    inst = generate("fig4", users=30, seed=1)
    assert not evaluate(
        inst, Everyone().decide(View(0.0, inst, np.arange(30), np.zeros(30), "both"))
    ).feasible
    with pytest.raises(PolicyError, match=r"'everyone'.*not feasible"):
        simulate(at_zero(inst), Everyone())
