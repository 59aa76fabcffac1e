"""The MILP solvers (milp-highs, milp-cpsat) against the evaluator and plain enumeration.

Differential twins: every row of the formulation against the evaluator on random
schedules (a schedule is representable iff it is P1-feasible), both integer roundings of
the CP-SAT translation, and whole solves against a plain 3^K enumeration with
``evaluate`` (and the ``exhaustive`` solver).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from balance_opt.evaluator import REL_TOL, Schedule, evaluate
from balance_opt.generator import generate
from balance_opt.instance import Instance
from balance_opt.model import sd_user_costs
from balance_opt.solvers import get_solver, solver_class, solver_names
from balance_opt.solvers.milp import MilpSolver
from balance_opt.solvers.milp.cpsat_backend import integer_start, to_cpsat
from balance_opt.solvers.milp.formulation import BackendResult, build, sd_l4_coefficients
from balance_opt.solvers.milp.linear import BYTES_PER_MB, US_PER_S, Formulation
from balance_opt.solvers.milp.options import SELECTORS, SweepOptions
from balance_opt.solvers.milp.warm_start import solution_values
from balance_opt.solvers.milp.z_sweep import _combinatorial_bound, _memory_binds, _ZState
from balance_opt.status import Termination
from tests.oracles import p1_optimum as brute_force
from tests.strategies import instances_and_schedules, random_schedules, small_instances

pytest.importorskip("pyomo")
pytest.importorskip("highspy")
pytest.importorskip("ortools")

# the MILP backends of the registry (the tests below use their shared options)
MILP_BACKENDS = [n for n in solver_names(exact_for="P1") if issubclass(solver_class(n), MilpSolver)]
# the sweep run directly, without a solver: no warm start, and options of its own
SWEEP = SweepOptions(warm_start=False, mode_bounds="retry", plan="gap-first", selectors="auto")
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def long_prompt_instances(draw: st.DrawFn, max_users: int = 7) -> Instance:
    """Small instances with prompts up to 3000 tokens: padding to ``max LI`` then dominates
    prefill latency and KV memory, so every max-selector row can decide feasibility."""
    inst = draw(small_instances(max_users=max_users))
    k = inst.num_users
    li = draw(
        st.lists(
            st.sampled_from([1, 10, 300, 1000, 2000, 3000]) | st.integers(1, 3000), min_size=k, max_size=k
        )
    )
    deadlines = draw(st.lists(st.floats(0.05, 2.0), min_size=k, max_size=k))
    per_token = inst.llm_kv_bytes_per_token + inst.slm_kv_bytes_per_token
    weights = inst.llm_weight_bytes + inst.slm_weight_bytes
    memory = weights + draw(st.floats(0.0, 1500.0 * k)) * per_token
    server = dataclasses.replace(inst.server, memory_bytes=memory)
    return inst.replace(input_tokens=np.array(li), deadline_s=np.array(deadlines), server=server)


@st.composite
def cases(draw: st.DrawFn, max_users: int = 7) -> Instance:
    """Either kind of small instance."""
    return draw(small_instances(max_users=max_users) | long_prompt_instances(max_users=max_users))


def violated_rows(f: Formulation, vals: NDArray[np.float64], tol: float = 1e-9) -> list[str]:
    """Names of rows that ``vals`` violates by more than ``tol`` (relative to the row)."""
    bad = []
    for row in f.rows:
        if row.indicator is not None and vals[row.indicator] < 0.5:
            continue
        lhs = sum(c * vals[i] for i, c in zip(row.index, row.coef, strict=True))
        if lhs > row.rhs + tol * max(1.0, abs(row.rhs)):
            bad.append(row.name)
    return bad


def margin(inst: Instance, sched: Schedule) -> float:
    """Smallest relative distance of the schedule's latencies and memory to their limits."""
    ev = evaluate(inst, sched)
    served = ~np.isnan(ev.completion_s)
    gaps = [abs(ev.memory_bytes - inst.server.memory_bytes * (1 + REL_TOL)) / inst.server.memory_bytes]
    limit = inst.deadline_s * (1 + REL_TOL)
    gaps += (np.abs(limit - ev.completion_s)[served] / inst.deadline_s[served]).tolist()
    return min(gaps)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.data())
def test_rows_accept_exactly_the_feasible_schedules(inst: Instance, data: st.DataObject) -> None:
    sched = data.draw(random_schedules(inst))
    f = build(inst, sched.z, selectors=data.draw(st.booleans()))
    if solution_values(f, sched) is None:  # a user in a mode it cannot take even alone
        assert not evaluate(inst, sched).feasible
    # serve many users, each in a mode it can take alone, so that the rows must decide
    options = [
        [m for m, users in ((1, f.ad_users), (2, f.sd_users)) if k in users] for k in range(inst.num_users)
    ]
    modes = [data.draw(st.sampled_from([*o, *o, 0])) if o else 0 for o in options]
    sched = Schedule(sched.z, np.array(modes, dtype=np.int8))
    assume(margin(inst, sched) > 1e-11)
    vals = solution_values(f, sched)
    assert vals is not None
    feasible = evaluate(inst, sched).feasible
    event(f"feasible={feasible}, served={sched.served > 0}")
    assert (not violated_rows(f, vals, tol=1e-13)) == feasible
    assert f.schedule(vals, inst.num_users) == sched


def _implied(f: Formulation, vals: NDArray[np.float64], prefix: str, skip: str) -> float:
    """Largest left-hand side of the active rows ``prefix*`` without variable ``skip``, minus rhs."""
    names = [v.name for v in f.vars]
    best = -np.inf
    for row in f.rows:
        if row.name.split("_")[:2] != prefix.split("_") or (
            row.indicator is not None and vals[row.indicator] < 0.5
        ):
            continue
        lhs = sum(c * vals[i] for i, c in zip(row.index, row.coef, strict=True) if names[i] != skip)
        best = max(best, lhs - row.rhs)
    return float(best)


@FAST
@given(cases(), st.data())
def test_model_latency_and_memory_equal_evaluator(inst: Instance, data: st.DataObject) -> None:
    """Each mode's latency and KV memory, as the rows of the model imply them."""
    sched = data.draw(random_schedules(inst))
    f = build(inst, sched.z)
    modes = [
        m if k in (f.ad_users if m == 1 else f.sd_users) else 0 for k, m in enumerate(sched.modes.tolist())
    ]
    sched = Schedule(sched.z, np.array(modes, dtype=np.int8))
    vals = solution_values(f, sched)
    assert vals is not None
    ev = evaluate(inst, sched)
    var = {v.name: vals[i] for i, v in enumerate(f.vars)}
    if ev.t_ad is not None:
        assert _implied(f, vals, "t_ad", "D_ad") == pytest.approx(ev.t_ad * US_PER_S, rel=1e-12)
        assert var["MA"] * BYTES_PER_MB == pytest.approx(ev.ad.kv_bytes, rel=1e-12)
    if ev.t_sd is not None:
        assert _implied(f, vals, "t_sd", "D_sd") == pytest.approx(ev.t_sd * US_PER_S, rel=1e-12)
        extra = sum(vals[b] * e for b, e in zip(f.y, _sd_offsets(f), strict=True))
        kv = (var["MS3"] + var["MS4"] + extra) * BYTES_PER_MB
        assert kv == pytest.approx(ev.sd.kv_bytes, rel=1e-12)


def _sd_offsets(f: Formulation) -> list[float]:
    """Coefficients of the y variables in the memory row (per-user constant KV bytes)."""
    row = next(r for r in f.rows if r.name == "memory")
    coef = dict(zip(row.index, row.coef, strict=True))
    return [coef.get(b, 0.0) for b in f.y]


@FAST
@given(small_instances(), st.floats(0.0, 0.95), st.floats(0.0, 30.0), st.floats(1.0, 300.0))
def test_sd_cost_is_linear_in_l4(inst: Instance, z: float, l4: float, l3: float) -> None:
    n = inst.sd_iterations
    direct = sd_user_costs(inst, l3, l4, n, z)
    split = sd_user_costs(inst, l3, 0.0, n, z) + sd_l4_coefficients(inst, z, n) * l4
    np.testing.assert_allclose(split, direct, rtol=1e-12)


def _cpsat_accepts(inst: Instance, sched: Schedule, rounding: str) -> bool:
    """Does the CP-SAT model (given rounding) admit ``sched``'s binaries?"""
    from ortools.sat.python import cp_model

    f = build(inst, sched.z)
    vals = solution_values(f, sched)
    if vals is None:
        return False
    model, xs = to_cpsat(f, rounding=rounding)
    for i in f.objective:
        model.add(xs[i] == round(vals[i]))
    for var, val in zip(xs, integer_start(f, vals), strict=True):
        model.add_hint(var, val)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    return solver.solve(model) in (cp_model.OPTIMAL, cp_model.FEASIBLE)


@FAST
@given(instances_and_schedules())
def test_cpsat_roundings_bracket_p1(case: tuple[Instance, Schedule]) -> None:
    inst, sched = case
    feasible = evaluate(inst, sched).feasible
    if feasible:  # relaxed rounding keeps every P1 schedule: its bound is valid
        assert _cpsat_accepts(inst, sched, "relaxed")
    if _cpsat_accepts(inst, sched, "strict"):  # strict rounding admits only P1 schedules
        assert feasible


def _check_exact(inst: Instance, selectors: str) -> None:
    expected = brute_force(inst)
    event(f"optimum {'=' if expected == inst.num_users else '<'} K, optimum>0: {expected > 0}")
    event(f"selectors={selectors}")
    for name in MILP_BACKENDS:
        res = get_solver(name, threads=1, selectors=selectors).solve(inst, seed=0)
        assert res.status == "optimal", (name, res.error)
        assert res.feasible
        assert res.served == expected == res.bound, name
        used = [z for z, m in res.stats["z_models"].items() if m.get("selectors")]
        if selectors == "never":
            assert not used
        if selectors == "always":
            assert len(used) == len(res.stats["z_models"])


@FAST
@given(cases(max_users=5), st.sampled_from(SELECTORS))
def test_milp_equals_brute_force(inst: Instance, selectors: str) -> None:
    _check_exact(inst, selectors)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(max_users=7), st.sampled_from(SELECTORS))
def test_milp_equals_brute_force_many(inst: Instance, selectors: str) -> None:
    _check_exact(inst, selectors)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(max_users=9).filter(lambda inst: inst.num_users >= 6), st.sampled_from(SELECTORS))
def test_milp_equals_exhaustive(inst: Instance, selectors: str) -> None:
    ref = get_solver("exhaustive").solve(inst)
    assert ref.status == "optimal"
    for name in MILP_BACKENDS:
        res = get_solver(name, threads=1, selectors=selectors).solve(inst)
        assert res.status == "optimal", (name, res.error)
        assert res.served == ref.served == res.bound


@pytest.mark.xdist_group("wallclock")
@pytest.mark.parametrize("name", MILP_BACKENDS)
def test_time_limit_gives_schedule_and_bound(name: str) -> None:
    inst = generate("fig4", 30, seed=3)
    res = get_solver(name).solve(inst, time_limit=0.5)
    assert res.status in ("time_limit", "optimal"), res.error
    assert res.feasible
    assert res.bound is not None
    assert res.bound >= res.served
    assert res.runtime_s < 0.5 * 1.1 + 1.0  # the limit, plus building the models
    assert res.to_dict()["options"]["time_limit_s"] == 0.5


@pytest.mark.xdist_group("wallclock")
@pytest.mark.parametrize("name", MILP_BACKENDS)
def test_time_limit_holds_with_the_combinatorial_bounds(name: str) -> None:
    # fig5 K = 70: the bounds of one z alone take about a second without a limit, so
    # they must stop at their share (15% of the limit) for the limit to hold
    inst = generate("fig5", 70, seed=2)
    res = get_solver(name).solve(inst, time_limit=3.0)
    assert res.status in ("time_limit", "optimal"), res.error  # CP-SAT may prove 26 in time
    assert res.feasible
    assert res.runtime_s < 3.0 * 1.1
    assert res.bound is not None
    assert res.bound >= res.served


@pytest.mark.parametrize("name", MILP_BACKENDS)
def test_hint_is_used_and_kept(name: str) -> None:
    inst = generate("fig4", 8, seed=5)
    best = get_solver(name, warm_start=False).solve(inst)
    assert best.status == "optimal"
    again = get_solver(name, warm_start=False).solve(inst, hint=best.schedule)
    assert again.status == "optimal"
    assert again.served == best.served
    assert again.stats["incumbent_source"] == "hint"
    bad = Schedule(inst.server.z_grid[0], np.ones(inst.num_users, dtype=np.int8))
    if not evaluate(inst, bad).feasible:  # an infeasible hint is ignored
        assert get_solver(name, warm_start=False).solve(inst, hint=bad).served == best.served


def test_options_are_recorded() -> None:
    inst = generate("fig4", 6, seed=2)
    res = get_solver("milp-highs", threads=2).solve(inst, seed=7)
    assert res.options["threads"] == 2
    assert res.options["seed"] == 7
    assert res.options["plan"] == "gap-first"


@pytest.mark.parametrize("plan", ["gap-first", "plain"])
def test_both_plans_prove_the_optimum_under_a_limit(plan: str) -> None:
    inst = generate("fig5", 12, seed=4)
    ref = get_solver("exhaustive").solve(inst)
    res = get_solver("milp-highs", plan=plan).solve(inst, time_limit=60)
    assert res.status == "optimal"
    assert res.served == ref.served == res.bound
    assert res.options["plan"] == plan


def test_unknown_plan_is_an_error() -> None:
    with pytest.raises(ValueError, match="plan must be one of"):
        get_solver("milp-highs", plan="fastest").solve(generate("fig4", 4, seed=0), time_limit=5)


def test_unknown_selectors_value_is_an_error() -> None:
    with pytest.raises(ValueError, match="selectors must be one of"):
        get_solver("milp-highs", selectors="yes").solve(generate("fig4", 4, seed=0), time_limit=5)


@pytest.mark.parametrize(("preset", "seed", "expected"), [("fig4", 1, []), ("fig5", 4, [0.1, 0.4, 0.5])])
def test_auto_selectors_where_memory_binds(preset: str, seed: int, expected: list[float]) -> None:
    # fig5 (long prompts and outputs): memory binds, and a memory bound cuts the
    # deadline-pair bound at some z; fig4: never (docs/milp.md, "Option selectors")
    inst = generate(preset, 30, seed=seed)
    picked = []
    for z in inst.server.z_grid:
        state = _ZState(build(inst, z), 0)
        _combinatorial_bound(inst, state, 0, None)
        if _memory_binds(state):
            picked.append(z)
    assert picked == expected


@pytest.mark.parametrize("fmt", ["lp", "mps"])
def test_export_round_trip(tmp_path: Path, fmt: str) -> None:
    import highspy

    from balance_opt.cli import main
    from balance_opt.io import write_instance

    inst = generate("fig4", 10, seed=4)
    src = tmp_path / "inst.json"
    write_instance(inst, src)
    out = tmp_path / f"model.{fmt}"
    z = 0.5
    assert main(["export", str(src), "--z", str(z), "--format", fmt, "--out", str(out)]) == 0
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    assert h.readModel(str(out)) == highspy.HighsStatus.kOk
    h.run()
    only_z = inst.replace(server=_with_grid(inst, (z,)))
    expected = get_solver("milp-highs").solve(only_z).served
    assert round(abs(h.getInfo().objective_function_value)) == expected


def test_export_rejects_z_off_grid(tmp_path: Path) -> None:
    from balance_opt.cli import main
    from balance_opt.io import write_instance

    src = tmp_path / "inst.json"
    write_instance(generate("fig4", 4, seed=1), src)
    assert main(["export", str(src), "--z", "0.55", "--format", "lp", "--out", str(tmp_path / "m.lp")]) == 2


def _with_grid(inst: Instance, grid: tuple[float, ...]) -> object:
    from dataclasses import replace

    return replace(inst.server, z_grid=grid)


def test_cpsat_regression_large_coefficients() -> None:
    """CP-SAT once returned 6 here (optimum 7) when time rows were in 1e-10 s units."""
    from balance_opt.instance import Server
    from tests.strategies import LLAMA2_7B, TINYLLAMA

    grid = tuple(round(0.1 * i, 10) for i in range(11))
    k = 7
    inst = Instance(
        name="cpsat-regression",
        server=Server(24e9, 2.0, 1, 32.0, grid, grid),
        llm=LLAMA2_7B,
        slm=TINYLLAMA,
        user_ids=tuple(f"u{i}" for i in range(k)),
        input_tokens=np.ones(k, dtype=np.int64),
        output_tokens=np.array([1, 1, 1, 1, 5, 40, 5]),
        deadline_s=np.array([1.0, 0.5, 0.75, 0.03125, 2.0, 3.0, 0.375]),
        acceptance=np.array([0.5, 0.5, 0.5, 0.5, 0.5, 0.75, 0.5]),
        uplink_bandwidth_hz=np.full(k, 1e6),
        uplink_spectral_efficiency=np.ones(k),
        downlink_bandwidth_hz=np.full(k, 2e6),
        downlink_spectral_efficiency=np.ones(k),
    )
    assert brute_force(inst) == 7
    for name in MILP_BACKENDS:
        res = get_solver(name, threads=1).solve(inst)
        assert (res.status, res.served, res.bound) == ("optimal", 7, 7), name


def test_highs_unknown_status_is_retried_then_unproved(monkeypatch: pytest.MonkeyPatch) -> None:
    from balance_opt.solvers.milp import pyomo_backend

    f = build(generate("fig4", 5, seed=1), 0.5)
    real = pyomo_backend._solve_highs_once
    seeds: list[int] = []

    def flaky(form: Formulation, **kw: object) -> BackendResult:
        seeds.append(int(kw["seed"]))  # type: ignore[call-overload]
        if len(seeds) == 1:
            raise pyomo_backend._UnknownStop(None)
        return real(form, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(pyomo_backend, "_solve_highs_once", flaky)
    res = pyomo_backend.solve_highs(f, time_limit=None, threads=1, seed=3)
    assert seeds == [3, 4]
    assert res.exact
    assert res.termination == Termination.OPTIMAL

    def always_unknown(form: Formulation, **kw: object) -> BackendResult:
        raise pyomo_backend._UnknownStop(None)

    monkeypatch.setattr(pyomo_backend, "_solve_highs_once", always_unknown)
    res = pyomo_backend.solve_highs(f, time_limit=None, threads=1, seed=3)
    assert not res.exact
    assert res.bound is None


def test_cpsat_stopped_in_presolve_proves_nothing() -> None:
    # fig5 K = 70, seed 2, z = 0.5, served >= 27: stopped within 10 ms, CP-SAT reports
    # UNKNOWN with a best bound of 0; taken as a bound, that "proved" the z infeasible
    from balance_opt.solvers.milp.cpsat_backend import solve_cpsat
    from balance_opt.solvers.milp.z_sweep import with_rows

    f = build(generate("fig5", 70, seed=2), 0.5)
    res = solve_cpsat(with_rows(f, 27, []), time_limit=0.01, threads=8, seed=0)
    assert res.termination == Termination.TIME_LIMIT
    assert res.bound is None or res.bound >= 27


def test_stopped_solve_below_the_cutoff_keeps_the_bound() -> None:
    # a backend that stops at once with a bound under the cutoff must not close any z
    inst = generate("fig4", 12, seed=1)

    def stopped(f: Formulation, limit: float | None, start: object, strict: bool) -> BackendResult:
        return BackendResult(Termination.TIME_LIMIT, None, 0.0, {}, True)

    from balance_opt.solvers.milp.z_sweep import search

    out = search(inst, stopped, time_limit=5.0, hint=None, options=SWEEP)
    assert out.termination == Termination.TIME_LIMIT
    assert out.bound is not None
    assert out.bound >= get_solver("exhaustive").solve(inst).served


def test_a_proof_below_the_incumbent_is_ignored_loudly() -> None:
    # a backend that calls every model infeasible contradicts the hinted, feasible
    # incumbent at its own z: that proof must warn and prove nothing
    inst = generate("fig4", 12, seed=1)
    best = get_solver("exhaustive").solve(inst)
    modes = best.schedule.modes.copy()
    modes[np.flatnonzero(modes)[0]] = 0  # one user fewer: the z stays open
    hint = Schedule(best.schedule.z, modes)

    def wrong(f: Formulation, limit: float | None, start: object, strict: bool) -> BackendResult:
        return BackendResult(Termination.INFEASIBLE, None, None, {}, True)

    from balance_opt.solvers.milp.z_sweep import search

    with pytest.warns(RuntimeWarning, match="the proof is ignored"):
        out = search(inst, wrong, time_limit=None, hint=hint, options=SWEEP)
    z = f"{hint.z:g}"
    assert out.stats["z_models"][z]["wrong_proof"] == best.served - 2
    assert evaluate(inst, out.schedule).served == best.served - 1
    assert out.termination != Termination.OPTIMAL
    assert out.bound is not None
    assert out.bound >= best.served
