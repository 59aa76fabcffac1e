"""The bounds of the fast Algorithm 3 against every tuple, and its tree search against the literal answer.

The slow twin is plain enumeration: every block (``L1``, resp. ``(L3, L4)``) and every
tuple ``(v, t, tau)`` of it, with ``d*`` computed by the literal code's own loop
(:func:`balance_opt.solvers.heuristic.literal.leading_count` over the candidates sorted by
``(c_k, k)``). A node's upper bound must hold for every tuple of its blocks that is not
dominated (docs/algorithms.md, "The fast implementation"); a lower bound must be the
``d*`` of some tuple; the tree search must return the first tuple reaching the best.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from balance_opt.instance import Instance
from balance_opt.model import ad_user_costs, ad_user_memory, sd_user_costs, sd_user_memory
from balance_opt.solvers.heuristic import alg1, alg2
from balance_opt.solvers.heuristic.blocks import Hit, search_block_literal, strict_rows, tuple_range
from balance_opt.solvers.heuristic.bounds import Budgets, Users, group_bounds, group_edges
from balance_opt.solvers.heuristic.literal import leading_count, tuple_values
from balance_opt.solvers.heuristic.primitives import ad_time_budget, memory_split, sd_time_budget
from balance_opt.solvers.heuristic.tree import TreeSearch
from tests.strategies import small_instances

SOME = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))


@dataclass(frozen=True)
class Tuple:
    """One tuple of one block, its candidates (in ``(c_k, k)`` order) and its ``d*`` per memory budget."""

    block: int
    vtt: tuple[float, float, float]  # (v, t, tau)
    cand: tuple[int, ...]
    dstar: tuple[int, ...]


def _dstars(
    cand: list[int], costs: list[float], mems: list[float], budget: float, qs: list[float]
) -> tuple[int, ...]:
    return tuple(leading_count(cand, costs, mems, budget, q) for q in qs)


def ad_tuples(inst: Instance, pairs: list[tuple[float, float]]) -> Iterator[Tuple]:
    """Every tuple of Algorithm 1, block by block (``L1`` ascending), in lexicographic order;
    ``d*`` at each ``(z, Q1)`` of ``pairs``."""
    li, lo = inst.input_tokens.tolist(), inst.output_tokens.tolist()
    tp, up = inst.budget_s.tolist(), inst.upload_s.tolist()
    for b, L1 in enumerate(np.unique(inst.input_tokens).tolist()):
        mems = ad_user_memory(inst, L1, inst.output_tokens).tolist()
        costs = {z: ad_user_costs(inst, L1, inst.output_tokens, z).tolist() for z, _ in pairs}
        order = {z: sorted(range(inst.num_users), key=lambda k, z=z: (costs[z][k], k)) for z in costs}
        for v in tuple_values(lo):
            for t in tuple_values(tp):
                for tau in tuple_values(up):
                    budget = ad_time_budget(inst, t, tau, v)
                    cand = {
                        z: [k for k in order[z] if li[k] <= L1 and lo[k] <= v and t <= tp[k] and up[k] <= tau]
                        for z in costs
                    }
                    dstar = tuple(leading_count(cand[z], costs[z], mems, budget, q) for z, q in pairs)
                    yield Tuple(b, (v, t, tau), tuple(cand[pairs[0][0]]), dstar)


def _sd_family(inst: Instance, z: float, rest: list[int]) -> alg2.SdFamily:
    mask = np.zeros(inst.num_users, dtype=bool)
    mask[rest] = True
    return alg2.SdFamily(alg2.SdContext(inst, z), mask)


def sd_tuples(inst: Instance, z: float, rest: list[int], q2: float) -> Iterator[Tuple]:
    """Every tuple of Algorithm 2 over ``rest``, block by block (``(L3, L4)``, tight ``L4``), in order."""
    fam = _sd_family(inst, z, rest)
    li, la, n = inst.input_tokens.tolist(), inst.accepted_drafts.tolist(), inst.sd_iterations.tolist()
    tp, up = inst.budget_s.tolist(), inst.upload_s.tolist()
    b = 0
    for r, L3 in enumerate(fam.L3s.tolist()):
        for L4 in fam.l4s(r).tolist():
            costs = sd_user_costs(inst, L3, L4, inst.sd_iterations, z).tolist()
            mems = sd_user_memory(inst, L3, L4, inst.sd_iterations).tolist()
            order = sorted(rest, key=lambda k: (costs[k], k))
            for v in tuple_values(n[k] for k in rest):
                for t in tuple_values(tp[k] for k in rest):
                    for tau in tuple_values(up[k] for k in rest):
                        cand = [
                            k
                            for k in order
                            if li[k] <= L3 and la[k] <= L4 and n[k] <= v and t <= tp[k] and up[k] <= tau
                        ]
                        budget = sd_time_budget(inst, t, tau, v)
                        yield Tuple(b, (v, t, tau), tuple(cand), _dstars(cand, costs, mems, budget, [q2]))
            b += 1


def check_bounds(
    fam: alg1.AdFamily | alg2.SdFamily,
    users: Users,
    strict: bool,
    tuples: list[Tuple],
    budgets: Budgets,
    new: object,
) -> None:
    """Every node ``[s, e)`` of ``fam`` at 1, 2 and all groups: upper bounds hold, lower bounds are actual."""
    s, e = np.array([(a, b) for a in range(fam.size) for b in range(a + 1, fam.size + 1)]).T.reshape(2, -1)
    rel = fam.relax(s, e)
    real = (e - s == 1) & strict_rows(rel.cost, users.key)
    for groups in (1, 2, 1000):
        edges = group_edges(users.tp, groups)
        ub, lb = group_bounds(users, edges, rel, budgets, real)
        for j in range(s.size):
            inside = [x for x in tuples if s[j] <= x.block < e[j]]
            for x in inside:
                if strict and not new(int(s[j]), int(e[j]), x.cand):  # type: ignore[operator]
                    continue  # dominated: an earlier tuple has the candidates and no larger contributions
                a = int(np.searchsorted(edges, x.vtt[1], side="left")) - 1
                if 0 <= a < edges.size - 1:
                    assert (ub[j, a] >= np.array(x.dstar)).all(), (j, x)
                else:
                    assert max(x.dstar) == 0
            best = np.max([x.dstar for x in inside], axis=0) if inside else np.zeros(budgets.qs.size)
            assert (lb[j] <= best).all()


@SOME
@given(small_instances(max_users=5), st.sets(st.sampled_from([0.2, 0.6, 1.0]), min_size=1))
def test_ad_bounds_hold_for_every_tuple_that_matters(inst: Instance, zs: set[float]) -> None:
    """All pairs at once: contributions at z = 1, scaled by each z."""
    fam = alg1.AdFamily(inst, sorted(zs))
    pairs = [(z, memory_split(inst, z, lam)[0]) for z in sorted(zs) for lam in (0.3, 1.0)]
    budgets = Budgets(np.array([q for _, q in pairs]), np.array([z for z, _ in pairs]))
    tuples = list(ad_tuples(inst, pairs))
    li = inst.input_tokens

    def new(s: int, e: int, cand: tuple[int, ...]) -> bool:  # a user with LI in the node's L1 range
        return any(fam.L1s[s] <= li[k] <= fam.L1s[e - 1] for k in cand)

    check_bounds(fam, Users(fam.key, fam.tp, fam.up, fam.budget), fam.strict, tuples, budgets, new)


@SOME
@given(small_instances(max_users=4), st.sampled_from([0.0, 0.4, 0.8]), st.data())
def test_sd_bounds_hold_for_every_tuple_that_matters(inst: Instance, z: float, data: st.DataObject) -> None:
    rest = sorted(data.draw(st.sets(st.integers(0, inst.num_users - 1), min_size=1)))
    fam = _sd_family(inst, z, rest)
    q2 = memory_split(inst, z, data.draw(st.sampled_from([0.0, 0.5])))[1]
    tuples = list(sd_tuples(inst, z, rest, q2))
    li, la = inst.input_tokens, inst.accepted_drafts
    blocks = [(float(fam.L3s[r]), float(l4)) for r in range(fam.L3s.size) for l4 in fam.l4s(r)]

    def new(s: int, e: int, cand: tuple[int, ...]) -> bool:
        (lo3, _), (hi3, hi4) = blocks[s], blocks[e - 1]
        if lo3 != hi3:  # whole L3 rows: a user with LI in the node's L3 range
            return any(lo3 <= li[k] <= hi3 for k in cand)
        lo4 = blocks[s][1]  # one row: a user with LI = L3, and one with LA in the node's L4 range
        return any(li[k] == lo3 for k in cand) and any(lo4 <= la[k] <= hi4 for k in cand)

    check_bounds(fam, fam.ctx.users, fam.ctx.strict, tuples, Budgets.of(np.array([q2])), new)


def _literal_answer(tuples: list[Tuple], i: int, floor: int) -> tuple[int, tuple[int, ...]] | None:
    """The first tuple (blocks, then (v, t, tau)) with the best ``d*`` at budget ``i``, above floor."""
    best: Tuple | None = None
    for x in tuples:
        if x.dstar[i] > (best.dstar[i] if best else floor):
            best = x
    return (best.block, best.cand[: best.dstar[i]]) if best else None


@SOME
@given(small_instances(max_users=5), st.sampled_from([0.3, 1.0]), st.integers(0, 2), st.data())
def test_tree_search_finds_the_first_tuple_reaching_the_best(
    inst: Instance, z: float, floor: int, data: st.DataObject
) -> None:
    """Algorithm 1's tree search, from any floor and any true seeds, at one and three resolutions."""
    fam = alg1.AdFamily(inst, [z])
    qs = np.array([memory_split(inst, z, lam)[0] for lam in (0.3, 0.7, 1.0)])
    tuples = list(ad_tuples(inst, [(z, q) for q in qs.tolist()]))
    users = Users(fam.key, fam.tp, fam.up, fam.budget)
    v_vals, tau_vals = tuple_range(inst.output_tokens), tuple_range(inst.upload_s)
    resolutions = data.draw(st.sampled_from([(1,), (1, 4, 32), (2, 1000)]))
    cuts = np.array(data.draw(st.lists(st.integers(0, fam.size), max_size=3)), dtype=np.int64)
    edges = [group_edges(fam.tp, c) for c in resolutions]
    budgets = Budgets(qs, np.full(qs.size, z))
    tree = TreeSearch(fam, users, edges, budgets, lambda c: strict_rows(c, fam.key), cuts)
    for i, q in enumerate(qs.tolist()):
        seeds = [(x.dstar[i], x.block) for x in data.draw(st.lists(st.sampled_from(tuples), max_size=3))]

        def search(b: int, f: int, group_ub: np.ndarray, edges: np.ndarray, q: float = q) -> Hit | None:
            return search_block_literal(fam.block(b, z), q, f, v_vals, tau_vals)

        found = tree.run(i, floor, search, [s for s in seeds if s[0] > floor])
        want = _literal_answer(tuples, i, floor)
        assert (None if found is None else (found[0], found[1].users)) == (
            None if want is None else (want[0], tuple(int(u) for u in want[1]))
        )
