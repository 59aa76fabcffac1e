"""Compute or improve a set's references, resumably: ``balance-opt library refs SET``.

Each (instance, solver configuration) pair is solved once: its outcome goes to the set's
ledger (written atomically after every solve), and a rerun skips the pairs the ledger
already holds for the same instance bytes and configuration hash, so a stopped build is
finished by running it again and a longer time limit (a new configuration hash) adds new
attempts. A schedule replaces the stored best only when the evaluator, run here, accepts
it and it serves more users; the reference table is rebuilt from the ledger at the end.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from balance_opt.batch.configs import SolverConfig, make_config
from balance_opt.batch.runner import Executor, collect_instance_paths, run_batch
from balance_opt.errors import InputError
from balance_opt.evaluator import Schedule, evaluate
from balance_opt.instance import Instance
from balance_opt.io import (
    atomic_write,
    dumps,
    parse_json,
    read_bytes,
    read_instance,
    sha256_bytes,
)
from balance_opt.library.reference import (
    HEURISTICS,
    SOLUTIONS,
    Best,
    read_ledger,
    reference_row,
    write_ledger,
    write_reference,
)
from balance_opt.solution import Solution
from balance_opt.solution_checks import SolutionFile
from balance_opt.solvers.milp.options import BEST_KNOWN
from balance_opt.status import Status

# Fields of a solver's document that are about the run, not the schedule: not stored.
RUN_FIELDS = ("run", "stats")


@dataclass
class RefsOutcome:
    """What one build did."""

    solved: int = 0
    skipped: int = 0
    improved: list[str] = field(default_factory=list)  # "stem: old -> new (solver)"
    rows: list[dict[str, Any]] = field(default_factory=list)


def stored_best(folder: Path, stem: str, inst: Instance, sha256: str) -> Best | None:
    """The stored schedule of ``stem``, judged by the evaluator; None when absent or stale."""
    path = folder / SOLUTIONS / f"{stem}.json"
    if not path.exists():
        return None
    doc = parse_json(read_bytes(path), str(path))
    if isinstance(doc, dict) and doc.get("instance_sha256") != sha256:
        return None  # the instance changed: the old schedule proves nothing about it
    sol = SolutionFile.from_dict(doc, str(path))  # a file that is no solution is named here
    ev = evaluate(inst, Schedule.from_assignment(inst, sol.z, sol.assignment))
    if not ev.feasible:
        raise InputError(str(path), "assignment", "the stored reference schedule is infeasible")
    return Best(ev.served, sol.solver or "", f"{SOLUTIONS}/{stem}.json")


class _Builder:
    """Receives each solve in the batch process: ledger row, and the best schedule if it is one."""

    def __init__(self, folder: Path, instances: dict[str, tuple[Instance, str]], log: Callable[[str], None]):
        self.folder, self.instances, self.log = folder, instances, log
        self.ledger = {(r["instance"], r["config_hash"]): r for r in read_ledger(folder)}
        self.best = {s: stored_best(folder, s, inst, sha) for s, (inst, sha) in instances.items()}
        self.outcome = RefsOutcome()
        self.config: SolverConfig | None = None
        self._lock = threading.Lock()  # refutations of several instances record at once

    def done(self, stem: str, cfg: SolverConfig) -> bool:
        row = self.ledger.get((stem, cfg.hash))
        return row is not None and row["sha256"] == self.instances[stem][1]

    def record(self, sol: Solution, config: SolverConfig | None = None) -> None:
        """Ledger row and best schedule of one solve of ``config`` (default: ``self.config``)."""
        from balance_opt.library.reference import ledger_row

        config = config or self.config
        assert config is not None
        assert sol.run is not None  # the batch records its run in every solution
        stem = sol.run.stem
        inst, sha = self.instances[stem]
        cfg = {"name": config.name, "hash": config.hash, "time_limit_s": config.time_limit_s}
        row = {k: str(v if v is not None else "") for k, v in ledger_row(sol, stem, cfg).items()}
        row["feasible"] = "true" if sol.feasible else "false"
        with self._lock:
            self.ledger[stem, config.hash] = row
            write_ledger(self.folder, self.ledger.values())
            self.outcome.solved += 1
            if sol.status != Status.ERROR:
                self._offer(stem, inst, sha, sol)
            self._log_refutation(stem, sol)

    def _log_refutation(self, stem: str, sol: Solution) -> None:
        """One line per refutation: refuted, or which z stayed open with their bounds."""
        stats = sol.stats
        if "cutoff" not in stats:
            return
        open_z = [f"z={z} bound {m['bound']}" for z, m in stats.get("z_models", {}).items() if not m["done"]]
        what = "refuted" if stats.get("refuted") else "open: " + ", ".join(open_z)
        self.log(f"{stem}: more than {stats['cutoff']} served {what} ({sol.runtime_s:.1f} s)")

    def _offer(self, stem: str, inst: Instance, sha: str, sol: Solution) -> None:
        ev = evaluate(inst, Schedule.from_assignment(inst, sol.z, sol.assignment))
        old = self.best[stem]
        if not ev.feasible or (old is not None and ev.served <= old.served):
            return
        kept = dataclasses.replace(sol, stats={}, run=None)  # the schedule, not the run (RUN_FIELDS)
        path = atomic_write(self.folder / SOLUTIONS / f"{stem}.json", dumps(kept.to_dict()))
        self.best[stem] = Best(ev.served, sol.solver, f"{SOLUTIONS}/{path.name}")
        was = "none" if old is None else str(old.served)
        self.outcome.improved.append(f"{stem}: best known {was} -> {ev.served} ({sol.solver})")


def heuristic_configs(names: Sequence[str] | None = None) -> list[SolverConfig]:
    """The heuristics' configurations (all of :data:`HEURISTICS` unless ``names`` picks some)."""
    unknown = sorted(set(names or ()) - set(HEURISTICS))
    if unknown:
        raise ValueError(
            f"not a heuristic of the library: {', '.join(unknown)}; known: {', '.join(HEURISTICS)}"
        )
    return [make_config(h) for h in HEURISTICS if names is None or h in names]


def build_references(
    folder: str | Path,
    configs: Sequence[SolverConfig],
    *,
    max_users: int | None = None,
    only: Sequence[str] = (),
    jobs: int = 1,
    executor: Executor | None = None,
    log: Callable[[str], None] = print,
    heuristics: Sequence[str] | None = None,
) -> RefsOutcome:
    """Run ``configs`` and the heuristics on the set; rebuild the table.

    ``configs`` run only on instances with K <= ``max_users`` whose stem matches one of the
    ``only`` patterns (``fnmatch``; all when empty); the heuristics (all six, or the named
    ones) run on every instance.
    """
    folder = Path(folder)
    paths = collect_instance_paths([folder])
    instances = {p.stem: (read_instance(p), sha256_bytes(read_bytes(p))) for p in paths}
    b = _Builder(folder, instances, log)
    plan = [(c, True) for c in configs] + [(h, False) for h in heuristic_configs(heuristics)]
    for cfg, filtered in plan:
        todo = [p for p in paths if not filtered or _selected(p.stem, instances[p.stem][0], max_users, only)]
        if cfg.options.get("cutoff") == BEST_KNOWN:
            _refute_each(b, cfg, todo, executor, jobs)
            continue
        fresh = [p for p in todo if not b.done(p.stem, cfg)]
        b.outcome.skipped += len(todo) - len(fresh)
        if not fresh:
            continue
        log(f"{folder.name}: {cfg.name} on {len(fresh)} instance(s) ({len(todo) - len(fresh)} done before)")
        b.config = cfg
        run_batch(fresh, [cfg], executor=executor, jobs=jobs, progress=False, on_solution=b.record)
    b.outcome.rows = rebuild_table(folder, b)
    return b.outcome


def _refute_each(
    b: _Builder, cfg: SolverConfig, todo: Sequence[Path], executor: Executor | None, jobs: int
) -> None:
    """Run ``cfg`` with its cutoff set to each instance's best known count, ``jobs``
    instances at a time (each its own batch of one solve: the cutoff differs).

    The configuration hash covers the cutoff, so a refutation is redone only when the best
    known value changed (or was not refuted before with these options).
    """
    runs: list[tuple[Path, SolverConfig]] = []
    for p in todo:
        best = b.best[p.stem]
        if best is None:
            b.log(f"{p.stem}: no stored schedule, no best known value to refute")
            continue
        mine = dataclasses.replace(cfg, options={**cfg.options, "cutoff": best.served})
        if b.done(p.stem, mine):
            b.outcome.skipped += 1
            continue
        runs.append((p, mine))

    def refute(run: tuple[Path, SolverConfig]) -> None:
        p, mine = run
        b.log(f"{p.parent.name}: {cfg.name} refutes more than {mine.options['cutoff']} served on {p.stem}")
        run_batch([p], [mine], executor=executor, jobs=1, progress=False,
                  on_solution=lambda sol: b.record(sol, mine))  # fmt: skip

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(refute, run) for run in runs]
        try:
            for future in futures:
                future.result()
        except BaseException:  # a contradiction (or a crash) stops the runs not started
            for future in futures:
                future.cancel()
            raise


def _selected(stem: str, inst: Instance, max_users: int | None, only: Sequence[str]) -> bool:
    if max_users is not None and inst.num_users > max_users:
        return False
    return not only or any(fnmatch.fnmatchcase(stem, pattern) for pattern in only)


def rebuild_references(folder: str | Path) -> list[dict[str, Any]]:
    """Rewrite ``reference.csv`` from the ledger and the stored schedules alone (no solve)."""
    folder = Path(folder)
    paths = collect_instance_paths([folder])
    instances = {p.stem: (read_instance(p), sha256_bytes(read_bytes(p))) for p in paths}
    return rebuild_table(folder, _Builder(folder, instances, lambda _: None))


def rebuild_table(folder: Path, b: _Builder) -> list[dict[str, Any]]:
    """Write ``reference.csv`` from the ledger and the stored schedules."""
    by_stem: dict[str, list[dict[str, str]]] = {}
    for row in b.ledger.values():
        by_stem.setdefault(row["instance"], []).append(row)
    rows = [
        reference_row(stem, sha, inst.num_users, by_stem.get(stem, []), b.best[stem])
        for stem, (inst, sha) in sorted(b.instances.items())
    ]
    write_reference(folder, rows)
    return rows
