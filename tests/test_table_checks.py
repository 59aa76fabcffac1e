"""A results table is input: impossible cells and contradicted claims are refused, by name."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from balance_opt.batch.configs import make_config
from balance_opt.batch.runner import run_batch
from balance_opt.batch.table import read_results
from balance_opt.batch.table_checks import check_results
from balance_opt.errors import InputError
from balance_opt.generator import generate
from balance_opt.io import write_instance
from tests.test_cli_basic import run

SHA = "a" * 64


def row(**cells: Any) -> dict[str, Any]:
    base = {"instance_sha256": SHA, "K": 10, "config": "c", "status": "feasible", "served": 6,
            "bound": None, "runtime_s": 0.1, "feasible": True}  # fmt: skip
    return {**base, **cells}


@pytest.mark.parametrize(
    ("cells", "column", "rule"),
    [
        ({"served": -1}, "served", "must be a whole number in [0, 2^53]"),
        ({"served": "many"}, "served", "must be a whole number in [0, 2^53]"),
        ({"served": 2.5}, "served", "must be a whole number in [0, 2^53]"),
        ({"served": 999}, "served", "must be at most K = 10"),
        ({"served": None}, "served", "is required"),
        ({"bound": 11}, "bound", "must be at most K = 10"),
        ({"bound": 5}, "bound", "claims a bound of 5 below its own feasible schedule serving 6"),
        ({"K": 0, "served": 0}, "K", "must be a whole number in [1, 10000000]"),
        ({"K": None}, "K", "must be a whole number in [1, 10000000]"),  # found by the fuzz suite
        ({"K": 1.7976931348623157e308}, "K", "must be a whole number in [0, 2^53]"),  # and this
        ({"K": 10**8, "served": 0}, "K", "must be a whole number in [1, 10000000]"),
        ({"status": "great"}, "status", "must be one of"),
        ({"status": "optimal", "bound": 7}, "bound", "must equal served (6)"),
        ({"status": "error", "served": 3, "feasible": False}, "served", 'must be 0 when status is "error"'),
        ({"status": "optimal", "feasible": False}, "feasible", "must be true when status is 'optimal'"),
        ({"runtime_s": float("inf")}, "runtime_s", "must be a finite number >= 0"),
        ({"runtime_s": -1.0}, "runtime_s", "must be a finite number >= 0"),
        ({"feasible": "maybe"}, "feasible", "must be true or false"),
        ({"lp_iterations": 0.5}, "lp_iterations", "must be a whole number in [0, 2^53]"),  # fuzz
        ({"nodes": "x"}, "nodes", "must be a whole number in [0, 2^53]"),
        ({"z": 2.0}, "z", "must be a number in [0, 1]"),
        ({"deterministic_time": -3.0}, "deterministic_time", "must be a finite number >= 0"),
    ],
)
def test_an_impossible_cell_is_named(cells: dict[str, Any], column: str, rule: str) -> None:
    with pytest.raises(InputError) as info:
        check_results([row(), row(**cells)], "t.csv")
    assert f"t.csv: row 2, column {column}: {rule}" in str(info.value)


def test_rows_of_one_instance_agree_on_k() -> None:
    with pytest.raises(InputError, match=r"row 2, column K: is 12, but row 1 of the same instance says 10"):
        check_results([row(), row(K=12)], "t.csv")


def test_an_optimal_row_below_a_feasible_row_of_its_instance_is_a_contradiction() -> None:
    with pytest.raises(
        InputError, match=r"row 1, column status: claims no schedule serves more than 0, but row 2"
    ):
        check_results([row(status="optimal", served=0, bound=None), row(served=10)], "t.csv")
    with pytest.raises(InputError, match=r"row 2, column bound: .* more than 4, but row 1"):
        check_results([row(served=6), row(served=0, bound=4, feasible=False, status="time_limit")], "t.csv")
    # other instances do not bind each other; equal claims agree
    check_results([row(status="optimal", served=3, bound=3, instance_sha256="b" * 64), row(served=10)], "t")
    check_results(
        [
            row(status="optimal", served=6, bound=6),
            row(served=6),
            row(served=0, feasible=False, status="time_limit"),
        ],
        "t",
    )


def _table_of_a_batch(tmp_path: Path) -> Path:
    for seed in (1, 2):
        write_instance(generate("fig4", users=6, seed=seed), tmp_path / "inst" / f"i{seed}.json")
    run_batch([tmp_path / "inst"], [make_config("balance"), make_config("ad-only")], tmp_path / "run")
    return tmp_path / "run" / "results.csv"


def _edit(path: Path, index: int, **cells: str) -> Path:
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    rows[index].update(cells)
    out = path.with_name("edited.csv")
    with out.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return out


def test_report_refuses_an_edited_table_naming_file_row_and_column(tmp_path: Path, capsys: Any) -> None:
    table = _table_of_a_batch(tmp_path)
    assert len(read_results([table])) == 4  # the table as written passes
    code, _, err = run(capsys, "report", _edit(table, 0, served="999"), "--out", tmp_path / "r1")
    assert code == 2
    assert "edited.csv: row 1, column served: must be at most K = 6, got 999" in err
    assert not (tmp_path / "r1").exists()
    code, _, err = run(capsys, "report", _edit(table, 2, served="-4"), "--out", tmp_path / "r2")
    assert code == 2
    assert "edited.csv: row 3, column served: must be a whole number in [0, 2^53], got '-4'" in err


def test_generator_fields_of_mixed_types_keep_every_row(tmp_path: Path) -> None:
    for seed, value in ((1, 1), (2, "two")):  # an outside file wrote its seed as text
        doc = json.loads(json.dumps(_instance_doc(seed)))
        doc["generator"]["seed"] = value
        (tmp_path / "inst").mkdir(exist_ok=True)
        (tmp_path / "inst" / f"i{seed}.json").write_text(json.dumps(doc))
    out = run_batch([tmp_path / "inst"], [make_config("ad-only")], tmp_path / "run", progress=False)
    assert out.solved == 2
    df = read_results([tmp_path / "run"])
    assert sorted(df["gen_seed"]) == ["1", "two"]


def test_a_generator_integer_beyond_int64_is_kept_as_its_digits(tmp_path: Path) -> None:
    """Found by the long fuzz run: ``"preset": 2**64`` in an instance's provenance stopped the
    table writer (parquet holds int64) with an internal error after the solve."""
    doc = _instance_doc(1)
    doc["generator"]["preset"] = 2**64
    (tmp_path / "inst").mkdir()
    (tmp_path / "inst" / "i1.json").write_text(json.dumps(doc))
    out = run_batch([tmp_path / "inst"], [make_config("ad-only")], tmp_path / "run", progress=False)
    assert out.solved == 1
    assert list(read_results([tmp_path / "run"])["gen_preset"]) == [str(2**64)]


def _instance_doc(seed: int) -> dict[str, Any]:
    from balance_opt.io import instance_to_dict

    return instance_to_dict(generate("fig4", users=4, seed=seed, name=f"i{seed}"))
