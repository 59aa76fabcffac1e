"""``exact``'s improving search: balance-plus's search at one z, run by a search still open
under a time limit.

The twins: subset enumeration for the single-mode optima the search starts from, and
enumeration of all ``|Z| 3^K`` schedules for the optimum the whole solve must reach.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import balance_opt.solvers.exact as exact_mod
from balance_opt.clock import Deadline
from balance_opt.evaluator import Schedule, evaluate
from balance_opt.generator import generate
from balance_opt.instance import Instance
from balance_opt.solvers import get_solver
from balance_opt.solvers.common.warm_start import improve_at_z
from tests.oracles import p1_optimum as brute_force
from tests.test_milp import cases
from tests.test_plus import most_in_one_mode

pytest.importorskip("highspy")

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _inner_z(inst: Instance, data: st.DataObject) -> float:
    return data.draw(st.sampled_from([z for z in inst.server.z_grid if 0.0 < z < 1.0] or [0.5]))


@FAST
@given(cases(max_users=6), st.data())
def test_improve_at_z_beats_the_start_or_says_none(inst: Instance, data: st.DataObject) -> None:
    """From the empty schedule it finds at least each mode's optimum alone at z (its SD
    and AD searches with all the memory are exact, Propositions 4 and 5), and whatever it
    returns the evaluator accepts and serves more than the start."""
    z = _inner_z(inst, data)
    everyone = list(range(inst.num_users))
    free = inst.free_memory(z)
    alone = max(most_in_one_mode(inst, z, everyone, free, sd) for sd in (False, True)) if free > 0 else 0
    start = Schedule.empty(inst.num_users, z)
    found = improve_at_z(inst, z, start)
    if found is None:
        assert alone == 0
    else:
        ev = evaluate(inst, found)
        assert ev.feasible
        assert found.z == z
        assert ev.served >= max(alone, 1)
        again = improve_at_z(inst, z, found)
        assert again is None or evaluate(inst, again).served > ev.served


def test_improve_at_z_starts_no_search_past_its_time() -> None:
    inst = generate("fig5", 30, seed=1)
    empty = Schedule.empty(inst.num_users, 0.5)
    assert improve_at_z(inst, 0.5, empty, until=Deadline.after(-1.0)) is None
    assert improve_at_z(inst, 0.5, empty) is not None


@FAST
@given(cases(max_users=5))
def test_exact_with_an_improving_search_at_once_equals_brute_force(inst: Instance) -> None:
    """With the improving search due at once (``IMPROVE_AT`` 0), every open run calls it
    before its first box; the proof still ends at enumeration's optimum."""
    old = exact_mod.IMPROVE_AT
    exact_mod.IMPROVE_AT = 0.0
    try:
        res = get_solver("exact").solve(inst, time_limit=600.0)
    finally:
        exact_mod.IMPROVE_AT = old
    assert res.status == "optimal"
    assert res.served == res.bound == brute_force(inst)


def test_improving_search_raises_the_incumbent_and_keeps_the_proof(monkeypatch: pytest.MonkeyPatch) -> None:
    """fig5 K = 20 seed 6: the first pass ends at 14 served, the optimum is 16. Called at
    once, the improving search finds 15 before any box; the proof is the one without it."""
    inst = generate("fig5", 20, seed=6)
    plain = get_solver("exact", improve=0).solve(inst, time_limit=600.0)
    monkeypatch.setattr(exact_mod, "IMPROVE_AT", 0.0)
    fast = get_solver("exact").solve(inst, time_limit=600.0)
    assert fast.status == plain.status == "optimal"
    assert fast.served == plain.served == 16
    assert plain.stats["improve_s"] == 0.0 < fast.stats["improve_s"]
    # the first recorded incumbent: before any box
    assert fast.stats["trace"][0][1] == 15 > plain.stats["trace"][0][1] == 14


def test_no_improving_search_without_a_time_limit() -> None:
    """A proof without a limit stays the same run on every machine: the search is never
    called (its start depends on the clock)."""
    res = get_solver("exact").solve(generate("fig5", 30, seed=5))
    assert res.stats["improve_s"] == 0.0
