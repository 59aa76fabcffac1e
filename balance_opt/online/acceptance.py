"""Each user's own draft-acceptance stream (docs/online.md, "Data").

User ``k`` of a workload seeded ``s`` draws its uniforms from
``numpy.random.default_rng([s, k])``, one per SD iteration; iteration ``n`` accepts
``G = #{j in 1..LD : u_n < A_k^j}`` drafts and emits ``G + 1`` tokens. The stream belongs
to the user, not to a batch: the realized iteration count is the same whichever batch the
user joins and whichever policy put it there, so policies are compared on the same luck and
the hindsight bound may use it.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from balance_opt import crmath


def user_rng(seed: int, user: int) -> np.random.Generator:
    """The stream of the user at workload position ``user``."""
    return np.random.default_rng([seed, user])


def emitted_tokens(
    acceptance: float, draft_length: int, length: int, rng: np.random.Generator
) -> NDArray[np.int64]:
    """Tokens emitted after each iteration ``1..N`` until at least ``length`` (``E[N] >= length``).

    The uniforms are drawn in chunks; a generator's float64 draws do not depend on the chunk
    sizes, so the result is that of drawing one uniform per iteration.
    """
    # A^1..A^LD correctly rounded: the same comparisons on every CPU
    powers = crmath.ipowers(acceptance, draft_length + 1)[1:]
    mean_step = 1.0 + float(powers.sum())
    chunks: list[NDArray[np.int64]] = []
    total = 0
    while total < length:
        size = max(8, math.ceil(1.25 * (length - total) / mean_step) + 4)
        u = rng.random(size)
        steps = (u[:, None] < powers[None, :]).sum(axis=1, dtype=np.int64) + 1
        cum = total + np.cumsum(steps)
        done = int(np.searchsorted(cum, length))  # first index with cum >= length
        if done < size:
            chunks.append(cum[: done + 1])
            break
        chunks.append(cum)
        total = int(cum[-1])
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int64)
