"""What every solver is: one signature, ``solve(instance, *, time_limit, seed, hint) -> Solution``,
and what it declares about itself (:class:`Option` per option, what it proves, what it needs).
"""

from __future__ import annotations

import importlib.util
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import cache
from typing import Any, ClassVar, Literal

from balance_opt.errors import SolverUnavailable
from balance_opt.evaluator import Schedule
from balance_opt.instance import Instance
from balance_opt.result import SolverOutput, make_result
from balance_opt.solution import Solution, recorded_options

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

# The portable ceilings of every option (docs/solvers.md, "Domains"): a configuration that
# one machine accepts runs on every other, so no domain depends on this machine's cores.
MAX_THREADS = 256
MAX_SECONDS = 1e7  # about 116 days: any longer limit is a mistake, not a plan
MAX_INT = 2**63 - 1  # int64: what the backends and the results table hold


@dataclass(frozen=True)
class Option:
    """One option of a solver: its default (whose type is the option's), its domain and
    what it does.

    The domain is the type, then ``choices`` or the range ``[minimum, maximum]`` (the
    lower end open with ``above``); a float is always finite and an integer within
    int64, so no value that a backend or a JSON file cannot hold gets past it.
    """

    default: Any
    choices: tuple[Any, ...] = ()  # when given, the only values allowed
    minimum: float | None = None
    kind: type | None = None  # the values' type where the default is None ("off")
    maximum: float | None = None
    above: bool = False  # the minimum itself is outside the domain
    description: str = ""

    @property
    def value_type(self) -> type:
        """The type of the values (``kind``, else the default's)."""
        return self.kind or type(self.default)

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is outside the domain, or None."""
        if value is None and self.default is None:
            return None
        kind = self.value_type
        # bool is an int in Python, but no option takes one for the other
        ok = isinstance(value, kind) and (kind is bool or not isinstance(value, bool))
        if kind is float:
            ok = isinstance(value, int | float) and not isinstance(value, bool)
        if not ok:
            return f"must be {_KINDS.get(kind, kind.__name__)}, got {value!r}"
        if self.choices and value not in self.choices:
            return f"must be one of {self.choices}, got {value!r}"
        if kind in (int, float) and not self._in_range(value):
            return f"must be {self.domain()}, got {value!r}"
        return None

    def _in_range(self, value: float) -> bool:
        if isinstance(value, float) and not math.isfinite(value):
            return False
        low, high = self.bounds()
        if low is not None and (value < low or (self.above and value == low)):
            return False
        return high is None or value <= high

    def bounds(self) -> tuple[float | None, float | None]:
        """The range's ends (an integer's upper end is at most int64's)."""
        high = self.maximum
        if self.value_type is int:
            high = MAX_INT if high is None else min(high, MAX_INT)
        return self.minimum, high

    def domain(self) -> str:
        """The domain in words, e.g. ``an integer in [1, 256]``, ``one of ('fast', 'literal')``."""
        kind = self.value_type
        if self.choices:
            text = f"one of {self.choices}"
        elif kind in (int, float):
            low, high = self.bounds()
            name = "an integer" if kind is int else "a finite number"
            left = "-inf" if low is None else f"{low:g}"
            right = "inf" if high is None else (str(int(high)) if kind is int else f"{high:g}")
            text = f"{name} in {'(' if self.above or low is None else '['}{left}, {right}]"
        else:
            text = _KINDS.get(kind, kind.__name__)
        return f"{text} or null (off)" if self.default is None else text


def threads_option(default: int = 1, description: str = "") -> Option:
    """The ``threads`` option: 1 by default everywhere (one solve per core keeps timings
    comparable), at most :data:`MAX_THREADS`."""
    text = description or "worker threads of the solve"
    return Option(default, minimum=1, maximum=MAX_THREADS, description=text)


def seconds_option(description: str) -> Option:
    """A time limit in seconds: off (None) by default, else finite, above 0 and at most
    :data:`MAX_SECONDS`."""
    return Option(None, kind=float, minimum=0.0, above=True, maximum=MAX_SECONDS, description=description)


def param(option: Option) -> Any:
    """A field of a solver's parameters record (its ``Params``), declared by its option:
    the field's default is the option's, and the option (domain, description) rides along."""
    return field(default=option.default, metadata={"option": option})


def options_of(params: type) -> dict[str, Option]:
    """The options a parameters record declares, in its fields' order."""
    return {f.name: f.metadata["option"] for f in fields(params)}


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

    A subclass declares, once: its ``name``; its parameters, as ``Params``, a frozen
    dataclass whose fields are :func:`param` s (each with its default, domain and
    description; ``option_specs`` follows from it), or as ``option_specs`` alone (a
    plug-in's mapping of :class:`Option`); ``proves``; and ``requires``, the optional
    modules it needs (``install`` says how to get them). The options are checked once,
    when the solver is made; ``self.params`` is then the typed record, ``self.options``
    the same values as recorded in every Solution.
    """

    name: ClassVar[str]
    Params: ClassVar[type | None] = None
    option_specs: ClassVar[Mapping[str, Option]] = {}
    proves: ClassVar[Proves] = None
    requires: ClassVar[tuple[str, ...]] = ()
    install: ClassVar[str] = ""
    params: Any  # an instance of Params (a subclass names its type); None without one

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.Params is not None:  # one declaration: the record's fields are the options
            cls.option_specs = options_of(cls.Params)

    def __init__(self, **options: Any) -> None:
        self.check_options(options)
        self.options: dict[str, Any] = {**self.option_defaults(), **options}
        self.params = None if self.Params is None else self.Params(**self.options)

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
    ) -> Solution:
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
