"""The ``balance-opt`` command line: subcommands, exit codes, one-line errors.

Exit status: 0 success, 1 internal failure, 2 bad input (message on standard error);
a batch ``solve`` also exits 3 when its dask scheduler is lost and 4 under
``--fail-on-error`` when a solve failed (docs/batch.md).
Each subcommand lives in its own module under :mod:`balance_opt.commands` and exposes
``register(subparsers)``; modules import their heavy dependencies inside the handler.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from balance_opt import __version__
from balance_opt.errors import InputError, UsageError, printable

# Order is the order of ``balance-opt --help``.
COMMAND_MODULES = (
    "balance_opt.commands.generate",
    "balance_opt.commands.validate",
    "balance_opt.commands.evaluate",
    "balance_opt.commands.simulate",
    "balance_opt.commands.robustify",
    "balance_opt.commands.check",
    "balance_opt.commands.solve",
    "balance_opt.commands.solvers",
    "balance_opt.commands.export",
    "balance_opt.commands.report",
    "balance_opt.commands.experiment",
    "balance_opt.commands.stochastic_experiment",
    "balance_opt.commands.online",
    "balance_opt.commands.regress",
    "balance_opt.commands.library",
    "balance_opt.commands.adversary",
    "balance_opt.commands.worst_case_report",
    "balance_opt.commands.demo",
    "balance_opt.commands.calibrate",
    "balance_opt.commands.profile",
)


def one_line_errors(parser: argparse.ArgumentParser) -> None:
    """Usage mistakes print one line (no usage block) and exit with status 2."""

    def error(message: str) -> NoReturn:
        parser.exit(2, f"{parser.prog}: error: {message} (see --help)\n")

    parser.error = error  # type: ignore[method-assign]


class _ShowDefaults(argparse.HelpFormatter):
    """Every option's help ends with its default, unless it already names one (or has none)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        # identity, not equality: a default of 1 or 0 is a number to show, not a flag's True/False
        silent = (
            any(action.default is v for v in (None, False, True, argparse.SUPPRESS)) or action.default == []
        )
        if silent or not action.option_strings or "default" in text.lower():
            return text
        return f"{text} (default: %(default)s)" if text else "(default: %(default)s)"


class _RawShowDefaults(_ShowDefaults, argparse.RawDescriptionHelpFormatter):
    """The same for a command whose description is laid out by hand."""


def show_defaults(parser: argparse.ArgumentParser) -> None:
    """Show every default in ``--help`` (keeping a hand-made description's layout)."""
    cls = parser.formatter_class
    raw = isinstance(cls, type) and issubclass(cls, argparse.RawDescriptionHelpFormatter)
    parser.formatter_class = _RawShowDefaults if raw else _ShowDefaults


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="balance-opt",
        description="Benchmark suite and solvers for BALANCE: hybrid autoregressive / "
        "speculative LLM serving on an edge server.",
        epilog="Exit status of every command: 0 done; 1 a refuted claim, an infeasible schedule or a "
        "regression; 2 bad input (one line naming the file, the place in it and the rule); 3 the dask "
        "scheduler unreachable or lost; 4 failed solves under --fail-on-error; 130 interrupted. "
        "Never an internal error for an input a user can write (docs/contract.md).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    for p in (parser, *sub.choices.values()):
        one_line_errors(p)
        show_defaults(p)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # the words as given (not sys.argv): a report that quotes its command quotes this one
    args.argv = list(sys.argv[1:] if argv is None else argv)
    try:
        code = args.func(args)
    except (InputError, UsageError) as exc:
        print(f"balance-opt {args.command}: error: {printable(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"balance-opt {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a path the user gave cannot be read or written (full disk, name too long)
        where = exc.filename if exc.filename is not None else "a file"
        reason = exc.strerror or str(exc)
        print(f"balance-opt {args.command}: error: {printable(str(where))}: {reason}", file=sys.stderr)
        return 2
    except Exception as exc:
        if os.environ.get("BALANCE_OPT_DEBUG"):
            raise
        print(
            f"balance-opt {args.command}: internal error: {type(exc).__name__}: {printable(str(exc))} "
            "(set BALANCE_OPT_DEBUG=1 for a traceback)",
            file=sys.stderr,
        )
        return 1
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
