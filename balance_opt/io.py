"""Reading and writing instance and solution files (docs/formats.md), with full validation.

A bad file raises :class:`InputError` whose message names the file, the JSON path and
the rule it breaks, e.g. ``bad.json: users[3].acceptance: must be a number with
0 < value < 1, got 1.2``. Writes are atomic (temporary file, fsync, rename), so a
reader never sees half a file.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from balance_opt.claims import Claims, contradiction
from balance_opt.errors import InputError
from balance_opt.instance import (
    NON_NEGATIVE,
    UNIT,
    USER_ARRAY_FIELDS,
    VALUE_RULES,
    Instance,
    InvalidInstance,
    LanguageModel,
    Rule,
    Server,
    grid_problem,
)
from balance_opt.instance import show_value as _show
from balance_opt.status import Status, Termination

INSTANCE_SCHEMA = "balance-opt/instance"
SOLUTION_SCHEMA = "balance-opt/solution"
FORMAT_VERSION = 1


# --- low-level checks -------------------------------------------------------------


class _Checker:
    """Reads typed values out of a JSON tree, raising InputError with the JSON path."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, rule: str) -> InputError:
        return InputError(self.source, path, rule)

    def obj(self, parent: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
        value = self.get(parent, key, path)
        if not isinstance(value, dict):
            raise self.fail(_join(path, key), f"must be a JSON object, got {_show(value)}")
        return value

    def get(self, parent: Mapping[str, Any], key: str, path: str) -> Any:
        if key not in parent:
            raise self.fail(_join(path, key), "is required but missing")
        return parent[key]

    def value(self, parent: Mapping[str, Any], key: str, path: str, rule: Rule) -> Any:
        """``parent[key]`` checked against one rule of the instance's table."""
        value = self.get(parent, key, path)
        broken = rule.broken(value)
        if broken is not None:
            raise self.fail(_join(path, key), broken)
        return float(value) if not rule.integer else value

    def string(self, parent: Mapping[str, Any], key: str, path: str) -> str:
        value = self.get(parent, key, path)
        if not isinstance(value, str):
            raise self.fail(_join(path, key), f"must be a string, got {_show(value)}")
        return value

    def grid(self, parent: Mapping[str, Any], key: str, path: str) -> tuple[float, ...]:
        value = self.get(parent, key, path)
        problem = grid_problem(value)
        if problem is not None:
            at = "" if problem[0] is None else f"[{problem[0]}]"
            raise self.fail(f"{_join(path, key)}{at}", problem[1])
        return tuple(float(v) for v in value)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class _NonFinite:
    """Stands in for a ``NaN`` / ``Infinity`` literal until its JSON path is known."""

    def __init__(self, name: str) -> None:
        self.name = name


def _find_non_finite(value: Any, path: str = "") -> tuple[str, str] | None:
    """The JSON path and literal of the first non-finite number, in document order."""
    if isinstance(value, _NonFinite):
        return path, value.name
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _find_non_finite(item, f"{path}[{key}]" if isinstance(key, int) else _join(path, key))
        if found is not None:
            return found
    return None


def parse_json(text: str | bytes, source: str) -> Any:
    """Strict JSON: no NaN / Infinity (named by JSON path), duplicate keys rejected."""
    seen: list[_NonFinite] = []

    def non_finite(name: str) -> _NonFinite:
        # json accepts NaN / Infinity by default; docs/formats.md does not. Rejected after
        # parsing, when the tree gives the literal its path.
        seen.append(_NonFinite(name))
        return seen[-1]

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in pairs:
            if k in out:
                raise ValueError(f"duplicate key {k!r}")
            out[k] = v
        return out

    try:
        doc = json.loads(text, parse_constant=non_finite, object_pairs_hook=no_duplicates)
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        raise InputError(source, "", f"is not valid JSON: {exc}") from None
    found = _find_non_finite(doc) if seen else None
    if found is not None:
        raise InputError(source, found[0], f"{found[1]} is not valid JSON (numbers must be finite)")
    return doc


def _check_header(c: _Checker, doc: Any, schema: str) -> None:
    if not isinstance(doc, dict):
        raise c.fail("", f"must hold a JSON object at the top level, got {_show(doc)[:20]}")
    got = c.get(doc, "schema", "")
    if got != schema:
        raise c.fail("schema", f"must be {schema!r}, got {_show(got)}")
    version = c.get(doc, "version", "")
    if isinstance(version, bool) or version != FORMAT_VERSION:
        raise c.fail("version", f"must be {FORMAT_VERSION}, got {_show(version)}")


# --- instances ----------------------------------------------------------------------


def _model(c: _Checker, doc: Mapping[str, Any], key: str) -> LanguageModel:
    m = c.obj(doc, key, "")
    name = _optional(c, m, "name", str, f"{key}.", "a string")
    return LanguageModel(
        **{f: c.value(m, f, key, rule) for f, rule in VALUE_RULES["model"].items()}, name=name
    )


def _optional(c: _Checker, doc: Mapping[str, Any], key: str, kind: type, path: str, what: str) -> Any:
    """An optional field of the given JSON type (None when absent or null)."""
    value = doc.get(key)
    if value is not None and not isinstance(value, kind):
        raise c.fail(f"{path}{key}", f"must be {what} when given, got {_show(value)}")
    return value


def _users(c: _Checker, users: Any) -> dict[str, Any]:
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
        uid = c.string(u, "id", p)
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


def instance_from_dict(doc: Any, source: str = "<instance>") -> Instance:
    """Validate a parsed instance document and build the :class:`Instance`.

    The value rules are the instance's own (:data:`~balance_opt.instance.VALUE_RULES`);
    this reader applies them in file order and adds the file name and JSON path.
    """
    c = _Checker(source)
    _check_header(c, doc, INSTANCE_SCHEMA)
    name = c.string(doc, "name", "")
    generator = _optional(c, doc, "generator", dict, "", "a JSON object")
    description = _optional(c, doc, "description", str, "", "a string")
    s = c.obj(doc, "server", "")
    server = Server(
        **{f: c.value(s, f, "server", rule) for f, rule in VALUE_RULES["server"].items()},
        z_grid=c.grid(s, "z_grid", "server"),
        lambda_grid=c.grid(s, "lambda_grid", "server"),
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


def dumps(doc: Mapping[str, Any]) -> str:
    """Deterministic JSON text: fixed indentation, float repr, trailing newline."""
    return json.dumps(doc, indent=2, allow_nan=False) + "\n"


def instance_bytes(inst: Instance) -> bytes:
    """The exact bytes :func:`write_instance` writes."""
    return dumps(instance_to_dict(inst)).encode()


def read_bytes(path: str | Path) -> bytes:
    """A file's bytes, with a missing or unreadable file as an InputError."""
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise InputError(str(path), "", f"cannot be read: {exc.strerror or exc}") from None


def read_instance(path: str | Path) -> Instance:
    """Read and validate an instance file."""
    return instance_from_dict(parse_json(read_bytes(path), str(path)), str(path))


def write_instance(inst: Instance, path: str | Path) -> Path:
    """Write an instance atomically; returns the path."""
    return atomic_write(path, instance_bytes(inst))


def sha256_bytes(data: bytes) -> str:
    """Hex digest used in solution files (``instance_sha256``)."""
    return hashlib.sha256(data).hexdigest()


def atomic_write(path: str | Path, data: bytes | str) -> Path:
    """Write via a temporary file in the same folder, fsync, then rename over ``path``.

    The file gets mode 0666 less the user's umask, as any other tool's file would
    (``tempfile.mkstemp`` would keep its private 0600 through the rename).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode() if isinstance(data, str) else data
    fd, tmp = _create_temporary(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def _create_temporary(path: Path) -> tuple[int, Path]:
    """A new, exclusively created ``.NAME.RANDOM.tmp`` beside ``path``; the kernel applies the umask."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:  # pragma: no cover - 48 random bits collide
            continue


# --- solutions ------------------------------------------------------------------------

_COUNT0 = Rule(">= 0", lambda x: x >= 0, integer=True)  # served, bound


def check_solution_dict(doc: Any, source: str = "<solution>", inst: Instance | None = None) -> dict[str, Any]:
    """Validate a solution document (and, given the instance, its assignment's user ids).

    Required: ``schema``, ``version``, ``z``, ``assignment`` and ``instance`` or
    ``instance_sha256``; every other field is optional (an outside tool need not write
    them), but a field that is present must follow its rule.
    """
    c = _Checker(source)
    _check_header(c, doc, SOLUTION_SCHEMA)
    if "instance" not in doc and "instance_sha256" not in doc:
        raise c.fail("instance", "is required when instance_sha256 is missing (one must name the instance)")
    if "instance" in doc:
        c.string(doc, "instance", "")
    if "instance_sha256" in doc:
        sha = c.string(doc, "instance_sha256", "")
        if len(sha) != 64 or any(ch not in "0123456789abcdef" for ch in sha):
            raise c.fail("instance_sha256", f"must be 64 lowercase hex digits, got {_show(sha)}")
    _check_optional_claims(c, doc)
    c.value(doc, "z", "", UNIT)
    if doc.get("lambda") is not None:
        c.value(doc, "lambda", "", Rule("in [0, 1] or null", UNIT.ok))
    assignment = c.obj(doc, "assignment", "")
    for uid, mode in assignment.items():
        if mode not in ("ad", "sd", "none"):
            raise c.fail(f"assignment.{uid}", f'must be "ad", "sd" or "none", got {_show(mode)}')
    if inst is not None:
        missing = [u for u in inst.user_ids if u not in assignment]
        if missing:
            raise c.fail("assignment", f"must give every user a mode; missing {missing[:5]}")
        extra = [u for u in assignment if u not in set(inst.user_ids)]
        if extra:
            raise c.fail("assignment", f"names users the instance does not have: {extra[:5]}")
    return dict(doc)


def _check_optional_claims(c: _Checker, doc: Mapping[str, Any]) -> None:
    """The rules of the optional fields that are present (solver, status, served, bound, ...)."""
    if "solver" in doc:
        c.string(doc, "solver", "")
    if "options" in doc:
        c.obj(doc, "options", "")
    status = doc.get("status")
    for key, kind in (("status", Status), ("termination", Termination)):
        if key in doc and doc[key] not in kind.__members__.values():
            raise c.fail(key, f"must be one of {', '.join(kind)}, got {_show(doc[key])}")
    if "served" in doc:
        c.value(doc, "served", "", _COUNT0)
    if doc.get("bound") is not None:
        c.value(doc, "bound", "", _COUNT0)
    if "runtime_s" in doc:
        c.value(doc, "runtime_s", "", NON_NEGATIVE)
    if "feasible" in doc and not isinstance(doc["feasible"], bool):
        raise c.fail("feasible", f"must be true or false, got {_show(doc['feasible'])}")
    broken = contradiction(Claims.of_document(doc))  # claims that cannot all be true
    if broken is not None:
        raise c.fail(*broken)
    if status == Status.ERROR:
        c.string(doc, "error", "")


def read_solution(path: str | Path, inst: Instance | None = None) -> dict[str, Any]:
    """Read and validate a solution file."""
    return check_solution_dict(parse_json(read_bytes(path), str(path)), str(path), inst)


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
