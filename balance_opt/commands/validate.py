"""``balance-opt validate``: check instance and solution files against docs/formats.md."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser(
        "validate",
        help="check instance or solution files",
        description="Check each file against docs/formats.md and print 'FILE: ok (...)'. A bad file "
        "gets one line on standard error naming the file, the JSON path and the rule; the exit "
        "status is then 2.",
    )
    p.add_argument("files", nargs="+", type=Path, metavar="FILE", help="instance or solution files")
    p.add_argument(
        "--instance",
        type=Path,
        help="check solutions against this instance too (user ids and instance_sha256)",
    )
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from balance_opt.errors import InputError
    from balance_opt.io import (
        check_solution_dict,
        read_bytes,
        read_document,
        read_instance,
        sha256_bytes,
    )

    inst = read_instance(args.instance) if args.instance is not None else None
    sha = sha256_bytes(read_bytes(args.instance)) if args.instance is not None else None
    bad = 0
    for path in args.files:
        try:
            kind, doc = read_document(path)
            if kind == "instance":
                print(f"{path}: ok (instance, K={doc.num_users})")
                continue
            if inst is not None:
                check_solution_dict(doc, str(path), inst)
                if doc["instance_sha256"] != sha:
                    raise InputError(
                        str(path), "instance_sha256", f"does not match the bytes of {args.instance}"
                    )
            print(
                f"{path}: ok (solution, solver={doc['solver']}, status={doc['status']}, "
                f"served={doc['served']})"
            )
        except InputError as exc:
            bad += 1
            print(f"balance-opt validate: error: {exc}", file=sys.stderr)
    return 2 if bad else 0
