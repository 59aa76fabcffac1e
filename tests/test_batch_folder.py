"""A run folder: one writer at a time, unique file names, named errors, no silent overwrite, progress."""

from __future__ import annotations

import io
import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from balance_opt.batch.configs import make_config
from balance_opt.batch.folder import RunFolderError, hold_run_folder
from balance_opt.batch.progress import Progress
from balance_opt.batch.runner import ChangedPairs, run_batch, solution_name
from balance_opt.evaluator import Schedule
from balance_opt.generator import generate
from balance_opt.io import write_instance
from balance_opt.solvers import register, unregister
from tests.doubles import registered

REPO = Path(__file__).resolve().parents[1]


def one_instance(folder: Path, stem: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stem}.json"
    write_instance(generate("fig4", users=3, seed=1), path)
    return path


def test_names_with_the_separator_never_collide(tmp_path: Path) -> None:
    """Instances a, a__b with configurations c, b__c: 4 solves, 4 files (3 before)."""
    paths = [one_instance(tmp_path / "inst", "a"), one_instance(tmp_path / "inst", "a__b")]
    with registered("test-empty"):
        configs = [make_config("test-empty", name="c"), make_config("test-empty", name="b__c")]
        out = run_batch(paths, configs, tmp_path / "run", progress=False)
    assert out.solved == 4
    names = sorted(p.name for p in (tmp_path / "run" / "solutions").glob("*.json"))
    assert len(names) == 4
    assert solution_name("a", configs[0]) == "a__c.json"  # plain names as before
    assert len(set(names)) == 4
    with registered("test-empty"):
        again = run_batch(paths, configs, tmp_path / "run", progress=False, force=False)
    assert (again.solved, again.skipped) == (0, 4)


def test_a_held_folder_stops_a_second_batch_naming_it(tmp_path: Path) -> None:
    inst = one_instance(tmp_path / "inst", "x")
    run = tmp_path / "run"
    with hold_run_folder(run), pytest.raises(RunFolderError) as err:
        run_batch([inst], [make_config("ad-only")], run, progress=False)
    assert str(run) in str(err.value)
    assert "in use by another balance-opt solve (process" in str(err.value)
    assert run_batch([inst], [make_config("ad-only")], run, progress=False).solved == 1  # released


def test_out_that_is_a_file_names_the_path(tmp_path: Path) -> None:
    inst = one_instance(tmp_path / "inst", "x")
    blocker = tmp_path / "file"
    blocker.write_text("")
    for out in (blocker, blocker / "run"):  # a file where a folder must be (root ignores modes)
        with pytest.raises(RunFolderError, match=str(blocker)):
            run_batch([inst], [make_config("ad-only")], out, progress=False)


def test_another_time_limit_is_not_overwritten_without_force(tmp_path: Path) -> None:
    inst = one_instance(tmp_path / "inst", "x")
    run = tmp_path / "run"
    run_batch([inst], [make_config("ad-only", time_limit_s=10.0)], run, progress=False)
    before = (run / "solutions" / "x__ad-only.json").read_bytes()
    with pytest.raises(
        ChangedPairs, match=r"x / ad-only: the configuration hash changed: time_limit_s 10.0 -> 20.0"
    ):
        run_batch([inst], [make_config("ad-only", time_limit_s=20.0)], run, progress=False, force=False)
    assert (run / "solutions" / "x__ad-only.json").read_bytes() == before
    said: list[str] = []
    out = run_batch([inst], [make_config("ad-only", time_limit_s=20.0)], run, progress=False, say=said.append)
    assert out.solved == 1
    assert "time_limit_s 10.0 -> 20.0" in said[0]


def test_bad_inputs_become_named_error_rows(tmp_path: Path) -> None:
    folder = tmp_path / "inst"
    good = one_instance(folder, "good")
    (folder / "deep.json").write_text("[" * 600 + "]" * 600)  # RecursionError in some parsers
    doc = json.loads(good.read_text())
    doc["users"][0]["deadline_s"] = 10**400  # too large for a float
    (folder / "huge.json").write_text(json.dumps(doc))
    out = run_batch([folder], [make_config("ad-only")], tmp_path / "run", progress=False)
    rows = {s.instance: s for s in out.solutions}
    assert rows[doc["name"]].status == "feasible"  # a good file is named by its instance
    for stem in ("deep", "huge"):
        assert rows[stem].status == "error"
        assert f"{stem}.json" in (rows[stem].error or "")


def test_stats_json_cannot_hold_become_an_error_row(tmp_path: Path) -> None:
    inst = one_instance(tmp_path / "inst", "x")
    register("test-nan-stats", "tests.test_batch_folder:NanStats")
    register("test-object-stats", "tests.test_batch_folder:ObjectStats")
    configs = [make_config("test-nan-stats"), make_config("test-object-stats"), make_config("ad-only")]
    try:
        out = run_batch([inst], configs, tmp_path / "run")
    finally:
        unregister("test-nan-stats")
        unregister("test-object-stats")
    ok, nan, bad = sorted(out.solutions, key=lambda s: s.solver)
    assert ok.status == nan.status == "feasible"
    # numpy numbers become Python numbers, NaN its name: the schedule is the answer, not the stats
    assert nan.stats == {"gap": "nan", "n": 3}
    assert bad.status == "error"
    assert bad.solver == "test-object-stats"
    assert "cannot be written as JSON" in (bad.error or "")
    assert len(list((tmp_path / "run" / "solutions").glob("*.json"))) == 3


def test_plain_progress_lines_off_a_terminal() -> None:
    now = [0.0]
    stream = io.StringIO()
    bar = Progress(3, None, stream=stream, interval_s=5.0, clock=lambda: now[0])
    now[0] = 1.0
    bar.update(failed=True)  # within the interval: quiet
    now[0] = 6.0
    bar.update(failed=False)
    now[0] = 7.0
    bar.update(failed=False)
    bar.close()
    lines = stream.getvalue().splitlines()
    assert lines == [
        "balance-opt solve: 2/3 done, 1 failed, about 3s left",
        "balance-opt solve: 3/3 done, 1 failed",
    ]


def test_a_piped_batch_prints_progress_on_stderr_only(tmp_path: Path) -> None:
    one_instance(tmp_path / "inst", "x")
    one_instance(tmp_path / "inst", "y")
    args = ["solve", str(tmp_path / "inst"), "--solver", "ad-only", "--out", str(tmp_path / "run")]
    code = f"import sys; from balance_opt import cli; sys.exit(cli.main({args!r}))"
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout == ""  # standard output stays free for --json
    assert "balance-opt solve: 2/2 done, 0 failed" in res.stderr.splitlines()


from tests.doubles import EmptySolver  # noqa: E402


class NanStats(EmptySolver):
    """A plug-in whose stats hold NaN and a numpy integer."""

    name = "test-nan-stats"

    def _solve(self, instance, *, time_limit, seed, hint):  # type: ignore[no-untyped-def]
        import numpy as np

        out = super()._solve(instance, time_limit=time_limit, seed=seed, hint=hint)
        return type(out)(out.schedule, out.termination, stats={"gap": float("nan"), "n": np.int64(3)})


class ObjectStats(EmptySolver):
    """A plug-in whose stats hold an object JSON has no form for."""

    name = "test-object-stats"

    def _solve(self, instance, *, time_limit, seed, hint):  # type: ignore[no-untyped-def]
        out = super()._solve(instance, time_limit=time_limit, seed=seed, hint=hint)
        return type(out)(out.schedule, out.termination, stats={"when": object()})


def test_table_writes_wait_ten_times_their_cost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A table that takes 0.5 s to write is rewritten at most every 5 s, not every second."""
    from balance_opt.batch import table

    clock = [0.0]
    writes: list[float] = []

    def slow_write(run_dir: Path, rows: object) -> None:
        writes.append(clock[0])
        clock[0] += 0.5

    monkeypatch.setattr(table.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(table, "write_table", slow_write)
    writer = table.TableWriter(tmp_path, interval_s=1.0)
    for i in range(200):  # an answer every 0.1 s for 20 s
        clock[0] += 0.1
        writer.rows[str(i)] = {}
        writer._dirty = True
        writer.flush(force=False)
    gaps = [b - a for a, b in itertools.pairwise(writes)]
    assert writes
    assert min(gaps) >= 5.0
    assert len(writes) <= 6


class ZOutOfRange(EmptySolver):
    """A plug-in whose schedule has a compute fraction outside [0, 1]."""

    name = "test-z-out-of-range"

    def _solve(self, instance, *, time_limit, seed, hint):  # type: ignore[no-untyped-def]
        out = super()._solve(instance, time_limit=time_limit, seed=seed, hint=hint)
        return type(out)(Schedule(1.5, out.schedule.modes), out.termination)


def test_an_answer_the_file_cannot_hold_is_an_error_row_a_rerun_reads_back(tmp_path: Path) -> None:
    inst = one_instance(tmp_path / "inst", "x")
    register("test-z-out-of-range", "tests.test_batch_folder:ZOutOfRange")
    try:
        out = run_batch([inst], [make_config("test-z-out-of-range")], tmp_path / "run", progress=False)
        again = run_batch([inst], [make_config("test-z-out-of-range")], tmp_path / "run", force=False)
    finally:
        unregister("test-z-out-of-range")
    (sol,) = out.solutions
    assert (sol.status, sol.solver) == ("error", "test-z-out-of-range")
    assert "its answer breaks a rule of the solution file" in (sol.error or "")
    assert "x / test-z-out-of-range: z: must be a finite number in [0, 1], got 1.5" in (sol.error or "")
    assert (again.solved, again.skipped) == (0, 1)  # its file reads back: the pair is done
    assert again.solutions == [sol]
