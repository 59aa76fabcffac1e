"""The adversary: reproducible by seed and evaluation budget, judged by the evaluator."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from balance_opt.adversary.moves import neighbour, random_instance
from balance_opt.adversary.search import Settings, search
from balance_opt.cli import main
from balance_opt.io import read_instance
from balance_opt.solvers import get_solver

TINY = ["--users", "4", "--seed", "3", "--random-evals", "6", "--min-optimum", "1", "--quiet"]


def run(tmp: Path, *extra: str) -> dict[str, object]:
    assert main(["adversary", "--solver", "balance", *TINY, *extra, "--out", str(tmp)]) == 0
    doc: dict[str, object] = json.loads((tmp / "summary.json").read_text())
    return doc


def test_same_seed_and_evaluation_budget_same_bytes(tmp_path: Path) -> None:
    a = run(tmp_path / "a", "--budget-evals", "14")
    run(tmp_path / "b", "--budget-evals", "14")
    for name in ("worst.json", "summary.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    timings = json.loads((tmp_path / "a" / "timings.json").read_text())
    assert timings["evaluations"] == 14
    assert timings["seconds"] >= 0
    assert "seconds" not in a
    assert (a["evaluations"], a["stopped_by"], a["reproducible"]) == (14, "evaluations", True)


def test_a_run_is_a_prefix_of_every_longer_run(tmp_path: Path) -> None:
    short = run(tmp_path / "short", "--budget-evals", "10")
    long_ = run(tmp_path / "long", "--budget-evals", "20")
    assert long_["improvements"][: len(short["improvements"])] == short["improvements"]  # type: ignore[index]
    again = run(tmp_path / "again", "--budget-evals", str(long_["found_at"]))
    assert again["found_at"] == long_["found_at"]
    assert (tmp_path / "again" / "worst.json").read_bytes() == (tmp_path / "long" / "worst.json").read_bytes()


def test_the_worst_instance_is_what_the_summary_says(tmp_path: Path) -> None:
    doc = run(tmp_path, "--budget-evals", "12")
    inst = read_instance(tmp_path / "worst.json")
    assert get_solver("balance").solve(inst).served == doc["served"]
    assert get_solver("exhaustive").solve(inst).served == doc["optimum"]
    assert doc["ratio"] == round(doc["served"] / doc["optimum"], 6)  # type: ignore[operator]
    assert inst.generator is not None
    assert inst.generator["evaluation"] == doc["found_at"]


def test_against_p2_uses_p2s_optimum(tmp_path: Path) -> None:
    doc = run(tmp_path, "--budget-evals", "8", "--against", "p2")
    inst = read_instance(tmp_path / "worst.json")
    assert get_solver("exhaustive-p2").solve(inst).stats["p2_optimum"] == doc["optimum"]


def test_any_registered_heuristic_and_a_time_budget() -> None:
    out = search(Settings(solver="sd-only", users=3, seed=1, budget_s=60, budget_evals=5, min_optimum=1,
                          random_evals=3))  # fmt: skip
    assert (out.evaluations, out.stopped_by) == (5, "evaluations")
    out = search(Settings(solver="ad-only", users=3, seed=1, budget_s=0.001, min_optimum=1))
    assert out.stopped_by == "time"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--solver", "exact", "--budget-evals", "3"], "registered heuristic"),
        (["--solver", "balance"], "give --budget-s or --budget-evals"),
        (["--solver", "balance", "--budget-evals", "3", "--against", "p2", "--users", "20"], "--users <= 12"),
    ],
)
def test_bad_settings_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    args = ["adversary", "--users", "4", *extra, "--out", str(tmp_path), "--quiet"]
    assert main(args) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "summary.json").exists()


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), free=st.booleans())
def test_moves_keep_a_valid_instance_of_the_same_users(seed: int, free: bool) -> None:
    rng = np.random.default_rng(seed)
    inst = random_instance(rng, 5, free)
    for _ in range(15):
        moved = neighbour(rng, inst, free)  # Instance checks every value when it is built
        assert moved.user_ids == inst.user_ids
        if not free:
            assert moved.server.z_grid == inst.server.z_grid
        inst = moved
