"""Proved optima from the benchmark library, for reports on the library's own instances.

A run of heuristics alone on library instances has no ``optimal`` row of its own; the
library's reference tables hold proved optima for most of them. They are matched by the
instance file's sha256, so only the very bytes the reference was proved on are matched.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from balance_opt.library.reference import read_reference
from balance_opt.library.verify import set_folders


def library_optima(paths: Iterable[Path]) -> dict[str, int]:
    """``{instance sha256: proved optimum}`` of every ``optimal`` reference row under ``paths``."""
    out: dict[str, int] = {}
    for folder in set_folders(paths):
        for row in read_reference(folder).values():
            if row["status"] == "optimal":
                out[row["sha256"]] = int(row["best_known"])
    return out


def attach_library_optima(df: pd.DataFrame, optima: dict[str, int]) -> tuple[pd.DataFrame, int]:
    """``df`` with a ``library_optimum`` column, and how many of its instances got one."""
    column = df["instance_sha256"].map(optima).astype(float)  # NaN where the library has none
    matched = int(df.loc[column.notna(), "instance_sha256"].nunique())
    return df.assign(library_optimum=column), matched
