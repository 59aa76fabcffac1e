"""Inputs that once broke a command, each answered now with exit status 2 and a named file.

Every test is built from the input that broke: a changed library instance scored anyway, a
401-digit number, JSON nested 100,000 deep, a FIFO or a device where a file belongs, a
reference table pointing outside its folder, control characters in names, a TOML file with
a byte-order mark, a user given twice to ``--assign``, ``generate --name ../../escape``.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

import pytest

from balance_opt.errors import printable
from tests import test_check
from tests.test_check import STEMS, minimal, write
from tests.test_cli_basic import run

library = test_check.library  # the one-set library fixture, shared

FIXTURES = Path(__file__).parent / "fixtures"
TINY = FIXTURES / "valid" / "tiny-K2.json"


def _rewrite_reference(folder: Path, **changes: str) -> None:
    """Set columns of the first row of ``folder/reference.csv``."""
    with (folder / "reference.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    rows[0].update(changes)
    with (folder / "reference.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def test_check_refuses_an_instance_changed_after_its_reference(
    library: Path, tmp_path: Path, capsys: Any
) -> None:
    path = write(tmp_path / "mine.json", minimal(library))
    inst = library / "fig6" / f"{STEMS[0]}.json"
    doc = json.loads(inst.read_text())
    doc["server"]["memory_bytes"] *= 2  # more memory: the stored bound no longer holds
    inst.write_text(json.dumps(doc, indent=2) + "\n")
    code, out, err = run(capsys, "check", path, "--library", library)
    assert code == 2
    assert f"{STEMS[0]}.json: changed since its reference was recorded" in err
    assert "ABOVE THE PROVED BOUND" not in out + err


def test_one_overflowing_number_is_a_named_error_and_the_rest_is_scored(
    library: Path, tmp_path: Path, capsys: Any
) -> None:
    bad = tmp_path / "bad.json"
    text = json.dumps(minimal(library)).replace('"z": ', '"z": ' + "9" * 401 + ', "was": ', 1)
    bad.write_text(text)
    good = write(tmp_path / "good.json", minimal(library, STEMS[1]))
    code, out, err = run(capsys, "check", bad, good, "--library", library, "--json")
    assert code == 2
    assert "bad.json: z: must be a finite number in [0, 1]" in err
    assert "internal error" not in err
    assert [s["instance"] for s in json.loads(out)["solutions"]] == [STEMS[1]]


def test_json_nested_too_deep_is_a_named_error(library: Path, tmp_path: Path, capsys: Any) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text(json.dumps(minimal(library))[:-1] + ', "deep": ' + "[" * 100_000 + "]" * 100_000 + "}")
    code, _, err = run(capsys, "check", deep, "--library", library)
    assert code == 2
    assert "deep.json: nests arrays or objects too deeply" in err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_without_blocking(tmp_path: Path, capsys: Any) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)  # nobody writes to it: opening it the ordinary way would wait forever
    code, _, err = run(capsys, "validate", fifo)
    assert code == 2
    assert "pipe.json: is not a regular file" in err


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero here")
def test_a_device_is_refused_unread(capsys: Any) -> None:
    code, _, err = run(capsys, "validate", "/dev/zero")
    assert code == 2
    assert "/dev/zero: is not a regular file" in err


@pytest.mark.parametrize(
    ("column", "value", "rule"),
    [
        ("solution", "../../../../etc/passwd", "must be solutions/"),
        ("solution", "/dev/zero", "must be solutions/"),
        ("instance", "../fig6/x", "must be a plain file name"),
        ("best_known", "-3", "must be a count"),
        ("bound", "9" * 40, "must be a count"),
        ("sha256", "abc", "must be 64 lowercase hex digits"),
    ],
)
def test_reference_table_cells_are_checked_before_use(
    library: Path, tmp_path: Path, capsys: Any, column: str, value: str, rule: str
) -> None:
    _rewrite_reference(library / "fig6", **{column: value})
    path = write(tmp_path / "mine.json", minimal(library, STEMS[1]))
    for command in (("check", path, "--library", library), ("library", "verify", library)):
        code, _, err = run(capsys, *command)
        assert code == 2, command
        assert f"reference.csv: line 2, column {column}: {rule}" in err


def test_control_characters_in_a_solver_name_are_refused(library: Path, tmp_path: Path, capsys: Any) -> None:
    path = write(tmp_path / "mine.json", minimal(library, solver="x\x1b[31mred\nrow"))
    code, out, err = run(capsys, "check", path, "--library", library)
    assert code == 2
    assert "solver: must hold no control characters" in err
    assert "\x1b" not in out + err  # escaped, not printed
    assert "red\nrow" not in out + err


def test_control_characters_in_a_user_id_are_refused(tmp_path: Path, capsys: Any) -> None:
    doc = json.loads(TINY.read_text())
    doc["users"][0]["id"] = "u\x1b]0;owned\x07"
    path = tmp_path / "ctl.json"
    path.write_text(json.dumps(doc))
    code, _, err = run(capsys, "validate", path)
    assert code == 2
    assert "users[0].id: must hold no control characters" in err
    assert "\x1b" not in err


def test_printable_escapes_and_keeps_the_rest() -> None:
    assert printable("plain ü name") == "plain ü name"
    assert printable("a\nb\x1b[0m") == "a\\nb\\x1b[0m"


def test_a_toml_file_with_a_byte_order_mark_is_read(tmp_path: Path, capsys: Any) -> None:
    config = tmp_path / "bom.toml"
    config.write_bytes(b'\xef\xbb\xbfsolver = "balance"\n')
    code, _, err = run(capsys, "solve", TINY, "--config", config, "--out", tmp_path / "run")
    assert (code, err.count("error")) == (0, 0)


def test_assign_with_a_user_given_twice_is_refused(capsys: Any) -> None:
    uid = json.loads(TINY.read_text())["users"][0]["id"]
    code, _, err = run(capsys, "evaluate", TINY, "--z", "0.5", "--assign", f"{uid}=ad,{uid}=sd")
    assert code == 2
    assert f"user {uid!r} is given twice" in err


@pytest.mark.parametrize("name", ["../../escape", "a/b", ".hidden", "c:\\x", "new\nline"])
def test_generate_refuses_a_name_that_leaves_out(tmp_path: Path, capsys: Any, name: str) -> None:
    out = tmp_path / "deep" / "out"
    code, _, err = run(capsys, "generate", "--preset", "fig4", "--users", "3", "--name", name, "--out", out)
    assert code == 2
    assert "must be a plain file name" in err
    assert not any(tmp_path.rglob("*.json"))


def test_a_results_table_pointing_outside_its_folder_is_refused(
    library: Path, tmp_path: Path, capsys: Any
) -> None:
    table = tmp_path / "run" / "results.csv"
    table.parent.mkdir()
    table.write_text("instance,solution_file\nx,../../../../etc/passwd\n")
    code, _, err = run(capsys, "check", table, "--library", library)
    assert code == 2
    assert "results.csv: row 1, column solution_file: points outside the table's folder" in err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_named_as_a_results_table_is_refused(tmp_path: Path, capsys: Any) -> None:
    os.mkfifo(tmp_path / "results.csv")
    code, _, err = run(capsys, "report", tmp_path / "results.csv", "--out", tmp_path / "rep")
    assert code == 2
    assert "results.csv: is not a regular file" in err


def test_a_grid_holding_a_list_is_a_named_error(tmp_path: Path, capsys: Any) -> None:
    doc = json.loads(TINY.read_text())
    doc["server"]["z_grid"][0] = []  # found by tests/test_fuzz.py: numpy refused the ragged grid
    path = tmp_path / "ragged.json"
    path.write_text(json.dumps(doc))
    code, _, err = run(capsys, "validate", path)
    assert code == 2
    assert "ragged.json: server.z_grid[0]: must be a number in [0, 1], got []" in err


@pytest.mark.parametrize(("memory", "answer"), [(1.0, "refused"), (70.0, "optimal at z = 1")])
def test_memory_below_the_weights_is_answered(
    tmp_path: Path, capsys: Any, memory: float, answer: str
) -> None:
    """Found by the fuzz suite: exact crashed where the weights fit at no z, or not at the first."""
    doc = json.loads(TINY.read_text())
    doc["server"]["memory_bytes"] = memory  # the weights: 64 B of LLM, 16 B of SLM (loaded while z < 1)
    path = tmp_path / "tight.json"
    path.write_text(json.dumps(doc))
    for solver in ("exact", "exhaustive", "balance", "milp-highs"):
        code, out, err = run(capsys, "solve", path, "--solver", solver, "--json")
        if answer == "refused":
            assert code in (0, 2), err
            assert "internal error" not in err
            if solver == "exact":
                assert code == 2
                assert "no schedule is feasible: the weights need at least 64 B" in err
        else:
            assert code == 0, err
            doc_out = json.loads(out)
            assert doc_out["feasible"] is True, (solver, doc_out.get("error"))
            assert doc_out["z"] == 1.0


def test_an_assignment_mode_that_is_a_list_is_a_named_error(tmp_path: Path, capsys: Any) -> None:
    doc = json.loads((FIXTURES / "valid" / "tiny-K2-solution.json").read_text())
    doc["assignment"]["u0"] = []  # found by the fuzz suite: unhashable in the mode lookup
    path = tmp_path / "sol.json"
    path.write_text(json.dumps(doc))
    code, _, err = run(capsys, "evaluate", TINY, path)
    assert code == 2
    assert 'sol.json: assignment.u0: must be "ad", "sd" or "none", got []' in err


@pytest.mark.parametrize(
    ("argv", "rule"),
    [
        (["--grid-step", "1e-9"], "--grid-step must be in [0.001, 1]"),  # hung: a grid of 10^9 values
        (["--draft-length", "1000000"], "server.draft_length: must be an integer >= 1 and <= 64"),
    ],
)
def test_generate_options_outside_their_range_are_refused(
    tmp_path: Path, capsys: Any, argv: list[str], rule: str
) -> None:
    code, _, err = run(capsys, "generate", "--preset", "fig4", "--users", "3", *argv, "--out", tmp_path)
    assert code == 2
    assert rule in err
    assert not list(tmp_path.glob("*.json"))


def test_a_grid_of_more_than_1001_values_is_refused(tmp_path: Path, capsys: Any) -> None:
    doc = json.loads(TINY.read_text())
    doc["server"]["z_grid"] = [i / 2000 for i in range(2001)]
    path = tmp_path / "fine.json"
    path.write_text(json.dumps(doc))
    code, _, err = run(capsys, "validate", path)
    assert code == 2
    assert "fine.json: server.z_grid: must hold at most 1001 values, got 2001" in err


@pytest.mark.parametrize(
    ("argv", "rule"),
    [  # each found by tests/test_fuzz.py::test_generate_option_values
        (["--name", "9" * 400], "must be a plain file name of 1 to 200 characters"),  # OSError: name too long
        (["--count", "9" * 400], "argument --count: must be an integer in [1, 100000]"),  # ran for ever
        (["--users", "10000000000"], "argument --users/-K: must be an integer in [1, 1000000]"),
        (["--downlink-psd", "1e308"], "power spectral densities must be in [-300, 100] dBm/Hz"),  # Overflow
    ],
)
def test_generate_knobs_the_fuzz_suite_broke(tmp_path: Path, capsys: Any, argv: list[str], rule: str) -> None:
    code, _, err = run(capsys, "generate", "--preset", "fig4", "--users", "3", *argv, "--out", tmp_path)
    assert code == 2
    assert rule in err
    assert "internal error" not in err


def test_an_unwritable_output_path_is_named(tmp_path: Path, capsys: Any) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")  # a file where a folder must be (root ignores permissions)
    code, _, err = run(capsys, "generate", "--preset", "fig4", "--users", "3", "--out", blocker / "out")
    assert code == 2
    assert str(blocker) in err
    assert "internal error" not in err
