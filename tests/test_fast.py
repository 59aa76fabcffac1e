"""The fast Algorithm 3 returns exactly the literal answer (z, lambda, AD and SD users in order).

Every fast path has a slow twin here: :func:`balance_opt.solvers.heuristic.literal.balance_literal`
for the whole algorithm, :func:`~balance_opt.solvers.heuristic.literal.algorithm1` and
``algorithm2`` for Algorithms 1 and 2 alone, a tuple-by-tuple block walk for the block
search, the ``d*`` of every tuple for the bounds and the tree search, and the shared model
functions for the vectorized contributions. The bounds and the tree search are checked in
tests/test_fast_bounds.py, larger instances (ties, tight memory, K up to 40) in
tests/test_fast_large.py.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from balance_opt.clock import Deadline
from balance_opt.generator import generate
from balance_opt.instance import Instance
from balance_opt.model import ad_user_costs, ad_user_memory, sd_user_costs, sd_user_memory
from balance_opt.solvers.heuristic import alg1, alg2, blocks, fast
from balance_opt.solvers.heuristic.blocks import Counters, search_block, search_block_literal, tuple_range
from balance_opt.solvers.heuristic.bounds import group_edges, rows_in_groups
from balance_opt.solvers.heuristic.literal import algorithm1, algorithm2, balance_literal, leading_count
from balance_opt.solvers.heuristic.primitives import ad_time_budget, memory_split
from tests.strategies import GRIDS, small_instances

FAST = settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
SOME = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
COARSE = (GRIDS[2], GRIDS[3], GRIDS[4], (0.5,), (0.0, 1.0))


@st.composite
def instances(draw: st.DrawFn, **kwargs: object) -> Instance:
    """``small_instances`` (K <= 7); at K = 7, coarse grids keep the literal walk quick."""
    inst = draw(small_instances(**kwargs))  # type: ignore[arg-type]
    if inst.num_users >= 7:
        server = dataclasses.replace(
            inst.server, z_grid=draw(st.sampled_from(COARSE)), lambda_grid=draw(st.sampled_from(COARSE))
        )
        inst = inst.replace(server=server)
    return inst


def assert_same(
    inst: Instance, z_grid: tuple[float, ...] | None = None, lam_grid: tuple[float, ...] | None = None
) -> None:
    zg = inst.server.z_grid if z_grid is None else z_grid
    lg = inst.server.lambda_grid if lam_grid is None else lam_grid
    want = balance_literal(inst, zg, lg)
    got = fast.balance_fast(inst, zg, lg)
    assert (got.z, got.lam, got.ad, got.sd) == (want.z, want.lam, want.ad, want.sd)
    assert got.stats["implementation"] == "fast"


# --- whole algorithm against the literal reference ------------------------------------


@FAST
@given(instances())
def test_matches_literal(inst: Instance) -> None:
    assert_same(inst)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(instances(draft_length=st.just(1), tight_memory=True, tight_deadlines=True))
def test_matches_literal_tight_ld1(inst: Instance) -> None:
    assert_same(inst)


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(instances(draft_length=st.integers(2, 4), tight_memory=False, tight_deadlines=False))
def test_matches_literal_loose_long_drafts(inst: Instance) -> None:
    assert_same(inst)


def _uniform(inst: Instance, **arrays: object) -> Instance:
    k = inst.num_users
    changes = {name: np.full(k, value) for name, value in arrays.items()}
    return inst.replace(**changes)


def _base(k: int, seed: int = 3) -> Instance:
    return generate("fig4", users=k, seed=seed)


@pytest.mark.parametrize("k", [3, 5])
def test_identical_users(k: int) -> None:
    """Equal lengths, deadlines and channels: every c_k ties, order falls to k."""
    inst = _uniform(
        _base(k),
        input_tokens=40,
        output_tokens=20,
        deadline_s=0.9,
        acceptance=0.7,
        uplink_spectral_efficiency=7.0,
        downlink_spectral_efficiency=9.0,
    )
    assert_same(inst, (0.0, 0.5, 1.0), (0.0, 0.5, 1.0))


def test_equal_lengths_distinct_deadlines() -> None:
    inst = _base(5)
    inst = inst.replace(
        input_tokens=np.full(5, 30),
        output_tokens=np.array([10, 10, 20, 20, 10]),
        deadline_s=np.array([0.4, 0.6, 0.6, 0.9, 0.4]),
    )
    assert_same(inst, (0.0, 0.4, 0.8, 1.0), (0.0, 0.5, 1.0))


def _deadline_at_budget(inst: Instance, k: int, z: float, ulps: int) -> float:
    """A deadline whose (28) budget for user k alone equals its c_k to the bit, moved by ulps."""
    L1, lo = int(inst.input_tokens[k]), int(inst.output_tokens[k])
    c = float(ad_user_costs(inst, L1, np.array([lo]), z)[0])
    up, down = float(inst.upload_s[k]), float(inst.download_s[k])
    t = c + up + lo * inst.llm.beta_s + down
    for _ in range(200):  # walk to the smallest deadline whose budget reaches c exactly
        tp = t - down
        b = ad_time_budget(inst, tp, up, lo)
        t = math.nextafter(t, math.inf) if b < c else math.nextafter(t, -math.inf)
        if b >= c and ad_time_budget(inst, math.nextafter(t, -math.inf) - down, up, lo) < c:
            break
    for _ in range(abs(ulps)):
        t = math.nextafter(t, math.inf if ulps > 0 else -math.inf)
    return t


@pytest.mark.parametrize("ulps", [-1, 0, 1])
def test_user_exactly_at_budget(ulps: int) -> None:
    """Plain ``<=`` at the boundary: a user whose budget equals its cost to the bit."""
    inst = _base(3)
    deadlines = inst.deadline_s.copy()
    deadlines[0] = _deadline_at_budget(inst, 0, 1.0, ulps)
    inst = inst.replace(deadline_s=deadlines)
    assert_same(inst, (1.0,), (1.0,))
    assert_same(inst, (0.0, 0.5, 1.0), (0.5, 1.0))


@pytest.mark.parametrize(
    ("preset", "k", "seed"), [("fig4", 10, 1), ("fig5", 10, 2), ("fig4", 11, 7), ("fig5", 12, 5)]
)
def test_seeded_larger(preset: str, k: int, seed: int) -> None:
    """Larger generated instances exercise the bounds and the tree (a coarse grid)."""
    inst = generate(preset, users=k, seed=seed)
    assert_same(inst, (0.0, 0.3, 0.7), (0.0, 0.4, 1.0))


@pytest.mark.parametrize(("preset", "seed"), [("fig4", 11), ("fig5", 12), ("tight-memory", 13)])
def test_seeded_larger_finer_grid(preset: str, seed: int) -> None:
    assert_same(generate(preset, users=12, seed=seed), (0.0, 0.2, 0.5, 0.8, 1.0), (0.0, 0.3, 0.6, 1.0))


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(instances(max_users=4))
def test_literal_fallback_matches(inst: Instance) -> None:
    """With every block declared non-strict (no dominance, tuple-by-tuple blocks) the answer holds."""

    def never(cost: np.ndarray, key: np.ndarray) -> np.ndarray:
        return np.zeros(cost.shape[0], dtype=bool)

    with pytest.MonkeyPatch.context() as mp:
        for module in (blocks, alg1, alg2):
            mp.setattr(module, "strict_rows", never)
        assert_same(inst)


# --- Algorithms 1 and 2 on their own --------------------------------------------------


@SOME
@given(instances(max_users=6), st.sampled_from([0.1, 0.4, 0.9]), st.data())
def test_algorithms_1_and_2_match_literal(inst: Instance, z: float, data: st.DataObject) -> None:
    """Algorithm 1 for several lambda at once, and Algorithm 2 above a floor, on their own."""
    lams = [0.2, 0.5, 1.0]
    got = alg1.algorithm1_all(inst, z, lams, Counters())
    for lam, tup in zip(lams, got, strict=True):
        assert (tup.users if tup else ()) == algorithm1(inst, z, lam)[0]
    lam = data.draw(st.sampled_from([0.0, 0.3, 0.7]))
    excluded = data.draw(st.sets(st.integers(0, inst.num_users - 1), max_size=2))
    want, _ = algorithm2(inst, z, lam, excluded)
    rest = np.setdiff1d(np.arange(inst.num_users), np.array(sorted(excluded), dtype=np.int64))
    floor = data.draw(st.integers(0, 3))
    hit = alg2.SdSearch(alg2.SdContext(inst, z), memory_split(inst, z, lam)[1], rest, Counters()).run(floor)
    if len(want) > floor:
        assert hit is not None
        assert hit.users == want
    else:
        assert hit is None


@SOME
@given(instances(max_users=6), st.sampled_from([0.2, 0.7, 1.0]), st.data())
def test_algorithm1_from_known_tuples(inst: Instance, z: float, data: st.DataObject) -> None:
    """Starting from tuples found at another z changes nothing, and each tuple's d* is the literal one."""
    lams = [0.3, 0.6, 1.0]
    other = data.draw(st.sampled_from([0.1, 0.5, 0.9]))
    known = [t for t in alg1.algorithm1_all(inst, other, lams, Counters()) if t is not None]
    got = alg1.algorithm1_all(inst, z, lams, Counters(), known)
    for lam, tup in zip(lams, got, strict=True):
        assert (tup.users if tup else ()) == algorithm1(inst, z, lam)[0]
    qs = np.array([memory_split(inst, z, lam)[0] for lam in lams])
    for tup in known:
        for q, d in zip(qs.tolist(), alg1.ad_tuple_dstar(inst, z, tup, qs).tolist(), strict=True):
            assert d == _literal_ad_dstar(inst, z, q, tup)


def _literal_ad_dstar(inst: Instance, z: float, q1: float, tup: alg1.AdTuple) -> int:
    """``d*`` of one tuple of Algorithm 1, with the literal code's own loop."""
    costs = ad_user_costs(inst, tup.L1, inst.output_tokens, z).tolist()
    mems = ad_user_memory(inst, tup.L1, inst.output_tokens).tolist()
    cand = [
        k
        for k in sorted(range(inst.num_users), key=lambda k: (costs[k], k))
        if inst.input_tokens[k] <= tup.L1
        and inst.output_tokens[k] <= tup.v
        and tup.t <= inst.budget_s[k]
        and inst.upload_s[k] <= tup.tau
    ]
    return leading_count(cand, costs, mems, ad_time_budget(inst, tup.t, tup.tau, tup.v), q1)


# --- one block: the exact search against a tuple-by-tuple walk ------------------------


def _ad_block(inst: Instance, z: float, L1: int) -> blocks.Block:
    return alg1.AdFamily(inst, [z]).block(int(np.searchsorted(np.unique(inst.input_tokens), L1)), z)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    small_instances(),
    st.sampled_from([0.1, 0.5, 1.0]),
    st.sampled_from([0.3, 1.0]),
    st.integers(0, 3),
    st.data(),
)
def test_block_search(inst: Instance, z: float, lam: float, floor: int, data: st.DataObject) -> None:
    """The prefix search, on all rows or only those of some groups that hold the answer."""
    L1 = data.draw(st.sampled_from(sorted(set(inst.input_tokens.tolist()))))
    blk = _ad_block(inst, z, L1)
    q, _ = memory_split(inst, z, lam)
    v_vals, tau_vals = tuple_range(inst.output_tokens), tuple_range(inst.upload_s)
    want = search_block_literal(blk, q, 0, v_vals, tau_vals)
    best = want.served if want else 0
    assume(blocks.strict_rows(blk.cost[None, :], blk.key)[0])
    got = search_block(blk, q, floor)
    assert got == (want if best > floor else None)
    # rows of a few groups, chosen to include the group of the answer's t
    edges = group_edges(blk.tp, data.draw(st.integers(1, 4)))
    chosen = np.array(data.draw(st.lists(st.booleans(), min_size=edges.size - 1, max_size=edges.size - 1)))
    if want is not None:
        chosen[np.searchsorted(edges, want.tuple_key[1], side="left") - 1] = True
    rows = rows_in_groups(np.unique(blk.tp), edges, chosen)
    got = search_block(dataclasses.replace(blk, row_sel=rows), q, floor)
    assert got == (want if best > floor else None)


@SOME
@given(
    st.lists(st.floats(-1.0, 3.0), min_size=1, max_size=12),
    st.integers(1, 6),
    st.data(),
)
def test_rows_in_groups_is_interval_overlap(tp: list[float], groups: int, data: st.DataObject) -> None:
    values = np.array(tp)
    edges = group_edges(values, groups)
    rows = np.unique(values)
    assert edges[0] == -np.inf
    assert edges[-1] == rows[-1]
    assert np.all(np.diff(edges) > 0) or edges.size == 2
    chosen = np.array(data.draw(st.lists(st.booleans(), min_size=edges.size - 1, max_size=edges.size - 1)))
    want = [
        g
        for g in range(rows.size)
        if any(
            chosen[a] and (rows[g - 1] if g else -np.inf) < edges[a + 1] and rows[g] > edges[a]
            for a in range(edges.size - 1)
        )
    ]
    assert rows_in_groups(rows, edges, chosen).tolist() == want


# --- contributions: vectorized = shared scalar functions, bit for bit ------------------


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(small_instances(), st.sampled_from([0.0, 0.3, 0.9]))
def test_vectorized_contributions_are_bitwise(inst: Instance, z: float) -> None:
    n = inst.sd_iterations
    L3s = np.unique(inst.input_tokens).astype(np.float64)
    L4s = np.resize(np.append(inst.accepted_drafts, 0.0), L3s.size)
    costs = alg2.sd_costs(inst, L3s, L4s, n, z)
    mems = alg2.sd_memory(inst, L3s, L4s, n)
    for i in range(L3s.size):
        assert np.array_equal(costs[i], sd_user_costs(inst, float(L3s[i]), float(L4s[i]), n, z))
        assert np.array_equal(mems[i], sd_user_memory(inst, float(L3s[i]), float(L4s[i]), n))
    if z > 0:
        L1s = np.unique(inst.input_tokens)
        ad = alg1.ad_costs(inst, L1s, inst.output_tokens, z)
        for i, L1 in enumerate(L1s.tolist()):
            assert np.array_equal(ad[i], ad_user_costs(inst, L1, inst.output_tokens, z))


# --- Algorithm 3: options and edges ---------------------------------------------------


def test_rejects_bad_grids() -> None:
    inst = _base(2)
    with pytest.raises(ValueError, match="z_grid"):
        fast.balance_fast(inst, (), (0.5,))
    with pytest.raises(ValueError, match="lam_grid"):
        fast.balance_fast(inst, (0.5,), (0.6, 0.2))


def test_nobody_served_defaults_to_first_pair() -> None:
    inst = _base(3).replace(deadline_s=np.full(3, 1e-4))
    out = fast.balance_fast(inst, (0.2, 0.6), (0.3, 0.9))
    assert (out.z, out.lam, out.ad, out.sd) == (0.2, 0.3, (), ())


def test_until_stops_taking_z_values() -> None:
    """A deadline already passed leaves the empty outcome; one far ahead changes nothing."""
    inst = generate("fig4", 12, seed=3)
    z_grid, lam_grid = inst.server.z_grid, inst.server.lambda_grid
    full = fast.balance_fast(inst, z_grid, lam_grid)
    assert fast.balance_fast(inst, z_grid, lam_grid, until=Deadline(math.inf)) == full
    stopped = fast.balance_fast(inst, z_grid, lam_grid, until=Deadline(0.0))
    assert (stopped.ad, stopped.sd) == ((), ())
    assert full.ad or full.sd
