"""A set's references: the ledger of every solve (``attempts.csv``) and the table built from it.

The ledger keeps one row per (instance, solver configuration) ever run on the set; the
reference table (``reference.csv``) is a function of the ledger and of the stored best
schedules (``solutions/<instance>.json``), so it can be rebuilt at any time:

- ``best_known``: served users of the stored schedule, as the evaluator counts them;
- ``bound``: the smallest bound a solver proved (the trivial ``K`` when none did); a proved
  bound below ``best_known`` contradicts a schedule the evaluator accepts and stops the build;
- ``proved_by``: the solvers whose proved bound equals ``best_known``, each with its
  fastest time, and ``proofs`` their number; ``status`` is ``optimal`` when at least one
  tested exact method proved it (MIPLIB's convention), the table saying by how many.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from balance_opt.errors import InputError
from balance_opt.io import atomic_write, read_bytes
from balance_opt.solution import Solution
from balance_opt.solvers import heuristic_names, solver_names, solver_target
from balance_opt.status import Status


def library_heuristics() -> tuple[str, ...]:
    """The heuristics run beside every solve of a set (and by ``balance-opt regress``), in registry order.

    Every built-in of :func:`~balance_opt.solvers.heuristic_names` but ``balance-literal``
    (``balance`` by its literal reference implementation, kept for cross-checks and timing).
    A plug-in's heuristic is left out: the list names columns of the reference tables.
    """
    return tuple(
        name
        for name in heuristic_names()
        if name != "balance-literal" and (solver_target(name) or "").startswith("balance_opt.")
    )


HEURISTICS = library_heuristics()
LEDGER = "attempts.csv"
REFERENCE = "reference.csv"
SOLUTIONS = "solutions"
LEDGER_COLUMNS = (
    "instance", "sha256", "config", "solver", "config_hash", "time_limit_s",
    "status", "served", "feasible", "bound", "runtime_s", "error",
)  # fmt: skip
REFERENCE_COLUMNS = (
    "instance", "sha256", "K", "status", "best_known", "bound", "class", "proofs", "proved_by",
    "bound_by", "best_by", "solution", *HEURISTICS,
)  # fmt: skip
# "easy": the fastest proof took at most this long on the suite's 2 cores.
EASY_SECONDS = 60.0
# A schedule serving every user is optimal by itself: the bound K needs no solver.
ALL_SERVED = "all-served"


class ReferenceContradiction(RuntimeError):
    """A proved bound below a schedule the evaluator accepts: a solver or the evaluator is wrong."""


@dataclass(frozen=True)
class Best:
    """The stored best schedule of one instance, as the evaluator judged it."""

    served: int
    solver: str
    path: str  # relative to the set folder


def _read_csv(path: Path, required: Sequence[str]) -> list[dict[str, str]]:
    if not path.exists():
        return []
    try:
        text = read_bytes(path).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(str(path), "", f"is not UTF-8 text: {exc}") from None
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        missing = [c for c in required if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(str(path), "", f"table lacks columns {missing}")
        rows = list(reader)
    except csv.Error as exc:
        raise InputError(str(path), "", f"is not a CSV table: {exc}") from None
    for i, row in enumerate(rows, start=2):  # line 1 is the header
        if None in row or any(v is None for v in row.values()):
            raise InputError(str(path), f"line {i}", "must have as many cells as the header")
    return rows


_HEX = frozenset("0123456789abcdef")


def _check_reference_row(path: Path, line: int, row: Mapping[str, str]) -> None:
    """A reference row read from elsewhere: names stay plain, numbers are counts, paths stay inside."""

    def fail(column: str, rule: str) -> InputError:
        return InputError(str(path), f"line {line}, column {column}", rule)

    stem = row["instance"]
    if not stem or stem != Path(stem).name or stem.startswith(".") or not stem.isprintable():
        raise fail("instance", f"must be a plain file name without folders, got {stem!r}")
    if len(row["sha256"]) != 64 or not set(row["sha256"]) <= _HEX:
        raise fail("sha256", f"must be 64 lowercase hex digits, got {row['sha256'][:70]!r}")
    for column in ("K", "best_known", "bound"):
        if not (row[column].isascii() and row[column].isdigit() and len(row[column]) <= 9):
            raise fail(column, f"must be a count (0 to 999999999), got {row[column][:20]!r}")
    if row["status"] not in ("optimal", "open"):
        raise fail("status", f"must be optimal or open, got {row['status'][:20]!r}")
    if row.get("proofs") and not (row["proofs"].isascii() and row["proofs"].isdigit()):
        raise fail("proofs", f"must be a count, got {row['proofs'][:20]!r}")
    solution = row.get("solution") or ""
    if solution and PurePosixPath(solution) != PurePosixPath(SOLUTIONS, f"{stem}.json"):
        raise fail("solution", f"must be {SOLUTIONS}/{stem}.json or empty, got {solution[:80]!r}")


def _write_csv(path: Path, columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> None:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({c: _cell(row.get(c)) for c in columns})
    atomic_write(path, buf.getvalue())


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def read_ledger(folder: Path) -> list[dict[str, str]]:
    return _read_csv(folder / LEDGER, LEDGER_COLUMNS)


def write_ledger(folder: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    ordered = sorted(rows, key=lambda r: (r["instance"], r["config"], str(r["config_hash"])))
    _write_csv(folder / LEDGER, LEDGER_COLUMNS, ordered)


def ledger_row(sol: Solution, stem: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """The ledger row of one solution produced by the batch runner."""
    return {
        "instance": stem,
        "sha256": sol.instance_sha256,
        "config": config["name"],
        "solver": sol.solver,
        "config_hash": config["hash"],
        "time_limit_s": config.get("time_limit_s"),
        "status": str(sol.status),
        "served": sol.served,
        "feasible": sol.feasible,
        "bound": sol.bound,
        "runtime_s": f"{sol.runtime_s:.3f}",
        "error": (sol.error or "")[:200],
    }


def read_reference(folder: Path) -> dict[str, dict[str, str]]:
    """``{instance: row}`` of a set's ``reference.csv`` (empty when there is none).

    The table is data from elsewhere: every row is checked before use, so an instance
    name or a ``solution`` path cannot point outside the set folder.
    """
    path = folder / REFERENCE
    rows = _read_csv(path, REFERENCE_COLUMNS[:7])
    out: dict[str, dict[str, str]] = {}
    for line, row in enumerate(rows, start=2):
        _check_reference_row(path, line, row)
        if row["instance"] in out:
            raise InputError(str(path), f"line {line}, column instance", f"repeats {row['instance']!r}")
        out[row["instance"]] = row
    return out


def write_reference(folder: Path, rows: Iterable[Mapping[str, Any]]) -> Path:
    path = folder / REFERENCE
    _write_csv(path, REFERENCE_COLUMNS, sorted(rows, key=lambda r: r["instance"]))
    return path


def proving_solvers() -> list[str]:
    """The tested exact methods of P1: the registry's proving solvers of P1 (held to enumeration)."""
    return solver_names(exact_for="P1")


def _proofs(attempts: Sequence[Mapping[str, str]], value: int) -> dict[str, float]:
    """``{solver: fastest seconds}`` of the exact methods' attempts whose proved bound is ``value``."""
    out: dict[str, float] = {}
    exact = set(proving_solvers())
    for a in attempts:
        if a["solver"] not in exact:
            continue
        if a["status"] != Status.ERROR and a["bound"] != "" and int(a["bound"]) == value:
            t = float(a["runtime_s"])
            out[a["solver"]] = min(t, out.get(a["solver"], t))
    return out


def reference_row(
    stem: str, sha256: str, users: int, attempts: Sequence[Mapping[str, str]], best: Best | None
) -> dict[str, Any]:
    """One row of ``reference.csv``; raises ReferenceContradiction on a bound below a schedule."""
    current = [a for a in attempts if a["sha256"] == sha256]
    best_known = 0 if best is None else best.served
    bounded = [a for a in current if a["status"] != Status.ERROR and a["bound"] != ""]
    bound, bound_by = users, "trivial"  # nobody proved better than K
    for a in sorted(bounded, key=lambda a: (int(a["bound"]), a["solver"])):
        bound, bound_by = int(a["bound"]), a["solver"]
        break
    if bound < best_known:
        raise ReferenceContradiction(
            f"{stem}: {bound_by} proved a bound of {bound}, but the stored schedule of "
            f"{best.solver if best else '?'} serves {best_known} and the evaluator accepts it"
        )
    proofs = _proofs(current, best_known) if bound == best_known else {}
    if best_known == users:
        proofs[ALL_SERVED] = 0.0
    optimal = bool(proofs)  # one proof by a tested exact method, or every user served
    fastest = min(proofs.values(), default=None)
    row: dict[str, Any] = {
        "instance": stem,
        "sha256": sha256,
        "K": users,
        "status": "optimal" if optimal else "open",
        "best_known": best_known,
        "bound": bound,
        "class": "open"
        if not optimal
        else ("easy" if fastest is not None and fastest <= EASY_SECONDS else "hard"),
        "proofs": len(proofs),
        "proved_by": ";".join(f"{s}:{t:.2f}s" for s, t in sorted(proofs.items())),
        "bound_by": bound_by,
        "best_by": "" if best is None else best.solver,
        "solution": "" if best is None else best.path,
    }
    for h in HEURISTICS:
        mine = [a for a in current if a["config"] == h and a["feasible"] == "true"]
        row[h] = max((int(a["served"]) for a in mine), default=None)
    return row
