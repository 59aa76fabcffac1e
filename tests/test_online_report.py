"""The online report: its figures exist, its tables are the results table's numbers, the
Findings section survives a rebuild, the same files give the same bytes, errors are listed."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

from balance_opt.cli import main
from balance_opt.evaluator import Schedule
from balance_opt.online.experiment import Point, PolicySpec, WorkloadSpec, run_experiment
from balance_opt.online.policies import register_policy, unregister_policy
from balance_opt.online.policy import View
from balance_opt.online.report import build_online_report, old_findings

ARGV = ["online", "--rates", "1,2", "--duration", "20", "--seeds", "1-2", "--policies", "balance,fcfs-ad",
        "--no-progress"]  # fmt: skip
COMMAND = "balance-opt online --out RUN"
FINDINGS = "## Findings\n\nBALANCE serves 7% more than `fcfs-ad` at 2 users/s.\n\n### Detail\n\nA line.\n"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny run folder, made by the command (which builds the report too)."""
    out = tmp_path_factory.mktemp("online") / "run"
    argv = [*ARGV[:1], "--out", str(out), *ARGV[1:]]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sys, "argv", ["python", "-c", "..."])  # not what the README records
        assert main(argv) == 0
    return out


@pytest.fixture
def copy(run: Path, tmp_path: Path) -> Path:
    """A private copy of the run folder, for tests that change it."""
    return Path(shutil.copytree(run, tmp_path / "run"))


def table_rows(readme: str) -> dict[tuple[str, float], list[str]]:
    """The per-point table's cells keyed by (policy, rate)."""
    out = {}
    for line in readme.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| ") and cells[0].endswith("-w1"):
            out[cells[0], float(cells[1])] = cells
    return out


def test_the_command_writes_the_report_and_every_link_exists(run: Path) -> None:
    readme = (run / "report" / "README.md").read_text()
    assert readme.startswith("# ")
    assert f"Built by `balance-opt online --out {run} --rates 1,2" in readme
    links = re.findall(r"\]\(([^)]+)\)", readme)
    assert {"attainment-vs-rate.png", "timeline.png", "attainment.csv"} <= set(links)
    for link in links:
        assert (run / "report" / link).is_file(), link
    # one deadline scale: that figure is skipped, and the README says so
    assert "attainment-vs-deadline.png" not in links
    assert not (run / "report" / "attainment-vs-deadline.png").exists()
    assert "One deadline scale only: no figure against deadline scale." in readme
    # the timeline is balance's at the highest rate of the first seed
    assert "`fig4-poisson-r2-t20-d1-s1` under `balance-w1`" in readme


def test_table_rows_are_the_results_tables_means(run: Path) -> None:
    df = pd.read_csv(run / "results.csv")
    means = df.groupby(["config", "gen_rate_per_s"]).mean(numeric_only=True)
    cells = table_rows((run / "report" / "README.md").read_text())
    assert set(cells) == set(means.index)
    assert len(cells) == 4
    for key, r in means.iterrows():
        c = cells[key]  # type: ignore[index]
        assert c[2] == "2"  # seeds
        assert c[3] == f"{r['attainment']:.3f}"
        assert c[4] == f"{r['share_of_bound']:.3f}"
        assert c[5] == f"{r['goodput_per_s']:.3f}"
        assert c[6:9] == [
            f"{r[k]:.1f}" for k in ("dropped_deadline", "dropped_memory", "dropped_never_admitted")
        ]
        assert c[9:12] == [f"{r[f'latency_p{p}_s']:.2f}" for p in (50, 90, 99)]
        assert c[14] == f"{r['runtime_s']:.2f}"
    # a policy never beats the bound, so every share is at most 1
    assert all(float(c[4]) <= 1.0 for c in cells.values())


def test_attainment_csv_holds_the_plotted_means_and_the_bound(run: Path) -> None:
    df = pd.read_csv(run / "results.csv")
    plotted = pd.read_csv(run / "report" / "attainment.csv").set_index(["series", "rate_per_s"])
    for (config, rate), g in df.groupby(["config", "gen_rate_per_s"]):
        row = plotted.loc[(config, rate)]  # type: ignore[index]
        assert row["seeds"] == 2
        assert row["attainment_mean"] == pytest.approx(g["attainment"].mean(), rel=1e-5)
        assert row["attainment_min"] == pytest.approx(g["attainment"].min(), rel=1e-5)
        assert row["attainment_max"] == pytest.approx(g["attainment"].max(), rel=1e-5)
    per_workload = df.drop_duplicates("instance").assign(share=lambda d: d["bound"] / d["K"])
    for rate, g in per_workload.groupby("gen_rate_per_s"):
        assert plotted.loc[("hindsight bound", rate), "attainment_mean"] == pytest.approx(g["share"].mean())


def test_findings_survive_a_rebuild_and_the_same_files_give_the_same_bytes(copy: Path) -> None:
    readme = copy / "report" / "README.md"
    build_online_report(copy, COMMAND)
    first = {p.name: p.read_bytes() for p in sorted((copy / "report").iterdir())}
    build_online_report(copy, COMMAND)
    assert {p.name: p.read_bytes() for p in sorted((copy / "report").iterdir())} == first
    text = readme.read_text()
    head, rest = text.split("## Attainment", 1)
    readme.write_text(head + FINDINGS + "\n## Attainment" + rest)
    build_online_report(copy, COMMAND)
    rebuilt = readme.read_text()
    assert rebuilt.count("## Findings") == 1
    assert FINDINGS in rebuilt
    assert rebuilt.replace(FINDINGS + "\n", "") == text  # the rest is what the build writes
    build_online_report(copy, COMMAND)
    assert readme.read_text() == rebuilt


def test_old_findings_reads_to_the_next_section(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    assert old_findings(readme) == []  # no README yet
    readme.write_text("# T\n\n## Findings\n\nOne.\n### Sub\nTwo.\n## Next\n\nNot this.\n")
    assert old_findings(readme) == ["## Findings", "", "One.", "### Sub", "Two.", ""]
    readme.write_text("# T\n\n## Findings\nLast.")
    assert old_findings(readme) == ["## Findings", "Last.", ""]
    readme.write_text("# T\n\n## Findings later\n")
    assert old_findings(readme) == []


class Crash:
    name = "test-report-crash"

    def decide(self, view: View) -> Schedule:
        raise RuntimeError("boom | at the first epoch")


def test_error_rows_are_listed_with_their_message(copy: Path) -> None:
    register_policy("test-report-crash", Crash)
    try:
        w = WorkloadSpec(rate_per_s=1.0, duration_s=20.0, seed=1)
        run_experiment(copy, [Point(w, PolicySpec("test-report-crash"))], bounds=False, progress=False)
    finally:
        unregister_policy("test-report-crash")
    text = build_online_report(copy, COMMAND).read_text()
    errors = text.split("## Errors", 1)[1]
    assert (
        "| fig4-poisson-r1-t20-d1-s1 | test-report-crash-w1 | RuntimeError: boom \\| at the first epoch |"
        in errors
    )
    assert len(table_rows(text)) == 4  # the failed point is in no table or figure


def test_without_bounds_the_report_says_so(copy: Path) -> None:
    shutil.rmtree(copy / "bounds")
    text = build_online_report(copy, COMMAND).read_text()
    assert "no hindsight bounds (`--no-bound`)" in text
    assert all(c[4] == "-" for c in table_rows(text).values())
    assert "hindsight bound" not in set(pd.read_csv(copy / "report" / "attainment.csv")["series"])


def test_a_run_with_only_errors_still_gets_a_readme(tmp_path: Path) -> None:
    register_policy("test-report-crash", Crash)
    try:
        w = WorkloadSpec(rate_per_s=1.0, duration_s=5.0, seed=1)
        run_experiment(tmp_path, [Point(w, PolicySpec("test-report-crash"))], bounds=False, progress=False)
    finally:
        unregister_policy("test-report-crash")
    text = build_online_report(tmp_path, COMMAND).read_text()
    assert "no finished point (1 error row(s))" in text
    assert "RuntimeError: boom" in text
    assert sorted(p.name for p in (tmp_path / "report").iterdir()) == ["README.md"]
