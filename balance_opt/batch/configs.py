"""Named solver configurations for batch runs: one small TOML file each (``solvers/*.toml`` of the
repository, shipped with the package: :func:`balance_opt.data.config_dir`).

A configuration file reads::

    solver = "milp-highs"          # a registered solver name
    description = "..."            # optional

    [options]
    threads = 1                    # solver-specific options, passed to get_solver
    seed = 0                       # solve(seed=...)
    time_limit_s = 60              # solve(time_limit=...)
    warm_start = true              # any other option the solver declares

The configuration's name is the file stem. ``--solver NAME`` is the configuration of that
solver with its default options. The hash that keys finished work in a run folder covers
the solver name, every option, the seed and the time limit (not the name or description).
"""

from __future__ import annotations

import hashlib
import json
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from balance_opt.errors import InputError
from balance_opt.files import read_bytes
from balance_opt.solvers.base import InvalidOption, UnknownOption

if TYPE_CHECKING:
    from balance_opt.solvers.base import Solver

# Keys of [options] that are arguments of Solver.solve, not of the solver's constructor.
SOLVE_KEYS = ("seed", "time_limit_s")
TOP_LEVEL_KEYS = ("solver", "description", "options")


@dataclass(frozen=True)
class SolverConfig:
    """One solver with fixed options: what a row of the results table was produced by."""

    name: str
    solver: str
    options: Mapping[str, Any] = field(default_factory=dict)
    time_limit_s: float | None = None
    seed: int = 0
    description: str | None = None

    def identity(self) -> dict[str, Any]:
        """Everything that changes the answer (hashed to key finished work)."""
        return {
            "solver": self.solver,
            "options": dict(sorted(self.options.items())),
            "seed": self.seed,
            "time_limit_s": self.time_limit_s,
        }

    @property
    def hash(self) -> str:
        """Stable 16-hex-digit digest of :meth:`identity`."""
        text = json.dumps(self.identity(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        """The configuration as plain JSON-able data."""
        return {"name": self.name, "description": self.description, **self.identity()}

    def with_time_limit(self, time_limit_s: float | None) -> SolverConfig:
        """This configuration with a time limit, unless it fixes its own."""
        if self.time_limit_s is not None or time_limit_s is None:
            return self
        return SolverConfig(self.name, self.solver, self.options, time_limit_s, self.seed, self.description)


def _solver_class(solver: str, source: str) -> type[Solver]:
    from balance_opt.solvers import solver_class, solver_names

    if solver not in solver_names():
        raise InputError(source, "solver", f"unknown solver {solver!r}; known: {', '.join(solver_names())}")
    try:
        return solver_class(solver)
    except ImportError as exc:
        raise InputError(source, "solver", f"solver {solver!r} cannot be loaded here: {exc}") from None


def make_config(
    solver: str,
    options: Mapping[str, Any] | None = None,
    *,
    name: str | None = None,
    time_limit_s: float | None = None,
    seed: int = 0,
    description: str | None = None,
    source: str = "--solver",
) -> SolverConfig:
    """A validated configuration; a solver with a ``threads`` option records its thread
    count even when not told (the declared default, 1 for every solver: one thread per
    solve keeps timings comparable when several solves share the machine), so the hash
    of every configuration written before the default was declared stays the same.
    """
    opts = dict(options or {})
    cls = _solver_class(solver, source)
    try:
        cls.check_options(opts)
    except (UnknownOption, InvalidOption) as exc:
        raise InputError(source, f"options.{exc.key}", str(exc)) from None
    except ValueError as exc:  # a value out of its range (the message names the option)
        raise InputError(source, "options", str(exc)) from None
    if "threads" in cls.option_specs and "threads" not in opts:
        opts["threads"] = cls.option_specs["threads"].default
    if time_limit_s is not None:
        if isinstance(time_limit_s, bool) or not isinstance(time_limit_s, int | float):
            raise InputError(source, "options.time_limit_s", f"must be a number > 0, got {time_limit_s!r}")
        if not math.isfinite(time_limit_s) or time_limit_s <= 0:
            raise InputError(source, "options.time_limit_s", f"must be a number > 0, got {time_limit_s!r}")
        time_limit_s = float(time_limit_s)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError(source, "options.seed", f"must be an integer, got {seed!r}")
    return SolverConfig(name or solver, solver, opts, time_limit_s, seed, description)


def load_config(path: str | Path) -> SolverConfig:
    """Read a configuration file; any mistake is an InputError naming the file and key."""
    path = Path(path)
    source = str(path)
    try:
        # utf-8-sig: a byte-order mark, as some editors write, is not part of the TOML text
        doc = tomllib.loads(read_bytes(path, limit=1 << 20).decode("utf-8-sig"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(source, "", f"is not valid TOML: {exc}") from None
    extra = sorted(set(doc) - set(TOP_LEVEL_KEYS))
    if extra:
        raise InputError(source, extra[0], f"unknown key (allowed: {', '.join(TOP_LEVEL_KEYS)})")
    solver = doc.get("solver")
    if not isinstance(solver, str):
        raise InputError(source, "solver", f"must be a solver name (string), got {solver!r}")
    description = doc.get("description")
    if description is not None and not isinstance(description, str):
        raise InputError(source, "description", f"must be a string, got {description!r}")
    options = doc.get("options", {})
    if not isinstance(options, dict):
        raise InputError(source, "options", "must be a table ([options])")
    options = dict(options)
    solve_args = {k: options.pop(k) for k in SOLVE_KEYS if k in options}
    return make_config(
        solver,
        options,
        name=path.stem,
        time_limit_s=solve_args.get("time_limit_s"),
        seed=solve_args.get("seed", 0),
        description=description,
        source=source,
    )


def config_names() -> list[str]:
    """The names of the packaged configurations, sorted."""
    from balance_opt.data import config_dir

    return sorted(p.stem for p in config_dir().glob("*.toml"))


def config_path(spec: str) -> Path:
    """A configuration file by path, or by name from the packaged ones (``milp-highs-60s``).

    A path that exists, ends in ``.toml`` or has a folder part is a file; any other word is a
    name, looked up in :func:`balance_opt.data.config_dir` whatever the working directory.
    """
    from balance_opt.data import config_dir

    path = Path(spec)
    if path.exists() or path.suffix == ".toml" or len(path.parts) > 1:
        return path
    shipped = config_dir() / f"{spec}.toml"
    if shipped.is_file():
        return shipped
    names = ", ".join(config_names())
    raise InputError(spec, "", f"no such configuration file or name (named, in {config_dir()}: {names})")


def resolve_configs(
    solvers: list[str] | None,
    config_paths: list[str] | None,
    time_limit_s: float | None = None,
) -> list[SolverConfig]:
    """The configurations of a command line, in order; names must be unique."""
    configs = [make_config(s) for s in solvers or []]
    configs += [load_config(config_path(p)) for p in config_paths or []]
    configs = [c.with_time_limit(time_limit_s) for c in configs]
    seen: set[str] = set()
    for c in configs:
        if c.name in seen:
            raise InputError("command line", "", f"solver configuration {c.name!r} is given twice")
        seen.add(c.name)
    if not configs:
        raise InputError("command line", "", "give at least one --solver NAME or --config FILE")
    return configs
