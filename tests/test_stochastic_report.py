"""The random-acceptance experiment: its report from rows, and (slow) the whole command."""

from __future__ import annotations

import itertools
from pathlib import Path

import pandas as pd
import pytest

from balance_opt.cli import main
from balance_opt.stochastic.experiment import VARIANTS, Settings
from balance_opt.stochastic.report import write_report


def fake_rows() -> pd.DataFrame:
    """Rows in the builder's shape with known numbers: goodput = served - miss per variant."""
    rows = []
    miss = {"nominal": 2.0, "q0.9": 1.0, "q0.95": 0.5, "q0.99": 0.0, "batch-q0.95": 0.25}
    for preset, k, seed, v, (role, solver) in itertools.product(
        ("fig4", "fig5"),
        (20, 30),
        (1, 2),
        VARIANTS,
        (("balance", "balance"), ("reference", "milp-highs-10s")),
    ):
        if role == "reference" and not v.reference:
            continue
        served = k / 2 - (0 if v.quantile is None else 1)
        good = served - miss[v.label]
        rows.append(
            {"preset": preset, "K": k, "seed": seed, "variant": v.label, "solver": solver, "role": role,
             "instance": f"{preset}-k-{k}-s{seed}-{v.label}", "status": "time_limit", "runtime_s": 10.0,
             "served": served, "goodput_mean": good, "goodput_p05": good - 1,
             "deadline_miss_rate": miss[v.label] / served, "p_all_meet": 0.5, "p_sd_within_plan": 0.9,
             "p_memory_overflow": 0.0}
        )  # fmt: skip
    return pd.DataFrame(rows)


def test_report_from_rows(tmp_path: Path) -> None:
    st = Settings(out=tmp_path, command="balance-opt stochastic-experiment --seeds 2", reference="milp-highs")
    readme = write_report(fake_rows(), st).read_text()
    assert (tmp_path / "figures" / "goodput-vs-k.png").stat().st_size > 0
    assert "balance-opt stochastic-experiment --seeds 2" in readme
    assert "proved optimal in 0 of 32 solves" in readme
    assert "best schedule found by milp-highs in 10 s" in readme
    # K = 20 and 30 promise 10 and 15 nominally (mean 12.5) and deliver 2 fewer (16.0%)
    assert "promise 12.50 users on average and deliver 10.50 (16.0% fewer)" in readme
    assert "| balance | nominal | 12.50 | 10.50 | 9.50 |" in readme
    assert "| 30 | milp-highs-10s | q0.99 | 14.00 | 14.00 | 13.00 | 0.000 |" in readme
    assert "batch-q0.95 | 11.50 | 11.25" in readme
    back = pd.read_csv(tmp_path / "results.csv")
    assert len(back) == 72
    assert set(pd.read_csv(tmp_path / "summary.csv")["variant"]) == {v.label for v in VARIANTS}


@pytest.mark.slow
def test_stochastic_experiment_command(tmp_path: Path) -> None:
    out = tmp_path / "report"
    argv = ["stochastic-experiment", "--out", str(out), "--seeds", "1", "--users", "6", "--reference",
            "balance-literal", "--trials", "50"]  # fmt: skip
    assert main(argv) == 0
    df = pd.read_csv(out / "results.csv")
    assert len(df) == 2 * (len(VARIANTS) + sum(v.reference for v in VARIANTS))
    assert (df["goodput_mean"] <= df["served"]).all()
    # the reference here is the same algorithm: the same schedules, the same simulated numbers
    ref = df[df["role"] == "reference"].set_index(["preset", "variant"])["goodput_mean"]
    own = df[df["role"] == "balance"].set_index(["preset", "variant"])["goodput_mean"]
    assert (ref == own.loc[ref.index]).all()
    assert main(argv) == 0  # resumed: every solve is already there
