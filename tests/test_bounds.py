"""The combinatorial bounds of the proving solvers (balance_opt.solvers.common.bounds).

A rank is claimed to be the exact optimum of one mode over a user set (Propositions 4
and 5 applied to a subset), and the deadline-pair bound an upper bound of every P1
schedule at its z. Both are checked against plain enumeration with the evaluator.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from balance_opt.evaluator import AD, SD, Schedule, evaluate
from balance_opt.generator import generate
from balance_opt.instance import Instance
from balance_opt.solvers.common.bounds import (
    AD_MODE,
    SD_MODE,
    Ranks,
    _best_disjoint_split,
    deadline_pair_bound,
    least_memory,
    memory_split_bound,
    shared_memory_bound,
)
from balance_opt.solvers.common.eligibility import eligible_users
from tests.strategies import small_instances

FAST = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def subsets(users: list[int]) -> list[tuple[int, ...]]:
    return [c for n in range(len(users) + 1) for c in itertools.combinations(users, n)]


def one_mode_optimum(inst: Instance, z: float, mode: int, users: list[int], limit: float | None) -> int:
    """Most users of ``users`` that ``mode`` serves alone at z, by enumeration.

    With ``limit``, the users' own deadlines are replaced: a set needs its latency
    (excluding download) <= ``limit`` instead.
    """
    if limit is not None:
        inst = inst.replace(deadline_s=inst.download_s + 10.0 * limit)
    best = 0
    for chosen in subsets(users):
        if len(chosen) <= best:
            continue
        modes = np.zeros(inst.num_users, dtype=np.int8)
        modes[list(chosen)] = mode
        ev = evaluate(inst, Schedule(z, modes))
        latency = ev.t_ad if mode == AD else ev.t_sd
        if ev.feasible and (limit is None or (latency is not None and latency <= limit)):
            best = len(chosen)
    return best


@FAST
@given(small_instances(max_users=6), st.data())
def test_rank_is_the_single_mode_optimum(inst: Instance, data: st.DataObject) -> None:
    z = data.draw(st.sampled_from(inst.server.z_grid))
    users = data.draw(st.lists(st.integers(0, inst.num_users - 1), unique=True))
    ranks = Ranks(inst, z)
    for mode, code in ((AD_MODE, AD), (SD_MODE, SD)):
        assert ranks.rank(mode, users) == one_mode_optimum(inst, z, code, users, None), mode


@FAST
@given(small_instances(max_users=6), st.data())
def test_rank_with_a_latency_limit_brackets_the_optimum(inst: Instance, data: st.DataObject) -> None:
    z = data.draw(st.sampled_from(inst.server.z_grid))
    users = data.draw(st.lists(st.integers(0, inst.num_users - 1), unique=True))
    limit = data.draw(st.floats(0.01, 3.0))
    ranks = Ranks(inst, z)
    for mode, code in ((AD_MODE, AD), (SD_MODE, SD)):
        got = ranks.rank(mode, users, limit)
        # an upper bound of the sets within the limit, and not above those within a
        # slightly larger one (the relaxed copy adds 2e-9 relative slack)
        assert got >= one_mode_optimum(inst, z, code, users, limit), mode
        assert got <= one_mode_optimum(inst, z, code, users, limit * (1 + 1e-6) + 1e-9), mode


def p1_optimum_at(inst: Instance, z: float) -> int:
    best = 0
    for modes in itertools.product((0, AD, SD), repeat=inst.num_users):
        served = sum(1 for m in modes if m)
        if served > best and evaluate(inst, Schedule(z, np.array(modes, dtype=np.int8))).feasible:
            best = served
    return best


@FAST
@given(small_instances(max_users=6), st.data())
def test_pair_bound_holds_every_schedule(inst: Instance, data: st.DataObject) -> None:
    z = data.draw(st.sampled_from(inst.server.z_grid))
    ad, sd = eligible_users(inst, z)
    pb = deadline_pair_bound(inst, z, ad, sd)
    assert pb.complete
    assert pb.bound >= p1_optimum_at(inst, z)
    assert pb.bound <= len(set(ad) | set(sd))
    # with one mode only, the bound is that mode's exact optimum
    if not ad or not sd:
        assert pb.bound == p1_optimum_at(inst, z)


def least_memory_by_enumeration(inst: Instance, z: float, mode: int, users: list[int], n: int) -> float:
    """The least KV memory of a feasible n-user set of one mode (inf if there is none)."""
    best = float("inf")
    for chosen in itertools.combinations(users, n):
        modes = np.zeros(inst.num_users, dtype=np.int8)
        modes[list(chosen)] = mode
        ev = evaluate(inst, Schedule(z, modes))
        if ev.feasible:
            best = min(best, ev.memory_bytes - ev.weights_llm_bytes - ev.weights_slm_bytes)
    return best


@FAST
@given(small_instances(max_users=6), st.data())
def test_least_memory_is_a_lower_estimate(inst: Instance, data: st.DataObject) -> None:
    z = data.draw(st.sampled_from(inst.server.z_grid))
    ad, sd = eligible_users(inst, z)
    ranks = Ranks(inst, z)
    for mode, code, users in ((AD_MODE, AD, ad), (SD_MODE, SD, sd)):
        cap = ranks.rank(mode, users)
        est = least_memory(ranks, mode, users, cap, inst.free_memory(z) * (1 + 1e-8) + 1e-8 * 24e9)
        assert est is not None
        assert len(est) == cap + 1
        for n in range(1, cap + 1):
            true = least_memory_by_enumeration(inst, z, code, users, n)
            # below the truth, by at most the bisection step (2 MB) plus the relaxed slack
            assert est[n] <= true
            assert est[n] >= true - 2e6 - 1e-7 * inst.server.memory_bytes


@pytest.mark.parametrize("which", ["memory_split", "shared_memory"])
@FAST
@given(small_instances(max_users=6, tight_memory=True), st.data())
def test_memory_bounds_hold_every_schedule(which: str, inst: Instance, data: st.DataObject) -> None:
    z = data.draw(st.sampled_from([g for g in inst.server.z_grid if 0.0 < g < 1.0] or [0.5]))
    ad, sd = eligible_users(inst, z)
    ranks = Ranks(inst, z)
    caps = {AD_MODE: ranks.rank(AD_MODE, ad), SD_MODE: ranks.rank(SD_MODE, sd)}
    ceiling = len(set(ad) | set(sd))
    if which == "memory_split":
        bound = memory_split_bound(inst, z, ranks, caps, ad, sd, ceiling)
    else:
        bound = shared_memory_bound(inst, z, ranks, ad, sd, ceiling)
    assert bound is not None
    assert bound >= p1_optimum_at(inst, z)
    assert bound <= min(ceiling, caps[AD_MODE] + caps[SD_MODE])


def test_memory_split_bound_on_a_paper_instance() -> None:
    # fig5, K = 70, seed 1: memory couples the modes; at z = 0.5 the caps sum to 35
    inst = generate("fig5", 70, seed=1)
    ad, sd = eligible_users(inst, 0.5)
    ranks = Ranks(inst, 0.5)
    pb = deadline_pair_bound(inst, 0.5, ad, sd, ranks=ranks)
    assert pb.bound == 35
    assert memory_split_bound(inst, 0.5, ranks, pb.caps, ad, sd, pb.bound) == 30


@FAST
@given(
    st.lists(
        st.tuples(
            st.one_of(st.just(np.inf), st.integers(1, 9).map(float)),
            st.one_of(st.just(np.inf), st.integers(1, 9).map(float)),
        ),
        max_size=7,
    ),
    st.integers(0, 30),
    st.integers(0, 7),
    st.integers(0, 7),
    st.integers(-1, 8),
)
def test_disjoint_split_is_the_brute_force_optimum(
    costs: list[tuple[float, float]], free: int, cap_a: int, cap_s: int, floor: int
) -> None:
    best = 0
    for assign in itertools.product((0, 1, 2), repeat=len(costs)):  # none, AD, SD
        a = [c[0] for c, m in zip(costs, assign, strict=True) if m == 1]
        s = [c[1] for c, m in zip(costs, assign, strict=True) if m == 2]
        if len(a) <= cap_a and len(s) <= cap_s and sum(a) + sum(s) <= free:
            best = max(best, len(a) + len(s))
    cost_a = np.array([c[0] for c in costs], dtype=np.float64)
    cost_s = np.array([c[1] for c in costs], dtype=np.float64)
    assert _best_disjoint_split(cost_a, cost_s, float(free), cap_a, cap_s) == best
    # with a floor the answer may be a quick upper value instead: never below the optimum
    quick = _best_disjoint_split(cost_a, cost_s, float(free), cap_a, cap_s, floor)
    assert quick >= best
    assert quick == best or quick <= floor


def test_shared_memory_bound_on_a_paper_instance() -> None:
    # fig5, K = 70, seed 1 (heuristic 27): the short prompts both modes want are shared;
    # at z = 0.1 the bound proves the z cannot beat the heuristic, at 0.3 it is 29
    # where the memory split gives 30
    inst = generate("fig5", 70, seed=1)
    got = {}
    for z in (0.1, 0.3, 0.5):
        ad, sd = eligible_users(inst, z)
        got[z] = shared_memory_bound(inst, z, Ranks(inst, z), ad, sd, len(ad) + len(sd))
    assert got == {0.1: 27, 0.3: 29, 0.5: 30}


def test_pair_bound_on_a_paper_instance() -> None:
    # fig4, K = 70, seed 1 (heuristic 39, milp-highs proves 39): the single-mode caps
    # sum to 45 at z = 0.5, the pair bound to 43; at z = 0.1 and 0.9 it proves <= 39
    inst = generate("fig4", 70, seed=1)
    bounds = {}
    for z in (0.1, 0.5, 0.9):
        ad, sd = eligible_users(inst, z)
        pb = deadline_pair_bound(inst, z, ad, sd)
        bounds[z] = (pb.bound, pb.caps[AD_MODE] + pb.caps[SD_MODE])
    assert bounds == {0.1: (39, 41), 0.5: (43, 45), 0.9: (38, 41)}


def test_pair_bound_time_limit_keeps_a_valid_bound() -> None:
    inst = generate("fig4", 30, seed=2)
    ad, sd = eligible_users(inst, 0.5)
    full = deadline_pair_bound(inst, 0.5, ad, sd)
    cut = deadline_pair_bound(inst, 0.5, ad, sd, time_limit=0.0)
    assert full.complete
    assert not cut.complete or cut.pairs == full.pairs
    assert cut.bound >= full.bound


@pytest.mark.parametrize("z", [0.0, 1.0])
def test_rank_of_the_missing_mode_is_zero(z: float) -> None:
    inst = generate("fig4", 8, seed=0)
    ranks = Ranks(inst, z)
    missing = AD_MODE if z == 0.0 else SD_MODE
    assert ranks.rank(missing, range(8)) == 0
    present = SD_MODE if z == 0.0 else AD_MODE
    assert ranks.rank(present, range(8)) == one_mode_optimum(
        inst, z, SD if z == 0.0 else AD, list(range(8)), None
    )


def eligible_by_evaluator(inst: Instance, z: float) -> tuple[list[int], list[int]]:
    """The slow twin of ``eligible_users``: every singleton judged by the evaluator."""
    out: tuple[list[int], list[int]] = ([], [])
    for mode, users in ((AD, out[0]), (SD, out[1])):
        for u in range(inst.num_users):
            modes = np.zeros(inst.num_users, dtype=np.int8)
            modes[u] = mode
            if evaluate(inst, Schedule(z, modes)).feasible:
                users.append(u)
    return out


@FAST
@given(small_instances(), st.data())
def test_eligible_users_match_the_evaluator(inst: Instance, data: st.DataObject) -> None:
    """Also with deadlines placed at a user's own completion time, where only the
    evaluator's tolerance decides."""
    z = data.draw(st.sampled_from(inst.server.z_grid))
    if data.draw(st.booleans()) and 0.0 < z < 1.0:
        mode = data.draw(st.sampled_from([AD, SD]))
        deadlines = inst.deadline_s.copy()
        for u in range(inst.num_users):
            modes = np.zeros(inst.num_users, dtype=np.int8)
            modes[u] = mode
            ev = evaluate(inst, Schedule(z, modes))
            deadlines[u] = ev.completion_s[u] * data.draw(st.sampled_from([1.0, 1.0 - 1e-9, 1.0 + 1e-9]))
        inst = inst.replace(deadline_s=deadlines)
    assert eligible_users(inst, z) == eligible_by_evaluator(inst, z)
