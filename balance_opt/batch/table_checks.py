"""A results table read back is input like any other: its cells and its claims are checked.

``report`` and ``regress`` read tables that may come from elsewhere or have been edited.
Each row must hold possible values (``served`` a count no larger than ``K``, a known
status, a finite runtime), its own claims must agree (:func:`balance_opt.claims.contradiction`:
an ``optimal`` row's bound is its served count, an ``error`` row serves 0), and the rows of
one instance must agree with each other: no proved bound, and no ``optimal`` row, below a
feasible schedule of another row. A broken rule is an :class:`InputError` naming the file,
the row (counted from 1, the header not counted) and the column.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from balance_opt.claims import Claims, contradiction
from balance_opt.errors import InputError
from balance_opt.status import SOLVED, Status

STATUSES = frozenset(str(s) for s in Status)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or str(value) == "<NA>"


def _real(value: Any) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)


# The largest count a cell may hold: 2^53, below which every whole float is exact (and an
# int64 column holds it); users, served and bounds are far below it.
MAX_COUNT = 2**53
MAX_USERS = 10**7  # K of one instance: a physical range (reports bin and plot by user)


def _count(value: Any) -> int | None:
    """A cell holding a whole number in [0, MAX_COUNT] as that int; None when empty; ValueError otherwise."""
    if _missing(value):
        return None
    if isinstance(value, bool | str):
        raise ValueError
    number = float(value)  # numpy integers and floats alike
    if not math.isfinite(number) or not 0 <= number <= MAX_COUNT or number != int(number):
        raise ValueError
    return int(number)


class _Row:
    """One row under check, failing with the file, the row number and the column."""

    def __init__(self, source: str, number: int, record: Mapping[str, Any]) -> None:
        self.source, self.number, self.record = source, number, record

    def fail(self, column: str, rule: str) -> InputError:
        return InputError(self.source, f"row {self.number}, column {column}", rule)

    def count(self, column: str) -> int | None:
        value = self.record.get(column)
        try:
            return _count(value)
        except (ValueError, TypeError, OverflowError):
            rule = f"must be a whole number in [0, 2^53], got {str(value)[:40]!r}"
            raise self.fail(column, rule) from None


def _check_numbers(row: _Row) -> None:
    """Work counters are counts; runtimes and work finite and >= 0; z and lambda in [0, 1]."""
    for column in ("nodes", "lp_iterations", "p2_optimum"):  # work counters: counts when present
        row.count(column)
    for column, top in (
        ("runtime_s", math.inf),
        ("deterministic_time", math.inf),
        ("z", 1.0),
        ("lambda", 1.0),
    ):
        cell: Any = row.record.get(column)
        if not _missing(cell) and not (_real(cell) and math.isfinite(float(cell)) and 0 <= cell <= top):
            rule = "a finite number >= 0" if top == math.inf else f"a number in [0, {top:g}]"
            raise row.fail(column, f"must be {rule}, got {str(cell)[:40]!r}")


def _check_row(row: _Row) -> tuple[int | None, int, int | None, bool]:
    """``(K, served, bound, feasible)`` of one row whose cells and claims hold."""
    rec = row.record
    for column in ("instance_sha256", "config", "solver"):  # rows are grouped by these
        text = rec.get(column)
        if column in rec and (not isinstance(text, str) or not text.strip() or not text.isprintable()):
            raise row.fail(
                column, f"must be a non-empty name without control characters, got {str(text)[:40]!r}"
            )
    users, served, bound = row.count("K"), row.count("served"), row.count("bound")
    if served is None:
        raise row.fail("served", "is required")
    status = str(rec.get("status"))
    if status not in STATUSES:
        raise row.fail("status", f"must be one of {', '.join(sorted(STATUSES))}, got {status[:40]!r}")
    if users is None or not 1 <= users <= MAX_USERS:  # normalized throughput is served / K
        raise row.fail("K", f"must be a whole number in [1, {MAX_USERS}]")
    for column, value in (("served", served), ("bound", bound)):
        if users is not None and value is not None and value > users:
            raise row.fail(column, f"must be at most K = {users}, got {value}")
    _check_numbers(row)
    feasible = rec.get("feasible")
    if not _missing(feasible) and not isinstance(feasible, bool) and str(feasible) not in ("True", "False"):
        raise row.fail("feasible", f"must be true or false, got {str(feasible)[:40]!r}")
    is_feasible = str(feasible) == "True"
    if status in SOLVED and str(feasible) == "False":
        raise row.fail("feasible", f"must be true when status is {status!r} (it claims a feasible schedule)")
    claims = Claims(served=served, status=status, bound=bound, bound_given=bound is not None)
    broken = contradiction(claims)
    if broken is not None:
        raise row.fail(*broken)
    if is_feasible and bound is not None and bound < served:
        raise row.fail("bound", f"claims a bound of {bound} below its own feasible schedule serving {served}")
    return users, served, bound, is_feasible


def check_results(records: Sequence[Mapping[str, Any]], source: str) -> None:
    """Raise InputError at the first impossible cell or contradicted claim of one table."""
    best: dict[str, tuple[int, int]] = {}  # instance digest -> (served, row) of its best feasible row
    checked: list[tuple[_Row, int, int | None]] = []
    for number, rec in enumerate(records, start=1):
        row = _Row(source, number, rec)
        _, served, bound, feasible = _check_row(row)
        key = str(rec.get("instance_sha256"))
        if feasible and served > best.get(key, (-1, 0))[0]:
            best[key] = (served, number)
        checked.append((row, served, bound))
    users_of: dict[str, tuple[int | None, int]] = {}
    for row, _, _ in checked:  # one instance, one K
        key, k = str(row.record.get("instance_sha256")), row.count("K")
        first = users_of.setdefault(key, (k, row.number))
        if first[0] != k:
            raise row.fail("K", f"is {k}, but row {first[1]} of the same instance says {first[0]}")
    for row, served, bound in checked:
        top, where = best.get(str(row.record.get("instance_sha256")), (-1, 0))
        proof = bound if bound is not None else served if row.record.get("status") == Status.OPTIMAL else None
        if proof is not None and proof < top:
            column = "bound" if bound is not None else "status"
            raise row.fail(
                column, f"claims no schedule serves more than {proof}, but row {where} serves {top} feasibly"
            )
