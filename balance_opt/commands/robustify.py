"""``balance-opt robustify``: write an instance whose SD iteration counts are quantiles."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser(
        "robustify",
        help="plan SD users for a quantile of their random iteration count",
        description="Write INSTANCE with every user's sd_iterations at the q-quantile of its iteration "
        "count under random draft acceptance, so that every solver plans for that level. With "
        "--batch-users M (or 'auto': the SD users of balance's schedule of INSTANCE) each user gets the "
        "q^(1/M)-quantile, so that all users of an SD batch of up to M finish within their levels with "
        "probability at least q.",
    )
    p.add_argument("instance", type=Path, metavar="INSTANCE", help="instance file")
    p.add_argument("--quantile", type=float, required=True, metavar="Q", help="level q in (0, 1) (required)")
    p.add_argument(
        "--batch-users",
        metavar="M|auto",
        help="a batch-level guarantee for SD batches of up to M users (default: not set, each user's "
        "own q-quantile)",
    )
    p.add_argument(
        "--out", type=Path, required=True, metavar="FILE", help="the instance file to write (required)"
    )
    p.set_defaults(func=handle)


def batch_users_of(text: str | None, inst: Any) -> int | None:
    """``--batch-users``: None, an integer >= 1, or 'auto' (SD users of balance's schedule)."""
    from balance_opt.errors import UsageError

    if text is None:
        return None
    if text == "auto":
        from balance_opt.solvers import get_solver

        res = get_solver("balance").solve(inst)
        return max(1, int((res.schedule.modes == 2).sum()))
    if not text.isdigit() or int(text) < 1:
        raise UsageError(f"--batch-users must be an integer >= 1 or 'auto', got {text!r}")
    return int(text)


def handle(args: argparse.Namespace) -> int:
    from balance_opt.errors import UsageError
    from balance_opt.io import read_instance, write_instance
    from balance_opt.stochastic import robustify

    if not 0.0 < args.quantile < 1.0:
        raise UsageError(f"--quantile must be in (0, 1), got {args.quantile!r}")
    inst = read_instance(args.instance)
    m = batch_users_of(args.batch_users, inst)
    robust = robustify(inst, args.quantile, batch_users=m)
    write_instance(robust, args.out)
    raised = int((robust.sd_iterations > inst.formula_sd_iterations).sum())
    extra = "" if m is None else f", batch of up to {m} SD users"
    print(f"{args.out}: sd_iterations at q = {args.quantile:g}{extra}; {raised} of {inst.num_users} users "
          f"above the expected-value N_k", file=sys.stderr)  # fmt: skip
    return 0
