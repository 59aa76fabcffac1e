"""``balance-opt generate``: write seeded instance files from the paper's presets."""

from __future__ import annotations

import argparse
import dataclasses
import math
from pathlib import Path
from typing import Any

from balance_opt.commands._args import files, seed, users
from balance_opt.families import FAMILIES, build_family
from balance_opt.generator import PRESETS, GeneratorParams, generate_from, instance_name, preset_params
from balance_opt.instance_checks import MAX_GRID
from balance_opt.profiles import FITTED, HARDWARE, MODELS


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def _range(kind: type) -> Any:
    """``MIN,MAX`` (or one value for both) as a pair of ``kind``."""

    def parse(text: str) -> tuple[Any, Any]:
        parts = text.split(",")
        try:
            values = [kind(p) for p in parts]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected MIN,MAX or one value, got {text!r}") from None
        if len(values) not in (1, 2):
            raise argparse.ArgumentTypeError(f"expected MIN,MAX or one value, got {text!r}")
        return values[0], values[-1]

    return parse


def step_grid(step: float) -> tuple[float, ...]:
    """``0, step, 2 step, ..., 1``; ``1 / step`` must be a whole number."""
    if not (math.isfinite(step) and 1.0 / (MAX_GRID - 1) <= step <= 1.0):
        raise ValueError(
            f"--grid-step must be in [{1.0 / (MAX_GRID - 1):g}, 1] "
            f"(grids of at most {MAX_GRID} values), got {step!r}"
        )
    n = round(1.0 / step)
    if abs(n * step - 1.0) > 1e-9:
        raise ValueError(f"--grid-step must divide 1 into whole steps, got {step!r}")
    return tuple(round(i / n, 12) for i in range(n + 1))


# (flag, GeneratorParams field, type, help); register() adds each default (_preset_default)
_KNOBS: tuple[tuple[str, str, type, str], ...] = (
    ("--llm", "llm", str, "LLM profile: " + ", ".join(MODELS)),
    ("--slm", "slm", str, "SLM profile, as --llm"),
    (
        "--hardware",
        "hardware",
        str,
        "hardware profile: " + ", ".join([*HARDWARE, *(f"{n} (fitted)" for n in FITTED)]),
    ),
    ("--bytes-per-param", "bytes_per_param", float, "theta (2 = FP16)"),
    ("--memory-bytes", "memory_bytes", float, "Q in bytes (default: the hardware's capacity)"),
    (
        "--kv-budget-tokens",
        "kv_budget_tokens",
        float,
        "tight memory: Q = weights of both models + this many tokens of LLM+SLM KV cache",
    ),
    ("--draft-length", "draft_length", int, "LD"),
    ("--bits-per-token", "bits_per_token", float, "gamma"),
    ("--acceptance-min", "acceptance_min", float, "A ~ U[min, max]"),
    ("--acceptance-max", "acceptance_max", float, "the upper end of A's range"),
    ("--deadline-min", "deadline_min_s", float, "T ~ U[min, max] seconds"),
    ("--deadline-max", "deadline_max_s", float, "the upper end of T's range"),
    ("--input-min", "input_min", int, "LI ~ U{min..max}"),
    ("--input-max", "input_max", int, "the upper end of LI's range"),
    ("--output-min", "output_min", int, "LO ~ U{min..max}"),
    ("--output-max", "output_max", int, "the upper end of LO's range"),
    ("--radius", "radius_m", float, "coverage radius in m"),
    ("--min-distance", "min_distance_m", float, "minimum user distance in m"),
    ("--uplink-bandwidth", "uplink_bandwidth_hz", float, "B in Hz"),
    ("--downlink-bandwidth", "downlink_bandwidth_hz", float, "Bd in Hz"),
    ("--uplink-psd", "uplink_psd_dbm_hz", float, "uplink transmit PSD in dBm/Hz"),
    ("--downlink-psd", "downlink_psd_dbm_hz", float, "downlink transmit PSD in dBm/Hz"),
    ("--noise-psd", "noise_dbm_hz", float, "noise PSD in dBm/Hz"),
    ("--path-loss-1km", "path_loss_db_at_1km", float, "path loss at 1 km in dB"),
    ("--path-loss-slope", "path_loss_db_per_decade", float, "path loss per decade of distance in dB"),
)

# Shorthand flags that set a (min, max) pair: flag -> (type, min field, max field).
_RANGES: dict[str, tuple[type, str, str]] = {
    "--input-tokens": (int, "input_min", "input_max"),
    "--output-tokens": (int, "output_min", "output_max"),
    "--deadline": (float, "deadline_min_s", "deadline_max_s"),
    "--acceptance": (float, "acceptance_min", "acceptance_max"),
}


def _text(value: Any) -> str:
    if value is None:
        return "not set"
    if isinstance(value, tuple):
        return ",".join(_text(v) for v in value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def _preset_default(field: str) -> str:
    """A knob's default as --help shows it: fig4's value, then each preset that differs."""
    values = {name: getattr(preset_params(name), field) for name in PRESETS}
    fig4 = values.pop("fig4")
    others = [f"{name}: {_text(v)}" for name, v in values.items() if v != fig4]
    return f"(default: the preset's, fig4: {_text(fig4)}{''.join('; ' + o for o in others)})"


def _flag_of(field: str) -> str:
    return next(flag for flag, f, _kind, _text in _KNOBS if f == field)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "generate",
        help="write seeded instance files (presets fig4, fig5, fig1, tight-memory, theorem1-tight)",
        description="Write instance files. Each file records the seed and every parameter; "
        "the same command writes byte-identical files. --count N writes seeds seed..seed+N-1 "
        "as <preset>-K<K>-s<seed>.json. Preset theorem1-tight is the hand-built family where "
        "BALANCE serves exactly half of the optimum (K = 2m; knobs --users, --seed, --draft-length, "
        "--hardware, --llm, --slm, --bytes-per-param, --bits-per-token; docs/worst-case.md).",
    )
    p.add_argument(
        "--preset", choices=[*PRESETS, *FAMILIES], default="fig4", help="parameter set (default fig4)"
    )
    p.add_argument(
        "--users", "-K", type=users, metavar="K",
        help="number of users K (default: the preset's, fig4, fig5, tight-memory: 30; fig1: 1; "
        "theorem1-tight: 20)",
    )  # fmt: skip
    p.add_argument(
        "--seed", type=seed, default=0, metavar="SEED", help="seed of the first instance (default 0)"
    )
    p.add_argument(
        "--count", type=files, default=1, metavar="N", help="number of instances (seeds SEED, SEED+1, ...)"
    )
    p.add_argument("--out", required=True, type=Path, metavar="DIR", help="output folder (required)")
    p.add_argument(
        "--name", help="instance name, only with --count 1 (default: PRESET-K<K>-s<SEED>, as 4 digits)"
    )
    _add_knobs(p.add_argument_group("knobs (override the preset)"))
    p.set_defaults(func=handle)


def _add_knobs(g: Any) -> None:
    for flag, (kind, lo, hi) in _RANGES.items():
        g.add_argument(
            flag,
            type=_range(kind),
            dest=f"range_{lo}",
            metavar="MIN[,MAX]",
            help=f"sets {_flag_of(lo)} and {_flag_of(hi)}, one value both (default: theirs)",
        )
    for flag, field, kind, text in _KNOBS:
        metavar = {str: "NAME", int: "N"}.get(kind, "X")
        help_ = text if "default" in text else f"{text} {_preset_default(field)}"
        g.add_argument(flag, type=kind, dest=f"knob_{field}", metavar=metavar, help=help_)
    g.add_argument(
        "--hardware-file",
        type=Path,
        metavar="PROFILE.json",
        help="alpha and beta of both models (and Q, if recorded) from 'balance-opt calibrate' "
        "(default: not set, the --hardware profile's)",
    )
    grid = _preset_default("z_grid")
    g.add_argument(
        "--z-grid", type=_floats, metavar="Z,...", help=f"compute-fraction grid, e.g. 0,0.25,0.5,1 {grid}"
    )
    g.add_argument("--lambda-grid", type=_floats, metavar="L,...", help=f"memory-fraction grid {grid}")
    g.add_argument(
        "--grid-step", type=float, metavar="STEP",
        help="both grids 0, STEP, ..., 1, e.g. 0.1 (default: not set, --z-grid and --lambda-grid)",
    )  # fmt: skip


def params_from_args(args: argparse.Namespace) -> GeneratorParams:
    """The generator parameters of a parsed command line (seed of the first instance)."""
    return preset_params(args.preset, seed=args.seed, **overrides_from_args(args))


def overrides_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The knobs a command line sets, by GeneratorParams field name."""
    overrides: dict[str, Any] = {}
    for _kind, lo, hi in _RANGES.values():
        pair = getattr(args, f"range_{lo}")
        if pair is not None:
            overrides[lo], overrides[hi] = pair
    for _flag, field, _kind, _text in _KNOBS:
        value = getattr(args, f"knob_{field}")
        if value is not None:
            overrides[field] = value
    if args.grid_step is not None:
        overrides["z_grid"] = overrides["lambda_grid"] = step_grid(args.grid_step)
    for f in ("z_grid", "lambda_grid"):
        if getattr(args, f) is not None:
            overrides[f] = getattr(args, f)
    if args.hardware_file is not None:
        _apply_hardware_file(
            args.hardware_file, overrides, keep_memory="kv_budget_tokens" in PRESETS[args.preset]
        )
    if args.users is not None:
        overrides["users"] = args.users
    if args.name is not None:
        overrides["name"] = args.name
    return overrides


def _apply_hardware_file(path: Path, overrides: dict[str, Any], keep_memory: bool) -> None:
    """The measured constants of a calibrated profile as generator overrides."""
    from balance_opt.calibration.profile_file import read_profile

    hw = read_profile(path)
    for key, consts in (("llm", hw.llm), ("slm", hw.slm)):
        if overrides.get(key, consts.name) != consts.name:
            raise ValueError(f"--{key} {overrides[key]} differs from {path}'s {key} {consts.name}")
        overrides[key] = consts.name
        overrides[f"{key}_alpha_s_per_flop"] = consts.alpha_s_per_flop
        overrides[f"{key}_beta_s"] = consts.beta_s
    # A recorded capacity replaces the hardware's, not a capacity the command or preset sets.
    if (
        hw.memory_bytes is not None
        and not keep_memory
        and not {"memory_bytes", "kv_budget_tokens"} & set(overrides)
    ):
        overrides["memory_bytes"] = hw.memory_bytes


def _plain_file_name(name: str) -> bool:
    """A name that stays inside ``--out`` as ``NAME.json`` on every operating system."""
    plain = name.isprintable() and not name.startswith(".") and not set(name) & set("/\\:")
    return 0 < len(name) <= 200 and plain  # 200: file systems allow 255 bytes, and ".json" follows


def handle(args: argparse.Namespace) -> int:
    from balance_opt.errors import UsageError
    from balance_opt.io import write_instance

    if args.count < 1:
        raise UsageError(f"--count must be >= 1, got {args.count}")
    if args.name is not None and args.count > 1:
        raise UsageError("--name needs --count 1 (names of a batch encode their seeds)")
    if args.name is not None and not _plain_file_name(args.name):
        raise UsageError(
            f"--name {args.name[:60]!r}: must be a plain file name of 1 to 200 characters (no folder "
            "separators, no leading '.', no control characters): the file is written as --out/NAME.json"
        )
    if args.preset in FAMILIES:
        return _write_family(args)
    try:
        base = params_from_args(args)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    for i in range(args.count):
        params = dataclasses.replace(base, seed=base.seed + i)
        path = args.out / f"{instance_name(params)}.json"
        try:
            inst = generate_from(params)
        except ValueError as exc:  # a knob's value the instance's rules refuse (InvalidInstance)
            raise UsageError(f"the options give an invalid instance: {exc}") from None
        write_instance(inst, path)
        print(path)
    return 0


def _write_family(args: argparse.Namespace) -> int:
    """Instances of a hand-built family (balance_opt/families.py), seeds seed..seed+count-1."""
    from balance_opt.errors import UsageError
    from balance_opt.io import write_instance

    if args.hardware_file is not None:
        raise UsageError(f"--hardware-file is not a knob of preset {args.preset}")
    try:
        overrides = overrides_from_args(args)
        instances = [build_family(args.preset, seed=args.seed + i, **overrides) for i in range(args.count)]
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    for inst in instances:
        path = args.out / f"{inst.name}.json"
        write_instance(inst, path)
        print(path)
    return 0
