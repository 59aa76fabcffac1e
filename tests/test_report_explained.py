"""A report says what was run and what its numbers mean; its figures read without the source."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from balance_opt.batch.configs import make_config
from balance_opt.batch.runner import run_batch
from balance_opt.batch.table import frame
from balance_opt.library.reference import read_reference
from balance_opt.report import build_report, figures, stats
from tests.test_cli_basic import run
from tests.test_report import tiny_rows

LIBRARY = Path(__file__).parent.parent / "instances" / "paper"


def test_the_readme_states_instances_configurations_machine_and_code(tmp_path: Path) -> None:
    rows = tiny_rows()
    for r in rows:
        r["options"] = json.dumps({"seed": 0, "time_limit_s": 60.0} if r["config"] == "exhaustive" else {})
        r["commit"] = "abc1234"
    text = build_report(frame(rows), tmp_path / "rep").read_text()
    assert "## What was run" in text
    assert "- instances: 6 (presets fig4; K = 10, 20, 30; seeds 1-2)" in text
    assert "- `exhaustive`: solver `exhaustive`, time limit 60 s" in text
    assert "- `balance`: solver `balance`, no time limit" in text
    assert "- machines: h;" in text
    assert "balance-opt version 0 (source `abc1234`)" in text
    for column in ("*rows*", "*solved*", "*optimal*", "*time limit*", "*error*", "*infeasible*",
                   "*with proved opt*", "*gap abs mean / max*", "*runtime SGM (s)*"):  # fmt: skip
        assert column in text, column


def test_no_interval_is_printed_without_a_spread(tmp_path: Path) -> None:
    rows = [r for r in tiny_rows() if r["K"] == 10 and r["gen_seed"] == 1]  # one seed: n = 1 per config
    text = build_report(frame(rows), tmp_path / "rep").read_text()
    assert "no interval (n = 1)" in text
    assert "[nan" not in text
    summary = stats.summary(frame(rows))
    assert summary["throughput_ci_low"].isna().all()


def test_the_gap_histogram_bars_sit_on_whole_numbers() -> None:
    df = frame(tiny_rows())
    ax = figures.plot_gap_histogram(df)
    centers = {round(p.get_x() + p.get_width() / 2, 6) for p in ax.patches if p.get_height() > 0}
    edges = [p.get_x() for p in ax.patches]
    assert min(edges) >= -0.5
    # one group of bars per whole number of users; balance is one user short at K = 30
    assert any(abs(c - 1.0) < 0.5 for c in centers)
    assert ax.get_xlabel().startswith("gap to the proved optimum (users")


def test_the_gap_profile_ranks_by_quality_not_speed() -> None:
    df = frame(tiny_rows())
    gaps, configs = stats.gap_profile(df)
    assert sorted(configs) == ["ad-only", "balance", "exhaustive"]
    assert (gaps["exhaustive"] == 0).all()
    assert sorted(gaps["balance"]) == [0, 0, 0, 0, 1, 1]
    # ad-only is the fastest on every instance (runtime profile 1.0) and the furthest behind here
    ratios, _ = stats.performance_profile(df)
    assert (ratios["ad-only"] == 1.0).all()
    assert (gaps["ad-only"] > gaps["balance"]).all()


def test_report_takes_the_librarys_proved_optima_for_its_instances(tmp_path: Path, capsys: Any) -> None:
    ref = read_reference(LIBRARY / "fig6")
    stems = sorted(s for s, r in ref.items() if r["status"] == "optimal")[:3]
    for stem in stems:
        shutil.copy(LIBRARY / "fig6" / f"{stem}.json", tmp_path)
    run_batch([tmp_path / f"{s}.json" for s in stems], [make_config("ad-only")], tmp_path / "run")
    code, _, err = run(capsys, "report", tmp_path / "run", "--out", tmp_path / "rep", "--library", LIBRARY)
    assert code == 0, err
    text = (tmp_path / "rep" / "README.md").read_text()
    assert "Proved optima of 3 of the instances come from the reference tables" in text
    summary = pd.read_csv(tmp_path / "rep" / "summary.csv")
    assert summary.loc[0, "with_optimum"] == 3
    table = pd.read_parquet(tmp_path / "run" / "results.parquet")
    served = {s: int(table.loc[table["instance"] == s, "served"].iloc[0]) for s in stems}
    gaps = [int(ref[s]["best_known"]) - served[s] for s in stems]
    assert summary.loc[0, "gap_abs_max"] == max(gaps)
    code, _, _ = run(capsys, "report", tmp_path / "run", "--out", tmp_path / "rep2", "--no-library")
    assert code == 0
    assert int(pd.read_csv(tmp_path / "rep2" / "summary.csv").loc[0, "with_optimum"]) == 0
    assert np.isnan(pd.read_csv(tmp_path / "rep2" / "summary.csv").loc[0, "gap_abs_max"])


def test_report_with_the_library_on_instances_it_does_not_hold(tmp_path: Path, capsys: Any) -> None:
    """Found by the fuzz suite: no match left a nullable column that the gap arithmetic refused."""
    from balance_opt.generator import generate
    from balance_opt.io import write_instance

    write_instance(generate("fig4", users=4, seed=1), tmp_path / "inst" / "a.json")
    run_batch([tmp_path / "inst"], [make_config("balance"), make_config("ad-only")], tmp_path / "run")
    code, _, err = run(capsys, "report", tmp_path / "run", "--out", tmp_path / "rep", "--library", LIBRARY)
    assert code == 0, err
    assert "Proved optima of" not in (tmp_path / "rep" / "README.md").read_text()
