"""``balance-opt profile``: time random-weight models on a device and write a timings CSV."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def _ints(text: str) -> tuple[int, ...]:
    from balance_opt.calibration.torch_profile import parse_ints

    try:
        return parse_ints(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def register(sub: Any) -> None:
    from balance_opt.calibration.torch_profile import Grid

    d = Grid()
    p = sub.add_parser(
        "profile",
        help="time prefill/decode/verify passes of random-weight models (needs PyTorch)",
        description="Build the LLM and SLM from their architecture numbers with random weights "
        "(nothing is downloaded), time their forward passes over a grid on DEVICE and write the "
        "timings CSV that 'balance-opt calibrate' reads. Needs the 'profile' extra (PyTorch).",
    )
    p.add_argument("--llm", default="llama-2-7b", metavar="NAME", help="LLM profile (default llama-2-7b)")
    p.add_argument(
        "--slm", default="tinyllama-1.1b", metavar="NAME", help="SLM profile (default tinyllama-1.1b)"
    )
    p.add_argument(
        "--out", required=True, type=Path, metavar="TIMINGS.csv", help="timings CSV to write (required)"
    )
    p.add_argument("--device", default="cuda", help="torch device (default cuda)")
    p.add_argument("--dtype", default=None, choices=("float16", "bfloat16", "float32"),
                   help="weights and activations (default float16 on cuda, float32 elsewhere)")  # fmt: skip
    g = p.add_argument_group("grid")
    for flag, default, metavar, text in (
        ("--batches", d.batches, "B,...", "batch sizes"),
        ("--prompt-lengths", d.prompt_lengths, "L,...", "prompt tokens of a prefill pass"),
        ("--contexts", d.contexts, "C,...", "cached tokens of a decode or verify pass"),
        ("--verify-tokens", d.verify_tokens, "M,...", "tokens checked by a verify pass"),
    ):
        shown = ",".join(str(v) for v in default)
        g.add_argument(flag, type=_ints, default=default, metavar=metavar, help=f"{text} (default: {shown})")
    g.add_argument("--repeats", type=int, default=d.repeats, metavar="N", help="timed runs per pass (median)")
    g.add_argument("--warmup", type=int, default=d.warmup, metavar="N", help="untimed runs per pass")
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from balance_opt.calibration.timings import timings_csv
    from balance_opt.calibration.torch_profile import Grid, profile_pair, require_torch
    from balance_opt.errors import UsageError
    from balance_opt.io import atomic_write
    from balance_opt.profiles import get_model

    try:
        torch = require_torch()
        archs = {"llm": get_model(args.llm), "slm": get_model(args.slm)}
    except (ImportError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise UsageError(f"--device {args.device}: PyTorch sees no CUDA device here (try --device cpu)")
    if args.repeats < 1 or args.warmup < 0:
        raise UsageError("--repeats must be >= 1 and --warmup >= 0")
    dtype = args.dtype or ("float16" if args.device.startswith("cuda") else "float32")
    grid = Grid(
        args.batches, args.prompt_lengths, args.contexts, args.verify_tokens, args.repeats, args.warmup
    )
    rows = profile_pair(archs, grid, args.device, dtype, log=lambda m: print(m, file=sys.stderr, flush=True))
    print(atomic_write(args.out, timings_csv(rows)))
    return 0
