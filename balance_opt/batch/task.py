"""One unit of batch work: solve one instance with one configuration, as plain data.

Tasks and their answers are dicts of JSON-able values, so they cross process and
machine boundaries (local worker pool, dask) unchanged. The answer is the docs/formats.md
solution document plus a ``run`` record (configuration, instance provenance, host,
version): the solution file alone is enough to rebuild its results-table row.
"""

from __future__ import annotations

import functools
import platform
import subprocess
import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from balance_opt import __version__
from balance_opt.batch.configs import SolverConfig, config_from_dict
from balance_opt.errors import InputError, SolveRefused
from balance_opt.instance import Instance
from balance_opt.io import instance_from_dict, parse_json
from balance_opt.result import solution_document, unsolved_result
from balance_opt.result import summary_line as result_summary
from balance_opt.status import Status, Termination

Task = dict[str, Any]


def make_task(config: SolverConfig, data: bytes, source: str, sha256: str, stem: str) -> Task:
    """The message a worker needs: the instance's bytes, not its path (workers may be remote).

    The registry entry of the solver travels along, so a solver registered at run time
    in the parent (a plug-in, a test double) resolves the same way in a fresh worker.
    """
    from balance_opt.solvers import _REGISTRY

    return {
        "config": config.to_dict(),
        "solver_target": _REGISTRY.get(config.solver),
        "data": data,
        "source": source,
        "sha256": sha256,
        "stem": stem,
    }


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


def run_record(task: Task, inst: Instance | None) -> dict[str, Any]:
    """Provenance kept in every solution file the batch writes."""
    cfg = task["config"]
    return {
        "config": cfg["name"],
        "config_hash": config_from_dict(cfg).hash,
        "instance_file": task["source"],
        "stem": task["stem"],
        "users": None if inst is None else inst.num_users,
        "generator": None if inst is None or inst.generator is None else dict(inst.generator),
        "host": platform.node(),
        "version": __version__,
        "commit": code_commit(),
    }


def _finish(doc: dict[str, Any], task: Task, inst: Instance | None) -> dict[str, Any]:
    doc["run"] = run_record(task, inst)
    return doc


def bad_instance_doc(task: Task, message: str) -> dict[str, Any]:
    """An ``error`` solution for an instance file that could not be read (solve refused)."""
    cfg = config_from_dict(task["config"])
    doc = solution_document(
        task["stem"],
        task["sha256"],
        cfg.solver,
        recorded_options(cfg),
        status=Status.ERROR,
        served=0,
        bound=None,
        z=0.0,
        lam=None,
        assignment={},
        runtime_s=0.0,
        feasible=False,
        termination=Termination.REFUSED,
        error=message,
    )
    return _finish(doc, task, None)


def recorded_options(cfg: SolverConfig) -> dict[str, Any]:
    """The options a solution file records (as Solver.solve records them)."""
    out: dict[str, Any] = {**cfg.options, "seed": cfg.seed}
    if cfg.time_limit_s is not None:
        out["time_limit_s"] = cfg.time_limit_s
    return out


def failed_doc(task: Task, termination: Termination, message: str, runtime_s: float) -> dict[str, Any]:
    """The solution of a solve that brought no schedule back (refused, crashed or killed)."""
    try:
        inst = load_task_instance(task)
    except InputError as exc:
        return bad_instance_doc(task, str(exc))
    cfg = config_from_dict(task["config"])
    res = unsolved_result(inst, cfg.solver, recorded_options(cfg), runtime_s, termination, message)
    return _finish(res.to_solution(inst, task["sha256"]), task, inst)


def load_task_instance(task: Task) -> Instance:
    """Parse and validate the task's instance (InputError when the file is bad)."""
    return instance_from_dict(parse_json(task["data"], task["source"]), task["source"])


def solve_task(task: Task) -> dict[str, Any]:
    """Run one solve; any exception becomes an ``error`` solution (never raises)."""
    start = time.perf_counter()
    try:
        inst = load_task_instance(task)
    except InputError as exc:
        return bad_instance_doc(task, str(exc))
    cfg = config_from_dict(task["config"])
    try:
        from balance_opt.solvers import _REGISTRY, get_solver

        if task.get("solver_target"):
            _REGISTRY[cfg.solver] = task["solver_target"]
        solver = get_solver(cfg.solver, **cfg.options)
        res = solver.solve(inst, time_limit=cfg.time_limit_s, seed=cfg.seed)
    except SolveRefused as exc:
        # e.g. too large for exhaustive search: a single solve exits with status 2
        return failed_doc(task, Termination.REFUSED, str(exc), time.perf_counter() - start)
    except Exception as exc:
        tb = traceback.extract_tb(exc.__traceback__)
        where = f" at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno}" if tb else ""
        message = f"{type(exc).__name__}: {exc}{where}"
        return failed_doc(task, Termination.CRASHED, message, time.perf_counter() - start)
    return _finish(res.to_solution(inst, task["sha256"]), task, inst)


def summary_line(doc: Mapping[str, Any]) -> str:
    """One human line per solve (``solve`` without ``--out``)."""
    run = doc.get("run", {})
    return result_summary(doc, f"{doc['instance']} {run.get('config', doc['solver'])}", run.get("users"))
