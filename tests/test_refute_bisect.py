"""A split part left open, bisected again (option ``split_depth``), held to enumeration.

The halves of a part must partition it (every schedule of the z in exactly one leaf, at
any depth), and a refutation whose parts time out and are bisected must still agree with
the z's optimum, or stay open, never bound below it.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from balance_opt.clock import NEVER
from balance_opt.evaluator import Schedule, evaluate
from balance_opt.instance import Instance
from balance_opt.model import latency_limits
from balance_opt.solvers import get_solver
from balance_opt.solvers.milp import MilpSolver
from balance_opt.solvers.milp.formulation import BackendResult, build
from balance_opt.solvers.milp.linear import Formulation
from balance_opt.solvers.milp.options import SPLITS_BY, SweepOptions
from balance_opt.solvers.milp.split import Spec, bisect, part_of, split_specs
from balance_opt.solvers.milp.z_sweep import (
    Backend,
    _Incumbent,
    _refute_by_parts,
    search,
)
from balance_opt.status import Termination
from tests.oracles import brute_p1
from tests.strategies import small_instances
from tests.test_refute import optimum_at, parts_holding, refutation_at, schedule_values

pytest.importorskip("pyscipopt")

TINY = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def leaves(spec: Spec, depth: int) -> list[Spec]:
    """``spec`` bisected ``depth`` times over (a part that cannot be halved stays whole)."""
    halves = bisect(spec) if depth > 0 else []
    return [spec] if not halves else [leaf for h in halves for leaf in leaves(h, depth - 1)]


@pytest.mark.parametrize("by", SPLITS_BY)
@TINY
@given(small_instances(max_users=5), st.integers(1, 3), st.integers(1, 3), st.data())
def test_every_schedule_lies_in_exactly_one_bisected_leaf(
    by: str, inst: Instance, parts: int, depth: int, data: st.DataObject
) -> None:
    z = data.draw(st.sampled_from(inst.server.z_grid))
    f = build(inst, z)
    limits = latency_limits(inst)
    specs = split_specs(f, limits, {}, 0, parts, by)
    models = [part_of(f, limits, leaf) for s in specs for leaf in leaves(s, depth)]
    for value in schedule_values(inst, f):
        assert parts_holding(f, models, value) == 1


@given(
    st.dictionaries(
        st.sampled_from(["ad", "ad_limit", "sd_limit"]),
        st.none() | st.tuples(st.integers(0, 20), st.integers(0, 20)).map(lambda t: (min(t), max(t))),
        min_size=1,
    )
)
def test_bisect_halves_the_widest_interval(spec: Spec) -> None:
    halves = bisect(spec)
    widths = {a: iv[1] - iv[0] for a, iv in spec.items() if iv is not None}
    if not widths or max(widths.values()) == 0:
        assert halves == []
    else:
        axis = next(a for a in spec if widths.get(a) == max(widths.values()))
        (lo, hi), (a0, a1), (b0, b1) = spec[axis], halves[0][axis], halves[1][axis]  # type: ignore[misc]
        assert (a0, b1) == (lo, hi)
        assert a0 <= a1 < a1 + 1 == b0 <= b1
        assert abs((a1 - a0) - (b1 - b0)) <= 1
        others = {a: iv for a, iv in spec.items() if a != axis}
        for h in halves:
            assert {a: iv for a, iv in h.items() if a != axis} == others


@pytest.mark.parametrize("by", SPLITS_BY)
@TINY
@given(small_instances(max_users=4), st.integers(2, 3), st.integers(1, 4), st.booleans(), st.data())
def test_a_refutation_with_bisected_parts_agrees_with_enumeration(
    by: str, inst: Instance, parts: int, stalls: int, stall_bound: bool, data: st.DataObject
) -> None:
    """The first ``stalls`` part solves time out (with or without a bound); bisected to
    depth 3, the z is refuted at its optimum, and not one below, exactly when every
    stalled part was halved."""
    z = data.draw(st.sampled_from(inst.server.z_grid))
    opt = optimum_at(inst, z)
    for floor in (opt, opt - 1) if opt > 0 else (opt,):
        st_z, options = refutation_at(inst, z, floor, parts, by, depth=3)
        empty = _Incumbent(Schedule.empty(inst.num_users, z), Schedule.empty(inst.num_users, z), 0, "empty")
        stalling = stalling_scip(stalls, 2.0 * inst.num_users if stall_bound else None)
        inc = _refute_by_parts(inst, stalling, st_z, empty, floor, NEVER, options)
        record = st_z.stats["split"]
        assert evaluate(inst, inc.schedule).served == inc.served <= opt
        if all(p.get("bisected") for p in record[:stalls] if p["timed_out"]):
            assert st_z.done
            assert st_z.bound == opt
            assert inc.served == (opt if floor < opt else 0)
        else:  # a stalled part could not be halved: it stays open, the z keeps its bound
            assert st_z.bound == st_z.form.count_bound >= opt
        bisected = sum(1 for p in record if p.get("bisected"))
        first = split_specs(st_z.form, latency_limits(inst), st_z.caps, floor + 1, parts, by)
        assert len(record) == len(first) + 2 * bisected
        assert all(p["depth"] < 3 or not p.get("bisected") for p in record)


def stalling_scip(stalls: int, bound: float | None) -> Backend:
    """SCIP, but its first ``stalls`` solves stop at once with ``bound`` (a time-out)."""
    from balance_opt.solvers.milp.scip_backend import solve_scip

    calls = [0]

    def backend(
        f: Formulation, limit: float | None, start: NDArray[np.float64] | None, strict: bool
    ) -> BackendResult:
        calls[0] += 1
        if calls[0] <= stalls:
            return BackendResult(Termination.TIME_LIMIT, None, bound, {})
        return solve_scip(f, time_limit=limit, seed=0, start=start)

    return backend


def test_split_depth_is_checked() -> None:
    for bad in ({"split_depth": -1}, {"split_depth": 1.5}, {"split_depth": 2}):
        with pytest.raises(ValueError, match="split_depth"):
            get_solver("milp-scip", cutoff=3, **bad)
    assert get_solver("milp-scip", cutoff=3, split=2, split_depth=2).options["split_depth"] == 2


def test_whole_time_limit_is_checked() -> None:
    for bad in ({"whole_time_limit": 0}, {"whole_time_limit": -1.0}, {"whole_time_limit": True}):
        with pytest.raises(ValueError, match="whole_time_limit"):
            get_solver("milp-scip", cutoff=3, split=2, **bad)
    with pytest.raises(ValueError, match=r"whole_time_limit.*split >= 2"):
        get_solver("milp-scip", cutoff=3, whole_time_limit=5)
    solver = get_solver("milp-scip", cutoff=3, split=2, whole_time_limit=5, z_time_limit=60)
    assert isinstance(solver, MilpSolver)
    assert (solver.sweep.whole_limit, solver.sweep.z_time_limit) == (5, 60)
    optimising = SweepOptions(
        True, "never", "gap-first", "auto", split=2, whole_time_limit=5, z_time_limit=60
    )
    assert optimising.whole_limit == 60  # no cutoff: no split follows, the z gets z_time_limit


@TINY
@given(small_instances(max_users=5), st.sampled_from(SPLITS_BY))
def test_whole_z_solves_get_whole_time_limit_and_the_parts_z_time_limit(inst: Instance, by: str) -> None:
    """Every whole-z solve is asked for ``whole_time_limit`` (and stalls here), every part
    for ``z_time_limit``; the parts then refute the optimum, and not one below."""
    from balance_opt.solvers.milp.scip_backend import solve_scip

    opt = brute_p1(inst)[0]
    whole, part = 7.0, 50.0
    asked: list[tuple[bool, float]] = []

    def backend(
        f: Formulation, limit: float | None, start: NDArray[np.float64] | None, strict: bool
    ) -> BackendResult:
        assert limit is not None
        assert whole - 1.0 < limit <= whole or part - 1.0 < limit <= part
        is_whole = limit <= whole
        asked.append((is_whole, limit))
        if is_whole:  # stalled: only the parts can decide this z
            return BackendResult(Termination.TIME_LIMIT, None, None, {})
        return solve_scip(f, time_limit=limit, seed=0, start=start)

    for cutoff in (opt, opt - 1) if opt > 0 else (opt,):
        asked.clear()
        options = SweepOptions(
            False,
            "never",
            "gap-first",
            "auto",
            cutoff=cutoff,
            z_time_limit=part,
            split=2,
            split_by=by,  # type: ignore[arg-type]
            whole_time_limit=whole,
        )
        out = search(inst, backend, time_limit=None, hint=None, options=options)
        whole_asks = sum(1 for w, _ in asked if w)
        split = [z for z in out.stats["z_models"].values() if "split" in z]
        solved_whole = [z for z in out.stats["z_models"].values() if "cutoffs" in z]
        assert whole_asks == len(solved_whole) == len(split)  # each split after its stall
        assert out.stats["refuted"] == (cutoff >= opt)
        served = evaluate(inst, out.schedule).served
        if cutoff >= opt:
            assert out.bound == opt
        else:  # the refutation failed: the parts found a schedule serving the optimum
            assert served == opt
