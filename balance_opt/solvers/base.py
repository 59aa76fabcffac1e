"""One signature for every solver: ``solve(instance, *, time_limit, seed, hint) -> Result``."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

from balance_opt.evaluate import Schedule
from balance_opt.instance import Instance
from balance_opt.result import Result, SolverOutput, make_result
from balance_opt.solution import recorded_options


class UnknownOption(ValueError):
    """An option that a solver does not declare (``key`` names it)."""

    def __init__(self, solver: str, key: str, known: Mapping[str, Any]) -> None:
        self.key = key
        names = ", ".join(sorted(known)) or "none"
        super().__init__(f"solver {solver!r} has no option {key!r} (known: {names})")


class Solver(ABC):
    """Base class: subclasses implement :meth:`_solve`; :meth:`solve` times and checks it.

    ``options`` are solver-specific keyword arguments (threads, grids, ...). They are
    validated against :attr:`option_defaults` and recorded in every Result.
    """

    name: ClassVar[str]
    option_defaults: ClassVar[Mapping[str, Any]] = {}

    def __init__(self, **options: Any) -> None:
        self.check_options(options)
        self.options: dict[str, Any] = {**self.option_defaults, **options}

    @classmethod
    def check_options(cls, options: Mapping[str, Any]) -> None:
        """:class:`UnknownOption` for the first key (sorted) that is not in :attr:`option_defaults`."""
        unknown = sorted(set(options) - set(cls.option_defaults))
        if unknown:
            raise UnknownOption(cls.name, unknown[0], cls.option_defaults)

    @classmethod
    def is_available(cls) -> bool:
        """Whether the backend can run here (optional packages installed)."""
        return True

    def solve(
        self,
        instance: Instance,
        *,
        time_limit: float | None = None,
        seed: int = 0,
        hint: Schedule | None = None,
    ) -> Result:
        """Solve ``instance``; the evaluator decides ``feasible`` and ``served``."""
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
