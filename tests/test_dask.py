"""Batches on a real dask cluster: ``dask scheduler`` and ``dask worker`` processes over tcp.

Real solves that take seconds, solves that fail in every way, a solve stopped on its
worker past its time limit, a worker killed with SIGKILL mid-batch, a scheduler lost
mid-batch and a rerun against a new one.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from balance_opt.batch.configs import make_config
from balance_opt.batch.runner import run_batch
from tests.doubles import registered
from tests.test_runner import _alive, _descendants, make_instances, table

distributed = pytest.importorskip("distributed")
# the cluster loads the cores: with --dist loadgroup, the wall-clock tests share its worker
pytestmark = pytest.mark.xdist_group("wallclock")

from balance_opt.batch.dask_executor import DaskExecutor  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DASK = str(Path(sys.executable).with_name("dask"))
# what the batch says when a worker joins after it had said none was connected
JOINED = r"dask worker \S+ joined; the batch goes on"


@pytest.fixture(autouse=True)
def doubles() -> Iterator[None]:
    with registered():
        yield


@dataclass
class Cluster:
    address: str
    scheduler: subprocess.Popen[bytes]
    workers: subprocess.Popen[bytes]


@contextlib.contextmanager
def dask_cluster(folder: Path, workers: int) -> Iterator[Cluster]:
    """A scheduler and ``workers`` one-thread worker processes (with nannies), as the README starts them."""
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # the workers import tests.doubles
    info = folder / "scheduler.json"
    common = {"cwd": folder, "env": env, "stdout": subprocess.DEVNULL}
    sched = subprocess.Popen(
        [DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", info],
        stderr=(folder / "scheduler.log").open("wb"),
        **common,  # type: ignore[call-overload]
    )
    work = subprocess.Popen(
        [
            DASK,
            "worker",
            "--scheduler-file",
            info,
            "--nworkers",
            str(workers),
            "--nthreads",
            "1",
            "--no-dashboard",
        ],
        stderr=(folder / "workers.log").open("wb"),
        **common,  # type: ignore[call-overload]
    )
    try:
        end = time.monotonic() + 60
        while not info.exists() and time.monotonic() < end:
            assert sched.poll() is None, (folder / "scheduler.log").read_text()
            time.sleep(0.1)
        time.sleep(0.2)  # the file is written in one go, but give it a moment
        yield Cluster(json.loads(info.read_text())["address"], sched, work)
    finally:
        for p in (work, sched):
            if p.poll() is None:
                p.terminate()
        for p in (work, sched):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def _kill_a_busy_worker(client: Any, run: Path, killed: dict[str, Any]) -> None:
    """Once a solution is in, kill -9 a worker process in the middle of a solve."""
    end = time.monotonic() + 120
    while time.monotonic() < end:
        if list((run / "solutions").glob("*.json")):
            busy = [w for w, keys in client.processing().items() if keys]
            if busy:
                pid = client.run(os.getpid, workers=[busy[0]])[busy[0]]
                killed["children"] = _descendants(pid)  # its solving child among them
                os.kill(pid, signal.SIGKILL)
                killed["pid"] = pid
                return
        time.sleep(0.05)


def test_real_cluster_batch_survives_a_killed_worker(tmp_path: Path) -> None:
    inst = make_instances(tmp_path / "inst", 2, users=10)
    pid_file = tmp_path / "sleeper.pid"
    configs = [
        make_config("milp-highs", time_limit_s=120),
        make_config("balance"),
        make_config("test-raise"),
        make_config("test-sigkill"),  # kills its own child process, not the dask worker
        make_config("test-pid-sleep", {"pid_file": str(pid_file)}, time_limit_s=1),
    ]
    seen: Counter[tuple[str, str]] = Counter()
    said: list[str] = []
    run = tmp_path / "run"
    with (
        dask_cluster(tmp_path / "cluster", workers=2) as cluster,
        distributed.Client(cluster.address) as client,
    ):
        killed: dict[str, Any] = {}
        killer = threading.Thread(target=_kill_a_busy_worker, args=(client, run, killed), daemon=True)
        killer.start()
        out = run_batch(
            [inst],
            configs,
            run,
            # A grace that covers a fresh child's imports on a loaded machine, so that the
            # sleeper has written its pid before it is killed.
            executor=DaskExecutor(client, grace_s=4.0, say=said.append),
            on_solution=lambda sol: seen.update([(sol.instance, sol.run.config if sol.run else None)]),
        )
        killer.join(timeout=5)
    # the client said that the worker left and that the solves it held (running or assigned to
    # it) run again
    left = [m for m in said if " left the cluster " in m]
    assert len(left) == 1, said
    assert re.fullmatch(
        r"dask worker tcp://\S+ left the cluster \(1 left\); [1-9]\d* solve\(s\) of this batch it held run "
        r"again on another worker",
        left[0],
    ), said
    df = table(run).set_index(["instance", "config"])
    print(
        df[["status", "served", "runtime_s", "host", "error"]].to_string(), killed, dict(seen)
    )  # on failure
    assert killed.get("pid"), "no worker was busy to be killed"
    assert not [c for c in killed["children"] if _alive(c)], "a solve outlived its killed worker"
    assert sorted(seen.values()) == [1] * 10  # every pair exactly once
    assert (out.solved, out.skipped) == (10, 0)
    assert len(df) == 10
    for stem in ("fig4-K10-s0001", "fig4-K10-s0002"):
        assert df.loc[(stem, "milp-highs"), "status"] == "optimal"
        assert df.loc[(stem, "milp-highs"), "served"] >= df.loc[(stem, "balance"), "served"] > 0
        assert "boom from the solver" in df.loc[(stem, "test-raise"), "error"]
        assert "SIGKILL" in df.loc[(stem, "test-sigkill"), "error"]
        slow = df.loc[(stem, "test-pid-sleep")]
        assert slow["status"] == "time_limit"
        assert 1 <= slow["runtime_s"] < 10
    # The over-limit solve was stopped on its worker, not merely abandoned by the client.
    assert not _alive(int(pid_file.read_text()))


def _solve_cmd(inst: Path, run: Path, address: str, *extra: str) -> list[str]:
    args = ["solve", str(inst), "--config", str(run.parent / "slow.toml"), "--executor", "dask"]
    args += ["--scheduler", address, "--out", str(run), *extra]
    code = (
        "import sys; from balance_opt import cli; from tests.doubles import register_all; "
        f"register_all(); sys.exit(cli.main({args!r}))"
    )
    (run.parent / "slow.toml").write_text('solver = "test-empty"\n[options]\nsleep_s = 0.5\n')
    return [sys.executable, "-c", code]


def test_lost_scheduler_stops_cleanly_and_a_new_one_resumes(tmp_path: Path) -> None:
    inst = make_instances(tmp_path / "inst", 10, users=2)
    run = tmp_path / "run"
    with dask_cluster(tmp_path / "c1", workers=1) as cluster:
        proc = subprocess.Popen(_solve_cmd(inst, run, cluster.address), cwd=REPO, stderr=subprocess.PIPE)
        end = time.monotonic() + 120
        while len(list((run / "solutions").glob("*.json"))) < 2 and time.monotonic() < end:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.05)
        cluster.scheduler.kill()
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err
    *notes, last = err.decode().strip().splitlines()
    assert last == (
        f"balance-opt solve: error: lost the dask scheduler at {cluster.address} during the batch; "
        "the solutions received are saved, rerun to resume"
    )
    # On a loaded machine the worker may join after the client: then the batch says so first.
    waited = f"balance-opt solve: no dask worker is connected to the scheduler at {cluster.address}; "
    progress = r"balance-opt solve: \d+/10 done, \d+ failed(, about \S+ left)?"  # off a tty, every 5 s
    assert all(
        n.startswith(waited) or re.fullmatch("balance-opt solve: " + JOINED, n) or re.fullmatch(progress, n)
        for n in notes
    ), notes
    files = sorted(p.name for p in (run / "solutions").iterdir())
    assert all(f.endswith(".json") for f in files)  # no temporary file left
    assert 2 <= len(files) < 10
    assert sorted(table(run)["solution_file"]) == [f"solutions/{f}" for f in files]
    # The new scheduler: an in-process cluster over tcp starts in a second, not ten.
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, protocol="tcp://", dashboard_address=None
    ) as new:
        rerun = subprocess.run(
            _solve_cmd(inst, run, new.scheduler_address),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert rerun.returncode == 0, rerun.stderr
    assert f"{10 - len(files)} solved (" in rerun.stderr
    assert f"{len(files)} already done" in rerun.stderr
    df = table(run)
    assert len(df) == 10
    assert set(df["status"]) == {"feasible"}, df["error"].dropna().tolist()


def test_a_batch_without_workers_says_so_once_and_goes_on_when_one_joins(tmp_path: Path) -> None:
    inst = make_instances(tmp_path / "inst", 2, users=2)
    said: list[str] = []
    with (
        distributed.LocalCluster(
            n_workers=0, threads_per_worker=1, processes=False, protocol="tcp://", dashboard_address=None
        ) as cluster,
        distributed.Client(cluster.scheduler_address) as client,
    ):
        out: list[Any] = []
        batch = threading.Thread(
            target=lambda: out.append(
                run_batch([inst], [make_config("ad-only")], executor=DaskExecutor(client, say=said.append))
            )
        )
        batch.start()
        end = time.monotonic() + 30
        while not said and time.monotonic() < end:
            time.sleep(0.05)
        time.sleep(0.5)  # no second message while it waits
        assert said == [
            f"no dask worker is connected to the scheduler at {cluster.scheduler_address}; "
            "waiting up to 60 s for one to join"
        ]
        cluster.scale(1)
        batch.join(timeout=60)
    assert not batch.is_alive()
    assert out[0].solved == 2
    assert len(said) == 2
    assert re.fullmatch(JOINED, said[1]), said


def test_the_watch_says_each_change_once() -> None:
    """Worker events as the scheduler sends them: leaving with solves of the batch, none left, joining."""
    from balance_opt.batch.dask_executor import ClusterWatch

    said: list[str] = []
    watch = ClusterWatch("tcp://s:1", ["w1", "w2"], said.append)
    for key in ("a", "b", "c"):
        watch.track(key, True)
    watch.track("c", False)  # answered: no longer the batch's concern

    def event(action: str, worker: str, **keys: list[str]) -> None:
        watch.on_event((0.0, {"action": action, "worker": worker, **keys}))

    event("remove-worker", "w1", **{"processing-tasks": ["a", "x"], "lost-computed-tasks": ["c"]})
    event("gather", "w2")
    event("remove-worker", "w2", **{"processing-tasks": ["b"], "lost-computed-tasks": []})
    event("add-worker", "w3")
    event("add-worker", "w3")  # told twice: still one worker
    event("add-worker", "w4")
    event("remove-worker", "w4")
    again = "1 solve(s) of this batch it held run again on another worker"
    assert said == [
        f"dask worker w1 left the cluster (1 left); {again}",
        f"dask worker w2 left the cluster (0 left); {again}",
        "no dask worker is connected to the scheduler at tcp://s:1; the batch waits until one joins",
        "dask worker w3 joined; the batch goes on",
        "dask worker w4 left the cluster (1 left)",
    ]


def test_unreachable_scheduler_is_one_line_exit_3(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from balance_opt import cli
    from balance_opt.batch import dask_executor

    monkeypatch.setattr(dask_executor, "CONNECT_TIMEOUT_S", 1.0)
    inst = make_instances(tmp_path / "inst", 1, users=2)
    address = "tcp://127.0.0.1:1"
    args = ["solve", str(inst), "--solver", "ad-only", "--executor", "dask", "--scheduler", address]
    code = cli.main([*args, "--out", str(tmp_path / "run")])
    assert code == 3
    err = capsys.readouterr().err
    assert err.startswith("balance-opt solve: error: cannot reach the dask scheduler at tcp://127.0.0.1:1")
    assert err.count("\n") == 1


@pytest.mark.slow
def test_readme_recipe_with_exact_solves_of_seconds(tmp_path: Path) -> None:
    """The README's cluster recipe (its sizes, a free port), then a rerun that has nothing to do."""

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [str(Path(sys.executable).with_name("balance-opt")), *args]
        return subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False)

    cli("generate", "--preset", "fig4", "--users", "14", "--seed", "5", "--count", "4", "--out", "dinst")
    solve = ["solve", "dinst", "--solver", "balance", "--solver", "milp-highs", "--time-limit", "30"]
    with dask_cluster(tmp_path / "cluster", workers=2) as cluster:
        first = cli(*solve, "--executor", "dask", "--scheduler", cluster.address, "--out", "drun")
        again = cli(*solve, "--executor", "dask", "--scheduler", cluster.address, "--out", "drun")
    assert first.returncode == 0, first.stderr
    # Off a terminal the progress is one line per stage; the summary is the last line.
    assert first.stderr.splitlines()[-1].startswith("8 solved ("), first.stderr
    assert again.stderr.splitlines()[-1].startswith("0 solved (nothing new), 8 already done"), again.stderr
    df = table(tmp_path / "drun").set_index(["instance", "config"])
    assert len(df) == 8
    assert set(df.xs("balance", level="config")["status"]) == {"feasible"}
    assert set(df.xs("milp-highs", level="config")["status"]) <= {"optimal", "time_limit"}
    assert df["runtime_s"].max() > 1  # solves that take seconds, as the issue asked


class _Future:
    def __init__(self, status: str, exc: Exception) -> None:
        self.status, self.exc = status, exc

    def result(self) -> Any:
        raise self.exc


def test_an_answer_lost_in_transit_is_solved_again_or_a_lost_scheduler(tmp_path: Path) -> None:
    """A finished task whose result cannot be fetched is not a failed solve."""
    from balance_opt.batch.dask_executor import MAX_REFETCHES, SchedulerLost
    from balance_opt.batch.task import make_task
    from balance_opt.io import read_bytes, read_instance, sha256_bytes

    path = next(make_instances(tmp_path / "inst", 1, users=2).iterdir())
    data = read_bytes(path)
    task = make_task(make_config("ad-only"), read_instance(path), str(path), sha256_bytes(data), path.stem)
    client = type("Client", (), {"status": "running", "scheduler": None})()
    said: list[str] = []
    ex = DaskExecutor(client, say=said.append)
    refetches: Counter[int] = Counter()
    reset = _Future("finished", OSError("Connection reset by peer"))
    assert [ex._answer(reset, task, refetches) for _ in range(MAX_REFETCHES)] == [None] * MAX_REFETCHES
    assert (
        said
        == [
            f"the answer of {path.stem} / ad-only was lost before it was fetched "
            "(OSError: Connection reset by peer); solving it again"
        ]
        * MAX_REFETCHES
    )
    assert "OSError: Connection reset by peer" in (ex._answer(reset, task, refetches).error or "")  # type: ignore[union-attr]
    with pytest.raises(SchedulerLost):
        ex._answer(_Future("cancelled", RuntimeError("cancelled")), task, refetches)
    sol = ex._answer(
        _Future("error", RuntimeError("KilledWorker: the task killed 4 workers")), task, refetches
    )
    assert sol is not None
    assert sol.status == "error"
    assert "dask task failed: RuntimeError: KilledWorker" in (sol.error or "")
    client.status = "connecting"  # the scheduler is gone: nothing is solved again or written
    with pytest.raises(SchedulerLost):
        ex._answer(_Future("finished", OSError("Connection reset by peer")), task, Counter())
