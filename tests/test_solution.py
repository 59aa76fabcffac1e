"""The solution document (balance_opt/solution.py) against docs/formats.md restated.

The twin of the writer is the document spelled out field by field in the fixed order of
docs/formats.md; the twin of the rules is the formats page's table read literally. Hypothesis
draws results, claims and messages for both.
"""

from __future__ import annotations

import pickle
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from balance_opt.batch.configs import make_config
from balance_opt.batch.task import Task, bad_instance_solution, load_task_instance, make_task, run_record
from balance_opt.claims import Claims
from balance_opt.errors import InputError
from balance_opt.evaluator import Schedule
from balance_opt.files import dumps, parse_json, read_bytes, sha256_bytes
from balance_opt.instance import Instance
from balance_opt.io import instance_bytes
from balance_opt.result import SolverOutput, make_result, unsolved_result
from balance_opt.solution import (
    SOLUTION_SCHEMA,
    RunRecord,
    Solution,
    SolutionFile,
    broken_rule,
    check_solution_dict,
    recorded_options,
)
from balance_opt.status import Status, Termination
from tests.strategies import instances_and_schedules

LIBRARY = Path(__file__).resolve().parents[1] / "instances" / "paper"
SHA = "ab" * 32
# docs/formats.md, "What balance-opt's solvers write": the fixed order, then the optional fields
WRITTEN_ORDER = (
    "schema", "version", "instance", "instance_sha256", "solver", "options", "status", "served",
    "bound", "z", "lambda", "assignment", "runtime_s", "feasible", "termination",
)  # fmt: skip


def literal_document(res: Solution, inst: Instance, sha: str, run: RunRecord | None) -> dict[str, Any]:
    """The document of ``res`` spelled out, one field at a time, in docs/formats.md's order."""
    doc: dict[str, Any] = {"schema": "balance-opt/solution", "version": 1}
    doc["instance"] = inst.name
    doc["instance_sha256"] = sha
    doc["solver"] = res.solver
    doc["options"] = dict(res.options)
    doc["status"] = str(res.status)
    doc["served"] = res.served
    doc["bound"] = res.bound
    doc["z"] = res.schedule.z
    doc["lambda"] = res.lam
    names = ("none", "ad", "sd")
    doc["assignment"] = {u: names[m] for u, m in zip(inst.user_ids, res.schedule.modes.tolist(), strict=True)}
    doc["runtime_s"] = res.runtime_s
    doc["feasible"] = res.evaluation.feasible
    doc["termination"] = str(res.termination)
    if res.error is not None:
        doc["error"] = res.error
    if res.stats:
        doc["stats"] = dict(res.stats)
    if run is not None:
        doc["run"] = {
            "config": run.config, "config_hash": run.config_hash, "instance_file": run.instance_file,
            "stem": run.stem, "users": run.users, "generator": run.generator, "host": run.host,
            "version": run.version, "commit": run.commit,
        }  # fmt: skip
    return doc


def rules_restated(doc: dict[str, Any], strict: bool) -> str | None:
    """docs/formats.md's rules, literally: the field of the first one broken."""
    status, served, bound = doc.get("status"), doc.get("served"), doc.get("bound")
    if status == "error" and served not in (None, 0):
        return "served"  # "0 when status is error"
    if status == "optimal" and served is not None and "bound" in doc and bound != served:
        return "bound"  # "must equal served when status is optimal and both are given"
    if status == "error" and doc.get("error") is None:
        return "error"  # "required when status is error"
    if strict and status != "error" and doc.get("error") is not None:
        return "error"  # balance-opt writes a message only with status error
    return None


RUNS = st.none() | st.builds(
    RunRecord,
    config=st.sampled_from(["ad-only", "exact-300s"]),
    config_hash=st.just("0123456789abcdef"),
    instance_file=st.just("inst/x.json"),
    stem=st.just("x"),
    users=st.none() | st.integers(1, 9),
    generator=st.none() | st.just({"preset": "fig4", "seed": 1}),
    host=st.just("h"),
    version=st.just("0.1.0"),
    commit=st.none() | st.just("abc1234"),
)
TERMINATIONS = st.sampled_from([Termination.OPTIMAL, Termination.COMPLETED, Termination.TIME_LIMIT])
FAILURES = st.sampled_from([Termination.REFUSED, Termination.CRASHED, Termination.KILLED])
COUNTS = st.none() | st.integers(0, 8)


@settings(max_examples=150, deadline=None)
@given(instances_and_schedules(), TERMINATIONS, COUNTS, COUNTS, st.booleans(), FAILURES, RUNS)
def test_the_writer_against_the_document_spelled_out(
    pair: tuple[Instance, Schedule],
    termination: Termination,
    objective: int | None,
    bound: int | None,
    unsolved: bool,
    failure: Termination,
    run: RunRecord | None,
) -> None:
    inst, schedule = pair
    if unsolved:
        res = unsolved_result(inst, "hand", {"seed": 3}, 0.5, failure, "it went wrong")
    else:
        out = SolverOutput(schedule, termination, lam=0.3, bound=bound, objective=objective, stats={"n": 1})
        res = make_result(inst, "hand", {"seed": 3}, out, 0.25)
    # the record in process: the evaluator's detail, the schedule solved
    assert res.evaluation is not None
    assert res.evaluation.feasible == res.feasible
    assert res.schedule.z == schedule.z or unsolved
    assert np.array_equal(res.schedule.modes, schedule.modes) or unsolved
    sol = res.for_file(SHA, run)
    assert sol.evaluation is None  # a batch worker sends no per-user detail back
    doc = sol.to_dict()
    assert doc == literal_document(res, inst, SHA, run)
    assert tuple(doc)[: len(WRITTEN_ORDER)] == WRITTEN_ORDER
    # one reader: the bytes read back are the record, and written again the same bytes
    back = Solution.from_dict(parse_json(dumps(doc), "s.json"), "s.json")
    assert back == sol
    assert dumps(back.to_dict()) == dumps(doc)
    check_solution_dict(doc, "s.json", inst)
    # an in-process solve knows no instance file: its document names the instance only
    alone = res.to_dict()
    assert "instance_sha256" not in alone
    assert alone == {k: v for k, v in replace(sol, run=None).to_dict().items() if k != "instance_sha256"}
    assert Solution.from_dict(alone).instance_sha256 is None


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(list(Status)),
    st.integers(0, 4),
    st.none() | st.integers(0, 4),
    st.none() | st.sampled_from(["", "it failed"]),
)
def test_the_rules_once_for_records_results_and_files(
    status: Status, served: int, bound: int | None, error: str | None
) -> None:
    """A Solution and a solution file obey the same rules (a file may keep a stray message)."""
    doc: dict[str, Any] = {"status": str(status), "served": served, "bound": bound}
    if error is not None:
        doc["error"] = error
    for strict in (True, False):
        broken = broken_rule(Claims.of_document(doc), error, strict=strict)
        assert (None if broken is None else broken[0]) == rules_restated(doc, strict)
    strict_field = rules_restated(doc, strict=True)
    fields = dict(solver="s", options={}, status=status, served=served, bound=bound, z=0.5, lam=None)
    fields |= dict(assignment={}, runtime_s=0.0, feasible=True, termination=Termination.COMPLETED)
    if strict_field is None:
        Solution("x", SHA, **fields, error=error)  # type: ignore[arg-type]
    else:
        with pytest.raises(ValueError, match=f"^{strict_field}: "):
            Solution("x", SHA, **fields, error=error)  # type: ignore[arg-type]
    file = {"schema": "balance-opt/solution", "version": 1, "instance": "x", "z": 0.5, "assignment": {}}
    loose = rules_restated(doc, strict=False)
    if loose is None:
        check_solution_dict({**file, **doc})
    else:
        with pytest.raises(InputError) as info:
            check_solution_dict({**file, **doc}, "f.json")
        assert info.value.path == loose


def test_every_stored_library_schedule_reads_as_a_solution_and_writes_the_same_bytes() -> None:
    paths = sorted(LIBRARY.glob("*/solutions/*.json"))
    assert len(paths) > 100
    for path in paths:
        assert dumps(Solution.read(path).to_dict()).encode() == path.read_bytes(), path


@pytest.mark.parametrize(
    ("change", "where", "rule"),
    [
        (lambda d: d.pop("solver"), "solver", "is required but missing"),
        (lambda d: d.pop("runtime_s"), "runtime_s", "is required but missing"),
        (lambda d: d.update(error="stray"), "error", 'goes only with status "error"'),
        (lambda d: d.update(stats=[1]), "stats", "must be a JSON object"),
        (lambda d: d["run"].pop("stem"), "run.stem", "is required but missing"),
        (lambda d: d["run"].update(users="many"), "run.users", "must be an integer"),
    ],
)
def test_a_document_balance_opt_did_not_write_is_refused_by_the_typed_reader(
    change: Any, where: str, rule: str
) -> None:
    run = RunRecord("c", "0" * 16, "i.json", "i", 2, None, "h", "v", None)
    doc = Solution("i", SHA, "s", {}, Status.FEASIBLE, 2, None, 0.5, None, {}, 0.1, True,
                   Termination.COMPLETED, run=run).to_dict()  # fmt: skip
    check_solution_dict(doc)
    change(doc)
    with pytest.raises(InputError) as info:
        Solution.from_dict(doc, "f.json")
    assert (info.value.source, info.value.path) == ("f.json", where)
    assert rule in info.value.rule


def test_an_unreadable_instance_has_every_field_of_a_crash() -> None:
    from balance_opt.generator import generate

    inst = generate("fig4", users=3, seed=1)
    data = instance_bytes(inst)
    cfg = make_config("ad-only", time_limit_s=2.0, seed=4)
    task = make_task(cfg, inst, "i.json", sha256_bytes(data), "i", key=(2, 5))
    sol = bad_instance_solution(task, "i.json: name: is required but missing")
    bad = sol.to_dict()
    crash = unsolved_result(inst, "ad-only", task.options(), 0.1, Termination.CRASHED, "boom")
    assert list(bad) == list(crash.for_file(task.sha256, run_record(task, inst)).to_dict())
    assert bad["options"] == recorded_options(cfg.options, 4, 2.0) == {"seed": 4, "time_limit_s": 2.0}
    assert (bad["status"], bad["termination"], bad["run"]["users"]) == ("error", "refused", None)
    # a task is a frozen record that crosses process boundaries whole
    again = pickle.loads(pickle.dumps(task))
    assert again == task
    assert isinstance(again, Task)
    # the parsed instance travels, not a path; its arrays arrive read-only as they left
    arrived = load_task_instance(again)
    assert arrived == inst
    assert arrived is not inst
    assert not arrived.input_tokens.flags.writeable
    assert again.pair == "i / ad-only"
    with pytest.raises(AttributeError):
        task.key = (0, 0)  # type: ignore[misc]
    assert Solution.from_dict(bad) == sol
    assert sol.summary() == (
        "i ad-only: error served=0 z=0 feasible=false 0.000s (i.json: name: is required but missing)"
    )


def test_a_written_solution_reads_back_as_the_same_record(tmp_path: Path) -> None:
    """The batch's file and the typed reader: what a rerun reads is what was written."""
    from balance_opt.files import atomic_write

    sol = Solution("i", SHA, "s", {"seed": 0}, Status.OPTIMAL, 2, 2, 0.5, 0.1, {"u0": "ad", "u1": "sd"},
                   0.1, True, Termination.OPTIMAL, stats={"nodes": 3})  # fmt: skip
    path = atomic_write(tmp_path / "s.json", dumps(sol.to_dict()))
    assert Solution.read(path) == sol
    assert parse_json(read_bytes(path), str(path))["stats"] == {"nodes": 3}


def test_a_file_from_elsewhere_reads_as_a_partial_record(tmp_path: Path) -> None:
    """Only the required fields: every optional one is None, and nothing is claimed."""
    minimal = {"schema": SOLUTION_SCHEMA, "version": 1, "instance": "i", "z": 1, "assignment": {"u": "ad"}}
    sol = SolutionFile.from_dict(minimal, "m.json")
    assert (sol.instance, sol.z, dict(sol.assignment)) == ("i", 1, {"u": "ad"})
    assert (sol.instance_sha256, sol.solver, sol.status, sol.served, sol.bound) == (None,) * 5
    assert (sol.feasible, sol.error, sol.bound_given) == (None, None, False)
    assert sol.claims() == Claims.of_document(minimal) == Claims()
    full = {**minimal, "solver": "x", "status": "optimal", "served": 1, "bound": 1, "feasible": True}
    path = tmp_path / "full.json"
    path.write_text(dumps(full))
    back = SolutionFile.read(path)
    assert back.claims() == Claims.of_document(full)
    assert (back.solver, back.status) == ("x", Status.OPTIMAL)
    with pytest.raises(InputError) as info:
        SolutionFile.from_dict({**minimal, "status": "optimal", "served": 1, "bound": 2}, "b.json")
    assert info.value.source == "b.json"
