"""``balance-opt check``: score solutions from any solver against the benchmark library.

Exit status 0 when every schedule is matched and feasible and its claims hold, 1 when
one is infeasible or claims what the evaluator or the library refutes (a claimed bound or
optimum below the library's best feasible schedule is a FALSE PROOF, also said on standard
error), 2 on bad input (an unknown instance, a malformed file; one line each on standard
error).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from balance_opt.errors import printable

if TYPE_CHECKING:
    from balance_opt.library.check import Score

COLUMNS = ("solution", "set", "instance", "solver", "feasible", "served", "best_known", "bound",
           "reference_status", "reference_proofs", "gap", "ratio", "new_record", "note")  # fmt: skip


def register(sub: Any) -> None:
    from balance_opt.data import library_dir, shown

    p = sub.add_parser(
        "check",
        help="score solutions from any solver against the benchmark library",
        description="Re-check every schedule with the evaluator, match it to its library instance "
        "(by instance_sha256, else by instance name) and compare it with the best known value. "
        "SOLUTION_OR_DIR: solution files, folders of them (searched recursively), or results "
        "tables (results.csv / results.parquet of a run folder). Exit status 0: all feasible and "
        "matched; 1: an infeasible schedule or a claim the evaluator or the library refutes (a bound "
        "or optimality claim below the library's best feasible schedule is a FALSE PROOF); 2: bad input.",
    )
    p.add_argument("paths", nargs="+", type=Path, metavar="SOLUTION_OR_DIR")
    p.add_argument(
        "--library", type=Path, metavar="DIR",
        help=f"the library, or one set of it (default: the installed library, {shown(library_dir)}; "
        "balance-opt library where prints it)",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="also write DIR/check.md and DIR/check.csv (default: not set, print only)",
    )
    p.set_defaults(func=handle)


def note(s: Score) -> str:
    """What a reader must not miss, loudest first."""
    parts = []
    if s.above_bound:
        parts.append(f"ABOVE THE PROVED BOUND {s.bound}: the reference or the evaluator is wrong")
    elif s.new_record:
        parts.append(f"NEW RECORD: serves {s.served}, best known {s.best_known}")
    if not s.feasible:
        parts.append(f"INFEASIBLE: {s.violation}")
    parts += [f"FALSE PROOF: {m}" for m in s.false_proofs]
    parts += [f"claim mismatch: {m}" for m in s.claim_mismatches if m not in s.false_proofs]
    return "; ".join(parts)


def rows(scores: Sequence[Score]) -> list[dict[str, Any]]:
    out = []
    for s in scores:
        d = s.to_dict()
        d["note"] = note(s)
        out.append({c: d[c] for c in COLUMNS})
    return out


def _text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4f}"
    return printable(str(value))  # a file name may hold control characters


def markdown(table: Sequence[dict[str, Any]]) -> str:
    head = [c for c in COLUMNS if c != "note"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_text(r[c]) for c in head) + " |" for r in table]
    notes = [f"- `{r['solution']}`: {r['note']}" for r in table if r["note"]]
    return "\n".join(["# Check against the library", "", *lines, "", *notes, ""])


def summary(scores: Sequence[Score], errors: int) -> dict[str, int]:
    return {
        "solutions": len(scores),
        "feasible": sum(s.feasible for s in scores),
        "at_best_known": sum(s.feasible and s.gap == 0 for s in scores),
        "new_records": sum(s.new_record for s in scores),
        "claim_mismatches": sum(bool(s.claim_mismatches) for s in scores),
        "false_proofs": sum(bool(s.false_proofs) for s in scores),
        "bad_inputs": errors,
    }


def write_out(folder: Path, table: Sequence[dict[str, Any]]) -> None:
    from balance_opt.io import atomic_write

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: ("" if v is None else v) for k, v in r.items()} for r in table)
    atomic_write(folder / "check.csv", buf.getvalue())
    atomic_write(folder / "check.md", markdown(table))


def print_text(table: Sequence[dict[str, Any]], totals: dict[str, int]) -> None:
    head = ("solution", "instance", "feasible", "served", "best_known", "gap", "ratio", "solver")
    widths = [max([len(h), *(len(_text(r[h])) for r in table)]) for h in head]
    print("  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip())
    for r in table:
        print("  ".join(_text(r[h]).ljust(w) for h, w in zip(head, widths, strict=True)).rstrip())
        if r["note"]:
            print(f"    ^ {r['note']}")
    print(", ".join(f"{n} {k.replace('_', ' ')}" for k, n in totals.items()))


def handle(args: argparse.Namespace) -> int:
    from balance_opt.data import library_dir
    from balance_opt.library.check import Library, check_paths

    library = Library([args.library if args.library is not None else library_dir()])
    scores, errors = check_paths(library, args.paths)
    for exc in errors:
        print(f"balance-opt check: error: {exc}", file=sys.stderr)
    for s in scores:
        if s.new_record or s.above_bound:
            print(f"balance-opt check: {note(s)} ({s.set}/{s.instance}, {s.solution})", file=sys.stderr)
        for proof in s.false_proofs:  # a wrong "optimal" is the worst defect: never only in the table
            print(f"balance-opt check: FALSE PROOF: {s.solution} {proof}", file=sys.stderr)
    table = rows(scores)
    totals = summary(scores, len(errors))
    if args.out is not None:
        write_out(args.out, table)
    if args.json:
        docs = [{**s.to_dict(), "note": note(s)} for s in scores]
        print(json.dumps({"solutions": docs, "summary": totals}, allow_nan=False))
    else:
        print_text(table, totals)
    if errors:
        return 2
    return 0 if all(s.ok for s in scores) else 1
