"""Speed of the online simulator: one hour of arrivals at 5 users/s, per policy.

    python -m benchmarks.bench_online            # 18,000 users, the targets of docs/online.md
    python -m benchmarks.bench_online --quick    # a smoke run of a few seconds

Each row is one :func:`balance_opt.online.simulate` of a Poisson workload of the ``fig4``
preset (random acceptance, output-length CV 0.3) with 1 s decision windows, timed as wall
time in this process, one run at a time, after the workload is built; the workload's
construction and the hindsight bound are timed in their own rows. Repeats give the median.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from balance_opt.online import simulate, summary
from balance_opt.online.arrivals import poisson_workload
from balance_opt.online.policies import make_policy

POLICIES = ("balance", "fcfs-cheaper", "fcfs-ad", "fcfs-sd", "edf-cheaper", "ad-only", "sd-only")
TARGETS = {"balance": 60.0, "fcfs-cheaper": 10.0, "fcfs-ad": 10.0, "fcfs-sd": 10.0}


def timed(fn: Callable[[], Any], repeats: int) -> tuple[Any, float]:
    """The last result and the median wall time of ``repeats`` calls."""
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return out, statistics.median(times)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="60 s of arrivals, two policies")
    ap.add_argument("--rate", type=float, default=5.0, help="users per second (default 5)")
    ap.add_argument("--duration", type=float, default=3600.0, help="seconds of arrivals (default 3600)")
    ap.add_argument("--repeats", type=int, default=1, help="runs per row; the median is shown (default 1)")
    ap.add_argument("--policies", default=",".join(POLICIES))
    args = ap.parse_args(argv)
    duration = 60.0 if args.quick else args.duration
    policies = ("balance", "fcfs-cheaper") if args.quick else tuple(args.policies.split(","))
    build = lambda: poisson_workload("fig4", args.rate, duration_s=duration, seed=1, output_cv=0.3)  # noqa: E731
    workload, t_build = timed(build, args.repeats)
    print(f"fig4, Poisson {args.rate:g} users/s for {duration:g} s: {workload.num_users} users, 1 s windows")
    print(f"{'row':<22} {'seconds':>9} {'target':>8} {'served':>7} {'attainment':>10}")
    print(f"{'build the workload':<22} {t_build:>9.2f} {'':>8}")
    try:
        from balance_opt.online.hindsight import hindsight_bound

        hb, t_bound = timed(lambda: hindsight_bound(workload), args.repeats)
        print(
            f"{'hindsight bound':<22} {t_bound:>9.2f} {'':>8} {hb.bound:>7} "
            f"{hb.bound / workload.num_users:>10.3f}"
        )
    except ImportError:
        pass
    for name in policies:
        run, t = timed(
            lambda n=name: simulate(workload, make_policy(n), epochs="window", window_s=1.0), args.repeats
        )
        row = summary(run)
        target = f"<= {TARGETS[name]:g}" if name in TARGETS and not args.quick else ""
        print(f"{name:<22} {t:>9.2f} {target:>8} {row['served']:>7} {row['attainment']:>10.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
