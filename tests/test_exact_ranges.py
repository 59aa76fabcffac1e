"""The range shrinking of ``exact`` (balance_opt.solvers.exact.ranges) against enumeration:
no schedule that beats the incumbent may be cut from a box."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from balance_opt.evaluator import Schedule, evaluate
from balance_opt.generator import generate
from balance_opt.instance import Instance
from balance_opt.solvers import get_solver
from balance_opt.solvers.exact.boxes import RELAX, caps
from balance_opt.solvers.exact.ranges import tighten
from tests.strategies import small_instances
from tests.test_exact import _box_of, draw_box, draw_root
from tests.test_milp import cases

pytest.importorskip("highspy")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(max_users=5) | small_instances(max_users=5, tight_memory=True), st.data())
def test_shrinking_keeps_every_schedule_that_beats_the_incumbent(inst: Instance, data: st.DataObject) -> None:
    """Random boxes and incumbents: every feasible two-mode schedule in the box serving
    more than the incumbent lies in the shrunk box (and None means there is none)."""
    zd, root = draw_root(data, inst)
    z = zd.z
    box = draw_box(data, root)
    served = data.draw(st.integers(0, inst.num_users))
    t = zd.terms(box, RELAX)
    cap_a, cap_s, _ = caps(inst, t)
    tight = tighten(zd, box, served, t, cap_a.total, cap_s.total)
    event(f"shrunk: {'none left' if tight is None else tight != box}")
    if tight is not None:
        assert all(lo <= tlo <= thi <= hi for (lo, hi), (tlo, thi) in zip(box, tight, strict=True))
    for modes in itertools.product((0, 1, 2), repeat=inst.num_users):
        arr = np.array(modes, dtype=np.int8)
        ad, sd = np.flatnonzero(arr == 1).tolist(), np.flatnonzero(arr == 2).tolist()
        if not ad or not sd or len(ad) + len(sd) <= served:
            continue
        at = _box_of(zd, inst, ad, sd)
        if not all(lo <= i <= hi for i, (lo, hi) in zip(at, box, strict=True)):
            continue
        if evaluate(inst, Schedule(z, arr)).feasible:
            assert tight is not None, (ad, sd)
            assert all(lo <= i <= hi for i, (lo, hi) in zip(at, tight, strict=True)), (ad, sd, tight)


def test_shrinking_narrows_boxes_of_a_proof() -> None:
    """On a whole proof the shrinking does cut ranges (the statistics count them)."""
    res = get_solver("exact").solve(generate("fig5", 20, seed=4))
    assert res.status == "optimal"
    assert res.stats["narrowed"] > 0
