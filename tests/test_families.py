"""The theorem1-tight family: BALANCE serves exactly half of the optimum (docs/worst-case.md)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from balance_opt.evaluator import AD, SD, evaluate
from balance_opt.families import TIGHT, TightParams, design, largest_m, optimum_schedule, tight_instance
from balance_opt.generator import DEFAULT_GRID
from balance_opt.io import instance_bytes, sha256_bytes
from balance_opt.model import ad_mode, sd_mode
from balance_opt.solvers import get_solver

HEURISTICS = ("balance", "ad-only", "sd-only", "ecra", "ema", "ecrma")
# theorem1-tight-K10-s0001 as written on the machine that made it: the same bytes on every CPU.
K10_SHA256 = "a39388dcc4c8d823f42a23290381dfa67755805bba08a908468a1901665215c8"


def served(solver: str, inst: object, **options: object) -> int:
    res = get_solver(solver, **options).solve(inst)  # type: ignore[arg-type]
    assert res.feasible
    return res.served


def cheap_mask(inst: object) -> np.ndarray:
    gen = inst.generator  # type: ignore[attr-defined]
    return np.array([u in set(gen["cheap_users"]) for u in inst.user_ids])  # type: ignore[attr-defined]


@pytest.mark.parametrize("m", range(1, 11))
def test_balance_serves_half_of_the_p1_optimum_by_exhaustive_search(m: int) -> None:
    inst = tight_instance(TightParams(users=2 * m, seed=m))
    assert served("balance", inst) == m
    assert served("exhaustive", inst, force=True) == 2 * m
    ev = evaluate(inst, optimum_schedule(inst))
    assert (ev.feasible, ev.served) == (True, 2 * m)


@pytest.mark.parametrize("m", range(1, 6))
def test_balance_serves_half_of_the_p2_optimum(m: int) -> None:
    inst = tight_instance(TightParams(users=2 * m, seed=10 + m))
    res = get_solver("exhaustive-p2").solve(inst)
    assert res.stats["p2_optimum"] == 2 * m
    assert served("balance", inst) == m


@pytest.mark.parametrize("m", [1, 2])
def test_the_literal_algorithm_serves_half_too(m: int) -> None:
    inst = tight_instance(TightParams(users=2 * m, seed=3))
    assert served("balance-literal", inst) == m


@pytest.mark.parametrize("m", [15, 25])
def test_larger_m_against_exact(m: int) -> None:
    inst = tight_instance(TightParams(users=2 * m, seed=1))
    res = get_solver("exact").solve(inst)
    assert (res.status, res.served, res.bound) == ("optimal", 2 * m, 2 * m)
    assert {h: served(h, inst) for h in HEURISTICS} == dict.fromkeys(HEURISTICS, m)


@pytest.mark.parametrize("m", [30, 40, 50, 70, 95])
@pytest.mark.parametrize("seed", [1, 2])
def test_the_family_holds_up_to_its_largest_m(m: int, seed: int) -> None:
    inst = tight_instance(TightParams(users=2 * m, seed=seed))
    res = get_solver("exact").solve(inst)
    assert (res.status, res.served) == ("optimal", 2 * m)
    assert {h: served(h, inst) for h in HEURISTICS} == dict.fromkeys(HEURISTICS, m)


def mode_latency(inst: object, members: np.ndarray, mode: int, z: float) -> float:
    cost = (ad_mode if mode == AD else sd_mode)(inst, members, z)  # type: ignore[arg-type]
    assert cost.latency_s is not None
    return cost.latency_s


@settings(max_examples=25, deadline=None)
@given(m=st.integers(1, 60), seed=st.integers(0, 2**20), ld=st.integers(4, 8))
def test_the_windows_bound_the_evaluators_latencies(m: int, seed: int, ld: int) -> None:
    """The design's closed-form bounds against the model's latencies of the drawn users."""
    p = TightParams(users=2 * m, seed=seed, draft_length=ld)
    assume(m <= largest_m(dataclasses.replace(p, users=2)))
    inst = tight_instance(p)
    d = design(p, inst)
    cheap = cheap_mask(inst)
    long_ = ~cheap
    assert mode_latency(inst, long_, AD, d.z_opt) <= d.long_window[0]
    assert mode_latency(inst, cheap, AD, d.z_low) <= d.cheap_window[0]
    assert mode_latency(inst, cheap, SD, d.z_opt) <= d.cheap_window[0]
    for k in np.flatnonzero(long_):
        alone = np.zeros(inst.num_users, dtype=bool)
        alone[k] = True
        assert mode_latency(inst, alone, SD, d.z_low) >= d.long_window[1]
        for mode, z in ((AD, 1.0), (SD, 0.0)):  # a long user beside a cheap one, each mode at its fastest
            pair = alone | (np.arange(inst.num_users) == np.flatnonzero(cheap)[0])
            assert mode_latency(inst, pair, mode, z) >= d.cheap_window[1]
    budget = inst.budget_s
    assert np.all(np.abs(budget[cheap] - d.cheap_budget_s) <= 1e-12 * d.cheap_budget_s)
    assert np.all(np.abs(budget[long_] - d.long_budget_s) <= 1e-12 * d.long_budget_s)


@settings(max_examples=15, deadline=None)
@given(m=st.integers(1, 40), seed=st.integers(0, 2**20), ld=st.integers(5, 8))
def test_balance_is_half_for_any_seed_and_draft_length(m: int, seed: int, ld: int) -> None:
    p = TightParams(users=2 * m, seed=seed, draft_length=ld)
    assume(m <= largest_m(dataclasses.replace(p, users=2)))
    inst = tight_instance(p)
    assert served("balance", inst) == m
    assert evaluate(inst, optimum_schedule(inst)).served == 2 * m


def test_where_the_family_stops() -> None:
    assert largest_m(TightParams()) == 95
    assert largest_m(TightParams(draft_length=1)) == 9
    with pytest.raises(ValueError, match=r"no instance with m = 96 .* stops at m = 95 \(K = 190"):
        tight_instance(TightParams(users=192))
    with pytest.raises(ValueError, match="users must be even"):
        TightParams(users=7)


def test_the_instance_is_on_the_papers_grids_with_its_optimum_recorded() -> None:
    inst = tight_instance(TightParams(users=8, seed=5))
    assert inst.server.z_grid == DEFAULT_GRID == inst.server.lambda_grid
    gen = inst.generator
    assert gen is not None
    assert (gen["preset"], gen["m"], gen["optimum_z"], len(gen["cheap_users"])) == (TIGHT, 4, 0.9, 4)
    sched = optimum_schedule(inst)
    assert sorted(np.flatnonzero(sched.modes == SD)) == sorted(np.flatnonzero(cheap_mask(inst)))


def test_same_knobs_same_bytes_and_the_seed_matters() -> None:
    a = instance_bytes(tight_instance(TightParams(users=10, seed=1)))
    assert a == instance_bytes(tight_instance(TightParams(users=10, seed=1)))
    assert a != instance_bytes(tight_instance(TightParams(users=10, seed=2)))


def test_bytes_are_fixed() -> None:
    """The file's digest: a change of bytes (code or CPU) shows here."""
    data = instance_bytes(tight_instance(TightParams(users=10, seed=1)))
    assert sha256_bytes(data) == K10_SHA256


def test_generate_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from balance_opt.cli import main

    assert main(["generate", "--preset", TIGHT, "--users", "6", "--seed", "4", "--count", "2",
                 "--out", str(tmp_path)]) == 0  # fmt: skip
    written = tmp_path / f"{TIGHT}-K6-s0005.json"
    assert written.read_bytes() == instance_bytes(tight_instance(TightParams(users=6, seed=5)))
    assert main(["generate", "--preset", TIGHT, "--users", "5", "--out", str(tmp_path)]) == 2
    assert main(["generate", "--preset", TIGHT, "--users", "4", "--deadline-max", "3", "--out",
                 str(tmp_path)]) == 2  # fmt: skip
    assert "has no knob deadline_max_s" in capsys.readouterr().err
