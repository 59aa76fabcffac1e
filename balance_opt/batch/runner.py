"""Batch runs: instances x solver configurations -> solution files and one flat results table.

``run_batch`` is crash-safe by construction: each finished pair is one solution file,
written atomically under ``RUN_DIR/solutions/<instance>__<config>.json``; a pair counts
as done when its file names the same instance sha256 and configuration hash, so a rerun
of an interrupted (Ctrl-C, ``kill -9``) batch solves exactly the missing pairs; the
results table is rebuilt from the files.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from balance_opt.batch.configs import SolverConfig
from balance_opt.batch.table import TableWriter
from balance_opt.batch.task import Task, bad_instance_doc, make_task
from balance_opt.errors import InputError
from balance_opt.io import (
    atomic_write,
    dumps,
    instance_from_dict,
    parse_json,
    read_bytes,
    sha256_bytes,
)
from balance_opt.solution import Solution
from balance_opt.status import Status


class Executor(Protocol):
    """Runs tasks and calls ``on_done(task, solution)`` in the calling process, once per task."""

    def run(self, tasks: Sequence[Task], on_done: Callable[[Task, dict[str, Any]], None]) -> None: ...


@dataclass(frozen=True)
class InstanceFile:
    """An instance file as read by the batch: its bytes, digest and (if bad) the reason."""

    path: Path
    data: bytes
    sha256: str
    error: str | None

    @property
    def stem(self) -> str:
        return self.path.stem


def collect_instance_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Files as given, directories expanded to their ``*.json`` files (sorted)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(q for q in p.glob("*.json") if q.is_file())
            if not found:
                raise InputError(str(p), "", "directory holds no *.json instance files")
            out += found
        elif p.is_file():
            out.append(p)
        else:
            raise InputError(str(p), "", "no such file or directory")
    stems = Counter(p.stem for p in out)
    twice = sorted(s for s, n in stems.items() if n > 1)
    if twice:
        raise InputError(str(out[0].parent), "", f"two instance files share the name {twice[0]!r}")
    return out


def read_instance_file(path: Path) -> InstanceFile:
    """Read and validate; a bad file is kept with its InputError message (it becomes a row)."""
    data = read_bytes(path)
    try:
        instance_from_dict(parse_json(data, str(path)), str(path))
        error = None
    except InputError as exc:
        error = str(exc)
    return InstanceFile(path, data, sha256_bytes(data), error)


def solution_name(stem: str, config: SolverConfig) -> str:
    return f"{stem}__{config.name}.json"


def _finished(
    path: Path, inst: InstanceFile, config: SolverConfig, retry_errors: bool
) -> dict[str, Any] | None:
    """The pair's solution, when its file holds one balance-opt wrote for this exact instance
    and configuration (one it cannot read is solved again)."""
    if not path.exists():
        return None
    try:
        doc = parse_json(read_bytes(path), str(path))
        sol = Solution.from_dict(doc, str(path))
    except InputError:
        return None
    same = sol.instance_sha256 == inst.sha256 and sol.run is not None and sol.run.config_hash == config.hash
    return doc if same and not (retry_errors and sol.status == Status.ERROR) else None


@dataclass
class BatchOutcome:
    """What a batch did: every pair's solution (in instance x config order) and counts."""

    solutions: list[dict[str, Any]] = field(default_factory=list)
    solved: int = 0
    skipped: int = 0
    statuses: Counter[str] = field(default_factory=Counter)


def _progress(total: int, enabled: bool | None) -> Any:
    from tqdm import tqdm

    show = sys.stderr.isatty() if enabled is None else enabled
    return tqdm(total=total, file=sys.stderr, disable=not show, unit="solve", dynamic_ncols=True)


class _Recorder:
    """Receives each answer in the batch process: solution file, table row, progress, callback."""

    def __init__(
        self,
        files: Sequence[InstanceFile],
        configs: Sequence[SolverConfig],
        out_dir: Path | None,
        on_solution: Callable[[dict[str, Any]], None] | None,
        outcome: BatchOutcome,
    ) -> None:
        self.files, self.configs, self.out_dir = files, configs, out_dir
        self.on_solution, self.outcome = on_solution, outcome
        self.table = None if out_dir is None else TableWriter(out_dir)
        self.docs: dict[tuple[int, int], dict[str, Any]] = {}
        self.bar: Any = None

    def plan(self, retry_errors: bool) -> list[Task]:
        """Tasks for the pairs not done yet; done pairs are read back from their files."""
        tasks: list[Task] = []
        for i, inst in enumerate(self.files):
            for j, cfg in enumerate(self.configs):
                if self.out_dir is not None:
                    path = self.out_dir / "solutions" / solution_name(inst.stem, cfg)
                    done = _finished(path, inst, cfg, retry_errors)
                    if done is not None:
                        self.docs[i, j] = done
                        self.outcome.skipped += 1
                        continue
                tasks.append(make_task(cfg, inst.data, str(inst.path), inst.sha256, inst.stem, key=(i, j)))
        return tasks

    def done(self, task: Task, doc: dict[str, Any]) -> None:
        i, j = task.key
        if self.out_dir is not None and self.table is not None:
            # the file first: it is the record a rerun trusts; the table is a view of the files
            name = solution_name(self.files[i].stem, self.configs[j])
            atomic_write(self.out_dir / "solutions" / name, dumps(doc))
            self.table.update(name, Solution.from_dict(doc, name))
        self.docs[i, j] = doc
        self.outcome.solved += 1
        self.outcome.statuses[doc["status"]] += 1
        if self.bar is not None:
            self.bar.update(1)
        if self.on_solution is not None:
            self.on_solution(doc)


def run_batch(
    instances: Sequence[str | Path],
    configs: Sequence[SolverConfig],
    run_dir: str | Path | None = None,
    *,
    executor: Executor | None = None,
    jobs: int = 1,
    progress: bool | None = None,
    on_solution: Callable[[dict[str, Any]], None] | None = None,
    retry_errors: bool = False,
) -> BatchOutcome:
    """Solve every (instance, configuration) pair not already done in ``run_dir``.

    Without ``run_dir`` nothing is written (``on_solution`` sees each answer). The
    default executor is a local process pool of ``jobs`` workers.
    """
    files = [read_instance_file(p) for p in collect_instance_paths(instances)]
    out_dir = None if run_dir is None else Path(run_dir)
    if out_dir is not None:
        (out_dir / "solutions").mkdir(parents=True, exist_ok=True)
    outcome = BatchOutcome()
    rec = _Recorder(files, configs, out_dir, on_solution, outcome)
    tasks = rec.plan(retry_errors)
    rec.bar = _progress(len(tasks), progress)
    try:
        # Bad instance files need no worker: their error row is known now.
        runnable = []
        for task in tasks:
            error = files[task.key[0]].error
            if error is not None:
                rec.done(task, bad_instance_doc(task, error))
            else:
                runnable.append(task)
        if runnable:
            if executor is None:
                from balance_opt.batch.pool import LocalPool

                executor = LocalPool(jobs=jobs)
            executor.run(runnable, rec.done)
    finally:
        rec.bar.close()
        if rec.table is not None:
            rec.table.flush()
    outcome.solutions = [rec.docs[k] for k in sorted(rec.docs)]
    return outcome
