"""Refutation of one z by parts: the z model split along the number of AD users, along
one mode's tightest latency limit, or along both modes'.

Where a whole-z refutation ("no schedule at z serves more than N") runs out of time, the
z model is cut into parts by the AD count ``a = sum x``: intervals that partition
``0 .. n_AD`` (every schedule of the z model has exactly one AD count, so it lies in
exactly one part), checked by :func:`check_cover` before any part is solved. Each part
is the z model plus ``lo <= sum x <= hi`` and the cutoff ``served >= N + 1``; the cut
points are spread over the counts the caps leave possible (``a <= cap_AD`` and
``a >= N + 1 - cap_SD``), so the outer parts hold only what the cap rows refute at once.
The z is refuted when every part is; the z bound is the largest part bound
(``z_sweep._refute_by_parts`` solves the parts).

Split by a mode's tightest limit (``split_by = "ad-limit"`` or ``"sd-limit"``): every
schedule whose mode is not empty has one tightest limit ``min r_k`` over that mode's users
(20), (21c); with the distinct limit values ``u_0 < ... < u_{m-1}`` of the mode's
eligible users, index intervals ``[i, j]`` that partition ``0 .. m-1`` plus one part for
the empty mode cover every schedule once. Part ``[i, j]`` fixes the mode's users with
``r_k < u_i`` to 0 and asks for at least one with ``u_i <= r_k <= u_j``. This is where the
z model's relaxation is weakest (the min over a mode's limits, docs/milp.md): inside a
part the tightest limit is known to a range, as in `exact`'s boxes. With ``split_by =
"limits"`` every AD part is crossed with every SD part (a product of two partitions).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Literal

import numpy as np

from balance_opt.instance import FloatArray, Instance
from balance_opt.model import latency_limits
from balance_opt.solvers.milp.linear import COUNT, Formulation

LimitMode = Literal["ad", "sd"]


def ad_count_parts(n_ad: int, lo: int, hi: int, parts: int) -> list[tuple[int, int]]:
    """Intervals of the AD count that partition ``0 .. n_ad``; at most ``parts - 1`` cuts, in ``(lo, hi]``."""
    lo, hi = max(0, lo), min(n_ad, hi)
    cuts: list[int] = []
    if hi > lo:
        width = (hi - lo + 1) / parts
        cuts = sorted({c for c in (lo + math.ceil(n * width) for n in range(1, parts)) if 0 < c <= hi})
    starts = [0, *cuts]
    ends = [c - 1 for c in cuts] + [n_ad]
    return list(zip(starts, ends, strict=True))


def check_cover(intervals: list[tuple[int, int]], n_ad: int, what: str = "the AD counts") -> None:
    """RuntimeError unless ``intervals`` are non-empty, in order, and partition ``0 .. n_ad``
    (``n_ad = -1``: no values, no intervals)."""
    expected = 0
    for lo, hi in intervals:
        if lo != expected or hi < lo:
            raise RuntimeError(f"the parts {intervals} do not partition {what} 0..{n_ad}")
        expected = hi + 1
    if expected != n_ad + 1:
        raise RuntimeError(f"the parts {intervals} do not partition {what} 0..{n_ad}")


def part_model(f: Formulation, lo: int, hi: int) -> Formulation:
    """``f`` restricted to ``lo <= sum x <= hi`` (AD users)."""
    g = replace(f, rows=list(f.rows))
    if lo > 0:
        g.add_row("split_lo", {i: -1.0 for i in f.x}, -float(lo), COUNT)
    if hi < len(f.x):
        g.add_row("split_hi", dict.fromkeys(f.x, 1.0), float(hi), COUNT)
    return g


def _mode(f: Formulation, mode: LimitMode) -> tuple[list[int], list[int]]:
    """The mode's user positions and their variable indices."""
    return (f.ad_users, f.x) if mode == "ad" else (f.sd_users, f.y)


def limit_parts(limits: FloatArray, parts: int) -> list[tuple[int, int]]:
    """Intervals of the indices of the distinct values of ``limits`` that partition them,
    at most ``parts`` of them, each holding about as many users."""
    values = np.unique(limits)
    if values.size == 0:
        return []
    rank = np.searchsorted(values, np.sort(limits))  # each user's value index, ascending
    at = (math.ceil(n * limits.size / parts) for n in range(1, parts))
    cuts = sorted({int(rank[p]) for p in at if p < limits.size} - {0})
    starts = [0, *cuts]
    ends = [c - 1 for c in cuts] + [int(values.size) - 1]
    return list(zip(starts, ends, strict=True))


def limit_part_model(
    f: Formulation, mode: LimitMode, limits: FloatArray, part: tuple[int, int] | None
) -> Formulation:
    """``f`` restricted to the schedules whose ``mode`` has its tightest limit among the
    distinct values ``part = (i, j)`` of its eligible users' ``limits`` (indexed by user),
    or, with ``part`` None, to those where ``mode`` serves no one."""
    users, var = _mode(f, mode)
    g = replace(f, rows=list(f.rows))
    if not users:
        return g
    if part is None:
        g.add_row(f"split_{mode}_empty", dict.fromkeys(var, 1.0), 0.0, COUNT)
        return g
    values = np.unique(limits[users])
    lo, hi = float(values[part[0]]), float(values[part[1]])
    below = [i for k, i in zip(users, var, strict=True) if limits[k] < lo]
    within = [i for k, i in zip(users, var, strict=True) if lo <= limits[k] <= hi]
    if below:  # binaries: their sum at most 0 fixes each to 0
        g.add_row(f"split_{mode}_below", dict.fromkeys(below, 1.0), 0.0, COUNT)
    g.add_row(f"split_{mode}_tightest", dict.fromkeys(within, -1.0), -1.0, COUNT)
    return g


def split_parts(
    inst: Instance, f: Formulation, caps: Mapping[str, int], need: int, parts: int, by: str
) -> list[tuple[dict[str, Any], Formulation]]:
    """The parts of ``f`` for a refutation of ``served >= need``, each with its label, their
    cover checked: by the AD count (spread over what the caps ``caps["ad"]``,
    ``caps["sd"]`` leave possible), by a mode's tightest limit (``by``: "ad-count",
    "ad-limit" or "sd-limit"), or by both modes' (``"limits"``: every AD part with every
    SD part, up to ``(parts + 1)^2`` of them)."""
    if by == "ad-count":
        n_ad = len(f.x)
        cap_ad, cap_sd = caps.get("ad", n_ad), caps.get("sd", len(f.y))
        intervals = ad_count_parts(n_ad, need - cap_sd, cap_ad, parts)
        check_cover(intervals, n_ad)
        return [({"ad": [lo, hi]}, part_model(f, lo, hi)) for lo, hi in intervals]
    limits = latency_limits(inst)
    if by == "limits":  # every AD part with every SD part: the product of two partitions
        return [
            ({**label_a, **label_s}, part_s)
            for label_a, part_a in _limit_split(f, "ad", limits, parts)
            for label_s, part_s in _limit_split(part_a, "sd", limits, parts)
        ]
    return _limit_split(f, "ad" if by == "ad-limit" else "sd", limits, parts)


def _limit_split(
    f: Formulation, mode: LimitMode, limits: FloatArray, parts: int
) -> list[tuple[dict[str, Any], Formulation]]:
    """The parts of ``f`` by ``mode``'s tightest limit (the empty mode first), their cover
    checked; ``limits``: every user's latency limit."""
    own = limits[_mode(f, mode)[0]]
    values = np.unique(own)
    intervals = limit_parts(own, parts)
    check_cover(intervals, values.size - 1, f"the {mode.upper()} limit values")
    key = f"{mode}_limit"
    empty = limit_part_model(f, mode, limits, None)
    out: list[tuple[dict[str, Any], Formulation]] = [({key: "empty"}, empty)]
    for i, j in intervals:
        span = [float(values[i]), float(values[j])]
        out.append(({key: span}, limit_part_model(f, mode, limits, (i, j))))
    return out
