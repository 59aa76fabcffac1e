"""The value rules of an instance, in one table (:data:`VALUE_RULES`: field, check, rule text).

Every :class:`~balance_opt.instance.Instance` checks them when it is built (from a file, by
the generator, by :meth:`~balance_opt.instance.Instance.replace`), and the file reader
(:mod:`balance_opt.io`) applies the same rules while it reads, adding the file name and JSON
path to the message. Ranges follow docs/formats.md, "Value ranges".
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray


def show_value(value: Any) -> str:
    """A value as a message quotes it: JSON, cut to 60 characters."""
    if isinstance(value, np.generic):
        value = value.item()
    text = json.dumps(value) if not isinstance(value, float) or math.isfinite(value) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True)
class Rule:
    """One value rule: the check and the words that state it (``"> 0"``)."""

    text: str
    ok: Callable[[Any], Any]  # on a float, or elementwise on an array
    integer: bool = False

    def broken(self, value: Any) -> str | None:
        """What a value breaking the rule is told (``must be ..., got ...``); None when it holds."""
        number = isinstance(value, int | float | np.number) and not isinstance(value, bool | np.bool_)
        if self.integer and not (number and isinstance(value, int | np.integer) and self.ok(value)):
            return f"must be an integer {self.text}, got {show_value(value)}"
        if not number:
            return f"must be a number {self.text}, got {show_value(value)}"
        if not self.integer and not (_as_float(value) is not None and self.ok(float(value))):
            return f"must be a finite number {self.text}, got {show_value(value)}"
        return None


def _as_float(value: Any) -> float | None:
    """A finite float, or None: a JSON integer of 400 digits has no float (OverflowError)."""
    try:
        x = float(value)
    except OverflowError:
        return None
    return x if math.isfinite(x) else None


POSITIVE = Rule("> 0", lambda x: x > 0)
NON_NEGATIVE = Rule(">= 0", lambda x: x >= 0)
COUNT = Rule(">= 1", lambda x: x >= 1, integer=True)
# no chained comparisons: the checks also run elementwise on numpy arrays
UNIT = Rule("in [0, 1]", lambda x: (x >= 0.0) & (x <= 1.0))
OPEN_UNIT = Rule("with 0 < value < 1", lambda x: (x > 0.0) & (x < 1.0))


def positive_up_to(top: float, unit: str = "") -> Rule:
    """``0 < value <= top``: a physical range, so that no derived quantity overflows."""
    return Rule(f"> 0 and <= {top:g}{unit}", lambda x: (x > 0) & (x <= top))


def in_range(low: float, top: float, unit: str = "", integer: bool = False) -> Rule:
    """``low <= value <= top``."""
    return Rule(f">= {low:g} and <= {top:g}{unit}", lambda x: (x >= low) & (x <= top), integer=integer)


# Physical ranges (docs/formats.md, "Value ranges"): wide enough for any real edge server,
# tight enough that every derived quantity (FLOPs, bytes, seconds, their products with
# REL_TOL) stays a finite float: at most 1e7 tokens x (1e5)^3 model sizes x 1 s per FLOP.
YEAR_S = 365.0 * 86400.0
MAX_TOKENS = 10**7
MAX_DIM = 10**5
MAX_DRAFT = 64
MAX_GRID = 1001  # values of z_grid and of lambda_grid: a step of 0.001

# The value rules of an instance, by section and field, in file order (docs/formats.md).
# Grids (``z_grid``, ``lambda_grid``) follow UNIT and must increase strictly.
VALUE_RULES: Mapping[str, Mapping[str, Rule]] = {
    "server": {
        "memory_bytes": positive_up_to(1e15, " bytes"),
        "bytes_per_param": positive_up_to(64.0, " bytes"),
        "draft_length": in_range(1, MAX_DRAFT, integer=True),
        "bits_per_token": positive_up_to(1e6, " bits"),
    },
    "model": {
        **dict.fromkeys(("layers", "hidden", "head_dim", "heads", "ffn"), in_range(1, MAX_DIM, integer=True)),
        "alpha_s_per_flop": positive_up_to(1.0, " s"),
        "beta_s": in_range(0.0, 3600.0, " s"),
    },
    "user": {
        "input_tokens": in_range(1, MAX_TOKENS, integer=True),
        "output_tokens": in_range(1, MAX_TOKENS, integer=True),
        "deadline_s": positive_up_to(YEAR_S, " s"),
        "acceptance": OPEN_UNIT,
        **dict.fromkeys(("uplink_bandwidth_hz", "downlink_bandwidth_hz"), in_range(1.0, 1e12, " Hz")),
        **dict.fromkeys(("uplink_spectral_efficiency", "downlink_spectral_efficiency"), in_range(1e-6, 1e3)),
        "distance_m": in_range(0.0, 1e8, " m"),  # optional
        "sd_iterations": in_range(1, MAX_TOKENS, integer=True),  # optional
    },
}


class InvalidInstance(ValueError):
    """A value that breaks a rule of :data:`VALUE_RULES`; ``path`` is its JSON path."""

    def __init__(self, path: str, rule: str) -> None:
        self.path, self.rule = path, rule
        super().__init__(f"{path}: {rule}")


def grid_problem(grid: Any) -> tuple[int | None, str] | None:
    """Where a grid breaks its rules (index or None for the whole grid) and how."""
    if not isinstance(grid, list | tuple) or not grid:
        return None, f"must be a non-empty list of numbers in [0, 1], got {show_value(grid)}"
    if len(grid) > MAX_GRID:  # every solver loops over the grid: a physical range, as for the values
        return None, f"must hold at most {MAX_GRID} values, got {len(grid)}"
    if _all_hold(grid, UNIT) and bool(np.all(np.diff(np.asarray(grid, dtype=float)) > 0)):
        return None  # the common case, without a rule check per value
    for i, v in enumerate(grid):
        broken = UNIT.broken(v)
        if broken is not None:
            return i, broken
        if i and v <= grid[i - 1]:
            return i, f"grid must be strictly increasing, got {v!r} after {grid[i - 1]!r}"
    return None


def _all_hold(values: Any, rule: Rule) -> bool:
    """Whether every value (a Python sequence) is a number of the rule's kind that holds it."""
    try:
        arr = np.asarray(values)
    except (ValueError, TypeError, OverflowError):  # ragged (a list among the numbers): not all hold
        return False
    kinds = "i" if rule.integer else "if"  # bools, strings and None make another kind
    # one dimension: [[0.5]] is a float array too, but its value is a list, not a number
    return arr.ndim == 1 and arr.dtype.kind in kinds and bool(np.all(np.isfinite(arr) & rule.ok(arr)))


@functools.lru_cache(maxsize=64)
def _part_problem(kind: str, part: Any) -> tuple[str, str] | None:
    """The first broken rule of a server or model (cached: most instances share them)."""
    for name, rule in VALUE_RULES[kind].items():
        broken = rule.broken(getattr(part, name))
        if broken is not None:
            return name, broken
    for name in ("z_grid", "lambda_grid") if kind == "server" else ():
        problem = grid_problem(getattr(part, name))
        if problem is not None:
            return name + ("" if problem[0] is None else f"[{problem[0]}]"), problem[1]
    return None


def check_part(section: str, part: Any) -> None:
    """Raise :class:`InvalidInstance` for the first broken rule of the server or a model.

    ``section`` is the file's key: ``"server"``, or ``"llm"`` / ``"slm"`` for a model.
    """
    kind = "server" if section == "server" else "model"
    try:
        problem = _part_problem(kind, part)
    except TypeError:  # unhashable (e.g. a grid given as a list): checked without the cache
        problem = _part_problem.__wrapped__(kind, part)
    if problem is not None:
        raise InvalidInstance(f"{section}.{problem[0]}", problem[1])


def check_users(
    user_ids: Sequence[str],
    arrays: Sequence[tuple[str, NDArray[Any]]],
    optional: Sequence[tuple[str, Sequence[Any] | None]],
) -> None:
    """The per-user rules, vectorized; raise for the first user and field that break one.

    ``arrays`` are the per-user array fields in file order, ``optional`` the optional
    per-user fields (None where the instance has none) by their rule's name.
    """
    rules = VALUE_RULES["user"]
    for name, arr in arrays:
        rule = rules[name]
        good = np.isfinite(arr) & rule.ok(arr)
        if not good.all():
            bad = np.flatnonzero(~good)
            raise InvalidInstance(f"users[{bad[0]}].{name}", str(rule.broken(arr[bad[0]])))
    for name, values in optional:
        if values is None or _all_hold([v for v in values if v is not None], rules[name]):
            continue
        for k, v in enumerate(values):
            broken = None if v is None else rules[name].broken(v)
            if broken is not None:
                raise InvalidInstance(f"users[{k}].{name}", broken)
    first: dict[str, int] = {}
    for k, uid in enumerate(user_ids if len(set(user_ids)) < len(user_ids) else ()):
        j = first.setdefault(uid, k)
        if j != k:
            raise InvalidInstance(f"users[{k}].id", f"user ids must be unique, {uid!r} is also users[{j}].id")
