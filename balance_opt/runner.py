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

from balance_opt.batch.table import TableWriter
from balance_opt.batch.task import Task, bad_instance_doc, make_task
from balance_opt.configs import SolverConfig
from balance_opt.io import InputError, dumps, instance_from_dict, parse_json, read_bytes, sha256_bytes


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


def _is_done(path: Path, inst: InstanceFile, config: SolverConfig, retry_errors: bool) -> bool:
    """The pair's file exists for this exact instance and configuration."""
    if not path.exists():
        return False
    try:
        doc = parse_json(path.read_bytes(), str(path))
    except (InputError, OSError):
        return False
    if not isinstance(doc, dict):
        return False
    run = doc.get("run") or {}
    same = doc.get("instance_sha256") == inst.sha256 and run.get("config_hash") == config.hash
    return same and not (retry_errors and doc.get("status") == "error")


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
    table = None
    if out_dir is not None:
        (out_dir / "solutions").mkdir(parents=True, exist_ok=True)
        table = TableWriter(out_dir)
    outcome = BatchOutcome()
    by_key: dict[tuple[int, int], dict[str, Any]] = {}
    tasks: list[Task] = []
    for i, inst in enumerate(files):
        for j, cfg in enumerate(configs):
            path = None if out_dir is None else out_dir / "solutions" / solution_name(inst.stem, cfg)
            if path is not None and _is_done(path, inst, cfg, retry_errors):
                by_key[i, j] = parse_json(path.read_bytes(), str(path))
                outcome.skipped += 1
                continue
            task = make_task(cfg, inst.data, str(inst.path), inst.sha256, inst.stem)
            task["key"] = (i, j)
            tasks.append(task)

    bar = _progress(len(tasks), progress)

    def done(task: Task, doc: dict[str, Any]) -> None:
        i, j = task["key"]
        if out_dir is not None and table is not None:
            name = solution_name(files[i].stem, configs[j])
            from balance_opt.io import atomic_write

            atomic_write(out_dir / "solutions" / name, dumps(doc))
            table.update(name, doc)
        by_key[i, j] = doc
        outcome.solved += 1
        outcome.statuses[doc["status"]] += 1
        bar.update(1)
        if on_solution is not None:
            on_solution(doc)

    # Bad instance files need no worker: their error row is known now.
    runnable = []
    for task in tasks:
        i, _ = task["key"]
        if files[i].error is not None:
            done(task, bad_instance_doc(task, files[i].error))
        else:
            runnable.append(task)
    try:
        if runnable:
            if executor is None:
                from balance_opt.batch.pool import LocalPool

                executor = LocalPool(jobs=jobs)
            executor.run(runnable, done)
    finally:
        bar.close()
        if table is not None:
            table.flush()
    outcome.solutions = [by_key[k] for k in sorted(by_key)]
    return outcome
