"""Instances of the library that a search found, rather than a generator wrote.

Each is the ``worst.json`` of one ``balance-opt adversary`` run (docs/worst-case.md), copied
into its set folder under its own name. The run is reproducible: the same command (a seed
and a budget in evaluations) writes the same bytes with the same code.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Found:
    """An instance another command wrote (kept as found): its stem and that command."""

    stem: str
    command: str


def _adversary(solver: str, users: int, evals: int, extra: str = "") -> Found:
    """The worst find of ``balance-opt adversary`` for ``solver``, seed 1, reproduced by its evaluations."""
    grids = "-free" if "--grids free" in extra else ""
    command = f"balance-opt adversary --solver {solver} --users {users} --seed 1 --budget-evals {evals}"
    return Found(f"adversary-{solver}-p1{grids}-K{users}-s0001", f"{command}{extra} --out DIR")


# The worst instance each run found (docs/worst-case.md: runs of 300 s for balance and 150 s for
# the others at K = 10, 120 s off the paper's grids at K = 8; ``--budget-evals`` is the
# evaluation that found it, which writes the same worst.json).
ADVERSARY_FINDS: tuple[Found, ...] = (
    _adversary("balance", 10, 242),
    _adversary("ad-only", 10, 506),
    _adversary("sd-only", 10, 1344),
    _adversary("ecra", 10, 556),
    _adversary("ema", 10, 123),
    _adversary("ecrma", 10, 137),
    _adversary("balance", 8, 107, " --grids free --min-optimum 1"),
)
