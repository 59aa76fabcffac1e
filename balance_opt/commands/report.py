"""``balance-opt report``: a README with tables and figures from results tables only."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser(
        "report",
        help="write a comparison report from results tables",
        description="Read RUN_DIR/results.parquet (or a results .parquet / .csv file) of one or more "
        "runs and write README.md, CSV tables and PNG + SVG figures to --out.",
    )
    p.add_argument("results", nargs="+", metavar="RESULTS", help="run folder or results table file")
    p.add_argument("--out", required=True, metavar="DIR", help="report folder, e.g. reports/NAME (required)")
    p.add_argument("--title", default="Benchmark report", help="the README's heading")
    p.add_argument(
        "--library",
        type=Path,
        metavar="DIR",
        help="benchmark library whose proved optima stand in for instances of the runs that it holds, "
        "matched by sha256 (default: the library installed with balance-opt)",
    )
    p.add_argument("--no-library", action="store_true", help="use no library optima, only the runs' own")
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    from balance_opt.batch.table import read_results
    from balance_opt.data import library_dir
    from balance_opt.errors import UsageError
    from balance_opt.report import build_report
    from balance_opt.report.known import attach_library_optima, library_optima

    df = read_results(args.results)
    if df.empty:
        raise UsageError("the results tables hold no rows")
    sections: list[str] = []
    if not args.no_library:
        library = args.library if args.library is not None else library_dir()
        df, matched = attach_library_optima(df, library_optima([library]))
        # the installed library's path is this machine's: the report names it by what it is
        where = "installed with balance-opt" if args.library is None else f"at `{args.library}`"
        if matched:
            sections = [
                f"Proved optima of {matched} of the instances come from the reference tables of the "
                f"benchmark library {where}, matched by the instance file's sha256.",
                "",
            ]
    command = "balance-opt " + " ".join(shlex.quote(a) for a in args.argv)
    readme = build_report(
        df, args.out, title=args.title, command=command, sources=args.results, sections=sections
    )
    print(f"report written to {readme}", file=sys.stderr)
    return 0
