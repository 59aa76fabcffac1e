"""What every solver is: one signature, ``solve(instance, *, time_limit, seed, hint) -> Result``,
and what it declares about itself (:class:`Option` per option, what it proves, what it needs).
"""

from __future__ import annotations

import importlib.util
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar, Literal

from balance_opt.errors import SolverUnavailable
from balance_opt.evaluate import Schedule
from balance_opt.instance import Instance
from balance_opt.result import Result, SolverOutput, make_result
from balance_opt.solution import recorded_options

# The problem whose optima a solver proves: P1 (the model's problem) or P2 (P1 with the
# memory split fixed by lambda); None for a heuristic, whose schedules are only feasible.
Proves = Literal["P1", "P2"] | None


class UnknownOption(ValueError):
    """An option that a solver does not declare (``key`` names it)."""

    def __init__(self, solver: str, key: str, known: Mapping[str, Any]) -> None:
        self.key = key
        names = ", ".join(sorted(known)) or "none"
        super().__init__(f"solver {solver!r} has no option {key!r} (known: {names})")


class InvalidOption(ValueError):
    """A declared option given a value outside its domain (``key`` names it)."""

    def __init__(self, solver: str, key: str, problem: str) -> None:
        self.key = key
        super().__init__(f"solver {solver!r}: {key} {problem}")


_KINDS = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


@dataclass(frozen=True)
class Option:
    """One option of a solver: its default (whose type is the option's), and its domain."""

    default: Any
    choices: tuple[Any, ...] = ()  # when given, the only values allowed
    minimum: float | None = None
    kind: type | None = None  # the values' type where the default is None ("off")

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is outside the domain, or None."""
        if value is None and self.default is None:
            return None
        kind = self.kind or type(self.default)
        # bool is an int in Python, but no option takes one for the other
        ok = isinstance(value, kind) and (kind is bool or not isinstance(value, bool))
        if kind is float:
            ok = isinstance(value, int | float) and not isinstance(value, bool)
        if not ok:
            return f"must be {_KINDS.get(kind, kind.__name__)}, got {value!r}"
        if self.choices and value not in self.choices:
            return f"must be one of {self.choices}, got {value!r}"
        if self.minimum is not None and value < self.minimum:
            return f"must be at least {self.minimum:g}, got {value!r}"
        return None


@dataclass(frozen=True)
class Availability:
    """Whether a solver can run here and, when not, why (with the install command)."""

    available: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.available


@cache
def _missing(modules: tuple[str, ...]) -> tuple[str, ...]:
    """The modules that cannot be imported here (probed once per process)."""
    return tuple(m for m in modules if importlib.util.find_spec(m) is None)


def availability_of(who: str, modules: tuple[str, ...], install: str) -> Availability:
    """Whether ``modules`` can be imported here; if not, the reason names ``who`` and how to install."""
    missing = _missing(modules)
    if not missing:
        return Availability(True)
    how = f": install it with `pip install {install}`" if install else ""
    return Availability(False, f"solver {who!r} needs {', '.join(missing)}{how}")


class Solver(ABC):
    """Base class: subclasses implement :meth:`_solve`; :meth:`solve` times and checks it.

    A subclass declares, once: its ``name``; ``option_specs``, every option with its
    default and domain (checked when the solver is made, and recorded in every Result);
    ``proves``; and ``requires``, the optional modules it needs (``install`` says how to
    get them).
    """

    name: ClassVar[str]
    option_specs: ClassVar[Mapping[str, Option]] = {}
    proves: ClassVar[Proves] = None
    requires: ClassVar[tuple[str, ...]] = ()
    install: ClassVar[str] = ""

    def __init__(self, **options: Any) -> None:
        self.check_options(options)
        self.options: dict[str, Any] = {**self.option_defaults(), **options}

    @classmethod
    def option_defaults(cls) -> dict[str, Any]:
        """Every option's default value."""
        return {key: spec.default for key, spec in cls.option_specs.items()}

    @classmethod
    def check_options(cls, options: Mapping[str, Any]) -> None:
        """:class:`UnknownOption` for the first undeclared key (sorted), else
        :class:`InvalidOption` for the first value outside its option's domain."""
        unknown = sorted(set(options) - set(cls.option_specs))
        if unknown:
            raise UnknownOption(cls.name, unknown[0], cls.option_specs)
        for key in sorted(options):
            problem = cls.option_specs[key].problem(options[key])
            if problem is not None:
                raise InvalidOption(cls.name, key, problem)

    @classmethod
    def availability(cls) -> Availability:
        """Whether the solver can run here: its optional modules are installed."""
        return availability_of(cls.name, cls.requires, cls.install)

    @classmethod
    def is_available(cls) -> bool:
        """``bool(availability())``."""
        return bool(cls.availability())

    def solve(
        self,
        instance: Instance,
        *,
        time_limit: float | None = None,
        seed: int = 0,
        hint: Schedule | None = None,
    ) -> Result:
        """Solve ``instance``; the evaluator decides ``feasible`` and ``served``."""
        available = self.availability()
        if not available:
            raise SolverUnavailable(available.reason)
        start = time.perf_counter()
        out = self._solve(instance, time_limit=time_limit, seed=seed, hint=hint)
        runtime = time.perf_counter() - start
        options = recorded_options(self.options, seed, time_limit)
        return make_result(instance, self.name, options, out, runtime)

    @abstractmethod
    def _solve(
        self,
        instance: Instance,
        *,
        time_limit: float | None,
        seed: int,
        hint: Schedule | None,
    ) -> SolverOutput:
        """Return a schedule and what the solver knows about it."""
