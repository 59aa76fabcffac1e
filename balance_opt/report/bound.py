"""Theorem 1's bound beside the worst ratios known: a section of every report (docs/worst-case.md).

:data:`WORST_KNOWN` holds, per heuristic, the smallest ``served / optimum`` the suite has
found on the paper's grids and the library instance that shows it; the test suite re-solves
each instance and checks the numbers, so the table cannot drift from the files.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

# The configurations Theorem 1 speaks of (the baselines and ablations have no guarantee).
GUARANTEED = ("balance", "balance-literal")
# Where the instances of WORST_KNOWN live, as reports name it: the repository's path, so that a
# report's bytes do not depend on where the package is installed (the files: adversarial_set()).
ADVERSARIAL_SET = "instances/paper/adversarial"


def adversarial_set() -> Path:
    """The folder of WORST_KNOWN's instances: the installed library's ``adversarial`` set."""
    from balance_opt.data import library_dir

    return library_dir() / "adversarial"


@dataclass(frozen=True)
class WorstKnown:
    """The worst ratio found for one heuristic against P1's proved optimum, on the paper's grids."""

    solver: str
    served: int
    optimum: int
    instance: str  # a file stem of the adversarial set
    how: str

    @property
    def ratio(self) -> float:
        return self.served / self.optimum


WORST_KNOWN: tuple[WorstKnown, ...] = (
    WorstKnown("balance", 95, 190, "tight-190-s0001", "theorem1-tight family, any m <= 95: exactly 1/2"),
    WorstKnown("balance-literal", 1, 2, "tight-2-s0001", "theorem1-tight family (the same algorithm)"),
    WorstKnown("ad-only", 0, 6, "adversary-ad-only-p1-K10-s0001", "the adversary, 150 s"),
    WorstKnown("sd-only", 0, 10, "adversary-sd-only-p1-K10-s0001", "the adversary, 150 s"),
    WorstKnown("ecra", 0, 8, "adversary-ecra-p1-K10-s0001", "the adversary, 150 s"),
    WorstKnown("ema", 2, 5, "adversary-ema-p1-K10-s0001", "the adversary, 150 s"),
    WorstKnown("ecrma", 0, 8, "adversary-ecrma-p1-K10-s0001", "the adversary, 150 s"),
)


def worst_known(solver: str) -> WorstKnown | None:
    return next((w for w in WORST_KNOWN if w.solver == solver), None)


def bound_section(summary: pd.DataFrame) -> list[str]:
    """Markdown: each configuration's worst ratio in these runs, the 1/2 bound, the worst known."""
    rows = []
    for config, ratio in zip(summary["config"], summary["ratio_min"], strict=True):
        known = worst_known(str(config))
        here = "-" if pd.isna(ratio) else f"{float(ratio):.3f}"
        bound = "1/2" if config in GUARANTEED else "none"
        worst = (
            "-"
            if known is None
            else f"{known.served}/{known.optimum} = {known.ratio:.3f} (`{known.instance}`)"
        )
        rows.append(f"| `{config}` | {here} | {bound} | {worst} |")
    if not rows:
        return []
    return [
        "## Against Theorem 1's bound",
        "",
        "The smallest `served / optimum` (P1) of each configuration in these runs, beside the 1/2 that "
        "Theorem 1 guarantees BALANCE (against P2's optimum on the same grids, and against P1's when 0 "
        "and 1 are in both grids; the baselines and ablations have no guarantee) and the worst ratio "
        f"known on the paper's grids, with the library instance that shows it (`{ADVERSARIAL_SET}`; "
        "docs/worst-case.md, reports/worst-case/).",
        "",
        "| configuration | worst ratio here | bound | worst known |",
        "|---|---|---|---|",
        *rows,
        "",
    ]
