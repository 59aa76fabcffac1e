"""Run a batch on a dask.distributed cluster (optional extra ``balance-opt[dask]``).

Each task is :func:`balance_opt.batch.task.solve_task` on one dask worker; at most
``jobs`` tasks are in flight, so a task's clock starts about when it starts running.
A task that raises or whose worker dies becomes an ``error`` solution; one that
overruns its kill deadline becomes ``time_limit`` (dask cannot stop a running call, so
its thread is abandoned and its late answer ignored).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from balance_opt.batch.pool import DEFAULT_GRACE_S, kill_deadline
from balance_opt.batch.task import Task, failed_doc, solve_task

INSTALL_HINT = 'dask is not installed; install it with: pip install "balance-opt[dask]"'


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:
        from balance_opt.cli import UsageError

        raise UsageError(INSTALL_HINT) from None
    return distributed


class DaskExecutor:
    """Submit tasks to a ``distributed.Client``."""

    def __init__(self, client: Any, jobs: int | None = None, grace_s: float = DEFAULT_GRACE_S) -> None:
        self.client = client
        self.jobs = jobs
        self.grace_s = grace_s

    @classmethod
    def connect(cls, address: str | None, jobs: int = 1) -> DaskExecutor:
        """A client of the scheduler at ``address`` (a local cluster of ``jobs`` workers if None)."""
        distributed = _distributed()
        if address is None:
            cluster = distributed.LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True)
            return cls(distributed.Client(cluster), jobs=jobs)
        return cls(distributed.Client(address), jobs=jobs)

    def _slots(self) -> int:
        if self.jobs is not None:
            return self.jobs
        threads = self.client.nthreads()
        return max(1, sum(threads.values()))

    def run(self, tasks: Sequence[Task], on_done: Callable[[Task, dict[str, Any]], None]) -> None:
        distributed = _distributed()
        pending = list(reversed(tasks))
        running: dict[Any, tuple[Task, float]] = {}
        slots = self._slots()
        try:
            while pending or running:
                while pending and len(running) < slots:
                    task = pending.pop()
                    fut = self.client.submit(solve_task, task, pure=False)
                    running[fut] = (task, time.monotonic())
                distributed.wait(list(running), timeout=0.2, return_when="FIRST_COMPLETED")
                self._collect(running, on_done)
        finally:
            for fut in running:
                fut.cancel()

    def _collect(self, running: dict[Any, tuple[Task, float]], on_done: Callable[..., None]) -> None:
        for fut, (task, started) in list(running.items()):
            elapsed = time.monotonic() - started
            if fut.done():
                del running[fut]
                try:
                    doc = fut.result()
                except Exception as exc:  # the worker died or the task could not run
                    doc = failed_doc(task, "error", f"dask task failed: {type(exc).__name__}: {exc}", elapsed)
                on_done(task, doc)
                continue
            deadline = kill_deadline(task, self.grace_s)
            if deadline is not None and elapsed > deadline:
                del running[fut]
                fut.cancel()
                limit = task["config"]["time_limit_s"]
                msg = f"abandoned after {elapsed:.2f} s, past its {limit:g} s time limit"
                on_done(task, failed_doc(task, "time_limit", msg, elapsed))
