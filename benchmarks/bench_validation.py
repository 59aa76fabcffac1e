"""What input validation costs ``balance`` at K = 1000: this tree against another checkout.

    python -m benchmarks.bench_validation --against /tmp/old-checkout   # the table below
    python -m benchmarks.bench_validation --quick                       # this tree only, a smoke run

For fig4 instances at K = 1000 (seeds 1-5), each tree runs, in its own process, one job at
a time: reading the instance file (JSON parse and every value rule) and the ``balance``
solve (``Solution.runtime_s``, which includes the check of the solver's claims by the
evaluator); medians over ``--repeats`` runs per seed, then the median over seeds. The
ratio is this tree's time over the other's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import json, statistics, sys, time
from balance_opt.io import read_instance
from balance_opt.solvers import get_solver
paths, repeats = sys.argv[1:-1], int(sys.argv[-1])
read, solve = [], []
for path in paths:
    r, s = [], []
    for _ in range(repeats):
        t = time.perf_counter(); inst = read_instance(path); r.append(time.perf_counter() - t)
        s.append(get_solver("balance").solve(inst).runtime_s)
    read.append(statistics.median(r)); solve.append(statistics.median(s))
print(json.dumps({"read": statistics.median(read), "solve": statistics.median(solve)}))
"""


def measure(tree: Path, paths: list[Path], repeats: int) -> dict[str, float]:
    """Median seconds of reading and of solving, in a process importing ``tree``'s package."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, "-c", CHILD, *map(str, paths), str(repeats)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, cwd=tree)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", type=Path, help="another checkout (e.g. a git worktree of an older commit)")
    ap.add_argument("--users", type=int, default=1000)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="K = 200, 2 seeds, 1 repeat, this tree only")
    args = ap.parse_args(argv)
    if args.quick:
        args.users, args.seeds, args.repeats, args.against = 200, 2, 1, None
    from balance_opt.generator import generate
    from balance_opt.io import write_instance

    here = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        paths = [
            write_instance(generate("fig4", users=args.users, seed=s), Path(tmp) / f"i{s}.json")
            for s in range(1, args.seeds + 1)
        ]
        rows = [("this tree", measure(here, paths, args.repeats))]
        if args.against is not None:
            rows.append(("other", measure(args.against.resolve(), paths, args.repeats)))
    runs = f"median of {args.repeats} runs per seed, then over seeds"
    print(f"fig4, K = {args.users}, seeds 1-{args.seeds}, {runs}\n")
    print("| tree | read + validate (s) | balance solve (s) | total (s) |")
    print("|---|---|---|---|")
    for name, r in rows:
        print(f"| {name} | {r['read']:.4f} | {r['solve']:.4f} | {r['read'] + r['solve']:.4f} |")
    if len(rows) == 2:
        new, old = rows[0][1], rows[1][1]
        ratio = (new["read"] + new["solve"]) / (old["read"] + old["solve"])
        print(f"\nthis tree / other, total: {ratio:.3f} (read {new['read'] / old['read']:.3f}, "
              f"solve {new['solve'] / old['solve']:.3f})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
