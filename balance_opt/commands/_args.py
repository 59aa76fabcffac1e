"""Argument types shared by the subcommands: numbers checked when the command line is parsed.

A bad value is an argparse error (one line, exit status 2) naming the value and the range,
before any file is read or any solve starts. The ranges are the solvers' own
(:data:`~balance_opt.solvers.base.MAX_SECONDS`, :data:`~balance_opt.solvers.base.MAX_THREADS`).
"""

from __future__ import annotations

import argparse
import math

from balance_opt.solvers.base import MAX_INT, MAX_SECONDS

MAX_JOBS = 1024  # parallel solves of one command: far above any machine's cores
MAX_FILES = 100_000  # instances one command writes
MAX_USERS = 1_000_000  # users of one generated instance (K = 100,000 takes about 20 MB)


def seconds(text: str) -> float:
    """A time limit: a finite number of seconds in (0, MAX_SECONDS]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or not 0 < value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"must be a finite number of seconds in (0, {MAX_SECONDS:g}], got {text!r}"
        )
    return value


def _integer(text: str, low: int, high: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"must be an integer in [{low}, {high}], got {text!r}")
    return value


def jobs(text: str) -> int:
    """A count of parallel solves in [1, MAX_JOBS]."""
    return _integer(text, 1, MAX_JOBS)


def count(text: str) -> int:
    """A positive count (seeds, instances, users, evaluations) within int64."""
    return _integer(text, 1, MAX_INT)


def files(text: str) -> int:
    """A count of instance files to write, in [1, MAX_FILES]."""
    return _integer(text, 1, MAX_FILES)


def users(text: str) -> int:
    """A number of users K of a generated instance, in [1, MAX_USERS]."""
    return _integer(text, 1, MAX_USERS)


def seed(text: str) -> int:
    """A seed: an integer in [0, 2^63 - 1]."""
    return _integer(text, 0, MAX_INT)
