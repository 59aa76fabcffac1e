"""Every registered solver on tiny instances, by its kind in the registry.

A backend that proves P1 optima must reach enumeration's optimum, one that proves P2
optima must reach P2's, and a heuristic must stay feasible and at or below P1's optimum.
Registering a backend (and its kind) in :mod:`balance_opt.solvers` puts it under test here.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings

from balance_opt.evaluate import evaluate
from balance_opt.instance import Instance
from balance_opt.solvers import get_solver, heuristic_names, solver_names
from tests.strategies import small_instances
from tests.test_exhaustive import brute_p1, brute_p2

TINY = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_every_solver_has_one_kind() -> None:
    kinds = [solver_names(exact_for="P1"), solver_names(exact_for="P2"), heuristic_names()]
    assert sorted(n for names in kinds for n in names) == sorted(solver_names())
    assert all(kinds), kinds


@pytest.mark.parametrize("name", solver_names(exact_for="P1"))
@TINY
@given(small_instances(max_users=4))
def test_p1_backends_reach_the_optimum(name: str, inst: Instance) -> None:
    res = get_solver(name).solve(inst)
    assert res.status == "optimal", res.error
    assert res.served == res.bound == brute_p1(inst)[0]


@pytest.mark.parametrize("name", solver_names(exact_for="P2"))
@TINY
@given(small_instances(max_users=4))
def test_p2_backends_reach_the_p2_optimum(name: str, inst: Instance) -> None:
    # three-point grids keep the enumeration at 9 * 81 evaluations
    server = dataclasses.replace(inst.server, z_grid=(0.0, 0.5, 1.0), lambda_grid=inst.server.z_grid[:3])
    inst = inst.replace(server=server)
    res = get_solver(name).solve(inst)
    assert res.feasible, res.error
    assert res.stats["p2_optimum"] == res.served == brute_p2(inst)[0]


@pytest.mark.parametrize("name", heuristic_names())
@TINY
@given(small_instances(max_users=4))
def test_heuristics_stay_at_or_below_the_optimum(name: str, inst: Instance) -> None:
    res = get_solver(name).solve(inst)
    assert res.served <= brute_p1(inst)[0]
    if res.feasible:  # a baseline whose fixed z is off the grid yields an error result
        assert evaluate(inst, res.schedule).served == res.served
