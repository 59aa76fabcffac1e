"""``balance-opt simulate``: Monte-Carlo of a schedule under random draft acceptance."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser(
        "simulate",
        help="simulate a schedule under random draft acceptance",
        description="Run the schedule of SOLUTION on INSTANCE TRIALS times with random draft acceptance "
        "(each draft accepted with the user's rate until the first rejection) and report how often each "
        "served user meets its deadline, the goodput and how often memory overflows (docs/stochastic.md).",
    )
    p.add_argument("instance", type=Path, metavar="INSTANCE", help="instance file")
    p.add_argument("solution", type=Path, metavar="SOLUTION", help="solution file")
    p.add_argument("--trials", type=int, default=10_000, metavar="N", help="independent runs (default 10000)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="random seed (default 0)")
    p.add_argument(
        "--output-cv",
        type=float,
        default=0.0,
        metavar="CV",
        help="coefficient of variation of log-normal output-length noise (default 0: off)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from balance_opt.errors import UsageError
    from balance_opt.evaluator import Schedule
    from balance_opt.io import read_bytes, read_instance, read_solution, sha256_bytes
    from balance_opt.stochastic.simulate import simulate, summary

    if args.trials < 1 or args.seed < 0 or not 0.0 <= args.output_cv < 100.0:
        raise UsageError("--trials must be >= 1, --seed >= 0 and --output-cv in [0, 100)")
    inst = read_instance(args.instance)
    sol = read_solution(args.solution, inst)
    schedule = Schedule.from_assignment(inst, sol.z, sol.assignment)
    result = simulate(inst, schedule, args.trials, args.seed, args.output_cv)
    out = summary(inst, schedule, result, args.seed, args.output_cv)
    # the random model reads only LO, A and LD; the plan (sd_iterations) is the file's
    sha = sol.instance_sha256  # optional (docs/formats.md): None when the file has none
    out["instance_sha256_matches"] = None if sha is None else sha == sha256_bytes(read_bytes(args.instance))
    if args.json:
        print(json.dumps(out, allow_nan=False))
        return 0
    if out["instance_sha256_matches"] is False:
        print(
            f"note: {args.solution} was solved for other instance bytes than {args.instance}", file=sys.stderr
        )
    print(f"{args.solution}: z = {out['z']:g}, {out['num_ad']} AD + {out['num_sd']} SD users, "
          f"nominally {'feasible' if out['feasible'] else 'INFEASIBLE'}")  # fmt: skip
    print(f"{out['trials']} trials (seed {out['seed']}): goodput mean {out['goodput_mean']:.3f}, "
          f"5th percentile {out['goodput_p05']}, of {out['served']} served")  # fmt: skip
    print(
        f"deadline-miss rate {out['deadline_miss_rate']:.4f}, all met in {out['p_all_meet']:.4f} "
        f"of trials, memory overflow in {out['p_memory_overflow']:.4f}"
    )
    if out["t_sd_mean"] is not None:
        print(f"SD latency: nominal {out['t_sd_nominal']:.4f} s, mean {out['t_sd_mean']:.4f} s, "
              f"95th percentile {out['t_sd_p95']:.4f} s; all SD users within the planned N_k in "
              f"{out['p_sd_within_plan']:.4f} of trials")  # fmt: skip
    for u in out["users"]:
        if u["p_meet"] < 1.0:
            print(f"  {u['id']} ({u['mode']}): meets its deadline in {u['p_meet']:.4f} of trials")
    return 0
