"""``balance-opt experiment``: rerun the paper's figures and report our numbers beside its own."""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from balance_opt.commands._args import count, jobs, seconds


def register(sub: Any) -> None:
    from balance_opt.batch.experiments import DEFAULT_SEEDS, DEFAULT_TIME_LIMIT_S, NAMES

    p = sub.add_parser(
        "experiment",
        help="reproduce a figure of the paper (or all of them)",
        description="Generate the figure's sweep, solve it (resuming from OUT/runs), and write its report "
        "with our numbers beside the paper's. 'all' runs every figure and writes OUT/README.md.",
    )
    p.add_argument(
        "name", choices=(*NAMES, "fig7", "all"), help="a figure; fig7 = fig7a + fig7b; all = every one"
    )
    p.add_argument(
        "--seeds", type=count, default=DEFAULT_SEEDS, metavar="N", help="seeds 1..N per sweep point"
    )
    p.add_argument(
        "--out",
        default="runs/paper-reproduction",
        metavar="DIR",
        help="output folder (default runs/paper-reproduction; the committed reports are under "
        "reports/paper-reproduction, rebuilt by naming it)",
    )
    p.add_argument("--time-limit", type=seconds, default=DEFAULT_TIME_LIMIT_S, metavar="S",
                   help="per-solve limit of the exact solvers")  # fmt: skip
    p.add_argument("--jobs", type=jobs, default=1, metavar="N", help="parallel solves (Fig. 6 always uses 1)")
    p.add_argument(
        "--report-only",
        action="store_true",
        help="rebuild the reports from the results tables in OUT/runs: no instance generated, nothing "
        "solved (give the options of the run, which the reports state)",
    )
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    from balance_opt.batch.experiments import NAMES, Settings
    from balance_opt.errors import UsageError
    from balance_opt.report.paper import run_experiment, write_overview

    if args.seeds < 1 or args.jobs < 1 or not args.time_limit > 0:
        raise UsageError("--seeds and --jobs must be >= 1 and --time-limit > 0")
    argv = ["balance-opt", "experiment", args.name, "--seeds", str(args.seeds), "--out", args.out,
            "--time-limit", f"{args.time_limit:g}", "--jobs", str(args.jobs)]  # fmt: skip
    st = Settings(
        out=Path(args.out),
        seeds=args.seeds,
        time_limit_s=args.time_limit,
        jobs=args.jobs,
        command=" ".join(shlex.quote(a) for a in argv),
        log=lambda msg: print(msg, file=sys.stderr, flush=True),
    )
    # Fig. 7 has two panels (against K and against Tmax); "fig7" names both.
    groups = {"all": list(NAMES), "fig7": ["fig7a", "fig7b"]}
    names = groups.get(args.name, [args.name])
    results = {}
    for name in names:
        start = time.perf_counter()
        results[name] = run_experiment(name, st, solve=not args.report_only)
        st.log(f"{name}: report in {st.out / name} ({time.perf_counter() - start:.0f} s)")
    if args.name == "all":
        path = write_overview(st.out, results, st)
        st.log(f"overview in {path}")
    return 0
