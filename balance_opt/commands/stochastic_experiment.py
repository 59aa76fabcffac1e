"""``balance-opt stochastic-experiment``: nominal against robust schedules under random acceptance."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from balance_opt.commands._args import count, jobs


def register(sub: Any) -> None:
    p = sub.add_parser(
        "stochastic-experiment",
        help="simulate nominal and robust schedules on the Fig. 4/5 sweeps of K",
        description="Generate the Fig. 4 and Fig. 5 sweeps of K, plan each instance nominally and at robust "
        "SD iteration levels, solve with balance and a reference solver (resuming OUT/runs), simulate every "
        "schedule under random draft acceptance and write OUT/README.md with tables and a figure.",
    )
    p.add_argument(
        "--out",
        default="runs/stochastic",
        metavar="DIR",
        help="output folder (default runs/stochastic; the committed report is reports/stochastic)",
    )
    p.add_argument("--seeds", type=count, default=2, metavar="N", help="seeds 1..N per K (default 2)")
    p.add_argument("--reference", default="exact", metavar="SOLVER", help="reference solver (default exact)")
    p.add_argument(
        "--time-limit", type=float, default=10.0, metavar="S", help="reference limit per solve (default 10)"
    )
    p.add_argument(
        "--trials", type=int, default=2000, metavar="N", help="simulated runs per schedule (default 2000)"
    )
    p.add_argument(
        "--users", default="20,30,40,50,60,70", metavar="K,...", help="values of K (default 20..70)"
    )
    p.add_argument("--jobs", type=jobs, default=1, metavar="N", help="parallel solves (default 1)")
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from balance_opt.errors import UsageError
    from balance_opt.solvers import solver_names
    from balance_opt.stochastic.experiment import Settings, run
    from balance_opt.stochastic.report import write_report

    if args.seeds < 1 or args.jobs < 1 or args.trials < 1 or not args.time_limit > 0:
        raise UsageError("--seeds, --jobs and --trials must be >= 1 and --time-limit > 0")
    parts = args.users.split(",")
    if not all(p.strip().isdigit() and int(p) >= 1 for p in parts):
        raise UsageError(f"--users must be a comma-separated list of integers >= 1, got {args.users!r}")
    if args.reference not in solver_names():
        raise UsageError(
            f"--reference: unknown solver {args.reference!r}; known: {', '.join(solver_names())}"
        )
    argv = ["balance-opt", "stochastic-experiment", "--out", args.out, "--seeds", str(args.seeds),
            "--reference", args.reference, "--time-limit", f"{args.time_limit:g}",
            "--trials", str(args.trials), "--users", args.users, "--jobs", str(args.jobs)]  # fmt: skip
    st = Settings(
        out=Path(args.out),
        seeds=args.seeds,
        reference=args.reference,
        time_limit_s=args.time_limit,
        trials=args.trials,
        jobs=args.jobs,
        users=tuple(int(p) for p in parts),
        command=" ".join(shlex.quote(a) for a in argv),
        log=lambda msg: print(msg, file=sys.stderr, flush=True),
    )
    path = write_report(run(st), st)
    st.log(f"report in {path}")
    return 0
