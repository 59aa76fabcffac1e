"""Refutation of one z by parts: the z model split along the number of AD users.

Where a whole-z refutation ("no schedule at z serves more than N") runs out of time, the
z model is cut into parts by the AD count ``a = sum x``: intervals that partition
``0 .. n_AD`` (every schedule of the z model has exactly one AD count, so it lies in
exactly one part), checked by :func:`check_cover` before any part is solved. Each part
is the z model plus ``lo <= sum x <= hi`` and the cutoff ``served >= N + 1``; the cut
points are spread over the counts the caps leave possible (``a <= cap_AD`` and
``a >= N + 1 - cap_SD``), so the outer parts hold only what the cap rows refute at once.
The z is refuted when every part is; the z bound is the largest part bound
(``z_sweep._refute_by_parts`` solves the parts).
"""

from __future__ import annotations

import math
from dataclasses import replace

from balance_opt.solvers.milp.linear import COUNT, Formulation


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


def check_cover(intervals: list[tuple[int, int]], n_ad: int) -> None:
    """RuntimeError unless ``intervals`` are non-empty, in order, and partition ``0 .. n_ad``."""
    expected = 0
    for lo, hi in intervals:
        if lo != expected or hi < lo:
            raise RuntimeError(f"the parts {intervals} do not partition the AD counts 0..{n_ad}")
        expected = hi + 1
    if expected != n_ad + 1:
        raise RuntimeError(f"the parts {intervals} do not partition the AD counts 0..{n_ad}")


def part_model(f: Formulation, lo: int, hi: int) -> Formulation:
    """``f`` restricted to ``lo <= sum x <= hi`` (AD users)."""
    g = replace(f, rows=list(f.rows))
    if lo > 0:
        g.add_row("split_lo", {i: -1.0 for i in f.x}, -float(lo), COUNT)
    if hi < len(f.x):
        g.add_row("split_hi", dict.fromkeys(f.x, 1.0), float(hi), COUNT)
    return g
