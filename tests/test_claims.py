"""The one claims checker (balance_opt/claims.py) against a literal restatement of its rules.

docs/formats.md states what each claim means; the twin below restates it claim by claim,
and hypothesis draws instances, schedules, claims and a known feasible value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from balance_opt.claims import Claims, Known, contradiction, mismatches
from balance_opt.evaluator import Evaluation, Schedule, evaluate
from balance_opt.instance import Instance
from balance_opt.io import InputError, check_solution_dict
from balance_opt.result import SolverOutput, make_result
from balance_opt.status import Status, Termination
from tests.strategies import instances_and_schedules

MAYBE_COUNT = st.none() | st.integers(0, 8)
OPTIMAL_RULE = 'must equal served (2) when status is "optimal"'


def expected(doc: dict[str, Any], ev: Evaluation, known: int | None) -> set[tuple[str, bool]]:
    """(claim, false proof) of every refuted claim, from docs/formats.md's table."""
    served, feasible, status, bound = (doc.get(k) for k in ("served", "feasible", "status", "bound"))
    out = set()
    if served is not None and status != "error" and served != ev.served:
        out.add(("served", False))
    if feasible is not None and feasible != ev.feasible:
        out.add(("feasible", False))
    if status in ("optimal", "feasible") and not ev.feasible:
        out.add(("status", False))
    best = max([ev.served if ev.feasible else -1, -1 if known is None else known])
    if bound is not None and bound < best:
        out.add(("bound", True))
    if (
        status == "optimal"
        and ev.feasible
        and (best > ev.served or (bound is not None and bound > ev.served))
    ):
        out.add(("status", True))
    return out


@settings(max_examples=300, deadline=None)
@given(
    instances_and_schedules(),
    st.fixed_dictionaries(
        {},
        optional={
            "served": st.integers(0, 8),
            "feasible": st.booleans(),
            "status": st.sampled_from(list(Status)),
            "bound": MAYBE_COUNT,
        },
    ),
    MAYBE_COUNT,
)
def test_claims_checker_against_the_rules_restated(
    pair: tuple[Instance, Schedule], doc: dict[str, Any], known: int | None
) -> None:
    inst, schedule = pair
    ev = evaluate(inst, schedule)
    claims = Claims.of_document(doc)
    found = mismatches(claims, ev, None if known is None else Known(known, "the test's schedule"))
    assert {(m.claim, m.false_proof) for m in found} == expected(doc, ev, known)
    assert len(found) == len({(m.claim, m.false_proof) for m in found})  # each mismatch once
    # honest claims: what the evaluator found, with the best bound it allows
    honest = {"served": ev.served, "feasible": ev.feasible, "bound": inst.num_users}
    honest["status"] = "feasible" if ev.feasible else "time_limit"
    assert mismatches(Claims.of_document(honest), ev) == []


@settings(max_examples=100, deadline=None)
@given(
    instances_and_schedules(),
    st.sampled_from([Termination.OPTIMAL, Termination.COMPLETED, Termination.TIME_LIMIT]),
    MAYBE_COUNT,
    MAYBE_COUNT,
)
def test_a_solver_result_is_an_error_exactly_when_its_claims_are_refuted(
    pair: tuple[Instance, Schedule], termination: Termination, objective: int | None, bound: int | None
) -> None:
    """A solver claims a feasible schedule, its objective, its bound and, when optimal, optimality."""
    inst, schedule = pair
    ev = evaluate(inst, schedule)
    res = make_result(
        inst, "hand", {}, SolverOutput(schedule, termination, bound=bound, objective=objective), 0.0
    )
    doc: dict[str, Any] = {"feasible": True, "served": objective, "bound": bound}
    if termination == Termination.OPTIMAL:
        doc["status"] = "optimal"
    refuted = expected({k: v for k, v in doc.items() if v is not None}, ev, None)
    assert (res.status == Status.ERROR) == bool(refuted)
    if res.status == Status.OPTIMAL:
        assert res.bound == res.served == ev.served


@pytest.mark.parametrize(
    ("doc", "broken"),
    [
        ({"status": "error", "served": 2}, ("served", 'must be 0 when status is "error", got 2')),
        ({"status": "optimal", "served": 2, "bound": 3}, ("bound", f"{OPTIMAL_RULE}, got 3")),
        ({"status": "optimal", "served": 2, "bound": None}, ("bound", f"{OPTIMAL_RULE}, got null")),
        ({"status": "optimal", "served": 2}, None),
        ({"status": "optimal", "bound": 3}, None),  # no served claimed: the evaluator decides
        ({"status": "error", "served": 0}, None),
    ],
)  # fmt: skip
def test_contradicting_claims_make_a_malformed_file_and_an_invalid_result(
    doc: dict[str, Any], broken: tuple[str, str] | None
) -> None:
    assert contradiction(Claims.of_document(doc)) == broken
    full = {"schema": "balance-opt/solution", "version": 1, "instance": "x", "z": 0.0, "assignment": {}}
    if doc.get("status") == "error":
        full["error"] = "it failed"
    if broken is None:
        check_solution_dict({**full, **doc})
        return
    with pytest.raises(InputError) as info:
        check_solution_dict({**full, **doc}, "f.json")
    assert (info.value.path, info.value.rule) == broken


@dataclass(frozen=True)
class Verdict:
    """What the claims checker reads of an evaluation."""

    feasible: bool
    served: int
    violations: tuple[str, ...] = ()


def test_one_refuted_optimum_is_one_false_proof_naming_the_strongest_evidence() -> None:
    ev = Verdict(True, 3)
    claims = Claims.of_document({"status": "optimal", "bound": 5})
    (only,) = mismatches(claims, ev, Known(4, "the library's s/x"))
    assert (only.claim, only.false_proof) == ("status", True)
    assert (
        only.message
        == 'claims status "optimal" serving 3, but the library\'s s/x holds a feasible schedule serving 4'
    )
    (only,) = mismatches(claims, ev)
    assert only.message == 'claims status "optimal" with bound 5, but the schedule serves 3'
    infeasible = Verdict(
        False, 3, ("user u1 (ad) completes at 2 s, 1 s after its deadline 1 s (20), (21c)", "m")
    )
    (status,) = mismatches(Claims.of_document({"status": "feasible"}), infeasible)
    assert status.message.endswith("after its deadline 1 s (20), (21c) (and 1 more violation)")
