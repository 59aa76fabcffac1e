"""Many online runs: (workload, policy) points and one hindsight bound per workload, resumable.

A run folder holds ``points/<workload>__<policy>.json`` (one simulation each: its summary
row and timeline), ``bounds/<workload>.json`` (the workload's hindsight bound) and the
results table ``results.parquet`` / ``results.csv`` in the batch table's format (one row
per point: ``instance`` is the workload, ``config`` the policy, ``bound`` the hindsight
bound), rebuilt from the files after every run. Every file is written atomically; a rerun
skips the points whose file holds the same identity, so an interrupted run resumes.
"""

from __future__ import annotations

import hashlib
import json
import math
import platform
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from balance_opt.errors import UsageError
from balance_opt.files import atomic_write

Process = Literal["poisson", "gamma", "trace"]
FORMAT = "balance-opt-online-point"


@dataclass(frozen=True)
class WorkloadSpec:
    """How one workload is made: an arrival process over a preset, or a trace file."""

    preset: str = "fig4"
    process: Process = "poisson"
    rate_per_s: float = 1.0
    cv: float = 1.0  # gamma inter-arrival CV (1: Poisson)
    duration_s: float = 600.0
    seed: int = 0
    deadline_scale: float = 1.0
    output_cv: float = 0.0  # log-normal noise of the realized length around the prediction
    acceptance: Literal["random", "expected"] = "random"
    trace: str | None = None

    @property
    def name(self) -> str:
        """A file-safe name, unique per spec in a run folder."""
        if self.process == "trace":
            stem = Path(self.trace or "trace").stem
            base = f"{stem}-{self.preset}"
        else:
            cv = f"-cv{self.cv:g}" if self.process == "gamma" else ""
            base = f"{self.preset}-{self.process}-r{self.rate_per_s:g}{cv}-t{self.duration_s:g}"
        extra = f"-d{self.deadline_scale:g}" + (f"-o{self.output_cv:g}" if self.output_cv else "")
        acc = "" if self.acceptance == "random" else "-expected"
        return f"{base}{extra}{acc}-s{self.seed}"

    def build(self) -> Any:
        """The :class:`~balance_opt.online.workload.Workload`."""
        from balance_opt.online.arrivals import gamma_workload, poisson_workload
        from balance_opt.online.trace import read_trace
        from balance_opt.online.workload import Workload

        if self.process == "trace":
            assert self.trace is not None
            w = read_trace(Path(self.trace), preset=self.preset, seed=self.seed, acceptance=self.acceptance)
            if self.deadline_scale == 1.0:
                return w
            inst = w.instance.replace(deadline_s=w.instance.deadline_s * self.deadline_scale)
            return Workload(inst, w.arrival_s, w.predicted_output_tokens, w.acceptance_seed, w.acceptance)
        common: dict[str, Any] = dict(
            duration_s=self.duration_s,
            seed=self.seed,
            output_cv=self.output_cv,
            deadline_scale=self.deadline_scale,
            acceptance=self.acceptance,
        )
        if self.process == "gamma":
            return gamma_workload(self.preset, self.rate_per_s, self.cv, **common)
        return poisson_workload(self.preset, self.rate_per_s, **common)


@dataclass(frozen=True)
class PolicySpec:
    """A policy and how it is consulted."""

    policy: str = "balance"
    epochs: Literal["event", "window"] = "window"
    window_s: float = 1.0
    time_limit_s: float | None = None  # per decision, for solver policies that take one

    @property
    def name(self) -> str:
        when = f"w{self.window_s:g}" if self.epochs == "window" else "event"
        return f"{self.policy}-{when}"


@dataclass(frozen=True)
class Point:
    """One simulation."""

    workload: WorkloadSpec
    policy: PolicySpec

    @property
    def file_name(self) -> str:
        return f"{self.workload.name}__{self.policy.name}.json"

    def identity(self) -> dict[str, Any]:
        return {"workload": asdict(self.workload), "policy": asdict(self.policy)}


def identity_hash(identity: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]


def _meta() -> dict[str, Any]:
    from balance_opt import __version__

    return {"host": platform.node(), "version": __version__}


def run_point(point: Point) -> dict[str, Any]:
    """Simulate one point; the document its file holds."""
    from balance_opt.online.metrics import summary, timeline
    from balance_opt.online.policies import make_policy
    from balance_opt.online.server import simulate

    start = time.perf_counter()
    workload = point.workload.build()
    from balance_opt.solvers import solver_names

    # a time limit is a solver's option: the serving baselines take none
    limit = point.policy.time_limit_s
    kwargs = {} if limit is None or point.policy.policy not in solver_names() else {"time_limit_s": limit}
    policy = make_policy(point.policy.policy, **kwargs)
    run = simulate(workload, policy, epochs=point.policy.epochs, window_s=point.policy.window_s)
    row = summary(run)
    row["runtime_s"] = time.perf_counter() - start
    tl = timeline(run, 300)
    return {
        "format": FORMAT,
        "identity": point.identity(),
        "identity_hash": identity_hash(point.identity()),
        "workload": point.workload.name,
        "config": point.policy.name,
        "row": row,
        "timeline": {c: tl[c].tolist() for c in tl.columns},
        **_meta(),
    }


def run_bound(spec: WorkloadSpec) -> dict[str, Any]:
    """The workload's hindsight bound; the document its file holds."""
    from balance_opt.online.hindsight import hindsight_bound

    start = time.perf_counter()
    hb = hindsight_bound(spec.build())
    return {
        "format": FORMAT + "-bound",
        "identity": asdict(spec),
        "identity_hash": identity_hash(asdict(spec)),
        "workload": spec.name,
        "bound": hb.bound,
        "alone_feasible": hb.alone_feasible,
        "method": hb.method,
        "proved": hb.proved,
        "runtime_s": time.perf_counter() - start,
    }


# --- the run folder ---------------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    """A point to simulate or a workload to bound, and the file it writes."""

    path: Path
    identity: dict[str, Any]
    work: Callable[[], dict[str, Any]]

    def __call__(self) -> dict[str, Any]:
        return self.work()


def _point_task(run_dir: Path, p: Point) -> Task:
    return Task(run_dir / "points" / p.file_name, p.identity(), _Call(run_point, p))


def _bound_task(run_dir: Path, w: WorkloadSpec) -> Task:
    return Task(run_dir / "bounds" / f"{w.name}.json", asdict(w), _Call(run_bound, w))


@dataclass(frozen=True)
class _Call:
    """A picklable ``fn(arg)`` (a lambda does not travel to a worker process)."""

    fn: Callable[[Any], dict[str, Any]]
    arg: Any

    def __call__(self) -> dict[str, Any]:
        try:
            return self.fn(self.arg)
        except Exception as exc:  # one failing point must not stop the others: an error row
            ident = self.arg.identity() if isinstance(self.arg, Point) else asdict(self.arg)
            return {"format": "error", "identity": ident, "error": f"{type(exc).__name__}: {exc}"}


def _stored(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def pending(tasks: Sequence[Task], force: bool) -> list[Task]:
    """The tasks whose file is missing or unreadable; a file of another identity is an error
    unless ``force`` (it is then computed again)."""
    todo, changed = [], []
    for t in tasks:
        doc = _stored(t.path)
        if doc is None or doc.get("format") == "error":  # missing, damaged or failed: run again
            todo.append(t)
        elif doc.get("identity") != json.loads(json.dumps(t.identity)):
            changed.append(t)
    if changed and not force:
        names = "\n".join(f"  {t.path.name}" for t in changed[:10])
        raise UsageError(
            f"{len(changed)} file(s) of this run folder were made with other settings, which a rerun would "
            f"overwrite (rerun with --force):\n{names}"
        )
    return todo + changed


def plan(run_dir: Path, points: Sequence[Point], bounds: bool = True) -> list[Task]:
    """Every task of the run: one bound per distinct workload, then the points."""
    workloads = list(dict.fromkeys(p.workload for p in points))
    names = [w.name for w in workloads]
    if len(set(names)) != len(names):
        raise UsageError("two workloads of this run share a name; give distinct trace file names")
    tasks = [_bound_task(run_dir, w) for w in workloads] if bounds else []
    return tasks + [_point_task(run_dir, p) for p in points]


def execute(tasks: Sequence[Task], jobs: int, scheduler: str | None) -> Iterator[tuple[Task, dict[str, Any]]]:
    """Run the tasks, yielding each as it finishes (in any order when parallel)."""
    if scheduler is not None:
        from distributed import Client, as_completed

        with Client(scheduler, timeout="10s") as client:
            futures = {client.submit(t.work, pure=False): t for t in tasks}
            for fut in as_completed(futures):
                yield futures[fut], fut.result()
        return
    if jobs <= 1 or len(tasks) <= 1:
        for t in tasks:
            yield t, t()
        return
    import concurrent.futures as cf
    import multiprocessing

    with cf.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futs = {pool.submit(t.work): t for t in tasks}
        for f in cf.as_completed(futs):
            yield futs[f], f.result()


def save(task: Task, doc: dict[str, Any]) -> None:
    task.path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(task.path, json.dumps(doc, sort_keys=True, allow_nan=True) + "\n")


def rows(run_dir: Path) -> list[dict[str, Any]]:
    """The results table's rows, from the points' and bounds' files."""
    bounds = {}
    for path in sorted((run_dir / "bounds").glob("*.json")):
        doc = _stored(path)
        if doc is not None and "bound" in doc:
            bounds[doc["workload"]] = doc
    out = []
    for path in sorted((run_dir / "points").glob("*.json")):
        doc = _stored(path)
        if doc is not None and doc.get("format") == FORMAT:
            out.append(_row(doc, bounds.get(doc["workload"]), f"points/{path.name}"))
        elif doc is not None and doc.get("format") == "error":
            out.append(_error_row(doc, f"points/{path.name}"))
    return out


def _error_row(doc: dict[str, Any], file: str) -> dict[str, Any]:
    spec = WorkloadSpec(**doc["identity"]["workload"])
    pol = PolicySpec(**doc["identity"]["policy"])
    return {
        "instance": spec.name,
        "instance_sha256": hashlib.sha256(json.dumps(asdict(spec), sort_keys=True).encode()).hexdigest(),
        "solver": pol.policy,
        "config": pol.name,
        "status": "error",
        "feasible": False,
        "error": doc["error"],
        "solution_file": file,
    }


def _row(doc: dict[str, Any], bound: dict[str, Any] | None, file: str) -> dict[str, Any]:
    r, ident = doc["row"], doc["identity"]
    spec, pol = ident["workload"], ident["policy"]
    row: dict[str, Any] = {
        "instance": doc["workload"],
        "instance_file": spec.get("trace"),
        "instance_sha256": hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest(),
        "K": r["users"],
        **{f"gen_{k}": v for k, v in spec.items() if k != "trace"},
        "solver": pol["policy"],
        "config": doc["config"],
        "config_hash": doc["identity_hash"],
        "options": json.dumps(pol, sort_keys=True),
        "status": "feasible",
        "served": r["served"],
        "bound": None if bound is None else bound["bound"],
        "runtime_s": r["runtime_s"],
        "feasible": True,
        "error": None,
        "host": doc.get("host"),
        "version": doc.get("version"),
        "solution_file": file,
    }
    row.update({k: v for k, v in r.items() if k not in row and k not in ("policy", "users")})
    if bound is not None and bound["bound"]:
        row["share_of_bound"] = r["served"] / bound["bound"]
        row["bound_proved"] = bound["proved"]
    elif bound is not None:
        row["share_of_bound"] = math.nan
    return row


def run_experiment(
    run_dir: Path,
    points: Sequence[Point],
    *,
    jobs: int = 1,
    scheduler: str | None = None,
    force: bool = False,
    bounds: bool = True,
    progress: bool | None = None,
) -> list[dict[str, Any]]:
    """Run every pending task, write each file as it finishes, then the results table."""
    from balance_opt.batch.folder import hold_run_folder
    from balance_opt.batch.progress import Progress
    from balance_opt.batch.table import write_table

    with hold_run_folder(run_dir, "points"):
        todo = pending(plan(run_dir, points, bounds), force)
        bar = Progress(len(todo), progress, label="balance-opt online", unit="run")
        try:
            for task, doc in execute(todo, jobs, scheduler):
                save(task, doc)
                bar.update(False)
        finally:
            bar.close()
            table = rows(run_dir)
            if table:
                write_table(run_dir, table)
    return table
