"""The fast Algorithm 3 on larger instances: against the literal reference, a block walk, and itself.

* Up to 40 users against :func:`~balance_opt.solvers.heuristic.literal.balance_literal`:
  lengths, deadlines and acceptance rates drawn from pools of two to five values (one channel),
  so that keys tie often and every tuple range stays short enough for the literal walk;
  tight memory and tight deadlines included.
* Slow: fig4, fig5 and tight-memory instances of 8-16 users (seeded and random) against the
  literal reference on coarse grids; 40-60 users against a block walk (every block of Algorithms 1 and 2
  searched in order, no bounds: :func:`~balance_opt.solvers.heuristic.blocks.search_block`,
  itself checked against a tuple-by-tuple walk in tests/test_fast.py); 150-400 users with
  the bounds made coarser, finer or left without dominance, which must not change the answer.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from balance_opt.generator import generate
from balance_opt.instance import Instance, Server
from balance_opt.solvers.heuristic import alg1, alg2, fast, tree
from balance_opt.solvers.heuristic.blocks import (
    Block,
    Hit,
    search_block,
    search_block_literal,
    strict_rows,
    tuple_range,
)
from balance_opt.solvers.heuristic.literal import balance_literal
from balance_opt.solvers.heuristic.primitives import memory_split
from tests.strategies import LLAMA2_7B, TINYLLAMA, generated_instances

GRIDS = ((0.0, 0.5, 1.0), (0.0, 0.3, 0.7), (0.2, 0.6, 1.0), (0.0, 0.4, 0.8, 1.0))


@st.composite
def tied_instances(draw: st.DrawFn, min_users: int = 8, max_users: int = 40) -> Instance:
    """Many users, few distinct values: every tuple range is short, keys and budgets tie."""
    k = draw(st.integers(min_users, max_users))

    def pool(values: st.SearchStrategy[float], size: int) -> list[float]:
        vals = draw(st.lists(values, min_size=2, max_size=size, unique=True))
        return [draw(st.sampled_from(vals)) for _ in range(k)]

    tight_memory, tight_deadlines = draw(st.booleans()), draw(st.booleans())
    weights = LLAMA2_7B.weight_bytes(2) + TINYLLAMA.weight_bytes(2)
    kv_token = LLAMA2_7B.kv_bytes_per_token(2) + TINYLLAMA.kv_bytes_per_token(2)
    room = draw(st.floats(20.0, 15.0 * k)) if tight_memory else 4000.0 * k
    grid = draw(st.sampled_from(GRIDS))
    return Instance(
        name=f"tied-K{k}",
        server=Server(weights + room * kv_token, 2.0, draw(st.integers(1, 4)), 32.0, grid, grid),
        llm=LLAMA2_7B,
        slm=TINYLLAMA,
        user_ids=tuple(f"u{i}" for i in range(k)),
        input_tokens=np.array(pool(st.integers(1, 60), 5), dtype=np.int64),
        output_tokens=np.array(pool(st.integers(1, 60), 5), dtype=np.int64),
        deadline_s=np.array(pool(st.floats(0.05, 0.8 if tight_deadlines else 3.0), 3)),
        acceptance=np.array(pool(st.sampled_from([0.5, 0.7, 0.9]), 2)),
        uplink_bandwidth_hz=np.full(k, 1e6),
        uplink_spectral_efficiency=np.full(k, draw(st.floats(1.0, 10.0))),
        downlink_bandwidth_hz=np.full(k, 2e6),
        downlink_spectral_efficiency=np.full(k, draw(st.floats(1.0, 10.0))),
    )


def same(got: object, want: object) -> bool:
    return all(getattr(got, f) == getattr(want, f) for f in ("z", "lam", "ad", "sd"))


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(tied_instances())
def test_up_to_40_users_with_ties_match_literal(inst: Instance) -> None:
    zg, lg = inst.server.z_grid, inst.server.lambda_grid
    assert same(fast.balance_fast(inst, zg, lg), balance_literal(inst, zg, lg))


# --- slow: generated instances against the literal reference -----------------------------


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["fig4", "fig5", "tight-memory"])
@pytest.mark.parametrize("seed", range(8))
def test_generated_12_to_16_users_match_literal(preset: str, seed: int) -> None:
    inst = generate(preset, users=12 + seed % 5, seed=100 + seed)
    zg, lg = GRIDS[seed % len(GRIDS)], GRIDS[(seed + 1) % len(GRIDS)]
    assert same(fast.balance_fast(inst, zg, lg), balance_literal(inst, zg, lg))


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(generated_instances(min_users=8, max_users=12), st.sampled_from(GRIDS), st.sampled_from(GRIDS))
def test_random_generated_instances_match_literal(
    inst: Instance, z_grid: tuple[float, ...], lam_grid: tuple[float, ...]
) -> None:
    assert same(fast.balance_fast(inst, z_grid, lam_grid), balance_literal(inst, z_grid, lam_grid))


# --- slow: against a block walk (no bounds) ----------------------------------------------


def _walk(blocks: Iterator[Block], mem: float, v_vals: np.ndarray, tau_vals: np.ndarray) -> tuple[int, ...]:
    """The first tuple reaching the best d* over the blocks in order: each block searched whole."""
    best: Hit | None = None
    for blk in blocks:
        floor = best.served if best else 0
        if strict_rows(blk.cost[None, :], blk.key)[0]:
            hit = search_block(blk, mem, floor)
        else:
            hit = search_block_literal(blk, mem, floor, v_vals, tau_vals)
        best = hit or best
    return best.users if best else ()


def block_walk_balance(inst: Instance, z_grid: tuple[float, ...], lam_grid: tuple[float, ...]) -> tuple:
    """Algorithm 3 in its own order, Algorithms 1 and 2 by walking all their blocks."""
    best: tuple = (z_grid[0], lam_grid[0], (), ())
    for z in z_grid:
        for lam in lam_grid:
            q1, q2 = memory_split(inst, z, lam)
            ad: tuple[int, ...] = ()
            if z != 0.0 and lam != 0.0:
                fam = alg1.AdFamily(inst, [z])
                v, tau = tuple_range(inst.output_tokens), tuple_range(inst.upload_s)
                ad = _walk((fam.block(i, z) for i in range(fam.size)), q1, v, tau)
            sd: tuple[int, ...] = ()
            if z != 1.0 and lam != 1.0:
                rest = np.ones(inst.num_users, dtype=bool)
                rest[list(ad)] = False
                sfam = alg2.SdFamily(alg2.SdContext(inst, z), rest)
                v, tau = tuple_range(inst.sd_iterations[rest]), tuple_range(inst.upload_s[rest])
                sd = _walk((sfam.block(i) for i in range(sfam.size)), q2, v, tau)
            if len(ad) + len(sd) > len(best[2]) + len(best[3]):
                best = (z, lam, ad, sd)
    return best


@pytest.mark.slow
@pytest.mark.parametrize(("preset", "k", "seed"), [("fig4", 40, 1), ("fig5", 50, 2), ("tight-memory", 60, 3)])
def test_40_to_60_users_match_a_block_walk(preset: str, k: int, seed: int) -> None:
    inst = generate(preset, users=k, seed=seed)
    zg, lg = (0.0, 0.4, 0.8, 1.0), (0.0, 0.5, 1.0)
    got = fast.balance_fast(inst, zg, lg)
    assert (got.z, got.lam, got.ad, got.sd) == block_walk_balance(inst, zg, lg)


# --- slow: the answer does not depend on how tight the bounds are ------------------------


def _coarse(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(alg1, "RESOLUTIONS", (1,))
    monkeypatch.setattr(alg2, "RESOLUTIONS", (2,))
    monkeypatch.setattr(alg2, "START_NODES", 1)


def _fine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(alg1, "RESOLUTIONS", (4, 64, 100_000))
    monkeypatch.setattr(alg2, "RESOLUTIONS", (64,))
    monkeypatch.setattr(tree.TreeSearch, "BATCH", 1)
    monkeypatch.setattr(fast, "BOUND_RES", 0)


def _no_dominance(monkeypatch: pytest.MonkeyPatch) -> None:
    original = alg2.SdContext.__init__

    def init(self: alg2.SdContext, inst: Instance, z: float) -> None:
        original(self, inst, z)
        self.strict = False

    monkeypatch.setattr(alg2.SdContext, "__init__", init)
    original_ad = alg1.AdFamily.__init__

    def init_ad(self: alg1.AdFamily, inst: Instance, zs: list[float]) -> None:
        original_ad(self, inst, zs)
        self.strict = False

    monkeypatch.setattr(alg1.AdFamily, "__init__", init_ad)


@pytest.mark.slow
@pytest.mark.parametrize("variant", [_coarse, _fine, _no_dominance], ids=["coarse", "fine", "no-dominance"])
@pytest.mark.parametrize(
    ("preset", "k", "seed"), [("fig4", 150, 4), ("fig5", 250, 5), ("tight-memory", 400, 6)]
)
def test_the_answer_does_not_depend_on_the_bounds(variant: object, preset: str, k: int, seed: int) -> None:
    inst = generate(preset, users=k, seed=seed)
    zg, lg = inst.server.z_grid, inst.server.lambda_grid
    want = fast.balance_fast(inst, zg, lg)
    with pytest.MonkeyPatch.context() as mp:
        variant(mp)  # type: ignore[operator]
        got = fast.balance_fast(inst, zg, lg)
    assert same(got, want)
