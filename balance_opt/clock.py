"""When a solver's work stops: one :class:`Deadline` instead of ``perf_counter`` floats.

A :class:`Deadline` is a point on the ``time.perf_counter()`` clock after which a search
starts no more work (not a user's ``deadline_s``, which the model's equations own);
:data:`NEVER` has none, for solves without a time limit. A :class:`TimeBudget` is a solve's
time limit counted from its start: the phases of a solver take shares of it
(``budget.share(0.2)``), and the solver keeps a reserve for its last evaluation and its
result (``budget.reserved(0.03)``) by the same rule in every solver.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Deadline:
    """A ``time.perf_counter()`` value after which work stops; ``at`` None: never."""

    at: float | None

    @classmethod
    def after(cls, seconds: float | None) -> Deadline:
        """``seconds`` from now (never when None)."""
        return cls(None if seconds is None else time.perf_counter() + seconds)

    def passed(self) -> bool:
        """Whether the clock is past the deadline (never, without one)."""
        return self.at is not None and time.perf_counter() > self.at

    def left(self) -> float | None:
        """Seconds until the deadline, 0 once it passed; None without one."""
        return None if self.at is None else max(0.0, self.at - time.perf_counter())

    def earlier(self, other: Deadline) -> Deadline:
        """The first of the two deadlines."""
        if self.at is None:
            return other
        if other.at is None:
            return self
        return self if self.at <= other.at else other


NEVER = Deadline(None)


@dataclass(frozen=True)
class TimeBudget:
    """A solve's time limit (``limit`` seconds, None for none) counted from ``start``."""

    limit: float | None
    start: float = field(default_factory=time.perf_counter)

    def share(self, fraction: float) -> Deadline:
        """The deadline ``fraction`` of the limit after the start."""
        return Deadline(None if self.limit is None else self.start + fraction * self.limit)

    def reserved(self, reserve: float) -> Deadline:
        """The deadline that keeps the last ``reserve`` share of the limit for the result."""
        return self.share(1.0 - reserve)

    def from_now(self, fraction: float) -> Deadline:
        """``fraction`` of the limit from now (never without a limit)."""
        return Deadline.after(None if self.limit is None else fraction * self.limit)

    def elapsed(self) -> float:
        """Seconds since the start."""
        return time.perf_counter() - self.start


__all__ = ["NEVER", "Deadline", "TimeBudget"]
