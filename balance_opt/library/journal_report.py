"""What a journal of MILP proofs holds (``balance-opt library journal DIR``).

A campaign's journal (docs/milp.md, "A journal of proofs") is a folder of one file per
model answered; this reads every entry, checks it as a replay would (format, key, file
name, termination), and counts the entries and their solve seconds per solver, clock and
answer, the figures docs/library.md quotes for each campaign.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from balance_opt.errors import InputError, UsageError
from balance_opt.solvers.milp.journal import Journal


@dataclass
class JournalRow:
    """The entries of one solver, clock and answer (``infeasible`` or ``time_limit``)."""

    solver: str
    clock: str
    termination: str
    entries: int = 0
    seconds: float = 0.0  # solve seconds the entries took, as recorded
    limits: list[float] = field(default_factory=list)  # the time each solve was given


def journal_rows(folder: Path) -> list[JournalRow]:
    """One row per (solver, clock, termination), sorted; a malformed or misplaced entry is
    an :class:`InputError` naming its file, a missing folder a :class:`UsageError`."""
    if not folder.is_dir():
        raise UsageError(f"{folder}: not a journal folder")
    journal = Journal(folder)
    rows: dict[tuple[str, str, str], JournalRow] = {}
    for path in sorted(folder.rglob("*.json")):
        if path != journal.path(path.stem):  # a replay looks for it at <digest[:2]>/<digest>.json
            raise InputError(str(path), "", f"not where its name puts it ({journal.path(path.stem)})")
        entry = journal.get(path.stem)
        assert entry is not None  # the file exists: get() returns it or raises
        for name in ("solver", "seconds"):
            if name not in entry:
                raise InputError(str(path), name, "is missing")
        key = (str(entry["solver"]), str(entry.get("clock") or "wall"), str(entry["termination"]))
        row = rows.setdefault(key, JournalRow(*key))
        row.entries += 1
        row.seconds += float(entry["seconds"])
        if entry.get("time_limit") is not None:
            row.limits.append(float(entry["time_limit"]))
    return [rows[k] for k in sorted(rows)]


def format_rows(rows: list[JournalRow]) -> list[str]:
    """The table ``library journal`` prints, with a total line."""
    out = [f"{'solver':12} {'clock':5} {'answer':11} {'entries':>7} {'solve_s':>9}  limits_s"]
    for r in rows:
        # a solve's limit is what was left of its z's or part's time: to the second
        limits = ", ".join(str(s) for s in sorted({round(x) for x in r.limits})) or "-"
        out.append(f"{r.solver:12} {r.clock:5} {r.termination:11} {r.entries:7d} {r.seconds:9.1f}  {limits}")
    total_s = sum(r.seconds for r in rows)
    out.append(f"{'total':30} {sum(r.entries for r in rows):7d} {total_s:9.1f}")
    return out
