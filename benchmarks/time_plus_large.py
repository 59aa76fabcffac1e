"""balance and balance-plus at K = 1000 (the library's large set): served, CPU and wall seconds, one run each.

python -m benchmarks.time_plus_large
"""

from __future__ import annotations

import time

from balance_opt.io import read_instance
from balance_opt.solvers import get_solver

STEMS = ("large-fig4-1000-s0001", "large-fig5-1000-s0001")


def main() -> None:
    print("| instance | solver | served | CPU s | wall s |")
    print("|---|---|---|---|---|")
    for stem in STEMS:
        inst = read_instance(f"instances/paper/large/{stem}.json")
        for name in ("balance", "balance-plus"):
            cpu, wall = time.process_time(), time.perf_counter()
            res = get_solver(name).solve(inst)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            print(f"| {stem} | {name} | {res.served} | {cpu:.1f} | {wall:.1f} |", flush=True)


if __name__ == "__main__":
    main()
