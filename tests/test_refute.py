"""Refutation by the MILP backends (option ``cutoff``), SCIP, and the split of a z by AD
count, by a mode's tightest latency limit or by both.

Every claim is held to enumeration: a refutation of the optimum must hold and one of
anything less must bring back a schedule serving more; the parts of a split z must cover
it, and refuting them part by part must agree with the z's own optimum.
"""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from balance_opt.clock import NEVER
from balance_opt.evaluator import Schedule, evaluate
from balance_opt.instance import Instance
from balance_opt.library.reference import read_ledger, read_reference
from balance_opt.model import latency_limits
from balance_opt.solvers import get_solver
from balance_opt.solvers.milp.formulation import build
from balance_opt.solvers.milp.linear import Formulation
from balance_opt.solvers.milp.options import SPLITS_BY, SweepOptions
from balance_opt.solvers.milp.split import ad_count_parts, check_cover, limit_parts, part_of, split_specs
from balance_opt.solvers.milp.z_sweep import _combinatorial_bound, _Incumbent, _refute_by_parts, _ZState
from tests.oracles import MODE_ORDER, brute_p1
from tests.strategies import small_instances

pytest.importorskip("pyscipopt")

TINY = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LIBRARY = Path(__file__).parent.parent / "instances" / "paper"
BACKENDS = ("milp-scip", "milp-highs", "milp-cpsat")


def optimum_at(inst: Instance, z: float) -> int:
    """The most users any schedule at ``z`` serves (enumeration, judged by the evaluator)."""
    best = 0
    for modes in itertools.product(MODE_ORDER, repeat=inst.num_users):
        ev = evaluate(inst, Schedule(z, np.array(modes, dtype=np.int8)))
        if ev.feasible:
            best = max(best, ev.served)
    return best


@pytest.mark.parametrize("name", BACKENDS)
@TINY
@given(small_instances(max_users=4))
def test_refuting_the_optimum_holds_and_below_it_fails(name: str, inst: Instance) -> None:
    opt = brute_p1(inst)[0]
    held = get_solver(name, cutoff=opt, warm_start=False).solve(inst)
    assert held.bound == opt
    assert held.stats["refuted"]
    assert held.served <= opt
    if opt > 0:  # more than opt - 1 is possible: the schedule that shows it comes back
        failed = get_solver(name, cutoff=opt - 1, warm_start=False).solve(inst)
        assert not failed.stats["refuted"]
        assert failed.served == failed.bound == opt
        assert evaluate(inst, failed.schedule).served == opt


@TINY
@given(small_instances(max_users=5), st.sampled_from([0.001, 0.01, 0.2]), st.integers(2, 3), st.data())
def test_a_cut_short_refutation_never_bounds_below_the_optimum(
    inst: Instance, z_limit: float, parts: int, data: st.DataObject
) -> None:
    """Whole-z solves cut short, then the parts (bisected where open): whatever stays
    open, the bound holds."""
    opt = brute_p1(inst)[0]
    cutoff = data.draw(st.integers(max(0, opt - 1), opt + 1))
    by = data.draw(st.sampled_from(SPLITS_BY))
    options = {"cutoff": cutoff, "z_time_limit": z_limit, "split": parts, "split_by": by, "warm_start": False}
    options["split_depth"] = data.draw(st.integers(0, 2))  # open parts bisected again
    res = get_solver("milp-scip", **options).solve(inst)
    assert res.bound is not None
    assert res.served <= opt <= res.bound
    assert res.stats["refuted"] == (res.bound <= cutoff)
    if res.stats["refuted"]:
        assert cutoff >= opt
    for z_stats in res.stats["z_models"].values():
        for part in z_stats.get("split", []):
            assert part["bound"] is None or cutoff <= part["bound"] <= 2 * inst.num_users


def refutation_at(
    inst: Instance, z: float, floor: int, parts: int, by: str, depth: int = 0
) -> tuple[_ZState, SweepOptions]:
    """The state of ``z`` with its caps, and the options of a refutation of ``floor`` by parts."""
    st_z = _ZState(build(inst, z), 0)
    _combinatorial_bound(inst, st_z, floor, None)  # the caps the parts are spread over
    st_z.bound = st_z.form.count_bound
    options = SweepOptions(
        warm_start=False,
        mode_bounds="never",
        plan="gap-first",
        selectors="auto",
        cutoff=floor,
        split=parts,
        split_by=by,  # type: ignore[arg-type]
        split_depth=depth,
    )
    return st_z, options


@pytest.mark.parametrize("by", SPLITS_BY)
@TINY
@given(small_instances(max_users=4), st.integers(2, 4))
def test_a_z_refuted_by_parts_agrees_with_enumeration(by: str, inst: Instance, parts: int) -> None:
    from balance_opt.solvers.milp.scip_backend import solve_scip

    def backend(f, limit, start, strict):  # type: ignore[no-untyped-def]
        return solve_scip(f, time_limit=limit, seed=0, start=start)

    z = inst.server.z_grid[len(inst.server.z_grid) // 2]
    opt = optimum_at(inst, z)
    empty = _Incumbent(Schedule.empty(inst.num_users, z), Schedule.empty(inst.num_users, z), 0, "empty")
    for floor, refuted in ((opt, True), (opt - 1, False)):
        if floor < 0:
            continue
        st_z, options = refutation_at(inst, z, floor, parts, by)
        inc = _refute_by_parts(inst, backend, st_z, empty, floor, NEVER, options)
        assert st_z.done  # every part was solved through
        assert (st_z.bound <= floor) == refuted
        if refuted:
            assert st_z.bound == opt
        else:
            assert inc.served == opt
            assert evaluate(inst, inc.schedule).served == opt


def schedule_values(inst: Instance, f: Formulation) -> list[NDArray[np.float64]]:
    """The variable values of the binaries x, y for every schedule of the z model."""
    out = []
    for modes in itertools.product(MODE_ORDER, repeat=inst.num_users):
        if any(modes[k] == 1 for k in range(inst.num_users) if k not in f.ad_users):
            continue  # not a schedule of the z model: a user outside AD's eligible set
        if any(modes[k] == 2 for k in range(inst.num_users) if k not in f.sd_users):
            continue
        value = np.zeros(len(f.vars))
        for k, i in zip(f.ad_users, f.x, strict=True):
            value[i] = float(modes[k] == 1)
        for k, i in zip(f.sd_users, f.y, strict=True):
            value[i] = float(modes[k] == 2)
        out.append(value)
    return out


def parts_holding(f: Formulation, parts: list[Formulation], value: NDArray[np.float64]) -> int:
    """How many of ``parts`` (``f`` plus rows) hold ``value`` in all the rows they add."""
    return sum(
        all(float(np.dot(value[list(r.index)], r.coef)) <= r.rhs for r in g.rows[len(f.rows) :])
        for g in parts
    )


@pytest.mark.parametrize("by", ["ad-limit", "sd-limit", "limits"])
@TINY
@given(small_instances(max_users=5), st.integers(2, 5), st.data())
def test_every_schedule_lies_in_exactly_one_limit_part(
    by: str, inst: Instance, parts: int, data: st.DataObject
) -> None:
    """The rows a limit split adds hold for every schedule of the z in exactly one part."""
    z = data.draw(st.sampled_from(inst.server.z_grid))
    f = build(inst, z)
    limits = latency_limits(inst)
    specs = split_specs(f, limits, {}, 0, parts, by)
    assert len(specs) <= (parts + 1) ** (2 if by == "limits" else 1)
    models = [part_of(f, limits, spec) for spec in specs]
    for value in schedule_values(inst, f):
        assert parts_holding(f, models, value) == 1, (value, specs)


@given(st.lists(st.integers(0, 6).map(float), max_size=30), st.integers(2, 9))
def test_the_limit_parts_partition_the_values(limits: list[float], parts: int) -> None:
    intervals = limit_parts(np.array(limits), parts)
    values = np.unique(limits)
    check_cover(intervals, values.size - 1)
    assert len(intervals) <= parts


@given(st.integers(0, 80), st.integers(-5, 90), st.integers(-5, 90), st.integers(2, 9))
def test_the_parts_partition_every_ad_count(n_ad: int, lo: int, hi: int, parts: int) -> None:
    intervals = ad_count_parts(n_ad, lo, hi, parts)
    check_cover(intervals, n_ad)
    assert 1 <= len(intervals) <= parts
    counts = [a for lo_i, hi_i in intervals for a in range(lo_i, hi_i + 1)]
    assert counts == list(range(n_ad + 1))


@pytest.mark.parametrize(
    "intervals", [[(0, 3), (5, 9)], [(0, 4), (4, 9)], [(1, 9)], [(0, 8)], [(0, 5), (7, 6), (7, 9)]]
)
def test_a_gap_or_an_overlap_is_not_a_cover(intervals: list[tuple[int, int]]) -> None:
    with pytest.raises(RuntimeError, match="do not partition"):
        check_cover(intervals, 9)


def test_refutation_options_are_checked() -> None:
    bad = [("cutoff", -1), ("cutoff", 2.5), ("split", 1), ("z_time_limit", 0), ("cutoff", "best-known")]
    bad += [("split_by", "z")]
    for key, value in bad:
        with pytest.raises(ValueError, match=key):
            get_solver("milp-scip", **{key: value})
    with pytest.raises(ValueError, match="one thread"):
        get_solver("milp-scip", threads=2)
    with pytest.raises(ValueError, match="clock"):
        get_solver("milp-scip", clock="process")


@pytest.mark.parametrize(("clock", "clocktype"), [("wall", 2), ("cpu", 1)])
def test_scip_counts_its_limits_on_the_chosen_clock(
    clock: str, clocktype: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from balance_opt.solvers.milp import scip_backend

    models: list[object] = []
    to_scip = scip_backend.to_scip

    def keep(f: object) -> object:
        m, xs = to_scip(f)  # type: ignore[arg-type]
        models.append(m)
        return m, xs

    monkeypatch.setattr(scip_backend, "to_scip", keep)
    inst = build_instance()
    res = get_solver("milp-scip", clock=clock).solve(inst, time_limit=30)
    assert res.feasible
    assert models
    assert {m.getParam("timing/clocktype") for m in models} == {clocktype}  # type: ignore[attr-defined]


def test_a_bad_refutation_value_in_a_configuration_is_bad_input(tmp_path: Path) -> None:
    from balance_opt.batch.configs import load_config
    from balance_opt.errors import InputError

    path = tmp_path / "bad.toml"
    path.write_text('solver = "milp-highs"\n[options]\nsplit = 1\n')
    with pytest.raises(InputError, match=r"bad.toml: options: split must be 0 \(off\) or an integer >= 2"):
        load_config(path)
    path.write_text('solver = "milp-cpsat"\n[options]\ncutoff = "best-known"\n')
    assert load_config(path).options["cutoff"] == "best-known"  # library refs resolves it


def test_scip_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import balance_opt.solvers.base as base
    import balance_opt.solvers.milp as milp
    from balance_opt.errors import SolverUnavailable

    monkeypatch.setattr(base, "_missing", lambda modules: modules)
    assert not milp.ScipMilpSolver.is_available()
    with pytest.raises(SolverUnavailable, match=r"pip install 'balance-opt\[scip\]'"):
        milp.ScipMilpSolver().solve(build_instance())


def build_instance() -> Instance:
    from balance_opt.io import read_instance

    return read_instance(LIBRARY / "fig6" / "small-k-11-s0003.json")


def test_scip_prints_nothing_under_json(capfd: pytest.CaptureFixture[str]) -> None:
    import json

    from balance_opt.cli import main

    assert (
        main(["solve", str(LIBRARY / "fig6" / "small-k-11-s0003.json"), "--solver", "milp-scip", "--json"])
        == 0
    )
    out = capfd.readouterr().out
    assert json.loads(out)["status"] == "optimal"


@pytest.fixture
def one_set(tmp_path: Path) -> Path:
    folder = tmp_path / "fig6"
    folder.mkdir()
    shutil.copy(LIBRARY / "fig6" / "small-k-11-s0003.json", folder)
    return folder


def test_library_refs_refutes_each_best_known_value(one_set: Path, tmp_path: Path) -> None:
    from balance_opt.cli import main

    config = tmp_path / "refute.toml"
    config.write_text(
        'solver = "milp-scip"\n[options]\ncutoff = "best-known"\nz_time_limit = 60\nsplit = 2\n'
    )
    assert main(["library", "refs", str(one_set), "--heuristic", "balance"]) == 0
    assert main(["library", "refs", str(one_set), "--config", str(config), "--no-heuristics"]) == 0
    row = read_reference(one_set)["small-k-11-s0003"]
    assert "milp-scip:" in row["proved_by"]
    assert row["status"] == "optimal"
    again = main(["library", "refs", str(one_set), "--config", str(config), "--no-heuristics"])
    assert again == 0
    assert sum(r["config"] == "refute" for r in read_ledger(one_set)) == 1  # resumed, not redone


def test_library_refs_refutes_several_instances_at_once(tmp_path: Path) -> None:
    """With ``--jobs 2`` two refutations run side by side; each gets its own cutoff and
    ledger row, and both instances gain their second proof."""
    from balance_opt.cli import main

    folder = tmp_path / "fig6"
    folder.mkdir()
    stems = ["small-k-11-s0003", "small-k-11-s0004"]
    for stem in stems:
        shutil.copy(LIBRARY / "fig6" / f"{stem}.json", folder)
    config = tmp_path / "refute.toml"
    config.write_text('solver = "milp-scip"\n[options]\ncutoff = "best-known"\nz_time_limit = 60\n')
    assert main(["library", "refs", str(folder), "--heuristic", "balance"]) == 0
    args = ["library", "refs", str(folder), "--config", str(config), "--no-heuristics", "--jobs", "2"]
    assert main(args) == 0
    rows = read_reference(folder)
    refutes = [r for r in read_ledger(folder) if r["config"] == "refute"]
    assert sorted(r["instance"] for r in refutes) == stems
    for r in refutes:
        assert r["bound"] == rows[r["instance"]]["best_known"]
        assert "milp-scip:" in rows[r["instance"]]["proved_by"]


def test_a_refutation_that_beats_a_claimed_optimum_stops_loudly(
    one_set: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stored schedule one below the optimum, "proved" optimal by a wrong ledger row."""
    import csv
    import json

    from balance_opt.cli import main

    assert main(["library", "refs", str(one_set), "--heuristic", "balance"]) == 0
    row = read_reference(one_set)["small-k-11-s0003"]
    inst_opt = int(row["best_known"])
    doc_path = one_set / row["solution"]

    doc = json.loads(doc_path.read_text())
    first = next(u for u, m in doc["assignment"].items() if m != "none")
    doc["assignment"][first] = "none"
    doc["served"] = inst_opt - 1
    doc_path.write_text(json.dumps(doc))
    ledger = read_ledger(one_set)
    fake = {**ledger[0], "config": "exact", "solver": "exact", "config_hash": "f" * 16, "status": "optimal",
            "served": str(inst_opt - 1), "bound": str(inst_opt - 1)}  # fmt: skip
    with (one_set / "attempts.csv").open("a", newline="") as fh:
        csv.DictWriter(fh, fieldnames=list(fake)).writerow(fake)
    config = tmp_path / "refute.toml"
    config.write_text('solver = "milp-scip"\n[options]\ncutoff = "best-known"\n')
    assert main(["library", "refs", str(one_set), "--config", str(config), "--no-heuristics"]) == 1
    assert "CONTRADICTION" in capsys.readouterr().err
