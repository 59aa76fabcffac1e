"""Algorithms 1-3 (the literal reference), the baselines and ablations, and Theorem 1.

Every claim is checked against a slower, obviously correct twin: subset enumeration for
P3.1 / P3.2 (Propositions 4-5), AD-only / SD-only brute force judged by the evaluator,
and exhaustive search for P1 and P2 (Theorem 1).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from balance_opt.evaluator import AD, SD, Schedule, evaluate
from balance_opt.instance import Instance, Server
from balance_opt.io import instance_to_dict, read_instance
from balance_opt.model import ModeCost, ad_mode, sd_mode
from balance_opt.solvers import get_solver
from balance_opt.solvers.heuristic.literal import algorithm1, algorithm2, balance_literal, tuple_values
from balance_opt.solvers.heuristic.primitives import memory_split
from tests.strategies import LLAMA2_7B, TINYLLAMA, small_instances

FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
HEURISTICS = ("balance", "ad-only", "sd-only", "ecra", "ema", "ecrma")
FIXED_Z = {"ad-only": 1.0, "sd-only": 0.0, "ecra": 0.5, "ecrma": 0.5}


def with_grids(inst: Instance, z_grid: Sequence[float], lam_grid: Sequence[float]) -> Instance:
    """``inst`` with other grids."""
    server = dataclasses.replace(inst.server, z_grid=tuple(z_grid), lambda_grid=tuple(lam_grid))
    return inst.replace(server=server)


def mask(k: int, users: Sequence[int]) -> np.ndarray:
    m = np.zeros(k, dtype=bool)
    m[list(users)] = True
    return m


def largest_subset(users: Sequence[int], fits: Callable[[Sequence[int]], bool]) -> int:
    """Size of the largest subset of ``users`` that ``fits`` (enumeration, largest first)."""
    for r in range(len(users), 0, -1):
        if any(fits(s) for s in itertools.combinations(users, r)):
            return r
    return 0


def p3_fits(inst: Instance, cost: ModeCost, members: np.ndarray, cap: float) -> bool:
    """P3.1 / P3.2 for one mode: KV within its share, every member within ``Tp_k``."""
    assert cost.latency_s is not None
    return cost.kv_bytes <= cap and bool((cost.latency_s <= inst.budget_s[members]).all())


@st.composite
def instance_and_pair(draw: st.DrawFn, max_users: int = 6) -> tuple[Instance, float, float]:
    inst = draw(small_instances(max_users=max_users))
    return inst, draw(st.sampled_from(inst.server.z_grid)), draw(st.sampled_from(inst.server.lambda_grid))


# --- Propositions 4 and 5: Algorithms 1 and 2 solve P3.1 and P3.2 -----------------------


@FAST
@given(instance_and_pair())
def test_algorithm1_solves_p31_by_subset_enumeration(case: tuple[Instance, float, float]) -> None:
    inst, z, lam = case
    ad, _ = algorithm1(inst, z, lam)
    k = inst.num_users
    q1, _ = memory_split(inst, z, lam)

    def fits(users: Sequence[int]) -> bool:
        m = mask(k, users)
        return p3_fits(inst, ad_mode(inst, m, z), m, q1)

    expected = 0 if z == 0.0 or lam == 0.0 else largest_subset(range(k), fits)
    assert len(ad) == expected
    assert len(set(ad)) == len(ad)
    if ad:
        assert fits(ad)
        # selection order is (c_k, k): c_k grows with LO_k at any L1 (26)
        keys = [(int(inst.output_tokens[i]), i) for i in ad]
        assert keys == sorted(keys)


@FAST
@given(instance_and_pair(), st.data())
def test_algorithm2_solves_p32_over_the_remaining_users(
    case: tuple[Instance, float, float], data: st.DataObject
) -> None:
    inst, z, lam = case
    k = inst.num_users
    excluded = data.draw(st.sets(st.integers(0, k - 1)))
    sd, _ = algorithm2(inst, z, lam, excluded)
    rest = [i for i in range(k) if i not in excluded]
    _, q2 = memory_split(inst, z, lam)

    def fits(users: Sequence[int]) -> bool:
        m = mask(k, users)
        return p3_fits(inst, sd_mode(inst, m, z), m, q2)

    expected = 0 if z == 1.0 or lam == 1.0 else largest_subset(rest, fits)
    assert len(sd) == expected
    assert not set(sd) & set(excluded)
    if sd:
        assert fits(sd)
        keys = [(int(inst.sd_iterations[i]), i) for i in sd]  # (30) grows with N_k
        assert keys == sorted(keys)


@FAST
@given(instance_and_pair())
def test_tuples_examined_is_the_product_of_the_component_ranges(case: tuple[Instance, float, float]) -> None:
    inst, z, lam = case
    ad, n1 = algorithm1(inst, z, lam)
    _, n2 = algorithm2(inst, z, lam, ad)
    rest = [i for i in range(inst.num_users) if i not in ad]

    def size(values: np.ndarray, users: Sequence[int]) -> int:
        return len(tuple_values(values[list(users)].tolist()))

    everyone = range(inst.num_users)
    ad_arrays = (inst.input_tokens, inst.output_tokens, inst.budget_s, inst.upload_s)
    sd_arrays = (inst.input_tokens, inst.accepted_drafts, inst.sd_iterations, inst.budget_s, inst.upload_s)
    assert n1 == (0 if z == 0.0 or lam == 0.0 else math.prod(size(a, everyone) for a in ad_arrays))
    assert n2 == (0 if z == 1.0 or lam == 1.0 else math.prod(size(a, rest) for a in sd_arrays))


def test_tuple_values_sort_negative_budgets_as_numbers() -> None:
    assert tuple_values([0.5, -0.25, 2.0, -1.0, 0.5]) == [-1.0, -0.25, 0, 0.5, 2.0]
    assert tuple_values([]) == [0]


# --- hand-built cases: ties, empty answers, the inactive modes -------------------------


def identical_users(k: int, memory: float, deadline_s: float = 10.0, li: int = 10, lo: int = 20) -> Instance:
    """``k`` identical users (every contribution ties), grids {0, 0.5, 1}."""
    grid = (0.0, 0.5, 1.0)
    return Instance(
        name=f"ties-K{k}",
        server=Server(memory, 2.0, 1, 32.0, grid, grid),
        llm=LLAMA2_7B,
        slm=TINYLLAMA,
        user_ids=tuple(f"u{i}" for i in range(k)),
        input_tokens=np.full(k, li),
        output_tokens=np.full(k, lo),
        deadline_s=np.full(k, deadline_s),
        acceptance=np.full(k, 0.7),
        uplink_bandwidth_hz=np.full(k, 1e6),
        uplink_spectral_efficiency=np.full(k, 5.0),
        downlink_bandwidth_hz=np.full(k, 2e6),
        downlink_spectral_efficiency=np.full(k, 8.0),
    )


def test_ties_in_algorithm1_go_to_the_lower_positions() -> None:
    base = identical_users(4, 24e9)
    per_user = 30 * base.llm_kv_bytes_per_token  # (L1 + LO_k) kv^L
    inst = base.replace(
        server=dataclasses.replace(base.server, memory_bytes=base.llm_weight_bytes + 2.5 * per_user)
    )
    assert algorithm1(inst, 1.0, 1.0)[0] == (0, 1)
    out = balance_literal(inst, (1.0,), (1.0,))
    assert (out.z, out.lam, out.ad, out.sd) == (1.0, 1.0, (0, 1), ())


def test_ties_in_algorithm2_go_to_the_lower_positions() -> None:
    base = identical_users(4, 24e9)
    one = mask(4, [0])
    per_user = sd_mode(base, one, 0.0).kv_bytes
    room = base.llm_weight_bytes + base.slm_weight_bytes + 3.5 * per_user
    inst = base.replace(server=dataclasses.replace(base.server, memory_bytes=room))
    assert algorithm2(inst, 0.0, 0.0, ())[0] == (0, 1, 2)
    assert algorithm2(inst, 0.0, 0.0, (1,))[0] == (0, 2, 3)


def test_first_pair_wins_ties_between_pairs() -> None:
    # ample resources: (z, lambda) = (0, 0) already serves everybody in SD
    out = balance_literal(identical_users(3, 24e9), (0.0, 0.5, 1.0), (0.0, 0.5, 1.0))
    assert (out.z, out.lam, out.ad, out.sd) == (0.0, 0.0, (), (0, 1, 2))
    out = balance_literal(identical_users(3, 24e9), (0.5, 1.0), (0.5, 1.0))
    assert (out.z, out.served) == (0.5, 3)


def test_nobody_servable_gives_the_first_pair_and_empty_sets() -> None:
    inst = identical_users(3, 24e9, deadline_s=1e-3)
    out = balance_literal(inst, (0.2, 0.6), (0.3, 0.9))
    assert (out.z, out.lam, out.ad, out.sd) == (0.2, 0.3, (), ())
    result = get_solver("balance-literal").solve(with_grids(inst, (0.2, 0.6), (0.3, 0.9)))
    assert result.status == "feasible"
    assert result.feasible
    assert result.served == 0


def test_inactive_modes_return_nothing() -> None:
    inst = identical_users(2, 24e9)
    assert algorithm1(inst, 0.0, 0.5) == ((), 0)
    assert algorithm1(inst, 0.5, 0.0) == ((), 0)
    assert algorithm2(inst, 1.0, 0.5, ()) == ((), 0)
    assert algorithm2(inst, 0.5, 1.0, ()) == ((), 0)
    assert algorithm1(inst, 0.5, 0.5)[0] == (0, 1)


def test_bad_grids_are_refused() -> None:
    inst = identical_users(1, 24e9)
    with pytest.raises(ValueError, match="strictly increasing"):
        balance_literal(inst, (0.5, 0.1), (0.5,))
    with pytest.raises(ValueError, match="non-empty"):
        balance_literal(inst, (0.5,), ())


# --- solvers: feasibility, baselines, Propositions 4-5 at the solver level --------------


def brute_single_mode(inst: Instance, z: float, mode: int) -> int:
    """Largest set served in one mode at z, judged by the evaluator."""
    k = inst.num_users

    def ok(users: Sequence[int]) -> bool:
        modes = np.zeros(k, dtype=np.int8)
        modes[list(users)] = mode
        return evaluate(inst, Schedule(z, modes)).feasible

    return largest_subset(range(k), ok)


def with_endpoints(inst: Instance) -> Instance:
    """``inst`` with 0 and 1 added to both grids."""
    server = inst.server
    return with_grids(inst, sorted({0.0, 1.0, *server.z_grid}), sorted({0.0, 1.0, *server.lambda_grid}))


@FAST
@given(small_instances(max_users=6))
def test_ad_only_and_sd_only_are_optimal_in_their_mode(inst: Instance) -> None:
    inst = with_endpoints(inst)
    for impl in ("literal", "fast"):
        ad = get_solver("ad-only", implementation=impl).solve(inst)
        sd = get_solver("sd-only", implementation=impl).solve(inst)
        assert ad.status == sd.status == "feasible"
        assert ad.served == brute_single_mode(inst, 1.0, AD)  # Proposition 4
        assert sd.served == brute_single_mode(inst, 0.0, SD)  # Proposition 5
        assert ad.evaluation.num_sd == 0
        assert sd.evaluation.num_ad == 0


@FAST
@given(small_instances(max_users=7))
def test_heuristics_are_feasible_and_never_above_exhaustive(inst: Instance) -> None:
    best = get_solver("exhaustive").solve(inst)
    assert best.status == "optimal"
    for name in HEURISTICS:
        result = get_solver(name).solve(inst)
        fixed_z = FIXED_Z.get(name)
        if fixed_z is not None and fixed_z not in inst.server.z_grid:
            # P1's (21g): a baseline's fixed z off the instance's grid is not P1-feasible
            assert result.status == "error"
            assert not result.feasible
            continue
        assert result.status == "feasible", result.summary()
        assert result.feasible
        assert result.bound is None
        assert result.lam is not None
        assert result.served <= best.served


@FAST
@given(small_instances(max_users=7))
def test_balance_dominates_ad_only_and_sd_only_when_the_grids_hold_0_and_1(inst: Instance) -> None:
    # Algorithm 3 visits (1, 1), which is ad-only, and (0, 0), which is sd-only
    inst = with_endpoints(inst)
    served = get_solver("balance").solve(inst).served
    assert served >= get_solver("ad-only").solve(inst).served
    assert served >= get_solver("sd-only").solve(inst).served


@SLOW
@given(small_instances(max_users=5))
def test_literal_balance_dominates_its_baselines_and_is_deterministic(inst: Instance) -> None:
    inst = with_endpoints(inst)
    first = get_solver("balance-literal").solve(inst)
    again = get_solver("balance-literal").solve(inst)
    assert first.schedule == again.schedule
    assert first.lam == again.lam
    assert first.stats["implementation"] == "literal"
    for name in ("ad-only", "sd-only"):
        assert first.served >= get_solver(name, implementation="literal").solve(inst).served


def test_implementation_option() -> None:
    inst = identical_users(2, 24e9)
    assert get_solver("balance", implementation="literal").solve(inst).stats["implementation"] == "literal"
    assert get_solver("ecrma", implementation="literal").solve(inst).served == 2
    with pytest.raises(ValueError, match="implementation"):
        get_solver("balance", implementation="quick")
    with pytest.raises(ValueError, match="no option"):
        get_solver("balance-literal", implementation="fast")


# --- Theorem 1 --------------------------------------------------------------------------


@FAST
@given(small_instances(max_users=7))
def test_theorem1_balance_reaches_half_of_p2(inst: Instance) -> None:
    p2 = get_solver("exhaustive-p2").solve(inst)
    p1 = get_solver("exhaustive").solve(inst)
    balance = get_solver("balance").solve(inst)
    p2_opt = p2.stats["p2_optimum"]
    assert p2.feasible
    assert p2.served == p2_opt <= p1.served
    assert balance.served >= math.ceil(p2_opt / 2)


@SLOW
@given(small_instances(max_users=5))
def test_theorem1_for_the_literal_reference(inst: Instance) -> None:
    p2_opt = get_solver("exhaustive-p2").solve(inst).stats["p2_optimum"]
    assert get_solver("balance-literal").solve(inst).served >= math.ceil(p2_opt / 2)


# --- half of P1 is not guaranteed: recorded, not failed --------------------------------

THEOREM1_FIXTURES = sorted((Path(__file__).parent / "fixtures" / "theorem1").glob("*.json"))
# grids without 0 or 1: only then can balance fall below P1_opt / 2 (docs/algorithms.md)
COARSE_GRIDS = ((0.5,), (0.0, 0.5), (0.5, 1.0), (0.2, 0.6, 1.0), (0.0, 0.3, 0.9), (0.1, 0.9))


@pytest.mark.parametrize("path", THEOREM1_FIXTURES, ids=lambda p: p.stem)
def test_fixtures_below_half_of_p1_but_not_of_p2(path: Path) -> None:
    inst = read_instance(path)
    p1 = get_solver("exhaustive").solve(inst).served
    p2_opt = get_solver("exhaustive-p2").solve(inst).stats["p2_optimum"]
    for name in ("balance", "balance-literal"):
        served = get_solver(name).solve(inst).served
        assert 2 * served < p1  # the gap this fixture documents
        assert served >= math.ceil(p2_opt / 2)  # Theorem 1 against P2 holds


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_instances(max_users=6), st.sampled_from(COARSE_GRIDS), st.sampled_from(COARSE_GRIDS))
def test_search_for_balance_below_half_of_p1(
    inst: Instance, z_grid: tuple[float, ...], lam_grid: tuple[float, ...]
) -> None:
    inst = with_grids(inst, z_grid, lam_grid)
    p1 = get_solver("exhaustive").solve(inst).served
    p2_opt = get_solver("exhaustive-p2").solve(inst).stats["p2_optimum"]
    served = get_solver("balance").solve(inst).served
    if 2 * served < p1:
        # not a failure (Theorem 1 concerns P2): make it visible in the statistics and output
        event("balance < P1_opt / 2")
        print(f"balance {served} < P1 optimum {p1} / 2 (P2 optimum {p2_opt}): {instance_to_dict(inst)}")
    assert served >= math.ceil(p2_opt / 2)
