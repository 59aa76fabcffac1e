"""Per-solve overhead of the dask executor against the local process pool, as a Markdown table.

    python -m benchmarks.bench_dask                     # 500 quick solves, 2 workers each way
    python -m benchmarks.bench_dask --solves 40         # a smoke run
    python -m benchmarks.bench_dask --scheduler tcp://HOST:8786   # an existing cluster as well

The same batch (``--solves`` pairs: fig4 instances of ``--users`` users, each solved once by
the quick ``ad-only`` heuristic, written to a fresh run folder) runs through each executor
with ``--workers`` parallel solves. Overhead per solve is the worker time not spent in
solvers, ``(wall * workers - sum of runtime_s) / solves``: task transport, the solution
file and table row, and starting the worker processes. The local dask cluster (scheduler
and worker processes over tcp) is started before the clock and its start time shown apart.
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from balance_opt.batch.configs import make_config
from balance_opt.batch.dask_executor import DaskExecutor
from balance_opt.batch.pool import LocalPool
from balance_opt.batch.runner import run_batch
from balance_opt.generator import generate
from balance_opt.io import write_instance


def make_instances(folder: Path, count: int, users: int) -> Path:
    for seed in range(1, count + 1):
        write_instance(generate("fig4", users=users, seed=seed), folder / f"fig4-K{users}-s{seed:04d}.json")
    return folder


def measure(name: str, executor: Any, inst: Path, out: Path, workers: int) -> dict[str, Any]:
    """One batch through ``executor``: wall time, solver time and overhead per solve."""
    start = time.perf_counter()
    outcome = run_batch([inst], [make_config("ad-only")], out, executor=executor, progress=False)
    wall = time.perf_counter() - start
    n = len(outcome.solutions)
    if outcome.solved != n or any(s.status != "feasible" for s in outcome.solutions):
        raise RuntimeError(f"{name}: not every solve came back feasible: {dict(outcome.statuses)}")
    solving = sum(s.runtime_s for s in outcome.solutions)
    return {
        "executor": name,
        "solves": n,
        "wall_s": wall,
        "solve_s": solving,
        "overhead_ms": 1000 * (wall * workers - solving) / n,
        "throughput": n / wall,
    }


def dask_local(workers: int) -> tuple[DaskExecutor, float]:
    """A local cluster of ``workers`` one-thread worker processes over tcp, and its start time."""
    import distributed

    start = time.perf_counter()
    cluster = distributed.LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, protocol="tcp://", dashboard_address=None
    )
    client = distributed.Client(cluster)
    client.wait_for_workers(workers)
    return DaskExecutor(client, cluster=cluster), time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--solves", type=int, default=500, help="batch size (default 500)")
    ap.add_argument("--users", type=int, default=4, help="users per instance (default 4)")
    ap.add_argument("--workers", type=int, default=2, help="parallel solves (default 2)")
    ap.add_argument("--scheduler", metavar="ADDRESS", help="also measure this running cluster")
    args = ap.parse_args(argv)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        inst = make_instances(folder / "inst", args.solves, args.users)
        runs: list[tuple[str, Callable[[], tuple[Any, float]]]] = [
            ("local pool", lambda: (LocalPool(jobs=args.workers), 0.0)),
            ("dask, local cluster", lambda: dask_local(args.workers)),
        ]
        if args.scheduler:
            runs.append((f"dask, {args.scheduler}", lambda: (DaskExecutor.connect(args.scheduler), 0.0)))
        for i, (name, make) in enumerate(runs):
            executor, startup = make()
            try:
                rows.append(
                    {**measure(name, executor, inst, folder / f"run{i}", args.workers), "startup_s": startup}
                )
            finally:
                if isinstance(executor, DaskExecutor):
                    executor.close()
    print(
        f"{args.solves} ad-only solves of fig4 K = {args.users}, {args.workers} workers, {platform.node()}\n"
    )
    print(
        "| executor | solves | wall (s) | solver time (s) | overhead per solve (ms) | solves/s | start (s) |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['executor']} | {r['solves']} | {r['wall_s']:.2f} | {r['solve_s']:.2f} | "
            f"{r['overhead_ms']:.1f} | {r['throughput']:.0f} | {r['startup_s']:.1f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
