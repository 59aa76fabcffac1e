"""Exhaustive search for P1 and P2 against plain, unpruned brute force over 3^K assignments."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from balance_opt.errors import SolveRefused
from balance_opt.generator import generate
from balance_opt.instance import Instance
from balance_opt.solvers import get_solver
from balance_opt.solvers.exhaustive import MAX_USERS
from tests.oracles import brute_p1, brute_p2
from tests.strategies import small_instances

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(small_instances(max_users=5))
def test_exhaustive_equals_unpruned_brute_force(inst: Instance) -> None:
    served, z, modes = brute_p1(inst)
    result = get_solver("exhaustive").solve(inst)
    assert result.status == "optimal"
    assert result.served == result.bound == served
    assert result.feasible
    assert result.lam is None
    # the same tie-break: first z, then the first assignment in (AD, SD, none) order
    assert result.z == z
    assert tuple(result.schedule.modes.tolist()) == modes
    assert result.stats["nodes"] >= 1


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_instances(min_users=6, max_users=6))
def test_exhaustive_equals_brute_force_at_six_users(inst: Instance) -> None:
    grid = (0.0, 0.5, 1.0) if len(inst.server.z_grid) > 5 else inst.server.z_grid
    inst = inst.replace(server=dataclasses.replace(inst.server, z_grid=grid))
    served, z, modes = brute_p1(inst)
    result = get_solver("exhaustive").solve(inst)
    assert (result.served, result.z, tuple(result.schedule.modes.tolist())) == (served, z, modes)


@SETTINGS
@given(small_instances(max_users=4))
def test_exhaustive_p2_equals_unpruned_brute_force(inst: Instance) -> None:
    # three-point grids keep the brute force at 9 * 81 evaluations
    server = dataclasses.replace(inst.server, z_grid=(0.0, 0.5, 1.0), lambda_grid=inst.server.z_grid[:3])
    inst = inst.replace(server=server)
    served, z, lam, modes = brute_p2(inst)
    result = get_solver("exhaustive-p2").solve(inst)
    assert result.status == "feasible"
    assert result.bound is None  # P2's optimum is no bound on P1's
    assert result.stats["p2_optimum"] == result.served == served
    assert result.feasible
    assert (result.z, result.lam, tuple(result.schedule.modes.tolist())) == (z, lam, modes)


@SETTINGS
@given(small_instances(max_users=7))
def test_p2_never_above_p1_and_both_deterministic(inst: Instance) -> None:
    p1 = get_solver("exhaustive").solve(inst)
    p2 = get_solver("exhaustive-p2").solve(inst)
    assert p2.served <= p1.served
    again = get_solver("exhaustive").solve(inst)
    assert again.schedule == p1.schedule


def test_size_limit_and_force() -> None:
    inst = generate("fig4", users=MAX_USERS + 1, seed=3)
    for name in ("exhaustive", "exhaustive-p2"):
        with pytest.raises(SolveRefused, match="users"):
            get_solver(name).solve(inst)
    # loose deadlines: every user is served at once, so the forced search is quick
    loose = inst.replace(deadline_s=np.full(inst.num_users, 60.0))
    result = get_solver("exhaustive", force=True).solve(loose)
    assert result.status == "optimal"
    assert result.served == loose.num_users


def test_time_limit_reports_a_valid_bound() -> None:
    # tight memory and deadlines: the search needs far more than the first clock check
    inst = generate("fig4", users=16, seed=0, kv_budget_tokens=2500, deadline_max_s=8.0)
    result = get_solver("exhaustive").solve(inst, time_limit=1e-6)
    assert result.status == "time_limit"
    assert result.feasible
    assert result.bound is not None
    assert result.served <= result.bound <= inst.num_users
    p2 = get_solver("exhaustive-p2").solve(inst, time_limit=1e-6)
    assert p2.status == "time_limit"
    assert p2.stats["p2_optimum"] is None
    assert p2.stats["p2_bound"] >= p2.served


def test_nobody_servable() -> None:
    inst = generate("fig4", users=4, seed=1)
    inst = inst.replace(deadline_s=np.full(4, 1e-3))
    result = get_solver("exhaustive").solve(inst)
    assert result.status == "optimal"
    assert result.served == result.bound == 0
    assert result.z == inst.server.z_grid[0]
