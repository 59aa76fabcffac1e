"""``balance-opt validate``: check instance and solution files against docs/formats.md."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from balance_opt.instance import Instance

# Optional solution fields the ok line shows when they are present.
SHOWN = ("instance", "solver", "status", "served", "bound")


def register(sub: Any) -> None:
    p = sub.add_parser(
        "validate",
        help="check instance or solution files",
        description="Check each file against docs/formats.md and print 'FILE: ok (...)'. A bad file "
        "gets one line on standard error naming the file, the JSON path and the rule; the exit "
        "status is then 2. With --instance, each solution must name that instance and its claims "
        "(served, feasible, status, bound) are compared with the evaluator: a refuted claim is one "
        "line on standard error and exit status 1.",
    )
    p.add_argument("files", nargs="+", type=Path, metavar="FILE", help="instance or solution files")
    p.add_argument(
        "--instance",
        type=Path,
        metavar="INSTANCE",
        help="check solutions against this instance too: the instance they name, user ids, claims "
        "(default: not set, each file checked alone)",
    )
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from balance_opt.errors import InputError
    from balance_opt.io import read_bytes, read_document, read_instance

    inst = read_instance(args.instance) if args.instance is not None else None
    data = read_bytes(args.instance) if args.instance is not None else b""
    bad = refuted = 0
    for path in args.files:
        try:
            kind, doc = read_document(path)
            if kind == "instance":
                print(f"{path}: ok (instance, K={doc.num_users})")
                continue
            shown = [f"{k}={doc[k]}" for k in SHOWN if doc.get(k) is not None]
            fields = ", ".join(shown or [f"instance_sha256={doc['instance_sha256'][:12]}..."])
            if inst is None:
                print(f"{path}: ok (solution, {fields}, claims not checked without --instance)")
                continue
            found = _claims_against(doc, str(path), inst, data, str(args.instance))
            for message in found:
                print(f"balance-opt validate: {path}: {message}", file=sys.stderr)
            refuted += bool(found)
            if not found:
                print(f"{path}: ok (solution, {fields}, claims confirmed by the evaluator)")
        except InputError as exc:
            bad += 1
            print(f"balance-opt validate: error: {exc}", file=sys.stderr)
    return 2 if bad else 1 if refuted else 0


def _claims_against(doc: dict[str, Any], source: str, inst: Instance, data: bytes, where: str) -> list[str]:
    """The solution must name ``inst`` and fit it (InputError); its refuted claims, one line each."""
    from balance_opt.claims import instance_mismatch, mismatches
    from balance_opt.errors import InputError
    from balance_opt.evaluator import Schedule, evaluate
    from balance_opt.io import sha256_bytes
    from balance_opt.solution_checks import SolutionFile

    # the instance it names first (to say why), then its user ids
    other = instance_mismatch(
        doc.get("instance"), doc.get("instance_sha256"), inst.name, sha256_bytes(data), where
    )
    if other is not None:
        raise InputError(source, *other)
    sol = SolutionFile.from_dict(doc, source, inst)
    ev = evaluate(inst, Schedule.from_assignment(inst, sol.z, sol.assignment))
    found = mismatches(sol.claims(), ev)
    return [("FALSE PROOF: " if m.false_proof else "claim mismatch: ") + m.message for m in found]
