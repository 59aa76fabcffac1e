"""Robust schedules: the ``sd_iterations`` field, ``robustify`` and the two commands."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from balance_opt.errors import InputError
from balance_opt.evaluator import SD, Schedule, evaluate
from balance_opt.generator import generate
from balance_opt.instance import Instance
from balance_opt.io import instance_bytes, instance_from_dict, instance_to_dict, read_instance
from balance_opt.solvers import get_solver, solver_names
from balance_opt.stochastic import (
    batch_user_level,
    iterations_distribution,
    quantile_levels,
    robustify,
    simulate,
)
from tests.strategies import small_instances
from tests.test_cli_basic import run


@pytest.fixture
def fig4(tmp_path: Path) -> Path:
    path = tmp_path / "fig4.json"
    path.write_bytes(instance_bytes(generate("fig4", users=24, seed=2)))
    return path


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "3", None])
def test_bad_sd_iterations_is_rejected(bad: object) -> None:
    doc = instance_to_dict(generate("fig4", users=3, seed=1))
    doc["users"][1]["sd_iterations"] = bad
    with pytest.raises(InputError, match=r"^f\.json: users\[1\]\.sd_iterations: must be an integer >= 1"):
        instance_from_dict(doc, "f.json")


def test_sd_iterations_replaces_the_formula() -> None:
    inst = generate("fig4", users=4, seed=1)
    doc = instance_to_dict(inst)
    doc["users"][2]["sd_iterations"] = 77
    back = instance_from_dict(json.loads(json.dumps(doc)))
    want = inst.sd_iterations.copy()
    want[2] = 77
    assert back.sd_iterations.tolist() == want.tolist()
    assert back.formula_sd_iterations.tolist() == inst.sd_iterations.tolist()
    assert instance_to_dict(back) == doc
    assert back.subset([2, 0]).sd_iterations.tolist() == [77, want[0]]
    # the evaluator plans with it: one SD user's latency grows with its level
    sd = Schedule(0.0, np.array([0, 0, SD, 0], dtype=np.int8))
    assert evaluate(back, sd).t_sd > evaluate(inst, sd).t_sd  # type: ignore[operator]


def test_robustify_levels_are_quantiles() -> None:
    inst = generate("fig5", users=10, seed=4)
    for q in (0.5, 0.9, 0.99):
        robust = robustify(inst, q)
        for k in range(inst.num_users):
            p = iterations_distribution(int(inst.output_tokens[k]), float(inst.acceptance[k]), 1)
            n = int(robust.sd_iterations[k])
            assert p[: n + 1].sum() >= q - 1e-12 > p[:n].sum()
    assert (robustify(inst, 0.99).sd_iterations >= robustify(inst, 0.9).sd_iterations).all()
    assert (robustify(inst, 0.9).sd_iterations >= inst.sd_iterations).all()


def test_batch_levels_cover_the_whole_batch() -> None:
    """Product rule: P(every user of a batch of up to m is within its level) >= q, exactly."""
    inst = generate("fig4", users=30, seed=6)
    q, m = 0.9, 12
    robust = robustify(inst, q, batch_users=m)
    assert batch_user_level(q, m) ** m == pytest.approx(q)
    cdf = [
        iterations_distribution(int(lo), float(a), 1)[: int(n) + 1].sum()
        for lo, a, n in zip(inst.output_tokens, inst.acceptance, robust.sd_iterations, strict=True)
    ]
    rng = np.random.default_rng(0)
    for _ in range(20):
        batch = rng.choice(inst.num_users, size=m, replace=False)
        assert np.prod(np.array(cdf)[batch]) >= q - 1e-12
    # and by simulation: all twelve SD users of a batch within their levels
    schedule = Schedule(0.0, np.isin(np.arange(30), batch).astype(np.int8) * SD)
    res = simulate(robust, schedule, 4000, seed=1)
    assert res.sd_within_plan.mean() >= q - 3 * np.sqrt(q * (1 - q) / 4000)
    per_user = robustify(inst, q)
    res = simulate(per_user, schedule, 4000, seed=1)
    assert res.sd_within_plan.mean() < q  # per-user levels do not cover a batch of twelve


def brute_force(inst: Instance) -> int:
    """P1's optimum by enumeration with the evaluator."""
    best = 0
    for z in inst.server.z_grid:
        for modes in itertools.product((0, 1, 2), repeat=inst.num_users):
            sched = Schedule(z, np.array(modes, dtype=np.int8))
            if sched.served > best and evaluate(inst, sched).feasible:
                best = sched.served
    return best


@st.composite
def overridden(draw: st.DrawFn) -> Instance:
    inst = draw(small_instances(max_users=4))
    levels = draw(
        st.lists(st.one_of(st.none(), st.integers(1, 80)), min_size=inst.num_users, max_size=inst.num_users)
    )
    return inst.replace(sd_iterations_override=tuple(levels))


@given(overridden())
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_every_solver_plans_for_the_levels(inst: Instance) -> None:
    """Arbitrary levels, unrelated to LO and A: the solvers still agree with enumeration."""
    best = brute_force(inst)
    for name in solver_names(exact_for="P1"):
        res = get_solver(name).solve(inst)
        assert res.status == "optimal", (name, res.error)
        assert res.served == best, name
    fast, literal = get_solver("balance").solve(inst), get_solver("balance-literal").solve(inst)
    assert fast.feasible
    assert fast.served <= best
    assert fast.schedule == literal.schedule


def test_robustify_command(capsys: pytest.CaptureFixture[str], fig4: Path, tmp_path: Path) -> None:
    out = tmp_path / "robust.json"
    code, _, err = run(capsys, "robustify", fig4, "--quantile", "0.95", "--out", out)
    assert code == 0, err
    robust = read_instance(out)
    assert robust.sd_iterations.tolist() == quantile_levels(read_instance(fig4), 0.95).tolist()
    assert run(capsys, "validate", out)[0] == 0
    code, _, err = run(capsys, "robustify", fig4, "--quantile", "0.9", "--batch-users", "auto", "--out", out)
    assert code == 0, err
    assert "batch of up to" in err
    for bad in (["--quantile", "1"], ["--quantile", "0.9", "--batch-users", "0"]):
        code, _, err = run(capsys, "robustify", fig4, *bad, "--out", out)
        assert code == 2
        assert err.count("\n") == 1


def test_simulate_command(capsys: pytest.CaptureFixture[str], fig4: Path, tmp_path: Path) -> None:
    sol = tmp_path / "sol.json"
    code, out, _ = run(capsys, "solve", fig4, "--solver", "balance", "--json")
    sol.write_text(out)
    args = ("simulate", fig4, sol, "--trials", "300", "--seed", "3", "--json")
    outputs = [run(capsys, *args)[1] for _ in range(2)]
    assert outputs[0] == outputs[1]  # byte for byte
    doc = json.loads(outputs[0])
    served = json.loads(out)["served"]
    assert doc["served"] == served
    assert doc["trials"] == 300
    assert doc["seed"] == 3
    assert len(doc["users"]) == served
    assert 0 <= doc["goodput_min"] <= doc["goodput_p05"] <= served
    assert doc["goodput_min"] <= doc["goodput_mean"] <= served
    assert {u["mode"] for u in doc["users"]} <= {"ad", "sd"}
    assert run(capsys, "simulate", fig4, sol, "--trials", "300", "--seed", "4", "--json")[1] != outputs[0]
    code, text, _ = run(capsys, "simulate", fig4, sol, "--trials", "50")
    assert code == 0
    assert "goodput mean" in text
    code, _, err = run(capsys, "simulate", fig4, sol, "--trials", "0")
    assert code == 2
    assert err.count("\n") == 1


def test_simulate_a_minimal_solution(capsys: pytest.CaptureFixture[str], fig4: Path, tmp_path: Path) -> None:
    """A solution with only the required fields (no instance_sha256) is simulated, not a KeyError."""
    code, out, _ = run(capsys, "solve", fig4, "--solver", "balance", "--json")
    full = json.loads(out)
    sol = tmp_path / "mine.json"
    sol.write_text(json.dumps({k: full[k] for k in ("schema", "version", "instance", "z", "assignment")}))
    code, out, err = run(capsys, "simulate", fig4, sol, "--trials", "20", "--json")
    assert (code, err) == (0, "")
    assert json.loads(out)["instance_sha256_matches"] is None
    code, out, err = run(capsys, "simulate", fig4, sol, "--trials", "20")
    assert (code, err) == (0, "")
