"""``balance-opt export``: write the exact P1 model at one z for other MILP solvers.

The model is the one ``milp-highs`` solves (``balance_opt.solvers.milp.formulation``),
written by Pyomo's LP or MPS writer with readable names (``v[x_3]``, ``c[t_ad_2]``),
then moved into place atomically. Time rows are in microseconds, memory rows in MB.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser(
        "export",
        help="write the exact MILP of P1 at one z (LP or MPS file)",
        description="Write the MILP of problem P1 at compute fraction Z (one of the instance's "
        "z_grid values) in LP or MPS format, for any MILP solver.",
    )
    p.add_argument("instance", type=Path, metavar="INSTANCE", help="instance file")
    p.add_argument(
        "--z",
        type=float,
        required=True,
        help="compute fraction of AD, one of the instance's z_grid (required)",
    )
    p.add_argument("--format", choices=("lp", "mps"), default="lp", help="file format (default: lp)")
    p.add_argument("--out", type=Path, required=True, metavar="FILE", help="file to write (required)")
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from balance_opt.errors import InputError
    from balance_opt.evaluator import on_grid
    from balance_opt.io import atomic_write, read_instance

    inst = read_instance(args.instance)
    grid = inst.server.z_grid
    if not on_grid(args.z, grid):
        raise InputError(str(args.instance), "server.z_grid", f"--z {args.z!r} is not one of {list(grid)}")
    z = min(grid, key=lambda g: abs(g - args.z))
    atomic_write(args.out, export_bytes(inst, z, args.format))
    return 0


def export_bytes(inst: Any, z: float, fmt: str) -> bytes:
    """The model of P1 at ``z`` in ``fmt`` (``lp`` or ``mps``), as Pyomo writes it."""
    from balance_opt.errors import SolverUnavailable
    from balance_opt.solvers.base import availability_of
    from balance_opt.solvers.milp.formulation import build

    pyomo = availability_of("export", ("pyomo",), "pyomo")
    if not pyomo:
        raise SolverUnavailable(pyomo.reason)
    from balance_opt.solvers.milp.pyomo_backend import to_pyomo

    model = to_pyomo(build(inst, z))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"model.{fmt}"
        model.write(str(path), io_options={"symbolic_solver_labels": True})  # format from the suffix
        return path.read_bytes()
