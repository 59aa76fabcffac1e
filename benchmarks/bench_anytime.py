"""Benchmark of `exact`'s anytime profile: how soon the proved gap closes.

One job at a time. For each instance, one `exact` solve under the limit; its ``trace``
(``[seconds, served, bound]`` each time either changes) gives the first moment the gap
(bound minus served) was at most 5, 2, 1 and 0 users. Prints one row per solve, then
the medians per preset and size (a gap never reached counts as the whole limit).

    python benchmarks/bench_anytime.py --presets fig4 fig5 --sizes 100 --seeds 5 --time-limit 600
"""

from __future__ import annotations

import argparse
import statistics
import sys

from balance_opt.generator import generate
from balance_opt.solvers import get_solver

GAPS = (5, 2, 1, 0)


def first_within(trace: list[list[float]], gap: int) -> float | None:
    """Seconds into the solve when ``bound - served <= gap`` first held (None: never)."""
    return next((float(t) for t, served, bound in trace if bound - served <= gap), None)


def run(preset: str, users: int, seed: int, time_limit: float) -> dict[str, object]:
    """One `exact` solve and its anytime milestones."""
    res = get_solver("exact").solve(generate(preset, users, seed=seed), time_limit=time_limit)
    trace = res.stats.get("trace", [])
    return {
        "status": res.status,
        "served": res.served,
        "bound": res.bound,
        "runtime_s": res.runtime_s,
        **{f"gap<={g}": first_within(trace, g) for g in GAPS},
    }


def _seconds(x: object, limit: float) -> float:
    return limit if x is None else float(x)  # type: ignore[arg-type]


def _fmt(x: object) -> str:
    return "-" if x is None else f"{x:.1f}" if isinstance(x, float) else str(x)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--presets", nargs="+", default=["fig4", "fig5"])
    p.add_argument("--sizes", nargs="+", type=int, default=[70])
    p.add_argument("--seeds", type=int, default=5, help="seeds 1..N per size")
    p.add_argument("--time-limit", type=float, default=600.0, help="seconds per instance")
    args = p.parse_args(argv)
    cols = ["status", "served", "bound", "runtime_s", *(f"gap<={g}" for g in GAPS)]
    print(f"{'preset':6} {'K':>4} {'seed':>4} " + " ".join(f"{c:>10}" for c in cols))
    summary = []
    for preset in args.presets:
        for users in args.sizes:
            rows = [run(preset, users, seed, args.time_limit) for seed in range(1, args.seeds + 1)]
            for seed, row in enumerate(rows, 1):
                print(f"{preset:6} {users:>4} {seed:>4} " + " ".join(f"{_fmt(row[c]):>10}" for c in cols))
                sys.stdout.flush()
            med = {  # a gap never reached counts as the whole limit
                c: statistics.median(_seconds(r[c], args.time_limit) for r in rows)
                for c in ("runtime_s", *(f"gap<={g}" for g in GAPS))
            }
            optimal = sum(r["status"] == "optimal" for r in rows)
            summary.append(f"{preset:6} {users:>4} median: {optimal}/{len(rows)} optimal, " + ", ".join(
                f"{c} {v:.1f} s" for c, v in med.items()))  # fmt: skip
    print("\n".join(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
