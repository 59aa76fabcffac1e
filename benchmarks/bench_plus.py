"""Quality and speed of ``balance-plus`` against ``balance`` and ``ad-only`` on the library's sets.

    python -m benchmarks.bench_plus                 # every set of instances/paper (tens of minutes)
    python -m benchmarks.bench_plus --sets fig6     # some sets
    python -m benchmarks.bench_plus --quick         # a smoke run of about 20 s

For each set and each K: served / optimum (mean and smallest) over the instances whose
optimum is proved (``reference.csv``: status ``optimal``, column ``best_known``), and the
median ``Solution.runtime_s`` of the solve (wall time in this process, one job at a time).
Sets with open instances (``large``) are compared with their best known value instead, and
the table says so. Every schedule is the evaluator's (an infeasible one counts 0 served).
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from balance_opt.io import read_instance
from balance_opt.solvers import get_solver

LIBRARY = Path(__file__).resolve().parents[1] / "instances" / "paper"
SOLVERS = ("balance", "balance-plus", "ad-only")
PROVED_SETS = ("fig4a", "fig4b", "fig5a", "fig5b", "fig6", "adversarial")
# the quick run: small instances of two sets, a few seconds each
QUICK = {"fig6": 11, "adversarial": 10}


@dataclass(frozen=True)
class Row:
    """One instance of a set: its path, K, the value compared against, and whether it is proved."""

    name: str
    path: Path
    users: int
    target: int
    proved: bool


def rows_of(name: str, most_users: int | None = None) -> list[Row]:
    """The instances of set ``name`` with a positive best known value (and at most ``most_users``)."""
    with open(LIBRARY / name / "reference.csv", newline="") as fh:
        table = list(csv.DictReader(fh))
    rows = [
        Row(r["instance"], LIBRARY / name / f"{r['instance']}.json", int(r["K"]), int(r["best_known"]),
            r["status"] == "optimal")
        for r in table
        if int(r["best_known"]) > 0
    ]  # fmt: skip
    return [r for r in rows if most_users is None or r.users <= most_users]


def measure(rows: Sequence[Row], solvers: Sequence[str]) -> dict[str, list[tuple[Row, int, float]]]:
    """Per solver: (row, served, seconds) for every row, solved one at a time."""
    out: dict[str, list[tuple[Row, int, float]]] = {s: [] for s in solvers}
    for row in rows:
        inst = read_instance(row.path)
        for s in solvers:
            res = get_solver(s).solve(inst)
            out[s].append((row, res.served, res.runtime_s))
    return out


def table(name: str, got: dict[str, list[tuple[Row, int, float]]], by_k: bool) -> list[str]:
    """Markdown lines: one per K (and one for the whole set) with each solver's ratio and seconds."""
    first = next(iter(got.values()))
    proved = all(r.proved for r, _, _ in first)
    what = "optimum" if proved else "best known"
    head = ["set", "K", "n"] + [f"{s} served/{what} mean, min" for s in got]
    head += [f"{s} s (median)" for s in got]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    groups = sorted({r.users for r, _, _ in first}) if by_k else []
    for k in [*groups, None]:

        def pick(runs: list[tuple[Row, int, float]], k: int | None = k) -> list[tuple[Row, int, float]]:
            return [x for x in runs if k is None or x[0].users == k]

        sel = {s: pick(runs) for s, runs in got.items()}
        n = len(next(iter(sel.values())))
        cells = [name, "all" if k is None else str(k), str(n)]
        for runs in sel.values():
            ratios = [served / r.target for r, served, _ in runs]
            cells.append(f"{statistics.fmean(ratios):.4f}, {min(ratios):.3f}")
        cells += [f"{statistics.median(t for _, _, t in runs):.3f}" for runs in sel.values()]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", nargs="+", default=[*PROVED_SETS, "large"], help="library sets to run")
    ap.add_argument("--solvers", nargs="+", default=list(SOLVERS))
    ap.add_argument("--quick", action="store_true", help="a smoke run: small instances of fig6, adversarial")
    ap.add_argument("--by-k", action="store_true", help="a line per K as well as per set")
    args = ap.parse_args(argv)
    sets = QUICK if args.quick else dict.fromkeys(args.sets)
    summary: dict[str, list[float]] = {s: [] for s in args.solvers}
    for name, most in sets.items():
        rows = rows_of(name, most)
        got = measure(rows, args.solvers)
        print("\n".join(table(name, got, args.by_k)) + "\n", flush=True)
        if name in PROVED_SETS[:5]:
            for s, runs in got.items():
                summary[s] += [served / r.target for r, served, _ in runs if r.proved]
    if any(summary.values()):
        parts = [f"{s} {statistics.fmean(v):.4f}" for s, v in summary.items() if v]
        print(f"served / optimum over the proved instances of fig4a..fig6 run here: {', '.join(parts)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
