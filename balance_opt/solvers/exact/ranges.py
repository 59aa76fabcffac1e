"""Shrinking a box's tightest-limit ranges from their ends before its LP (docs/exact.md).

The schedules of a box whose tightest AD limit ``DA`` takes one value ``v`` form the box
with ``v`` alone: a *slice*. Its AD users are the box's AD candidates with ``r_k >= v``,
at their costs in the box (26), (15), under the latency budget of ``v`` (17); its SD side
is the box's. A count that bounds a slice bounds all of its schedules, so an end value
whose slice cannot beat the incumbent is cut from the range, and so on inwards; likewise
``DS`` (19), (32), (30), (16). Every slice is the box's own candidates filtered, so no
program and no cost table is rebuilt.

A slice's count: any k of its candidates with cost sum ``S`` and largest key ``K``
(``LO``, resp. ``N``) need ``S + per_key K`` within the budget and their KV bytes within
the free memory; ``S``, ``K`` and the bytes are at least the k smallest of each, so the
largest such k bounds the mode's users. With the other mode's cap added, and at most the
users that are a candidate of either mode, it bounds the slice's schedules.

This is where the box LP is weakest: a range of tightest limits lets a fractional point
pay for each tight-limit user in proportion to its weight, while a slice at the tight
end, with its one small budget, counts few users; at the loose end the few loose-limit
users are mostly candidates of both modes, and the union caps the sum.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from balance_opt.solvers.exact.boxes import Box, Terms, ZData

IntArray = NDArray[np.int64]


class _Side:
    """One mode's candidates of a box, sorted three ways for the slice counts."""

    def __init__(self, users: IntArray, cost: NDArray[np.float64], key: IntArray, mem: NDArray[np.float64],
                 own: NDArray[np.float64], per_key: float, shift: float) -> None:  # fmt: skip
        self.users, self.own, self.per_key, self.shift = users, own, per_key, shift
        self.orders = [np.argsort(col, kind="stable") for col in (cost, key, mem)]
        self.cols = [col[o] for col, o in zip((cost, key, mem), self.orders, strict=True)]

    def count(self, mask: NDArray[np.bool_], budget: float, room: float) -> int:
        """The most candidates of ``mask`` that fit ``budget`` and ``room`` (module docstring)."""
        cost, key, mem = (col[mask[o]] for col, o in zip(self.cols, self.orders, strict=True))
        by_time = np.count_nonzero(np.cumsum(cost) + self.per_key * key <= budget - self.shift)
        return min(int(by_time), int(np.searchsorted(np.cumsum(mem), room, side="right")))


def tighten(zd: ZData, box: Box, served: int, t: Terms, cap_a: int, cap_s: int) -> Box | None:
    """``box`` without the end values of ``DA`` and ``DS`` whose slices cannot serve more
    than ``served``, or None when no schedule of it can; ``t``, ``cap_a``, ``cap_s`` are
    the box's own terms and caps. Every schedule of ``box`` that could beat ``served``
    lies in the result."""
    inst = zd.inst
    beta_l = inst.llm.beta_s
    per_iter = beta_l + inst.server.draft_length * inst.slm.beta_s
    ad = _Side(t.ua, t.ca, inst.output_tokens[t.ua], t.ma, zd.limit[t.ua], beta_l, 0.0)
    sd = _Side(t.us, t.cs, t.n, t.ms, zd.limit[t.us], per_iter, beta_l)  # the last iteration (19)
    out = list(box)
    ad_range = _shrink(zd, ad, box[0], "DA", (cap_s, t.us), served)
    if ad_range is None:
        return None
    in_ad = ad.own >= zd.values["DA"][ad_range[0]]
    if ad_range != box[0]:  # the SD slices compete with the shrunk AD side
        cap_a = min(cap_a, ad.count(in_ad, float(zd.budget["DA"][ad_range[1]]), zd.memory_loose))
    sd_range = _shrink(zd, sd, box[2], "DS", (cap_a, ad.users[in_ad]), served)
    if sd_range is None:
        return None
    out[0], out[2] = ad_range, sd_range
    return tuple(out)


def _shrink(
    zd: ZData, side: _Side, rng: tuple[int, int], dim: str, rival: tuple[int, IntArray], served: int
) -> tuple[int, int] | None:
    """The range ``rng`` of tightest-limit values without the ends whose slices, with
    the other mode's cap and candidates ``rival``, cannot beat ``served``; None: no value."""
    values, budget = zd.values[dim], zd.budget[dim]
    taken = np.zeros(zd.inst.num_users, dtype=bool)
    taken[rival[1]] = True
    fresh = ~taken[side.users]

    def keeps(i: int) -> bool:
        mask = side.own >= values[i]
        either = rival[1].size + int(np.count_nonzero(mask & fresh))
        return min(side.count(mask, float(budget[i]), zd.memory_loose) + rival[0], either) > served

    lo, hi = rng
    while lo <= hi and not keeps(lo):
        lo += 1
    while hi > lo and not keeps(hi):
        hi -= 1
    return None if lo > hi else (lo, hi)


__all__ = ["tighten"]
