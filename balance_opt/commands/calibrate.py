"""``balance-opt calibrate``: fit alpha and beta of each model from a CSV of measured passes."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    from balance_opt.profiles import MODELS

    p = sub.add_parser(
        "calibrate",
        help="fit alpha (s/FLOP) and beta (s/pass) of the LLM and SLM from measured timings",
        description="Read a timings CSV (columns model, phase, batch, new_tokens, context_tokens, "
        "seconds; see docs/calibration.md), compute each row's workload with the model's own FLOP "
        "formulas, fit seconds = alpha * FLOPs + beta per model by non-negative least squares on "
        "relative residuals, and write a hardware-profile JSON for 'generate --hardware-file'.",
    )
    p.add_argument("timings", type=Path, metavar="TIMINGS.csv", help="measured forward passes")
    models = ", ".join(MODELS)
    p.add_argument("--llm", required=True, metavar="NAME", help=f"LLM profile: {models} (required)")
    p.add_argument("--slm", required=True, metavar="NAME", help="SLM profile, as --llm (required)")
    p.add_argument(
        "--out", required=True, type=Path, metavar="PROFILE.json", help="fitted profile (required)"
    )
    p.add_argument("--name", help="profile name (default: the output file's stem)")
    p.add_argument(
        "--memory-bytes",
        type=float,
        metavar="Q",
        help="record the GPU's capacity Q in bytes (default: not set, none recorded)",
    )
    p.add_argument(
        "--plot",
        type=Path,
        metavar="FIG",
        help="residual figure FIG.png and FIG.svg (default: not set, no figure)",
    )
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from balance_opt.calibration.fit import FitError, fit_models, residual_figure
    from balance_opt.calibration.profile_file import profile_json, write_profile
    from balance_opt.calibration.timings import read_timings
    from balance_opt.errors import InputError, UsageError
    from balance_opt.profiles import get_model

    names = {"llm": args.llm, "slm": args.slm}
    try:
        models = {key: get_model(name).language_model(1.0, 0.0) for key, name in names.items()}
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.memory_bytes is not None and not args.memory_bytes > 0:
        raise UsageError(f"--memory-bytes must be > 0, got {args.memory_bytes!r}")
    rows = read_timings(args.timings)
    try:
        fits = fit_models(models, rows)
    except FitError as exc:
        raise InputError(str(args.timings), "", str(exc)) from None
    # the command that writes this profile again: every option that changes the file
    argv = ["balance-opt", "calibrate", str(args.timings), "--llm", args.llm, "--slm", args.slm]
    if args.name is not None:
        argv += ["--name", args.name]
    if args.memory_bytes is not None:
        argv += ["--memory-bytes", repr(args.memory_bytes)]
    text = profile_json(
        args.name or args.out.stem, " ".join(shlex.quote(a) for a in argv), names, fits, args.memory_bytes
    )
    print(write_profile(args.out, text))
    for key, fit in fits.items():
        worst = max(e.max for e in fit.errors.values())
        print(
            f"{key} {names[key]}: alpha = {fit.alpha_s_per_flop:.4g} s/FLOP, beta = {fit.beta_s:.4g} s "
            f"({fit.rows} rows, worst relative error {100 * worst:.1f}%)"
        )
    if args.plot is not None:
        from balance_opt.report import figures

        for path in figures.save(residual_figure(models, rows, fits), args.plot):
            print(path)
    return 0
