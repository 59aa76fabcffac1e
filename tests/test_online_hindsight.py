"""The hindsight bound: its packing solved by brute force, and never beaten by any policy.

docs/online.md, "The hindsight bound". The packing twin enumerates every subset; the
simulation checks run every registered policy and an exhaustive search over the
simulator's decisions (every feasible schedule at every epoch).
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from balance_opt.evaluator import Schedule, evaluate
from balance_opt.generator import generate
from balance_opt.instance import Instance
from balance_opt.online import HindsightBound, Workload, hindsight_bound, simulate
from balance_opt.online.acceptance import emitted_tokens, user_rng
from balance_opt.online.execution import ad_run, sd_expected_run, sd_random_run
from balance_opt.online.hindsight import alone_runs
from balance_opt.online.policies import make_policy, policy_names
from balance_opt.online.policy import View
from balance_opt.online.server import Epochs
from balance_opt.online.workload import Acceptance
from balance_opt.solvers import solver_class, solver_names
from balance_opt.status import Status
from tests.strategies import small_instances

SETTINGS: dict[str, Any] = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}


def slowed(inst: Instance, factor: float) -> Instance:
    """``inst`` on a GPU ``factor`` times slower in compute: users compete for it."""
    llm = dataclasses.replace(inst.llm, alpha_s_per_flop=inst.llm.alpha_s_per_flop * factor)
    slm = dataclasses.replace(inst.slm, alpha_s_per_flop=inst.slm.alpha_s_per_flop * factor)
    return inst.replace(llm=llm, slm=slm)


def loaded(inst: Instance, load: float) -> Instance:
    """``inst`` on a GPU whose speed makes its users' total alone compute ``load`` times a
    median window: they compete for it."""
    runs = alone_runs(Workload(inst, np.zeros(inst.num_users), inst.output_tokens, acceptance="expected"))
    window = max(float(np.median(inst.deadline_s - inst.upload_s - inst.download_s)), 1e-3)
    return slowed(inst, load * window / float(runs.compute_s.min(axis=1).sum()))


@st.composite
def tiny_workloads(draw: st.DrawFn, max_users: int = 8, z_grid: tuple[float, ...] | None = None) -> Workload:
    """Small users of a generator preset (or the suite's small instances), random arrivals,
    a GPU slow enough that they compete for it (mostly), random or expected acceptance."""
    k = draw(st.integers(1, max_users) | st.just(max_users))
    if draw(st.booleans()):
        preset = draw(st.sampled_from(["fig4", "fig5", "tight-memory"]))
        extra: dict[str, Any] = {"z_grid": z_grid} if z_grid else {}
        budget = draw(st.sampled_from([None, 120.0, 400.0]))  # KV tokens: memory competes too
        if budget is not None:
            extra["kv_budget_tokens"] = budget
        seed = draw(st.integers(0, 10_000))
        inst = generate(preset, users=k, seed=seed, input_max=60, output_max=30, **extra)
    else:
        inst = draw(small_instances(min_users=k, max_users=k))
        if z_grid:
            inst = inst.replace(server=dataclasses.replace(inst.server, z_grid=z_grid))
    load = draw(st.sampled_from([None, 1.0, 2.0, 4.0, 8.0]))
    if load is not None:
        inst = loaded(inst, load)
    span = draw(st.sampled_from([0.0, 0.3, 1.0, 3.0]))
    arrival = np.sort(np.array(draw(st.lists(st.floats(0.0, 1.0), min_size=k, max_size=k)))) * span
    noise = draw(st.lists(st.sampled_from([-3, 0, 0, 2, 5]), min_size=k, max_size=k))
    predicted = (
        np.maximum(inst.output_tokens + np.array(noise), 1) if draw(st.booleans()) else inst.output_tokens
    )
    acceptance: Acceptance = draw(st.sampled_from(["random", "expected"]))
    return Workload(inst, arrival, predicted, draw(st.integers(0, 99)), acceptance)


# --- the per-user data --------------------------------------------------------------


@settings(max_examples=40, **SETTINGS)
@given(tiny_workloads())
def test_alone_runs_are_the_executions_of_singletons(w: Workload) -> None:
    runs = alone_runs(w)
    inst = w.instance
    for k in range(w.num_users):
        one = np.array([k])
        ad = ad_run(inst, one, 1.0)
        if w.acceptance == "random":
            a, lo = float(inst.acceptance[k]), int(inst.output_tokens[k])
            emitted = emitted_tokens(a, inst.server.draft_length, lo, user_rng(w.acceptance_seed, k))
            sd = sd_random_run(inst, one, [emitted], 1.0)
        else:
            sd = sd_expected_run(inst, one, 1.0)
        for col, run in ((0, ad), (1, sd)):
            got = (runs.compute_s[k, col], runs.duration_s[k, col], runs.kv_bytes[k, col])
            np.testing.assert_allclose(got, (run.compute_s, run.duration_s, run.kv_bytes), rtol=1e-12)


def test_windows_and_costs_of_a_user() -> None:
    inst = generate("fig4", users=3, seed=2)
    w = Workload(inst, np.array([0.0, 1.0, 2.5]), inst.output_tokens, acceptance="expected")
    hb = hindsight_bound(w)
    runs = alone_runs(w)
    slack = 1e-8 * (w.arrival_s + inst.deadline_s)  # the loosening is relative to a + T
    assert np.all(np.abs(hb.release_s - (w.arrival_s + inst.upload_s)) <= slack)
    assert np.all(np.abs(hb.due_s - (w.arrival_s + inst.deadline_s - inst.download_s)) <= slack)
    assert (hb.release_s <= w.arrival_s + inst.upload_s).all()  # loosened outwards
    assert (hb.due_s >= w.arrival_s + inst.deadline_s - inst.download_s).all()
    assert hb.feasible.all()
    np.testing.assert_array_equal(hb.compute_s, runs.compute_s.min(axis=1))
    np.testing.assert_array_equal(hb.length_s, runs.duration_s.min(axis=1))


def test_a_user_who_cannot_make_it_alone_is_not_counted() -> None:
    inst = generate("fig4", users=3, seed=2)
    short = inst.replace(deadline_s=np.array([inst.deadline_s[0], 1e-3, inst.deadline_s[2]]))
    hb = hindsight_bound(Workload(short, np.zeros(3), short.output_tokens))
    assert hb.feasible.tolist() == [True, False, True]
    assert hb.alone_feasible == 2
    assert hb.bound <= 2
    assert np.isinf(hb.compute_s[1])


def test_no_memory_beside_the_weights_serves_nobody() -> None:
    inst = generate("fig4", users=3, seed=1)
    full = inst.replace(server=dataclasses.replace(inst.server, memory_bytes=inst.llm_weight_bytes))
    hb = hindsight_bound(Workload(full, np.zeros(3), full.output_tokens))
    assert hb.bound == hb.alone_feasible == 0
    assert hb.proved


def test_a_grid_without_compute_for_a_mode_rules_it_out() -> None:
    inst = generate("fig4", users=4, seed=5)
    ad_only = inst.replace(server=dataclasses.replace(inst.server, z_grid=(1.0,)))
    w = Workload(ad_only, np.zeros(4), ad_only.output_tokens)
    runs = alone_runs(w)
    np.testing.assert_array_equal(hindsight_bound(w).length_s, runs.duration_s[:, 0])


# --- the packing: MILP against brute force, blocks above it --------------------------


def brute_force(hb: HindsightBound) -> int:
    """The most feasible users such that, for every pair of them, the chosen users whose
    windows lie in ``[r_i, d_j]`` fit its compute and its memory-time."""
    idx = np.flatnonzero(hb.feasible).tolist()
    r, d, c, m = hb.release_s, hb.due_s, hb.compute_s, hb.memory_s
    best = 0
    for size in range(len(idx), 0, -1):
        for chosen in itertools.combinations(idx, size):
            ok = True
            for i, j in itertools.product(chosen, chosen):
                inside = [k for k in chosen if r[k] >= r[i] and d[k] <= d[j]]
                span = d[j] - r[i]
                if inside and (sum(c[k] for k in inside) > span or sum(m[k] for k in inside) > span):
                    ok = False
                    break
            if ok:
                return size
    return best


@settings(max_examples=150, **SETTINGS)
@given(tiny_workloads())
def test_the_milp_is_the_brute_force_packing_and_blocks_and_alone_lie_above(w: Workload) -> None:
    hb = hindsight_bound(w)
    best = brute_force(hb)
    event(f"the packing cuts: {best < hb.alone_feasible}")
    event(f"the blocks are exact: {hb.blocks_bound == best}")
    assert hb.proved
    if hb.alone_feasible:
        assert hb.method == "milp"
        assert hb.milp_bound == best
    assert hb.bound == best
    assert hb.alone_feasible >= hb.blocks_bound >= best
    blocks = hindsight_bound(w, exact_up_to=0)
    assert blocks.method in ("blocks", "alone")
    assert blocks.proved == (hb.alone_feasible == 0)
    assert blocks.bound == min(hb.blocks_bound, hb.alone_feasible) >= best


def contended(users: int, rate: float, seed: int) -> Workload:
    """More work than the GPU does: the bound must cut."""
    inst = slowed(generate("fig4", users=users, seed=seed), 40.0)
    arrival = np.cumsum(np.random.default_rng(seed).exponential(1.0 / rate, users))
    return Workload(inst, arrival, inst.output_tokens, acceptance_seed=seed)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_bound_cuts_an_overloaded_workload(seed: int) -> None:
    w = contended(40, 20.0, seed)
    hb = hindsight_bound(w)
    assert hb.method == "milp"
    assert hb.proved
    assert hb.bound < hb.alone_feasible
    assert hb.bound <= hb.blocks_bound < hb.alone_feasible
    blocks = hindsight_bound(w, exact_up_to=0)
    assert blocks.method == "blocks"
    assert blocks.bound == hb.blocks_bound


def test_a_time_limited_milp_still_bounds_the_optimum() -> None:
    w = contended(60, 40.0, 4)
    full = hindsight_bound(w)
    rushed = hindsight_bound(w, time_limit_s=1e-3)
    assert full.proved
    assert rushed.bound >= full.bound
    assert rushed.proved or rushed.bound <= rushed.alone_feasible


def test_same_workload_same_bound() -> None:
    w = contended(300, 20.0, 5)
    a, b = hindsight_bound(w), hindsight_bound(w)
    assert (a.bound, a.method, a.blocks_bound) == (b.bound, b.method, b.blocks_bound)
    assert a.method == "blocks"
    np.testing.assert_array_equal(a.compute_s, b.compute_s)


# --- no policy beats it ----------------------------------------------------------------


def sim_workload(seed: int) -> Workload:
    """Six small users who compete for a slow GPU, arriving within half a second."""
    inst = loaded(
        generate("fig4", users=6, seed=seed, input_max=60, output_max=30), (1.0, 2.0, 4.0, 8.0)[seed % 4]
    )
    rng = np.random.default_rng(seed)
    arrival = np.sort(rng.uniform(0.0, 0.5, 6))
    predicted = inst.output_tokens if seed % 2 else np.maximum(inst.output_tokens + rng.integers(-3, 6, 6), 1)
    return Workload(inst, arrival, predicted, seed, "random" if seed % 3 else "expected")


def policy(name: str) -> Any:
    return make_policy(name, time_limit_s=2.0) if name in solver_names() else make_policy(name)


@pytest.mark.parametrize("name", policy_names())
def test_no_registered_policy_beats_the_bound(name: str) -> None:
    for seed in range(4):
        w = sim_workload(seed)
        hb = hindsight_bound(w)
        epochs: Epochs
        for epochs in ("event", "window"):
            run = simulate(w, policy(name), epochs=epochs, window_s=0.2)  # a PolicyError fails
            assert run.served <= hb.bound, (seed, epochs, run.served, hb)


class Scripted:
    """At its i-th call, the ``script[i]``-th feasible schedule of the planning instance (0
    after the script): every schedule is reachable by some script. ``floor``: stop a run
    (:class:`Pruned`) once the users already lost leave no more than ``floor`` to serve."""

    name = "scripted"

    def __init__(self, w: Workload, script: list[int], floor: int, memo: dict[Any, list[Schedule]]) -> None:
        self.w, self.script, self.floor, self.memo = w, script, floor, memo
        self.counts: list[int] = []  # candidates at each call
        self.started: set[int] = set()

    def decide(self, view: View) -> Schedule:
        arrived = int(np.searchsorted(self.w.arrival_s, view.time_s, side="right"))
        lost = arrived - len(view.users) - len(self.started)  # dropped before any batch
        if self.w.num_users - lost <= self.floor:
            raise Pruned
        inst = view.instance
        key = (view.time_s, tuple(view.users.tolist()), view.lanes, inst.server, inst.llm, inst.slm)
        if key not in self.memo:
            self.memo[key] = list(feasible_schedules(inst))
        cands = self.memo[key]
        i = len(self.counts)
        self.counts.append(len(cands))
        chosen = cands[self.script[i] if i < len(self.script) else 0]
        self.started.update(view.users[chosen.modes != 0].tolist())
        return chosen


class Pruned(Exception):
    """No completion of this run can serve more than the floor."""


def feasible_schedules(inst: Instance) -> Iterator[Schedule]:
    """The empty schedule, then every feasible one: each z of the grid, each mode vector."""
    n = inst.num_users
    yield Schedule.empty(n, inst.server.z_grid[0])
    for z in inst.server.z_grid:
        for modes in itertools.product((0, 1, 2), repeat=n):
            s = Schedule(z, np.array(modes, dtype=np.int8))
            if any(modes) and evaluate(inst, s).feasible:
                yield s


def search(w: Workload, floor: int, max_runs: int, **kw: Any) -> tuple[int, bool]:
    """The most served over every script (an odometer, depth first, each run from scratch),
    ignoring runs that cannot exceed ``floor``; and whether the search finished."""
    script: list[int] = []
    memo: dict[Any, list[Schedule]] = {}
    best = 0
    for _ in range(max_runs):
        pol = Scripted(w, script, floor, memo)
        with contextlib.suppress(Pruned):
            best = max(best, simulate(w, pol, **kw).served)
        taken = script + [0] * (len(pol.counts) - len(script))
        i = len(taken) - 1
        while i >= 0 and taken[i] + 1 >= pol.counts[i]:
            i -= 1
        if i < 0:
            return best, True
        script = [*taken[:i], taken[i] + 1]
    return best, False


GRID3 = (0.0, 0.5, 1.0)


@settings(max_examples=25, **SETTINGS)
@given(tiny_workloads(max_users=5, z_grid=GRID3))
def test_no_offline_search_beats_the_bound(w: Workload) -> None:
    hb = hindsight_bound(w)
    best, done = search(w, hb.bound, 2000)
    event(f"search finished: {done}")
    event(f"the bound is below K: {hb.bound < w.num_users}")
    assert best <= hb.bound


@pytest.mark.slow
@settings(max_examples=400, **SETTINGS)
@given(tiny_workloads(max_users=6, z_grid=GRID3), st.sampled_from(["event", "window"]))
def test_no_offline_search_beats_the_bound_up_to_six_users(w: Workload, epochs: Epochs) -> None:
    hb = hindsight_bound(w)
    best, done = search(w, hb.bound, 5000, epochs=epochs, window_s=0.25)
    event(f"search finished: {done}")
    assert best <= hb.bound


@pytest.mark.parametrize("seed", [1, 3, 11])
def test_the_search_meets_a_bound_that_cuts(seed: int) -> None:
    """Where the packing cuts below the alone-feasible count, some run still serves the
    bound: the search is strong enough to refute a bound one lower."""
    inst = loaded(generate("fig4", users=5, seed=seed, input_max=60, output_max=30, z_grid=GRID3), 4.0)
    arrival = np.sort(np.random.default_rng(seed).uniform(0.0, 0.3, 5))
    w = Workload(inst, arrival, inst.output_tokens, seed, "random")
    hb = hindsight_bound(w)
    best, done = search(w, hb.bound - 1, 3000)
    assert hb.bound < hb.alone_feasible
    assert done
    assert best == hb.bound


@pytest.mark.parametrize("seed", range(6))
def test_the_bound_of_one_user_is_met_by_the_search(seed: int) -> None:
    """Alone, exact predictions: the user is served iff the bound counts it (a tight bound)."""
    inst = generate("fig4", users=1, seed=seed, z_grid=GRID3)
    inst = inst.replace(deadline_s=inst.deadline_s * (0.1 if seed % 2 else 1.0))
    w = Workload(inst, np.array([0.7]), inst.output_tokens, seed, "random" if seed % 3 else "expected")
    hb = hindsight_bound(w)
    best, done = search(w, -1, 100)
    assert done
    assert best == hb.bound


# --- the static special case -----------------------------------------------------------


def at_zero(inst: Instance) -> Workload:
    return Workload(inst, np.zeros(inst.num_users), inst.output_tokens, acceptance="expected")


@settings(max_examples=40, **SETTINGS)
@given(small_instances(max_users=7))
def test_the_bound_is_at_least_the_static_optimum(inst: Instance) -> None:
    optimum = solver_class("exhaustive")().solve(inst).schedule
    assert evaluate(inst, optimum).feasible or optimum.served == 0
    assert hindsight_bound(at_zero(inst)).bound >= optimum.served


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_bound_is_at_least_the_exact_static_optimum_at_30_users(seed: int) -> None:
    inst = generate("fig4", users=30, seed=seed)
    result = solver_class("exact")().solve(inst, time_limit=20.0)
    assert result.status == Status.OPTIMAL
    assert hindsight_bound(at_zero(inst)).bound >= result.evaluation.served
