"""Batch runner: resume, failure rows, crash safety (real kill -9), executors, configurations."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from balance_opt import solvers
from balance_opt.batch.configs import load_config, make_config, resolve_configs
from balance_opt.batch.pool import LocalPool
from balance_opt.batch.runner import run_batch
from balance_opt.batch.table import read_results
from balance_opt.errors import InputError
from balance_opt.generator import generate
from balance_opt.io import read_solution, write_instance
from tests.doubles import registered

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def doubles() -> Iterator[None]:
    with registered():
        yield


def make_instances(folder: Path, count: int, users: int = 4) -> Path:
    for seed in range(1, count + 1):
        write_instance(generate("fig4", users=users, seed=seed), folder / f"fig4-K{users}-s{seed:04d}.json")
    return folder


def table(run: Path) -> pd.DataFrame:
    df = pd.read_parquet(run / "results.parquet")
    csv = pd.read_csv(run / "results.csv")
    assert len(csv) == len(df)
    return df


def test_resume_skips_done_pairs_and_redoes_changed_configs(tmp_path: Path) -> None:
    inst = make_instances(tmp_path / "inst", 3)
    configs = [make_config("ad-only"), make_config("test-empty")]
    first = run_batch([inst], configs, tmp_path / "run")
    assert (first.solved, first.skipped) == (6, 0)
    again = run_batch([inst], configs, tmp_path / "run")
    assert (again.solved, again.skipped) == (0, 6)
    changed = [make_config("ad-only"), make_config("test-empty", {"sleep_s": 0.01})]
    third = run_batch([inst], changed, tmp_path / "run")
    assert (third.solved, third.skipped) == (3, 3)
    df = table(tmp_path / "run")
    assert len(df) == 6
    assert not df.duplicated(["instance", "config"]).any()
    assert set(df["status"]) == {"feasible"}
    ad = df[df["config"] == "ad-only"]
    assert (ad["K"] == 4).all()
    assert (ad["gen_preset"] == "fig4").all()
    assert (df.loc[df["config"] == "test-empty", "nodes"] == 7).all()
    assert df["host"].notna().all()
    assert df["version"].notna().all()


def test_failures_become_rows_and_the_batch_goes_on(tmp_path: Path) -> None:
    inst = make_instances(tmp_path / "inst", 2)
    (inst / "broken.json").write_text('{"schema": "balance-opt/instance", "version": 1}')
    configs = [
        make_config("test-raise"),
        make_config("test-exit"),
        make_config("test-sigkill"),
        make_config("test-sleep", time_limit_s=0.2),
        make_config("ad-only"),
    ]
    out = run_batch([inst], configs, tmp_path / "run", executor=LocalPool(jobs=2, grace_s=0.5))
    df = table(tmp_path / "run").set_index(["instance", "config"])
    assert len(df) == 15
    for stem in ("fig4-K4-s0001", "fig4-K4-s0002"):
        assert "boom from the solver" in df.loc[(stem, "test-raise"), "error"]
        assert df.loc[(stem, "test-raise"), "status"] == "error"
        assert "exit code 3" in df.loc[(stem, "test-exit"), "error"]
        assert "SIGKILL" in df.loc[(stem, "test-sigkill"), "error"]
        slow = df.loc[(stem, "test-sleep")]
        assert slow["status"] == "time_limit"
        assert slow["served"] == 0
        assert 0.2 <= slow["runtime_s"] < 10
        assert df.loc[(stem, "ad-only"), "status"] == "feasible"
        assert df.loc[(stem, "ad-only"), "served"] >= 1
    for config in ("test-raise", "ad-only"):
        row = df.loc[("broken", config)]
        assert row["status"] == "error"
        assert "name: is required but missing" in row["error"]
    assert out.statuses["error"] == 3 * 2 + 5  # three failing doubles, and the broken file x 5
    # every solution file is a valid docs/formats.md document; no temporary file is left behind
    why: dict[tuple[str, str], str] = {}
    fields: dict[tuple[str, str], list[str]] = {}
    for path in (tmp_path / "run" / "solutions").iterdir():
        assert path.suffix == ".json", path
        doc = read_solution(path).document
        why[doc["run"]["stem"], doc["run"]["config"]] = doc["termination"]
        fields[doc["run"]["stem"], doc["run"]["config"]] = list(doc)
    # one writer: an unreadable instance's document has a crash's fields, in the same order
    assert fields["broken", "test-raise"] == fields["fig4-K4-s0001", "test-raise"]
    # the termination tells the failures apart: crashed, killed, refused (a bad file)
    crashed = {c: "crashed" for c in ("test-raise", "test-exit", "test-sigkill")}
    for config, termination in {**crashed, "test-sleep": "killed", "ad-only": "completed"}.items():
        assert why["fig4-K4-s0001", config] == why["fig4-K4-s0002", config] == termination
    assert why["broken", "test-raise"] == "refused"


def test_a_file_that_is_no_solution_is_solved_again_and_gets_its_row(tmp_path: Path) -> None:
    """Done means a solution file balance-opt wrote for the pair, as the table reads it."""
    inst = make_instances(tmp_path / "inst", 1)
    config = make_config("ad-only")
    run_batch([inst], [config], tmp_path / "run")
    path = next((tmp_path / "run" / "solutions").iterdir())
    doc = json.loads(path.read_text())
    # the pair's instance digest and configuration hash, but neither z nor an assignment
    path.write_text(json.dumps({k: doc[k] for k in ("schema", "version", "instance_sha256", "run")}))
    again = run_batch([inst], [config], tmp_path / "run")
    assert (again.solved, again.skipped) == (1, 0)
    assert read_solution(path).status == "feasible"
    assert list(table(tmp_path / "run")["status"]) == ["feasible"]


def test_the_two_status_axes() -> None:
    """A schedule the evaluator rejects: the solver completed, the verdict is infeasible."""
    from balance_opt.result import unsolved_result
    from balance_opt.status import Status, Termination, Verdict

    inst = generate("fig4", users=4, seed=1)
    rejected = solvers.get_solver("test-infeasible").solve(inst)
    assert (rejected.termination, rejected.verdict, rejected.status) == (
        Termination.COMPLETED, Verdict.INFEASIBLE, Status.ERROR
    )  # fmt: skip
    assert rejected.to_dict()["termination"] == "completed"
    ok = solvers.get_solver("ad-only").solve(inst)
    assert (ok.termination, ok.verdict, ok.status) == ("completed", "feasible", "feasible")
    killed = unsolved_result(inst, "x", {}, 1.0, Termination.KILLED, "killed after 1 s")
    assert (killed.verdict, killed.status, killed.error, killed.served) == (
        Verdict.NO_SCHEDULE,
        "time_limit",
        None,
        0,
    )
    assert killed.stats == {"killed": "killed after 1 s"}
    refused = unsolved_result(inst, "x", {}, 0.0, Termination.REFUSED, "too large")
    assert (refused.status, refused.error) == ("error", "too large")


def test_table_is_rebuilt_from_solution_files(tmp_path: Path) -> None:
    inst = make_instances(tmp_path / "inst", 2)
    configs = [make_config("test-empty")]
    run_batch([inst], configs, tmp_path / "run")
    (tmp_path / "run" / "results.parquet").unlink()
    (tmp_path / "run" / "results.csv").write_text("garbage")
    again = run_batch([inst], configs, tmp_path / "run")
    assert again.solved == 0
    assert len(table(tmp_path / "run")) == 2
    assert len(read_results([tmp_path / "run"])) == 2


def test_interrupted_write_leaves_no_partial_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inst = make_instances(tmp_path / "inst", 3)
    configs = [make_config("test-empty")]
    real_replace = os.replace
    calls = []

    def flaky_replace(src: str, dst: str) -> None:
        calls.append(dst)
        if str(dst).endswith("fig4-K4-s0002__test-empty.json"):
            raise KeyboardInterrupt  # as if Ctrl-C hit between the write and the rename
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", flaky_replace)
    with pytest.raises(KeyboardInterrupt):
        run_batch([inst], configs, tmp_path / "run")
    monkeypatch.setattr(os, "replace", real_replace)
    left = sorted(p.name for p in (tmp_path / "run" / "solutions").iterdir())
    assert left == ["fig4-K4-s0001__test-empty.json"]  # no partial file, no temporary file
    again = run_batch([inst], configs, tmp_path / "run")
    assert (again.solved, again.skipped) == (2, 1)
    assert len(table(tmp_path / "run")) == 3


def _batch_script(inst: Path, run: Path, sleep_s: float) -> list[str]:
    code = (
        "import sys; from balance_opt import cli; from tests.doubles import register_all; "
        "register_all(); "
        f"sys.exit(cli.main(['solve', {str(inst)!r}, '--config', {str(run.parent / 'slow.toml')!r}, "
        f"'--out', {str(run)!r}]))"
    )
    (run.parent / "slow.toml").write_text(f'solver = "test-empty"\n[options]\nsleep_s = {sleep_s}\n')
    return [sys.executable, "-c", code]


def _wait_for_files(folder: Path, count: int, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if folder.exists() and len(list(folder.glob("*.json"))) >= count:
            return
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.05)
    raise AssertionError("the batch made no progress")


def _descendants(pid: int) -> set[int]:
    """Live descendant process ids, from /proc (Linux)."""
    parent: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(stat.parent.name)] = int(fields[1])
    out: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {c for c, p in parent.items() if p in frontier} - out
        out |= frontier
    return out


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_killed_batch_is_completed_by_a_rerun(tmp_path: Path, sig: signal.Signals) -> None:
    inst = make_instances(tmp_path / "inst", 8, users=2)
    run = tmp_path / "run"
    cmd = _batch_script(inst, run, sleep_s=0.3)
    proc = subprocess.Popen(cmd, cwd=REPO, stderr=subprocess.PIPE)
    _wait_for_files(run / "solutions", 2, proc)
    children = _descendants(proc.pid)
    assert children  # the worker pool
    proc.send_signal(sig)
    code = proc.wait(timeout=30)
    assert code == (-9 if sig == signal.SIGKILL else 130)
    end = time.monotonic() + 10
    while any(_alive(c) for c in children) and time.monotonic() < end:
        time.sleep(0.05)
    assert not [c for c in children if _alive(c)], "worker processes outlived the batch"
    done_before = len(list((run / "solutions").glob("*.json")))
    assert 2 <= done_before < 8
    rerun = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120, check=True)
    assert f"{8 - done_before} solved" in rerun.stderr
    assert f"{done_before} already done" in rerun.stderr
    df = table(run)
    assert len(df) == 8
    assert df["instance"].nunique() == 8
    assert set(df["status"]) == {"feasible"}


def test_kill_9_leaves_no_worker_behind(tmp_path: Path) -> None:
    inst = make_instances(tmp_path / "inst", 2, users=2)
    cmd = _batch_script(inst, tmp_path / "run", sleep_s=60)
    cmd[-1] = cmd[-1].replace("'--out'", "'--jobs', '2', '--out'")
    proc = subprocess.Popen(cmd, cwd=REPO, stderr=subprocess.PIPE)
    end = time.monotonic() + 30
    while len(_descendants(proc.pid)) < 3 and time.monotonic() < end:  # 2 workers + resource tracker
        time.sleep(0.05)
    time.sleep(0.5)  # the workers are inside their 60 s solves
    children = _descendants(proc.pid)
    proc.kill()
    proc.wait(timeout=10)
    end = time.monotonic() + 5
    while any(_alive(c) for c in children) and time.monotonic() < end:
        time.sleep(0.05)
    assert not [c for c in children if _alive(c)], "a worker outlived the killed batch"


def test_dask_local_cluster(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    from balance_opt.batch.dask_executor import DaskExecutor

    inst = make_instances(tmp_path / "inst", 2)
    configs = [make_config("ad-only"), make_config("test-raise")]
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
        ) as c,
        distributed.Client(c) as client,
    ):
        out = run_batch([inst], configs, tmp_path / "run", executor=DaskExecutor(client))
    assert out.solved == 4
    df = table(tmp_path / "run")
    assert sorted(df["status"]) == ["error", "error", "feasible", "feasible"]
    local = run_batch([inst], [make_config("ad-only")], tmp_path / "local")
    assert list(df.loc[df["config"] == "ad-only", "served"]) == [s.served for s in local.solutions]


def test_dask_missing_gives_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from balance_opt.batch.dask_executor import DaskExecutor
    from balance_opt.errors import UsageError

    monkeypatch.setitem(sys.modules, "distributed", None)  # import fails as if not installed
    with pytest.raises(UsageError, match=r'pip install "balance-opt\[dask\]"'):
        DaskExecutor.connect("tcp://127.0.0.1:1")


def test_configs_load_validate_and_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good = tmp_path / "ad-quick.toml"
    good.write_text('solver = "ad-only"\n[options]\nseed = 3\ntime_limit_s = 5\nimplementation = "fast"\n')
    cfg = load_config(good)
    assert (cfg.name, cfg.solver, cfg.seed, cfg.time_limit_s) == ("ad-quick", "ad-only", 3, 5.0)
    assert cfg.hash == load_config(good).hash != make_config("ad-only").hash
    assert resolve_configs(["ad-only"], None, 9)[0].time_limit_s == 9.0
    assert resolve_configs(None, [str(good)], 9)[0].time_limit_s == 5.0  # its own limit wins
    for text, rule in [
        ("solver = ", "not valid TOML"),
        ('solver = "nope"', "unknown solver"),
        ('solver = "ad-only"\n[options]\nwarp = 9', "has no option"),
        ('solver = "ad-only"\nextra = 1', "unknown key"),
        ('solver = "ad-only"\n[options]\ntime_limit_s = -1', "must be a number > 0"),
    ]:
        bad = tmp_path / "bad.toml"
        bad.write_text(text)
        with pytest.raises(InputError, match=rule):
            load_config(bad)
    monkeypatch.chdir(REPO)
    assert resolve_configs(None, ["milp-highs-60s"])[0].time_limit_s == 60.0  # a name from solvers/
    with pytest.raises(InputError, match="given twice"):
        resolve_configs(["ad-only", "ad-only"], None)


def test_shipped_configs_are_valid() -> None:
    paths = sorted((REPO / "solvers").glob("*.toml"))
    assert len(paths) >= 6
    names = set()
    for p in paths:
        try:
            cfg = load_config(p)
        except InputError as exc:
            if "cannot be loaded" in str(exc):
                continue  # a backend not yet installed here
            raise
        names.add(cfg.solver)
        assert json.dumps(cfg.to_dict())
    assert {"balance", "ad-only", "sd-only"} <= names


def test_work_counters_are_taken_or_summed_over_parts() -> None:
    from balance_opt.work import work_counter

    assert work_counter({"nodes": 7}, "nodes") == 7
    per_z = {"z_models": {"0": {"nodes": 3, "done": True}, "0.5": {"nodes": 4}, "1": {"skipped": True}}}
    assert work_counter(per_z, "nodes") == 7
    assert work_counter(per_z, "lp_iterations") is None
    assert work_counter({"nodes": True}, "nodes") is None


def test_a_solution_holds_its_work_counters_typed() -> None:
    from dataclasses import replace

    from balance_opt.solution import Solution
    from balance_opt.work import Work

    base = Solution.not_started("i", "0" * 64, "x", {}, "boom")
    assert base.work == Work()
    stats = {"z_models": {"0": {"nodes": 3}, "1": {"nodes": 4}}, "lp_iterations": 9, "p2_optimum": 5}
    sol = replace(base, stats=stats)
    assert sol.work == Work(nodes=7.0, lp_iterations=9.0, deterministic_time=None, p2_optimum=5)
    assert "work" not in sol.to_dict()  # derived: the file keeps stats as the solver gave them
    assert sol.to_dict()["stats"] == stats
    assert Solution.from_dict(sol.to_dict()).work == sol.work
    assert replace(base, stats={"p2_optimum": True}).work.p2_optimum is None
    inst = generate("fig4", users=3, seed=1)
    res = solvers.get_solver("exhaustive-p2").solve(inst)
    assert res.work.p2_optimum == res.stats["p2_optimum"]


def test_failed_solves_exit_0_unless_fail_on_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from dataclasses import replace

    from balance_opt import cli
    from balance_opt.solution import Solution
    from balance_opt.status import Status, Termination

    inst = make_instances(tmp_path / "inst", 2, users=2)
    args = [
        "solve",
        str(inst),
        "--solver",
        "ad-only",
        "--solver",
        "test-raise",
        "--out",
        str(tmp_path / "run"),
    ]
    assert cli.main(args) == 0  # the failures are rows of a complete table
    named = [line for line in capsys.readouterr().err.splitlines() if " row: " in line]
    stems = sorted(p.stem for p in inst.iterdir())
    boom = "test-raise: RuntimeError: boom from the solver at doubles.py:"
    want = [f"balance-opt solve: error row: {stem} / {boom}" for stem in stems]
    assert len(named) == len(want) == 2
    assert all(line.startswith(w) for line, w in zip(sorted(named), want, strict=True)), named
    assert cli.main([*args, "--fail-on-error"]) == 4  # the rerun reads the error rows back
    assert "2 of 4 solves failed" in capsys.readouterr().err
    ok = ["solve", str(inst), "--solver", "ad-only", "--out", str(tmp_path / "ok"), "--fail-on-error"]
    assert cli.main(ok) == 0
    base = Solution.not_started("i", "0" * 64, "ad-only", {}, "boom")
    killed = replace(base, status=Status.TIME_LIMIT, termination=Termination.KILLED, error=None,
                     stats={"killed": "killed after 9 s"})  # fmt: skip
    assert killed.failed
    stopped = replace(base, status=Status.TIME_LIMIT, termination=Termination.TIME_LIMIT, error=None)
    assert not stopped.failed  # stopped itself, with its best
    assert replace(base, termination=Termination.OPTIMAL).failed  # a claim the evaluator rejects
    with pytest.raises(SystemExit):
        cli.main(["solve", "--help"])
    assert "Exit status: 0 when every pair has its row" in " ".join(capsys.readouterr().out.split())


def test_failed_pairs_are_named_up_to_ten() -> None:
    from dataclasses import replace

    from balance_opt.commands.solve import failure_lines
    from balance_opt.solution import Solution
    from balance_opt.status import Status, Termination

    base = Solution.not_started("i", "0" * 64, "x", {}, "no\nnewline")
    killed = replace(base, status=Status.TIME_LIMIT, termination=Termination.KILLED, error=None,
                     stats={"killed": "killed after 9 s"})  # fmt: skip
    fine = replace(base, status=Status.TIME_LIMIT, termination=Termination.TIME_LIMIT, error=None)
    assert failure_lines([fine]) == []
    assert failure_lines([base, fine, killed]) == [
        "error row: i / x: no newline",
        "time_limit row: i / x: killed after 9 s",
    ]
    many = failure_lines([replace(base, instance=f"i{n}") for n in range(13)])
    assert many[:2] == ["error row: i0 / x: no newline", "error row: i1 / x: no newline"]
    assert many[10:] == ["and 3 more"]
    assert len(many) == 11


def test_nan_in_an_instance_names_its_json_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from balance_opt import cli

    inst = make_instances(tmp_path / "inst", 1, users=3)
    path = next(inst.iterdir())
    doc = json.loads(path.read_text())
    doc["users"][1]["deadline_s"] = float("nan")
    (inst / "bad.json").write_text(json.dumps(doc))  # json.dumps writes NaN
    assert cli.main(["solve", str(inst / "bad.json"), "--solver", "ad-only"]) == 2
    err = capsys.readouterr().err
    assert f"{inst / 'bad.json'}: users[1].deadline_s: NaN is not valid JSON" in err
    out = run_batch([inst], [make_config("ad-only")], tmp_path / "run")
    rows = {s.instance: s for s in out.solutions}
    assert rows["bad"].status == "error"
    assert "users[1].deadline_s: NaN is not valid JSON" in (rows["bad"].error or "")
    assert rows[path.stem].status == "feasible"


def test_solve_parses_a_single_instance_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command's check of its one file and the batch share one parse; the task carries it."""
    from balance_opt import cli
    from balance_opt.batch import runner

    write_instance(generate("fig4", users=3, seed=1), tmp_path / "one.json")
    parsed: list[str] = []
    real = runner.instance_from_dict
    monkeypatch.setattr(runner, "instance_from_dict", lambda doc, src: parsed.append(src) or real(doc, src))
    assert cli.main(["solve", str(tmp_path / "one.json"), "--solver", "ad-only"]) == 0
    assert parsed == [str(tmp_path / "one.json")]
    assert capsys.readouterr().out.startswith("fig4-K3-s0001 ad-only: feasible served=")
