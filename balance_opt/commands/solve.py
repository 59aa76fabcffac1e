"""``balance-opt solve``: instances x solver configurations, one process per running solve."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from balance_opt.commands._args import jobs, seconds
from balance_opt.errors import UsageError

if TYPE_CHECKING:
    from balance_opt.solution import Solution

# Exit statuses beside the CLI's 0 / 1 / 2.
CLUSTER_LOST = 3
FAILED_SOLVES = 4
MAX_LISTED = 10  # failed pairs named on standard error after a batch


def register(sub: Any) -> None:
    p = sub.add_parser(
        "solve",
        help="solve instance files with one or more solvers",
        description="Solve every instance (a file, or a directory of *.json files) with every solver "
        "configuration. With --out, each pair's solution is written to RUN_DIR/solutions/ and the "
        "table RUN_DIR/results.{parquet,csv} is kept up to date; a rerun skips the pairs already done. "
        "A solve that raises or crashes its worker becomes an 'error' row; one that runs past 1.1 x its "
        "time limit + 5 s is killed and becomes a 'time_limit' row.",
        epilog="Exit status: 0 when every pair has its row, failed solves included (they are "
        "'error' / 'time_limit' rows; --fail-on-error makes them exit 4); 2 bad input; 3 the dask "
        "scheduler could not be reached or was lost (the solutions received are saved: rerun to "
        "resume); 1 internal error.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="instance file or directory of instance files")
    _add_solvers(p)
    _add_limits(p)
    out = p.add_argument_group("output")
    out.add_argument(
        "--out",
        metavar="RUN_DIR",
        help="run folder for solution files and the results table (default: not set, one summary "
        "line per solve on standard output and nothing written)",
    )
    out.add_argument(
        "--json", action="store_true", help="print the solution document (one instance, one solver)"
    )
    p.set_defaults(func=handler)


def _add_solvers(p: argparse.ArgumentParser) -> None:
    """The options that name the solvers and their configurations."""
    from balance_opt.data import config_dir, shown

    what = p.add_argument_group("solvers")
    what.add_argument(
        "--solver",
        action="append",
        metavar="NAME",
        help="a registered solver, its options at their defaults (repeatable; default: not set; give "
        "at least one --solver or --config)",
    )
    what.add_argument(
        "--config",
        action="append",
        metavar="FILE",
        help=f"a solver configuration: a TOML file, or the NAME of one shipped in {shown(config_dir)} "
        "(repeatable; default: not set)",
    )


def _add_limits(p: argparse.ArgumentParser) -> None:
    """The options on time limits, parallel solves, executors, reruns and failures."""
    limits = p.add_argument_group("limits and execution")
    limits.add_argument(
        "--time-limit",
        type=seconds,
        metavar="S",
        help="per-solve limit for configurations without one (default: not set, no limit but a "
        "configuration's own)",
    )
    limits.add_argument(
        "--jobs",
        type=jobs,
        metavar="N",
        help="parallel solves (default: 1 locally, for timing; every worker thread of a dask cluster)",
    )
    limits.add_argument(
        "--executor",
        choices=("local", "dask"),
        default="local",
        help="local worker processes (default) or a dask.distributed cluster (extra 'dask')",
    )
    limits.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="dask scheduler address, with --executor dask (default: not set, a local dask cluster of "
        "--jobs workers)",
    )
    limits.add_argument(
        "--retry-errors", action="store_true", help="solve pairs whose last answer was an error"
    )
    limits.add_argument(
        "--force",
        action="store_true",
        help="solve again, and overwrite, pairs whose solution file holds another answer (another "
        "configuration hash or instance file, or a file balance-opt did not write); without it such a "
        "rerun lists them and exits with status 2",
    )
    limits.add_argument(
        "--fail-on-error",
        action="store_true",
        help=f"exit with status {FAILED_SOLVES} when any pair's solve failed: an 'error' row, or a "
        "solve killed past its time limit (for CI)",
    )


def make_executor(args: argparse.Namespace) -> Any:
    """The executor named on the command line (None: the runner's local pool)."""
    if args.executor == "dask":
        from balance_opt.batch.dask_executor import DaskExecutor

        return DaskExecutor.connect(args.scheduler, jobs=args.jobs)
    if args.scheduler:
        raise UsageError("--scheduler needs --executor dask")
    return None


def failure_lines(solutions: Sequence[Solution]) -> list[str]:
    """One line per failed pair, its row kind and why (at most ``MAX_LISTED``, then how many more).

    The user sees which instance files and configurations failed without opening the table.
    """
    failed = [sol for sol in solutions if sol.failed]
    lines = []
    for sol in failed[:MAX_LISTED]:
        run = sol.run
        pair = f"{sol.instance} / {sol.solver}" if run is None else f"{run.stem} / {run.config}"
        why = sol.error or str(sol.stats.get("killed") or sol.termination or "no answer")
        lines.append(f"{sol.status} row: {pair}: {' '.join(why.split())}")  # one line each
    if len(failed) > MAX_LISTED:
        lines.append(f"and {len(failed) - MAX_LISTED} more")
    return lines


def handler(args: argparse.Namespace) -> int:
    from balance_opt.batch.configs import resolve_configs
    from balance_opt.batch.runner import collect_instance_paths, read_instance_file

    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be >= 1")
    if args.time_limit is not None and not args.time_limit > 0:
        raise UsageError("--time-limit must be > 0")
    configs = resolve_configs(args.solver, args.config, args.time_limit)
    paths: list[Any] = collect_instance_paths(args.paths)
    if args.json and (len(paths) != 1 or len(configs) != 1):
        raise UsageError(f"--json needs one instance and one solver, got {len(paths)} and {len(configs)}")
    if len(paths) == 1:
        # A single instance is not a batch: a bad file is bad input (exit status 2).
        read = read_instance_file(paths[0])
        if read.error is not None:
            raise UsageError(read.error)
        paths = [read]  # the batch solves it as read, not parsed again
    from balance_opt.batch.dask_executor import ClusterError, SchedulerLost

    try:
        executor = make_executor(args)
        try:
            return run(args, paths, configs, executor)
        finally:
            if executor is not None:
                executor.close()
    except ClusterError as exc:
        saved = isinstance(exc, SchedulerLost) and args.out
        done = "; the solutions received are saved, rerun to resume" if saved else ""
        print(f"balance-opt solve: error: {exc}{done}", file=sys.stderr)
        return CLUSTER_LOST


def run(args: argparse.Namespace, paths: list[Any], configs: list[Any], executor: Any) -> int:
    """Run the batch and report it; the exit status."""
    from balance_opt.batch.runner import run_batch
    from balance_opt.io import dumps

    single = len(paths) == 1 and len(configs) == 1

    def show(sol: Solution) -> None:
        if single and sol.refused:
            return  # reported below as bad input (a single solve a solver refuses, a bad file)
        if args.out is None and not args.json:
            print(sol.summary(), flush=True)

    outcome = run_batch(
        paths,
        configs,
        args.out,
        executor=executor,
        jobs=args.jobs or 1,
        progress=None if args.out or args.json else False,
        on_solution=show,
        retry_errors=args.retry_errors,
        force=args.force,
        say=lambda message: print(f"balance-opt solve: {message}", file=sys.stderr, flush=True),
    )
    first = outcome.solutions[0]
    if single and first.refused:
        # One solve that the solver refused (e.g. exhaustive search on a large K) is bad input.
        raise UsageError(first.error or "the solve was refused")
    if args.json:
        sys.stdout.write(dumps(first.to_dict()))
    elif args.out is not None:
        counts = ", ".join(f"{n} {s}" for s, n in sorted(outcome.statuses.items())) or "nothing new"
        print(
            f"{outcome.solved} solved ({counts}), {outcome.skipped} already done; "
            f"results in {args.out}/results.parquet",
            file=sys.stderr,
        )
    for line in failure_lines(outcome.solutions):
        print(f"balance-opt solve: {line}", file=sys.stderr)
    bad = sum(sol.failed for sol in outcome.solutions)
    if args.fail_on_error and bad:
        print(f"balance-opt solve: {bad} of {len(outcome.solutions)} solves failed", file=sys.stderr)
        return FAILED_SOLVES
    return 0
