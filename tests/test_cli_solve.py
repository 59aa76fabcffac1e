"""``balance-opt solve`` on the command line: --json purity, summaries, exit statuses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from balance_opt.generator import generate
from balance_opt.io import check_solution_dict, write_instance

REPO = Path(__file__).resolve().parents[1]


def cli(*args: str, doubles: bool = False) -> subprocess.CompletedProcess[str]:
    """Run the real command line in a fresh process (stdout is what a user would see)."""
    setup = "from tests.doubles import register_all; register_all(); " if doubles else ""
    code = f"import sys; from balance_opt import cli; {setup}sys.exit(cli.main({list(args)!r}))"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture(scope="module")
def inst_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("inst")
    for seed in (1, 2):
        write_instance(generate("fig4", users=5, seed=seed), folder / f"fig4-K5-s{seed:04d}.json")
    return folder


def test_json_prints_exactly_one_solution_document(inst_dir: Path) -> None:
    path = str(inst_dir / "fig4-K5-s0001.json")
    res = cli("solve", path, "--solver", "test-chatty", "--json", doubles=True)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)  # the whole of stdout is one document
    check_solution_dict(doc)
    assert doc["instance"] == "fig4-K5-s0001"
    assert "banner" in res.stderr  # the solver's fd-1 output went to stderr instead
    real = cli("solve", path, "--solver", "ad-only", "--json")
    assert real.returncode == 0, real.stderr
    assert json.loads(real.stdout)["feasible"] is True


def test_summary_lines_and_run_folder(inst_dir: Path, tmp_path: Path) -> None:
    res = cli("solve", str(inst_dir), "--solver", "ad-only", "--solver", "sd-only")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) == 4
    assert lines[0].startswith("fig4-K5-s0001 ad-only: feasible served=")
    run = tmp_path / "run"
    first = cli("solve", str(inst_dir), "--solver", "ad-only", "--out", str(run))
    assert first.returncode == 0, first.stderr
    assert first.stdout == ""
    assert "2 solved (2 feasible), 0 already done" in first.stderr
    again = cli("solve", str(inst_dir), "--solver", "ad-only", "--out", str(run))
    assert "0 solved (nothing new), 2 already done" in again.stderr
    assert sorted(p.name for p in (run / "solutions").iterdir()) == [
        "fig4-K5-s0001__ad-only.json",
        "fig4-K5-s0002__ad-only.json",
    ]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: ["missing.json", "--solver", "ad-only"], "no such file"),
        (lambda d: [str(d / "bad.json"), "--solver", "ad-only"], "users: is required"),
        (lambda d: [str(d / "good.json"), "--solver", "nope"], "unknown solver 'nope'"),
        (lambda d: [str(d / "good.json"), "--config", str(d / "bad.toml")], "not valid TOML"),
        (lambda d: [str(d), "--solver", "ad-only", "--json"], "--json needs one instance"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path: Path, make: object, message: str) -> None:
    write_instance(generate("fig4", users=3, seed=1), tmp_path / "good.json")
    doc = json.loads((tmp_path / "good.json").read_text())
    del doc["users"]
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    (tmp_path / "bad.toml").write_text("solver = [")
    res = cli("solve", *make(tmp_path))  # type: ignore[operator]
    assert res.returncode == 2
    assert res.stdout == ""
    assert len(res.stderr.strip().splitlines()) == 1
    assert message in res.stderr


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_refused_solve_exits_2(tmp_path: Path, json_flag: list[str]) -> None:
    """Exhaustive search refuses a large K: for a single solve that is bad input."""
    write_instance(generate("fig4", users=20, seed=1), tmp_path / "big.json")
    res = cli("solve", str(tmp_path / "big.json"), "--solver", "exhaustive", *json_flag)
    assert res.returncode == 2
    assert res.stdout == ""
    assert len(res.stderr.strip().splitlines()) == 1
    assert "above the exhaustive search limit" in res.stderr


def test_json_with_highs_keeps_stdout_clean(inst_dir: Path) -> None:
    from balance_opt.solvers import solver_class

    try:
        solver_class("milp-highs")
    except ImportError:
        pytest.skip("milp-highs is not available here")
    res = cli("solve", str(inst_dir / "fig4-K5-s0002.json"), "--solver", "milp-highs", "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["status"] == "optimal"
    assert doc["bound"] == doc["served"]


def test_threads_recorded_are_the_threads_used(inst_dir: Path, tmp_path: Path) -> None:
    """Every solver's declared threads default is 1, from the command line and from Python
    alike; a configuration may say more (docs/solvers.md)."""
    from balance_opt.batch.configs import load_config, make_config
    from balance_opt.solvers import get_solver

    assert make_config("exact").options["threads"] == 1
    assert make_config("exact", {"threads": 2}).options["threads"] == 2
    assert get_solver("exact").options["threads"] == 1
    assert get_solver("milp-cpsat").options["threads"] == 1
    assert load_config(REPO / "solvers" / "exact-300s.toml").options["threads"] == 1
    two = tmp_path / "exact-2.toml"
    two.write_text('solver = "exact"\n[options]\nthreads = 2\n')
    assert load_config(two).options["threads"] == 2
    path = str(inst_dir / "fig4-K5-s0001.json")
    res = cli("solve", path, "--solver", "exact", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["options"]["threads"] == 1
