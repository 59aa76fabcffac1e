"""Instance files (docs/formats.md): reading with full validation, writing with stable bytes.

A bad file raises :class:`InputError` whose message names the file, the JSON path and
the rule it breaks, e.g. ``bad.json: users[3].acceptance: must be a number with
0 < value < 1, got 1.2``. :func:`read_document` reads either kind of project file.

This module is also the public face of the project's files: it re-exports the general
helpers of :mod:`balance_opt.files` (strict JSON, atomic writes, digests) and the solution
file's reader (:mod:`balance_opt.solution`), so ``balance_opt.io`` holds every reader and
writer a caller needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from balance_opt.errors import InputError
from balance_opt.files import (
    FORMAT_VERSION,
    Checker,
    atomic_write,
    check_header,
    dumps,
    join_path,
    parse_json,
    read_bytes,
    sha256_bytes,
)
from balance_opt.instance import (
    USER_ARRAY_FIELDS,
    VALUE_RULES,
    Instance,
    InvalidInstance,
    LanguageModel,
    Server,
    grid_problem,
)
from balance_opt.instance import show_value as _show
from balance_opt.solution_checks import SOLUTION_SCHEMA, check_solution_dict, read_solution

INSTANCE_SCHEMA = "balance-opt/instance"

__all__ = [
    "FORMAT_VERSION",
    "INSTANCE_SCHEMA",
    "SOLUTION_SCHEMA",
    "InputError",
    "atomic_write",
    "check_solution_dict",
    "dumps",
    "instance_bytes",
    "instance_from_dict",
    "instance_to_dict",
    "parse_json",
    "read_bytes",
    "read_document",
    "read_instance",
    "read_solution",
    "sha256_bytes",
    "write_instance",
]


def _model(c: Checker, doc: Mapping[str, Any], key: str) -> LanguageModel:
    m = c.obj(doc, key, "")
    name = c.optional(m, "name", str, f"{key}.", "a string")
    return LanguageModel(
        **{f: c.value(m, f, key, rule) for f, rule in VALUE_RULES["model"].items()}, name=name
    )


def _users(c: Checker, users: Any) -> dict[str, Any]:
    """The users' columns (``Instance`` keyword arguments), checked in file order."""
    if not isinstance(users, list) or not users:
        raise c.fail("users", f"must be a non-empty list of user objects, got {_show(users)}")
    rules = VALUE_RULES["user"]
    columns: dict[str, list[Any]] = {f: [] for f, _ in USER_ARRAY_FIELDS}
    seen: dict[str, int] = {}
    extra: dict[str, list[Any]] = {"distance_m": [], "sd_iterations": []}
    for i, u in enumerate(users):
        p = f"users[{i}]"
        if not isinstance(u, dict):
            raise c.fail(p, f"must be a JSON object, got {_show(u)}")
        uid = c.name(u, "id", p)
        if uid in seen:
            raise c.fail(f"{p}.id", f"user ids must be unique, {uid!r} is also users[{seen[uid]}].id")
        seen[uid] = i
        for f, col in columns.items():
            col.append(c.value(u, f, p, rules[f]))
        # optional: a distance (null is absent), a planned SD iteration count replacing N_k
        given = {"distance_m": u.get("distance_m") is not None, "sd_iterations": "sd_iterations" in u}
        for f, col in extra.items():
            col.append(c.value(u, f, p, rules[f]) if given[f] else None)
    optional = {f: tuple(col) if any(v is not None for v in col) else None for f, col in extra.items()}
    return {
        "user_ids": tuple(seen),
        "distance_m": optional["distance_m"],
        "sd_iterations_override": optional["sd_iterations"],
        **columns,
    }


def _grid(c: Checker, parent: Mapping[str, Any], key: str, path: str) -> tuple[float, ...]:
    value = c.get(parent, key, path)
    problem = grid_problem(value)
    if problem is not None:
        at = "" if problem[0] is None else f"[{problem[0]}]"
        raise c.fail(f"{join_path(path, key)}{at}", problem[1])
    return tuple(float(v) for v in value)


def instance_from_dict(doc: Any, source: str = "<instance>") -> Instance:
    """Validate a parsed instance document and build the :class:`Instance`.

    The value rules are the instance's own (:data:`~balance_opt.instance.VALUE_RULES`);
    this reader applies them in file order and adds the file name and JSON path.
    """
    c = Checker(source)
    check_header(c, doc, INSTANCE_SCHEMA)
    name = c.name(doc, "name", "")
    generator = c.optional(doc, "generator", dict, "", "a JSON object")
    description = c.optional(doc, "description", str, "", "a string")
    s = c.obj(doc, "server", "")
    server = Server(
        **{f: c.value(s, f, "server", rule) for f, rule in VALUE_RULES["server"].items()},
        z_grid=_grid(c, s, "z_grid", "server"),
        lambda_grid=_grid(c, s, "lambda_grid", "server"),
    )
    llm = _model(c, doc, "llm")
    slm = _model(c, doc, "slm")
    users = _users(c, c.get(doc, "users", ""))
    try:
        return Instance(
            name=name, server=server, llm=llm, slm=slm, generator=generator, description=description, **users
        )
    except InvalidInstance as exc:  # a rule only the whole instance can check
        raise c.fail(exc.path, exc.rule) from None


def _model_dict(m: LanguageModel) -> dict[str, Any]:
    out: dict[str, Any] = {} if m.name is None else {"name": m.name}
    return out | {f: getattr(m, f) for f in VALUE_RULES["model"]}


def instance_to_dict(inst: Instance) -> dict[str, Any]:
    """The docs/formats.md document of an instance (field order fixed, for stable bytes)."""
    s = inst.server
    doc: dict[str, Any] = {"schema": INSTANCE_SCHEMA, "version": FORMAT_VERSION, "name": inst.name}
    if inst.description is not None:
        doc["description"] = inst.description
    if inst.generator is not None:
        doc["generator"] = dict(inst.generator)
    doc["server"] = {f: getattr(s, f) for f in VALUE_RULES["server"]}
    doc["server"].update(z_grid=list(s.z_grid), lambda_grid=list(s.lambda_grid))
    doc["llm"] = _model_dict(inst.llm)
    doc["slm"] = _model_dict(inst.slm)
    users = []
    for k, uid in enumerate(inst.user_ids):
        u: dict[str, Any] = {"id": uid}
        for f, dtype in USER_ARRAY_FIELDS:
            v = getattr(inst, f)[k]
            u[f] = int(v) if dtype is np.int64 else float(v)
        if inst.distance_m is not None and inst.distance_m[k] is not None:
            u["distance_m"] = inst.distance_m[k]
        if inst.sd_iterations_override is not None and inst.sd_iterations_override[k] is not None:
            u["sd_iterations"] = inst.sd_iterations_override[k]
        users.append(u)
    doc["users"] = users
    return doc


def instance_bytes(inst: Instance) -> bytes:
    """The exact bytes :func:`write_instance` writes."""
    return dumps(instance_to_dict(inst)).encode()


def read_instance(path: str | Path) -> Instance:
    """Read and validate an instance file."""
    return instance_from_dict(parse_json(read_bytes(path), str(path)), str(path))


def write_instance(inst: Instance, path: str | Path) -> Path:
    """Write an instance atomically; returns the path."""
    return atomic_write(path, instance_bytes(inst))


def read_document(path: str | Path) -> tuple[str, Any]:
    """Read any project file: ``("instance", Instance)`` or ``("solution", dict)``."""
    doc = parse_json(read_bytes(path), str(path))
    # no object or no schema: the instance reader says what is missing
    schema = doc.get("schema", INSTANCE_SCHEMA) if isinstance(doc, dict) else INSTANCE_SCHEMA
    if schema == SOLUTION_SCHEMA:
        return "solution", check_solution_dict(doc, str(path))
    if schema == INSTANCE_SCHEMA:
        return "instance", instance_from_dict(doc, str(path))
    raise InputError(
        str(path), "schema", f"must be {INSTANCE_SCHEMA!r} or {SOLUTION_SCHEMA!r}, got {_show(schema)}"
    )
