"""``balance-opt solvers [NAME]``: every registered solver, what it proves, whether it runs
here, and its parameters with their defaults, domains and descriptions."""

from __future__ import annotations

import argparse
import inspect
import json
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser(
        "solvers",
        help="list the solvers: what each proves, whether it is installed, its parameters",
        description="List every registered solver (plug-ins of the entry-point group "
        "balance_opt.solvers included): what it proves (P1, P2 or nothing), whether it can run "
        "here (and the install command when not), and its parameters with defaults, domains and "
        "descriptions. With NAME, that solver in full.",
    )
    p.add_argument("name", nargs="?", metavar="NAME", help="one solver, in full")
    p.add_argument("--json", action="store_true", help="print the same as JSON")
    p.set_defaults(func=handler)


def describe(name: str) -> dict[str, Any]:
    """One solver as plain data: name, summary, proves, availability, parameters."""
    from balance_opt.solvers import solver_class

    cls = solver_class(name)
    available = cls.availability()
    doc = (cls.__doc__ or "").strip().splitlines()
    return {
        "name": name,
        "summary": doc[0] if doc else "",
        "doc": inspect.cleandoc(cls.__doc__ or ""),
        "proves": cls.proves,
        "available": bool(available),
        "install": None if available else (f"pip install {cls.install}" if cls.install else None),
        "reason": available.reason or None,
        "parameters": {
            key: {"default": spec.default, "domain": spec.domain(), "description": spec.description}
            for key, spec in cls.option_specs.items()
        },
    }


def _text(entry: dict[str, Any], full: bool) -> list[str]:
    proves = entry["proves"] or "nothing (heuristic)"
    here = "installed" if entry["available"] else f"not installed: {entry['install'] or entry['reason']}"
    lines = [f"{entry['name']}: {entry['summary']}", f"  proves: {proves}; {here}"]
    if full:
        more = entry["doc"].splitlines()[1:]  # the first line is the summary, shown above
        while more and not more[0].strip():
            more.pop(0)
        lines += [*(["", *(f"  {line}".rstrip() for line in more)] if more else []), "", "  parameters:"]
    for key, p in entry["parameters"].items():
        lines.append(f"  {key} = {json.dumps(p['default'])}  ({p['domain']})")
        lines.append(f"      {p['description']}")
    return lines


def handler(args: argparse.Namespace) -> int:
    from balance_opt.errors import UsageError
    from balance_opt.solvers import solver_names

    names = solver_names()
    if args.name is not None and args.name not in names:
        raise UsageError(f"unknown solver {args.name!r}; known: {', '.join(names)}")
    try:
        entries = [describe(n) for n in ([args.name] if args.name else names)]
    except ImportError as exc:  # a plug-in that fails to import (its message names it)
        raise UsageError(str(exc)) from None
    if args.json:
        print(json.dumps(entries[0] if args.name else entries, indent=2))
        return 0
    for entry in entries:
        print("\n".join(_text(entry, full=args.name is not None)))
    return 0
