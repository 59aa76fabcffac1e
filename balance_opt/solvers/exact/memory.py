"""The least KV memory of a feasible one-mode set of each size, and the bound it gives
when both modes share the free memory (21d).

Fix one mode's thresholds: for AD the tightest limit ``DA`` and the padding ``L1``, for
SD ``DS``, ``L3`` and ``L4``. Every candidate's time cost ((26), (30)) and KV bytes
((15), (16)) then grow with its own length key (``LO`` for AD, ``N`` for SD), and the
mode's fixed term grows with the largest key (``beta^L L2`` (17), ``(beta^L + LD
beta^S) Nmax`` (19)). So the n candidates with the smallest keys are at once the
cheapest, the lightest and the smallest maximum: when any n-set of these thresholds
fits in time, this prefix fits too, with no more memory. The least memory of a feasible
n-set of a box is therefore at least the smallest prefix memory over the box's
thresholds where the prefix fits (uploads left out: a relaxation). The AD and SD users
of a schedule need ``least_AD(a) + least_SD(s) <= room`` together, which bounds
``a + s`` where the single-mode caps (each with all of the memory) do not see it.

Every limit value of the box is visited, with every padding value at once (one row
each). ``L4`` is taken as one range: the candidates of its high end at the costs and
memory of its low end, a relaxation (visiting every ``L4`` value as well cost about 30
times as much and lowered the bounds of two z in nine, by one, at fig5 K = 70 seed 1).
The search uses these once per z (:func:`z_bounds`); per box, even with one limit
value standing for all, they cost more time than the LPs they saved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from balance_opt.instance import FloatArray
from balance_opt.model import ad_user_memory, sd_user_memory
from balance_opt.solvers.common.bounds import most_together
from balance_opt.solvers.exact.boxes import Box, ZData
from balance_opt.solvers.exact.pairs import LimitPairs

# the most blocks of limit values and of paddings per z: one row per value up to this
# many values (K <= 256 on the paper's presets). At fig4 K = 1000, z = 0.5, 64 blocks
# took 0.18 s and raised the bound from 143 to 147, 128 blocks 0.78 s (144), 256 blocks
# 3.6 s (143, as with a row per value)
BLOCKS = 256


def _prefix_least(
    key: NDArray[Any],
    cost: FloatArray,
    mem: FloatArray,
    member: NDArray[np.bool_],
    budget: float,
    per_key: float,
    out: FloatArray,
) -> None:
    """Fold into ``out[n]`` the least prefix memory of n members that fits, over the rows
    (one padding value each) of ``cost`` / ``mem`` / ``member``; columns sorted by ``key``."""
    spent = np.cumsum(np.where(member, cost, 0.0), axis=1)
    held = np.cumsum(np.where(member, mem, 0.0), axis=1)
    count = np.cumsum(member, axis=1)
    fits = member & (spent + per_key * key[None, :] <= budget)
    np.minimum.at(out, count[fits], held[fits])


def least_ad(
    zd: ZData, box: Box, blocks: int | None = None, per_limit: FloatArray | None = None
) -> FloatArray:
    """``out[n]``: a lower bound on the KV bytes of any time-feasible n-user AD set of
    ``box`` (``inf`` where there is none; ``out[0] = 0``). With ``blocks``, the ``DA`` and
    ``L1`` ranges are cut into at most that many blocks each (:func:`_blocks`). With
    ``per_limit`` (one row per block of ``DA``, filled with ``inf``), row b becomes the
    curve of the sets whose tightest limit lies in block b; ``out`` is their minimum."""
    inst, v = zd.inst, zd.values
    (da0, da1), (l10, l11) = box[0], box[1]
    lo_all = inst.output_tokens
    out = np.full(zd.ad.size + 1, np.inf)
    out[0] = 0.0
    if zd.ad.size == 0:
        return out
    padded = zd.ad[inst.input_tokens[zd.ad] <= v["L1"][l11]]
    pads = _blocks(l10, l11, blocks)
    for b, (i, j) in enumerate(_blocks(da0, da1, blocks)):
        users = padded[zd.limit[padded] >= v["DA"][i]]
        if users.size == 0:
            continue
        users = users[np.argsort(lo_all[users], kind="stable")]
        budget = zd.budget["DA"][i : j + 1].max()  # the loosest limit of the block
        member = inst.input_tokens[users][None, :] <= v["L1"][pads[:, 1]][:, None]
        # every member padded to the block's shortest padding, so that cost and memory
        # still grow with the key alone (the prefix argument)
        cost = zd.ad_cost[np.ix_(pads[:, 0], users)]
        mem = ad_user_memory(inst, v["L1"][pads[:, :1]], lo_all[users][None, :])  # (15)
        _prefix_least(lo_all[users], cost, mem, member, budget, inst.llm.beta_s, _row(out, per_limit, b))
    return _folded(out, per_limit)


def least_sd(
    zd: ZData, box: Box, blocks: int | None = None, per_limit: FloatArray | None = None
) -> FloatArray:
    """As :func:`least_ad` for SD: thresholds ``DS``, ``L3``, ``L4``; key ``N``."""
    inst, v = zd.inst, zd.values
    (ds0, ds1), (l30, l31), (l40, l41) = box[2], box[3], box[4]
    per_key = inst.llm.beta_s + inst.server.draft_length * inst.slm.beta_s
    nk = inst.sd_iterations
    out = np.full(zd.sd.size + 1, np.inf)
    out[0] = 0.0
    if zd.sd.size == 0:
        return out
    l4 = float(v["L4"][l40])  # costs and memory at the low end, candidates of the high end
    fit = (inst.input_tokens[zd.sd] <= v["L3"][l31]) & (inst.accepted_drafts[zd.sd] <= v["L4"][l41])
    padded = zd.sd[fit]
    pads = _blocks(l30, l31, blocks)
    for b, (i, j) in enumerate(_blocks(ds0, ds1, blocks)):
        users = padded[zd.limit[padded] >= v["DS"][i]]
        if users.size == 0:
            continue
        users = users[np.argsort(nk[users], kind="stable")]
        budget = zd.budget["DS"][i : j + 1].max() - inst.llm.beta_s
        member = inst.input_tokens[users][None, :] <= v["L3"][pads[:, 1]][:, None]
        rows = np.ix_(pads[:, 0], users)
        cost = zd.sd_cost0[rows] + l4 * zd.sd_cost1[rows]  # (30)
        mem = sd_user_memory(inst, v["L3"][pads[:, :1]], l4, nk[users][None, :])  # (16)
        _prefix_least(nk[users], cost, mem, member, budget, per_key, _row(out, per_limit, b))
    return _folded(out, per_limit)


def _row(out: FloatArray, per_limit: FloatArray | None, b: int) -> FloatArray:
    return out if per_limit is None else per_limit[b]


def _folded(out: FloatArray, per_limit: FloatArray | None) -> FloatArray:
    """``out``, or the minimum of the per-limit rows (``out[0] = 0`` either way)."""
    if per_limit is None or per_limit.size == 0:
        return out
    return np.minimum(out, per_limit.min(axis=0))


def _blocks(lo: int, hi: int, blocks: int | None) -> NDArray[np.int64]:
    """The value indices ``lo..hi`` as consecutive blocks ``[first, last]`` (rows), at
    most ``blocks`` of them (one per value without ``blocks``).

    A block of tightest limits stands for its values with the candidates of its tightest
    and the budget of its loosest; a block of paddings with the candidates of its longest,
    all padded to its shortest (costs (26), (30) and bytes (15), (16) only grow with the
    padding, and one padding per row keeps them growing with the key alone): every set of
    a value of the block is counted, so the curve stays a lower bound, and the work drops
    from one row per limit and padding pair to one per pair of blocks (at K = 1000,
    about a thousand of each)."""
    n = hi - lo + 1
    count = n if blocks is None else max(1, min(n, blocks))
    starts = lo + (np.arange(count) * n) // count
    return np.column_stack((starts, np.append(starts[1:] - 1, hi))).astype(np.int64)


def most_within(least: FloatArray, room: float) -> int:
    """The largest n with ``least[n] <= room``: a bound on one mode's users alone."""
    return int(np.flatnonzero(least <= room).max())


@dataclass(frozen=True)
class FirstBounds:
    """One z's bounds before any LP (:func:`first_bounds`)."""

    cap_a: int  # AD's most users alone, with all of the memory
    cap_s: int  # SD's
    memory: int  # both modes within the memory they share
    pairs: LimitPairs  # per pair of tightest limits (:mod:`.pairs`)


def first_bounds(zd: ZData, blocks: int | None = None) -> FirstBounds:
    """Per z: each mode's most users alone (with all of the memory; the exact optima of
    Propositions 4 and 5 but for the uploads left out), the most users of both modes
    together under the shared memory, and the limit-pair bound (every limit value
    visited, up to ``blocks`` blocks, ``BLOCKS`` by default)."""
    box, blocks = zd.full(), BLOCKS if blocks is None else blocks
    blocks_a, blocks_s = _blocks(*box[0], blocks), _blocks(*box[2], blocks)
    rows_a = np.full((len(blocks_a) if zd.ad.size else 0, zd.ad.size + 1), np.inf)
    rows_s = np.full((len(blocks_s) if zd.sd.size else 0, zd.sd.size + 1), np.inf)
    la, ls = least_ad(zd, box, blocks, rows_a), least_sd(zd, box, blocks, rows_s)
    room = zd.memory_loose
    cap_a, cap_s = most_within(la, room), most_within(ls, room)
    memory = most_together(la[: cap_a + 1], ls[: cap_s + 1], room)
    pairs = LimitPairs(zd, blocks_a, rows_a[:, : cap_a + 1], blocks_s, rows_s[:, : cap_s + 1], room)
    return FirstBounds(cap_a, cap_s, memory, pairs)


def z_bounds(zd: ZData) -> tuple[int, int, int]:
    """:func:`first_bounds` without the pairs: the two caps and the shared-memory bound."""
    fb = first_bounds(zd)
    return fb.cap_a, fb.cap_s, fb.memory


__all__ = ["FirstBounds", "first_bounds", "least_ad", "least_sd", "most_within", "z_bounds"]
