"""Speculative decoding under random draft acceptance: exact iteration-count
distributions, Monte-Carlo of schedules and robust iteration levels (docs/stochastic.md)."""

from balance_opt.stochastic.distribution import (
    batch_user_level,
    iterations_distribution,
    iterations_quantile,
    quantile_levels,
    robustify,
)
from balance_opt.stochastic.simulate import Trials, simulate, summary

__all__ = [
    "Trials",
    "batch_user_level",
    "iterations_distribution",
    "iterations_quantile",
    "quantile_levels",
    "robustify",
    "simulate",
    "summary",
]
