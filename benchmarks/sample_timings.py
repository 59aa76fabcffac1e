"""A synthetic timings CSV to try ``balance-opt calibrate`` on, without a GPU.

    python -m benchmarks.sample_timings --out examples/timings-synthetic-rtx4090.csv

Not a measurement. Every pass of ``balance-opt profile``'s default grid (batches 1, 2, 4,
8; prompts 32, 128, 512; contexts 128, 512, 1024; verify 2 and 4 tokens) for the paper's
pair, Llama-2-7B and TinyLlama-1.1B, is priced by the model itself under the shipped
``rtx4090`` datasheet profile (``seconds = alpha * FLOPs + beta``, docs/calibration.md),
then multiplied by ``1 + NOISE * (2u - 1)`` with ``u`` uniform from Python's
``random.Random(SEED)`` and rounded to six significant digits. ``calibrate`` should give
back the datasheet's ``alpha`` and ``beta`` within the noise. Each row says where it came
from in its ``provenance`` column (``calibrate`` ignores extra columns). Only exact float
arithmetic, so the same bytes on every machine.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence
from pathlib import Path

from balance_opt.calibration.fit import row_flops
from balance_opt.calibration.timings import COLUMNS, Timing
from balance_opt.calibration.torch_profile import Grid, passes
from balance_opt.io import atomic_write
from balance_opt.profiles import language_model_on

HARDWARE = "rtx4090"
MODELS = {"llm": "llama-2-7b", "slm": "tinyllama-1.1b"}
NOISE = 0.05  # relative, uniform in [-5%, +5%]
SEED = 1
# no commas: the CSV is written without quoting
PROVENANCE = (
    f"synthetic (not measured): {HARDWARE} datasheet profile; uniform noise +-{NOISE:.0%}; seed {SEED}; "
    "benchmarks/sample_timings.py"
)


def sample_rows() -> list[Timing]:
    """The rows of the CSV, in ``balance-opt profile``'s order."""
    rng = random.Random(SEED)  # Mersenne Twister: the same draws on every platform
    rows = []
    for key, name in MODELS.items():
        lm = language_model_on(HARDWARE, name)
        for phase, batch, new, context in passes(key, Grid()):
            shape = Timing(key, phase, batch, new, context, 1.0)
            exact = lm.alpha_s_per_flop * row_flops(lm, shape) + lm.beta_s
            noisy = exact * (1.0 + NOISE * (2.0 * rng.random() - 1.0))
            rows.append(Timing(key, phase, batch, new, context, float(f"{noisy:.6g}")))
    return rows


def sample_csv() -> str:
    """The CSV text: the columns ``calibrate`` reads, then ``provenance``."""
    lines = [",".join((*COLUMNS, "provenance"))]
    for r in sample_rows():
        lines.append(
            f"{r.model},{r.phase},{r.batch},{r.new_tokens},{r.context_tokens},{r.seconds!r},{PROVENANCE}"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("examples/timings-synthetic-rtx4090.csv"))
    args = parser.parse_args(argv)
    print(atomic_write(args.out, sample_csv()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
