"""Run a batch on a dask.distributed cluster (optional extra ``balance-opt[dask]``).

Each task runs on a dask worker thread, which hands the solve to a child process of its
own (a one-worker :class:`~balance_opt.batch.pool.LocalPool`, kept between tasks): the
child is killed on the worker once the solve overruns its time limit, and a solve that
crashes its child becomes an ``error`` row, exactly as in a local batch. A dask worker
that dies (``kill -9``, lost machine) has its tasks rerun on another worker by the
scheduler; a task that keeps killing workers comes back as ``KilledWorker`` and becomes
an ``error`` row; one whose answer is lost in transit is solved again. A lost scheduler
ends the batch with :class:`SchedulerLost`: every solution already received is saved,
and a rerun against a new scheduler resumes.

None of this is silent: the client follows the scheduler's worker events
(:class:`ClusterWatch`) and says once, on standard error, when no worker is connected,
when a worker leaves (with how many of the batch's solves run again elsewhere) and when
a solve is run again because its answer was lost.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing as mp
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from balance_opt.batch.pool import DEFAULT_GRACE_S, LocalPool
from balance_opt.batch.task import Task, failed_solution
from balance_opt.solution import Solution
from balance_opt.status import Termination

INSTALL_HINT = 'dask is not installed; install it with: pip install "balance-opt[dask]"'
CONNECT_TIMEOUT_S = 10.0
MAX_REFETCHES = 2
# A batch waits this long for a first worker before it gives up (workers may still be starting).
WORKER_WAIT_S = 60.0

_local = threading.local()


class ClusterError(RuntimeError):
    """The scheduler cannot be reached, has no workers, or was lost (exit status 3)."""


class SchedulerLost(ClusterError):
    """The scheduler went away during the batch; the solutions received so far are kept."""


def say_on_stderr(message: str) -> None:
    """The batch's default voice: one line on standard error."""
    print(f"balance-opt solve: {message}", file=sys.stderr, flush=True)


class ClusterWatch:
    """Follows the scheduler's worker events (topic ``all``) and says what they mean for the batch.

    Once each: no worker connected (until one joins), a worker that left and how many of
    the batch's solves it held (running or queued there, or finished but not fetched),
    which the scheduler runs again on another worker. The handler runs on the client's
    event loop.
    """

    def __init__(self, address: str, workers: Iterable[str], say: Callable[[str], None]) -> None:
        # addresses, not a count: an event may repeat what the first listing already holds
        self.address, self.workers, self.say = address, set(workers), say
        self.waiting = False  # "no worker" said, and no worker has joined since
        self._ours: set[Any] = set()  # keys of the batch's tasks not answered yet
        self._lock = threading.Lock()

    def track(self, key: Any, running: bool) -> None:
        with self._lock:
            (self._ours.add if running else self._ours.discard)(key)

    def no_worker(self, why: str) -> None:
        if not self.waiting:
            self.waiting = True
            self.say(f"no dask worker is connected to the scheduler at {self.address}; {why}")

    def on_event(self, event: tuple[float, Any]) -> None:
        msg = event[1]
        action = msg.get("action") if isinstance(msg, dict) else None
        if action == "add-worker":
            self.workers.add(msg.get("worker"))
            if self.waiting:
                self.waiting = False
                self.say(f"dask worker {msg.get('worker')} joined; the batch goes on")
        elif action == "remove-worker":
            self.workers.discard(msg.get("worker"))
            held = set(msg.get("processing-tasks") or ()) | set(msg.get("lost-computed-tasks") or ())
            with self._lock:
                n = len(held & self._ours)
            rerun = f"; {n} solve(s) of this batch it held run again on another worker" if n else ""
            self.say(f"dask worker {msg.get('worker')} left the cluster ({len(self.workers)} left){rerun}")
            if not self.workers:
                self.no_worker("the batch waits until one joins")


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:
        from balance_opt.errors import UsageError

        raise UsageError(INSTALL_HINT) from None
    return distributed


def solve_on_worker(task: Task, grace_s: float) -> Solution:
    """Runs on a dask worker: the solve in this thread's child process, killed past its deadline."""
    pool = getattr(_local, "pool", None)
    if pool is None:
        # A dask worker process is daemonic (so that its nanny may kill it), and
        # multiprocessing refuses children to daemons. The children here cannot outlive
        # the worker: each dies with it (parent-death signal and watchdog in pool.py).
        mp.current_process()._config["daemon"] = False  # type: ignore[attr-defined]
        pool = _local.pool = LocalPool(jobs=1, grace_s=grace_s, keep_workers=True)
    pool.grace_s = grace_s
    out: list[Solution] = []
    pool.run([task], lambda _task, sol: out.append(sol))
    return out[0]


class DaskExecutor:
    """Submit tasks to a ``distributed.Client``.

    With ``jobs`` None every task is submitted at once and the cluster's worker threads
    bound the parallelism; with ``jobs`` at most that many tasks are in flight.
    """

    def __init__(
        self,
        client: Any,
        jobs: int | None = None,
        grace_s: float = DEFAULT_GRACE_S,
        cluster: Any = None,
        say: Callable[[str], None] = say_on_stderr,
    ) -> None:
        self.client = client
        self.jobs = jobs
        self.grace_s = grace_s
        self.cluster = cluster  # closed with the client: a local cluster started for this batch
        self.say = say  # what the batch tells its user about the cluster

    @classmethod
    def connect(cls, address: str | None, jobs: int | None = None) -> DaskExecutor:
        """A client of the scheduler at ``address`` (a local cluster of ``jobs`` workers if None)."""
        distributed = _distributed()
        if address is None:
            n = jobs or 1
            cluster = distributed.LocalCluster(
                n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None
            )
            return cls(distributed.Client(cluster), jobs=jobs, cluster=cluster)
        try:
            client = distributed.Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise ClusterError(f"cannot reach the dask scheduler at {address}: {_one_line(exc)}") from None
        return cls(client, jobs=jobs)

    def close(self) -> None:
        """Close the client (and the local cluster this executor started)."""
        # A client that lost its scheduler logs its cancelled reconnection as an error with
        # a traceback; the batch has already said what happened, in one line.
        logging.disable(logging.ERROR)  # distributed sets its loggers' levels one by one
        try:
            with contextlib.suppress(Exception):
                self.client.close()
            if self.cluster is not None:
                self.cluster.close()
        finally:
            logging.disable(logging.NOTSET)

    def _address(self) -> str:
        return str(getattr(self.client.scheduler, "address", None) or "?")

    def _watch(self) -> ClusterWatch:
        """Follow the cluster's workers; wait for a first one (saying so) when none is connected."""
        try:
            watch = ClusterWatch(self._address(), (), self.say)
            self.client.subscribe_topic("all", watch.on_event)  # first, so that no change is missed
            watch.workers |= set(self.client.nthreads())
            if not watch.workers:
                watch.no_worker(f"waiting up to {WORKER_WAIT_S:g} s for one to join")
            self.client.wait_for_workers(1, timeout=WORKER_WAIT_S)
        except (TimeoutError, OSError):
            raise ClusterError(
                f"no dask worker joined the scheduler at {self._address()} within {WORKER_WAIT_S:g} s"
            ) from None
        return watch

    def run(self, tasks: Sequence[Task], on_done: Callable[[Task, Solution], None]) -> None:
        distributed = _distributed()
        pending = list(reversed(tasks))
        running: dict[Any, Task] = {}
        window = len(tasks) if self.jobs is None else self.jobs
        done = distributed.as_completed([], loop=self.client.loop)
        refetches: Counter[int] = Counter()

        def submit() -> None:
            while pending and len(running) < window:
                task = pending.pop()
                fut = self.client.submit(solve_on_worker, task, self.grace_s, pure=False)
                running[fut] = task
                watch.track(fut.key, True)
                done.add(fut)

        try:
            watch = self._watch()
            submit()
            for fut in done:
                task = running.pop(fut)
                watch.track(fut.key, False)
                sol = self._answer(fut, task, refetches)
                if sol is None:
                    pending.append(task)  # its answer was lost in transit: solve it again, next
                else:
                    on_done(task, sol)
                submit()
        finally:
            # Best effort: a client without its scheduler cannot cancel, and must not mask why.
            with contextlib.suppress(Exception):
                self.client.unsubscribe_topic("all")
            if running:
                with contextlib.suppress(Exception):
                    self.client.cancel(list(running))

    def _answer(self, fut: Any, task: Task, refetches: Counter[int]) -> Solution | None:
        """The task's solution; None when it must be solved again.

        ``solve_on_worker`` never raises, so a task in state ``error`` is one that dask
        gave up on (``KilledWorker``): an ``error`` solution. A cancelled future means the
        scheduler is gone. A finished task whose result cannot be fetched (its worker or
        the scheduler died meanwhile) is solved again while the client is connected, at
        most ``MAX_REFETCHES`` times.
        """
        lost = SchedulerLost(f"lost the dask scheduler at {self._address()} during the batch")
        if fut.status == "cancelled":
            raise lost
        try:
            sol: Solution = fut.result()
        except Exception as exc:
            if self.client.status != "running":
                raise lost from None
            why = f"{type(exc).__name__}: {_one_line(exc)}"
            if fut.status != "error" and refetches[id(task)] < MAX_REFETCHES:
                refetches[id(task)] += 1
                self.say(
                    f"the answer of {task.pair} was lost before it was fetched ({why}); solving it again"
                )
                return None
            return failed_solution(task, Termination.CRASHED, f"dask task failed: {why}", 0.0)
        return sol


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
