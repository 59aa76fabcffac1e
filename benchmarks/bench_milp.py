"""Benchmark of the proving solvers: time to a proved optimum, or the gap at the limit.

One job at a time. For each preset, size and backend, prints the median runtime over the
seeds, how many seeds were proved optimal, and the median and largest gap (bound minus
served). ``exhaustive`` joins the comparison at the sizes it can take.

    python benchmarks/bench_milp.py --presets fig4 fig5 --sizes 16 30 70 --seeds 5
    python benchmarks/bench_milp.py --sizes 10 11 12 --backends milp-highs milp-cpsat exhaustive
    python benchmarks/bench_milp.py --sizes 30 70 --backends exact milp-highs --time-limit 300
    python benchmarks/bench_milp.py --presets fig4 fig5 --sizes 70 --backends exact --work-limit 300

``--work-limit N`` gives ``exact`` the option ``work_limit = N`` (boxes, docs/exact.md) and
no time limit unless ``--time-limit`` is given too: its gaps are the same on every machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from balance_opt.generator import generate
from balance_opt.solvers import get_solver

BACKENDS = ("exact", "milp-highs", "milp-cpsat")
# the per-z statistics --detail prints
DETAIL_KEYS = ("bound", "runtime_s", "skipped", "cutoffs", "combinatorial", "selectors", "nodes", "branches")


def run(
    preset: str,
    users: int,
    seed: int,
    backend: str,
    time_limit: float | None,
    detail: bool = False,
    work_limit: int | None = None,
) -> dict[str, object]:
    """One solve; an exception becomes an ``error`` row. ``detail`` prints the z models."""
    inst = generate(preset, users, seed=seed)
    start = time.perf_counter()
    try:
        options = {} if work_limit is None else {"work_limit": work_limit}
        res = get_solver(backend, **options).solve(inst, time_limit=time_limit, seed=0)
    except Exception as exc:  # one failing run must not end the batch
        return {"status": "error", "runtime_s": time.perf_counter() - start, "error": str(exc)}
    if detail:
        for z, info in res.stats.get("z_models", {}).items():
            kept = {k: v for k, v in info.items() if k in DETAIL_KEYS}
            shown = {k: round(v, 2) if isinstance(v, float) else v for k, v in kept.items()}
            print(f"  {preset} K={users} seed={seed} {backend} z={z}: {shown}")
    return {
        "status": res.status,
        "served": res.served,
        "bound": res.bound,
        "gap": res.gap(),
        "runtime_s": res.runtime_s,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--presets", nargs="+", default=["fig4", "fig5"])
    p.add_argument("--sizes", nargs="+", type=int, default=[16, 30, 70])
    p.add_argument("--seeds", type=int, default=5, help="seeds 1..N per size")
    p.add_argument("--backends", nargs="+", default=list(BACKENDS))
    p.add_argument("--time-limit", type=float, help="seconds per instance (600 without --work-limit)")
    p.add_argument("--work-limit", type=int, metavar="N", help="exact's work_limit option (boxes)")
    p.add_argument("--detail", action="store_true", help="also print every z model of every run")
    args = p.parse_args(argv)
    limit = 600.0 if args.time_limit is None and args.work_limit is None else args.time_limit
    header = f"{'preset':6} {'K':>3} {'backend':11} {'median_s':>9} {'optimal':>8} "
    header += f"{'gap_med':>7} {'gap_max':>7}  served, gap (per seed)"
    print(header)
    for preset in args.presets:
        for users in args.sizes:
            for backend in args.backends:
                rows = [
                    run(preset, users, s, backend, limit, args.detail, args.work_limit)
                    for s in range(1, args.seeds + 1)
                ]
                times = [float(r["runtime_s"]) for r in rows]  # type: ignore[arg-type]
                gaps = [int(r["gap"]) for r in rows if r.get("gap") is not None]  # type: ignore[call-overload]
                n_opt = sum(r["status"] == "optimal" for r in rows)
                served = ",".join(str(r.get("served", "err")) for r in rows)
                served += "  " + ",".join(str(r.get("gap")) for r in rows)
                gap_med = f"{statistics.median(gaps):7g}" if gaps else "      -"
                gap_max = f"{max(gaps):7d}" if gaps else "      -"
                print(
                    f"{preset:6} {users:3d} {backend:11} {statistics.median(times):9.2f} "
                    f"{n_opt:4d}/{len(rows):<3d} {gap_med} {gap_max}  {served}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
