"""Each built-in solver's parameters are one frozen, typed record (``Params``) whose fields
declare the options: the options follow from the record, the record holds the checked
values, and every value a field can get has the field's type."""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, ClassVar

import pytest

from balance_opt import Schedule, SolverOutput, Termination, generate
from balance_opt.solvers import solver_class, solver_names
from balance_opt.solvers.base import InvalidOption, Option, Solver, param

# built-ins without parameters: the literal twin of balance takes none
NO_PARAMS = {"balance-literal"}


def builtins() -> list[str]:
    return [n for n in solver_names() if solver_class(n).__module__.startswith("balance_opt.")]


def _allowed(annotation: Any) -> tuple[set[type], set[Any]]:
    """The value types and the literal values a field's annotation admits."""
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return set(), set(typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        parts = [_allowed(arg) for arg in typing.get_args(annotation)]
        return set().union(*(p[0] for p in parts)), set().union(*(p[1] for p in parts))
    assert isinstance(annotation, type), f"not a type a parameter can have: {annotation!r}"
    return {annotation}, set()


@pytest.mark.parametrize("name", builtins())
def test_the_options_are_the_fields_of_the_parameters_record(name: str) -> None:
    cls = solver_class(name)
    if name in NO_PARAMS:
        assert cls.Params is None
        assert cls.option_specs == {}
        return
    assert cls.Params is not None, f"{name} declares its options without a Params record"
    assert dataclasses.is_dataclass(cls.Params)
    assert cls.Params.__dataclass_params__.frozen  # type: ignore[attr-defined]
    fields = dataclasses.fields(cls.Params)
    assert [f.name for f in fields] == list(cls.option_specs)
    hints = typing.get_type_hints(cls.Params)
    for f in fields:
        spec = cls.option_specs[f.name]
        assert f.default == spec.default, (name, f.name)
        types, literals = _allowed(hints[f.name])
        values = list(spec.choices) or [spec.default]
        for value in values:
            ok = value in literals or type(value) in types or (type(value) is int and float in types)
            assert ok, f"{name}.{f.name}: {value!r} is not a {hints[f.name]}"
        if spec.default is None:
            assert type(None) in types, (name, f.name)
        if literals:  # a Literal field: its choices are exactly the literal's values
            assert set(spec.choices) == literals, (name, f.name)
            assert not types - {type(None)}, (name, f.name)


@pytest.mark.parametrize("name", [n for n in builtins() if n not in NO_PARAMS])
def test_the_record_holds_the_checked_values(name: str) -> None:
    cls = solver_class(name)
    assert cls.Params is not None
    solver = cls()
    assert solver.params == cls.Params(**cls.option_defaults())
    assert dataclasses.asdict(solver.params) == solver.options
    with pytest.raises(dataclasses.FrozenInstanceError):
        solver.params.__setattr__(next(iter(solver.options)), None)


def test_a_record_changes_with_the_options_and_is_checked_once() -> None:
    cls = solver_class("exact")
    solver = cls(threads=2, work_limit=50)
    assert (solver.params.threads, solver.params.work_limit) == (2, 50)
    with pytest.raises(InvalidOption, match="threads must be an integer"):
        cls(threads="2")  # checked by the declared option before the record is made


@dataclasses.dataclass(frozen=True)
class _CountParams:
    limit: int = param(Option(3, minimum=0, maximum=10, description="the most users served"))


class _FirstUsers(Solver):
    """A plug-in with a parameters record: AD for the first ``limit`` users it can fit alone."""

    name = "first-users"
    Params: ClassVar[type | None] = _CountParams
    params: _CountParams

    def _solve(
        self, instance: Any, *, time_limit: float | None, seed: int, hint: Schedule | None
    ) -> SolverOutput:
        z = instance.server.z_grid[-1]
        return SolverOutput(
            Schedule.from_sets(instance.num_users, z, range(self.params.limit), ()), Termination.COMPLETED
        )


def test_a_plug_in_declares_its_options_by_a_record() -> None:
    assert list(_FirstUsers.option_specs) == ["limit"]
    assert _FirstUsers.option_specs["limit"].description == "the most users served"
    with pytest.raises(InvalidOption, match=r"limit must be an integer in \[0, 10\], got 11"):
        _FirstUsers(limit=11)
    sol = _FirstUsers(limit=0).solve(generate("fig4", 5, seed=1))
    assert sol.options["limit"] == 0
    assert sol.served == 0
