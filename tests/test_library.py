"""The benchmark library: generation, the reference rules, the resumable builder, verification."""

from __future__ import annotations

import csv
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from balance_opt.batch.configs import SolverConfig, make_config
from balance_opt.batch.experiments import EXPERIMENTS, SWEEPS, make_instances
from balance_opt.batch.task import Task, solve_task
from balance_opt.library.reference import (
    HEURISTICS,
    ReferenceContradiction,
    read_ledger,
    read_reference,
    reference_row,
)
from balance_opt.library.refs import RefsOutcome, build_references
from balance_opt.library.sets import SETS, LibrarySet, Part, instance_bytes_of, write_set
from balance_opt.library.verify import verify_library, verify_set
from balance_opt.solution import Solution

LIBRARY = Path(__file__).parent.parent / "instances" / "paper"
SHA = "0" * 64


def attempt(
    solver: str, bound: int | str, seconds: float = 1.0, status: str = "time_limit"
) -> dict[str, str]:
    return {"sha256": SHA, "solver": solver, "config": solver, "status": status, "bound": str(bound),
            "runtime_s": str(seconds), "served": "0", "feasible": "true"}  # fmt: skip


def best(served: int) -> object:
    from balance_opt.library.reference import Best

    return Best(served, "balance", "solutions/x.json")


def test_the_library_is_every_set_of_the_definition_with_every_file() -> None:
    assert sorted(p.name for p in LIBRARY.iterdir() if p.is_dir()) == sorted(SETS)
    for name, lib in SETS.items():
        stems = sorted(p.stem for p in (LIBRARY / name).glob("*.json"))
        assert stems == sorted(lib.stems()), name
        if name in EXPERIMENTS or name == "large-tight":
            assert len(lib.seeds) == 5
        assert (LIBRARY / name / "README.md").is_file()
        assert all(f.stem in (LIBRARY / name / "README.md").read_text() for f in lib.found)


def test_paper_sets_are_the_experiments_instances(tmp_path: Path) -> None:
    sweep = SWEEPS["tmax"]
    paths = make_instances(sweep, [2], tmp_path)  # every value of the sweep, one seed
    assert len(paths) == len(sweep.values)
    for path, value in zip(paths, sweep.values, strict=True):
        assert path.read_bytes() == (LIBRARY / "fig4b" / path.name).read_bytes()
        assert path.read_bytes() == instance_bytes_of(Part(sweep), value, 2)


def test_generation_writes_the_shipped_bytes(tmp_path: Path) -> None:
    lib = SETS["large-tight"]
    small = LibrarySet(lib.name, lib.title, lib.parts, seeds=(4,))
    for path in write_set(small, tmp_path):
        assert path.read_bytes() == (LIBRARY / lib.name / path.name).read_bytes(), path.name


def test_one_proof_by_a_tested_exact_method_makes_an_optimum() -> None:
    rows = [attempt("milp-highs", 9), attempt("milp-highs", 9, 2.0), attempt("milp-cpsat", 10)]
    row = reference_row("x", SHA, 12, rows, best(9))  # type: ignore[arg-type]
    assert (row["status"], row["bound"], row["class"]) == ("optimal", 9, "easy")
    assert (row["bound_by"], row["proofs"], row["proved_by"]) == ("milp-highs", 1, "milp-highs:1.00s")
    slow = reference_row("x", SHA, 12, [attempt("exact", 9, 61.0)], best(9))  # type: ignore[arg-type]
    assert (slow["status"], slow["class"]) == ("optimal", "hard")


def test_proofs_counts_the_independent_methods() -> None:
    rows = [attempt("milp-highs", 9, 3.0), attempt("exact", 9, 70.0), attempt("balance", "")]
    row = reference_row("x", SHA, 12, rows, best(9))  # type: ignore[arg-type]
    assert (row["status"], row["bound"], row["class"], row["proofs"]) == ("optimal", 9, "easy", 2)
    assert row["proved_by"] == "exact:70.00s;milp-highs:3.00s"


def test_a_bound_from_an_untested_method_proves_nothing() -> None:
    row = reference_row("x", SHA, 12, [attempt("my-solver", 9)], best(9))  # type: ignore[arg-type]
    assert (row["status"], row["bound"], row["bound_by"], row["proofs"]) == ("open", 9, "my-solver", 0)
    assert row["class"] == "open"


def test_no_bound_is_the_trivial_k_and_all_served_is_optimal() -> None:
    row = reference_row("x", SHA, 12, [attempt("balance", "")], best(7))  # type: ignore[arg-type]
    assert (row["bound"], row["bound_by"], row["status"]) == (12, "trivial", "open")
    row = reference_row("x", SHA, 12, [attempt("balance", "")], best(12))  # type: ignore[arg-type]
    assert (row["status"], row["proofs"], row["proved_by"]) == ("optimal", 1, "all-served:0.00s")


def test_a_bound_below_an_accepted_schedule_is_a_contradiction() -> None:
    with pytest.raises(ReferenceContradiction, match="milp-cpsat proved a bound of 8"):
        reference_row("x", SHA, 12, [attempt("milp-cpsat", 8)], best(9))  # type: ignore[arg-type]


def test_errors_and_other_instance_bytes_prove_nothing() -> None:
    stale = {**attempt("milp-highs", 3), "sha256": "1" * 64}
    rows = [attempt("milp-cpsat", 3, status="error"), stale]
    row = reference_row("x", SHA, 12, rows, best(9))  # type: ignore[arg-type]
    assert (row["bound"], row["bound_by"]) == (12, "trivial")


class InProcess:
    """Runs each solve in the test process: no worker start-up per configuration."""

    def run(self, tasks: Sequence[Task], on_done: Callable[[Task, Solution], None]) -> None:
        for task in tasks:
            on_done(task, solve_task(task))


def build(folder: Path, configs: list[SolverConfig]) -> RefsOutcome:
    return build_references(folder, configs, executor=InProcess(), log=lambda _: None)


@pytest.fixture
def small_set(tmp_path: Path) -> Path:
    """Two fig6 instances where not every user can be served, without references."""
    folder = tmp_path / "fig6"
    folder.mkdir()
    for stem in ("small-k-11-s0003", "small-k-12-s0003"):
        shutil.copy(LIBRARY / "fig6" / f"{stem}.json", folder)
    return folder


def test_builder_certifies_resumes_and_verifies(small_set: Path) -> None:
    configs = [make_config("exhaustive", time_limit_s=60), make_config("milp-highs", time_limit_s=60)]
    out = build(small_set, configs)
    per_instance = len(configs) + len(HEURISTICS)  # the heuristics run beside every build
    assert out.solved == 2 * per_instance
    assert out.skipped == 0
    ref = read_reference(small_set)
    for row in ref.values():
        assert row["best_known"] != row["K"]  # certified by the two solvers, not by serving all
        assert row["status"] == "optimal"
        assert "exhaustive:" in row["proved_by"]
        assert "milp-highs:" in row["proved_by"]
        assert (small_set / row["solution"]).is_file()
    assert verify_set(small_set) == ([], 2)
    again = build(small_set, configs)
    assert (again.solved, again.skipped) == (0, 2 * per_instance)
    assert len(read_ledger(small_set)) == 2 * per_instance
    assert read_reference(small_set) == ref


def test_verify_finds_a_table_that_disagrees(small_set: Path) -> None:
    build(small_set, [])
    path = small_set / "reference.csv"
    text = path.read_text()
    row = next(iter(read_reference(small_set).values()))
    path.write_text(
        text.replace(
            f",{row['best_known']},{row['bound']},", f",{int(row['best_known']) - 1},{row['bound']},", 1
        )
    )
    problems, _ = verify_set(small_set)
    assert any("the table says" in p for p in problems)
    (small_set / "small-k-11-s0003.json").write_text((small_set / "small-k-12-s0003.json").read_text())
    problems, _ = verify_set(small_set)
    assert any("instance file changed" in p for p in problems)


def _edit_reference(folder: Path, **changes: str) -> None:
    """Change columns of every row of a set's reference table (what a careless edit would do)."""
    rows = list(read_reference(folder).values())
    with (folder / "reference.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows({**r, **changes} for r in rows)


def test_verify_holds_status_and_proofs_together(small_set: Path) -> None:
    build(small_set, [make_config("exhaustive", time_limit_s=60)])
    assert verify_set(small_set) == ([], 2)
    _edit_reference(small_set, proofs="2")
    assert any("proofs is 2 but proved_by names 1" in p for p in verify_set(small_set)[0])
    _edit_reference(small_set, proofs="1", proved_by="balance:0.10s")
    assert any("balance is not a tested exact method" in p for p in verify_set(small_set)[0])
    _edit_reference(small_set, proofs="0", proved_by="")
    assert any("optimal without a proof" in p for p in verify_set(small_set)[0])
    _edit_reference(small_set, status="open", **{"class": "open"}, proofs="1", proved_by="exhaustive:0.10s")
    assert any("status open with proofs by exhaustive" in p for p in verify_set(small_set)[0])


def test_rebuild_writes_the_table_from_the_ledger_alone(small_set: Path) -> None:
    from balance_opt.library.refs import rebuild_references

    build(small_set, [make_config("exhaustive", time_limit_s=60)])
    table = (small_set / "reference.csv").read_text()
    _edit_reference(small_set, proofs="", status="open")
    ledger = (small_set / "attempts.csv").read_text()
    rows = rebuild_references(small_set)
    assert [r["status"] for r in rows] == ["optimal", "optimal"]
    assert (small_set / "reference.csv").read_text() == table
    assert (small_set / "attempts.csv").read_text() == ledger  # nothing solved


def test_every_stored_reference_agrees_with_the_evaluator() -> None:
    """CI: every reference row, instance digest and stored schedule, by the evaluator alone."""
    problems, checked = verify_library([LIBRARY])
    assert problems == []
    assert checked == sum(len(s.stems()) for s in SETS.values())


def test_library_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from balance_opt.cli import main

    assert main(["library", "generate", str(tmp_path), "--set", "fig6"]) == 0
    written = sorted(p.name for p in (tmp_path / "fig6").glob("*.json"))
    assert written == sorted(p.name for p in (LIBRARY / "fig6").glob("*.json"))
    assert all((tmp_path / "fig6" / n).read_bytes() == (LIBRARY / "fig6" / n).read_bytes() for n in written)
    assert main(["library", "generate", str(tmp_path), "--set", "fig9"]) == 2
    assert main(["library", "refs", str(tmp_path), "--solver", "balance"]) == 2
    assert "not a library set folder" in capsys.readouterr().err
    assert main(["library", "verify", str(LIBRARY / "fig6")]) == 0
    shutil.copytree(LIBRARY / "fig6", tmp_path / "copy" / "fig6")
    (tmp_path / "copy" / "fig6" / "solutions" / "small-k-10-s0001.json").unlink()
    assert main(["library", "verify", str(tmp_path / "copy")]) == 1
    assert "small-k-10-s0001" in capsys.readouterr().out


def test_rebuild_and_heuristic_choice_commands(small_set: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from balance_opt.cli import main

    lib = small_set.parent / "lib"
    shutil.copytree(small_set, lib / "fig6")
    assert main(["library", "refs", str(lib / "fig6"), "--heuristic", "nope"]) == 2
    assert "not a heuristic of the library: nope" in capsys.readouterr().err
    assert main(["library", "refs", str(lib / "fig6"), "--heuristic", "ad-only"]) == 0
    assert {r["config"] for r in read_ledger(lib / "fig6")} == {"ad-only"}
    table = (lib / "fig6" / "reference.csv").read_text()
    assert main(["library", "rebuild", str(lib)]) == 0
    assert (lib / "fig6" / "reference.csv").read_text() == table
    assert "Commands run:" in (lib / "fig6" / "README.md").read_text()
