"""Regression checks: a recorded reference passes; a changed optimum, a worse heuristic and
an infeasible schedule are each reported."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

import pytest

from balance_opt.batch import regress
from balance_opt.cli import main
from balance_opt.generator import generate
from balance_opt.io import write_instance
from tests.doubles import registered

HEURISTICS = ("ad-only", "sd-only", "balance")


@pytest.fixture(scope="module")
def ci_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("ci")
    for preset, users, seed in (("fig4", 4, 1), ("fig5", 5, 2), ("tight-memory", 6, 3)):
        write_instance(
            generate(preset, users=users, seed=seed), folder / f"{preset}-K{users}-s{seed:04d}.json"
        )
    first = regress.check(folder, heuristics=HEURISTICS)
    assert not first.problems
    assert len(first.notes) == 3  # nothing recorded yet
    regress.update(folder, first)
    return folder


def tampered(folder: Path, tmp_path: Path, column: str, delta: int) -> Path:
    out = tmp_path / "ci"
    out.mkdir()
    for p in folder.glob("*.json"):
        (out / p.name).write_bytes(p.read_bytes())
    with (folder / "reference.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    rows[0][column] = str(int(rows[0][column]) + delta)
    with (out / "reference.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return out


def test_recorded_reference_passes(ci_set: Path) -> None:
    ref = regress.read_reference(ci_set / "reference.csv")
    assert sorted(ref) == ["fig4-K4-s0001", "fig5-K5-s0002", "tight-memory-K6-s0003"]
    for row in ref.values():
        assert row["exact_solver"] == "exhaustive"
        assert all(int(row[h]) <= int(row["optimum"]) for h in HEURISTICS)
    again = regress.check(ci_set, heuristics=HEURISTICS)
    assert again.problems == []
    assert again.notes == []


def test_changed_optimum_is_reported(ci_set: Path, tmp_path: Path) -> None:
    folder = tampered(ci_set, tmp_path, "optimum", -1)
    problems = regress.check(folder, heuristics=HEURISTICS).problems
    assert len(problems) == 1
    assert "optimum changed from" in problems[0]


def test_worse_heuristic_is_reported(ci_set: Path, tmp_path: Path) -> None:
    folder = tampered(ci_set, tmp_path, "ad-only", +1)
    problems = regress.check(folder, heuristics=HEURISTICS).problems
    assert len(problems) == 1
    assert "ad-only serves" in problems[0]
    assert "fewer than the reference" in problems[0]


@pytest.fixture
def infeasible_double() -> Iterator[None]:
    with registered("test-infeasible"):
        yield


@pytest.mark.usefixtures("infeasible_double")
def test_infeasible_schedule_and_changed_file_are_reported(ci_set: Path, tmp_path: Path) -> None:
    folder = tampered(ci_set, tmp_path, "optimum", 0)
    path = folder / "fig5-K5-s0002.json"
    path.write_text(path.read_text().replace('"deadline_s": ', '"deadline_s": 1', 1))
    problems = regress.check(folder, heuristics=("ad-only", "test-infeasible")).problems
    infeasible = [p for p in problems if "test-infeasible gives no feasible schedule" in p]
    assert len(infeasible) == 3
    assert "schedule is infeasible" in infeasible[0]
    assert [p for p in problems if "changed" in p] == [
        "fig5-K5-s0002: instance file changed since the reference was recorded"
    ]


def test_command_exit_status(ci_set: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tampered(ci_set, tmp_path, "sd-only", +1)
    # the command checks every heuristic; columns the reference lacks are recorded, not compared
    assert main(["regress", str(folder)]) == 1
    out = capsys.readouterr().out
    assert "regression: " in out
    assert "sd-only serves" in out
