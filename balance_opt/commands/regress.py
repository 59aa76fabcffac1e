"""``balance-opt regress``: re-solve a reference instance set and report every regression."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from balance_opt.commands._args import jobs, seconds


def register(sub: Any) -> None:
    from balance_opt.batch.regress import EXACT_TIME_LIMIT_S
    from balance_opt.data import ci_dir, shown

    p = sub.add_parser(
        "regress",
        help="check solvers against an instance set's reference values",
        description="Re-solve every instance of FOLDER (default: the installed CI set) with its exact "
        "solver and every heuristic, and compare with FOLDER/reference.csv. Exit status 1 when an optimum "
        "changed, a heuristic serves fewer users, or a schedule is infeasible (one line per problem).",
    )
    p.add_argument(
        "folder",
        nargs="?",
        type=Path,
        metavar="FOLDER",
        help=f"an instance set with its reference.csv (default: the installed CI set, {shown(ci_dir)})",
    )
    p.add_argument(
        "--update",
        action="store_true",
        help="rewrite FOLDER/reference.csv from this run (name FOLDER: never the installed CI set)",
    )
    p.add_argument("--jobs", type=jobs, metavar="N", help="parallel solves (default: up to 2)")
    p.add_argument(
        "--time-limit", type=seconds, default=None, metavar="S",
        help=f"exact solver limit (default: {EXACT_TIME_LIMIT_S:g} s)",
    )  # fmt: skip
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    from balance_opt.batch import regress
    from balance_opt.data import ci_dir, is_packaged
    from balance_opt.errors import UsageError

    # --update writes only where the user points: never into an installed package, whose copy
    # would be lost (or shared by every user) at the next install.
    if args.update and args.folder is None:
        raise UsageError("--update rewrites FOLDER/reference.csv: name FOLDER (a copy of the set you own)")
    if args.update and is_packaged(args.folder):
        raise UsageError(f"--update: {args.folder} lies inside the installed package; copy the set elsewhere")
    folder = args.folder if args.folder is not None else ci_dir()
    start = time.perf_counter()
    limit = args.time_limit if args.time_limit is not None else regress.EXACT_TIME_LIMIT_S
    result = regress.check(folder, jobs=args.jobs, time_limit_s=limit)
    for note in result.notes:
        print(f"note: {note}")
    elapsed = time.perf_counter() - start
    if args.update:
        try:
            path = regress.update(folder, result)
        except RuntimeError as exc:
            print(f"regression: {exc}")
            return 1
        print(f"reference written to {path} ({len(result.rows)} instances, {elapsed:.1f} s)")
        return 0
    for problem in result.problems:
        print(f"regression: {problem}")
    if result.problems:
        print(f"{len(result.problems)} problem(s) in {folder} ({elapsed:.1f} s)", file=sys.stderr)
        return 1
    print(f"ok: {len(result.rows)} instances, {result.solves} solves match the reference ({elapsed:.1f} s)")
    return 0
