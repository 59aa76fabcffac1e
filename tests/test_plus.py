"""balance-plus: never above the optimum, never below balance, always feasible, deterministic.

The twins: exhaustive search over all ``|Z| 3^K`` schedules (P1's optimum) and subset
enumeration for the single-mode searches the improvement is made of.
"""

from __future__ import annotations

import csv
import dataclasses
import itertools
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from balance_opt.evaluator import evaluate
from balance_opt.families import TightParams, tight_instance
from balance_opt.instance import Instance
from balance_opt.io import read_instance
from balance_opt.model import ad_mode, sd_mode
from balance_opt.solvers import get_solver, heuristic_names
from balance_opt.solvers.base import UnknownOption
from balance_opt.solvers.heuristic.blocks import Counters
from balance_opt.solvers.heuristic.plus import ModeSearches, SearchBudget, balance_plus, seed_shares
from tests.strategies import small_instances

FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LIBRARY = Path(__file__).resolve().parents[1] / "instances" / "paper"


def mask(k: int, users: Sequence[int]) -> np.ndarray:
    m = np.zeros(k, dtype=bool)
    m[list(users)] = True
    return m


def most_in_one_mode(inst: Instance, z: float, users: Sequence[int], memory: float, sd: bool) -> int:
    """The largest subset of ``users`` that one mode serves at ``z`` within ``memory`` (enumeration).

    Plain comparisons, as the single-mode searches make them (Propositions 4 and 5).
    """
    mode = sd_mode if sd else ad_mode
    for r in range(len(users), 0, -1):
        for subset in itertools.combinations(users, r):
            m = mask(inst.num_users, subset)
            cost = mode(inst, m, z)
            assert cost.latency_s is not None
            if cost.kv_bytes <= memory and bool((cost.latency_s <= inst.budget_s[m]).all()):
                return r
    return 0


def test_balance_plus_is_a_registered_heuristic() -> None:
    assert "balance-plus" in heuristic_names()


@FAST
@given(small_instances(max_users=6))
def test_feasible_between_balance_and_the_optimum(inst: Instance) -> None:
    plus = get_solver("balance-plus").solve(inst)
    assert plus.evaluation.feasible
    assert plus.served >= get_solver("balance").solve(inst).served
    assert plus.served <= get_solver("exhaustive").solve(inst).served
    assert plus.stats["balance_served"] == get_solver("balance").solve(inst).served


@FAST
@given(small_instances(max_users=5), st.data())
def test_single_mode_searches_find_the_most_users(inst: Instance, data: st.DataObject) -> None:
    z = data.draw(st.sampled_from([x for x in inst.server.z_grid if 0.0 < x < 1.0] or [0.5]))
    k = inst.num_users
    allowed = sorted(data.draw(st.sets(st.integers(0, k - 1), min_size=1)))
    ms = ModeSearches(inst, z, Counters(), SearchBudget(1000))
    assume(ms.free > 0.0)
    share = data.draw(st.sampled_from([0.05, 0.3, 1.0]))
    floor = data.draw(st.integers(0, 2))
    memory = share * ms.free
    sd = ms.sd_above(np.array(allowed), memory, floor)
    best_sd = most_in_one_mode(inst, z, allowed, memory, sd=True)
    assert (sd is None) == (best_sd <= floor)
    if sd is not None:
        assert len(sd) == best_sd
        assert set(sd) <= set(allowed)
    ad = ms.ad_above(np.array(allowed), memory, floor)
    # ad_above asks Algorithm 1 for the share memory / F(z) of F(z): the same bytes, as it rounds
    best_ad = most_in_one_mode(inst, z, allowed, min(1.0, memory / ms.free) * ms.free, sd=False)
    assert (ad is None) == (best_ad <= floor)
    if ad is not None:
        assert len(ad) == best_ad
        assert set(ad) <= set(allowed)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_instances(max_users=7))
def test_deterministic(inst: Instance) -> None:
    grids = inst.server.z_grid, inst.server.lambda_grid
    a, b = balance_plus(inst, *grids), balance_plus(inst, *grids)
    assert (a.z, a.lam, a.ad, a.sd) == (b.z, b.lam, b.ad, b.sd)
    assert a.stats == b.stats


@pytest.mark.parametrize("users", [2, 4, 6, 10, 20])
@pytest.mark.parametrize("seed", [0, 1])
def test_theorem1_tight_family(users: int, seed: int) -> None:
    """The family where balance serves exactly half; its optimum serves everybody (docs/worst-case.md)."""
    inst = tight_instance(TightParams(users=users, seed=seed))
    res = get_solver("balance-plus").solve(inst)
    assert res.evaluation.feasible
    assert get_solver("balance").solve(inst).served == users // 2
    assert res.served >= 0.95 * users


def _proved(name: str, most_users: int) -> list[tuple[str, int]]:
    with open(LIBRARY / name / "reference.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return [
        (str(LIBRARY / name / f"{r['instance']}.json"), int(r["best_known"]))
        for r in rows
        if r["status"] == "optimal" and int(r["K"]) <= most_users
    ]


@pytest.mark.parametrize(("path", "optimum"), _proved("adversarial", 20))
def test_adversarial_library_instances(path: str, optimum: int) -> None:
    res = get_solver("balance-plus").solve(read_instance(path))
    assert res.evaluation.feasible
    assert optimum * 0.95 <= res.served <= optimum


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="splits"):
        get_solver("balance-plus", splits=0)
    with pytest.raises(ValueError, match="effort"):
        get_solver("balance-plus", effort=1.5)
    with pytest.raises(UnknownOption):
        get_solver("balance-plus", implementation="fast")
    assert seed_shares([0.0, 0.5, 1.0], 4) == [0.25, 0.5, 0.75, 1.0]


def test_effort_limits_the_searches_and_keeps_balance() -> None:
    """With the least effort (one search) balance-plus still returns at least balance's schedule."""
    inst = tight_instance(TightParams(users=10, seed=0))
    small = get_solver("balance-plus", effort=1).solve(inst)
    assert small.evaluation.feasible
    assert small.served >= get_solver("balance").solve(inst).served
    assert small.stats.get("sd_searches", 0) + small.stats.get("ad_searches", 0) <= 1


def test_grids_without_corners(tiny_instance: Instance) -> None:
    server = dataclasses.replace(tiny_instance.server, z_grid=(0.3,), lambda_grid=(0.5,))
    inst = tiny_instance.replace(server=server)
    res = get_solver("balance-plus").solve(inst)
    assert res.evaluation.feasible
    assert res.served >= get_solver("balance").solve(inst).served


@pytest.mark.slow
@pytest.mark.parametrize("name", ["fig4a", "fig5a"])
def test_library_sets_against_their_optima(name: str) -> None:
    """Every proved instance of two paper sets (K = 20..70): feasible, at least balance, at most optimal."""
    for path, optimum in _proved(name, 70):
        inst = read_instance(path)
        res = get_solver("balance-plus").solve(inst)
        assert evaluate(inst, res.schedule).feasible
        assert get_solver("balance").solve(inst).served <= res.served <= optimum
