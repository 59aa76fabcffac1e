"""Batch runs: instances x solver configurations -> solution files and one flat results table.

``run_batch`` is crash-safe by construction: each finished pair is one solution file,
written atomically under ``RUN_DIR/solutions/<instance>__<config>.json``; a pair counts
as done when its file names the same instance sha256 and configuration hash, so a rerun
of an interrupted (Ctrl-C, ``kill -9``) batch solves exactly the missing pairs; the
results table is rebuilt from the files.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from balance_opt.batch.configs import SolverConfig
from balance_opt.batch.folder import folder_error, hold_run_folder
from balance_opt.batch.progress import Progress
from balance_opt.batch.table import TableWriter
from balance_opt.batch.task import Task, bad_instance_solution, make_task, solution_text
from balance_opt.errors import InputError, UsageError
from balance_opt.instance import Instance
from balance_opt.io import atomic_write, instance_from_dict, parse_json, read_bytes, sha256_bytes
from balance_opt.solution import Solution, recorded_options
from balance_opt.status import Status


class Executor(Protocol):
    """Runs tasks and calls ``on_done(task, solution)`` in the calling process, once per task."""

    def run(self, tasks: Sequence[Task], on_done: Callable[[Task, Solution], None]) -> None: ...


@dataclass(frozen=True)
class InstanceFile:
    """An instance file as read by the batch: its digest, the instance parsed once (the
    tasks carry it to the workers) or, for a bad file, the reason."""

    path: Path
    sha256: str
    instance: Instance | None  # None exactly when error is set
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
    inst, error = None, None
    try:
        inst = instance_from_dict(parse_json(data, str(path)), str(path))
    except InputError as exc:
        error = str(exc)
    except (RecursionError, ArithmeticError, TypeError, ValueError) as exc:
        # e.g. nesting deeper than the JSON parser recurses, a number too large for a float
        error = f"{path}: is not an instance file: {type(exc).__name__}: {exc}"
    return InstanceFile(path, sha256_bytes(data), inst, error)


SEPARATOR = "__"


def _escape(part: str) -> str:
    """``part`` unchanged, unless it holds ``%`` or ``_`` where the separator could be read.

    An escaped part always holds ``%`` and a plain one never does, and no part holds the
    separator or ends in ``_``: the file name splits back into its two parts at its first
    ``__``, so two pairs never share a file.
    """
    if "%" not in part and SEPARATOR not in part and not part.startswith("_") and not part.endswith("_"):
        return part
    return part.replace("%", "%25").replace("_", "%5F")


def solution_name(stem: str, config: SolverConfig) -> str:
    """``<instance>__<configuration>.json``, each part escaped (:func:`_escape`) where needed."""
    return f"{_escape(stem)}{SEPARATOR}{_escape(config.name)}.json"


def legacy_solution_name(stem: str, config: SolverConfig) -> str:
    """The name earlier versions gave the pair (the parts unescaped; such names could collide)."""
    return f"{stem}{SEPARATOR}{config.name}.json"


def _with_defaults(config: SolverConfig) -> dict[str, Any]:
    """The options a solve of ``config`` records: its solver's defaults under its own."""
    from balance_opt.solvers import solver_class

    try:
        defaults = solver_class(config.solver).option_defaults()
    except Exception:  # an unknown or broken plug-in: compare what is known
        defaults = {}
    return {**defaults, **config.options}


def _why_changed(sol: Solution | None, reason: str, inst: InstanceFile, config: SolverConfig) -> str:
    """Why the pair's file does not count as done for this batch (it is solved again)."""
    if sol is None:
        return f"its file is not a solution balance-opt wrote ({reason})"
    if sol.instance_sha256 != inst.sha256:
        return "the instance file changed (another sha256)"
    new = recorded_options(_with_defaults(config), config.seed, config.time_limit_s)
    old = dict(sol.options)
    diffs = [
        f"{k} {old.get(k, '(unset)')} -> {new.get(k, '(unset)')}"
        for k in sorted(set(old) | set(new))
        if old.get(k) != new.get(k)
    ]
    if sol.solver != config.solver:
        diffs.insert(0, f"solver {sol.solver} -> {config.solver}")
    return "the configuration hash changed" + (f": {', '.join(diffs)}" if diffs else "")


def _finished(
    path: Path, inst: InstanceFile, config: SolverConfig, retry_errors: bool
) -> tuple[Solution | None, str | None]:
    """``(solution, None)`` when the pair's file holds one balance-opt wrote for this exact
    instance and configuration; ``(None, why)`` when the file holds something else (it is
    solved again, and overwritten); ``(None, None)`` when there is no file or the error is
    to be retried."""
    if not path.exists():
        return None, None
    try:
        sol: Solution | None = Solution.read(path)
        reason = ""
    except InputError as exc:
        sol, reason = None, str(exc)
    except (RecursionError, TypeError, ValueError) as exc:  # a foreign file, deeply nested or odd
        sol, reason = None, f"{path}: {type(exc).__name__}: {exc}"
    run = None if sol is None else sol.run
    if (
        sol is not None
        and run is not None
        and sol.instance_sha256 == inst.sha256
        and run.config_hash == config.hash
    ):
        if retry_errors and sol.status == Status.ERROR:
            return None, None
        return sol, None
    return None, _why_changed(sol, reason, inst, config)


@dataclass(frozen=True)
class Resolve:
    """A pair whose solution file is overwritten by this batch, and why."""

    pair: str
    why: str


class ChangedPairs(UsageError):
    """Pairs solved before with another configuration (or instance), and no ``force``."""


@dataclass
class BatchOutcome:
    """What a batch did: every pair's solution (in instance x config order) and counts."""

    solutions: list[Solution] = field(default_factory=list)
    solved: int = 0
    skipped: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    resolved: list[Resolve] = field(default_factory=list)  # files overwritten, and why


class _Recorder:
    """Receives each answer in the batch process: solution file, table row, progress, callback."""

    def __init__(
        self,
        files: Sequence[InstanceFile],
        configs: Sequence[SolverConfig],
        out_dir: Path | None,
        on_solution: Callable[[Solution], None] | None,
        outcome: BatchOutcome,
    ) -> None:
        self.files, self.configs, self.out_dir = files, configs, out_dir
        self.on_solution, self.outcome = on_solution, outcome
        self.table: TableWriter | None = None
        self.sols: dict[tuple[int, int], Solution] = {}
        self.bar: Progress | None = None

    def plan(self, retry_errors: bool) -> list[Task]:
        """Tasks for the pairs not done yet; done pairs are read back from their files."""
        tasks: list[Task] = []
        for i, inst in enumerate(self.files):
            for j, cfg in enumerate(self.configs):
                if self.out_dir is not None and self._done_before(i, j, retry_errors):
                    continue
                tasks.append(
                    make_task(cfg, inst.instance, str(inst.path), inst.sha256, inst.stem, key=(i, j))
                )
        return tasks

    def _done_before(self, i: int, j: int, retry_errors: bool) -> bool:
        assert self.out_dir is not None
        inst, cfg = self.files[i], self.configs[j]
        folder = self.out_dir / "solutions"
        path = folder / solution_name(inst.stem, cfg)
        legacy = folder / legacy_solution_name(inst.stem, cfg)
        if not path.exists() and legacy != path and legacy.exists():
            done, _ = _finished(legacy, inst, cfg, retry_errors)  # a folder of an earlier version
            run = None if done is None else done.run
            if done is not None and run is not None and run.stem == inst.stem and run.config == cfg.name:
                self.sols[i, j] = done
                self.outcome.skipped += 1
                return True
        done, why = _finished(path, inst, cfg, retry_errors)
        if done is not None:
            self.sols[i, j] = done
            self.outcome.skipped += 1
            return True
        if why is not None:
            self.outcome.resolved.append(Resolve(f"{inst.stem} / {cfg.name}", why))
        return False

    def done(self, task: Task, sol: Solution) -> None:
        i, j = task.key
        sol, text = solution_text(task, sol)  # JSON only here, at the file
        if self.out_dir is not None and self.table is not None:
            # the file first: it is the record a rerun trusts; the table is a view of the files
            name = solution_name(self.files[i].stem, self.configs[j])
            path = self.out_dir / "solutions" / name
            try:
                atomic_write(path, text)
            except OSError as exc:
                raise folder_error(exc, path, "write the solution file") from None
            self.table.update(name, sol)
        self.sols[i, j] = sol
        self.outcome.solved += 1
        self.outcome.statuses[str(sol.status)] += 1
        if self.bar is not None:
            self.bar.update(sol.failed)
        if self.on_solution is not None:
            self.on_solution(sol)


def instance_files(instances: Sequence[str | Path | InstanceFile]) -> list[InstanceFile]:
    """Every instance file of ``instances`` (directories expanded), each read and parsed once:
    one already read (an :class:`InstanceFile`) is taken as it is."""
    read = {i.path: i for i in instances if isinstance(i, InstanceFile)}
    paths = collect_instance_paths([i.path if isinstance(i, InstanceFile) else i for i in instances])
    return [read.get(p) or read_instance_file(p) for p in paths]


def run_batch(
    instances: Sequence[str | Path | InstanceFile],
    configs: Sequence[SolverConfig],
    run_dir: str | Path | None = None,
    *,
    executor: Executor | None = None,
    jobs: int = 1,
    progress: bool | None = None,
    on_solution: Callable[[Solution], None] | None = None,
    retry_errors: bool = False,
    force: bool = True,
    say: Callable[[str], None] | None = None,
) -> BatchOutcome:
    """Solve every (instance, configuration) pair not already done in ``run_dir``.

    Without ``run_dir`` nothing is written (``on_solution`` sees each answer). The
    default executor is a local process pool of ``jobs`` workers. A pair whose file holds
    another answer (another configuration hash or instance, a foreign file) is solved again
    and its file overwritten; ``say`` hears which and why first, and without ``force``
    the batch stops before any solve (:class:`ChangedPairs`). ``progress``: None shows
    it on standard error (a bar on a terminal, a line every few seconds elsewhere).
    """
    files = instance_files(instances)
    out_dir = None if run_dir is None else Path(run_dir)
    with contextlib.ExitStack() as stack:
        if out_dir is not None:
            stack.enter_context(hold_run_folder(out_dir))
        outcome = BatchOutcome()
        rec = _Recorder(files, configs, out_dir, on_solution, outcome)
        tasks = rec.plan(retry_errors)
        _announce(outcome.resolved, force, say)
        if out_dir is not None:
            rec.table = _table_writer(out_dir)
        _execute(rec, tasks, files, executor, jobs, progress)
    outcome.solutions = [rec.sols[k] for k in sorted(rec.sols)]
    return outcome


def _announce(resolved: Sequence[Resolve], force: bool, say: Callable[[str], None] | None) -> None:
    """Say which pairs are solved again and why; without ``force`` refuse to overwrite them."""
    if not resolved:
        return
    lines = [f"  {r.pair}: {r.why}" for r in resolved]
    if not force:
        raise ChangedPairs(
            f"{len(resolved)} pair(s) of this run folder hold another answer, which a rerun would "
            "overwrite (rerun with --force to solve them again):\n" + "\n".join(lines)
        )
    if say is not None:
        say(f"{len(resolved)} pair(s) solved again, their files overwritten:\n" + "\n".join(lines))


def _table_writer(out_dir: Path) -> TableWriter:
    try:
        return TableWriter(out_dir)
    except OSError as exc:
        raise folder_error(exc, out_dir, "write the results table") from None


def _execute(
    rec: _Recorder,
    tasks: list[Task],
    files: Sequence[InstanceFile],
    executor: Executor | None,
    jobs: int,
    progress: bool | None,
) -> None:
    rec.bar = Progress(len(tasks), progress)
    try:
        # Bad instance files need no worker: their error row is known now.
        runnable = []
        for task in tasks:
            error = files[task.key[0]].error
            if error is not None:
                rec.done(task, bad_instance_solution(task, error))
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
            try:
                rec.table.flush()
            except OSError as exc:
                raise folder_error(exc, rec.table.run_dir, "write the results table") from None
