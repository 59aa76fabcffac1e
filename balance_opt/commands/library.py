"""``balance-opt library``: write the benchmark library, compute its references, verify them.

- ``library generate ROOT`` writes every set's instance files and README;
- ``library refs SET_FOLDER --solver NAME ...`` runs solvers on one set, resumably, and
  rebuilds its ``reference.csv``;
- ``library rebuild ROOT_OR_SET`` rewrites every ``reference.csv`` and README from the
  ledgers and stored schedules alone (after a change of the table's rules; no solve);
- ``library verify ROOT_OR_SET`` re-checks every stored reference schedule with the
  evaluator and that the table agrees with it (no solver runs; what CI does);
- ``library journal DIR`` counts what a journal of MILP proofs holds, each entry checked;
- ``library where [WHAT]`` prints the folder of the installed library (or of the CI set, or
  of the named solver configurations) that the commands use by default.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from balance_opt.commands._args import jobs, seconds

WHERE = ("library", "ci", "configs")


def register(sub: Any) -> None:
    p = sub.add_parser(
        "library",
        help="the benchmark library: generate its sets, compute references, verify them",
        description="The benchmark library of instance sets with certified references (docs/library.md).",
    )
    lib = p.add_subparsers(dest="library_command", metavar="ACTION", required=True)
    _add_generate(lib)
    _add_refs(lib)
    _add_rebuild(lib)
    _add_verify(lib)
    _add_journal(lib)
    _add_where(lib)


def _add_generate(lib: Any) -> None:
    g = lib.add_parser("generate", help="write the library's instance files and READMEs")
    g.add_argument("root", type=Path, metavar="ROOT", help="library folder, e.g. instances/paper")
    g.add_argument(
        "--set", action="append", dest="sets", metavar="NAME",
        help="only this set (repeatable; default: not set, every set)",
    )  # fmt: skip
    g.set_defaults(func=handle_generate)


def _add_refs(lib: Any) -> None:
    r = lib.add_parser(
        "refs",
        help="compute or improve one set's references (resumable)",
        description="Solve SET's instances with each solver configuration not run on them before "
        "(and the library's heuristics), store each better schedule the evaluator accepts, and rebuild "
        "SET/reference.csv. A proved bound below an accepted schedule stops with exit status 1.",
    )
    r.add_argument("folder", type=Path, metavar="SET", help="a set folder, e.g. instances/paper/fig6")
    r.add_argument(
        "--solver", action="append", metavar="NAME",
        help="a registered solver (repeatable; default: not set, the heuristics alone)",
    )  # fmt: skip
    r.add_argument(
        "--config", action="append", metavar="FILE",
        help="a solver configuration file, or a shipped NAME (repeatable; default: not set)",
    )  # fmt: skip
    r.add_argument(
        "--time-limit", type=seconds, metavar="S",
        help="per-solve limit of the given solvers without one of their own (default: not set, none)",
    )  # fmt: skip
    r.add_argument(
        "--max-k", type=int, metavar="K",
        help="run the given solvers only where K <= this (default: not set, every K)",
    )  # fmt: skip
    r.add_argument(
        "--only", action="append", default=[], metavar="PATTERN",
        help="run the given solvers only on instances whose stem matches (fnmatch, repeatable; "
        "default: not set, every instance)",
    )  # fmt: skip
    r.add_argument("--jobs", type=jobs, default=1, metavar="N", help="parallel solves (default: 1)")
    r.add_argument(
        "--heuristic", action="append", metavar="NAME",
        help="run only these of the library's heuristics (repeatable; default: all of them)",
    )  # fmt: skip
    r.add_argument("--no-heuristics", action="store_true", help="run none of the library's heuristics")
    r.add_argument(
        "--journal", type=Path, metavar="DIR",
        help="keep the MILP backends' proofs in DIR, keyed by model: a stopped refutation resumes "
        "where it stopped (sets the option journal on each MILP configuration; default: no journal)",
    )  # fmt: skip
    r.set_defaults(func=handle_refs)


def _add_rebuild(lib: Any) -> None:
    b = lib.add_parser(
        "rebuild",
        help="rewrite reference tables and READMEs from the ledgers (no solve)",
        description="Rewrite each set's reference.csv and README.md from its attempts.csv and stored "
        "schedules, with today's rules (status, proofs, classes). Nothing is solved.",
    )
    b.add_argument("paths", nargs="+", type=Path, metavar="ROOT_OR_SET")
    b.set_defaults(func=handle_rebuild)


def _add_verify(lib: Any) -> None:
    v = lib.add_parser(
        "verify",
        help="re-check every stored reference schedule (evaluator only)",
        description="Re-check each set's reference.csv against its files with the evaluator alone "
        "(no solver runs; what CI does): every instance file has a row and its recorded sha256, every "
        "stored schedule is feasible and serves best_known, best_known <= bound <= K, an optimal row "
        "has a valid proof and an open row none, and no heuristic beats the bound. Exit status 1 when "
        "a row breaks one of these.",
    )
    v.add_argument(
        "paths", nargs="+", type=Path, metavar="ROOT_OR_SET", help="a library folder or one set folder"
    )
    v.set_defaults(func=handle_verify)


def _add_journal(lib: Any) -> None:
    j = lib.add_parser(
        "journal",
        help="count what a journal of MILP proofs holds (each entry checked)",
        description="Read every entry of a journal folder (library refs --journal), check it as a replay "
        "would, and print its entries and solve seconds per solver, clock and answer.",
    )
    j.add_argument("folder", type=Path, metavar="DIR", help="a journal folder, e.g. journal/fig4a")
    j.set_defaults(func=handle_journal)


def _add_where(lib: Any) -> None:
    w = lib.add_parser(
        "where",
        help="print the folder of the installed library (or CI set, or named configurations)",
        description="Print one folder, the default of the commands that read it: the benchmark library "
        "(check --library, worst-case-report --library), the CI set (regress) or the named solver "
        "configurations (solve --config NAME). Installed from a wheel, they live inside the package; "
        "in a checkout, they are its instances/paper, instances/ci and solvers.",
    )
    w.add_argument(
        "what", nargs="?", choices=WHERE, default="library", help="which folder (default: library)"
    )
    w.set_defaults(func=handle_where)


def handle_generate(args: argparse.Namespace) -> int:
    from balance_opt.errors import UsageError
    from balance_opt.library.readme import commands_of, write_readme
    from balance_opt.library.sets import SETS, write_library

    try:
        written = write_library(args.root, args.sets)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    for name, files in written.items():
        folder = args.root / name
        write_readme(SETS[name], folder, commands_of(folder))
        print(f"{folder}: {len(files)} instance files")
    return 0


def handle_refs(args: argparse.Namespace) -> int:
    from balance_opt.batch.configs import resolve_configs
    from balance_opt.errors import UsageError
    from balance_opt.library.readme import remember, write_readme
    from balance_opt.library.reference import ReferenceContradiction
    from balance_opt.library.refs import build_references, heuristic_configs
    from balance_opt.library.sets import set_of

    lib = set_of(args.folder)
    if lib is None or not args.folder.is_dir():
        raise UsageError(
            f"{args.folder}: not a library set folder (write it with `balance-opt library generate`)"
        )
    configs = resolve_configs(args.solver, args.config, args.time_limit) if args.solver or args.config else []
    if args.journal is not None and args.journal.exists() and not args.journal.is_dir():
        raise UsageError(f"--journal {args.journal}: not a folder")
    heuristics = [] if args.no_heuristics else args.heuristic
    try:
        heuristic_configs(heuristics)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        configs = [with_journal(c, args.journal) for c in configs]  # an option: in the configuration hash
        out = build_references(
            args.folder, configs, max_users=args.max_k, only=args.only, jobs=args.jobs, heuristics=heuristics
        )
    except ReferenceContradiction as exc:
        print(f"balance-opt library refs: CONTRADICTION: {exc}", file=sys.stderr)
        return 1
    write_readme(lib, args.folder, remember(args.folder, refs_command(args)))
    for line in out.improved:
        print(f"improved: {line}")
    optimal = sum(r["status"] == "optimal" for r in out.rows)
    print(
        f"{args.folder}: {out.solved} solves, {out.skipped} skipped (done before); "
        f"{optimal}/{len(out.rows)} optimal"
    )
    return 0


def refs_command(args: argparse.Namespace) -> str:
    """The command line of a ``library refs`` run, as its set's README lists it."""
    words = ["balance-opt", "library", "refs", str(args.folder)]
    words += [w for s in args.solver or [] for w in ("--solver", s)]
    words += [w for c in args.config or [] for w in ("--config", c)]
    if args.time_limit is not None:
        words += ["--time-limit", f"{args.time_limit:g}"]
    if args.max_k is not None:
        words += ["--max-k", str(args.max_k)]
    words += [w for pattern in args.only for w in ("--only", pattern)]
    words += [w for h in args.heuristic or [] for w in ("--heuristic", h)]
    words += ["--no-heuristics"] if args.no_heuristics else []
    words += [] if args.journal is None else ["--journal", str(args.journal)]
    return " ".join(shlex.quote(w) for w in words)


def handle_rebuild(args: argparse.Namespace) -> int:
    from balance_opt.library.readme import commands_of, write_readme
    from balance_opt.library.reference import ReferenceContradiction
    from balance_opt.library.refs import rebuild_references
    from balance_opt.library.sets import set_of
    from balance_opt.library.verify import set_folders

    for folder in set_folders(args.paths):
        try:
            rows = rebuild_references(folder)
        except ReferenceContradiction as exc:
            print(f"balance-opt library rebuild: CONTRADICTION: {exc}", file=sys.stderr)
            return 1
        lib = set_of(folder)
        if lib is not None:
            write_readme(lib, folder, commands_of(folder))
        optimal = sum(r["status"] == "optimal" for r in rows)
        print(f"{folder}: {optimal}/{len(rows)} optimal")
    return 0


def handle_verify(args: argparse.Namespace) -> int:
    from balance_opt.library.verify import verify_library

    problems, checked = verify_library(args.paths)
    for p in problems:
        print(f"problem: {p}")
    if problems:
        print(f"{len(problems)} problem(s) in {checked} reference row(s)", file=sys.stderr)
        return 1
    print(f"ok: {checked} reference row(s) agree with their instances and stored schedules")
    return 0


def with_journal(config: Any, folder: Path | None) -> Any:
    """``config`` with the journal option set, for a solver that keeps one (the MILPs)."""
    from dataclasses import replace

    from balance_opt.solvers import solver_class

    if folder is None or "journal" not in solver_class(config.solver).option_specs:
        return config
    return replace(config, options={**config.options, "journal": str(folder.resolve())})


def handle_journal(args: argparse.Namespace) -> int:
    from balance_opt.library.journal_report import format_rows, journal_rows

    for line in format_rows(journal_rows(args.folder)):
        print(line)
    return 0


def handle_where(args: argparse.Namespace) -> int:
    from balance_opt import data

    folder = {"library": data.library_dir, "ci": data.ci_dir, "configs": data.config_dir}[args.what]()
    print(folder)
    return 0
