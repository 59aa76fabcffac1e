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

A part is a :data:`Spec`: per axis (the AD count, or a mode's tightest limit), an interval
or the empty mode. A part left open can be bisected (:func:`bisect`, option
``split_depth``): its widest interval halved, the two halves checked to partition it, so
the leaves of the bisections still hold every schedule of the z once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Literal

import numpy as np

from balance_opt.instance import FloatArray
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


# One part of a split z: per axis, an interval, or None for "this mode serves no one".
# Axes: "ad" (the AD count), "ad_limit" and "sd_limit" (indices of the mode's distinct
# latency limits, ascending). An axis a part does not name is unrestricted.
Interval = tuple[int, int]
Spec = dict[str, Interval | None]
LIMIT_AXES: dict[str, LimitMode] = {"ad_limit": "ad", "sd_limit": "sd"}


def split_specs(
    f: Formulation, limits: FloatArray, caps: Mapping[str, int], need: int, parts: int, by: str
) -> list[Spec]:
    """The parts of ``f`` for a refutation of ``served >= need``, their covers checked: by
    the AD count (spread over what the caps ``caps["ad"]``, ``caps["sd"]`` leave
    possible), by a mode's tightest limit (``by``: "ad-count", "ad-limit" or "sd-limit"),
    or by both modes' (``"limits"``: every AD part with every SD part, up to
    ``(parts + 1)^2`` of them); ``limits``: every user's latency limit."""
    if by == "ad-count":
        n_ad = len(f.x)
        cap_ad, cap_sd = caps.get("ad", n_ad), caps.get("sd", len(f.y))
        intervals = ad_count_parts(n_ad, need - cap_sd, cap_ad, parts)
        check_cover(intervals, n_ad)
        return [{"ad": iv} for iv in intervals]
    if by == "limits":  # every AD part with every SD part: the product of two partitions
        ad, sd = _limit_specs(f, "ad", limits, parts), _limit_specs(f, "sd", limits, parts)
        return [{**a, **s} for a in ad for s in sd]
    return _limit_specs(f, "ad" if by == "ad-limit" else "sd", limits, parts)


def _limit_specs(f: Formulation, mode: LimitMode, limits: FloatArray, parts: int) -> list[Spec]:
    """The parts by ``mode``'s tightest limit, the empty mode first, their cover checked;
    ``limits``: every user's latency limit."""
    own = limits[_mode(f, mode)[0]]
    intervals = limit_parts(own, parts)
    check_cover(intervals, np.unique(own).size - 1, f"the {mode.upper()} limit values")
    key = f"{mode}_limit"
    specs: list[Spec] = [{key: None}]
    specs.extend({key: iv} for iv in intervals)
    return specs


def part_of(f: Formulation, limits: FloatArray, spec: Spec) -> Formulation:
    """``f`` restricted to the part ``spec``; ``limits``: every user's latency limit."""
    g = f
    for axis, iv in spec.items():
        if axis == "ad":
            assert iv is not None  # the AD count has no empty part
            g = part_model(g, *iv)
        else:
            g = limit_part_model(g, LIMIT_AXES[axis], limits, iv)
    return g


def label_of(f: Formulation, limits: FloatArray, spec: Spec) -> dict[str, Any]:
    """``spec`` as recorded: AD counts, and limits in seconds (or "empty")."""
    out: dict[str, Any] = {}
    for axis, iv in spec.items():
        if axis == "ad" or iv is None:
            out[axis] = "empty" if iv is None else list(iv)
            continue
        values = np.unique(limits[_mode(f, LIMIT_AXES[axis])[0]])
        out[axis] = [float(values[iv[0]]), float(values[iv[1]])]
    return out


def bisect(spec: Spec) -> list[Spec]:
    """Two parts that partition ``spec`` by halving its widest interval (the first axis of
    the widest, in the part's order), their cover checked; none when every interval is a
    single value or an empty mode."""
    wide = [(iv[1] - iv[0], axis) for axis, iv in spec.items() if iv is not None and iv[1] > iv[0]]
    if not wide:
        return []
    width = max(w for w, _ in wide)
    axis = next(a for w, a in wide if w == width)
    lo, hi = spec[axis]  # type: ignore[misc]
    mid = (lo + hi) // 2
    halves = [(lo, mid), (mid + 1, hi)]
    check_cover([(a - lo, b - lo) for a, b in halves], hi - lo, f"the {axis} interval {lo}..{hi}")
    return [{**spec, axis: half} for half in halves]
