"""Test-double solvers for the batch machinery's failure paths.

Registered per test (:func:`registered`, or :func:`register_all` in a child process); the
registry entry travels with each task, so worker processes resolve them too.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import time
from collections.abc import Iterator, Mapping
from typing import ClassVar

import numpy as np

from balance_opt.evaluator import Schedule
from balance_opt.instance import Instance
from balance_opt.result import SolverOutput
from balance_opt.solvers import register, unregister
from balance_opt.solvers.base import Option, Solver
from balance_opt.status import Termination

DOUBLES = {
    "test-empty": "tests.doubles:EmptySolver",
    "test-raise": "tests.doubles:RaisingSolver",
    "test-exit": "tests.doubles:ExitingSolver",
    "test-sigkill": "tests.doubles:SigkillSolver",
    "test-sleep": "tests.doubles:SleepingSolver",
    "test-chatty": "tests.doubles:ChattySolver",
    "test-infeasible": "tests.doubles:InfeasibleSolver",
    "test-pid-sleep": "tests.doubles:PidSleepingSolver",
    "test-odd-stats": "tests.doubles:OddStatsSolver",
}


def register_all() -> None:
    """Register every double in this process (a child process's command line does this)."""
    for name, target in DOUBLES.items():
        register(name, target)


@contextlib.contextmanager
def registered(*names: str) -> Iterator[None]:
    """The named doubles (all when none are named) registered for the ``with`` block."""
    chosen = names or tuple(DOUBLES)
    for name in chosen:
        register(name, DOUBLES[name])
    try:
        yield
    finally:
        for name in chosen:
            unregister(name)


class EmptySolver(Solver):
    """Serves nobody after ``sleep_s`` seconds (a feasible, deterministic answer)."""

    name = "test-empty"
    option_specs: ClassVar[Mapping[str, Option]] = {"sleep_s": Option(0.0)}

    def _solve(
        self, instance: Instance, *, time_limit: float | None, seed: int, hint: Schedule | None
    ) -> SolverOutput:
        time.sleep(self.options["sleep_s"])
        return SolverOutput(
            Schedule.empty(instance.num_users, 1.0), Termination.COMPLETED, stats={"nodes": 7}
        )


class OddStatsSolver(EmptySolver):
    """Serves nobody and reports statistics JSON cannot hold as they are (a careless plug-in)."""

    name = "test-odd-stats"

    def _solve(
        self, instance: Instance, *, time_limit: float | None, seed: int, hint: Schedule | None
    ) -> SolverOutput:
        stats = {"nodes": np.int64(3), "gap": float("nan"), "top": math.inf, "per_user": np.arange(2),
                 "deep": {"ratio": np.float32(0.5)}, 7: "int key"}  # fmt: skip
        return SolverOutput(Schedule.empty(instance.num_users, 1.0), Termination.COMPLETED, stats=stats)


class RaisingSolver(EmptySolver):
    name = "test-raise"

    def _solve(
        self, instance: Instance, *, time_limit: float | None, seed: int, hint: Schedule | None
    ) -> SolverOutput:
        raise RuntimeError("boom from the solver")


class ExitingSolver(EmptySolver):
    name = "test-exit"

    def _solve(
        self, instance: Instance, *, time_limit: float | None, seed: int, hint: Schedule | None
    ) -> SolverOutput:
        os._exit(3)


class SigkillSolver(EmptySolver):
    name = "test-sigkill"

    def _solve(
        self, instance: Instance, *, time_limit: float | None, seed: int, hint: Schedule | None
    ) -> SolverOutput:
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("unreachable")


class SleepingSolver(EmptySolver):
    """Ignores its time limit: sleeps ``sleep_s`` (default one minute)."""

    name = "test-sleep"
    option_specs: ClassVar[Mapping[str, Option]] = {"sleep_s": Option(60.0)}


class ChattySolver(EmptySolver):
    """Writes to file descriptor 1 from C level, as a native solver's banner does."""

    name = "test-chatty"

    def _solve(
        self, instance: Instance, *, time_limit: float | None, seed: int, hint: Schedule | None
    ) -> SolverOutput:
        os.write(1, b"Running HiGHS-like banner on fd 1\n")
        print("and a Python print")
        return super()._solve(instance, time_limit=time_limit, seed=seed, hint=hint)


class InfeasibleSolver(EmptySolver):
    """Puts every user in AD at the grid's first z (infeasible whenever that z is 0)."""

    name = "test-infeasible"

    def _solve(
        self, instance: Instance, *, time_limit: float | None, seed: int, hint: Schedule | None
    ) -> SolverOutput:
        modes = [1] * instance.num_users
        return SolverOutput(Schedule(instance.server.z_grid[0], modes), Termination.COMPLETED)  # type: ignore[arg-type]


class PidSleepingSolver(EmptySolver):
    """Writes its process id to ``pid_file``, then sleeps ``sleep_s`` ignoring its time limit."""

    name = "test-pid-sleep"
    option_specs: ClassVar[Mapping[str, Option]] = {"sleep_s": Option(60.0), "pid_file": Option("")}

    def _solve(
        self, instance: Instance, *, time_limit: float | None, seed: int, hint: Schedule | None
    ) -> SolverOutput:
        with open(self.options["pid_file"], "w") as f:
            f.write(str(os.getpid()))
        return super()._solve(instance, time_limit=time_limit, seed=seed, hint=hint)
