"""The paper's experiments on shrunken sweeps: reports, gains and Fig. 6 numbers from the table."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pandas as pd
import pytest

from balance_opt.batch import experiments
from balance_opt.batch.table import read_results
from balance_opt.cli import main
from balance_opt.report.paper import fig1


def test_average_gain_is_the_mean_of_pointwise_gains() -> None:
    table = pd.DataFrame(
        {
            "config": ["balance", "ad-only", "balance", "ad-only", "balance", "ad-only"],
            "gen_users": [10, 10, 20, 20, 30, 30],
            "throughput_mean": [0.9, 0.6, 0.8, 0.8, 0.5, 0.0],
        }
    )
    gains = experiments.average_gains(table, "gen_users", ["ad-only", "sd-only"])
    assert gains == {"ad-only": pytest.approx(100 * (0.5 + 0.0) / 2)}  # K = 30: no baseline throughput


def test_fig6_numbers() -> None:
    rows = []
    for k, (t_b, t_e, s_b, s_e) in {10: (0.1, 1.0, 9, 10), 16: (0.2, 8.0, 15, 15)}.items():
        rows.append({"K": k, "config": "balance", "status": "feasible", "runtime_s": t_b, "served": s_b})
        rows.append({"K": k, "config": "exhaustive", "status": "optimal", "runtime_s": t_e, "served": s_e})
    rows.append({"K": 16, "config": "exhaustive", "status": "time_limit", "runtime_s": 99.0, "served": 0})
    got = experiments.fig6_numbers(pd.DataFrame(rows))
    assert got["speedup_mean"] == pytest.approx((10 + 40) / 2)
    assert got["speedup_k16"] == pytest.approx(40)
    assert got["loss_pct"] == pytest.approx(100 * (0.1 / 1.0 + 0) / 2)


def test_fig1_memory_matches_the_paper(tmp_path: Path) -> None:
    numbers = fig1(tmp_path / "fig1", "cmd")
    assert {k: round(v, 1) for k, v in numbers["memory_pct"].items()} == {200: 18.0, 600: 18.3, 1000: 18.6}
    assert 0 < numbers["latency_pct"] < 100
    assert (tmp_path / "fig1" / "figures" / "fig1.svg").exists()
    assert "| 600 |" in (tmp_path / "fig1" / "README.md").read_text()


def test_shrunken_ablation_experiment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small = dataclasses.replace(experiments.SWEEPS["k"], values=(4, 6))
    monkeypatch.setitem(experiments.SWEEPS, "k", small)
    args = ["experiment", "fig7a", "--seeds", "2", "--out", str(tmp_path), "--jobs", "2"]
    assert main(args) == 0
    df = read_results([tmp_path / "runs" / "k"])
    assert len(df) == 2 * 2 * 5  # four heuristics and the exact reference
    assert sorted(df["config"].unique()) == ["balance", "ecra", "ecrma", "ema", "exact"]
    # the gains in the report, recomputed by hand from the results table
    df["t"] = df["served"] / df["K"]
    mean = df.groupby(["config", "K"])["t"].mean()
    for base in ("ecra", "ema", "ecrma"):
        pointwise = [mean["balance", k] / mean[base, k] - 1 for k in (4, 6)]
        expected = f"| {base} | {100 * sum(pointwise) / 2:.1f}% |"
        assert expected in (tmp_path / "fig7a" / "README.md").read_text()
    assert (tmp_path / "fig7a" / "figures" / "sweep-users.png").exists()
    assert main(args) == 0  # a rerun solves nothing new and rebuilds the same report
    assert len(read_results([tmp_path / "runs" / "k"])) == 20
    # --report-only: the same report from the results table, with no instance written or solved
    readme = (tmp_path / "fig7a" / "README.md").read_bytes()
    shutil.rmtree(tmp_path / "instances")
    (tmp_path / "fig7a" / "README.md").unlink()
    assert main([*args, "--report-only"]) == 0
    assert (tmp_path / "fig7a" / "README.md").read_bytes() == readme
    assert not (tmp_path / "instances").exists()
