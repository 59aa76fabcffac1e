"""The journal of MILP proofs (the MILP option ``journal``), held to the solves it stands for.

A journaled refutation replayed must end exactly as the solves it replays did (its slow
twin: the same refutation solved again), a replay must never touch the backend, and the
key must change with any number of the model.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from balance_opt.clock import NEVER
from balance_opt.errors import InputError
from balance_opt.evaluator import Schedule, evaluate
from balance_opt.instance import Instance
from balance_opt.solvers import get_solver
from balance_opt.solvers.milp.formulation import BackendResult, build
from balance_opt.solvers.milp.journal import Journal, journaled, model_key, replays
from balance_opt.solvers.milp.linear import Formulation, Row
from balance_opt.solvers.milp.options import SPLITS_BY
from balance_opt.solvers.milp.z_sweep import _Incumbent, _refute_by_parts
from tests.oracles import brute_p1
from tests.strategies import small_instances
from tests.test_refute import optimum_at, refutation_at
from tests.test_refute_bisect import stalling_scip

pytest.importorskip("pyscipopt")

TINY = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def never(f: Formulation, limit: float | None, start: Any, strict: bool) -> BackendResult:
    raise AssertionError("a replayed refutation called the backend")


def outcome(record: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """A split's record without its timings."""
    return [(p["bound"], p["timed_out"], p.get("bisected", False), p["depth"]) for p in record]


@pytest.mark.parametrize("by", SPLITS_BY)
@TINY
@given(small_instances(max_users=4), st.integers(2, 3), st.integers(0, 4), st.data())
def test_a_replayed_refutation_ends_as_the_solves_it_replays(
    tmp_path_factory: pytest.TempPathFactory,
    by: str,
    inst: Instance,
    parts: int,
    stalls: int,
    data: st.DataObject,
) -> None:
    """Parts stalled (time-outs, then bisected) and parts proved: the replay records the
    same parts with the same bounds and bisections, and calls no backend."""
    z = data.draw(st.sampled_from(inst.server.z_grid))
    floor = optimum_at(inst, z)  # refuted: no part holds a schedule, every solve is journaled
    journal = Journal(tmp_path_factory.mktemp("journal"))
    runs = []
    for backend in (stalling_scip(stalls, None), never):
        st_z, options = refutation_at(inst, z, floor, parts, by, depth=2)
        options = replace(options, z_time_limit=60.0)  # a stopped solve is replayed only with a limit
        nobody = Schedule.empty(inst.num_users, z)
        empty = _Incumbent(nobody, nobody, 0, "empty", claimed=0)
        inc = _refute_by_parts(
            inst, journaled(backend, journal, "milp-scip"), st_z, empty, floor, NEVER, options
        )
        runs.append((outcome(st_z.stats["split"]), st_z.bound, st_z.done, inc.served))
    assert runs[0] == runs[1]
    assert journal.replayed == journal.recorded == len(runs[0][0])


@TINY
@given(small_instances(max_users=4))
def test_the_journal_keeps_proofs_across_solves_of_the_milp_solvers(
    tmp_path_factory: pytest.TempPathFactory, inst: Instance
) -> None:
    """Through the ``journal`` option: a refutation of the optimum,
    solved, then replayed, agrees with the same refutation without a journal; one below the
    optimum still brings back a schedule serving the optimum (schedules are never journaled)."""
    opt = brute_p1(inst)[0]
    folder = tmp_path_factory.mktemp("journal")
    options = {"cutoff": opt, "z_time_limit": 60, "split": 2, "split_by": "limits", "warm_start": False}
    plain = get_solver("milp-scip", **options).solve(inst)
    options["journal"] = str(folder)
    first = get_solver("milp-scip", **options).solve(inst)
    second = get_solver("milp-scip", **options).solve(inst)
    below = get_solver("milp-scip", **{**options, "cutoff": max(0, opt - 1)}).solve(inst) if opt else None
    assert plain.bound == first.bound == second.bound == opt
    assert all(r.stats["refuted"] for r in (plain, first, second))
    assert first.stats["journal"]["replayed"] == 0
    assert second.stats["journal"]["recorded"] == 0
    assert second.stats["journal"]["replayed"] == first.stats["journal"]["recorded"]
    if below is not None:
        assert not below.stats["refuted"]
        assert evaluate(inst, below.schedule).served == below.served == opt
    for path in folder.rglob("*.json"):
        assert json.loads(path.read_text())["termination"] in ("infeasible", "time_limit")


@given(small_instances(max_users=4), st.data())
def test_the_key_changes_with_any_number_of_the_model(inst: Instance, data: st.DataObject) -> None:
    z = data.draw(st.sampled_from(inst.server.z_grid))
    f = build(inst, z)
    assume(f.rows)
    key = model_key(f, "milp-scip")
    assert model_key(build(inst, z), "milp-scip") == key  # the same model, built again
    assert model_key(f, "milp-highs") != key
    n = data.draw(st.integers(0, len(f.rows) - 1))
    row = f.rows[n]
    what = data.draw(st.sampled_from(["rhs", "coef", "name", "unit", "drop"]))
    if what == "rhs":
        changed = replace(row, rhs=float(np.nextafter(row.rhs, np.inf)))
    elif what == "coef" and row.coef:
        changed = replace(row, coef=(float(np.nextafter(row.coef[0], np.inf)), *row.coef[1:]))
    elif what == "name":
        changed = replace(row, name=row.name + "'")
    elif what == "unit":
        changed = replace(row, unit=row.unit + "'")
    else:
        changed = None
    rows: list[Row] = [*f.rows[:n], *([] if changed is None else [changed]), *f.rows[n + 1 :]]
    assert model_key(replace(f, rows=rows), "milp-scip") != key
    assert model_key(replace(f, rows=[*f.rows, row]), "milp-scip") != key  # one more row
    var = f.vars[0]
    for other in (replace(var, role=var.role + "'"), replace(var, ub=float(np.nextafter(var.ub, -np.inf)))):
        assert model_key(replace(f, vars=[other, *f.vars[1:]]), "milp-scip") != key


def test_a_stopped_solve_stands_only_for_one_with_as_much_time_on_the_same_clock() -> None:
    proof = {"termination": "infeasible", "time_limit": 1.0, "clock": "wall"}
    stopped = {"termination": "time_limit", "time_limit": 120.0, "clock": "cpu", "bound": 40.0}
    assert all(replays(proof, limit, clock) for limit, clock in ((500.0, "cpu"), (None, None)))
    assert all(replays(stopped, limit, "cpu") for limit in (120.0, 121.0))
    assert not replays(stopped, 130.0, "cpu")
    assert not replays(stopped, 120.0, "wall")
    assert not replays(stopped, None, "cpu")


def test_a_malformed_entry_names_its_file(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    key = "ab" + "0" * 62
    journal.path(key).parent.mkdir(parents=True)
    journal.path(key).write_text("{not json")
    with pytest.raises(InputError, match=str(journal.path(key))):
        journal.get(key)
    journal.path(key).write_text(
        json.dumps({"format": "balance-opt-journal/1", "key": key, "termination": "optimal"})
    )
    with pytest.raises(InputError, match="termination"):
        journal.get(key)
    journal.path(key).write_text(
        json.dumps({"format": "balance-opt-journal/1", "key": "cd", "termination": "infeasible"})
    )
    with pytest.raises(InputError, match="key"):
        journal.get(key)


def test_library_refs_keeps_its_journal_and_says_so(tmp_path: Path) -> None:
    import shutil

    from balance_opt.cli import main
    from tests.test_refute import LIBRARY

    folder = tmp_path / "fig6"
    folder.mkdir()
    shutil.copy(LIBRARY / "fig6" / "small-k-11-s0003.json", folder)
    config = tmp_path / "refute.toml"
    config.write_text(
        'solver = "milp-scip"\n[options]\ncutoff = "best-known"\nz_time_limit = 60\nsplit = 2\n'
    )
    assert main(["library", "refs", str(folder), "--heuristic", "balance"]) == 0
    journal = tmp_path / "journal"
    args = [
        "library",
        "refs",
        str(folder),
        "--config",
        str(config),
        "--no-heuristics",
        "--journal",
        str(journal),
    ]
    environment = dict(os.environ)
    assert main(args) == 0
    assert dict(os.environ) == environment  # the journal travels as an option, not in the environment
    assert any(journal.rglob("*.json"))
    assert f"--journal {journal}" in (folder / "README.md").read_text()
    (tmp_path / "file").write_text("")
    assert main([*args[:-1], str(tmp_path / "file")]) == 2


def test_a_journal_option_naming_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(InputError, match="names a file, not a folder"):
        Journal.at(tmp_path / "file")
    assert Journal.at(tmp_path / "new").folder == tmp_path / "new"  # made when first written
