"""Every solver option has a domain, checked before any solve, and every CLI number flag
is checked when the command line is parsed; the listing of ``balance-opt solvers``."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from balance_opt import generate, write_instance
from balance_opt.batch.configs import make_config
from balance_opt.errors import InputError
from balance_opt.solvers import solver_class, solver_names
from balance_opt.solvers.base import MAX_INT, MAX_SECONDS, MAX_THREADS, InvalidOption

REPO = Path(__file__).resolve().parent.parent


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "balance_opt.cli", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("solver", "options", "words"),
    [
        ("milp-cpsat", {"threads": -4}, "threads must be an integer in [1, 256], got -4"),
        ("milp-highs", {"threads": 100_000}, "threads must be an integer in [1, 256], got 100000"),
        ("exact", {"threads": 2**62}, "threads must be an integer in [1, 256]"),
        ("milp-highs", {"z_time_limit": math.inf}, "z_time_limit must be a finite number in (0, 1e+07]"),
        ("milp-highs", {"z_time_limit": 0.0}, "z_time_limit must be a finite number in (0, 1e+07]"),
        ("milp-highs", {"cutoff": 2**62}, "cutoff must be an integer in [0, 1000000]"),
        ("balance-plus", {"effort": 3 * 10**9}, "effort must be an integer in [1, 1000000000]"),
        ("balance-plus", {"splits": 2**62}, "splits must be an integer in [1, 10000]"),
        ("exact", {"work_limit": 0}, "work_limit must be an integer in [1, 1000000000000]"),
    ],
)
def test_out_of_domain_options_name_option_value_and_range(solver: str, options: dict, words: str) -> None:
    with pytest.raises(InvalidOption) as err:
        solver_class(solver).check_options(options)
    assert words in str(err.value)
    with pytest.raises(InputError, match=r"options\."):
        make_config(solver, options)


def test_every_numeric_option_is_bounded_and_described() -> None:
    """No option is open above (an integer stops at int64, a float is finite) and every
    option says what it does."""
    for name in solver_names():
        for key, spec in solver_class(name).option_specs.items():
            assert spec.description, (name, key)
            assert spec.problem(spec.default) is None, (name, key)
            if spec.value_type in (int, float) and not spec.choices:
                low, high = spec.bounds()
                assert low is not None, (name, key)
                assert high is not None, (name, key)
                assert high <= MAX_INT, (name, key)
                assert spec.problem(math.inf if spec.value_type is float else MAX_INT + 1) is not None
            if key == "threads":
                assert spec.default == 1, name
                assert (spec.maximum or 1) <= MAX_THREADS, name


def test_a_configuration_file_with_a_huge_thread_count_exits_2(tmp_path: Path) -> None:
    conf = tmp_path / "big.toml"
    conf.write_text('solver = "milp-highs"\n[options]\nthreads = 100000\n')
    inst = tmp_path / "i.json"
    write_instance(generate("fig4", 3, seed=1), inst)
    res = cli("solve", str(inst), "--config", str(conf), "--json")
    assert res.returncode == 2
    assert "options.threads" in res.stderr
    assert "100000" in res.stderr
    assert "[1, 256]" in res.stderr


@pytest.mark.parametrize("value", ["inf", "nan", "-1", "0", "1e30", "x"])
def test_time_limit_flags_are_checked_at_parse_time(value: str) -> None:
    for argv in (["experiment", "fig6"], ["library", "refs", "nowhere"], ["regress"]):
        res = cli(*argv, "--time-limit", value)
        assert res.returncode == 2, (argv, res.stderr)
        assert "--time-limit" in res.stderr
        assert repr(value) in res.stderr


def test_jobs_flag_is_checked_at_parse_time() -> None:
    res = cli("library", "refs", "nowhere", "--jobs", "0")
    assert res.returncode == 2
    assert "--jobs: must be an integer in [1, 1024]" in res.stderr


def test_seconds_type_accepts_the_range() -> None:
    from balance_opt.commands._args import seconds

    assert seconds("2") == 2.0
    assert seconds(f"{MAX_SECONDS:g}") == MAX_SECONDS


def test_solvers_command_lists_every_solver_with_its_parameters() -> None:
    res = cli("solvers", "--json")
    assert res.returncode == 0, res.stderr
    listed = {entry["name"]: entry for entry in json.loads(res.stdout)}
    assert set(listed) == set(solver_names())
    exact = listed["exact"]
    assert exact["proves"] == "P1"
    assert exact["parameters"]["work_limit"]["default"] is None
    assert exact["parameters"]["threads"] == {
        "default": 1,
        "domain": "an integer in [1, 256]",
        "description": solver_class("exact").option_specs["threads"].description,
    }
    assert all(e["available"] or e["install"] or e["reason"] for e in listed.values())
    one = cli("solvers", "milp-cpsat")
    assert one.returncode == 0
    assert "indicators" in one.stdout
    assert "proves: P1" in one.stdout
    for name in ("exact", "balance-plus"):  # the summary line once, then the rest of the docstring
        summary = (solver_class(name).__doc__ or "").strip().splitlines()[0]
        text = cli("solvers", name).stdout
        assert text.count(summary) == 1, text
        assert not text.startswith(f"{name}: {name}:"), text
    bad = cli("solvers", "no-such")
    assert bad.returncode == 2
    assert "unknown solver 'no-such'" in bad.stderr
