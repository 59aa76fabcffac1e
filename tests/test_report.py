"""Reports from a tiny hand-made results table: statistics, files, deterministic SVG."""

from __future__ import annotations

import itertools
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
    assert s.loc["ad-only", "throughput_mean"] == pytest.approx(np.mean(thr))
    lo, hi = textbook_share_ci(thr)
    assert (s.loc["ad-only", "throughput_ci_low"], s.loc["ad-only", "throughput_ci_high"]) == pytest.approx(
        (lo, hi)
    )
    assert stats.shifted_geomean([0.001, 0.003]) == pytest.approx(math.sqrt(0.002 * 0.004) - 0.001)
    assert stats.swept_parameters(df) == ["gen_users"]
    ratios, configs = stats.performance_profile(df)
    assert sorted(configs) == ["ad-only", "balance", "exhaustive"]
    assert (ratios["ad-only"] == 1.0).all()


def textbook_share_ci(shares: list[float]) -> tuple[float, float]:
    """Wilson's score interval at Korn and Graubard's effective sample size, written out;
    none (nan) without a spread."""
    n = len(shares)
    if n < 2 or len(set(shares)) == 1:
        return math.nan, math.nan
    p = sum(shares) / n
    se2 = sum((x - p) ** 2 for x in shares) / (n - 1) / n
    n_eff = p * (1 - p) / se2
    z = 1.959963984540054
    n_star = n_eff * (z / stats.t_quantile_975(n - 1)) ** 2
    center = p + z**2 / (2 * n_star)
    root = z * math.sqrt(p * (1 - p) / n_star + z**2 / (4 * n_star**2))
    denom = 1 + z**2 / n_star
    return max(0.0, (center - root) / denom), min(1.0, (center + root) / denom)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(1, 40)), min_size=2, max_size=40))
def test_share_ci_against_the_textbook_formula(rows: list[tuple[int, int]]) -> None:
    """Shares served / K: the interval is the written-out formula's, within [0, 1], around the mean."""
    shares = [min(s, k) / k for s, k in rows]
    m, lo, hi = stats.share_ci(shares)
    assert m == pytest.approx(sum(shares) / len(shares), abs=1e-12)
    want = textbook_share_ci(shares)
    if len(set(shares)) == 1:  # no spread: no interval is claimed
        assert [math.isnan(v) for v in (lo, hi, *want)] == [True] * 4
    else:
        assert (min(lo, m), max(hi, m)) == pytest.approx((min(want[0], m), max(want[1], m)), abs=1e-9)
        assert 0.0 <= lo <= m <= hi <= 1.0


def test_a_share_interval_respects_the_unit_range() -> None:
    """The issue's case: shares close to 1 whose Student-t interval reaches above 1."""
    shares = [1.0, 1.0, 0.9, 0.95, 0.945]
    n = len(shares)
    mean = sum(shares) / n
    half = stats.t_quantile_975(n - 1) * float(np.std(shares, ddof=1)) / math.sqrt(n)
    assert mean + half > 1.0  # what the report printed before
    m, lo, hi = stats.share_ci(shares)
    assert lo < m < hi <= 1.0
    # away from 0 and 1, with many instances, it is the Student-t interval
    mid = [0.4, 0.5, 0.6, 0.45, 0.55] * 8
    m, lo, hi = stats.share_ci(mid)
    half = stats.t_quantile_975(len(mid) - 1) * float(np.std(mid, ddof=1)) / math.sqrt(len(mid))
    assert (lo, hi) == pytest.approx((m - half, m + half), abs=2e-3)
    assert math.isnan(stats.share_ci([0.5])[1])
    # no spread observed (every seed alike): no interval is claimed
    m, lo, hi = stats.share_ci([0.1] * 3)
    assert m == pytest.approx(0.1)
    assert math.isnan(lo)
    assert math.isnan(hi)


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


def test_counts_without_an_optimum_are_a_dash_not_zero() -> None:
    """No P2 optimum computed: '< 1/2 (P2)' says '-' (summary.csv: empty), never 0."""
    from balance_opt.report.build import summary_markdown

    summary = stats.summary(frame([{**r, "p2_optimum": None} for r in tiny_rows()]))
    readme = summary_markdown(summary)
    head = next(line for line in readme.splitlines() if line.startswith("| config | rows |"))
    columns = [c.strip() for c in head.strip("|").split("|")]
    for config in ("ad-only", "balance", "exhaustive"):
        line = next(x for x in readme.splitlines() if x.startswith(f"| {config} |"))
        cells = dict(zip(columns, (c.strip() for c in line.strip("|").split("|")), strict=True))
        assert (cells["ratio min (P2)"], cells["< 1/2 (P2)"]) == ("-", "-")
        assert cells["< 1/2 (P1)"] == ("6" if config == "ad-only" else "0")
    assert summary["below_half_p2"].isna().all()  # an empty cell in summary.csv


def test_every_series_stays_visible() -> None:
    """Coinciding series: later ones narrower and on top, each its own marker and dashes; legends
    outside the axes; the proved optimum's line above every solver's."""
    import matplotlib.pyplot as plt

    from balance_opt.report import figures

    df = frame(tiny_rows())
    ax = figures.plot_sweep(df, "gen_users")
    lines = ax.get_lines()
    assert len(lines) == 3
    assert len({(line.get_marker(), line.get_linestyle()) for line in lines}) == 3
    for below, above in itertools.pairwise(lines):
        assert below.get_linewidth() > above.get_linewidth()
        assert below.get_markersize() > above.get_markersize()
        assert below.get_zorder() < above.get_zorder()
    ax.figure.canvas.draw()
    legend_box = ax.get_legend().get_window_extent()
    assert legend_box.x0 >= ax.get_window_extent().x1  # right of the axes: it covers no point
    plt.close(ax.figure)
    ax = figures.plot_throughput_vs_optimum(df)
    optimum, *solvers = ax.get_lines()
    assert optimum.get_label() == "proved optimum (P1)"
    assert optimum.get_zorder() > max(line.get_zorder() for line in solvers)
    plt.close(ax.figure)
