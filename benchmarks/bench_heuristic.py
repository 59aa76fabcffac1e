"""Speed of the ``balance`` solver (the fast Algorithm 3), printed as Markdown tables.

    python -m benchmarks.bench_heuristic            # the full tables (tens of minutes)
    python -m benchmarks.bench_heuristic --quick    # a smoke run of a few seconds

Tables: (1) for the fig4, fig5 and tight-memory presets at K = 50, 100, 200, 500, 1000:
median and largest ``Solution.runtime_s`` (wall time of the solve in one process, imports
excluded), median process CPU time of the solve, served users and peak resident memory,
over seeds; ``balance-literal`` is not run there (it walks every tuple: seconds at K = 10,
hours at K = 50) and the table says so; (2) the speed-up over the literal reference
``balance-literal`` on the same instances at K = 6, 8, 10 (one run each, schedules checked
equal); (3) the speed-up over ``exhaustive`` (exact search over 3^K assignments, with exact
pruning); (4) the speed-up over plain enumeration, the paper's exhaustive baseline: every z
and every one of the 3^K assignments judged by the evaluator. Jobs run one at a time; each
(preset, K) of table 1 runs in a fresh process so that its peak memory is its own.
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from balance_opt.evaluator import Schedule, evaluate
from balance_opt.generator import generate
from balance_opt.solution import Solution
from balance_opt.solvers import get_solver


def _solve(name: str, preset: str, users: int, seed: int, **options: Any) -> Solution:
    inst = generate(preset, users=users, seed=seed)
    return get_solver(name, **options).solve(inst)


def worker(preset: str, users: int, seeds: int) -> dict[str, Any]:
    """Table 1 for one (preset, K), measured inside this process."""
    runs, cpu = [], []
    for seed in range(seeds):
        inst = generate(preset, users=users, seed=seed)
        start = time.process_time()
        runs.append(get_solver("balance").solve(inst))
        cpu.append(time.process_time() - start)
    return {
        "preset": preset,
        "users": users,
        "seeds": seeds,
        "median_s": statistics.median(r.runtime_s for r in runs),
        "max_s": max(r.runtime_s for r in runs),
        "median_cpu_s": statistics.median(cpu),
        "median_served": statistics.median(r.served for r in runs),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def table_runtime(presets: Sequence[str], users: Sequence[int], seeds: int, fresh: bool) -> list[str]:
    lines = [
        "| preset | K | seeds | median runtime_s | max runtime_s | median CPU s | median served "
        "| balance-literal | peak RSS (MB) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for preset in presets:
        for k in users:
            if fresh:
                cmd = [sys.executable, "-m", "benchmarks.bench_heuristic", "--worker", preset, str(k)]
                cmd.append(str(seeds))
                row = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
            else:
                row = worker(preset, k, seeds)
            lines.append(
                f"| {preset} | {k} | {seeds} | {row['median_s']:.3f} | {row['max_s']:.3f} | "
                f"{row['median_cpu_s']:.3f} | {row['median_served']:g} | not run (too slow) | "
                f"{row['peak_rss_mb']:.0f} |"
            )
            print(lines[-1], file=sys.stderr, flush=True)
    return lines


def table_vs(other: str, users: Sequence[int], seed: int, **options: Any) -> list[str]:
    """Runtime of ``other`` over that of ``balance`` on the same fig4 instances."""
    lines = [
        f"| K | {other} runtime_s | balance runtime_s | speed-up | {other} served | balance served |",
        "|---|---|---|---|---|---|",
    ]
    for k in users:
        slow = _solve(other, "fig4", k, seed, **options)
        fast = _solve("balance", "fig4", k, seed)
        if other == "balance-literal" and (slow.lam, slow.schedule) != (fast.lam, fast.schedule):
            raise SystemExit(f"fast and literal disagree at K={k}")
        lines.append(
            f"| {k} | {slow.runtime_s:.4f} | {fast.runtime_s:.4f} | {slow.runtime_s / fast.runtime_s:.1f}x | "
            f"{slow.served} | {fast.served} |"
        )
        print(lines[-1], file=sys.stderr, flush=True)
    return lines


def plain_enumeration(preset: str, users: int, seed: int) -> tuple[int, float]:
    """The paper's exhaustive search: (best served, seconds) over every z and 3^K assignment."""
    inst = generate(preset, users=users, seed=seed)
    start = time.perf_counter()
    best = 0
    for z in inst.server.z_grid:
        for modes in itertools.product((0, 1, 2), repeat=inst.num_users):
            ev = evaluate(inst, Schedule(z, np.array(modes, dtype=np.int8)))
            if ev.feasible and ev.served > best:
                best = ev.served
    return best, time.perf_counter() - start


def table_plain(users: Sequence[int], seed: int) -> list[str]:
    """Plain enumeration's time over ``balance``'s, and its optimum against ``exhaustive``'s."""
    lines = [
        "| K | plain enumeration s | balance runtime_s | speed-up | optimum | balance served |",
        "|---|---|---|---|---|---|",
    ]
    for k in users:
        best, seconds = plain_enumeration("fig4", k, seed)
        exact = _solve("exhaustive", "fig4", k, seed, force=True)
        if best != exact.served:
            raise SystemExit(f"plain enumeration and exhaustive disagree at K={k}")
        fast = _solve("balance", "fig4", k, seed)
        lines.append(
            f"| {k} | {seconds:.2f} | {fast.runtime_s:.4f} | {seconds / fast.runtime_s:,.0f}x | "
            f"{best} | {fast.served} |"
        )
        print(lines[-1], file=sys.stderr, flush=True)
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smoke run: small K, one seed")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--users", type=int, nargs="+", default=[50, 100, 200, 500, 1000])
    ap.add_argument("--presets", nargs="+", default=["fig4", "fig5", "tight-memory"])
    ap.add_argument("--worker", nargs=3, metavar=("PRESET", "K", "SEEDS"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        preset, k, seeds = args.worker
        print(json.dumps(worker(preset, int(k), int(seeds))))
        return 0
    if args.quick:
        users, seeds, literal_k, exhaustive_k, plain_k = [50], 1, [6], [8], [5]
    else:
        users, seeds = args.users, args.seeds
        literal_k, exhaustive_k, plain_k = [6, 8, 10], list(range(8, 17)), [8, 9, 10]
    start = time.perf_counter()
    out = [f"Machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}", ""]
    out += ["### balance runtime (seeds 0..n-1)", ""]
    out += table_runtime(args.presets, users, seeds, fresh=not args.quick)
    out += ["", "### speed-up over the literal Algorithm 3 (fig4, seed 0, one run)", ""]
    out += table_vs("balance-literal", literal_k, 0)
    out += ["", "### speed-up over exhaustive search (fig4, seed 0, one run)", ""]
    out += table_vs("exhaustive", exhaustive_k, 0, force=True)
    out += ["", "### speed-up over plain enumeration of every z and 3^K assignments (fig4, seed 0)", ""]
    out += table_plain(plain_k, 0)
    out += ["", f"total wall time {time.perf_counter() - start:.1f} s"]
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
