"""Regression check of a shipped instance set against its reference values.

``instances/ci/reference.csv`` holds, per instance file: its sha256, K, the proving solver
that proves its optimum and that optimum, and the served count of every heuristic.
:func:`check` re-solves every instance and lists each problem: an optimum that
changed (or is no longer proved), a heuristic serving fewer users than recorded (or
more than the optimum), a schedule the evaluator rejects, a solve that errors, or an
instance file that changed. ``--update`` rewrites the reference after a deliberate change.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from balance_opt.batch.configs import SolverConfig, make_config
from balance_opt.batch.runner import InstanceFile, collect_instance_paths, read_instance_file, run_batch
from balance_opt.errors import InputError
from balance_opt.io import atomic_write
from balance_opt.solution import Solution
from balance_opt.status import Status

# Exhaustive search proves small optima fastest; the MILP takes over above this K.
EXHAUSTIVE_MAX_K = 14
EXACT_TIME_LIMIT_S = 120.0
REFERENCE = "reference.csv"
BASE_COLUMNS = ("instance", "sha256", "K", "exact_solver", "optimum")


def _library_heuristics() -> tuple[str, ...]:
    # imported here: listing the heuristics imports every solver class, and the command line
    # imports this module to build its parser
    from balance_opt.library.reference import library_heuristics

    return library_heuristics()


@dataclass
class Check:
    """What a regression run found."""

    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)  # the new reference rows
    solves: int = 0
    heuristics: tuple[str, ...] = field(default_factory=_library_heuristics)


def read_reference(path: Path) -> dict[str, dict[str, str]]:
    """``{instance: row}``; a missing file is an empty reference."""
    if not path.exists():
        return {}
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in BASE_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(str(path), "", f"reference table lacks columns {missing}")
        return {row["instance"]: row for row in reader}


def write_reference(path: Path, rows: Sequence[dict[str, Any]], heuristics: Sequence[str]) -> None:
    columns = [*BASE_COLUMNS, *heuristics]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in sorted(rows, key=lambda r: r["instance"]):
        writer.writerow({c: row[c] for c in columns})
    atomic_write(path, buf.getvalue())


def default_exact(users: int) -> str:
    return "exhaustive" if users <= EXHAUSTIVE_MAX_K else "milp-highs"


def _solve_all(
    files: list[Path], exact_of: dict[str, str], heuristics: Sequence[str], jobs: int, time_limit_s: float
) -> dict[tuple[str, str], Solution]:
    """``{(stem, config): solution}`` for the proving solver of each file and every heuristic."""
    out: dict[tuple[str, str], Solution] = {}

    def keep(sol: Solution) -> None:
        assert sol.run is not None  # the batch records its run in every solution
        out[sol.run.stem, sol.run.config] = sol

    for exact in sorted(set(exact_of.values())):
        group = [p for p in files if exact_of[p.stem] == exact]
        cfg = make_config(exact, name="exact", time_limit_s=time_limit_s)
        run_batch(group, [cfg], jobs=jobs, progress=False, on_solution=keep)
    configs: list[SolverConfig] = [make_config(h) for h in heuristics]
    run_batch(files, configs, jobs=jobs, progress=False, on_solution=keep)
    return out


def check(
    folder: str | Path,
    *,
    jobs: int | None = None,
    time_limit_s: float = EXACT_TIME_LIMIT_S,
    heuristics: Sequence[str] | None = None,
) -> Check:
    """Re-solve ``folder``'s instances and compare with its ``reference.csv``.

    ``heuristics``: those to check, by default the library's
    (:func:`~balance_opt.library.reference.library_heuristics`).
    """
    heuristics = _library_heuristics() if heuristics is None else heuristics
    folder = Path(folder)
    reference = read_reference(folder / REFERENCE)
    files = collect_instance_paths([folder])
    result = Check(heuristics=tuple(heuristics))
    for name in sorted(set(reference) - {p.stem for p in files}):
        result.problems.append(f"{name}: in {REFERENCE} but its instance file is missing")
    infos = {p.stem: read_instance_file(p) for p in files}
    for stem, info in infos.items():
        if info.error is not None:
            result.problems.append(f"{stem}: bad instance file: {info.error}")
    files = [p for p in files if infos[p.stem].error is None]
    users = {p.stem: _users(infos[p.stem]) for p in files}
    exact_of = {
        p.stem: reference[p.stem]["exact_solver"] if p.stem in reference else default_exact(users[p.stem])
        for p in files
    }
    workers = jobs or min(2, os.cpu_count() or 1)
    sols = _solve_all(files, exact_of, heuristics, workers, time_limit_s)
    result.solves = len(sols)
    for p in files:
        ref = reference.get(p.stem)
        if ref is None:
            result.notes.append(f"{p.stem}: not in {REFERENCE} yet (--update records it)")
        elif ref["sha256"] != infos[p.stem].sha256:
            result.problems.append(f"{p.stem}: instance file changed since the reference was recorded")
        row = _compare(p.stem, ref, sols, exact_of[p.stem], result)
        row.update(instance=p.stem, sha256=infos[p.stem].sha256, K=users[p.stem])
        result.rows.append(row)
    return result


def _users(info: InstanceFile) -> int:
    assert info.instance is not None  # bad files were set aside
    return info.instance.num_users


def _compare(
    stem: str, ref: dict[str, str] | None, sols: dict[tuple[str, str], Solution], exact: str, out: Check
) -> dict[str, Any]:
    """Problems of one instance; returns its new reference row."""
    row: dict[str, Any] = {"exact_solver": exact}
    ex = sols[stem, "exact"]
    optimum = ex.served if ex.status == Status.OPTIMAL and ex.feasible else None
    row["optimum"] = optimum
    if optimum is None:
        why = f" ({ex.error})" if ex.error else ""
        out.problems.append(f"{stem}: {exact} proved no optimum (status {ex.status}){why}")
    elif ref is not None and int(ref["optimum"]) != optimum:
        out.problems.append(f"{stem}: optimum changed from {ref['optimum']} to {optimum} ({exact})")
    for h in out.heuristics:
        sol = sols[stem, h]
        row[h] = sol.served
        if sol.status == Status.ERROR or not sol.feasible:
            why = sol.error or "the evaluator rejects the schedule"
            out.problems.append(f"{stem}: {h} gives no feasible schedule: {why}")
            continue
        if optimum is not None and sol.served > optimum:
            out.problems.append(f"{stem}: {h} serves {sol.served}, above the proved optimum {optimum}")
        if ref is None or ref.get(h) in (None, ""):
            continue
        was = int(ref[h])
        if sol.served < was:
            out.problems.append(f"{stem}: {h} serves {sol.served}, fewer than the reference {was}")
        elif sol.served > was:
            out.notes.append(f"{stem}: {h} serves {sol.served}, more than the reference {was}")
    return row


def update(folder: str | Path, result: Check) -> Path:
    """Write the new reference; refuses when an optimum or a schedule is missing."""
    blocking = [p for p in result.problems if "proved no optimum" in p or "no feasible schedule" in p]
    if blocking:
        raise RuntimeError("cannot record a reference: " + blocking[0])
    path = Path(folder) / REFERENCE
    write_reference(path, result.rows, result.heuristics)
    return path
