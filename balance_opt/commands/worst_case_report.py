"""``balance-opt worst-case-report``: the worst case of BALANCE against Theorem 1's bound."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    from balance_opt.data import library_dir, shown

    p = sub.add_parser(
        "worst-case-report",
        help="write the worst-case report (the tight family, the adversary's finds, the library)",
        description="Solve the theorem1-tight family for m up to its largest, re-solve the adversary's finds "
        "of the library's adversarial set, and gather balance / optimum over the library's proved "
        "instances; write README.md, CSV tables and figures to --out (docs/worst-case.md).",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=Path("runs/worst-case"),
        metavar="DIR",
        help="report folder (default runs/worst-case; the committed report is reports/worst-case)",
    )
    p.add_argument(
        "--library",
        type=Path,
        metavar="DIR",
        help=f"the library (default: the installed library, {shown(library_dir)})",
    )
    p.add_argument(
        "--m", type=str, metavar="M,...", help="family sizes to solve (default 1..10, 15, 20, ..., 95)"
    )
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from balance_opt.data import library_dir
    from balance_opt.errors import UsageError
    from balance_opt.families import TightParams, largest_m
    from balance_opt.report.worst_case import FAMILY_M, build_worst_case_report

    try:
        ms = FAMILY_M if args.m is None else tuple(int(v) for v in args.m.split(","))
    except ValueError:
        raise UsageError(f"--m must be comma-separated whole numbers, got {args.m!r}") from None
    top = largest_m(TightParams())
    if not all(1 <= m <= top for m in ms):
        raise UsageError(f"--m values must be within 1..{top} (the family's largest m)")
    library = args.library if args.library is not None else library_dir()
    if not (library / "adversarial").is_dir():
        raise UsageError(f"{library}: no adversarial set (balance-opt library generate)")
    # The report records the command as typed: an install's site-packages path is no part of it.
    words = ["balance-opt", "worst-case-report", "--out", str(args.out)]
    words += [] if args.library is None else ["--library", str(args.library)]
    words += [] if args.m is None else ["--m", args.m]
    readme = build_worst_case_report(args.out, library, " ".join(shlex.quote(w) for w in words), ms)
    print(f"report written to {readme}", file=sys.stderr)
    return 0
