"""The limit-pair bound of ``exact`` (balance_opt.solvers.exact.pairs) against
enumeration: no schedule of a box serves more than its entry, and none that beats the
incumbent is cut from a box."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from balance_opt.evaluator import Schedule, evaluate
from balance_opt.generator import generate
from balance_opt.instance import Instance
from balance_opt.solvers.exact.boxes import ZData
from balance_opt.solvers.exact.memory import first_bounds
from tests.strategies import small_instances
from tests.test_exact import _box_of, draw_box, draw_root
from tests.test_milp import cases


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(max_users=6) | small_instances(max_users=6, tight_memory=True), st.data())
def test_pairs_bound_and_keep_every_schedule_of_a_box(inst: Instance, data: st.DataObject) -> None:
    """Random boxes, incumbents and block counts: every feasible two-mode schedule of the
    box serves at most the box's bound and z's bound, and one that serves more than the
    incumbent lies in the shrunk box (None: there is none)."""
    zd, root = draw_root(data, inst)
    z = zd.z
    blocks = data.draw(st.sampled_from([None, 1, 2, 3]))
    pairs = first_bounds(zd, blocks).pairs
    box = root if data.draw(st.booleans()) else draw_box(data, root)  # the root holds the most
    served = data.draw(st.integers(0, inst.num_users))
    cut = pairs.shrink(box, served)
    event(f"blocks {blocks}, shrunk: {'none left' if cut is None else cut != box}")
    if cut is not None:
        assert all(lo <= clo <= chi <= hi for (lo, hi), (clo, chi) in zip(box, cut, strict=True))
    checked = 0
    for modes in itertools.product((0, 1, 2), repeat=inst.num_users):
        arr = np.array(modes, dtype=np.int8)
        ad, sd = np.flatnonzero(arr == 1).tolist(), np.flatnonzero(arr == 2).tolist()
        if not ad or not sd:
            continue
        at = _box_of(zd, inst, ad, sd)
        if not all(lo <= i <= hi for i, (lo, hi) in zip(at, box, strict=True)):
            continue
        if not evaluate(inst, Schedule(z, arr)).feasible:
            continue
        n, checked = len(ad) + len(sd), checked + 1
        assert n <= pairs.box_bound(box) <= pairs.bound(), (ad, sd)
        if n > served:
            assert cut is not None, (ad, sd)
            assert all(lo <= i <= hi for i, (lo, hi) in zip(at, cut, strict=True)), (ad, sd, cut)
    event(f"schedules checked: {min(checked, 5)}")


def test_pairs_see_what_the_caps_do_not() -> None:
    """fig4 K = 70 seed 1 (optimum 39): at z = 0.5 the caps sum to 45 with memory loose,
    while no pair of tightest limits allows more than 43 (docs/exact.md). Blocks of
    limits relax both, and the pairs stay below the caps."""
    zd = ZData(generate("fig4", 70, seed=1), 0.5)
    exact = first_bounds(zd)
    assert exact.cap_a + exact.cap_s == exact.memory == 45
    assert exact.pairs.bound() == 43
    for blocks in (32, 16, 8):
        fb = first_bounds(zd, blocks)
        assert exact.pairs.bound() <= fb.pairs.bound() < fb.cap_a + fb.cap_s
