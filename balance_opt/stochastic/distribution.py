"""The exact distribution of a user's SD iteration count under random acceptance.

In every SD iteration the LLM checks the user's ``LD`` drafts in order and accepts
each with probability ``A`` until the first rejection, so the accepted count ``G``
has ``P(G >= j) = A^j`` for ``j <= LD`` and the iteration emits ``G + 1`` tokens
(``E[G] = LA``, docs/model.md section 2). The iteration count ``N`` is the first ``n`` at
which the emitted tokens reach ``LO``; a dynamic program over the tokens emitted so
far gives its distribution exactly.
"""

from __future__ import annotations

import math

import numpy as np

from balance_opt import crmath
from balance_opt.instance import FloatArray, Instance, IntArray

# A cumulative probability this close below a quantile level still counts as reaching
# it: the DP's sums carry rounding noise of that order.
CDF_TOL = 1e-12


def tokens_per_iteration(acceptance: float, draft_length: int) -> FloatArray:
    """``pmf[x] = P(an iteration emits x tokens)`` for ``x = 0..LD+1`` (``pmf[0] = 0``)."""
    a, ld = float(acceptance), int(draft_length)
    pmf = np.zeros(ld + 2)
    # G = j < LD accepted drafts then a rejection; G = LD when every draft is accepted
    # powers of A correctly rounded (crmath): the same pmf on every CPU
    pmf[1 : ld + 1] = (1.0 - a) * crmath.ipowers(a, ld)
    pmf[ld + 1] = crmath.ipow(a, ld)
    return pmf


def iterations_distribution(output_tokens: int, acceptance: float, draft_length: int) -> FloatArray:
    """``p[n] = P(N = n)`` for ``n = 0..max`` (``p[0] = 0``; sums to 1).

    ``f[t]`` is the probability of having emitted ``t < LO`` tokens after the
    iterations so far without being done; every iteration emits at least one token,
    so ``N <= LO`` and the DP ends after at most ``LO`` steps.
    """
    lo, ld = int(output_tokens), int(draft_length)
    if lo < 1 or ld < 1 or not 0.0 < acceptance < 1.0:
        raise ValueError(
            f"need output_tokens >= 1, draft_length >= 1, 0 < acceptance < 1; got {lo}, {ld}, {acceptance}"
        )
    pmf = tokens_per_iteration(acceptance, ld)
    # tail[r] = P(X >= r) for r = 0..ld+2: the chance that one iteration finishes a user r tokens short
    tail = np.concatenate((np.cumsum(pmf[::-1])[::-1], [0.0]))
    short = np.minimum(lo - np.arange(lo), ld + 2)  # tokens still missing at each state t
    f = np.zeros(lo)
    f[0] = 1.0
    p = np.zeros(lo + 1)
    n = 0
    while n < lo and f.any():
        n += 1
        p[n] = math.fsum((f * tail[short]).tolist())  # not a BLAS dot: fixed rounding
        g = np.zeros(lo)
        for x in range(1, min(ld + 1, lo - 1) + 1):
            g[x:] += f[: lo - x] * pmf[x]
        f = g
    return p[: n + 1]


def iterations_quantile(p: FloatArray, q: float) -> int:
    """The smallest ``n`` with ``P(N <= n) >= q`` (the largest possible ``n`` for ``q = 1``)."""
    if not 0.0 < q <= 1.0:
        raise ValueError(f"quantile must be in (0, 1], got {q}")
    cdf = np.cumsum(p)
    hit = np.flatnonzero(cdf >= q - CDF_TOL)
    return int(hit[0]) if hit.size else len(p) - 1


def user_distributions(inst: Instance) -> list[FloatArray]:
    """The iteration-count distribution of every user of ``inst``, in user order."""
    ld = inst.server.draft_length
    return [
        iterations_distribution(lo, a, ld)
        for lo, a in zip(inst.output_tokens.tolist(), inst.acceptance.tolist(), strict=True)
    ]


def batch_user_level(q: float, batch_users: int) -> float:
    """Per-user level ``q^(1/m)``: with ``m`` independent SD users each within its own
    level with probability ``q^(1/m)``, all of them are within with probability ``q``."""
    if batch_users < 1:
        raise ValueError(f"batch_users must be >= 1, got {batch_users}")
    return crmath.pow(q, 1.0 / batch_users)


def quantile_levels(inst: Instance, q: float) -> IntArray:
    """Each user's ``q``-quantile of ``N`` (the ``sd_iterations`` a robust plan uses)."""
    levels = [iterations_quantile(p, q) for p in user_distributions(inst)]
    return np.array(levels, dtype=np.int64)


def robustify(inst: Instance, q: float, batch_users: int | None = None) -> Instance:
    """``inst`` with every user's ``sd_iterations`` at its ``q``-quantile.

    With ``batch_users = m`` the level is the ``q^(1/m)``-quantile instead, so that an
    SD batch of up to ``m`` users all finish within their levels with probability at
    least ``q`` (product rule; the users' draws are independent). The prefix lengths
    need no field of their own: every consumer computes ``P_{N_k}`` from ``N_k``.
    """
    level = q if batch_users is None else batch_user_level(q, batch_users)
    levels = quantile_levels(inst, level)
    what = f"q = {q:g}" if batch_users is None else f"q = {q:g} for SD batches of up to {batch_users} users"
    note = f"SD iteration counts at robust levels ({what})"
    suffix = f"-q{q:g}" if batch_users is None else f"-q{q:g}-b{batch_users}"
    return inst.replace(
        name=inst.name + suffix,
        sd_iterations_override=tuple(int(n) for n in levels),
        description=note if inst.description is None else f"{inst.description}; {note}",
    )


def expected_iterations(p: FloatArray) -> float:
    """``E[N]`` of a distribution from :func:`iterations_distribution`."""
    return math.fsum((np.arange(len(p)) * p).tolist())


__all__ = [
    "batch_user_level",
    "expected_iterations",
    "iterations_distribution",
    "iterations_quantile",
    "quantile_levels",
    "robustify",
    "tokens_per_iteration",
    "user_distributions",
]
