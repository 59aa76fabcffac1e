"""The tree search over ranges of blocks: best first, for the first block reaching the best ``d*``.

The blocks of Algorithm 1 (one per ``L1``) or 2 (one per ``(L3, L4)``) are numbered in the
lexicographic order of their parameters; a node is a range ``[s, e)`` of them, bounded by
:func:`balance_opt.solvers.heuristic.bounds.group_bounds`. Nodes are taken best bound
first; a single block whose bound may matter is searched exactly
(:mod:`balance_opt.solvers.heuristic.blocks`), and the answer is the literal one: the
lexicographically first tuple reaching the best ``d*`` (docs/algorithms.md).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from balance_opt.solvers.heuristic.blocks import BoolArray, FloatArray, Hit, IntArray
from balance_opt.solvers.heuristic.bounds import Budgets, Relaxed, Users, group_bounds


class Family(Protocol):
    """The blocks of one algorithm, in lexicographic order of their parameters."""

    size: int

    def split(self, s: IntArray, e: IntArray) -> IntArray:
        """A cut ``s < m < e`` for each node with more than one block."""
        ...

    def relax(self, s: IntArray, e: IntArray) -> Relaxed:
        """For nodes ``[s, e)``: a pool containing every block's, contributions below every block's,
        and the limits on the tuples that are not dominated (``Relaxed``).

        For a single block (``e = s + 1``) pool and contributions are the block's own.
        """
        ...


LeafSearch = Callable[[int, int, IntArray, FloatArray], Hit | None]  # (block, floor, group ub, edges)


class TreeSearch:
    """Best-first search over the tree of nodes for the literal answer: the first block reaching the best.

    A starting node is bounded with few groups of ``t`` first (cheap, loose), and again with
    more groups, one resolution at a time, before it is split or, a single block, searched;
    the children of a split start at the finest. Bounds are computed in batches, for every
    memory budget at once, and kept: the searches for several budgets (Algorithm 1's pairs)
    share them.
    """

    BATCH = 16  # nodes taken from the heap at a time (bounded together)

    def __init__(
        self,
        fam: Family,
        users: Users,
        edges: Sequence[FloatArray],
        budgets: Budgets,
        strict: Callable[[FloatArray], BoolArray],
        cuts: IntArray,
    ) -> None:
        """``edges``: the groups of ``t`` (:func:`group_edges`) per resolution, coarse to fine;
        ``cuts``: the nodes the search starts from, ``[cuts[j], cuts[j + 1])``."""
        self.fam, self.users, self.budgets, self.strict = fam, users, budgets, strict
        self.edges = list(edges)
        cuts = np.unique(np.concatenate(([0], cuts, [fam.size])))
        self.start = (cuts[:-1], cuts[1:])
        self.known: dict[tuple[int, int, int], tuple[IntArray, IntArray]] = {}
        self.nodes = 0  # node bounds computed

    def bounds(self, s: IntArray, e: IntArray, res: int) -> tuple[list[IntArray], IntArray]:
        """``([ub[group, q] per node], lb[node, q])`` of nodes ``[s, e)`` at resolution ``res``."""
        keys = [(a, b, res) for a, b in zip(s.tolist(), e.tolist(), strict=True)]
        todo = [j for j, key in enumerate(keys) if key not in self.known]
        if todo:
            ts, te = s[todo], e[todo]
            rel = self.fam.relax(ts, te)
            leaf = te - ts == 1
            real = leaf.copy()
            if leaf.any():
                real[leaf] = self.strict(rel.cost[leaf])
            ub, lb = group_bounds(self.users, self.edges[res], rel, self.budgets, real)
            self.nodes += len(todo)
            for j, jj in enumerate(todo):
                self.known[keys[jj]] = (ub[j], lb[j])
        got = [self.known[key] for key in keys]
        return [g[0] for g in got], np.array([g[1] for g in got]).reshape(len(keys), self.budgets.qs.size)

    def top(self, res: int = 0) -> IntArray:
        """Per budget: the largest bound of the starting nodes at resolution ``res`` (no ``d*`` is above)."""
        ubs, _ = self.bounds(*self.start, min(res, len(self.edges) - 1))
        return np.stack(ubs).max(axis=(0, 1)) if ubs else np.zeros(self.budgets.qs.size, dtype=np.int64)

    def run(
        self, i: int, floor: int, search: LeafSearch, seeds: Sequence[tuple[int, int]] = ()
    ) -> tuple[int, Hit] | None:
        """The first block (in order) whose best ``d*`` at budget ``i`` is the best of all, and its hit;
        None if no ``d*`` is above ``floor`` (see :class:`Walk`)."""
        walk = Walk(self, i, floor, search, seeds)
        while not walk.done:
            walk.step()
        return walk.result()


class Walk:
    """One search of a :class:`TreeSearch`, a batch at a time: the first block reaching the best ``d*``.

    The incumbent is a value and the first block known to reach it, ``at``: a node after
    ``at`` matters only if it can beat the value, a node up to ``at`` if it can reach it
    (the literal answer is the first tuple reaching the best). A block known to reach the
    value only by a lower bound (a seed, or a node's lower bound) is searched like any other.
    """

    def __init__(
        self,
        tree: TreeSearch,
        i: int,
        floor: int,
        search: LeafSearch,
        seeds: Sequence[tuple[int, int]] = (),
        start: tuple[IntArray, IntArray] | None = None,
    ) -> None:
        """Budget ``i``; only ``d*`` above ``floor`` count. ``search(block, f, group_ub, edges)`` must
        return that block's first tuple beating ``f`` (None if none); ``seeds`` are pairs
        ``(d, block)``: an actual tuple of ``block`` has ``d* = d``. ``start``: the nodes to
        start from, if not the tree's (the blocks outside them must not beat ``floor``)."""
        self.tree, self.i, self.search = tree, i, search
        self.value, self.at = floor + 1, tree.fam.size  # "reach floor + 1", no block known
        self.best: Hit | None = None
        self.heap: list[tuple[int, int, int, int]] = []
        for d, block in seeds:
            self._known(d, block)
        if start is None or start[0].size:
            self._push(*(tree.start if start is None else start), 0)

    def _known(self, d: int, block: int) -> None:
        if d > self.value or (d == self.value and block < self.at):
            self.value, self.at, self.best = d, block, None

    def raise_floor(self, floor: int) -> None:
        """Only ``d*`` above ``floor`` count from now on."""
        if floor + 1 > self.value:
            self.value, self.at, self.best = floor + 1, self.tree.fam.size, None

    @property
    def done(self) -> bool:
        return not self.heap or -self.heap[0][0] < self.value

    @property
    def bound(self) -> int:
        """An upper bound on the best ``d*``: the found one, or what a node left may reach."""
        top = -self.heap[0][0] if self.heap else 0
        found = self.best.served if self.best else self.value - 1
        return max(found, top) if not self.done else found

    def result(self) -> tuple[int, Hit] | None:
        return (self.at, self.best) if self.best is not None else None

    def _push(self, s: IntArray, e: IntArray, res: int) -> None:
        i = self.i
        ubs, lb = self.tree.bounds(s, e, res)
        low = int(lb[:, i].max(initial=0))
        if low > 0:
            self._known(low, int(s[lb[:, i] == low].min()))
        top = np.stack(ubs)[:, :, i].max(axis=1)
        for j in np.flatnonzero(top >= self.value).tolist():
            heapq.heappush(self.heap, (-int(top[j]), int(s[j]), int(e[j]), res))

    def step(self) -> None:
        """Take a batch of the most promising nodes: search blocks, bound finer, or split."""
        tree, heap, top = self.tree, self.heap, len(self.tree.edges) - 1
        batch: list[tuple[int, int, int]] = []
        while heap and len(batch) < tree.BATCH and -heap[0][0] >= self.value:
            u, a, b, res = heapq.heappop(heap)
            if -u >= (self.value + 1 if a > self.at else self.value):
                batch.append((a, b, res))
        for a, _, _ in sorted(x for x in batch if x[1] - x[0] == 1 and x[2] == top):
            f = self.value if a > self.at else self.value - 1
            group_ub = tree.bounds(np.array([a]), np.array([a + 1]), top)[0][0][:, self.i]
            if group_ub.max() > f:
                hit = self.search(a, f, group_ub, tree.edges[top])
                if hit is not None:
                    self.value, self.at, self.best = hit.served, a, hit
        for res in range(top):  # bound again, finer
            finer = [x for x in batch if x[2] == res]
            if finer:
                self._push(np.array([x[0] for x in finer]), np.array([x[1] for x in finer]), res + 1)
        inner = [x for x in batch if x[1] - x[0] > 1 and x[2] == top]
        if inner:
            s, e = np.array([x[0] for x in inner]), np.array([x[1] for x in inner])
            m = tree.fam.split(s, e)
            # a split's children rarely fail where their parent passed: bound them finest at once
            self._push(np.concatenate((s, m)), np.concatenate((m, e)), top)
