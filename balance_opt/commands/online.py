"""``balance-opt online``: users arriving over time, policies against the hindsight bound."""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
from pathlib import Path
from typing import Any

from balance_opt.commands._args import jobs, seconds

DEFAULT_POLICIES = "balance,ad-only,sd-only,fcfs-cheaper"


def _numbers(low: float, high: float, what: str) -> Any:
    """An argparse type: a comma-separated list of numbers in (low, high]."""

    def parse(text: str) -> list[float]:
        try:
            values = [float(v) for v in text.split(",") if v.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be comma-separated numbers, got {text!r}") from None
        if not values or any(not (math.isfinite(v) and low < v <= high) for v in values):
            raise argparse.ArgumentTypeError(
                f"every {what} must be a number in ({low:g}, {high:g}], got {text!r}"
            )
        return values

    return parse


def _seeds(text: str) -> list[int]:
    """``1,2,3`` or ``1-5``."""
    try:
        if "-" in text and "," not in text:
            lo, hi = (int(v) for v in text.split("-", 1))
            values = list(range(lo, hi + 1))
        else:
            values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be seeds like 1,2,3 or 1-5, got {text!r}") from None
    if not values or any(not 0 <= v < 2**63 for v in values) or len(values) > 10_000:
        raise argparse.ArgumentTypeError(f"must be 1 to 10000 seeds in [0, 2^63), got {text!r}")
    return values


def register(sub: Any) -> None:
    p = sub.add_parser(
        "online",
        help="simulate users arriving over time under each policy, with the hindsight bound",
        description="Simulate an edge server that receives users over time (Poisson or bursty arrivals "
        "over a preset, or a trace file), decides at every epoch whom to start in AD or SD and with which "
        "split, and runs the batches with realized lengths and random acceptance (docs/online.md). Every "
        "(workload, policy) point is one file under OUT/points/, the results table OUT/results.parquet "
        "has one row per point, and OUT/report/README.md shows SLO attainment against arrival rate and "
        "deadline scale beside the hindsight bound. A rerun resumes.",
    )
    p.add_argument(
        "--out", type=Path, required=True, metavar="RUN_DIR", help="run folder, created (required)"
    )
    _workload_arguments(p.add_argument_group("workloads"))
    _policy_and_run_arguments(p)
    p.add_argument("--json", action="store_true", help="print the results rows as JSON lines")
    p.set_defaults(func=handle)


def _workload_arguments(src: Any) -> None:
    """Where the users come from and how they differ from their prediction."""
    src.add_argument("--preset", default="fig4", help="generator preset of the users (default fig4)")
    src.add_argument(
        "--trace",
        type=Path,
        metavar="CSV",
        help="replay this trace, docs/formats.md (default: not set, arrivals drawn by --process)",
    )
    src.add_argument(
        "--process",
        choices=("poisson", "gamma"),
        default="poisson",
        help="arrival process (default: poisson)",
    )
    src.add_argument(
        "--rates",
        type=_numbers(0.0, 1e4, "rate"),
        default=[1.0],
        metavar="R,..",
        help="arrival rates in users/s (default: 1)",
    )
    src.add_argument(
        "--cv", type=_numbers(0.0, 100.0, "CV"), default=[1.0], help="gamma inter-arrival CVs (default: 1)"
    )
    src.add_argument(
        "--duration", type=seconds, default=600.0, metavar="S", help="arrival span (default 600)"
    )
    src.add_argument("--seeds", type=_seeds, default=[1], help="seeds: 1,2,3 or 1-5 (default 1)")
    src.add_argument(
        "--deadline-scales", type=_numbers(0.0, 1e3, "scale"), default=[1.0], metavar="X,..",
        help="factors applied to every user's deadline (default: 1)",
    )  # fmt: skip
    src.add_argument(
        "--output-cv", type=float, default=0.0, metavar="CV", help="length misprediction CV (default: 0, off)"
    )
    src.add_argument(
        "--acceptance", choices=("random", "expected"), default="random",
        help="random: drafts accepted at random; expected: every SD iteration emits its expected "
        "tokens (default: random)",
    )  # fmt: skip


def _policy_and_run_arguments(p: Any) -> None:
    """The policies under test and how the simulations run."""
    pol = p.add_argument_group("policies")
    pol.add_argument(
        "--policies", default=DEFAULT_POLICIES, help=f"comma-separated (default {DEFAULT_POLICIES})"
    )
    pol.add_argument(
        "--epochs", choices=("window", "event"), default="window", help="decision epochs (default: window)"
    )
    pol.add_argument("--window", type=seconds, default=1.0, metavar="S", help="window length (default 1 s)")
    pol.add_argument(
        "--policy-time-limit",
        type=seconds,
        metavar="S",
        help="per decision, for exact etc. (default: not set, the solver's own)",
    )
    run = p.add_argument_group("running")
    run.add_argument("--jobs", type=jobs, default=1, metavar="N", help="parallel simulations (default: 1)")
    run.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run on this dask scheduler (default: not set, local processes)",
    )
    run.add_argument("--force", action="store_true", help="redo points made with other settings")
    run.add_argument("--no-bound", action="store_true", help="skip the hindsight bounds")
    run.add_argument("--no-report", action="store_true", help="skip OUT/report")
    run.add_argument("--no-progress", action="store_true", help="no progress on stderr")


def points(args: argparse.Namespace) -> list[Any]:
    """Every (workload, policy) point the arguments ask for."""
    from balance_opt.errors import UsageError
    from balance_opt.online.experiment import Point, PolicySpec, WorkloadSpec
    from balance_opt.online.policies import policy_names
    from balance_opt.solvers import solver_names

    names = [n.strip() for n in args.policies.split(",") if n.strip()]
    unknown = [n for n in names if n not in policy_names()]
    if not names or unknown:
        raise UsageError(f"--policies: unknown {unknown or 'none given'}; known: {', '.join(policy_names())}")
    if args.trace is not None and args.output_cv:
        raise UsageError(
            "--output-cv does not apply to --trace: its predicted_output_tokens column gives them"
        )
    if not 0.0 <= args.output_cv <= 10.0:
        raise UsageError(f"--output-cv must be in [0, 10], got {args.output_cv!r}")
    common: dict[str, Any] = dict(
        preset=args.preset, duration_s=args.duration, output_cv=args.output_cv, acceptance=args.acceptance
    )
    specs: list[WorkloadSpec] = []
    for seed in args.seeds:
        for scale in args.deadline_scales:
            if args.trace is not None:
                trace = str(args.trace)
                specs.append(
                    WorkloadSpec(process="trace", trace=trace, seed=seed, deadline_scale=scale, **common)
                )
                continue
            for rate in args.rates:
                for cv in args.cv if args.process == "gamma" else [1.0]:
                    specs.append(WorkloadSpec(process=args.process, rate_per_s=rate, cv=cv, seed=seed,
                                              deadline_scale=scale, **common))  # fmt: skip
    # a time limit is a solver's option: the serving baselines have none
    solvers = set(solver_names())
    pols = [
        PolicySpec(n, args.epochs, args.window, args.policy_time_limit if n in solvers else None)
        for n in names
    ]
    return [Point(w, p) for w in specs for p in pols]


def handle(args: argparse.Namespace) -> int:
    from balance_opt.online.experiment import run_experiment

    todo = points(args)
    if args.trace is not None:
        todo[0].workload.build()  # a bad trace stops here, naming file, row and column
    progress = False if args.no_progress else None
    table = run_experiment(
        args.out, todo, jobs=args.jobs, scheduler=args.scheduler, force=args.force,
        bounds=not args.no_bound, progress=progress,
    )  # fmt: skip
    if not args.no_report:
        from balance_opt.online.report import build_online_report

        command = "balance-opt " + " ".join(shlex.quote(a) for a in getattr(args, "argv", sys.argv[1:]))
        build_online_report(args.out, command)
    if args.json:
        for row in table:
            print(json.dumps(row, default=str, allow_nan=True))
        return 0
    _print_table(table)
    return 0 if all(r.get("status") != "error" for r in table) else 1


def _print_table(table: list[dict[str, Any]]) -> None:
    print(f"{'workload':<44} {'policy':<22} {'served':>7} {'attain':>7} {'bound':>7} {'of bound':>8}")
    for r in table:
        if r.get("status") == "error":
            print(f"{r['instance']:<44} {r['config']:<22} error: {r['error']}")
            continue
        bound = "-" if r.get("bound") is None else str(r["bound"])
        share = r.get("share_of_bound")
        of = "-" if share is None or share != share else f"{share:.3f}"
        print(
            f"{r['instance']:<44} {r['config']:<22} {r['served']:>7} "
            f"{r['attainment']:>7.3f} {bound:>7} {of:>8}"
        )
