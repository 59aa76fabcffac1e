"""Re-check a library's reference tables against its files with the evaluator alone (CI).

For every row of every set's ``reference.csv``: the instance file exists and has the
recorded sha256; the stored schedule exists, names that instance, is feasible and serves
exactly ``best_known``; ``best_known <= bound <= K``; an ``optimal`` row has its bound
equal to ``best_known`` and at least one proof, each by a tested exact method of P1 (or
``all-served`` when every user is served), ``proofs`` counting them; an ``open`` row has
none; no heuristic beats the bound. Every instance file of a set has a row.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from balance_opt.errors import InputError
from balance_opt.evaluator import Schedule, evaluate
from balance_opt.io import read_bytes, read_instance, sha256_bytes
from balance_opt.library.reference import ALL_SERVED, HEURISTICS, REFERENCE, proving_solvers, read_reference
from balance_opt.solution_checks import SolutionFile


def set_folders(paths: Iterable[Path]) -> list[Path]:
    """Set folders (holding ``reference.csv``): each path is one, or a library of them."""
    out: list[Path] = []
    for p in paths:
        if (p / REFERENCE).is_file():
            out.append(p)
        elif p.is_dir():
            found = sorted(q.parent for q in p.glob(f"*/{REFERENCE}"))
            if not found:
                raise InputError(str(p), "", f"holds no set folder with a {REFERENCE}")
            out += found
        else:
            raise InputError(str(p), "", "no such directory")
    return out


def _check_row(folder: Path, row: dict[str, str]) -> list[str]:
    stem = row["instance"]
    where = f"{folder.name}/{stem}"
    path = folder / f"{stem}.json"
    if not path.is_file():
        return [f"{where}: instance file is missing"]
    data = read_bytes(path)
    if sha256_bytes(data) != row["sha256"]:
        return [f"{where}: instance file changed since the reference was recorded"]
    inst = read_instance(path)
    k, best, bound = int(row["K"]), int(row["best_known"]), int(row["bound"])
    problems = []
    if k != inst.num_users:
        problems.append(f"{where}: K is {k} but the instance has {inst.num_users} users")
    if not best <= bound <= k:
        problems.append(f"{where}: need best_known <= bound <= K, got {best}, {bound}, {k}")
    problems += _proof_problems(where, row, best, bound, k)
    if (row["status"] == "optimal") != (row["class"] in ("easy", "hard")):
        problems.append(f"{where}: status {row['status']} does not go with class {row['class']}")
    for h in HEURISTICS:
        if row.get(h) and int(row[h]) > bound:
            problems.append(f"{where}: {h} serves {row[h]}, above the proved bound {bound}")
    if not row["solution"]:
        return problems + ([f"{where}: best_known {best} without a stored schedule"] if best else [])
    try:
        sol = SolutionFile.read(folder / row["solution"], inst)
    except InputError as exc:
        return [*problems, f"{where}: {exc}"]
    if sol.instance_sha256 not in (None, row["sha256"]):
        problems.append(f"{where}: the stored schedule is for other instance bytes")
    ev = evaluate(inst, Schedule.from_assignment(inst, sol.z, sol.assignment))
    if not ev.feasible:
        problems.append(f"{where}: the stored schedule is infeasible: {'; '.join(ev.violations[:2])}")
    elif ev.served != best:
        problems.append(f"{where}: the stored schedule serves {ev.served}, the table says {best}")
    return problems


def _proof_problems(where: str, row: dict[str, str], best: int, bound: int, k: int) -> list[str]:
    """The status and the proofs agree: ``optimal`` with one or more valid proofs, ``open`` with none."""
    if "proofs" not in row:
        return [f"{where}: no proofs column (rebuild the table: balance-opt library rebuild)"]
    proofs = [p.split(":")[0] for p in row["proved_by"].split(";") if p]
    problems = []
    if row["proofs"] != str(len(proofs)) or len(set(proofs)) != len(proofs):
        problems.append(f"{where}: proofs is {row['proofs']} but proved_by names {len(proofs)} solver(s)")
    valid = set(proving_solvers()) | ({ALL_SERVED} if best == k else set())
    problems += [f"{where}: {p} is not a tested exact method of P1" for p in proofs if p not in valid]
    if row["status"] == "optimal":
        if bound != best:
            problems.append(f"{where}: optimal but bound {bound} != best_known {best}")
        if not proofs:
            problems.append(f"{where}: optimal without a proof")
    elif proofs:
        problems.append(f"{where}: status {row['status']} with proofs by {', '.join(proofs)}")
    return problems


def verify_set(folder: Path) -> tuple[list[str], int]:
    """Problems of one set and the number of rows checked."""
    ref = read_reference(folder)
    problems = [f"{folder.name}/{p.stem}: instance file without a reference row"
                for p in sorted(folder.glob("*.json")) if p.stem not in ref]  # fmt: skip
    for row in ref.values():
        problems += _check_row(folder, row)
    return problems, len(ref)


def verify_library(paths: Iterable[Path]) -> tuple[list[str], int]:
    """Problems of every set under ``paths`` and the number of rows checked."""
    problems: list[str] = []
    checked = 0
    for folder in set_folders(paths):
        p, n = verify_set(folder)
        problems += p
        checked += n
    return problems, checked
