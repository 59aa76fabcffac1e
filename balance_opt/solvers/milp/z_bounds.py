"""The bound plan of the z sweep: each z's combinatorial bound, before any model is solved.

Each z gets the deadline-pair and memory bounds over exact single-mode optima
(:mod:`balance_opt.solvers.common.bounds`) within a share of the limit; where a memory
bound binds, the z model is rebuilt to branch on the padded lengths (``selectors``).
"""

from __future__ import annotations

import time
from typing import Any

from balance_opt.clock import Deadline
from balance_opt.instance import Instance
from balance_opt.solvers.common.bounds import (
    AD_MODE,
    Ranks,
    deadline_pair_bound,
    memory_split_bound,
    shared_memory_bound,
)
from balance_opt.solvers.milp.formulation import build
from balance_opt.solvers.milp.z_model import ZState


def bound_every_z(
    inst: Instance, states: dict[float, ZState], floor: int, until: Deadline, selectors: str
) -> None:
    """Each z's combinatorial bound before ``until``; selectors where memory binds (``auto``)."""
    last = 0.0  # seconds the previous z's bounds took: the next one would take about as long
    for n, st in enumerate(states.values()):  # time a z leaves over flows to the next
        left = until.left()
        share = None if left is None else left / (len(states) - n)
        if left is not None and left <= last:
            # the bounds' share of the limit is (about to be) spent: the count bound holds
            st.bound = st.form.count_bound
            st.stats["selectors"] = st.form.use_selectors
            continue
        t0 = time.perf_counter()
        combinatorial_bound(inst, st, floor, share)
        last = time.perf_counter() - t0
        if selectors == "auto" and memory_binds(st):
            st.form = build(inst, st.form.z, selectors=True)
        st.stats["selectors"] = st.form.use_selectors


def combinatorial_bound(inst: Instance, st: ZState, inc: int, time_limit: float | None) -> None:
    """Lower ``st.bound`` by the deadline-pair, shared-memory and memory-split bounds; record the caps."""
    f = st.form
    st.bound = f.count_bound
    if not f.objective:
        return
    t0 = time.perf_counter()
    ranks = Ranks(inst, f.z)
    pb = deadline_pair_bound(inst, f.z, f.ad_users, f.sd_users, time_limit, ranks)
    st.caps = {mode: cap for mode, cap in pb.caps.items() if (f.x if mode == AD_MODE else f.y)}
    st.bound = min(st.bound, pb.bound)
    info: dict[str, Any] = {"pair_bound": pb.bound, "pairs": pb.pairs, "complete": pb.complete}
    until = Deadline(None if time_limit is None else t0 + time_limit)
    if f.x and f.y and st.bound > inc:  # about a second at K = 70
        shared = shared_memory_bound(inst, f.z, ranks, f.ad_users, f.sd_users, st.bound, until)
        info["shared_memory_bound"] = shared
        if shared is not None:
            st.bound = min(st.bound, shared)
    if f.x and f.y and st.bound > inc:  # several seconds at K = 70 when memory binds
        split = memory_split_bound(inst, f.z, ranks, pb.caps, f.ad_users, f.sd_users, st.bound, until)
        info["memory_split_bound"] = split
        if split is not None:
            st.bound = min(st.bound, split)
    info["seconds"] = round(time.perf_counter() - t0, 3)
    st.stats["combinatorial"] = info


def memory_binds(st: ZState) -> bool:
    """Whether a memory bound of this z cut the deadline-pair bound (both modes share F(z)).

    There the padding excess is what the LP relaxation loses: on fig5 K = 70 seed 3 at
    z = 0.5, HiGHS proved ``served >= 31`` infeasible in 26 s with selectors and had a
    bound of 35 after 90 s without; on fig4 (memory never binds) they slow it down.
    """
    info = st.stats.get("combinatorial", {})
    pair = info.get("pair_bound")
    memory = [info.get(k) for k in ("shared_memory_bound", "memory_split_bound")]
    return pair is not None and any(m is not None and m < pair for m in memory)
