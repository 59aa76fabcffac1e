"""``balance-opt report``: a README with tables and figures from results tables only."""

from __future__ import annotations

import argparse
import shlex
import sys
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
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    from balance_opt.batch.table import read_results
    from balance_opt.errors import UsageError
    from balance_opt.report import build_report

    df = read_results(args.results)
    if df.empty:
        raise UsageError("the results tables hold no rows")
    command = "balance-opt report " + " ".join(shlex.quote(a) for a in [*args.results, "--out", args.out])
    readme = build_report(df, args.out, title=args.title, command=command, sources=args.results)
    print(f"report written to {readme}", file=sys.stderr)
    return 0
