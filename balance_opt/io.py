"""Reading and writing instance and solution files (FORMATS.md), with full validation.

A bad file raises :class:`InputError` whose message names the file, the JSON path and
the rule it breaks, e.g. ``bad.json: users[3].acceptance: must be a number with
0 < value < 1, got 1.2``. Writes are atomic (temporary file, fsync, rename), so a
reader never sees half a file.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from balance_opt.instance import USER_ARRAY_FIELDS, Instance, LanguageModel, Server
from balance_opt.status import Status, Termination

INSTANCE_SCHEMA = "balance-opt/instance"
SOLUTION_SCHEMA = "balance-opt/solution"
FORMAT_VERSION = 1


class InputError(ValueError):
    """A file or value that breaks a rule of FORMATS.md (exit status 2 on the CLI)."""

    def __init__(self, source: str, path: str, rule: str) -> None:
        self.source, self.path, self.rule = source, path, rule
        where = f"{source}: {path}" if path else source
        super().__init__(f"{where}: {rule}")


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

    def integer(self, parent: Mapping[str, Any], key: str, path: str, minimum: int = 1) -> int:
        value = self.get(parent, key, path)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(_join(path, key), f"must be an integer >= {minimum}, got {_show(value)}")
        if value < minimum:
            raise self.fail(_join(path, key), f"must be an integer >= {minimum}, got {value}")
        return value

    def number(
        self,
        parent: Mapping[str, Any],
        key: str,
        path: str,
        rule: str,
        ok: Callable[[float], bool],
    ) -> float:
        value = self.get(parent, key, path)
        return self.number_value(value, _join(path, key), rule, ok)

    def number_value(self, value: Any, path: str, rule: str, ok: Callable[[float], bool]) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(path, f"must be a number {rule}, got {_show(value)}")
        x = float(value)
        if not math.isfinite(x) or not ok(x):
            raise self.fail(path, f"must be a finite number {rule}, got {_show(value)}")
        return x

    def positive(self, parent: Mapping[str, Any], key: str, path: str) -> float:
        return self.number(parent, key, path, "> 0", lambda x: x > 0)

    def string(self, parent: Mapping[str, Any], key: str, path: str) -> str:
        value = self.get(parent, key, path)
        if not isinstance(value, str):
            raise self.fail(_join(path, key), f"must be a string, got {_show(value)}")
        return value

    def grid(self, parent: Mapping[str, Any], key: str, path: str) -> tuple[float, ...]:
        value = self.get(parent, key, path)
        p = _join(path, key)
        if not isinstance(value, list) or not value:
            raise self.fail(p, f"must be a non-empty list of numbers in [0, 1], got {_show(value)}")
        grid = tuple(
            self.number_value(v, f"{p}[{i}]", "in [0, 1]", lambda x: 0.0 <= x <= 1.0)
            for i, v in enumerate(value)
        )
        for i in range(1, len(grid)):
            if grid[i] <= grid[i - 1]:
                raise self.fail(
                    f"{p}[{i}]", f"grid must be strictly increasing, got {grid[i]!r} after {grid[i - 1]!r}"
                )
        return grid


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _show(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, float) or math.isfinite(value) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


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
        # json accepts NaN / Infinity by default; FORMATS.md does not. Rejected after
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
    name = m.get("name")
    if name is not None and not isinstance(name, str):
        raise c.fail(f"{key}.name", f"must be a string when given, got {_show(name)}")
    return LanguageModel(
        layers=c.integer(m, "layers", key),
        hidden=c.integer(m, "hidden", key),
        head_dim=c.integer(m, "head_dim", key),
        heads=c.integer(m, "heads", key),
        ffn=c.integer(m, "ffn", key),
        alpha_s_per_flop=c.positive(m, "alpha_s_per_flop", key),
        beta_s=c.number(m, "beta_s", key, ">= 0", lambda x: x >= 0),
        name=name,
    )


def instance_from_dict(doc: Any, source: str = "<instance>") -> Instance:
    """Validate a parsed instance document and build the :class:`Instance`."""
    c = _Checker(source)
    _check_header(c, doc, INSTANCE_SCHEMA)
    name = c.string(doc, "name", "")
    generator = doc.get("generator")
    if generator is not None and not isinstance(generator, dict):
        raise c.fail("generator", f"must be a JSON object when given, got {_show(generator)}")
    description = doc.get("description")
    if description is not None and not isinstance(description, str):
        raise c.fail("description", f"must be a string when given, got {_show(description)}")
    s = c.obj(doc, "server", "")
    server = Server(
        memory_bytes=c.positive(s, "memory_bytes", "server"),
        bytes_per_param=c.positive(s, "bytes_per_param", "server"),
        draft_length=c.integer(s, "draft_length", "server"),
        bits_per_token=c.positive(s, "bits_per_token", "server"),
        z_grid=c.grid(s, "z_grid", "server"),
        lambda_grid=c.grid(s, "lambda_grid", "server"),
    )
    llm = _model(c, doc, "llm")
    slm = _model(c, doc, "slm")
    users = c.get(doc, "users", "")
    if not isinstance(users, list) or not users:
        raise c.fail("users", f"must be a non-empty list of user objects, got {_show(users)}")
    columns: dict[str, list[Any]] = {f: [] for f, _ in USER_ARRAY_FIELDS}
    ids: list[str] = []
    distances: list[float | None] = []
    levels: list[int | None] = []
    seen: dict[str, int] = {}
    for i, u in enumerate(users):
        p = f"users[{i}]"
        if not isinstance(u, dict):
            raise c.fail(p, f"must be a JSON object, got {_show(u)}")
        uid = c.string(u, "id", p)
        if uid in seen:
            raise c.fail(f"{p}.id", f"user ids must be unique, {uid!r} is also users[{seen[uid]}].id")
        seen[uid] = i
        ids.append(uid)
        columns["input_tokens"].append(c.integer(u, "input_tokens", p))
        columns["output_tokens"].append(c.integer(u, "output_tokens", p))
        columns["deadline_s"].append(c.positive(u, "deadline_s", p))
        columns["acceptance"].append(c.number(u, "acceptance", p, "with 0 < value < 1", lambda x: 0 < x < 1))
        for f in (
            "uplink_bandwidth_hz",
            "uplink_spectral_efficiency",
            "downlink_bandwidth_hz",
            "downlink_spectral_efficiency",
        ):
            columns[f].append(c.positive(u, f, p))
        d = u.get("distance_m")
        distances.append(
            None if d is None else c.number_value(d, f"{p}.distance_m", ">= 0", lambda x: x >= 0)
        )
        # optional: a planned SD iteration count replacing the formula's N_k
        levels.append(c.integer(u, "sd_iterations", p) if "sd_iterations" in u else None)
    return Instance(
        name=name,
        server=server,
        llm=llm,
        slm=slm,
        user_ids=tuple(ids),
        distance_m=tuple(distances) if any(d is not None for d in distances) else None,
        sd_iterations_override=tuple(levels) if any(n is not None for n in levels) else None,
        generator=generator,
        description=description,
        **columns,  # type: ignore[arg-type]
    )


def _model_dict(m: LanguageModel) -> dict[str, Any]:
    out: dict[str, Any] = {} if m.name is None else {"name": m.name}
    out.update(
        layers=m.layers,
        hidden=m.hidden,
        head_dim=m.head_dim,
        heads=m.heads,
        ffn=m.ffn,
        alpha_s_per_flop=m.alpha_s_per_flop,
        beta_s=m.beta_s,
    )
    return out


def instance_to_dict(inst: Instance) -> dict[str, Any]:
    """The FORMATS.md document of an instance (field order fixed, for stable bytes)."""
    s = inst.server
    doc: dict[str, Any] = {"schema": INSTANCE_SCHEMA, "version": FORMAT_VERSION, "name": inst.name}
    if inst.description is not None:
        doc["description"] = inst.description
    if inst.generator is not None:
        doc["generator"] = dict(inst.generator)
    doc["server"] = {
        "memory_bytes": s.memory_bytes,
        "bytes_per_param": s.bytes_per_param,
        "draft_length": s.draft_length,
        "bits_per_token": s.bits_per_token,
        "z_grid": list(s.z_grid),
        "lambda_grid": list(s.lambda_grid),
    }
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
    """Write via a temporary file in the same folder, fsync, then rename over ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode() if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


# --- solutions ------------------------------------------------------------------------


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
    c.number(doc, "z", "", "in [0, 1]", lambda x: 0.0 <= x <= 1.0)
    if doc.get("lambda") is not None:
        c.number(doc, "lambda", "", "in [0, 1] or null", lambda x: 0.0 <= x <= 1.0)
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
    served = c.integer(doc, "served", "", minimum=0) if "served" in doc else None
    if status == Status.ERROR and served not in (None, 0):
        raise c.fail("served", f'must be 0 when status is "error", got {served}')
    bound = doc.get("bound")
    if bound is not None:
        bound = c.integer(doc, "bound", "", minimum=0)
    if status == Status.OPTIMAL and served is not None and "bound" in doc and bound != served:
        raise c.fail("bound", f'must equal served ({served}) when status is "optimal", got {_show(bound)}')
    if "runtime_s" in doc:
        c.number(doc, "runtime_s", "", ">= 0", lambda x: x >= 0)
    if "feasible" in doc and not isinstance(doc["feasible"], bool):
        raise c.fail("feasible", f"must be true or false, got {_show(doc['feasible'])}")
    if status == Status.ERROR:
        c.string(doc, "error", "")


def read_solution(path: str | Path, inst: Instance | None = None) -> dict[str, Any]:
    """Read and validate a solution file."""
    return check_solution_dict(parse_json(read_bytes(path), str(path)), str(path), inst)


def read_document(path: str | Path) -> tuple[str, Any]:
    """Read any project file: ``("instance", Instance)`` or ``("solution", dict)``."""
    doc = parse_json(read_bytes(path), str(path))
    if not isinstance(doc, dict):
        raise InputError(str(path), "", f"must hold a JSON object at the top level, got {_show(doc)[:20]}")
    if "schema" not in doc:
        raise InputError(str(path), "schema", "is required but missing")
    schema = doc["schema"]
    if schema == SOLUTION_SCHEMA:
        return "solution", check_solution_dict(doc, str(path))
    if schema == INSTANCE_SCHEMA:
        return "instance", instance_from_dict(doc, str(path))
    raise InputError(
        str(path), "schema", f"must be {INSTANCE_SCHEMA!r} or {SOLUTION_SCHEMA!r}, got {_show(schema)}"
    )
