"""Benchmark of a refutation's parts: SCIP's CPU seconds per part, whole and halved.

One z of one instance is split as ``milp-scip`` splits it in a refutation (``split``
parts by ``split_by``, the caps of the combinatorial bounds as rows, ``served >= cutoff +
1``); the chosen parts are solved with ``--limit`` CPU seconds each, and a part left open
is halved again (``bisect``) up to ``--depth`` times, as option ``split_depth`` does. A
line per solve, then the part's total. ``--scip`` tries one of SCIP's parameter presets
against the defaults the backend uses. One job at a time.

With ``--journal DIR`` the solves go through the journal of ``milp-scip`` (``clock =
"cpu"``) as a refutation's do: a part answered before is replayed (``replayed``), and
each new answer is kept, under the key the refutation's own model has. A campaign can so
give one z of an instance to a second core while ``library refs`` works on another z;
the refutation replays those answers when it reaches that z (docs/library.md).

    python benchmarks/bench_refute_parts.py instances/paper/fig4a/k-60-s0005.json \
        --cutoff 37 --z 0.4 --parts 15 16 --limit 40 --depth 4
    python benchmarks/bench_refute_parts.py instances/paper/fig4a/k-60-s0005.json \
        --cutoff 37 --z 0.4 --parts 10 11 --limit 300 --depth 0 --scip heuristics-off
    python benchmarks/bench_refute_parts.py instances/paper/fig4a/k-60-s0005.json \
        --cutoff 37 --z 0.9 --limit 40 --depth 4 --journal journal/fig4a
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

from balance_opt.io import read_instance
from balance_opt.model import latency_limits
from balance_opt.solvers.milp.formulation import BackendResult, build
from balance_opt.solvers.milp.journal import Backend, Journal, journaled
from balance_opt.solvers.milp.linear import Formulation
from balance_opt.solvers.milp.options import SPLITS_BY
from balance_opt.solvers.milp.scip_backend import CLOCK_TYPES, SCIP_PARAMS, solve_scip, to_scip
from balance_opt.solvers.milp.split import Spec, bisect, label_of, part_of, split_specs
from balance_opt.solvers.milp.z_sweep import _combinatorial_bound, _ZState, with_rows
from balance_opt.status import Termination

PRESETS = ("default", "heuristics-off", "separating-aggressive", "presolve-aggressive", "optimality")


def solve(f: Formulation, limit: float, preset: str) -> tuple[str, float, float | None]:
    """SCIP on ``f`` as the backend sets it up, plus ``preset``: (status, CPU s, dual bound)."""
    from pyscipopt import SCIP_PARAMEMPHASIS, SCIP_PARAMSETTING

    m, _ = to_scip(f)
    for key, value in {**SCIP_PARAMS, "limits/time": limit, "timing/clocktype": CLOCK_TYPES["cpu"]}.items():
        m.setParam(key, value)
    if preset == "heuristics-off":
        m.setHeuristics(SCIP_PARAMSETTING.OFF)
    elif preset == "separating-aggressive":
        m.setSeparating(SCIP_PARAMSETTING.AGGRESSIVE)
    elif preset == "presolve-aggressive":
        m.setPresolve(SCIP_PARAMSETTING.AGGRESSIVE)
    elif preset == "optimality":
        m.setEmphasis(SCIP_PARAMEMPHASIS.OPTIMALITY)
    t0 = time.process_time()
    m.optimize()
    seconds = time.process_time() - t0
    status = {"timelimit": "time_limit"}.get(str(m.getStatus()), str(m.getStatus()))
    bound = None if status == "infeasible" else float(m.getDualbound())
    return status, seconds, bound


def journaled_scip(folder: Path) -> Backend:
    """``milp-scip``'s backend on the CPU clock through the journal in ``folder``."""

    def scip(f: Formulation, limit: float | None, start: Any, strict: bool) -> BackendResult:
        return solve_scip(f, time_limit=limit, seed=0, start=start, clock="cpu")

    return journaled(scip, Journal(folder), "milp-scip", "cpu")


def solve_journaled(backend: Backend, f: Formulation, limit: float) -> tuple[str, float, float | None]:
    """(status, CPU s, dual bound) of a journaled solve; ``replayed`` where the journal answered."""
    t0 = time.process_time()
    res = backend(f, limit, None, False)
    seconds = time.process_time() - t0
    if res.stats.get("journal") == "replayed":
        return (
            ("replayed" if res.termination == Termination.INFEASIBLE else "replayed-open"),
            seconds,
            res.bound,
        )
    if res.values is not None:  # a schedule serving more than the cutoff: the refutation fails
        return "SCHEDULE", seconds, res.bound
    return res.termination.value, seconds, res.bound


def run_part(ctx: dict[str, Any], spec: Spec, depth: int, args: argparse.Namespace) -> float:
    """Solve ``spec``, halving it while it stays open; the CPU seconds of all its solves
    (infinite when a leaf stays open at the last depth)."""
    st, limits = ctx["state"], ctx["limits"]
    model = with_rows(part_of(st.form, limits, spec), args.cutoff + 1, [], st.caps)
    if ctx["backend"] is None:
        status, seconds, bound = solve(model, args.limit, args.scip)
    else:
        status, seconds, bound = solve_journaled(ctx["backend"], model, args.limit)
    label = {
        k: [round(v, 3) for v in iv] if isinstance(iv, list) else iv
        for k, iv in label_of(st.form, limits, spec).items()
    }
    shown = "-" if bound is None else f"{bound:.2f}"
    print(f"{'  ' * depth}{depth:5d} {status:10} {seconds:8.1f} {shown:>7}  {label}", flush=True)
    halves = bisect(spec) if status in ("time_limit", "replayed-open") and depth < args.depth else []
    if halves:
        return seconds + sum(run_part(ctx, h, depth + 1, args) for h in halves)
    return seconds if status in ("infeasible", "replayed") else math.inf


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("instance", help="an instance file")
    p.add_argument("--cutoff", type=int, required=True, help="refute more than this many served")
    p.add_argument("--z", type=float, required=True, help="the z of the grid to split")
    p.add_argument("--parts", nargs="+", type=int, help="the parts to solve, by index (default: all)")
    p.add_argument("--split", type=int, default=6)
    p.add_argument("--by", choices=SPLITS_BY, default="limits")
    p.add_argument("--limit", type=float, default=40.0, help="CPU seconds per solve")
    p.add_argument("--depth", type=int, default=4, help="times a part left open is halved again")
    p.add_argument("--scip", choices=PRESETS, default="default", help="a SCIP parameter preset")
    p.add_argument("--journal", type=Path, metavar="DIR", help="replay and keep answers in this journal")
    args = p.parse_args(argv)
    if args.journal is not None and args.scip != "default":
        p.error("--journal keeps milp-scip's answers: only with --scip default")
    inst = read_instance(args.instance)
    z = min(inst.server.z_grid, key=lambda g: abs(g - args.z))
    st = _ZState(build(inst, z), 0)
    _combinatorial_bound(inst, st, args.cutoff, None)  # the caps, as the refutation has them
    limits = latency_limits(inst)
    specs = split_specs(st.form, limits, st.caps, args.cutoff + 1, args.split, args.by)
    picks = args.parts if args.parts is not None else list(range(len(specs)))
    print(f"z={z:g} cutoff={args.cutoff} parts={len(specs)} limit={args.limit:g}", end=" ")
    print(f"depth={args.depth} scip={args.scip}")
    print(f"{'part':>4} {'depth':>5} {'status':10} {'cpu_s':>8} {'bound':>7}  label")
    for i in picks:
        print(f"{i:4d}", flush=True)
        backend = None if args.journal is None else journaled_scip(args.journal)
        total = run_part({"state": st, "limits": limits, "backend": backend}, specs[i], 0, args)
        print(f"{i:4d} total {'open' if math.isinf(total) else f'{total:.1f}'} CPU s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
