"""Batches in real processes: two on one folder, and one killed while it writes the table.

After each, every solution file on disk has its row and every row its file.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from tests.test_runner import REPO, _wait_for_files, make_instances

MARKER = "writing-table"


def _script(inst: Path, run: Path, sleep_s: float, slow_table: bool = False) -> list[str]:
    """A ``balance-opt solve`` child; with ``slow_table`` the rename that ends a write of
    ``results.csv`` first touches ``run/../writing-table`` and then waits 30 s, so a parent
    can kill it with the temporary file written and not yet renamed."""
    patch = (
        "import os, time, pathlib; real = os.replace\n"
        "def slow(src, dst):\n"
        "    if str(dst).endswith('results.csv'):\n"
        f"        pathlib.Path({str(run.parent / MARKER)!r}).touch(); time.sleep(30)\n"
        "    return real(src, dst)\n"
        "os.replace = slow\n"
        if slow_table
        else ""
    )
    config = run.parent / "slow.toml"
    config.write_text(f'solver = "test-empty"\n[options]\nsleep_s = {sleep_s}\n')
    code = (
        "import sys\nfrom balance_opt import cli\nfrom tests.doubles import register_all\nregister_all()\n"
        f"{patch}sys.exit(cli.main(['solve', {str(inst)!r}, '--config', {str(config)!r}, "
        f"'--out', {str(run)!r}]))"
    )
    return [sys.executable, "-c", code]


def _rows_match_files(run: Path) -> pd.DataFrame:
    df = pd.read_parquet(run / "results.parquet")
    files = sorted(p.name for p in (run / "solutions").glob("*.json"))
    assert sorted(Path(f).name for f in df["solution_file"]) == files
    assert len(pd.read_csv(run / "results.csv")) == len(files)
    assert not [p for p in run.rglob("*.tmp")], "a temporary file was left behind"
    return df


def test_a_second_batch_process_on_a_busy_folder_stops_and_loses_nothing(tmp_path: Path) -> None:
    inst = make_instances(tmp_path / "inst", 6, users=2)
    run = tmp_path / "run"
    first = subprocess.Popen(_script(inst, run, 0.3), cwd=REPO, stderr=subprocess.PIPE)
    _wait_for_files(run / "solutions", 1, first)
    second = subprocess.run(_script(inst, run, 0.3), cwd=REPO, capture_output=True, text=True, timeout=60)
    assert second.returncode == 2, second.stderr
    assert f"{run}: run folder in use by another balance-opt solve (process {first.pid}" in second.stderr
    assert first.wait(timeout=120) == 0
    df = _rows_match_files(run)
    assert len(df) == 6
    again = subprocess.run(_script(inst, run, 0.3), cwd=REPO, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0
    assert "6 already done" in again.stderr


def test_a_batch_killed_during_a_table_write_is_completed_by_a_rerun(tmp_path: Path) -> None:
    inst = make_instances(tmp_path / "inst", 4, users=2)
    run = tmp_path / "run"
    proc = subprocess.Popen(_script(inst, run, 0.0, slow_table=True), cwd=REPO, stderr=subprocess.PIPE)
    end = time.monotonic() + 60
    while not (tmp_path / MARKER).exists():
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < end, "the batch never wrote its table"
        time.sleep(0.05)
    proc.kill()
    assert proc.wait(timeout=30) == -9
    assert list(run.glob(".results.csv.*.tmp"))  # killed mid-write: the temporary file is there
    rerun = subprocess.run(_script(inst, run, 0.0), cwd=REPO, capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    df = _rows_match_files(run)
    assert len(df) == 4
    assert set(df["status"]) == {"feasible"}
