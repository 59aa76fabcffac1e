"""The limit-pair bound of one z: each mode's most users per tightest limit, and the
users both modes can draw on (docs/exact.md).

Split the schedules of z with both modes non-empty by their tightest AD limit ``DA``
and tightest SD limit ``DS`` (20), (21c). With ``DA = v``, the AD users lie in
``PA(v) = {AD-eligible k : r_k >= v}`` and fit the latency budget of ``v`` (17); their
number is at most ``capA(v)``, the most users of a prefix by output length that fits in
time and memory (:func:`.memory.least_ad`: the prefix argument of Proposition 4, uploads
left out). Likewise SD with ``PS(w)``, ``capS(w)`` (19), (32). A user is served once,
and the two modes share the free memory (21d), so every such schedule serves at most

    M[v, w] = min(most a + s with leastA_v(a) + leastS_w(s) <= F(z), |PA(v) | PS(w)|)

where ``leastA_v(a)`` is the least KV bytes of a time-feasible AD set of a users with
tightest limit v (:func:`.memory.least_ad`), so the first term is at most
``capA(v) + capS(w)``. The sum of the caps, taken over every limit at once, cannot see
that the users with loose limits, which both modes want, are counted in both; the union
can. Nor can one memory curve per mode see that tight limits leave room only for the
light users. The largest
entry bounds z; the largest entry of a box's two limit ranges bounds the box, and a
limit value whose row (column) of the box stays at most the incumbent can be cut from
the range. Above :data:`.memory.BLOCKS` values, one block of limits stands for its
values (the candidates of its tightest, the budget of its loosest).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from balance_opt.instance import FloatArray
from balance_opt.solvers.exact.boxes import Box, ZData

IntArray = NDArray[np.int64]


class LimitPairs:
    """The matrix ``M`` of one z over (DA block, DS block), and its use on boxes."""

    def __init__(self, zd: ZData, blocks_a: IntArray, least_a: FloatArray,
                 blocks_s: IntArray, least_s: FloatArray, room: float) -> None:  # fmt: skip
        """``least_a[i, n]``: the least KV bytes of n AD users whose tightest limit lies in
        block i of ``blocks_a`` (:func:`.memory.least_ad`), likewise ``least_s``."""
        self.blocks_a, self.blocks_s = blocks_a, blocks_s
        self.starts_a, self.starts_s = blocks_a[:, 0], blocks_s[:, 0]
        if least_a.shape[0] == 0 or least_s.shape[0] == 0:  # no schedule with both modes
            self.matrix = np.zeros((0, 0), dtype=np.int64)
            return
        va = zd.values["DA"][self.starts_a]  # each block's candidates: those of its tightest
        vs = zd.values["DS"][self.starts_s]
        ra, rs = np.sort(zd.limit[zd.ad]), np.sort(zd.limit[zd.sd])
        rb = np.sort(zd.limit[np.intersect1d(zd.ad, zd.sd)])
        in_a = ra.size - np.searchsorted(ra, va, side="left")  # |PA(v)|
        in_s = rs.size - np.searchsorted(rs, vs, side="left")
        in_both = rb.size - np.searchsorted(rb, np.maximum(va[:, None], vs[None, :]), side="left")
        union = in_a[:, None] + in_s[None, :] - in_both
        self.matrix = np.minimum(_together(least_a, least_s, room), union).astype(np.int64)

    def bound(self) -> int:
        """The most users of any schedule of z with both modes non-empty."""
        return int(self.matrix.max()) if self.matrix.size else 0

    def _rows(self, box: Box) -> tuple[slice, slice]:
        (a0, a1), (s0, s1) = box[0], box[2]
        ia = np.searchsorted(self.starts_a, [a0, a1], side="right") - 1
        is_ = np.searchsorted(self.starts_s, [s0, s1], side="right") - 1
        return slice(int(ia[0]), int(ia[1]) + 1), slice(int(is_[0]), int(is_[1]) + 1)

    def box_bound(self, box: Box) -> int:
        """The most users of a schedule of ``box`` (its ``DA`` and ``DS`` ranges)."""
        ra, rs = self._rows(box)
        return int(self.matrix[ra, rs].max())

    def shrink(self, box: Box, served: int) -> Box | None:
        """``box`` without the ``DA`` values whose row of the box's matrix stays at most
        ``served``, then likewise the ``DS`` values over what is left; None when no pair
        of the box can beat ``served``. Every schedule of ``box`` serving more lies in
        the result."""
        ra, rs = self._rows(box)
        keep_a = np.flatnonzero(self.matrix[ra, rs].max(axis=1) > served)
        if keep_a.size == 0:
            return None
        ra = slice(ra.start + int(keep_a[0]), ra.start + int(keep_a[-1]) + 1)
        keep_s = np.flatnonzero(self.matrix[ra, rs].max(axis=0) > served)
        rs = slice(rs.start + int(keep_s[0]), rs.start + int(keep_s[-1]) + 1)
        out = list(box)
        out[0] = _within(box[0], self.blocks_a[ra.start], self.blocks_a[ra.stop - 1])
        out[2] = _within(box[2], self.blocks_s[rs.start], self.blocks_s[rs.stop - 1])
        return tuple(out)


def _within(rng: tuple[int, int], first: IntArray, last: IntArray) -> tuple[int, int]:
    """``rng`` cut to the values from block ``first`` to block ``last``."""
    return max(rng[0], int(first[0])), min(rng[1], int(last[1]))


def _together(least_a: FloatArray, least_s: FloatArray, room: float) -> IntArray:
    """``out[i, j]``: the largest ``a + s`` (both at least 1) with ``least_a[i, a] +
    least_s[j, s] <= room`` (0 where none). Each row of a curve is nondecreasing in the
    size (a prefix of n + 1 that fits holds one of n that fits with fewer bytes)."""
    sizes = np.arange(least_a.shape[1])
    left = room - least_a  # bytes left for SD beside a AD users of block i
    out = np.zeros((least_a.shape[0], least_s.shape[0]), dtype=np.int64)
    for j, curve in enumerate(least_s):
        most_s = np.searchsorted(curve[1:], left, side="right")  # s in 1..: how many fit
        total = np.where((left >= 0) & (most_s > 0) & (sizes > 0), sizes + most_s, 0)
        out[:, j] = total.max(axis=1)
    return out
