"""Score solutions from any solver against the library: ``balance-opt check``.

Each schedule is matched to a library instance by ``instance_sha256`` (or by
``instance``, the file stem, when there is no digest), re-checked by the evaluator and
set beside the instance's reference: gap ``best_known - served``, ratio
``served / best_known``, and whether it beats the best known (a new record) or, worse,
the proved bound (then a reference or the evaluator is wrong). The file's claims are
compared by :mod:`balance_opt.claims`, with the library's best schedule as known
evidence: a claimed bound or optimum below it is a false proof.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from balance_opt.claims import Known, first_violation, mismatches
from balance_opt.errors import InputError
from balance_opt.evaluator import Schedule, evaluate
from balance_opt.files import check_regular_file
from balance_opt.instance import Instance
from balance_opt.io import (
    SOLUTION_SCHEMA,
    instance_from_dict,
    parse_json,
    read_bytes,
    sha256_bytes,
)
from balance_opt.library.aliases import GENERATED_NAME, generated_sha256
from balance_opt.library.reference import read_reference
from balance_opt.library.verify import set_folders
from balance_opt.solution_checks import SolutionFile

TABLE_SUFFIXES = (".csv", ".parquet")


@dataclass(frozen=True)
class Entry:
    """One library instance and its reference row."""

    set: str
    folder: Path
    row: Mapping[str, str]

    @property
    def stem(self) -> str:
        return self.row["instance"]


class Library:
    """Every set's reference rows, by instance sha256 and by instance name."""

    def __init__(self, paths: Iterable[Path]) -> None:
        self.by_sha: dict[str, Entry] = {}
        self.by_name: dict[str, Entry] = {}
        for folder in set_folders(paths):
            for row in read_reference(folder).values():
                entry = Entry(folder.name, folder, row)
                self.by_sha[row["sha256"]] = entry
                self.by_name.setdefault(row["instance"], entry)

    def generated_alias(self, sha: str, name: Any) -> Entry | None:
        """The entry whose instance ``generate`` writes under its own name with digest ``sha``.

        Only entries of the same K as a generated ``name`` (``fig4-K30-s0001``) are drawn again.
        """
        found = GENERATED_NAME.match(name) if isinstance(name, str) else None
        for entry in self.by_sha.values():
            if found and (entry.row["K"] != found["users"] or not entry.stem.endswith(f"-s{found['seed']}")):
                continue
            if generated_sha256(entry.folder / f"{entry.stem}.json", entry.stem) == sha:
                return entry
        return None

    def match(self, sol: SolutionFile, source: str) -> Entry:
        sha, name = sol.instance_sha256, sol.instance
        if sha is not None and sha in self.by_sha:
            return self.by_sha[sha]
        alias = None if sha is None else self.generated_alias(sha, name)
        if alias is not None:
            return alias
        if sha is not None:
            if name in self.by_name:
                e = self.by_name[name]
                raise InputError(
                    source, "instance_sha256", f"does not match the library's {e.set}/{e.stem}.json"
                )
            raise InputError(source, "instance_sha256", "matches no instance of the library")
        if name not in self.by_name:
            raise InputError(source, "instance", f"names no instance of the library, got {name!r}")
        return self.by_name[name]


@dataclass
class Score:
    """One checked solution."""

    solution: str
    instance: str
    set: str
    solver: str | None
    feasible: bool
    served: int
    best_known: int
    bound: int
    reference_status: str
    reference_proofs: int  # independent proofs of best_known (0 when open)
    gap: int | None
    ratio: float | None
    new_record: bool
    above_bound: bool
    violation: str | None = None  # the first violated rule of an infeasible schedule
    claim_mismatches: list[str] = field(default_factory=list)
    false_proofs: list[str] = field(default_factory=list)  # among the mismatches: refuted proofs

    @property
    def ok(self) -> bool:
        return self.feasible and not self.claim_mismatches

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _library_instance(entry: Entry) -> Instance:
    """The entry's instance file, refused when its bytes are not those its reference was computed on."""
    path = entry.folder / f"{entry.stem}.json"
    data = read_bytes(path)
    if sha256_bytes(data) != entry.row["sha256"]:
        raise InputError(
            str(path), "", "changed since its reference was recorded (sha256 differs from reference.csv): "
            "its best known and bound no longer apply; see balance-opt library verify",
        )  # fmt: skip
    return instance_from_dict(parse_json(data, str(path)), str(path))


def score(library: Library, doc: Mapping[str, Any], source: str) -> Score:
    """Match, evaluate and compare one solution document (InputError on bad input)."""
    entry = library.match(SolutionFile.from_dict(doc, source), source)
    inst = _library_instance(entry)
    sol = SolutionFile.from_dict(doc, source, inst)  # again, with the instance's user ids
    ev = evaluate(inst, Schedule.from_assignment(inst, sol.z, sol.assignment))
    best, bound = int(entry.row["best_known"]), int(entry.row["bound"])
    feasible_served = ev.served if ev.feasible else None
    known = Known(best, f"the library's {entry.set}/{entry.stem}")
    found = mismatches(sol.claims(), ev, known)
    return Score(
        solution=source,
        instance=entry.stem,
        set=entry.set,
        solver=sol.solver,
        feasible=ev.feasible,
        served=ev.served,
        best_known=best,
        bound=bound,
        reference_status=entry.row["status"],
        reference_proofs=int(entry.row.get("proofs") or 0),
        gap=None if feasible_served is None else best - feasible_served,
        ratio=None if feasible_served is None or best == 0 else round(feasible_served / best, 6),
        new_record=feasible_served is not None and feasible_served > best,
        above_bound=feasible_served is not None and feasible_served > bound,
        violation=None if ev.feasible else first_violation(ev),
        claim_mismatches=[m.message for m in found],
        false_proofs=[m.message for m in found if m.false_proof],
    )


def _table_solutions(path: Path) -> list[Path]:
    """The solution files a results table points at (its ``solution_file`` column)."""
    import pandas as pd

    check_regular_file(path)
    try:
        df = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    except Exception as exc:
        raise InputError(str(path), "", f"cannot be read as a results table: {exc}") from None
    if "solution_file" not in df:
        raise InputError(str(path), "solution_file", "is a required column of a results table")
    root = path.parent.resolve()
    out = []
    for row, name in enumerate(df["solution_file"], start=1):
        if not (isinstance(name, str) and name):
            continue
        target = path.parent / name
        if not target.resolve().is_relative_to(root):  # a table is data: it points inside its folder
            raise InputError(
                str(path), f"row {row}, column solution_file", f"points outside the table's folder: {name!r}"
            )
        out.append(target)
    return out


def solution_paths(paths: Iterable[Path]) -> list[Path]:
    """Files as given, results tables expanded to their solution files, folders to their ``*.json``."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out += sorted(q for q in p.rglob("*.json") if q.is_file())
        elif p.suffix in TABLE_SUFFIXES and p.is_file():
            out += _table_solutions(p)
        else:
            out.append(p)  # a missing file is reported when it is read
    return out


def check_paths(library: Library, paths: Iterable[Path]) -> tuple[list[Score], list[InputError]]:
    """Scores of every solution under ``paths`` and the bad inputs met on the way.

    Inside a folder, files of another schema (instance files of a run folder) are skipped;
    a file named on the command line must be a solution.
    """
    given = [Path(p) for p in paths]
    scores: list[Score] = []
    errors: list[InputError] = []
    for path in solution_paths(given):
        try:
            doc = parse_json(read_bytes(path), str(path))
            if path not in given and isinstance(doc, dict) and doc.get("schema") != SOLUTION_SCHEMA:
                continue
            scores.append(score(library, doc, str(path)))
        except InputError as exc:
            errors.append(exc)
    return scores, errors
