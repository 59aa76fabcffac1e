"""The incumbent: the best schedule a search holds, as the evaluator counts it.

Every search here keeps one by the same rule: a candidate replaces it only when the
evaluator accepts the candidate's schedule and it serves more users. A solver's own count
is a claim (kept as ``claimed``), never what decides. :class:`Incumbent` states that rule
once, for ``exact``'s box search, the MILP's z sweep and balance-plus's mode searches.

``best`` is the search's own form of the schedule: a :class:`Schedule`, or balance-plus's
``(z, AD users, SD users)`` whose order its exchanges follow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from balance_opt.evaluator import Schedule, evaluate
from balance_opt.instance import Instance

C = TypeVar("C")


@dataclass(frozen=True)
class Offer:
    """What became of a candidate: ``served`` is the evaluator's count of its schedule, -1
    when the evaluator rejects it; ``won`` when it replaced the incumbent."""

    won: bool
    served: int

    @property
    def rejected(self) -> bool:
        return self.served < 0


class Incumbent(Generic[C]):
    """The best evaluator-accepted schedule so far, in the search's form ``best``.

    ``served`` is the evaluator's count (0 for a first schedule it rejects: serving nobody
    is the floor), ``source`` what found it, ``claimed`` the count its producer claimed
    (a MILP's objective; None when it claimed none).
    """

    def __init__(
        self, best: C, schedule: Schedule, served: int, source: str = "start", claimed: int | None = None
    ) -> None:
        self.best, self.schedule, self.served = best, schedule, served
        self.source, self.claimed = source, claimed

    @classmethod
    def judged(cls, inst: Instance, best: C, schedule: Schedule, source: str = "start") -> Incumbent[C]:
        """The first incumbent, ``schedule`` as the evaluator counts it."""
        ev = evaluate(inst, schedule)
        return cls(best, schedule, ev.served if ev.feasible else 0, source)

    def offer(
        self, inst: Instance, best: C, schedule: Schedule, source: str, claimed: int | None = None
    ) -> Offer:
        """Evaluate ``schedule``; keep it (as ``best``) when it is feasible and serves more."""
        ev = evaluate(inst, schedule)
        if not ev.feasible:
            return Offer(False, -1)
        if ev.served <= self.served:
            return Offer(False, ev.served)
        self.best, self.schedule, self.served = best, schedule, ev.served
        self.source, self.claimed = source, claimed
        return Offer(True, ev.served)

    def take(self, other: Incumbent[C]) -> bool:
        """Replace this incumbent with ``other``, an evaluator-accepted one, when it serves more."""
        if other.served <= self.served:
            return False
        self.best, self.schedule, self.served = other.best, other.schedule, other.served
        self.source, self.claimed = other.source, other.claimed
        return True

    def __repr__(self) -> str:
        return f"Incumbent(served={self.served}, z={self.schedule.z:g}, source={self.source!r})"


__all__ = ["Incumbent", "Offer"]
