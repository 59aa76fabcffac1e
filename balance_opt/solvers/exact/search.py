"""Best-first branch and bound over threshold boxes, all z at once (docs/exact.md).

Every schedule either serves one mode only, and then the exact single-mode optimum at
its z (Propositions 4 and 5, :mod:`balance_opt.solvers.common.bounds`) bounds it, or has
both modes non-empty and lies in exactly one leaf of the box tree of its z
(:mod:`.boxes`). A box is bounded by its relaxed LP; the box with the largest bound is
split on its widest threshold until the deadlines and paddings (``DA``, ``L1``, ``DS``,
``L3``) are single values; such a leaf is solved as a small mixed-binary program,
whose point the evaluator judges. The proved bound at any moment is the largest of the
incumbent, the open boxes' bounds, unresolved leaves and the single-mode optima, so a
stopped run always reports a valid bound.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from balance_opt.clock import Deadline
from balance_opt.evaluator import Schedule
from balance_opt.instance import Instance
from balance_opt.solvers.common.bounds import AD_MODE, SD_MODE, Ranks
from balance_opt.solvers.common.warm_start import balance_fast
from balance_opt.solvers.exact.boxes import DIMS, RELAX, RESTRICT, Box, Side, ZData, caps
from balance_opt.solvers.exact.highs_lp import count_bound, solve
from balance_opt.solvers.exact.memory import first_bounds
from balance_opt.solvers.exact.pairs import LimitPairs
from balance_opt.solvers.exact.ranges import tighten
from balance_opt.solvers.exact.warm_lp import WarmLp
from balance_opt.solvers.incumbent import Incumbent

SPLIT_WEIGHTS = (1, 2, 1, 2)  # DA, L1, DS, L3: the padding ranges count double when splitting
LEAF_DIMS = 4  # DA, L1, DS, L3 single: a leaf; L4 is split only when a leaf stays open


@dataclass
class Stats:
    """Work counters reported in the result's ``stats``."""

    boxes: int = 0
    lps: int = 0
    narrowed: int = 0  # boxes whose tightest-limit ranges lost an end before their LP
    mips: int = 0
    leaves: int = 0
    pruned: int = 0
    rejected: int = 0  # program points the evaluator turned down
    setup_s: float = 0.0
    improve_s: float = 0.0  # balance-plus's search at the z of highest open bounds
    per_z: dict[str, dict[str, Any]] = field(default_factory=dict)
    trace: list[tuple[float, int, int]] = field(default_factory=list)  # (seconds, served, bound)


class BoxSearch:
    """The search state: incumbent, open boxes, proved bounds outside the boxes."""

    def __init__(
        self,
        inst: Instance,
        incumbent: Incumbent[Schedule],
        deadline: Deadline,
        threads: int = 1,
        work_limit: int | None = None,
    ) -> None:
        self.inst, self.inc, self.deadline = inst, incumbent, deadline
        # boxes taken from the heap: the deterministic work unit (docs/exact.md)
        self.work_limit = work_limit
        self.heap: list[tuple[int, int, int, float, Box, Any]] = []  # ..., z, box, parent basis
        self.zdata: dict[float, ZData] = {}
        self.pairs: dict[float, LimitPairs] = {}
        # two LPs per z: the first and the second half of a split, whichever thread bounds
        # them, so the sequence of solves of each HiGHS object (and so every result) does
        # not depend on ``threads``
        self.lps: dict[tuple[float, int], WarmLp] = {}
        self.pool = ThreadPoolExecutor(max_workers=1) if threads > 1 else None
        self.outside: list[int] = []  # single-mode optima and unresolved leaves: bounds as they are
        self.stats = Stats()
        self._tick = itertools.count()
        self._start = time.perf_counter()
        self._last = (-1, -1)
        # (when, what): called once from the loop when the search is still open past that
        # deadline, or after that many boxes (an int: a work limit's)
        self.hook: tuple[Deadline | int, Callable[[], None]] | None = None

    def close(self) -> None:
        """Stop the helper thread, if any."""
        if self.pool is not None:
            self.pool.shutdown()

    def _record(self, top: int) -> None:
        """Append (seconds, served, bound) to the trace whenever either changes."""
        now = (self.inc.served, max([self.inc.served, top, *self.outside]))
        if now != self._last:
            self._last = now
            self.stats.trace.append((round(time.perf_counter() - self._start, 3), *now))

    def out_of_time(self) -> bool:
        """Past the deadline, or the work limit's boxes all taken."""
        if self.work_limit is not None and self.stats.boxes >= self.work_limit:
            return True
        return self.deadline.passed()

    def _hook_due(self) -> bool:
        if self.hook is None:
            return False
        when = self.hook[0]
        return self.stats.boxes >= when if isinstance(when, int) else when.passed()

    def open_z(self) -> list[float]:
        """The z values of the open boxes, highest bound first."""
        best: dict[float, int] = {}
        for neg, *_, z, _box, _basis in self.heap:
            best[z] = max(best.get(z, 0), -neg)
        return sorted(best, key=lambda z: (-best[z], abs(z - self.inc.schedule.z), z))

    def bound(self) -> int:
        """The proved upper bound on P1's optimum right now."""
        top = -self.heap[0][0] if self.heap else 0
        return max([self.inc.served, top, *self.outside])

    def offer(self, schedule: Schedule, source: str = "box") -> int:
        """Offer ``schedule`` to the incumbent; its served count as the evaluator judges it
        (-1: rejected)."""
        offer = self.inc.offer(self.inst, schedule, schedule, source)
        self.stats.rejected += offer.rejected
        return offer.served

    # --- setup ----------------------------------------------------------------------

    def add_z(self, z: float) -> None:
        """Single-mode bounds of z, and its root box bounded by their sum (no LP yet).

        The AD users of any schedule of z form a schedule of AD alone with at most all of
        ``F(z)``, and likewise SD, so each mode's most users alone bounds its share and
        their sum bounds every box of z; so does the most users both modes fit into the
        memory they share (:func:`.memory.z_bounds`): a proved bound for z from the first
        pass, before any LP. Where a mode's cap exceeds the incumbent, it is replaced by
        the mode's exact optimum (``Ranks``), whose schedule is offered to the incumbent.
        """
        start = time.perf_counter()
        zd = ZData(self.inst, z)
        self.zdata[z] = zd
        fb = first_bounds(zd)
        self.pairs[z] = fb.pairs
        alone = {AD_MODE: fb.cap_a, SD_MODE: fb.cap_s}  # each mode alone
        ranks = None
        for mode, lam, users in ((AD_MODE, 1.0, zd.ad), (SD_MODE, 0.0, zd.sd)):
            if alone[mode] > self.inc.served:  # it counts: the exact optimum and its schedule (Prop. 4, 5)
                ranks = ranks or Ranks(self.inst, z)
                alone[mode] = min(alone[mode], ranks.rank(mode, users.tolist()))
                self.offer(balance_fast(self.inst, [z], [lam]).schedule(self.inst), "single_mode")
        self.outside.append(max(alone.values()))
        root = zd.root()
        value = None
        if root is not None:
            both = min(alone[AD_MODE] + alone[SD_MODE], fb.memory, fb.pairs.bound())
            value = self._bound(z, root, None, both, False, 0)[1]
            self._keep(z, root, 0, value, None)
        self.stats.per_z[f"{z:g}"] = {
            "eligible_ad": int(zd.ad.size),
            "eligible_sd": int(zd.sd.size),
            "caps": alone,
            "memory_bound": fb.memory,
            "pair_bound": fb.pairs.bound(),
            "root_bound": value,
            "setup_s": round(time.perf_counter() - start, 4),
        }

    def _bound(
        self, z: float, box: Box, basis: Any, ceiling: float, lp: bool, slot: int
    ) -> tuple[Box, int | float, Any, bool, bool]:
        """``box``'s bound: ``ceiling`` (its parent's bound), its quick count, then, with
        ``lp``, its tightest-limit ranges shrunk (:func:`.ranges.tighten`) and the relaxed
        LP of what is left on the z's LP ``slot``, started from the parent's basis.
        Returns the box (shrunk or not), its bound, the basis to start its own halves
        from, whether an LP was solved and whether the box was shrunk. Without ``lp`` the
        box waits until it is split. Safe beside another slot's call: it only reads the
        search state."""
        zd, pairs = self.zdata[z], self.pairs[z]
        narrowed = False
        if lp:  # the limit pairs that cannot beat the incumbent go first: a table look-up
            cut = pairs.shrink(box, self.inc.served)
            if cut is None:
                return box, self.inc.served, basis, False, True
            narrowed, box = cut != box, cut
        t = zd.terms(box, RELAX)
        cap_a, cap_s, quick = caps(self.inst, t)
        value: int | float = min(quick, ceiling, pairs.box_bound(box))
        if not lp or value <= self.inc.served:
            return box, value, basis, False, narrowed
        tight = tighten(zd, box, self.inc.served, t, cap_a.total, cap_s.total)
        if tight is None:  # no slice of it can beat the incumbent
            return box, self.inc.served, basis, False, True
        if tight != box:  # the cut ends' schedules cannot beat the incumbent
            narrowed, box, t = True, tight, zd.terms(tight, RELAX)
            cap_a, cap_s, quick = caps(self.inst, t)
            value = min(quick, ceiling, pairs.box_bound(box))
            if value <= self.inc.served:
                return box, value, basis, False, True
        lp_value, basis = self.lps[z, slot].solve(t, cap_a, cap_s, basis)
        return box, min(value, count_bound(lp_value)), basis, True, narrowed

    def _keep(self, z: float, box: Box, depth: int, value: int | float, basis: Any) -> None:
        if value > self.inc.served:
            heapq.heappush(self.heap, (-int(value), -depth, next(self._tick), z, box, basis))
        else:
            self.stats.pruned += 1

    def _split(self, z: float, box: Box, dim: int, depth: int, basis: Any, ceiling: float) -> None:
        """Bound both halves of ``box`` (at once when a second thread is there) and keep them."""
        for slot in (0, 1):
            if (z, slot) not in self.lps:
                self.lps[z, slot] = WarmLp(self.zdata[z])
        first, second = _halves(box, dim)
        pool = self.pool
        later = None if pool is None else pool.submit(self._bound, z, second, basis, ceiling, True, 1)
        bounds = [self._bound(z, first, basis, ceiling, True, 0)]
        bounds.append(self._bound(z, second, basis, ceiling, True, 1) if later is None else later.result())
        for half, value, half_basis, solved, narrowed in bounds:
            self.stats.lps += solved
            self.stats.narrowed += narrowed
            self._keep(z, half, depth, value, half_basis)

    # --- the loop -------------------------------------------------------------------

    def run(self) -> bool:
        """Search until proved or out of time; True when every box was closed."""
        while self.heap:
            if self.hook is not None and self._hook_due():
                call, self.hook = self.hook[1], None
                call()  # it may raise the incumbent: look at the heap again
                continue
            neg, depth, _, z, box, basis = self.heap[0]
            if -neg <= self.inc.served:
                self.stats.pruned += len(self.heap)
                self.heap.clear()
                break
            if self.out_of_time():
                self._record(-neg)
                return False
            heapq.heappop(self.heap)
            self.stats.boxes += 1
            self._record(-neg)
            dim = _split_dim(box)
            if dim is None:
                self._leaf(z, box, -depth)
            else:
                self._split(z, box, dim, 1 - depth, basis, -neg)
        self._record(0)
        return True

    def _leaf(self, z: float, box: Box, depth: int) -> None:
        """Solve a leaf: relaxed program with binaries, then the restriction if needed."""
        self.stats.leaves += 1
        top, served = self._solve(z, box, RELAX)
        if top <= self.inc.served or served == top:
            return  # nothing better here, or the leaf's optimum is now the incumbent
        if self._solve(z, box, RESTRICT)[1] == top:
            return
        lo, hi = box[DIMS.index("L4")]
        if hi > lo:
            self._split(z, box, DIMS.index("L4"), depth + 1, None, top)
        else:
            self.outside.append(top)  # rounding at the edge: keep the bound, honestly open

    def _solve(self, z: float, box: Box, side: Side) -> tuple[int, int]:
        """``box``'s program on ``side`` with binaries: its integer bound and the served
        count of its point as the evaluator judges it (-1: none, or rejected)."""
        bp = self.zdata[z].program(box, side)
        self.stats.mips += 1
        solved = solve(bp.program, integer=True, time_limit=self._left())
        value = count_bound(solved.bound)
        top = -1 if value == -math.inf else int(min(value, self.inst.num_users))
        if solved.values is None:
            return top, -1
        ad = bp.ad_users[solved.values[bp.x] > 0.5].tolist()
        sd = bp.sd_users[solved.values[bp.y] > 0.5].tolist()
        return top, self.offer(Schedule.from_sets(self.inst.num_users, z, ad, sd))

    def _left(self) -> float | None:
        left = self.deadline.left()
        return None if left is None else max(left, 1e-3)


def _split_dim(box: Box) -> int | None:
    """The widest of the leaf dimensions (in values, the paddings counted double), or
    None when all are single.

    Chosen by the boxes of whole proofs, seeds 1..5 (docs/exact.md): against plain
    widths, doubling the paddings made 38% fewer at fig5 K = 70, 15% fewer at fig4
    K = 70, 13% at fig5 K = 30 and 9% more at fig4 K = 30; widths in share of the value
    span, and splitting ``L2`` and ``Nmax`` too, made more boxes.
    """
    widths = [(hi - lo) * w for (lo, hi), w in zip(box[:LEAF_DIMS], SPLIT_WEIGHTS, strict=True)]
    best = int(np.argmax(widths))
    return best if widths[best] > 0 else None


def _halves(box: Box, dim: int) -> tuple[Box, Box]:
    lo, hi = box[dim]
    mid = (lo + hi) // 2
    left = list(box)
    right = list(box)
    left[dim], right[dim] = (lo, mid), (mid + 1, hi)
    return tuple(left), tuple(right)
