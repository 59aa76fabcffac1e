"""Benchmark of `exact`'s work: boxes, LPs, CPU and wall seconds, peak memory per solve.

One job at a time. Box and LP counts are deterministic (the same on a loaded machine),
and CPU seconds are less disturbed by other work than wall seconds, so this is the
benchmark for before/after comparisons on a shared machine: run it from two checkouts
(``PYTHONPATH=<checkout>``) one seed after the other. Prints one row per solve, then the
medians per preset and size.

    python benchmarks/bench_exact.py --presets fig4 fig5 --sizes 30 --seeds 5 --threads 1
    python benchmarks/bench_exact.py --presets fig4 --sizes 1000 --seeds 1 --time-limit 600
    python benchmarks/bench_exact.py --presets fig5 --sizes 500 --first-seed 2 --seeds 2 --time-limit 600
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time

from balance_opt.generator import generate
from balance_opt.solvers import get_solver

COLS = ("status", "served", "bound", "boxes", "lps", "narrowed", "cpu_s", "wall_s", "peak_mb")


def run(preset: str, users: int, seed: int, time_limit: float | None, threads: int) -> dict[str, object]:
    """One `exact` solve and its work counters."""
    inst = generate(preset, users, seed=seed)
    cpu, wall = time.process_time(), time.perf_counter()
    res = get_solver("exact", threads=threads).solve(inst, time_limit=time_limit)
    return {
        "status": res.status,
        "served": res.served,
        "bound": res.bound,
        "boxes": res.stats.get("boxes"),
        "lps": res.stats.get("lps"),
        "narrowed": res.stats.get("narrowed", "-"),  # absent before range shrinking
        "cpu_s": round(time.process_time() - cpu, 2),
        "wall_s": round(time.perf_counter() - wall, 2),
        # the process's peak so far (kilobytes on Linux): one size per process to read it alone
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--presets", nargs="+", default=["fig4", "fig5"])
    p.add_argument("--sizes", nargs="+", type=int, default=[30])
    p.add_argument("--seeds", type=int, default=5, help="seeds FIRST..FIRST+N-1 per size")
    p.add_argument("--first-seed", type=int, default=1, metavar="FIRST")
    p.add_argument("--time-limit", type=float, default=None, help="seconds per instance")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    print(f"{'preset':6} {'K':>4} {'seed':>4} " + " ".join(f"{c:>9}" for c in COLS))
    summary = []
    for preset in args.presets:
        for users in args.sizes:
            rows = []
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                row = run(preset, users, seed, args.time_limit, args.threads)
                rows.append(row)
                cells = " ".join(f"{row[c]!s:>9}" for c in COLS)
                print(f"{preset:6} {users:>4} {seed:>4} {cells}", flush=True)
            med = {c: statistics.median(float(r[c]) for r in rows) for c in ("cpu_s", "wall_s")}  # type: ignore[arg-type]
            boxes = sum(int(r["boxes"]) for r in rows)  # type: ignore[call-overload]
            optimal = sum(r["status"] == "optimal" for r in rows)
            summary.append(f"{preset:6} {users:>4}: {optimal}/{len(rows)} optimal, boxes {boxes} in all, "
                           f"median cpu {med['cpu_s']:.2f} s, median wall {med['wall_s']:.2f} s")  # fmt: skip
    print("\n".join(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
