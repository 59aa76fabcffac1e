"""``balance-opt online``: points, resume, settings that changed, bad traces, a crashing policy."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from balance_opt.cli import main
from balance_opt.evaluator import Schedule
from balance_opt.online.experiment import Point, PolicySpec, WorkloadSpec, run_experiment
from balance_opt.online.policies import register_policy, unregister_policy
from balance_opt.online.policy import View

TINY = ["--rates", "1,2", "--duration", "15", "--policies", "balance,fcfs-ad", "--no-report", "--no-progress"]


def test_points_rows_and_resume(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert main(["online", "--out", str(out), *TINY, "--no-bound"]) == 0
    files = sorted((out / "points").glob("*.json"))
    assert len(files) == 4
    df = pd.read_csv(out / "results.csv")
    assert sorted(df["config"]) == ["balance-w1", "balance-w1", "fcfs-ad-w1", "fcfs-ad-w1"]
    assert (df["served"] <= df["K"]).all()
    assert (df["attainment"] == df["served"] / df["K"]).all()
    before = {f.name: f.read_bytes() for f in files}
    stamp = {f.name: f.stat().st_mtime_ns for f in files}
    capsys.readouterr()
    assert main(["online", "--out", str(out), *TINY, "--no-bound"]) == 0  # resumes: nothing to do
    assert {f.name: f.stat().st_mtime_ns for f in files} == stamp
    assert {f.name: f.read_bytes() for f in files} == before


def test_a_point_with_other_settings_needs_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert main(["online", "--out", str(out), *TINY, "--no-bound"]) == 0
    capsys.readouterr()
    again = [*TINY, "--no-bound", "--policy-time-limit", "5"]
    assert main(["online", "--out", str(out), *again]) == 2
    assert "other settings" in capsys.readouterr().err
    assert main(["online", "--out", str(out), *again, "--force"]) == 0
    doc = json.loads(next((out / "points").glob("*balance*.json")).read_text())
    assert doc["identity"]["policy"]["time_limit_s"] == 5.0


def test_rows_carry_the_hindsight_bound(tmp_path: Path) -> None:
    pytest.importorskip("balance_opt.online.hindsight")
    out = tmp_path / "run"
    assert main(["online", "--out", str(out), *TINY]) == 0
    df = pd.read_csv(out / "results.csv")
    assert df["bound"].notna().all()
    assert (df["served"] <= df["bound"]).all()
    assert len(list((out / "bounds").glob("*.json"))) == 2  # one per workload, not per policy


def test_a_bad_trace_is_exit_2_naming_file_row_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,input_tokens,output_tokens,deadline_s\n0.5,10,20,3\n0.2,10,20,3\n")
    code = main(["online", "--out", str(tmp_path / "run"), "--trace", str(trace), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2
    assert "t.csv" in err
    assert "arrival_s" in err
    assert not (tmp_path / "run" / "points").exists() or not list((tmp_path / "run" / "points").iterdir())


class Crash:
    name = "test-crash"

    def decide(self, view: View) -> Schedule:
        raise RuntimeError("boom")


def test_a_crashing_policy_is_an_error_row_and_the_others_run(tmp_path: Path) -> None:
    register_policy("test-crash", Crash)
    try:
        w = WorkloadSpec(rate_per_s=1.0, duration_s=10.0, seed=1)
        pts = [Point(w, PolicySpec("test-crash")), Point(w, PolicySpec("fcfs-sd"))]
        rows = run_experiment(tmp_path / "run", pts, bounds=False, progress=False)
    finally:
        unregister_policy("test-crash")
    by = {r["config"]: r for r in rows}
    assert by["test-crash-w1"]["status"] == "error"
    assert "boom" in by["test-crash-w1"]["error"]
    assert by["fcfs-sd-w1"]["status"] == "feasible"


def test_unknown_policy_and_bad_numbers_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = ["online", "--out", str(tmp_path / "r")]
    assert main([*out, "--policies", "nope"]) == 2
    assert "unknown" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main([*out, "--rates", "1,-2"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main([*out, "--seeds", "x"])
    assert exc.value.code == 2


def _rows_without_times(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    return sorted(
        ({k: v for k, v in r.items() if k not in ("runtime_s", "host")} for r in rows),
        key=lambda r: str(r["config"]),
    )


def test_parallel_and_dask_runs_give_the_serial_rows(tmp_path: Path) -> None:
    w = WorkloadSpec(rate_per_s=2.0, duration_s=10.0, seed=3)
    pts = [Point(w, PolicySpec(p)) for p in ("balance", "fcfs-cheaper", "edf-sd")]
    serial = run_experiment(tmp_path / "serial", pts, bounds=False, progress=False)
    pooled = run_experiment(tmp_path / "pool", pts, jobs=2, bounds=False, progress=False)
    assert _rows_without_times(pooled) == _rows_without_times(serial)
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    ) as c:
        on_dask = run_experiment(
            tmp_path / "dask", pts, scheduler=c.scheduler_address, bounds=False, progress=False
        )
    assert _rows_without_times(on_dask) == _rows_without_times(serial)


def test_a_killed_run_resumes_to_every_row(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "run"
    argv = ["online", "--out", str(out), "--rates", "1,2,3", "--duration", "30", "--seeds", "1-2"]
    argv += ["--policies", "balance,fcfs-sd", "--no-bound", "--no-report", "--no-progress"]
    code = f"import sys; from balance_opt.cli import main; sys.exit(main({argv!r}))"
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    end = time.monotonic() + 120
    while len(list((out / "points").glob("*.json"))) < 2 and time.monotonic() < end and proc.poll() is None:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = len(list((out / "points").glob("*.json")))
    assert all(json.loads(p.read_text())["row"] for p in (out / "points").glob("*.json"))  # each file whole
    assert main(argv) == 0
    assert len(list((out / "points").glob("*.json"))) == 12 >= before
    assert len(pd.read_csv(out / "results.csv")) == 12
