"""Refutation of one z by parts: the parts of :mod:`.split` solved one by one, an open part bisected."""

from __future__ import annotations

import math
import time
from collections import deque
from typing import Any

from balance_opt.clock import Deadline
from balance_opt.evaluator import Schedule
from balance_opt.instance import Instance
from balance_opt.model import latency_limits
from balance_opt.solvers.incumbent import Incumbent
from balance_opt.solvers.milp.options import SweepOptions
from balance_opt.solvers.milp.split import Spec, bisect, label_of, part_of, split_specs
from balance_opt.solvers.milp.z_model import TRANSLATE_S, Backend, ZState, solve_model


def refute_by_parts(
    inst: Instance,
    backend: Backend,
    st: ZState,
    inc: Incumbent[Schedule],
    floor: int,
    deadline: Deadline,
    options: SweepOptions,
) -> Incumbent[Schedule]:
    """Refute ``served > max(incumbent, floor)`` at ``st``'s z part by part, a part left
    open bisected again up to ``options.split_depth`` times; returns the incumbent."""
    target = max(inc.served, floor)
    limits = latency_limits(inst)
    specs = split_specs(st.form, limits, st.caps, target + 1, options.split, options.split_by)
    # (part, depth, its parent's bound): depth first, a part's halves come next
    queue: deque[tuple[Spec, int, int | None]] = deque((spec, 0, None) for spec in specs)
    leaf_bounds: list[int | None] = []  # the leaves partition the z (each bisection checked)
    record: list[dict[str, Any]] = []
    while queue:
        spec, depth, cap = queue.popleft()
        limit = options.z_time_limit
        left = deadline.left()
        if left is not None:
            if left <= 2.0 * TRANSLATE_S:
                leaf_bounds.append(None)
                continue
            limit = min(left - TRANSLATE_S, limit or math.inf)
        t0 = time.perf_counter()
        model = part_of(st.form, limits, spec)
        found, bounds, timed_out, _ = solve_model(inst, backend, model, target + 1, None, limit, st.caps)
        if found is not None:
            inc.take(found)
        proved = min([*bounds, *([] if cap is None else [cap])], default=None)  # a half is in its parent
        open_part = timed_out and (proved is None or proved > target) and inc.served <= target
        halves = bisect(spec) if open_part and depth < options.split_depth else []
        seconds = round(time.perf_counter() - t0, 3)
        label = {**label_of(st.form, limits, spec), "depth": depth}
        record.append({**label, "bound": proved, "timed_out": timed_out, "runtime_s": seconds})
        if halves:  # this part's bound is replaced by its halves'
            record[-1]["bisected"] = True
            queue.extendleft((h, depth + 1, proved) for h in reversed(halves))
        else:
            leaf_bounds.append(proved)
    st.stats["split"] = record
    if all(b is not None for b in leaf_bounds):
        st.bound = min(st.bound, max(b for b in leaf_bounds if b is not None))
    st.done = st.bound <= max(inc.served, floor)
    return inc
