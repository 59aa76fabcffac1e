"""``balance-opt generate / validate / evaluate``: exit codes, messages, --help, --json."""

from __future__ import annotations

import dataclasses
import json
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from balance_opt.cli import main
from balance_opt.evaluator import Schedule, evaluate
from balance_opt.io import read_instance

FIXTURES = Path(__file__).parent / "fixtures"
TINY = FIXTURES / "valid" / "tiny-K2.json"
TINY_SOLUTION = FIXTURES / "valid" / "tiny-K2-solution.json"


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse's own usage errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("command", ["generate", "validate", "evaluate"])
def test_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0
    assert f"usage: balance-opt {command}" in capsys.readouterr().out


def test_validate_ok(capsys: pytest.CaptureFixture[str]) -> None:
    files = sorted((FIXTURES / "valid").glob("*.json"))
    code, out, err = run(capsys, "validate", *files, "--instance", TINY)
    assert code == 0
    assert err == ""
    assert f"{TINY}: ok (instance, K=2)" in out.splitlines()
    assert f"{FIXTURES / 'valid' / 'fig4-K3-s0007.json'}: ok (instance, K=3)" in out.splitlines()
    assert any(line.startswith(f"{TINY_SOLUTION}: ok (solution") for line in out.splitlines())


def test_validate_bad_files_one_line_each(capsys: pytest.CaptureFixture[str]) -> None:
    bad = sorted((FIXTURES / "invalid").glob("*.json"))
    code, out, err = run(capsys, "validate", TINY, *bad, "--instance", TINY)
    assert code == 2
    assert out.splitlines() == [f"{TINY}: ok (instance, K=2)"]
    lines = err.splitlines()
    assert len(lines) == len(bad)
    for line, path in zip(lines, bad, strict=True):
        assert str(path) in line
    assert "Traceback" not in err
    assert "users[1].acceptance: must be a finite number with 0 < value < 1" in err


def test_validate_solution_of_other_instance(capsys: pytest.CaptureFixture[str]) -> None:
    other = FIXTURES / "valid" / "fig4-K3-s0007.json"
    code, _, err = run(capsys, "validate", TINY_SOLUTION, "--instance", other)
    assert code == 2
    assert f"instance_sha256: names instance 'tiny-K2', not the bytes of {other} ('fig4-K3-s0007')" in err


def minimal_solution(tmp_path: Path, name: str = "mine.json", **fields: object) -> Path:
    """The smallest solution file docs/formats.md allows, for TINY, plus ``fields``."""
    doc = {"schema": "balance-opt/solution", "version": 1, "instance": "tiny-K2", "z": 0.5,
           "assignment": {"u0": "ad", "u1": "sd"}}  # fmt: skip
    path = tmp_path / name
    path.write_text(json.dumps({**doc, **fields}))
    return path


def test_validate_a_minimal_solution(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Only the required fields: ok without --instance, and with it the claims are evaluated."""
    path = minimal_solution(tmp_path)
    code, out, err = run(capsys, "validate", path)
    assert (code, err) == (0, "")
    assert out == f"{path}: ok (solution, instance=tiny-K2, claims not checked without --instance)\n"
    code, out, err = run(capsys, "validate", path, "--instance", TINY)
    assert (code, err) == (0, "")
    assert out == f"{path}: ok (solution, instance=tiny-K2, claims confirmed by the evaluator)\n"
    doc = json.loads(path.read_text())
    del doc["instance"]
    path.write_text(json.dumps({**doc, "instance_sha256": "0" * 64}))
    code, out, err = run(capsys, "validate", path)
    assert (code, out, err) == (0, f"{path}: ok (solution, instance_sha256=000000000000..., "
                                   "claims not checked without --instance)\n", "")  # fmt: skip
    code, _, err = run(capsys, "validate", path, "--instance", TINY)
    assert code == 2
    assert "instance_sha256: names an instance with digest 000000000000..., not the bytes of" in err


def test_validate_compares_claims_with_the_evaluator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = minimal_solution(tmp_path, served=1, feasible=False, bound=1)
    code, out, err = run(capsys, "validate", path, "--instance", TINY)
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f"balance-opt validate: {path}: claim mismatch: claims served 1, the evaluator counts 2",
        f"balance-opt validate: {path}: claim mismatch: claims feasible false, but the evaluator accepts it",
        f"balance-opt validate: {path}: FALSE PROOF: claims a proved bound 1 below its own 2 served users",
    ]
    other = minimal_solution(tmp_path, "other.json", instance="fig4-K3-s0007")
    code, _, err = run(capsys, "validate", other, "--instance", TINY)
    assert code == 2
    assert f"{other}: instance: names instance 'fig4-K3-s0007', but {TINY} is 'tiny-K2'" in err


def test_evaluate_a_solution_of_another_instance_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The instance is compared before the user ids, and the message says which one the file names."""
    other = FIXTURES / "valid" / "fig4-K3-s0007.json"
    code, out, err = run(capsys, "evaluate", other, TINY_SOLUTION)
    assert (code, out) == (2, "")
    assert err.strip().endswith(
        f"{TINY_SOLUTION}: instance_sha256: names instance 'tiny-K2', not the bytes of {other} "
        "('fig4-K3-s0007') (--other-instance evaluates it anyway)"
    )
    mine = minimal_solution(tmp_path, instance="tiny-K2-q95")
    code, _, err = run(capsys, "evaluate", TINY, mine)
    assert code == 2
    assert f"instance: names instance 'tiny-K2-q95', but {TINY} is 'tiny-K2'" in err
    code, out, err = run(capsys, "evaluate", TINY, mine, "--other-instance")
    assert code == 0
    assert "served 2/2" in out
    assert f"warning: {mine}: names instance 'tiny-K2-q95', but {TINY} is 'tiny-K2'" in err
    code, _, err = run(capsys, "evaluate", other, mine, "--other-instance")
    assert code == 2
    assert "assignment: must give every user a mode" in err  # the user ids must still fit


def test_evaluate_exit_status_on_an_infeasible_schedule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """0 whenever the evaluation is printed; 1 with --fail-on-infeasible for a violation or a false claim."""
    infeasible = ("--z", "1", "--assign", "u0=ad,u1=sd")
    assert run(capsys, "evaluate", TINY, *infeasible)[0] == 0
    code, out, _ = run(capsys, "evaluate", TINY, *infeasible, "--fail-on-infeasible")
    assert code == 1
    assert "1 SD user(s) at z = 1, first user u1 (SD has no compute, D7)" in out
    assert run(capsys, "evaluate", TINY, "--z", "0.5", "--assign", "u0=ad", "--fail-on-infeasible")[0] == 0
    assert run(capsys, "evaluate", TINY, TINY_SOLUTION, "--fail-on-infeasible", "--json")[0] == 0
    boast = minimal_solution(tmp_path, served=3)
    assert run(capsys, "evaluate", TINY, boast)[0] == 0
    code, _, err = run(capsys, "evaluate", TINY, boast, "--fail-on-infeasible")
    assert code == 1
    assert "claims served 3, the evaluator counts 2" in err


def test_violations_name_the_user_the_constraint_and_by_how_much() -> None:
    inst = read_instance(TINY)
    late = inst.replace(deadline_s=np.array([1e-3, 1e-3]))
    ev = evaluate(late, Schedule(0.5, np.array([1, 0], dtype=np.int8)))
    (v,) = ev.violations
    over = float(ev.completion_s[0]) - 1e-3
    assert v == (f"user u0 (ad) completes at {ev.completion_s[0]:.9g} s, {over:.6g} s after its "
                 "deadline 0.001 s (20), (21c)")  # fmt: skip
    small = inst.replace(server=dataclasses.replace(inst.server, memory_bytes=100.0))
    ev = evaluate(small, Schedule(0.5, np.array([1, 2], dtype=np.int8)))
    assert (
        ev.violations[-1]
        == f"memory {ev.memory_bytes:.9g} B exceeds the capacity 100 B by {ev.memory_bytes - 100:.6g} B (21d)"
    )


def test_evaluate_json_shape(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "evaluate", TINY, TINY_SOLUTION, "--json")
    assert code == 0
    assert err == ""
    doc = json.loads(out)
    ev = evaluate(read_instance(TINY), Schedule(0.5, np.array([1, 2], dtype=np.int8)))
    assert doc["feasible"] is True
    assert doc["served"] == 2
    assert doc["t_ad"] == ev.t_ad
    assert doc["t_sd"] == ev.t_sd
    assert doc["memory_bytes"] == ev.memory_bytes == pytest.approx(172.0)
    assert doc["violations"] == []
    assert doc["instance_sha256_matches"] is True
    assert [u["mode"] for u in doc["users"]] == ["ad", "sd"]
    # what the solution file claims comes after the evaluation's own fields
    about_the_file = ["solution", "solver", "status", "instance_sha256_matches", "claimed_served"]
    assert list(doc)[-7:] == [*about_the_file, "claimed_feasible", "claim_mismatches"]
    assert (doc["solution"], doc["claim_mismatches"]) == (str(TINY_SOLUTION), [])
    code, out, _ = run(capsys, "evaluate", TINY, "--z", "0.5", "--json")
    assert code == 0
    assert not set(json.loads(out)) & {*about_the_file, "claim_mismatches"}  # no file, nothing about one


def test_evaluate_inline_schedule_and_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "evaluate", TINY, "--z", "1", "--assign", "u0=ad,u1=sd", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["feasible"] is False
    assert doc["t_sd"] is None  # SD has no compute at z = 1 (D7)
    assert any("SD user(s) at z = 1" in v for v in doc["violations"])
    code, out, _ = run(capsys, "evaluate", TINY, "--z", "0.5", "--assign", "u0=ad")
    assert code == 0
    for fragment in (
        "feasible, served 1/2",
        "upload",
        "compute",
        "fixed passes",
        "weights LLM",
        "KV cache SD",
        "free",
        "slack_s",
        "violations: none",
    ):
        assert fragment in out


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["evaluate", "missing.json", "--z", "0.5"], "cannot be read"),
        (["evaluate", str(TINY), "--z", "0.5", "--assign", "u9=ad"], "no user 'u9'"),
        (["evaluate", str(TINY), "--z", "0.5", "--assign", "u0=fast"], "ID=ad|sd|none"),
        (["evaluate", str(TINY), "--z", "1.5"], "--z must be in [0, 1]"),
        (["evaluate", str(TINY)], "give a SOLUTION file"),
        (["evaluate", str(TINY), str(TINY_SOLUTION), "--z", "0.5"], "not both"),
        (["evaluate", str(TINY), str(FIXTURES / "invalid" / "solution-missing-user.json")], "missing ['u1']"),
        (["evaluate", str(FIXTURES / "invalid" / "nan.json"), "--z", "0.5"], "not valid JSON"),
        (["generate", "--out", "x", "--acceptance", "0.5,1.5"], "acceptance"),
        (["generate", "--out", "x", "--grid-step", "0.3"], "--grid-step"),
        (["generate", "--out", "x", "--hardware", "tpu"], "unknown hardware"),
        (["generate", "--out", "x", "--count", "0"], "--count"),
        (["generate", "--preset", "fig4"], "required: --out"),
        (["generate", "--out", "x", "--z-grid", "0,a"], "comma-separated numbers"),
        (["evaluate", str(TINY), "--z", "abc"], "invalid float value"),
        (["validate"], "required: FILE"),
    ],
)
def test_bad_input_exit_2_one_line(
    argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert fragment in err
    assert "Traceback" not in err


def test_fig1_compare_modes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "generate", "--preset", "fig1", "--output-tokens", "600", "--out", tmp_path)
    assert code == 0
    path = Path(out.strip())
    code, out, _ = run(capsys, "evaluate", path, "--compare-modes")
    assert code == 0
    assert "SD needs 18.3% more memory than AD" in out
    code, out, _ = run(capsys, "evaluate", path, "--compare-modes", "--json")
    doc = json.loads(out)
    assert round(doc["sd_more_memory_pct"], 1) == 18.3
    assert doc["ad"]["memory_bytes"] < doc["sd"]["memory_bytes"]


def test_console_script_exit_status(tmp_path: Path) -> None:
    """The real process: exit 2 and one stderr line, no traceback."""
    bad = FIXTURES / "invalid" / "acceptance-one.json"
    proc = subprocess.run(
        [sys.executable, "-m", "balance_opt.cli", "validate", str(bad)],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1
    assert "users[1].acceptance" in proc.stderr


def test_every_written_file_follows_the_umask(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Instances, solutions, results tables, report Markdown, CSVs and figures: 0666 less the umask."""
    from tests.test_io import umask

    with umask(0o027):
        for users in ("4", "5"):
            code, _, _ = run(
                capsys, "generate", "--preset", "fig4", "--users", users, "--out", tmp_path / "i"
            )
            assert code == 0
        code, _, _ = run(capsys, "solve", tmp_path / "i", "--solver", "balance", "--out", tmp_path / "run")
        assert code == 0
        code, _, _ = run(capsys, "report", tmp_path / "run", "--out", tmp_path / "report")
        assert code == 0
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    suffixes = {p.suffix for p in files}
    assert {".json", ".parquet", ".csv", ".md", ".png", ".svg"} <= suffixes
    assert {str(p.relative_to(tmp_path)): oct(stat.S_IMODE(p.stat().st_mode)) for p in files} == {
        str(p.relative_to(tmp_path)): oct(0o640) for p in files
    }


def test_every_default_is_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    """An option with a default says it (a command never hides where it writes)."""
    for argv, shown in (
        (["experiment", "--help"], "runs/paper-reproduction"),
        (["experiment", "--help"], "(default: 3)"),
        (["online", "--help"], "(default: window)"),
        (["generate", "--help"], "(default: "),
    ):
        with pytest.raises(SystemExit):
            main(argv)
        assert shown in " ".join(capsys.readouterr().out.split()), (argv, shown)
