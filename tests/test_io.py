"""File formats (docs/formats.md): every rule rejected with file, JSON path and rule; round trips."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings

from balance_opt.evaluator import Schedule, evaluate
from balance_opt.instance import Instance, InvalidInstance
from balance_opt.io import (
    InputError,
    atomic_write,
    instance_bytes,
    instance_from_dict,
    instance_to_dict,
    parse_json,
    read_bytes,
    read_document,
    read_instance,
    read_solution,
    sha256_bytes,
    write_instance,
)
from balance_opt.result import SolverOutput, make_result
from balance_opt.status import Termination
from tests.strategies import small_instances

FIXTURES = Path(__file__).parent / "fixtures"
INVALID = FIXTURES / "invalid"
VALID = FIXTURES / "valid"
TINY = VALID / "tiny-K2.json"

# fixture name -> (JSON path the message must name, fragment of the rule)
EXPECTED: dict[str, tuple[str, str]] = {
    "not-json": ("", "not valid JSON"),
    "nan": ("users[0].deadline_s", "NaN is not valid JSON (numbers must be finite)"),
    "infinity": ("users[0].deadline_s", "Infinity is not valid JSON"),
    "duplicate-key": ("", "duplicate key"),
    "top-level-array": ("", "JSON object at the top level"),
    "wrong-schema": ("schema", "must be 'balance-opt/instance'"),
    "missing-schema": ("schema", "required"),
    "wrong-version": ("version", "must be 1"),
    "version-as-string": ("version", "must be 1"),
    "missing-name": ("name", "required"),
    "missing-server": ("server", "required"),
    "missing-llm": ("llm", "required"),
    "missing-slm": ("slm", "required"),
    "missing-users": ("users", "required"),
    "missing-server-field": ("server.draft_length", "required"),
    "missing-model-field": ("llm.ffn", "required"),
    "missing-user-field": ("users[1].acceptance", "required"),
    "server-not-object": ("server", "JSON object"),
    "string-for-number": ("users[0].deadline_s", "must be a number"),
    "boolean-for-integer": ("llm.layers", "must be an integer"),
    "boolean-for-number": ("server.memory_bytes", "must be a number"),
    "float-for-integer": ("users[1].input_tokens", "must be an integer"),
    "whole-float-for-integer": ("server.draft_length", "must be an integer"),
    "negative-length": ("users[0].output_tokens", "integer >= 1"),
    "zero-length": ("users[0].input_tokens", "integer >= 1"),
    "zero-heads": ("slm.heads", "integer >= 1"),
    "acceptance-zero": ("users[0].acceptance", "0 < value < 1"),
    "acceptance-one": ("users[1].acceptance", "0 < value < 1"),
    "beta-negative": ("slm.beta_s", ">= 0"),
    "alpha-zero": ("llm.alpha_s_per_flop", "> 0"),
    "memory-zero": ("server.memory_bytes", "> 0"),
    "deadline-negative": ("users[1].deadline_s", "> 0"),
    "bandwidth-zero": ("users[0].downlink_bandwidth_hz", ">= 1"),
    "grid-empty": ("server.z_grid", "non-empty list"),
    "grid-not-increasing": ("server.lambda_grid[2]", "strictly increasing"),
    "grid-outside-unit": ("server.z_grid[2]", "in [0, 1]"),
    "grid-not-list": ("server.z_grid", "non-empty list"),
    "duplicate-user-id": ("users[1].id", "unique"),
    "non-string-id": ("users[0].id", "must be a string"),
    "users-empty": ("users", "non-empty list"),
    "user-not-object": ("users[1]", "JSON object"),
    "distance-negative": ("users[0].distance_m", ">= 0"),
    "model-name-not-string": ("slm.name", "must be a string"),
    "solution-bad-status": ("status", "must be one of optimal, feasible, time_limit, error"),
    "solution-bad-termination": ("termination", "must be one of optimal, completed, time_limit, infeasible"),
    "solution-bad-mode": ("assignment.u1", 'must be "ad", "sd" or "none"'),
    "solution-missing-user": ("assignment", "missing ['u1']"),
    "solution-unknown-user": ("assignment", "does not have"),
    "solution-served-negative": ("served", "integer >= 0"),
    "solution-z-outside": ("z", "in [0, 1]"),
    "solution-bad-sha": ("instance_sha256", "64 lowercase hex digits"),
    "solution-feasible-not-bool": ("feasible", "true or false"),
    "solution-error-without-message": ("error", "required"),
    "solution-error-with-served": ("served", 'must be 0 when status is "error"'),
    "solution-optimal-without-proof": ("bound", 'must equal served (2) when status is "optimal"'),
}


def test_every_fixture_has_an_expectation() -> None:
    assert sorted(p.stem for p in INVALID.glob("*.json")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_invalid_fixture_is_rejected(name: str) -> None:
    path = INVALID / f"{name}.json"
    want_path, want_rule = EXPECTED[name]
    is_solution = name.startswith("solution-")
    tiny = read_instance(TINY) if is_solution else None
    with pytest.raises(InputError) as info:
        read_solution(path, tiny) if is_solution else read_document(path)
    err = info.value
    assert err.source == str(path)
    assert err.path == want_path
    assert want_rule in err.rule
    assert str(path) in str(err)
    assert "\n" not in str(err)
    if not is_solution:  # the instance reader agrees on the path
        with pytest.raises(InputError) as again:
            read_instance(path)
        assert again.value.path == want_path


def test_valid_fixtures_round_trip_to_identical_bytes() -> None:
    for path in sorted(VALID.glob("*.json")):
        kind, doc = read_document(path)
        if kind == "instance":
            assert instance_bytes(doc) == path.read_bytes(), path
    sol = read_solution(VALID / "tiny-K2-solution.json", read_instance(TINY))
    assert sol.instance_sha256 == sha256_bytes(read_bytes(TINY))


@pytest.mark.parametrize("grid", [[[0.5]], [[0.1, 0.2]], [0.1, [0.2]], [[0.1], [0.2]]])
def test_a_grid_holding_lists_is_refused(grid: list) -> None:
    """A nested list is a float array to numpy; its values are lists, not numbers (the
    long fuzz run's internal error on ``"z_grid": [[0.5]]``)."""
    doc = parse_json(TINY.read_bytes(), "tiny")
    doc["server"]["z_grid"] = grid
    with pytest.raises(InputError) as info:
        instance_from_dict(doc, "tiny")
    assert info.value.path.startswith("server.z_grid[")
    assert "must be a number" in info.value.rule


def test_unknown_fields_are_ignored() -> None:
    doc = parse_json(TINY.read_bytes(), "tiny")
    doc["future_field"] = {"x": 1}
    doc["users"][0]["colour"] = "blue"
    assert instance_from_dict(doc) == read_instance(TINY)


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot be read"):
        read_instance(tmp_path / "nope.json")


@settings(max_examples=60, deadline=None)
@given(small_instances())
def test_write_read_round_trip(tmp_path_factory: pytest.TempPathFactory, inst: Instance) -> None:
    path = tmp_path_factory.mktemp("rt") / "inst.json"
    write_instance(inst, path)
    back = read_instance(path)
    assert back == inst
    assert instance_bytes(back) == path.read_bytes()
    assert instance_to_dict(back) == instance_to_dict(inst)


def test_solution_document_of_a_result_validates(tmp_path: Path) -> None:
    inst = read_instance(TINY)
    schedule = Schedule(0.5, np.array([1, 2], dtype=np.int8))
    result = make_result(inst, "hand", {}, SolverOutput(schedule, Termination.COMPLETED, objective=2), 0.01)
    doc = result.for_file(sha256_bytes(read_bytes(TINY))).to_dict()
    path = tmp_path / "sol.json"
    path.write_text(json.dumps(doc))
    back = read_solution(path, inst)
    assert back.served == evaluate(inst, schedule).served == 2
    assert back.feasible is True


@pytest.mark.parametrize(
    ("name", "change"),
    [
        ("acceptance-one", lambda t: t.replace(acceptance=np.array([0.5, 1.0]))),
        ("deadline-negative", lambda t: t.replace(deadline_s=np.array([1.0, -1.0]))),
        ("memory-zero", lambda t: t.replace(server=dataclasses.replace(t.server, memory_bytes=0.0))),
        ("zero-heads", lambda t: t.replace(slm=dataclasses.replace(t.slm, heads=0))),
        (
            "grid-not-increasing",
            lambda t: t.replace(server=dataclasses.replace(t.server, lambda_grid=(0.0, 0.5, 0.5))),
        ),
        ("distance-negative", lambda t: t.replace(distance_m=(-1.0, None))),
        ("duplicate-user-id", lambda t: t.replace(user_ids=("u0", "u0"))),
    ],
)
def test_constructors_apply_the_file_rules(name: str, change: Any) -> None:
    """Instance.replace() (like the generator) is checked by the rules the file reader applies."""
    with pytest.raises(InputError) as from_file:
        read_instance(INVALID / f"{name}.json")
    with pytest.raises(InvalidInstance) as built:
        change(read_instance(TINY))
    assert built.value.path == from_file.value.path
    assert built.value.rule.split(", got")[0] == from_file.value.rule.split(", got")[0]


def test_a_fractional_count_is_not_truncated() -> None:
    with pytest.raises(InvalidInstance, match=r"users\[1\]\.output_tokens: must be an integer >= 1, got 2.5"):
        read_instance(TINY).replace(output_tokens=np.array([3.0, 2.5]))
    assert read_instance(TINY).replace(output_tokens=np.array([3.0, 2.0])).output_tokens.tolist() == [3, 2]


@contextlib.contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
def test_written_files_follow_the_umask(tmp_path: Path, mask: int) -> None:
    """An atomic write ends with the mode any other tool's file gets, not the temporary's 0600."""
    with umask(mask):
        path = write_instance(read_instance(TINY), tmp_path / "sub" / "inst.json")
        again = atomic_write(path, b"{}")  # replacing a file: the new one follows the umask too
    assert stat.S_IMODE(again.stat().st_mode) == 0o666 & ~mask
    assert [p.name for p in path.parent.iterdir()] == ["inst.json"]  # no temporary left


@pytest.mark.parametrize(
    ("section", "field", "value"),
    [
        ("server", "memory_bytes", 1.797e308),
        ("server", "bytes_per_param", 1e300),
        ("server", "draft_length", 65),
        ("llm", "hidden", 10**6),
    ],
)
def test_values_outside_the_physical_ranges_are_refused(section: str, field: str, value: Any) -> None:
    doc = json.loads(TINY.read_text())
    doc[section][field] = value
    with pytest.raises(InputError) as info:
        instance_from_dict(doc, "big.json")
    assert info.value.path == f"{section}.{field}"
    assert "<=" in info.value.rule


def test_a_deadline_beyond_a_year_is_refused() -> None:
    doc = json.loads(TINY.read_text())
    doc["users"][0]["deadline_s"] = 1.797e308
    with pytest.raises(InputError) as info:
        instance_from_dict(doc, "late.json")
    assert info.value.path == "users[0].deadline_s"
    assert "<= 3.1536e+07 s" in info.value.rule
