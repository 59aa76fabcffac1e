"""``balance-opt demo``: a small end-to-end benchmark (generate, solve, report) in a few minutes."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from balance_opt.commands._args import jobs

# The embedded benchmark: six Fig. 4 instances, K = 10..15, seed 1.
DEMO_PRESET = "fig4"
DEMO_USERS = (10, 11, 12, 13, 14, 15)
DEMO_SEED = 1
DEMO_EXACT = "milp-highs"
DEMO_TIME_LIMIT_S = 60.0


def demo_solvers() -> tuple[str, ...]:
    """The solvers run with their defaults: the library's heuristics and exhaustive search."""
    from balance_opt.library.reference import library_heuristics

    return (*library_heuristics(), "exhaustive")


class _HelpNamingSolvers(argparse.Action):
    """``-h, --help`` that names the demo's solvers in the description first.

    Naming them imports every solver class: done only when the help is asked for, since the
    command line registers every command at each start.
    """

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        solvers = ", ".join([*demo_solvers(), f"{DEMO_EXACT} ({DEMO_TIME_LIMIT_S:g} s)"])
        parser.description = f"{parser.description} Solvers: {solvers}."
        parser.print_help()
        parser.exit()


def register(sub: Any) -> None:
    p = sub.add_parser(
        "demo",
        help="run a small benchmark end to end and write its report",
        description="Generate six Fig. 4 instances (K = 10..15), solve them with BALANCE, the baselines, "
        "the ablations, balance-plus, exhaustive search and the HiGHS MILP, and write a report. "
        "Rerunning resumes.",
        add_help=False,
    )
    p.add_argument("-h", "--help", action=_HelpNamingSolvers, help="show this help message and exit")
    p.add_argument(
        "--out", default="balance-opt-demo", metavar="DIR", help="folder for instances, run, report"
    )
    p.add_argument("--jobs", type=jobs, default=1, metavar="N", help="parallel solves (default 1: timing)")
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    from balance_opt.batch.configs import make_config
    from balance_opt.batch.runner import run_batch
    from balance_opt.batch.table import read_results
    from balance_opt.generator import generate
    from balance_opt.io import write_instance
    from balance_opt.report import build_report

    start = time.perf_counter()
    out = Path(args.out)
    paths = []
    for users in DEMO_USERS:
        inst = generate(DEMO_PRESET, users=users, seed=DEMO_SEED)
        paths.append(write_instance(inst, out / "instances" / f"{inst.name}.json"))
    configs = [make_config(s) for s in demo_solvers()]
    configs.append(make_config(DEMO_EXACT, time_limit_s=DEMO_TIME_LIMIT_S))
    print(f"solving {len(paths)} instances with {len(configs)} solvers in {out / 'run'}", file=sys.stderr)
    outcome = run_batch(paths, configs, out / "run", jobs=args.jobs)
    counts = ", ".join(f"{n} {s}" for s, n in sorted(outcome.statuses.items())) or "nothing new"
    print(f"{outcome.solved} solved ({counts}), {outcome.skipped} already done", file=sys.stderr)
    readme = build_report(
        read_results([out / "run"]),
        out / "report",
        title="balance-opt demo",
        command=f"balance-opt demo --out {args.out}",
        sources=["run"],
    )
    print(f"report: {readme} ({time.perf_counter() - start:.0f} s)")
    return 0
