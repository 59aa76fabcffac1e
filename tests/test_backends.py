"""Every registered solver on tiny instances, by its kind in the registry.

A backend that proves P1 optima must reach enumeration's optimum, one that proves P2
optima must reach P2's, and a heuristic must stay feasible and at or below P1's optimum.
Registering a backend (and its kind) in :mod:`balance_opt.solvers` puts it under test here.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings

from balance_opt.evaluator import evaluate
from balance_opt.instance import Instance
from balance_opt.solvers import get_solver, heuristic_names, solver_class, solver_names
from tests.oracles import brute_p1, brute_p2
from tests.strategies import small_instances

# the baselines that fix the split instead of choosing it on the grid
FIXED_Z = {"ad-only": 1.0, "sd-only": 0.0, "ecra": 0.5, "ecrma": 0.5}
TINY = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_every_solver_has_one_kind() -> None:
    kinds = [solver_names(exact_for="P1"), solver_names(exact_for="P2"), heuristic_names()]
    assert sorted(n for names in kinds for n in names) == sorted(solver_names())
    assert all(kinds), kinds


def installed(names: list[str]) -> list[object]:
    """The solvers as parameters; one whose optional modules are missing is skipped, saying why."""
    out: list[object] = []
    for name in names:
        why = solver_class(name).availability()
        out.append(name if why else pytest.param(name, marks=pytest.mark.skip(reason=why.reason)))
    return out


@pytest.mark.parametrize("name", installed(solver_names(exact_for="P1")))
@TINY
@given(small_instances(max_users=4))
def test_p1_backends_reach_the_optimum(name: str, inst: Instance) -> None:
    res = get_solver(name).solve(inst)
    assert res.status == "optimal", res.error
    assert res.served == res.bound == brute_p1(inst)[0]


@pytest.mark.parametrize("name", installed(solver_names(exact_for="P2")))
@TINY
@given(small_instances(max_users=4))
def test_p2_backends_reach_the_p2_optimum(name: str, inst: Instance) -> None:
    # three-point grids keep the enumeration at 9 * 81 evaluations
    server = dataclasses.replace(inst.server, z_grid=(0.0, 0.5, 1.0), lambda_grid=inst.server.z_grid[:3])
    inst = inst.replace(server=server)
    res = get_solver(name).solve(inst)
    assert res.feasible, res.error
    assert res.stats["p2_optimum"] == res.served == brute_p2(inst)[0]


@pytest.mark.parametrize("name", installed(heuristic_names()))
@TINY
@given(small_instances(max_users=4))
def test_heuristics_stay_feasible_and_at_or_below_the_optimum(name: str, inst: Instance) -> None:
    res = get_solver(name).solve(inst)
    assert res.served <= brute_p1(inst)[0]
    fixed = FIXED_Z.get(name)
    if fixed is not None and fixed not in inst.server.z_grid:
        # a baseline whose fixed split is off the grid has no schedule: an error naming (21g)
        assert res.status == "error", res
        assert "z_grid" in (res.error or ""), res
        return
    assert res.feasible, res.error
    assert evaluate(inst, res.schedule).feasible
    assert evaluate(inst, res.schedule).served == res.served
