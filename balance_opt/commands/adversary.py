"""``balance-opt adversary``: search for an instance where a heuristic is far from the optimum."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from balance_opt.commands._args import count, seconds, seed


def register(sub: Any) -> None:
    p = sub.add_parser(
        "adversary",
        help="search for an instance minimising a heuristic's served / optimum",
        description="Random search over the generator's knobs, then local moves on per-user values and "
        "on the set of users, for the instance where a registered heuristic serves the smallest share "
        "of the optimum (P1 by exhaustive search up to 12 users and by exact above; P2 by exhaustive-p2 "
        "with --against p2). Writes DIR/worst.json, DIR/summary.json and DIR/timings.json (the "
        "seconds taken). The same seed and --budget-evals write the same worst.json and summary.json; "
        "a --budget-s run stops wherever the clock does (docs/worst-case.md).",
    )
    p.add_argument(
        "--solver", required=True, metavar="NAME", help="a registered heuristic, e.g. balance (required)"
    )
    p.add_argument(
        "--users", "-K", type=int, required=True, metavar="K", help="users per instance (required)"
    )
    p.add_argument("--seed", type=seed, default=0, help="seed of the search (default 0)")
    p.add_argument(
        "--budget-s", type=seconds, metavar="S",
        help="stop after S seconds (default: not set; give --budget-s, --budget-evals or both)",
    )  # fmt: skip
    p.add_argument(
        "--budget-evals", type=count, metavar="N",
        help="stop after N evaluations, reproducible (default: not set)",
    )  # fmt: skip
    p.add_argument("--against", choices=("p1", "p2"), default="p1", help="the optimum of P1 (default) or P2")
    p.add_argument(
        "--grids",
        choices=("paper", "free"),
        default="paper",
        help="paper: Z = Lambda = {0, 0.1, ..., 1} (default); free: random subsets of it, also moved",
    )
    p.add_argument(
        "--min-optimum",
        type=int,
        default=3,
        metavar="N",
        help="count only instances with optimum >= N (default 3)",
    )
    p.add_argument(
        "--random-evals",
        type=int,
        default=100,
        metavar="N",
        help="random instances before local search (default 100)",
    )
    p.add_argument(
        "--exact-time-limit",
        type=float,
        default=30.0,
        metavar="S",
        help="per-candidate limit of exact, K > 12 (default: 30 s)",
    )
    p.add_argument("--out", required=True, type=Path, metavar="DIR", help="output folder (required)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=handle)


def _bar(args: argparse.Namespace) -> Any:
    from tqdm import tqdm

    by_evals = args.budget_evals is not None
    total = args.budget_evals if by_evals else args.budget_s
    show = sys.stderr.isatty() and not args.quiet
    return tqdm(total=total, file=sys.stderr, disable=not show, unit="eval" if by_evals else "s",
                dynamic_ncols=True)  # fmt: skip


def handle(args: argparse.Namespace) -> int:
    from balance_opt.adversary.output import write
    from balance_opt.adversary.search import Outcome, Settings, search
    from balance_opt.errors import UsageError

    settings = Settings(
        solver=args.solver,
        users=args.users,
        seed=args.seed,
        budget_s=args.budget_s,
        budget_evals=args.budget_evals,
        against=args.against,
        grids=args.grids,
        min_optimum=args.min_optimum,
        random_evals=args.random_evals,
        exact_time_limit_s=args.exact_time_limit,
    )
    try:
        settings.check()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    bar = _bar(args)

    def tick(out: Outcome) -> None:
        bar.n = (
            out.evaluations
            if args.budget_evals is not None
            else min(bar.total, round(bar.format_dict["elapsed"]))
        )
        if out.best is not None:
            bar.set_postfix_str(f"worst {out.best.served}/{out.best.optimum}", refresh=False)
        bar.refresh()

    with bar:
        out = search(settings, tick)
    for path in write(settings, out, args.out):
        print(path)
    if out.best is None:
        print(
            f"no instance with an optimum >= {args.min_optimum} in {out.evaluations} evaluations",
            file=sys.stderr,
        )
        return 1
    b = out.best
    print(
        f"{args.solver}: {b.served} of {b.optimum} ({float(b.ratio):.4f}) after {out.evaluations} evaluations"
    )
    return 0
