"""The worst ratios every report shows, and the worst-case report (docs/worst-case.md)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from balance_opt.batch.table import frame
from balance_opt.cli import main
from balance_opt.io import read_instance
from balance_opt.library.reference import read_reference
from balance_opt.report import build_report
from balance_opt.report.bound import WORST_KNOWN
from balance_opt.solvers import get_solver
from tests.test_report import tiny_rows

ROOT = Path(__file__).parent.parent
ADVERSARIAL = ROOT / "instances" / "paper" / "adversarial"


@pytest.mark.parametrize("known", WORST_KNOWN, ids=lambda w: w.solver)
def test_the_worst_ratios_known_are_the_librarys(known: object) -> None:
    """Each ratio every report quotes: the solver re-run, the optimum proved in the library."""
    inst = read_instance(ADVERSARIAL / f"{known.instance}.json")  # type: ignore[attr-defined]
    res = get_solver(known.solver).solve(inst)  # type: ignore[attr-defined]
    assert res.feasible
    assert res.served == known.served  # type: ignore[attr-defined]
    row = read_reference(ADVERSARIAL)[known.instance]  # type: ignore[attr-defined]
    assert (row["status"], int(row["best_known"])) == ("optimal", known.optimum)  # type: ignore[attr-defined]


def test_every_report_sets_the_worst_ratio_beside_the_bound(tmp_path: Path) -> None:
    readme = build_report(frame(tiny_rows()), tmp_path / "r").read_text()
    section = readme.split("## Against Theorem 1's bound", 1)[1]
    balance = next(line for line in section.splitlines() if line.startswith("| `balance` |"))
    assert "| 1/2 |" in balance
    assert "95/190 = 0.500" in balance


def test_worst_case_report(tmp_path: Path) -> None:
    out = tmp_path / "wc"
    assert main(["worst-case-report", "--out", str(out), "--m", "1,3"]) == 0
    text = (out / "README.md").read_text()
    assert "serves exactly `m` users" in text
    with (out / "family.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["m"], r["balance"], r["optimum"]) for r in rows] == [("1", "1", "2")] * 3 + [
        ("3", "3", "6")
    ] * 3
    for name in ("family-ratio", "library-ratios"):
        assert (out / "figures" / f"{name}.svg").is_file()
    assert (out / "adversary.csv").is_file()
    assert main(["worst-case-report", "--out", str(out), "--m", "96"]) == 2
