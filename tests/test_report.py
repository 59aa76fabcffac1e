"""Reports from a tiny hand-made results table: statistics, files, deterministic SVG."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from balance_opt.batch.table import frame, read_results, write_table
from balance_opt.cli import main
from balance_opt.report import build_report, stats


def tiny_rows() -> list[dict[str, object]]:
    """3 K values x 2 seeds; exhaustive is optimal, balance loses one user at K=30."""
    rows = []
    for k in (10, 20, 30):
        for seed in (1, 2):
            sha = f"{k:02d}{seed}".ljust(64, "0")
            opt = k - seed
            served = {"exhaustive": opt, "balance": opt - (k == 30), "ad-only": opt // 3}
            for config, s in served.items():
                rows.append(
                    {
                        "instance": f"fig4-K{k}-s{seed:04d}",
                        "instance_sha256": sha,
                        "K": k,
                        "gen_users": k,
                        "gen_seed": seed,
                        "gen_preset": "fig4",
                        "solver": config,
                        "config": config,
                        "status": "optimal" if config == "exhaustive" else "feasible",
                        "served": s,
                        "bound": opt if config == "exhaustive" else None,
                        "runtime_s": {"exhaustive": 0.01 * 3**seed * k, "balance": 0.002, "ad-only": 0.001}[
                            config
                        ],
                        "feasible": True,
                        "p2_optimum": opt if config == "exhaustive" else None,
                        "host": "h",
                        "version": "0",
                    }
                )
    return rows


def test_statistics_match_hand_computations() -> None:
    df = frame(tiny_rows())
    s = stats.summary(df).set_index("config")
    assert s.loc["exhaustive", "optimal"] == 6
    assert s.loc["balance", "gap_abs_max"] == 1
    assert s.loc["balance", "gap_abs_mean"] == pytest.approx(2 / 6)
    assert s.loc["balance", "ratio_min"] == pytest.approx(27 / 28)  # K = 30, seed 2: optimum 28
    assert s.loc["balance", "bound_gap_rel_mean"] == pytest.approx((1 / 29 + 1 / 28) / 6)
    assert s.loc["ad-only", "below_half"] == 6
    assert s.loc["ad-only", "below_half_p2"] == 6
    thr = [(k - seed) // 3 / k for k in (10, 20, 30) for seed in (1, 2)]
    m, lo, hi = stats.mean_ci(thr)
    assert s.loc["ad-only", "throughput_mean"] == pytest.approx(np.mean(thr))
    half = 2.5706 * np.std(thr, ddof=1) / math.sqrt(6)  # t_{0.975, 5}
    assert (lo, hi) == pytest.approx((m - half, m + half))
    assert stats.shifted_geomean([0.001, 0.003]) == pytest.approx(math.sqrt(0.002 * 0.004) - 0.001)
    assert stats.swept_parameters(df) == ["gen_users"]
    ratios, configs = stats.performance_profile(df)
    assert sorted(configs) == ["ad-only", "balance", "exhaustive"]
    assert (ratios["ad-only"] == 1.0).all()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=2, max_size=40))
def test_mean_ci_against_textbook_formula(values: list[float]) -> None:
    m, lo, hi = stats.mean_ci(values)
    n = len(values)
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    t = stats.t_quantile_975(n - 1)
    assert m == pytest.approx(mean, abs=1e-12)
    assert hi - lo == pytest.approx(2 * t * math.sqrt(var / n), abs=1e-9)


def test_t_quantiles_continue_the_table() -> None:
    assert stats.t_quantile_975(30) == pytest.approx(2.0423)
    assert stats.t_quantile_975(31) == pytest.approx(2.0395, abs=2e-4)
    assert stats.t_quantile_975(120) == pytest.approx(1.9799, abs=2e-4)
    assert stats.t_quantile_975(10**6) == pytest.approx(1.95996, abs=1e-4)


def test_report_files_links_and_deterministic_svg(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    write_table(run, tiny_rows())
    assert main(["report", str(run), "--out", str(tmp_path / "a")]) == 0
    build_report(read_results([run]), tmp_path / "b")
    readme = (tmp_path / "a" / "README.md").read_text()
    assert "| config | rows | solved |" in readme
    links = re.findall(r"\]\((figures/[^)]+)\)", readme)
    assert "figures/sweep-users.png" in links
    assert "figures/throughput-vs-optimum.png" in links
    for link in links:
        assert (tmp_path / "a" / link).stat().st_size > 0
    assert (tmp_path / "a" / "figures" / "performance-profile.svg").exists()
    summary = pd.read_csv(tmp_path / "a" / "summary.csv")
    assert list(summary["config"]) == ["ad-only", "balance", "exhaustive"]
    assert (tmp_path / "a" / "sweep-users.csv").exists()
    for svg in (tmp_path / "a" / "figures").glob("*.svg"):
        text = svg.read_bytes()
        assert text == (tmp_path / "b" / "figures" / svg.name).read_bytes(), svg.name
        assert b"<dc:date>" not in text


def test_report_of_missing_table_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path), "--out", str(tmp_path / "r")]) == 2
    assert "no results table" in capsys.readouterr().err


def test_sweeps_are_found_within_each_preset(tmp_path: Path) -> None:
    rows = tiny_rows()
    for r in rows:
        r["gen_input_max"] = 300
    for lim in (100, 200):
        for seed in (1, 2):
            sha = f"f5{lim}{seed}".ljust(64, "0")
            fig5 = {"gen_users": 30, "gen_preset": "fig5", "gen_input_max": lim, "gen_seed": seed}
            rows.append({**rows[0], "instance_sha256": sha, "K": 30, **fig5})
    readme = build_report(frame(rows), tmp_path / "r").read_text()
    heads = [line for line in readme.splitlines() if line.startswith("## ") and "(preset" in line]
    assert heads == [
        "## Normalized throughput against number of users K (preset `fig4`)",
        "## Normalized throughput against maximum input length LImax (tokens) (preset `fig5`)",
    ]
