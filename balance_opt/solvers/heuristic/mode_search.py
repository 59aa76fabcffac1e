"""The searches of balance-plus at one ``z``: exact single-mode searches over any users and memory.

Algorithm 1 over any set of users is exact for AD alone (Proposition 4), Algorithm 2 for
SD alone (Proposition 5); :class:`ModeSearches` runs them with the memory the other
mode's users actually leave (21d), each asked only for sets that beat a floor and each
taken from a shared :class:`SearchBudget`. On them: SD first, AD first, deadline splits,
alternation and exchanges (docs/algorithms.md, "balance-plus"), which offer every
schedule to the :class:`Incumbent`. :mod:`.plus` is the solver; the proving solvers use
these searches through :mod:`balance_opt.solvers.common.warm_start`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from balance_opt.clock import NEVER, Deadline
from balance_opt.evaluator import Schedule
from balance_opt.instance import Instance
from balance_opt.model import ad_mode, sd_mode
from balance_opt.solvers.heuristic.alg1 import AdSearch, AdTuple
from balance_opt.solvers.heuristic.alg2 import SdContext, SdSearch
from balance_opt.solvers.heuristic.blocks import Counters, FloatArray, Hit, IntArray, search_leaf, tuple_range
from balance_opt.solvers.heuristic.bounds import rows_in_groups
from balance_opt.solvers.incumbent import Incumbent

Users = tuple[int, ...]


@dataclass
class SearchBudget:
    """How many more single-mode searches may run: shared by the z values, counted down."""

    left: int


@dataclass(frozen=True)
class PlusOutcome:
    """balance-plus's answer: ``z``, the AD and SD users, and ``lam`` when Algorithm 3's schedule won."""

    z: float
    lam: float | None
    ad: Users
    sd: Users
    stats: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def served(self) -> int:
        return len(self.ad) + len(self.sd)

    def schedule(self, inst: Instance) -> Schedule:
        return Schedule.from_sets(inst.num_users, self.z, self.ad, self.sd)


class ModeSearches:
    """The exact single-mode searches at one ``z``, over any set of users and memory."""

    def __init__(
        self, inst: Instance, z: float, stats: Counters, budget: SearchBudget, until: Deadline = NEVER
    ) -> None:
        """``budget``: the searches left (shared with other z values); ``until``: when no
        more search starts."""
        self.inst, self.z, self.stats, self.budget, self.until = inst, z, stats, budget, until
        self.free = inst.free_memory(z)
        self.ctx = SdContext(inst, z) if z < 1.0 else None
        # per L3: a bound on Algorithm 2's d* over all users in all the memory, which bounds
        # it over any users in any less (set by the first search over all users)
        self.row_ub: tuple[FloatArray, IntArray] | None = None
        self.cap_sd = inst.num_users  # SD's most users alone, once known

    def mask(self, users: Users) -> np.ndarray[Any, np.dtype[np.bool_]]:
        m = np.zeros(self.inst.num_users, dtype=bool)
        m[list(users)] = True
        return m

    def rest(self, users: Users) -> IntArray:
        """The users not in ``users``, ascending."""
        return np.flatnonzero(~self.mask(users))

    def ad_memory(self, users: Users) -> float:
        """The KV bytes (15) of ``users`` in AD."""
        return ad_mode(self.inst, self.mask(users), self.z).kv_bytes

    def sd_memory(self, users: Users) -> float:
        """The KV bytes (16) of ``users`` in SD."""
        return sd_mode(self.inst, self.mask(users), self.z).kv_bytes

    def spend(self) -> bool:
        """Take one search from the budget; False when it is spent (or the time is up)."""
        if self.budget.left <= 0 or self.until.passed():
            self.stats.add("searches_cut")
            return False
        self.budget.left -= 1
        return True

    def sd_above(self, allowed: IntArray, memory: float, floor: int) -> Users | None:
        """Algorithm 2's SD set of ``allowed`` in ``memory`` bytes, if it serves more than ``floor``."""
        if self.ctx is None or memory <= 0.0 or allowed.size <= floor or not self.spend():
            return None
        self.stats.add("sd_searches")
        search = SdSearch(self.ctx, memory, allowed, self.stats)
        walk = search.walk(floor, *self.row_ub) if self.row_ub is not None else search.walk(floor)
        while not walk.done:
            walk.step()
        return walk.best.users if walk.best is not None else None

    def sd_run(self, search: SdSearch, i: int, floor: int) -> Users | None:
        """Algorithm 2's SD set for the ``i``-th memory of ``search``, if it serves more than ``floor``.

        One :class:`SdSearch` holds several memories: its tree of bounds serves them all.
        """
        fam, stats = search.fam, self.stats
        q = float(search.qs[i])
        if q <= 0.0 or int(fam.rest.sum()) <= floor or not self.spend():
            return None
        stats.add("sd_searches")
        v_vals, tau_vals = tuple_range(fam.ctx.key[fam.rest]), tuple_range(fam.ctx.up[fam.rest])

        def leaf(b: int, f: int, group_ub: IntArray, edges: FloatArray) -> Hit | None:
            def rows(tp_rows: FloatArray) -> IntArray:
                return rows_in_groups(tp_rows, edges, group_ub > f)

            return search_leaf(fam.block(b), q, f, rows, v_vals, tau_vals, stats)

        found = search.tree.run(i, floor, leaf) if fam.size else None
        return found[1].users if found is not None else None

    def ad_above(self, allowed: IntArray, memory: float, floor: int) -> Users | None:
        """Algorithm 1's AD set of ``allowed`` in ``memory`` bytes, if it serves more than ``floor``.

        Algorithm 1 runs on the instance restricted to ``allowed`` (its tuples range over
        those users only), with the memory share ``memory / F(z)``.
        """
        if self.z <= 0.0 or memory <= 0.0 or allowed.size <= floor or not self.spend():
            return None
        self.stats.add("ad_searches")
        sub = self.inst.subset(allowed)
        search = AdSearch(sub, [self.z], [min(1.0, memory / self.free)], self.stats)
        q = float(search.qs[0, 0])

        def leaf(b: int, f: int, group_ub: IntArray, edges: FloatArray) -> Hit | None:
            def rows(tp_rows: FloatArray) -> IntArray:
                return rows_in_groups(tp_rows, edges, group_ub > f)

            blk = search.fam.block(b, self.z)
            return search_leaf(blk, q, f, rows, search.v_vals, search.tau_vals, self.stats)

        found = search.tree.run(0, floor, leaf)
        return tuple(int(allowed[u]) for u in found[1].users) if found is not None else None


def offer(inc: Incumbent[PlusOutcome], ms: ModeSearches, ad: Users, sd: Users, how: str) -> bool:
    """Offer ``(ms.z, ad, sd)`` to the incumbent; True when it won (counted as ``won_<how>``).

    A candidate with no more users in a mode than the incumbent serves cannot win and is
    not evaluated; one the evaluator turns down or that serves no more is ``rejected``.
    """
    if len(ad) + len(sd) <= inc.served:
        return False
    cand = PlusOutcome(ms.z, None, ad, sd)
    if not inc.offer(ms.inst, cand, cand.schedule(ms.inst), how).won:
        ms.stats.add("rejected")
        return False
    ms.stats.add(f"won_{how}")
    return True


def first_incumbent(inst: Instance, first: PlusOutcome) -> Incumbent[PlusOutcome]:
    """The incumbent balance-plus's searches start from: ``first`` as the evaluator counts it."""
    return Incumbent.judged(inst, first, first.schedule(inst), "start")


def alternate(inc: Incumbent[PlusOutcome], ms: ModeSearches, ad: Users, sd: Users) -> None:
    """Re-choose the SD set for the AD set and the AD set for the SD set while either grows.

    Each set is searched among the users the other leaves, in the memory it leaves (21d),
    and must serve more than before: the total grows at every round, so this ends.
    """
    while True:
        grown = False
        more_sd = ms.sd_above(ms.rest(ad), ms.free - ms.ad_memory(ad), len(sd))
        if more_sd is not None:
            sd, grown = more_sd, True
        more_ad = ms.ad_above(ms.rest(sd), ms.free - ms.sd_memory(sd), len(ad))
        if more_ad is not None:
            ad, grown = more_ad, True
        if not grown:
            return
        ms.stats.add("rounds")
        offer(inc, ms, ad, sd, "alternation")


def exchange(inc: Incumbent[PlusOutcome], ms: ModeSearches) -> bool:
    """Take one user out of a mode of the incumbent (at ``ms.z``) to make room in the other.

    With one AD user out, the SD set of the users left must grow; the AD set is then chosen
    again around it and must get back to its size: a net gain of one. Likewise with one SD
    user out. True at the first gain (the incumbent is replaced).
    """
    ad, sd = inc.best.ad, inc.best.sd
    for a in ad:
        fewer = tuple(x for x in ad if x != a)
        more = ms.sd_above(ms.rest(fewer), ms.free - ms.ad_memory(fewer), len(sd))
        if more is None:
            continue
        refill = ms.ad_above(ms.rest(more), ms.free - ms.sd_memory(more), len(fewer))
        if refill is not None and offer(inc, ms, refill, more, "exchange"):
            return True
    for s in sd:
        fewer = tuple(x for x in sd if x != s)
        more = ms.ad_above(ms.rest(fewer), ms.free - ms.sd_memory(fewer), len(ad))
        if more is None:
            continue
        refill = ms.sd_above(ms.rest(more), ms.free - ms.ad_memory(more), len(fewer))
        if refill is not None and offer(inc, ms, more, refill, "exchange"):
            return True
    return False


def one_mode(inc: Incumbent[PlusOutcome], ms: ModeSearches) -> None:
    """At ``z = 1`` (AD only) or ``z = 0`` (SD only, D7): the mode's best set in all the free memory."""
    everyone = np.arange(ms.inst.num_users)
    if ms.z >= 1.0:
        ad = ms.ad_above(everyone, ms.free, inc.served)
        if ad is not None:
            offer(inc, ms, ad, (), "one_mode")
    elif ms.z <= 0.0:
        sd = ms.sd_above(everyone, ms.free, inc.served)
        if sd is not None:
            offer(inc, ms, (), sd, "one_mode")


def improve_at(
    inc: Incumbent[PlusOutcome],
    ms: ModeSearches,
    shares: Sequence[float],
    by_share: list[Users],
    start: list[tuple[Users, Users]],
    cuts: int,
) -> None:
    """Search ``ms.z`` for schedules beating the incumbent: SD first, AD first, deadline
    splits, then alternation.

    ``shares`` (ascending, in (0, 1), then 1) are the AD memory shares of the seeds and
    ``by_share`` Algorithm 1's AD set for each; ``start`` holds schedules of this z to
    alternate from; ``cuts`` is the most deadline splits tried.
    """
    for ad, sd in start:
        alternate(inc, ms, ad, sd)
    cap_ad = len(by_share[-1])  # AD alone with all the memory (Proposition 4)
    found = sd_first(inc, ms, shares, cap_ad)
    if found is None:
        ms.stats.add("z_skipped")
        return
    for first in dict.fromkeys(by_share):  # AD first, SD in the memory left
        then = ms.sd_above(ms.rest(first), ms.free - ms.ad_memory(first), max(0, inc.served - len(first)))
        if offer(inc, ms, first, then or (), "ad_first"):
            found.append((first, then or ()))
    found += deadline_splits(inc, ms, cuts)
    for ad, sd in found:
        alternate(inc, ms, ad, sd)


def sd_first(
    inc: Incumbent[PlusOutcome], ms: ModeSearches, shares: Sequence[float], cap_ad: int
) -> list[tuple[Users, Users]] | None:
    """SD first with the memory ``(1 - share) F(z)`` (all of it first), AD in the memory left.

    Returns the schedules that beat the incumbent, or None when even SD alone with all the
    memory cannot serve more than the incumbent minus ``cap_ad`` (AD's most users alone):
    then no schedule of this z beats the incumbent.
    """
    assert ms.ctx is not None
    everyone = np.arange(ms.inst.num_users)
    memories = [ms.free, *((1.0 - s) * ms.free for s in shares if s < 1.0)]
    search = SdSearch(ms.ctx, np.array(memories), everyone, ms.stats)
    ms.row_ub = (search.fam.L3s, search.row_bounds(1)[:, 0])
    found: list[tuple[Users, Users]] = []
    last: tuple[Users, float] | None = None  # the last SD set and its memory
    for i, memory in enumerate(memories):
        if last is not None and memory >= last[1]:
            continue  # the last SD set fits: the same count, nothing new to find
        sd = ms.sd_run(search, i, max(0, inc.served - cap_ad))
        if sd is None:
            if i == 0:
                return None
            break  # less memory serves no more
        if i == 0:
            ms.cap_sd = len(sd)
        last = (sd, ms.sd_memory(sd))
        ad = ms.ad_above(ms.rest(sd), ms.free - last[1], max(0, inc.served - len(sd)))
        if offer(inc, ms, ad or (), sd, "sd_first"):
            found.append((ad or (), sd))
    return found


def deadline_splits(inc: Incumbent[PlusOutcome], ms: ModeSearches, cuts: int) -> list[tuple[Users, Users]]:
    """AD among the users with ``Tp_k >= theta``, SD among the others, for up to ``cuts`` values of theta.

    A batch must meet its tightest deadline (20), (21c): the slower mode wants the users with
    the loosest ones. Returns the schedules that beat the incumbent.
    """
    tp = ms.inst.budget_s
    values = np.unique(tp)
    if values.size < 2:
        return []
    # theta from the second smallest budget up: both sides keep a user
    picks = np.unique(np.linspace(1, values.size - 1, min(cuts, values.size - 1)).round().astype(np.int64))
    found: list[tuple[Users, Users]] = []
    for theta in values[picks].tolist():
        loose, tight = np.flatnonzero(tp >= theta), np.flatnonzero(tp < theta)
        ad = ms.ad_above(loose, ms.free, max(0, inc.served - min(tight.size, ms.cap_sd)))
        if ad is None:
            continue
        sd = ms.sd_above(tight, ms.free - ms.ad_memory(ad), max(0, inc.served - len(ad)))
        if offer(inc, ms, ad, sd or (), "deadline_split"):
            found.append((ad, sd or ()))
    return found


def seed_shares(lam_grid: Sequence[float], splits: int) -> list[float]:
    """The memory shares of the seeds: ``i / splits`` and the instance's ``Lambda``, in (0, 1]."""
    shares = {i / splits for i in range(1, splits + 1)} | {float(x) for x in lam_grid}
    return sorted(s for s in shares if 0.0 < s <= 1.0)


class AdByShare:
    """Algorithm 1's AD sets over all users at every ``z`` in (0, 1) and share: one tree of bounds.

    As in the fast Algorithm 3, the answers at the nearest ``z`` done start each search.
    """

    def __init__(self, inst: Instance, zs: Sequence[float], shares: Sequence[float], stats: Counters) -> None:
        self.zs, self.shares = list(zs), list(shares)
        self.search = AdSearch(inst, self.zs, self.shares, stats) if self.zs else None
        self.found: dict[float, list[AdTuple | None]] = {}

    def at(self, z: float) -> list[Users]:
        """The AD set of each share at ``z``, in the order of ``shares``."""
        assert self.search is not None
        near = [x for x in self.found if x < z][-1:] + [x for x in self.found if x > z][:1]
        known = list(dict.fromkeys(t for x in near for t in self.found[x] if t is not None))
        self.found[z] = got = self.search.answers(self.zs.index(z), known)
        return [t.users if t is not None else () for t in got]
