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


ADVERSARY_FINDS: tuple[Found, ...] = ()
