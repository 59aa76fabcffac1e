"""The one deadline object and the one termination rule every bounding solver follows."""

from __future__ import annotations

import time

import pytest

from balance_opt.clock import NEVER, Deadline, TimeBudget
from balance_opt.status import Termination


def test_a_deadline_passes_once_the_clock_is_beyond_it() -> None:
    assert Deadline.after(-1.0).passed()
    assert Deadline.after(-1.0).left() == 0.0
    ahead = Deadline.after(3600.0)
    assert not ahead.passed()
    left = ahead.left()
    assert left is not None
    assert 3599.0 < left <= 3600.0


def test_never_never_passes() -> None:
    assert not NEVER.passed()
    assert NEVER.left() is None
    assert Deadline.after(None) == NEVER


def test_earlier_is_the_first_of_two() -> None:
    soon, late = Deadline(10.0), Deadline(20.0)
    assert soon.earlier(late) is soon
    assert late.earlier(soon) is soon
    assert NEVER.earlier(late) is late
    assert late.earlier(NEVER) is late
    assert NEVER.earlier(NEVER) == NEVER


def test_a_budget_shares_its_limit_from_the_start() -> None:
    budget = TimeBudget(10.0, start=100.0)
    assert budget.share(0.2) == Deadline(102.0)
    assert budget.reserved(0.05) == Deadline(pytest.approx(109.5))
    unlimited = TimeBudget(None, start=100.0)
    assert unlimited.share(0.2) == NEVER
    assert unlimited.reserved(0.05) == NEVER
    assert unlimited.from_now(0.5) == NEVER
    now = time.perf_counter()
    at = TimeBudget(10.0).from_now(0.5).at
    assert at is not None
    assert now + 5.0 <= at <= time.perf_counter() + 5.0


@pytest.mark.parametrize(
    ("served", "bound", "finished", "want"),
    [
        (5, 5, True, Termination.OPTIMAL),
        (5, 5, False, Termination.OPTIMAL),  # a proof is a proof, however the search stopped
        (5, 6, True, Termination.COMPLETED),
        (5, 6, False, Termination.TIME_LIMIT),
        (5, None, True, Termination.COMPLETED),  # nothing proved about P1 (P2's searches)
        (5, None, False, Termination.TIME_LIMIT),
        (0, 0, False, Termination.OPTIMAL),
    ],
)
def test_termination_of_a_search(served: int, bound: int | None, finished: bool, want: Termination) -> None:
    assert Termination.of_search(served, bound, finished) is want
