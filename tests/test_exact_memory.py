"""The least-memory curves and per-z bounds of ``exact`` (balance_opt.solvers.exact.memory)
against enumeration of every schedule of small instances with the evaluator."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from balance_opt.evaluator import AD, SD, Schedule, evaluate
from balance_opt.generator import generate
from balance_opt.instance import Instance
from balance_opt.solvers.common.bounds import AD_MODE, SD_MODE, Ranks
from balance_opt.solvers.exact import memory
from balance_opt.solvers.exact.boxes import ZData
from balance_opt.solvers.exact.memory import _blocks, least_ad, least_sd, z_bounds
from tests.strategies import small_instances
from tests.test_exact import _box_of
from tests.test_milp import cases

FAST = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _kv(inst: Instance, modes: np.ndarray, z: float) -> float | None:
    """KV bytes of a schedule, or None when the evaluator rejects it."""
    ev = evaluate(inst, Schedule(z, modes))
    return ev.ad.kv_bytes + ev.sd.kv_bytes if ev.feasible else None


@FAST
@given(cases(max_users=6) | small_instances(max_users=6, tight_memory=True), st.data())
def test_least_memory_is_below_every_feasible_set_of_the_box(inst: Instance, data: st.DataObject) -> None:
    """For every feasible one-mode set whose thresholds lie in a random box, the curve
    at its size is at most its KV bytes, whether every value has its row or the ranges
    are cut into a few blocks (as at large K)."""
    z = data.draw(st.sampled_from([z for z in inst.server.z_grid if 0.0 < z < 1.0] or [0.5]))
    zd = ZData(inst, z)
    full = zd.full()
    box = tuple(
        tuple(sorted(data.draw(st.tuples(st.integers(lo, hi), st.integers(lo, hi)))))
        if hi >= lo
        else (lo, hi)
        for lo, hi in full
    )
    blocks = data.draw(st.sampled_from([None, 1, 2, 3]))
    event(f"blocks: {blocks}")
    curves = {AD: least_ad(zd, box, blocks), SD: least_sd(zd, box, blocks)}
    if blocks is not None:  # a relaxation of the row per value: never above it
        assert np.all(curves[AD] <= least_ad(zd, box) * (1.0 + 1e-12))
        assert np.all(curves[SD] <= least_sd(zd, box) * (1.0 + 1e-12))
    checked = 0
    for mode, users, dims in ((AD, zd.ad, (0, 1)), (SD, zd.sd, (2, 3, 4))):
        for n in range(1, users.size + 1):
            for chosen in itertools.combinations(users.tolist(), n):
                modes = np.zeros(inst.num_users, dtype=np.int8)
                modes[list(chosen)] = mode
                kv = _kv(inst, modes, z)
                if kv is None:
                    continue
                at = _box_of(zd, inst, list(chosen), list(chosen))  # this mode's dims only
                if all(box[d][0] <= at[d] <= box[d][1] for d in dims):
                    checked += 1
                    assert curves[mode][n] <= kv * (1.0 + 1e-12)
    event(f"sets checked: {min(checked, 5)}")


@FAST
@given(cases(max_users=6) | small_instances(max_users=6, tight_memory=True), st.data())
def test_z_bounds_hold_every_schedule(inst: Instance, data: st.DataObject) -> None:
    """Each mode's cap bounds its schedules alone; the shared-memory bound bounds every
    schedule of z."""
    z = data.draw(st.sampled_from(inst.server.z_grid))
    zd = ZData(inst, z)
    cap_a, cap_s, both = z_bounds(zd)
    best = {"ad": 0, "sd": 0, "all": 0}
    for modes in itertools.product((0, 1, 2), repeat=inst.num_users):
        arr = np.array(modes, dtype=np.int8)
        if evaluate(inst, Schedule(z, arr)).feasible:
            n_ad, n_sd = int((arr == AD).sum()), int((arr == SD).sum())
            best["all"] = max(best["all"], n_ad + n_sd)
            best["ad"] = max(best["ad"], n_ad)
            best["sd"] = max(best["sd"], n_sd)
    assert cap_a >= best["ad"]
    assert cap_s >= best["sd"]
    assert both >= best["all"]
    event(f"shared memory bound tight: {both == best['all']}")


def test_blocks_cover_the_range_in_order() -> None:
    """Blocks are consecutive, cover ``lo..hi`` once, and number at most ``blocks``."""
    for lo, hi, blocks in ((0, 0, None), (3, 9, None), (0, 99, 7), (5, 6, 64), (2, 40, 1)):
        b = _blocks(lo, hi, blocks)
        assert b[0, 0] == lo
        assert b[-1, 1] == hi
        assert np.all(b[1:, 0] == b[:-1, 1] + 1)
        assert np.all(b[:, 0] <= b[:, 1])
        assert len(b) == (hi - lo + 1 if blocks is None else min(blocks, hi - lo + 1))


def test_blocked_bounds_at_large_k_stay_above_the_optima(monkeypatch: pytest.MonkeyPatch) -> None:
    """With far fewer blocks than values (16 at K = 200) the caps are still at least the
    exact single-mode optima and the shared-memory bound at least the larger of them."""
    monkeypatch.setattr(memory, "BLOCKS", 16)
    inst = generate("fig5", 200, seed=1)
    for z in (0.3, 0.7):
        zd = ZData(inst, z)
        assert zd.values["DA"].size > memory.BLOCKS
        cap_a, cap_s, both = z_bounds(zd)
        ranks = Ranks(inst, z)
        opt_a, opt_s = ranks.rank(AD_MODE, zd.ad.tolist()), ranks.rank(SD_MODE, zd.sd.tolist())
        assert cap_a >= opt_a
        assert cap_s >= opt_s
        assert both >= max(opt_a, opt_s)


@pytest.mark.parametrize(("preset", "users", "seed"), [("fig5", 30, 1), ("fig4", 30, 1)])
def test_z_caps_are_at_least_the_single_mode_optima(preset: str, users: int, seed: int) -> None:
    """The caps never fall below the exact single-mode optima (Propositions 4 and 5)."""
    inst = generate(preset, users, seed=seed)
    for z in inst.server.z_grid:
        zd = ZData(inst, z)
        cap_a, cap_s, _ = z_bounds(zd)
        ranks = Ranks(inst, z)
        assert cap_a >= ranks.rank(AD_MODE, zd.ad.tolist())
        assert cap_s >= ranks.rank(SD_MODE, zd.sd.tolist())
