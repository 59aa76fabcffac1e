"""A local pool of solver processes that survives its workers.

``concurrent.futures`` gives up on a pool whose worker dies and cannot stop a running
call; here every worker has its own pipe, so the pool always knows which task a worker
holds, notices a worker that died (``os._exit``, SIGKILL, segfault) or overran its
time limit, records that task as an ``error`` / ``time_limit`` solution, replaces the
worker and goes on.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from balance_opt.batch.task import Task, failed_solution
from balance_opt.solution import Solution
from balance_opt.status import Termination

Done = Callable[[Task, Solution], None]

# Overrunning solves are killed at time_limit * OVERRUN_FACTOR + grace.
OVERRUN_FACTOR = 1.1
DEFAULT_GRACE_S = 5.0
# Native solver libraries spawn one thread per core unless told otherwise. The workers
# inherit these variables, which every such library reads when it loads, also after the
# worker started; threadpoolctl would limit only the pools loaded when it is called (in a
# worker after a solve with balance, exact, milp-highs and milp-cpsat it finds numpy's
# OpenBLAS alone, and HiGHS and CP-SAT take their thread counts as solver options).
THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def kill_deadline(task: Task, grace_s: float) -> float | None:
    """Seconds after which a solve counts as overrun; ``None`` without a time limit."""
    limit = task.config.time_limit_s
    return None if limit is None else limit * OVERRUN_FACTOR + grace_s


def _die_with_parent(parent_pid: int) -> None:
    """Exit as soon as the batch process is gone (a kill -9 of the batch leaves no orphans)."""
    with contextlib.suppress(Exception):  # Linux: the kernel sends SIGKILL when the parent dies
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG

    # Elsewhere, or if the parent died before prctl: a watchdog notices the new parent.
    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(0.2)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()


def worker_main(conn: Connection, parent_pid: int) -> None:
    """Serve tasks until the pipe closes. Stdout goes to stderr: native banners stay off it."""
    _die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what Ctrl-C stops
    sys.stdout.flush()
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    from balance_opt.batch.task import solve_task

    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        conn.send(solve_task(task))


@contextlib.contextmanager
def _single_thread_env() -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in THREAD_ENV}
    for k in THREAD_ENV:
        os.environ.setdefault(k, "1")
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@dataclass
class _Slot:
    proc: Any
    conn: Connection
    task: Task | None = None
    started: float = 0.0

    def stop(self) -> None:
        if self.task is None and self.proc.is_alive():
            with contextlib.suppress(OSError):
                self.conn.send(None)
            self.proc.join(timeout=2)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(timeout=5)
        self.conn.close()


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
    return f"exit code {code}"


class LocalPool:
    """``jobs`` worker processes (spawned), one task each at a time.

    Spawn rather than forkserver: a spawned worker is the batch process's own child, so
    its parent-death signal fires when the batch is killed (a forkserver outlives it).
    """

    def __init__(
        self,
        jobs: int = 1,
        grace_s: float = DEFAULT_GRACE_S,
        context: str | None = None,
        keep_workers: bool = False,
    ) -> None:
        if jobs < 1:
            raise ValueError("jobs must be >= 1")
        self.jobs = jobs
        self.grace_s = grace_s
        self.ctx: Any = mp.get_context(context or "spawn")
        # keep_workers: idle workers outlive run() and serve the next call (close() ends them),
        # so a caller with one task at a time (a dask worker) pays the spawn once.
        self.keep_workers = keep_workers
        self._kept: list[_Slot] = []

    def close(self) -> None:
        """Stop the workers kept between runs."""
        kept, self._kept = self._kept, []
        for s in kept:
            s.stop()

    def _reuse(self) -> list[_Slot]:
        """The kept workers still alive (one may have died while idle)."""
        kept, self._kept = self._kept, []
        alive = []
        for s in kept:
            if s.proc.is_alive() and not s.conn.closed:
                alive.append(s)
            else:
                s.stop()
        return alive

    def _spawn(self) -> _Slot:
        parent, child = self.ctx.Pipe()
        with _single_thread_env():
            proc = self.ctx.Process(target=worker_main, args=(child, os.getpid()), daemon=True)
            proc.start()
        child.close()
        return _Slot(proc, parent)

    def run(self, tasks: Sequence[Task], on_done: Done) -> None:
        """Solve every task; ``on_done(task, solution)`` is called in the parent, once per task."""
        pending = deque(tasks)
        slots = self._reuse()
        try:
            while pending or any(s.task is not None for s in slots):
                self._dispatch(pending, slots, on_done)
                busy = [s for s in slots if s.task is not None]
                if busy:
                    wait([s.conn for s in busy] + [s.proc.sentinel for s in busy], timeout=0.1)
                for i, s in enumerate(slots):
                    if s.task is not None and self._check(s, on_done):
                        s.stop()
                        slots[i] = self._spawn()
        finally:
            for s in slots:
                if self.keep_workers and s.task is None and s.proc.is_alive():
                    self._kept.append(s)
                else:
                    s.stop()

    def _dispatch(self, pending: deque[Task], slots: list[_Slot], on_done: Done) -> None:
        while pending:
            idle = next((s for s in slots if s.task is None), None)
            if idle is None:
                if len(slots) >= self.jobs:
                    return
                idle = self._spawn()
                slots.append(idle)
            task = pending.popleft()
            idle.task, idle.started = task, time.monotonic()
            # A dead worker fails the send: _check records the crash and replaces it.
            with contextlib.suppress(OSError):
                idle.conn.send(task)

    def _check(self, s: _Slot, on_done: Done) -> bool:
        """Collect a finished, crashed or overrun task; True when the worker must be replaced."""
        assert s.task is not None
        task, elapsed = s.task, time.monotonic() - s.started
        if s.conn.poll():
            try:
                sol = s.conn.recv()
            except (EOFError, OSError):
                sol = None
            if sol is not None:
                s.task = None
                on_done(task, sol)
                return False
        if not s.proc.is_alive() or s.conn.closed:
            s.proc.join(timeout=1)
            msg = f"worker process died ({_exit_text(s.proc.exitcode)}) while solving"
            s.task = None
            on_done(task, failed_solution(task, Termination.CRASHED, msg, elapsed))
            return True
        deadline = kill_deadline(task, self.grace_s)
        if deadline is not None and elapsed > deadline:
            s.proc.kill()
            s.proc.join(timeout=5)
            limit = task.config.time_limit_s
            msg = f"killed after {elapsed:.2f} s, past its {limit:g} s time limit"
            s.task = None
            on_done(task, failed_solution(task, Termination.KILLED, msg, elapsed))
            return True
        return False
