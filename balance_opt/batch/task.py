"""One unit of batch work: solve one instance with one configuration.

A :class:`Task` is a frozen record that crosses process and machine boundaries (local
worker pool, dask) by pickling. It carries the instance the batch process parsed (and its
file's digest), never a path: a dask worker on another machine has no such file, and
unpickling an instance costs a fraction of parsing and checking its JSON again. Its answer
is a :class:`~balance_opt.solution.Solution`, pickled back the same way (JSON only where
the batch process writes its file), with a ``run`` record (configuration, instance
provenance, host, version): the solution file alone is enough to rebuild its
results-table row.
"""

from __future__ import annotations

import functools
import platform
import subprocess
import time
import traceback
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from balance_opt import __version__
from balance_opt.batch.configs import SolverConfig
from balance_opt.errors import InputError, SolveRefused
from balance_opt.instance import Instance
from balance_opt.io import dumps
from balance_opt.result import unsolved_result
from balance_opt.solution import RunRecord, Solution, recorded_options
from balance_opt.solution_checks import check_solution_dict
from balance_opt.status import Termination


@dataclass(frozen=True)
class Task:
    """What a worker needs: the parsed instance, not its path (workers may be remote)."""

    config: SolverConfig
    instance: Instance | None  # parsed once, by the batch process; None: its file is bad
    source: str  # its path, for messages and the run record
    sha256: str  # of the file's bytes
    stem: str
    # The registry entry of the solver in the parent, so a solver registered at run time
    # (a plug-in, a test double) resolves the same way in a fresh worker.
    solver_target: str | None = None
    key: tuple[int, int] = (0, 0)  # the pair's place in the batch: (instance, configuration)

    @property
    def pair(self) -> str:
        """``stem / configuration``, for messages."""
        return f"{self.stem} / {self.config.name}"

    def options(self) -> dict[str, Any]:
        """The options its solution records (as :meth:`Solver.solve` records them)."""
        return recorded_options(self.config.options, self.config.seed, self.config.time_limit_s)


def make_task(
    config: SolverConfig,
    instance: Instance | None,
    source: str,
    sha256: str,
    stem: str,
    key: tuple[int, int] = (0, 0),
) -> Task:
    """The task of one pair, with the solver's registry entry of this process."""
    from balance_opt.solvers import solver_target

    return Task(config, instance, source, sha256, stem, solver_target(config.solver), key)


@functools.cache
def code_commit() -> str | None:
    """``git describe --always --dirty`` of the installed source tree, when it is a checkout."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "describe", "--always", "--dirty"],
            capture_output=True, text=True, timeout=10, check=True,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def run_record(task: Task, inst: Instance | None) -> RunRecord:
    """Provenance kept in every solution file the batch writes."""
    return RunRecord(
        config=task.config.name,
        config_hash=task.config.hash,
        instance_file=task.source,
        stem=task.stem,
        users=None if inst is None else inst.num_users,
        generator=None if inst is None or inst.generator is None else dict(inst.generator),
        host=platform.node(),
        version=__version__,
        commit=code_commit(),
    )


def bad_instance_solution(task: Task, message: str) -> Solution:
    """An ``error`` solution for an instance file that could not be read (solve refused)."""
    sol = Solution.not_started(task.stem, task.sha256, task.config.solver, task.options(), message)
    return replace(sol, run=run_record(task, None))


def failed_solution(task: Task, termination: Termination, message: str, runtime_s: float) -> Solution:
    """The solution of a solve that brought no schedule back (refused, crashed or killed)."""
    try:
        inst = load_task_instance(task)
    except InputError as exc:
        return bad_instance_solution(task, str(exc))
    res = unsolved_result(inst, task.config.solver, task.options(), runtime_s, termination, message)
    return res.for_file(task.sha256, run_record(task, inst))


def solution_text(task: Task, sol: Solution) -> tuple[Solution, str]:
    """The solution and its file's text; an answer the file cannot hold becomes an ``error`` solution.

    A plug-in's stats may hold what no JSON writer takes (an object, a set), its schedule a
    ``z`` outside [0, 1]: the solve's row then names its solver and why, instead of stopping
    the batch or writing a file that a rerun cannot read back.
    """
    doc = sol.to_dict()
    try:
        check_solution_dict(doc, task.pair)
        return sol, dumps(doc)
    except InputError as exc:
        message = f"its answer breaks a rule of the solution file: {exc}"
    except (TypeError, ValueError) as exc:
        message = f"its answer cannot be written as JSON: {exc}"
    failed = failed_solution(task, Termination.CRASHED, message, 0.0)
    return failed, dumps(failed.to_dict())


def load_task_instance(task: Task) -> Instance:
    """The task's instance, its arrays read-only again (InputError when its file is bad).

    Pickling keeps an array's values but not its read-only flag: without it here, a solver
    in a worker could write into the instance that a solver in the batch process cannot.
    """
    inst = task.instance
    if inst is None:
        raise InputError(task.source, "", "is not a valid instance file")
    for value in vars(inst).values():
        if isinstance(value, np.ndarray):
            value.setflags(write=False)
    return inst


def solve_task(task: Task) -> Solution:
    """Run one solve; any exception becomes an ``error`` solution (never raises)."""
    start = time.perf_counter()
    try:
        inst = load_task_instance(task)
    except InputError as exc:
        return bad_instance_solution(task, str(exc))
    cfg = task.config
    try:
        from balance_opt.solvers import get_solver, register

        if task.solver_target:
            register(cfg.solver, task.solver_target, replace=True)
        solver = get_solver(cfg.solver, **cfg.options)
        res = solver.solve(inst, time_limit=cfg.time_limit_s, seed=cfg.seed)
    except SolveRefused as exc:
        # e.g. too large for exhaustive search: a single solve exits with status 2
        return failed_solution(task, Termination.REFUSED, str(exc), time.perf_counter() - start)
    except Exception as exc:
        tb = traceback.extract_tb(exc.__traceback__)
        where = f" at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno}" if tb else ""
        message = f"{type(exc).__name__}: {exc}{where}"
        return failed_solution(task, Termination.CRASHED, message, time.perf_counter() - start)
    return res.for_file(task.sha256, run_record(task, inst))
