"""The ``exact`` solver and its box bounds against plain enumeration and the evaluator.

A wrong "optimal" is the worst defect of the suite, so the bounds themselves are tested:
every box's relaxed program must bound every schedule whose thresholds lie in the box
(found by enumerating all schedules of small instances), every point of a restricted
program must be P1-feasible, and whole solves must equal brute force and ``exhaustive``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from balance_opt.evaluator import Schedule, evaluate
from balance_opt.generator import generate
from balance_opt.instance import Instance
from balance_opt.solvers import get_solver
from balance_opt.solvers.exact.boxes import DIMS, RELAX, RESTRICT, Box, ZData, caps
from balance_opt.solvers.exact.highs_lp import BOUND_EPS, count_bound, solve
from balance_opt.solvers.exact.warm_lp import WarmLp
from tests.oracles import p1_optimum as brute_force
from tests.strategies import small_instances
from tests.test_milp import cases

pytest.importorskip("highspy")

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check_exact(inst: Instance) -> None:
    expected = brute_force(inst)
    event(f"optimum {'=' if expected == inst.num_users else '<'} K")
    res = get_solver("exact").solve(inst)
    assert res.status == "optimal", res.error
    assert res.feasible
    assert res.served == expected == res.bound


@FAST
@given(cases(max_users=5))
def test_exact_equals_brute_force(inst: Instance) -> None:
    _check_exact(inst)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(max_users=7) | small_instances(max_users=7, tight_memory=True))
def test_exact_equals_brute_force_many(inst: Instance) -> None:
    _check_exact(inst)


@FAST
@given(cases(max_users=5))
def test_exact_without_warm_start_equals_brute_force(inst: Instance) -> None:
    res = get_solver("exact", warm_start=False).solve(inst)
    assert res.status == "optimal"
    assert res.served == brute_force(inst) == res.bound


def _box_of(zd: ZData, inst: Instance, ad: list[int], sd: list[int]) -> tuple[int, ...]:
    """The value indices of a schedule's thresholds (DA, L1, DS, L3, L4)."""
    v = zd.values
    li, la = inst.input_tokens, inst.accepted_drafts
    at = {
        "DA": zd.limit[ad].min(),
        "L1": li[ad].max(),
        "DS": zd.limit[sd].min(),
        "L3": li[sd].max(),
        "L4": la[sd].max(),
    }
    return tuple(int(np.searchsorted(v[d], at[d])) for d in DIMS)


def draw_root(data: st.DataObject, inst: Instance) -> tuple[ZData, Box]:
    """A z in (0, 1) of the grid (0.5 if it has none) whose root box exists, and that box;
    an instance with no such z is rejected (no schedule there serves both modes)."""
    inner = [z for z in inst.server.z_grid if 0.0 < z < 1.0] or [0.5]
    rooted = [(zd, root) for zd in (ZData(inst, z) for z in inner) if (root := zd.root()) is not None]
    assume(rooted)
    return data.draw(st.sampled_from(rooted))


def draw_box(data: st.DataObject, root: Box) -> Box:
    """A random box inside ``root``: each range a sorted pair of draws within its bounds."""
    return tuple(
        tuple(sorted(data.draw(st.tuples(st.integers(lo, hi), st.integers(lo, hi))))) for lo, hi in root
    )


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(max_users=5), st.data())
def test_every_box_bounds_its_schedules(inst: Instance, data: st.DataObject) -> None:
    """Random boxes: the relaxed LP, its integer program and the quick bound are at least
    the best schedule whose thresholds lie in the box; restricted points are feasible."""
    zd, root = draw_root(data, inst)
    z = zd.z
    box = draw_box(data, root)
    best = -1
    for modes in itertools.product((0, 1, 2), repeat=inst.num_users):
        arr = np.array(modes, dtype=np.int8)
        ad, sd = np.flatnonzero(arr == 1).tolist(), np.flatnonzero(arr == 2).tolist()
        if not ad or not sd or len(ad) + len(sd) <= best:
            continue
        at = _box_of(zd, inst, ad, sd)
        inside = all(lo <= i <= hi for i, (lo, hi) in zip(at, box, strict=True))
        if inside and evaluate(inst, Schedule(z, arr)).feasible:
            best = len(ad) + len(sd)
    event(f"box holds a schedule: {best >= 0}")
    bp = zd.program(box, RELAX)
    assert bp.quick >= best
    assert count_bound(solve(bp.program, integer=False).bound) >= best
    assert count_bound(solve(bp.program, integer=True).bound) >= best
    t = zd.terms(box, RELAX)  # the search's LP: one HiGHS object per z, as in the search
    cap_a, cap_s, _ = caps(inst, t)
    assert count_bound(WarmLp(zd).solve(t, cap_a, cap_s, None)[0]) >= best
    rp = zd.program(box, RESTRICT)
    point = solve(rp.program, integer=True)
    if point.values is not None:
        ad = rp.ad_users[point.values[rp.x] > 0.5].tolist()
        sd = rp.sd_users[point.values[rp.y] > 0.5].tolist()
        assert evaluate(inst, Schedule.from_sets(inst.num_users, z, ad, sd)).feasible


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(max_users=9).filter(lambda inst: inst.num_users >= 7))
def test_exact_equals_exhaustive(inst: Instance) -> None:
    ref = get_solver("exhaustive").solve(inst)
    res = get_solver("exact").solve(inst)
    assert ref.status == res.status == "optimal"
    assert res.served == ref.served == res.bound


@pytest.mark.parametrize(
    ("preset", "users", "seed"),
    [
        ("fig4", 10, 2),
        pytest.param("fig4", 16, 2, marks=pytest.mark.slow),
        pytest.param("fig5", 16, 3, marks=pytest.mark.slow),
        pytest.param("fig4", 30, 1, marks=pytest.mark.slow),
        pytest.param("fig5", 30, 2, marks=pytest.mark.slow),
    ],
)
def test_exact_equals_milp_highs(preset: str, users: int, seed: int) -> None:
    inst = generate(preset, users, seed=seed)
    ref = get_solver("milp-highs").solve(inst)
    res = get_solver("exact").solve(inst)
    assert ref.status == res.status == "optimal"
    assert res.served == ref.served


@pytest.mark.xdist_group("wallclock")
def test_time_limit_keeps_a_valid_bound() -> None:
    """Stopped early on a large instance: a schedule, a bound above it, and the limit kept."""
    inst = generate("fig5", 70, seed=1)
    res = get_solver("exact").solve(inst, time_limit=3)
    assert res.feasible
    assert res.bound is not None
    assert res.bound >= res.served
    assert res.status in ("optimal", "time_limit")
    assert res.runtime_s < 3 + 1.5


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(max_users=7), st.data())
def test_warm_lp_equals_a_fresh_program(inst: Instance, data: st.DataObject) -> None:
    """The persistent LP, started cold or from another box's basis, has the value of the
    box's program built from scratch (its slow, obvious twin)."""
    zd, root = draw_root(data, inst)
    lp = WarmLp(zd)
    basis = None
    for _ in range(3):
        box = tuple(
            tuple(sorted(data.draw(st.tuples(st.integers(lo, hi), st.integers(lo, hi))))) for lo, hi in root
        )
        t = zd.terms(box, RELAX)
        cap_a, cap_s, _ = caps(inst, t)
        warm, next_basis = lp.solve(t, cap_a, cap_s, basis)
        fresh = solve(zd.program(box, RELAX, upload=False).program, integer=False).bound
        # two simplex runs of one LP agree within HiGHS's tolerances, well inside BOUND_EPS
        assert warm == pytest.approx(fresh, abs=BOUND_EPS / 2) or (math.isinf(warm) and math.isinf(fresh))
        basis = next_basis if next_basis is not None else basis


def test_trace_is_the_anytime_profile() -> None:
    """The trace only ever improves, and ends at the result's served count and bound."""
    from benchmarks.bench_anytime import first_within

    res = get_solver("exact").solve(generate("fig5", 14, seed=2))
    trace = res.stats["trace"]
    assert trace, "a solve records at least its final state"
    seconds, served, bounds = zip(*trace, strict=True)
    assert list(seconds) == sorted(seconds)
    assert list(served) == sorted(served)
    assert list(bounds) == sorted(bounds, reverse=True)
    assert all(b >= s for s, b in zip(served, bounds, strict=True))
    assert (served[-1], bounds[-1]) == (res.served, res.bound)
    assert first_within([[0.5, 10, 20], [1.0, 12, 14], [2.0, 13, 13]], 2) == 1.0
    assert first_within(trace, 0) == (seconds[-1] if res.status == "optimal" else None)


def test_threads_do_not_change_the_search() -> None:
    """Each half of a split has its own LP object whatever ``threads`` is, so one and two
    threads make the same boxes, LPs, bounds and schedule."""
    inst = generate("fig5", 20, seed=4)
    one = get_solver("exact", threads=1).solve(inst)
    two = get_solver("exact", threads=2).solve(inst)
    assert one.status == two.status == "optimal"
    assert one.schedule.z == two.schedule.z
    assert np.array_equal(one.schedule.modes, two.schedule.modes)
    for key in ("boxes", "lps", "mips", "leaves", "pruned"):
        assert one.stats[key] == two.stats[key], key
    assert one.stats["lps"] > 0  # the search ran, not only the first pass
    assert [t[1:] for t in one.stats["trace"]] == [t[1:] for t in two.stats["trace"]]


def test_threads_below_one_are_refused() -> None:
    with pytest.raises(ValueError, match=r"threads must be an integer in \[1, 256\], got 0"):
        get_solver("exact", threads=0).solve(generate("fig4", 5, seed=1))


def test_a_work_limit_gives_the_same_bound_and_schedule_every_time() -> None:
    """``work_limit`` counts boxes, not seconds: two runs agree, the bound holds against the
    schedule, and the stats say what stopped the search."""
    inst = generate("fig4", 30, seed=1)
    runs = [get_solver("exact", work_limit=5).solve(inst) for _ in range(2)]
    first, second = runs
    assert first.bound == second.bound
    assert first.schedule.z == second.schedule.z
    assert first.schedule.modes.tolist() == second.schedule.modes.tolist()
    assert first.stats["work_units"] <= 5
    assert first.stats["stopped_by"] == "work_limit"  # 5 boxes do not close fig4 K = 30
    assert first.bound is not None
    assert first.bound >= first.served
    assert first.options["work_limit"] == 5
