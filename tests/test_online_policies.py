"""The online policies (balance_opt.online.policies): the greedy baselines against a twin that
evaluates the whole schedule at every step, their orders and lanes, and the policy registry."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import math
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from balance_opt.evaluator import AD, NONE, SD, Schedule, evaluate, on_grid
from balance_opt.generator import generate
from balance_opt.instance import Instance
from balance_opt.model import ad_alone, ad_mode, has_compute, sd_alone, sd_mode
from balance_opt.online import policies
from balance_opt.online.policies import (
    GreedyAdmission,
    SolverPolicy,
    make_policy,
    policy_names,
    register_policy,
    unregister_policy,
)
from balance_opt.online.policy import Lanes, View
from balance_opt.solvers import get_solver, solver_names
from tests.strategies import generated_instances, small_instances

BASELINES = [f"{o}-{i}" for o in ("fcfs", "edf") for i in ("ad", "sd", "cheaper")]
FAST = settings(max_examples=200, deadline=None)


def view_of(inst: Instance, arrival: Any = None, lanes: Lanes = "both") -> View:
    k = inst.num_users
    arrival_s = np.zeros(k) if arrival is None else np.asarray(arrival, dtype=np.float64)
    return View(0.0, inst, np.arange(k), arrival_s, lanes)


def with_grid(inst: Instance, grid: tuple[float, ...]) -> Instance:
    return inst.replace(server=dataclasses.replace(inst.server, z_grid=grid))


# --- the slow twin: the same greedy, judged by evaluate on the whole schedule ------------


def twin_split(grid: tuple[float, ...], modes: set[int]) -> float:
    if modes == {AD}:
        return max(grid)
    if modes == {SD}:
        return min(grid)
    if not modes:
        return grid[0]
    inner = [g for g in grid if 0.0 < g < 1.0] or list(grid)
    best = min(abs(g - 0.5) for g in inner)
    return min(g for g in inner if abs(g - 0.5) == best)


def twin(view: View, order: str, into: str) -> Schedule:
    inst = view.instance
    k = inst.num_users
    wanted = {"ad": {AD}, "sd": {SD}, "cheaper": {AD, SD}}[into]
    free = {"both": {AD, SD}, "ad": {AD}, "sd": {SD}}[view.lanes]
    z = twin_split(inst.server.z_grid, wanted & free)
    usable = [m for m in (AD, SD) if m in wanted & free and has_compute(m, z)]
    arrival, deadline = view.arrival_s.tolist(), inst.deadline_s.tolist()
    if order == "fcfs":
        users = sorted(range(k), key=lambda u: (arrival[u], u))
    else:
        users = sorted(range(k), key=lambda u: (deadline[u], arrival[u], u))
    if len(usable) == 2:
        ad_lat, sd_lat = ad_alone(inst, z)[0], sd_alone(inst, z)[0]
    modes = np.zeros(k, dtype=np.int8)
    for u in users:
        tries = usable if len(usable) < 2 or ad_lat[u] <= sd_lat[u] else usable[::-1]
        for mode in tries:
            modes[u] = mode
            if evaluate(inst, Schedule(z, modes)).feasible:
                break
            modes[u] = NONE
    return Schedule(z, modes)


@st.composite
def views(draw: st.DrawFn, max_users: int = 10) -> View:
    """Small random views: generated or hand-tight instances, a random part of the grid,
    random arrivals with ties, both lanes free or one (whose grid is then one value)."""
    inst = draw(st.one_of(generated_instances(max_users=max_users), small_instances(max_users=max_users)))
    lanes: Lanes = draw(st.sampled_from(["both", "both", "ad", "sd"]))
    if lanes == "both":
        grid = draw(st.lists(st.sampled_from(inst.server.z_grid), min_size=1, unique=True))
        inst = with_grid(inst, tuple(sorted(grid)))
    else:
        inst = with_grid(inst, (1.0,) if lanes == "ad" else (0.0,))
    k = inst.num_users
    arrival = sorted(draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.5]), min_size=k, max_size=k)))
    return view_of(inst, arrival, lanes)


@pytest.mark.parametrize("guard", [policies.GUARD, math.inf])
@FAST
@given(view=views(), order=st.sampled_from(["fcfs", "edf"]), into=st.sampled_from(["ad", "sd", "cheaper"]))
def test_greedy_matches_the_evaluating_twin(guard: float, view: View, order: str, into: str) -> None:
    # guard = inf sends every decision through the exact check, the default through the sums
    with mock.patch.object(policies, "GUARD", guard):
        got = GreedyAdmission(order, into).decide(view)  # type: ignore[arg-type]
    assert got == twin(view, order, into)


@settings(max_examples=40, deadline=None)
@given(inst=generated_instances(max_users=40), data=st.data())
def test_running_sums_agree_with_the_model(inst: Instance, data: st.DataObject) -> None:
    z = data.draw(st.sampled_from([0.1, 0.5, 0.9]))
    order = data.draw(st.permutations(range(inst.num_users)))
    for mode, batch, cost_of in (
        (AD, policies._AdBatch(inst, z), ad_mode),
        (SD, policies._SdBatch(inst, z), sd_mode),
    ):
        members = np.zeros(inst.num_users, dtype=bool)
        for k in order:
            state, latency, kv = batch.trial(k)
            batch.add(k, state, kv)
            members[k] = True
            cost = cost_of(inst, members, z)
            assert latency == pytest.approx(cost.latency_s, rel=1e-12), mode
            assert kv == pytest.approx(cost.kv_bytes, rel=1e-12), mode


@settings(max_examples=30, deadline=None)
@given(inst=generated_instances(max_users=60), name=st.sampled_from(BASELINES))
def test_every_baseline_schedule_is_feasible(inst: Instance, name: str) -> None:
    schedule = make_policy(name).decide(view_of(inst))
    assert schedule.modes.shape == (inst.num_users,)
    assert on_grid(schedule.z, inst.server.z_grid)
    assert evaluate(inst, schedule).feasible
    into = name.split("-")[1]
    assert into == "cheaper" or set(schedule.modes.tolist()) <= {NONE, {"ad": AD, "sd": SD}[into]}


# --- orders ----------------------------------------------------------------------------


def identical_users(k: int, fit: int, deadlines: Any) -> Instance:
    """K equal users whose AD KV caches fit ``fit`` at a time at z = 1; deadlines never bind."""
    inst = generate("fig4", users=k, seed=3)
    same = {f: np.full(k, getattr(inst, f)[0]) for f in ("input_tokens", "output_tokens", "acceptance")}
    for f in ("uplink_spectral_efficiency", "downlink_spectral_efficiency"):
        same[f] = np.full(k, getattr(inst, f)[0])
    inst = inst.replace(deadline_s=np.asarray(deadlines, dtype=np.float64), **same)
    per_user = (inst.input_tokens[0] + inst.output_tokens[0]) * inst.llm_kv_bytes_per_token
    memory = inst.llm_weight_bytes + (fit + 0.5) * per_user
    return inst.replace(server=dataclasses.replace(inst.server, memory_bytes=memory, z_grid=(0.5, 1.0)))


def test_fcfs_admits_the_earliest_arrivals() -> None:
    rng = np.random.default_rng(5)
    arrival = rng.permutation(12).astype(np.float64)  # positions are not arrival order here
    inst = identical_users(12, 4, np.full(12, 3000.0))
    schedule = make_policy("fcfs-ad").decide(view_of(inst, arrival))
    assert schedule.z == 1.0
    assert set(np.flatnonzero(schedule.modes).tolist()) == set(np.argsort(arrival)[:4].tolist())


def test_fcfs_breaks_arrival_ties_by_position() -> None:
    inst = identical_users(8, 3, np.full(8, 3000.0))
    schedule = make_policy("fcfs-ad").decide(view_of(inst, [1, 0, 0, 1, 0, 1, 0, 0]))
    assert np.flatnonzero(schedule.modes).tolist() == [1, 2, 4]


def test_edf_admits_the_earliest_deadlines() -> None:
    deadlines = np.array([3000.0, 2000.0, 2500.0, 1000.0, 1500.0, 2600.0, 1200.0, 2900.0])
    inst = identical_users(8, 3, deadlines)
    arrival = np.arange(8.0)
    assert np.flatnonzero(make_policy("edf-ad").decide(view_of(inst, arrival)).modes).tolist() == [3, 4, 6]
    assert np.flatnonzero(make_policy("fcfs-ad").decide(view_of(inst, arrival)).modes).tolist() == [0, 1, 2]
    # equal deadlines: the earlier arrival first
    tied = identical_users(8, 2, np.full(8, 3000.0))
    late_first = np.arange(8.0)[::-1]
    assert np.flatnonzero(make_policy("edf-ad").decide(view_of(tied, late_first)).modes).tolist() == [6, 7]


def test_a_skipped_user_does_not_stop_the_later_ones() -> None:
    # user 0 cannot meet its deadline even alone; FCFS skips it and admits the others
    inst = identical_users(5, 5, [1e-3, 3000.0, 3000.0, 3000.0, 3000.0])
    assert make_policy("fcfs-ad").decide(view_of(inst)).modes.tolist() == [NONE, AD, AD, AD, AD]


def test_cheaper_prefers_ad_on_a_tie_and_falls_back_to_the_other_mode() -> None:
    inst = generate("fig4", users=6, seed=4).replace(deadline_s=np.full(6, 3000.0))
    tie = (np.zeros(6), np.zeros(6))
    with (
        mock.patch.object(policies, "ad_alone", return_value=tie),
        mock.patch.object(policies, "sd_alone", return_value=tie),
    ):
        assert make_policy("fcfs-cheaper").decide(view_of(inst)).modes.tolist() == [AD] * 6
    # SD first (patched); room for one SD and one AD user's KV: the second user falls back to
    # AD, the third fits in neither
    one = identical_users(3, 1, np.full(3, 3000.0))
    ad_kv = ad_mode(one, np.array([True, False, False]), 0.5).kv_bytes
    sd_kv = sd_mode(one, np.array([True, False, False]), 0.5).kv_bytes
    assert sd_kv > 1.001 * ad_kv
    memory = one.weights_at(0.5) + sd_kv + 1.0001 * ad_kv
    one = one.replace(server=dataclasses.replace(one.server, memory_bytes=memory, z_grid=(0.5,)))
    ad_later = mock.patch.object(policies, "ad_alone", return_value=(np.full(3, 2.0), np.ones(3)))
    sd_sooner = mock.patch.object(policies, "sd_alone", return_value=(np.ones(3), np.ones(3)))
    with ad_later, sd_sooner:
        assert make_policy("fcfs-cheaper").decide(view_of(one)).modes.tolist() == [SD, AD, NONE]


# --- splits and lanes ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("into", "grid", "z"),
    [
        ("ad", (0.0, 0.3, 0.8), 0.8),
        ("sd", (0.2, 0.3, 1.0), 0.2),
        ("cheaper", (0.0, 0.25, 0.75, 1.0), 0.25),
        ("cheaper", (0.0, 0.6, 1.0), 0.6),
        ("cheaper", (0.0, 1.0), 0.0),
        ("ad", (0.0,), 0.0),
    ],
)
def test_split_when_both_lanes_are_idle(into: str, grid: tuple[float, ...], z: float) -> None:
    inst = with_grid(generate("fig4", users=20, seed=2), grid)
    schedule = GreedyAdmission("fcfs", into).decide(view_of(inst))  # type: ignore[arg-type]
    assert schedule.z == z
    assert evaluate(inst, schedule).feasible
    if z == 0.0:  # AD has no compute there
        assert AD not in schedule.modes.tolist()


@pytest.mark.parametrize("name", BASELINES)
@pytest.mark.parametrize(("lanes", "grid", "mode"), [("sd", (0.0,), SD), ("ad", (1.0,), AD)])
def test_one_free_lane_admits_only_its_mode(
    name: str, lanes: Lanes, grid: tuple[float, ...], mode: int
) -> None:
    inst = with_grid(generate("fig4", users=30, seed=7), grid)
    schedule = make_policy(name).decide(view_of(inst, lanes=lanes))
    assert schedule.z == grid[0]
    assert evaluate(inst, schedule).feasible
    assert set(schedule.modes.tolist()) <= {NONE, mode}
    if name.endswith(("cheaper", {AD: "ad", SD: "sd"}[mode])):
        assert schedule.served > 0
    else:
        assert schedule.served == 0


# --- SolverPolicy and the registry -----------------------------------------------------


def test_solver_policy_is_the_solver() -> None:
    inst = generate("fig4", users=25, seed=11)
    direct = get_solver("balance").solve(inst).schedule
    assert SolverPolicy("balance").decide(view_of(inst)) == direct
    assert make_policy("balance").decide(view_of(inst)) == direct
    assert make_policy("balance", seed=3).name == "balance"


def test_solver_policy_checks_its_solver_and_options() -> None:
    with pytest.raises(ValueError, match="unknown solver"):
        SolverPolicy("no-such-solver")
    with pytest.raises(ValueError, match="no option"):
        SolverPolicy("balance", options={"no_such_option": 1})


def test_every_name_is_known() -> None:
    names = policy_names()
    assert names[:6] == BASELINES
    assert set(solver_names()) <= set(names)
    assert len(names) == len(set(names))
    assert make_policy("edf-cheaper").name == "edf-cheaper"


def test_registry_errors() -> None:
    with pytest.raises(ValueError, match=r"unknown policy 'nope'; known: fcfs-ad, .*balance"):
        make_policy("nope")
    with pytest.raises(ValueError, match="already registered"):
        register_policy("fcfs-ad", lambda: GreedyAdmission("edf", "ad"))
    with pytest.raises(ValueError, match="a solver's"):
        register_policy("balance", lambda: GreedyAdmission("edf", "ad"))
    with pytest.raises(ValueError, match="order must be"):
        GreedyAdmission("lifo", "ad")  # type: ignore[arg-type]


class Everyone:
    """A user's policy: everybody into SD at the smallest split."""

    def __init__(self, name: str = "everyone") -> None:
        self.name = name

    def decide(self, view: View) -> Schedule:
        k = view.instance.num_users
        return Schedule(min(view.instance.server.z_grid), np.full(k, SD, dtype=np.int8))


def test_a_registered_policy_is_made_by_name() -> None:
    register_policy("everyone", Everyone)
    try:
        assert "everyone" in policy_names()
        policy = make_policy("everyone", name="all")
        assert isinstance(policy, Everyone)
        assert policy.name == "all"
        register_policy("everyone", Everyone)  # the same factory again is no change
        register_policy("balance", Everyone, replace=True)  # shadows the solver
        assert isinstance(make_policy("balance"), Everyone)
    finally:
        unregister_policy("everyone")
        unregister_policy("balance")
    assert isinstance(make_policy("balance"), SolverPolicy)
    with pytest.raises(ValueError, match="unknown policy 'everyone'"):
        make_policy("everyone")


def test_plug_in_policies_come_from_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    group = policies.ENTRY_POINT_GROUP
    points = [
        importlib.metadata.EntryPoint("plugged", f"{__name__}:Everyone", group),
        importlib.metadata.EntryPoint("fcfs-ad", f"{__name__}:Everyone", group),  # taken: ignored
        importlib.metadata.EntryPoint("broken", f"{__name__}:NoSuchFactory", group),
    ]
    real = importlib.metadata.entry_points

    def entry_points(**kwargs: Any) -> Any:
        return points if kwargs.get("group") == group else real(**kwargs)

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    monkeypatch.setattr(policies, "_discovered", [])
    monkeypatch.setattr(policies, "_PLUGINS", {})
    assert {"plugged", "broken"} <= set(policy_names())
    assert isinstance(make_policy("plugged"), Everyone)
    assert isinstance(make_policy("fcfs-ad"), GreedyAdmission)
    with pytest.raises(ImportError, match=r"'broken' \(entry point of 'balance_opt.policies'\)"):
        make_policy("broken")


def test_a_fixed_split_off_the_free_lanes_grid_starts_nothing() -> None:
    """ecra fixes z = 1/2: with one lane busy (grid (0,)) it has no schedule, and waits."""
    from balance_opt.generator import generate as make

    inst = make("fig4", users=5, seed=2)
    one_lane = inst.replace(server=dataclasses.replace(inst.server, z_grid=(0.0,)))
    view = View(0.0, one_lane, np.arange(5), np.zeros(5), "sd")
    assert SolverPolicy("ecra").decide(view).served == 0
    assert SolverPolicy("balance").decide(view).served > 0
