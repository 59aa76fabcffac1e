"""The fuzz suite: mutated files and option values through the real commands.

Properties: every answer has a documented exit status, never an internal error, and a
bad-input answer names the file; where the evaluator accepts a mutated instance, ``exact``
and brute force agree on it and every solver's schedule is judged feasible; after any
sequence of interrupted batches, every solution on disk has its row. Each property runs a
small budget in CI (``FAST`` examples) and a long one marked ``slow`` (``LONG``);
docs/contract.md gives the counts and times.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from balance_opt.batch.configs import make_config
from balance_opt.batch.runner import run_batch
from balance_opt.batch.table import read_results
from balance_opt.errors import SolveRefused
from balance_opt.evaluator import Schedule, evaluate
from balance_opt.generator import generate
from balance_opt.io import read_instance, write_instance
from balance_opt.solvers import get_solver
from tests.fuzzing import answer, dump, hostile_values, mutated_documents, mutated_texts
from tests.oracles import p1_optimum

FIXTURES = Path(__file__).parent / "fixtures" / "valid"
TINY = FIXTURES / "tiny-K2.json"
SMALL = FIXTURES / "fig4-K3-s0007.json"
TINY_SOLUTION = FIXTURES / "tiny-K2-solution.json"
FAST, LONG = 25, 1000
BUDGETS = [
    pytest.param(FAST, id="ci"),
    pytest.param(LONG, id="long", marks=pytest.mark.slow),
]
QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]


def run_examples(examples: int, strategy: st.SearchStrategy[Any], check: Callable[[Any], None]) -> None:
    """``check`` on ``examples`` draws of ``strategy`` (one budget per parametrized test)."""
    settings(max_examples=examples, deadline=None, suppress_health_check=QUIET, database=None)(
        given(strategy)(check)
    )()


def _docs(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _file_texts(path: Path) -> st.SearchStrategy[str]:
    base = _docs(path)
    return st.one_of(mutated_documents(base).map(dump), mutated_texts(path.read_text()))


def _in_tmp(text: str, name: str) -> tuple[tempfile.TemporaryDirectory[str], Path]:
    tmp = tempfile.TemporaryDirectory()
    path = Path(tmp.name) / name
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return tmp, path


def _holds_contract(*argv: str | Path, named: tuple[str | Path, ...] = ()) -> int:
    got = answer(*argv)
    problems = got.problems(named)
    assert not problems, f"balance-opt {' '.join(map(str, argv))}: {problems}\n{got.err[-2000:]}"
    return got.code


def _agree_on_accepted(path: Path) -> None:
    """A mutated instance the reader accepts: exact equals brute force, every schedule is
    judged by the evaluator as its solver claims."""
    inst = read_instance(path)
    if inst.num_users > 4 or len(inst.server.z_grid) > 25:
        return  # brute force would take too long; the commands above already ran on it
    balance = get_solver("balance").solve(inst)
    if not any(evaluate(inst, Schedule.empty(inst.num_users, z)).feasible for z in inst.server.z_grid):
        # the weights fit at no z: no schedule at all is feasible, and exact says so
        with pytest.raises(SolveRefused, match="no schedule is feasible"):
            get_solver("exact").solve(inst)
        assert not evaluate(inst, balance.schedule).feasible
        return
    exact = get_solver("exact").solve(inst)
    for result in (exact, balance):
        assert result.status != "error", result.error
        assert evaluate(inst, result.schedule).feasible
    assert exact.served == p1_optimum(inst) >= balance.served


@pytest.mark.parametrize("examples", BUDGETS)
def test_mutated_instances(examples: int) -> None:
    def check(text: str) -> None:
        tmp, path = _in_tmp(text, "inst.json")
        with tmp:
            code = _holds_contract("validate", path, named=(path,))
            out = Path(tmp.name) / "r"
            solved = _holds_contract("solve", path, "--solver", "balance", "--out", out, named=(path,))
            assert (code == 0) == (solved == 0)
            if code == 0:
                _agree_on_accepted(path)

    run_examples(examples, st.one_of(_file_texts(TINY), _file_texts(SMALL)), check)


@pytest.mark.parametrize("examples", BUDGETS)
def test_mutated_solutions(examples: int) -> None:
    def check(text: str) -> None:
        tmp, path = _in_tmp(text, "sol.json")
        with tmp:
            _holds_contract("evaluate", TINY, path, named=(path,))
            _holds_contract("validate", path, "--instance", TINY, named=(path,))

    run_examples(examples, _file_texts(TINY_SOLUTION), check)


@pytest.mark.parametrize("examples", BUDGETS)
def test_mutated_configurations(examples: int) -> None:
    solvers = st.sampled_from(["balance", "balance-plus", "exact", "milp-highs", "ad-only", "nobody", 7])
    keys = st.sampled_from(["threads", "time_limit", "gap", "draft_length", "implementation", "x"])
    options = st.dictionaries(keys, hostile_values.filter(lambda v: not isinstance(v, list)), max_size=2)

    def check(case: tuple[Any, dict[str, Any], float]) -> None:
        solver, opts, limit = case
        lines = [f"solver = {json.dumps(solver)}", "[options]"]
        lines += [f"{k} = {_toml(v)}" for k, v in opts.items()]
        tmp, path = _in_tmp("\n".join(lines) + "\n", "c.toml")
        with tmp:
            _holds_contract(
                "solve", TINY, "--config", path, "--time-limit", repr(limit), "--out", Path(tmp.name) / "r"
            )

    limits = st.sampled_from([1.0, 0.0, -1.0, float("inf"), float("nan"), 1e300, 30.0])
    run_examples(examples, st.tuples(solvers, options, limits), check)


def _toml(value: Any) -> str:
    """A TOML value; what TOML cannot hold becomes a string (the reader then says so)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if (isinstance(value, int) and abs(value) < 2**63) or isinstance(value, float):
        return repr(value) if value == value and abs(value) != float("inf") else '"nan"'
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    return json.dumps(str(value)[:100])


@pytest.mark.parametrize(  # a report draws its figures: about 0.5 s per input
    "examples", [pytest.param(FAST, id="ci"), pytest.param(300, id="long", marks=pytest.mark.slow)]
)
def test_mutated_results_tables(examples: int, tmp_path: Path) -> None:
    write_instance(generate("fig4", users=4, seed=1), tmp_path / "inst" / "a.json")
    run_batch([tmp_path / "inst"], [make_config("balance"), make_config("ad-only")], tmp_path / "run")
    with (tmp_path / "run" / "results.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    columns = sorted(rows[0])

    def check(case: tuple[int, str, Any]) -> None:
        index, column, value = case
        edited = [dict(r) for r in rows]
        edited[index % len(edited)][column] = str(value)[:200]
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(edited)
        tmp, path = _in_tmp(buf.getvalue(), "results.csv")
        with tmp, _time_limit(60):
            _holds_contract("report", path, "--out", Path(tmp.name) / "rep", named=(path,))

    run_examples(examples, st.tuples(st.integers(0, 9), st.sampled_from(columns), hostile_values), check)


@pytest.mark.parametrize(
    "examples", [pytest.param(8, id="ci"), pytest.param(200, id="long", marks=pytest.mark.slow)]
)
def test_interrupted_batches_lose_no_row(examples: int) -> None:
    configs = [make_config("ad-only"), make_config("sd-only"), make_config("balance")]

    def check(steps: list[tuple[int, int, int]]) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            inst = Path(tmp) / "inst"
            for seed in (1, 2, 3):
                write_instance(generate("fig4", users=3, seed=seed), inst / f"i{seed}.json")
            run = Path(tmp) / "run"
            for n_inst, n_conf, stop_at in steps:
                files = sorted(inst.glob("*.json"))[: n_inst + 1]
                chosen = configs[: n_conf + 1]
                _interrupted(lambda f=files, c=chosen: run_batch(f, c, run, progress=False), stop_at)
            run_batch([inst], configs, run, progress=False)
            on_disk = sorted(p.name for p in (run / "solutions").glob("*.json"))
            table = read_results([run])
            assert sorted(Path(f).name for f in table["solution_file"]) == on_disk
            assert len(on_disk) == 9
            assert not list(run.rglob("*.tmp"))

    step = st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 12))
    run_examples(examples, st.lists(step, min_size=1, max_size=4), check)


def _interrupted(batch: Callable[[], Any], stop_at: int) -> None:
    """Run ``batch``, with Ctrl-C at its ``stop_at``-th rename of a finished file (0: none)."""
    real = os.replace
    calls = [0]

    def flaky(src: Any, dst: Any) -> None:
        calls[0] += 1
        if calls[0] == stop_at:
            raise KeyboardInterrupt
        real(src, dst)

    with mock.patch("os.replace", flaky), contextlib.suppress(KeyboardInterrupt):
        batch()


def _generate_flags() -> list[str]:
    """Every value-taking flag of ``generate`` but the output folder."""
    import argparse

    from balance_opt.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    actions = sub.choices["generate"]._actions
    flags = [a.option_strings[-1] for a in actions if a.option_strings and a.nargs != 0]
    return sorted(f for f in flags if f not in ("--out", "--help"))


OPTION_TEXTS = ("0", "-1", "1e-9", "0.001", "0.5", "1", "3", "64", "65", "1e308", "inf", "nan", "-0",
                "9" * 400, "", "abc", "1,2", "3,1", "../x", "\x1b[2J", "rtx4090", "llama-2-7b")  # fmt: skip


@pytest.mark.parametrize("examples", BUDGETS)
def test_generate_option_values(examples: int) -> None:
    flags = _generate_flags()

    def check(case: tuple[str, str]) -> None:
        flag, value = case
        with tempfile.TemporaryDirectory() as tmp:
            users = [] if flag == "--users" else ["--users", "3"]
            with _time_limit(60):  # a hang is a failure: --grid-step 1e-9 once hung
                _holds_contract("generate", "--preset", "fig4", *users, flag, value, "--out", tmp)

    run_examples(examples, st.tuples(st.sampled_from(flags), st.sampled_from(OPTION_TEXTS)), check)


@contextlib.contextmanager
def _time_limit(seconds: int) -> Any:
    """Fail instead of hanging (Unix; elsewhere no limit)."""
    import signal

    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def hang(*_: object) -> None:
        raise AssertionError(f"the command ran past {seconds} s")

    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
