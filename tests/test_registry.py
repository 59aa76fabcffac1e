"""The solver registry and what each solver declares: options, what it proves, availability."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import ClassVar

import pytest

import balance_opt.solvers as solvers
from balance_opt.batch.configs import load_config, make_config
from balance_opt.errors import InputError, SolverUnavailable
from balance_opt.generator import generate
from balance_opt.io import write_instance
from balance_opt.solvers import get_solver, register, solver_class, solver_names, solver_target, unregister
from balance_opt.solvers.base import Availability, InvalidOption, Option, Solver, UnknownOption
from balance_opt.solvers.milp import MilpSolver
from balance_opt.solvers.milp.options import SweepOptions
from tests.doubles import EmptySolver


class MissingSolver(EmptySolver):
    """A double that needs a module no machine has."""

    name = "test-missing"
    requires = ("balance_opt_no_such_module",)
    install = "balance-opt-no-such-module"


class TypedSolver(EmptySolver):
    """A double with one option of each kind."""

    name = "test-typed"
    option_specs: ClassVar[Mapping[str, Option]] = {
        "flag": Option(False),
        "count": Option(2, minimum=1),
        "share": Option(0.5),
        "how": Option("a", ("a", "b")),
    }


@pytest.fixture
def extra() -> Iterator[None]:
    register("test-missing", "tests.test_registry:MissingSolver")
    register("test-typed", "tests.test_registry:TypedSolver")
    yield
    unregister("test-missing")
    unregister("test-typed")


def test_register_checks_the_target_and_keeps_names_unique() -> None:
    with pytest.raises(ValueError, match="module:Class"):
        register("test-bad", "tests.doubles.EmptySolver")
    register("balance", solver_target("balance") or "")  # the same entry again: nothing changes
    with pytest.raises(ValueError, match="already registered"):
        register("balance", "tests.doubles:EmptySolver")
    register("test-new", "tests.doubles:EmptySolver")
    try:
        register("test-new", "tests.doubles:RaisingSolver", replace=True)
        assert solver_target("test-new") == "tests.doubles:RaisingSolver"
        assert solver_class("test-new").__name__ == "RaisingSolver"
    finally:
        unregister("test-new")
    assert "test-new" not in solver_names()
    assert solver_target("test-new") is None


@pytest.mark.parametrize("name", solver_names())
def test_every_solver_declares_itself(name: str) -> None:
    cls = solver_class(name)
    assert cls.name == name
    assert cls.proves in (None, "P1", "P2")
    assert isinstance(cls.availability(), Availability)
    for key, spec in cls.option_specs.items():
        assert spec.problem(spec.default) is None, (name, key)
    if cls.is_available():
        assert get_solver(name).options == cls.option_defaults()


def test_the_milp_declarations_are_the_effective_defaults() -> None:
    highs, cpsat = get_solver("milp-highs"), get_solver("milp-cpsat")
    assert isinstance(highs, MilpSolver)
    assert isinstance(cpsat, MilpSolver)
    assert highs.sweep == SweepOptions(True, "never", "gap-first", "auto")
    assert cpsat.sweep == SweepOptions(True, "always", "plain", "never")


@pytest.mark.usefixtures("extra")
@pytest.mark.parametrize(
    ("options", "rule"),
    [
        ({"flag": 1}, "flag must be true or false, got 1"),
        ({"count": True}, "count must be an integer, got True"),
        ({"count": 2.0}, "count must be an integer, got 2.0"),
        ({"count": 0}, "count must be an integer in [1, 9223372036854775807], got 0"),
        ({"share": "x"}, "share must be a number, got 'x'"),
        ({"how": "c"}, "how must be one of ('a', 'b'), got 'c'"),
        ({"how": 1}, "how must be a string, got 1"),
    ],
)
def test_option_values_are_checked_when_the_solver_is_made(options: dict[str, object], rule: str) -> None:
    with pytest.raises(InvalidOption, match=re.escape(rule)):
        get_solver("test-typed", **options)
    with pytest.raises(InputError, match=re.escape(f"options.{next(iter(options))}")) as exc:
        make_config("test-typed", options, source="test.toml")
    assert rule in str(exc.value)


@pytest.mark.usefixtures("extra")
def test_accepted_options_and_unknown_names() -> None:
    solver = get_solver("test-typed", flag=True, count=3, share=1, how="b")
    assert solver.options == {"flag": True, "count": 3, "share": 1, "how": "b"}
    assert get_solver("test-typed", how="b").options == {"flag": False, "count": 2, "share": 0.5, "how": "b"}
    with pytest.raises(UnknownOption, match="has no option 'speed'"):
        get_solver("test-typed", speed=2)


@pytest.mark.usefixtures("extra")
def test_an_unavailable_solver_says_why(tmp_path: Path) -> None:
    availability = solver_class("test-missing").availability()
    assert not availability
    assert "balance_opt_no_such_module" in availability.reason
    assert "pip install balance-opt-no-such-module" in availability.reason
    with pytest.raises(SolverUnavailable, match="not available here: solver 'test-missing' needs"):
        get_solver("test-missing")
    with pytest.raises(SolverUnavailable, match="needs balance_opt_no_such_module"):
        MissingSolver().solve(generate("fig4", 3, seed=0))
    config = tmp_path / "missing.toml"
    config.write_text('solver = "test-missing"\n')
    assert load_config(config).solver == "test-missing"  # a configuration may name it; solving it fails


# --- docs/solvers.md's example, and plug-ins by entry point ---------------------------


def _doc_blocks() -> list[str]:
    text = (Path(__file__).resolve().parent.parent / "docs" / "solvers.md").read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def _plugin(root: Path, module: str, body: str, name: str = "nobody") -> None:
    """A module and an installed distribution's dist-info naming it in the entry points."""
    (root / f"{module}.py").write_text(body, encoding="utf-8")
    info = root / f"{module}_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[balance_opt.solvers]\n{name} = {module}:Nobody\n")


def test_the_write_your_own_solver_example_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module, usage = _doc_blocks()
    (tmp_path / "my_solvers.py").write_text(module, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        exec(compile(usage, "docs/solvers.md", "exec"), {})
        assert solvers.solver_target("nobody") == "my_solvers:Nobody"
    finally:
        solvers.unregister("nobody")
        sys.modules.pop("my_solvers", None)


def test_the_readme_solver_example_runs_as_written() -> None:
    text = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    namespace: dict[str, object] = {}
    exec(compile(block, "README.md", "exec"), namespace)
    solver = namespace["Nobody"]
    assert isinstance(solver, type)
    assert issubclass(solver, Solver)


def test_an_entry_point_plugin_is_found_lazily_and_solves_from_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _plugin(tmp_path, "ep_solvers", _doc_blocks()[0])
    monkeypatch.syspath_prepend(str(tmp_path))
    solvers.rediscover()
    try:
        assert "nobody" in solvers.solver_names()
        assert "ep_solvers" not in sys.modules  # read, not imported
        assert solvers.get_solver("nobody").solve(generate("fig4", 3, seed=1)).served == 0
    finally:
        sys.modules.pop("ep_solvers", None)
        monkeypatch.undo()
        solvers.rediscover()
    assert "nobody" not in solvers.solver_names()
    inst = tmp_path / "i.json"
    write_instance(generate("fig4", 3, seed=1), inst)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    res = subprocess.run(
        [sys.executable, "-m", "balance_opt.cli", "solve", str(inst), "--solver", "nobody", "--json"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["solver"] == "nobody"


def test_a_plugin_that_fails_to_import_names_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _plugin(tmp_path, "broken_solvers", "import no_such_module_anywhere\n", name="broken")
    monkeypatch.syspath_prepend(str(tmp_path))
    solvers.rediscover()
    try:
        with pytest.raises(ImportError, match=r"solver 'broken' \(entry point of 'balance_opt.solvers'\)"):
            solvers.solver_class("broken")
    finally:
        monkeypatch.undo()
        solvers.rediscover()
