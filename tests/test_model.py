"""balance_opt.model and evaluate against hand arithmetic and against the literal twin."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from balance_opt import model
from balance_opt.evaluator import AD, SD, Schedule, evaluate
from balance_opt.instance import Instance, LanguageModel, Server
from tests import literal_model as lit
from tests.strategies import generated_instances, instances_and_schedules, random_schedules, small_instances

REL = 1e-12

# --- a tiny instance that fits on paper -------------------------------------------------
# LLM: M=1, Dm=2, Dh=1, H=2, Df=4, alpha=0.001 s/FLOP, beta=0.5 s
# SLM: M=1, Dm=1, Dh=1, H=1, Df=2, alpha=0.001 s/FLOP, beta=0.25 s
# theta=2, gamma=8, LD=2.  u0: LI=3, LO=4, A=0.5, B=4, R=2, Bd=4, Rd=1
#                          u1: LI=1, LO=1, A=0.25, B=2, R=4, Bd=2, Rd=2
TINY_LLM = LanguageModel(1, 2, 1, 2, 4, 0.001, 0.5, "tiny-llm")
TINY_SLM = LanguageModel(1, 1, 1, 1, 2, 0.001, 0.25, "tiny-slm")


def tiny(memory: float = 1000.0, deadlines: tuple[float, float] = (50.0, 50.0)) -> Instance:
    return Instance(
        name="tiny-K2",
        server=Server(memory, 2.0, 2, 8.0, (0.0, 0.5, 1.0), (0.0, 0.5, 1.0)),
        llm=TINY_LLM,
        slm=TINY_SLM,
        user_ids=("u0", "u1"),
        input_tokens=np.array([3, 1]),
        output_tokens=np.array([4, 1]),
        deadline_s=np.array(deadlines),
        acceptance=np.array([0.5, 0.25]),
        uplink_bandwidth_hz=np.array([4.0, 2.0]),
        uplink_spectral_efficiency=np.array([2.0, 4.0]),
        downlink_bandwidth_hz=np.array([4.0, 2.0]),
        downlink_spectral_efficiency=np.array([1.0, 2.0]),
    )


def test_tiny_derived_quantities() -> None:
    inst = tiny()
    # up = gamma LI / (B R): 8*3/(4*2) = 3, 8*1/(2*4) = 1
    assert inst.upload_s.tolist() == pytest.approx([3.0, 1.0], rel=REL)
    # down = gamma LO / (Bd Rd): 8*4/(4*1) = 8, 8*1/(2*2) = 2
    assert inst.download_s.tolist() == pytest.approx([8.0, 2.0], rel=REL)
    # LA = A (1 - A^2) / (1 - A): 0.5*0.75/0.5 = 0.75, 0.25*0.9375/0.75 = 0.3125
    assert inst.accepted_drafts.tolist() == pytest.approx([0.75, 0.3125], rel=REL)
    # N = ceil(LO / (LA + 1)): ceil(4/1.75 = 2.29) = 3, ceil(1/1.3125 = 0.76) = 1
    assert inst.sd_iterations.tolist() == [3, 1]
    # Tp = T - down: 50 - 8, 50 - 2
    assert inst.budget_s.tolist() == pytest.approx([42.0, 48.0], rel=REL)
    # q^L = 1*2*(4*2*1*2 + 2*2*4) = 2*(16 + 16) = 64; q^S = 1*2*(4*1*1*1 + 2*1*2) = 16
    assert inst.llm_weight_bytes == 64.0
    assert inst.slm_weight_bytes == 16.0
    # kv^L = 1*2*2*1*2 = 8; kv^S = 1*2*2*1*1 = 4
    assert inst.llm_kv_bytes_per_token == 8.0
    assert inst.slm_kv_bytes_per_token == 4.0


def test_tiny_workloads() -> None:
    # LLM: 8 Dm Dh H = 32, 4 Dh H = 8, 4 Dm Df = 32
    # G_p(L) = 32L + 8L^2 + 32L: G_p(3) = 96 + 72 + 96 = 264
    assert float(model.prefill_flops(TINY_LLM, 3)) == 264.0
    # G_a(L, l) = 32 + 8(L + l) + 32: G_a(3, 1) = 96, G_a(3, 3) = 112
    assert float(model.decode_flops(TINY_LLM, 3, 1)) == 96.0
    assert float(model.decode_flops(TINY_LLM, 3, 3)) == 112.0
    # sum_{l=1..3} G_a(3, l) = 96 + 104 + 112 = 312
    assert float(model.decode_flops_sum(TINY_LLM, 3, 3)) == 312.0
    # G_v(P, m) = 64m + 8 sum_{l=1..m}(P + l): G_v(3, 2) = 128 + 8*(4 + 5) = 200
    assert float(model.verify_flops(TINY_LLM, 3, 2)) == 200.0
    # G_v(3.75, 3) = 192 + 8*(4.75 + 5.75 + 6.75) = 192 + 138 = 330
    assert float(model.verify_flops(TINY_LLM, 3.75, 3)) == 330.0
    # SLM: 8 Dm Dh H = 8, 4 Dh H = 4, 4 Dm Df = 8; G_p(3) = 24 + 36 + 24 = 84
    assert float(model.prefill_flops(TINY_SLM, 3)) == 84.0
    # G^S_a(3.75, 2) = 16 + 4*5.75 = 39
    assert float(model.decode_flops(TINY_SLM, 3.75, 2)) == 39.0


def test_tiny_ad_mode_both_users() -> None:
    inst = tiny()
    ad = model.ad_mode(inst, np.array([True, True]), 0.5)
    # L1 = 3, L2 = 4, tau_up = max(3, 1) = 3
    # tau_p = 0.001 * 2 * 264 / 0.5 + 0.5 = 1.056 + 0.5 = 1.556
    # tau_a(l), l = 1..3, only u0 (LO - 1 = 3) decodes; u1 (LO - 1 = 0) never does:
    #   0.001*96/0.5 + 0.5 = 0.692, 0.001*104/0.5 + 0.5 = 0.708, 0.001*112/0.5 + 0.5 = 0.724
    # t_ad = 3 + 1.556 + 0.692 + 0.708 + 0.724 = 6.68
    assert ad.latency_s == pytest.approx(6.68, rel=REL)
    assert ad.upload_s == pytest.approx(3.0, rel=REL)
    assert ad.fixed_s == pytest.approx(4 * 0.5, rel=REL)  # L2 passes
    assert ad.compute_s == pytest.approx(1.056 + 0.192 + 0.208 + 0.224, rel=REL)
    # q_ad = (3 + 4)*8 + (3 + 1)*8 = 56 + 32 = 88
    assert ad.kv_bytes == 88.0


def test_tiny_sd_mode_both_users() -> None:
    inst = tiny()
    sd = model.sd_mode(inst, np.array([True, True]), 0.5)
    # w = 0.5, L3 = 3, L4 = 0.75, Nmax = 3, tau_up = 3
    # P_1 = 3, P_2 = 3 + 0*(1.75) + 0.75 = 3.75, P_3 = 3 + 1*1.75 + 0.75 = 5.5
    assert model.sd_prefix(3.0, 0.75, [1, 2, 3]).tolist() == [3.0, 3.75, 5.5]
    # tau_Lp = 0.001*2*264/0.5 + 0.5 = 1.556; tau_Sp = 0.001*2*84/0.5 + 0.25 = 0.586
    # n=1 (S_1 = {u0, u1}): draft l=1: G^S_a(3,1) = 32 -> 0.001*2*32/0.5 + 0.25 = 0.378
    #                       verify m=2: G^L_v(3,2) = 200 -> 0.001*2*200/0.5 + 0.5 = 1.3
    # n=2 (S_2 = {u0}):     drafts G^S_a(3.75,1) = 35, G^S_a(3.75,2) = 39 -> 0.32, 0.328
    #                       verify m=3: G^L_v(3.75,3) = 330 -> 0.66 + 0.5 = 1.16
    # n=3 (S_3 = {u0}):     drafts G^S_a(5.5,1) = 42, G^S_a(5.5,2) = 46 -> 0.334, 0.342
    #                       verify m=3: G^L_v(5.5,3) = 192 + 8*(6.5+7.5+8.5) = 372 -> 1.244
    # iterations: 1.678 + 1.808 + 1.92 = 5.406
    # t_sd = 3 + 1.556 + 0.586 + 5.406 = 10.548
    assert sd.latency_s == pytest.approx(10.548, rel=REL)
    # passes: (Nmax + 1) beta^L + Nmax LD beta^S = 4*0.5 + 3*2*0.25 = 3.5
    assert sd.fixed_s == pytest.approx(3.5, rel=REL)
    # q_sd: u0 (N=3, P_3=5.5): (5.5+2)*4 + (5.5+2+1)*8 = 30 + 68 = 98
    #       u1 (N=1, P_1=3):   (3+2)*4 + (3+2+0)*8 = 20 + 40 = 60
    assert sd.kv_bytes == pytest.approx(158.0, rel=REL)


def test_tiny_user_contributions() -> None:
    inst = tiny()
    # (26): c_k = 0.001*(G_p(3) + sum_{l<LO} G_a(3,l))/0.5: u0 (264+312)*0.002 = 1.152, u1 264*0.002
    assert model.ad_user_costs(inst, 3.0, [4, 1], 0.5).tolist() == pytest.approx([1.152, 0.528], rel=REL)
    assert model.ad_user_memory(inst, 3.0, [4, 1]).tolist() == [56.0, 32.0]
    # (30): prefills (264 + 84)*0.002 = 0.696; iterations (32+200)*0.002 = 0.464,
    # (35+39+330)*0.002 = 0.808, (42+46+372)*0.002 = 0.92 -> u0 2.888, u1 1.16
    costs = model.sd_user_costs(inst, 3.0, 0.75, [3, 1], 0.5)
    assert costs.tolist() == pytest.approx([2.888, 1.16], rel=REL)
    assert model.sd_user_memory(inst, 3.0, 0.75, [3, 1]).tolist() == pytest.approx([98.0, 60.0], rel=REL)


def test_tiny_mixed_schedule_evaluation() -> None:
    # AD {u0}: tau_up 3, tau_p 0.001*264/0.5 + 0.5 = 1.028, decoding 2.124 -> t_ad = 6.152, q_ad = 56
    # SD {u1}: L3 = 1, L4 = 0.3125, N = 1, tau_up = 1, tau_Lp = 0.001*72/0.5 + 0.5 = 0.644,
    #   tau_Sp = 0.001*20/0.5 + 0.25 = 0.29, draft G^S_a(1,1) = 24 -> 0.298,
    #   verify G^L_v(1,2) = 128 + 8*(2+3) = 168 -> 0.836; t_sd = 3.068; q_sd = 3*4 + 3*8 = 36
    # memory = 64 + 16 + 56 + 36 = 172; completions 6.152 + 8 = 14.152, 3.068 + 2 = 5.068
    schedule = Schedule(0.5, np.array([AD, SD], dtype=np.int8))
    ev = evaluate(tiny(), schedule)
    assert ev.feasible
    assert ev.served == 2
    assert ev.t_ad == pytest.approx(6.152, rel=REL)
    assert ev.t_sd == pytest.approx(3.068, rel=REL)
    assert ev.memory_bytes == pytest.approx(172.0, rel=REL)
    assert ev.completion_s.tolist() == pytest.approx([14.152, 5.068], rel=REL)
    assert ev.slack_s.tolist() == pytest.approx([50 - 14.152, 50 - 5.068], rel=REL)
    # one byte short of memory, and a deadline just before u0's completion
    assert not evaluate(tiny(memory=171.0), schedule).feasible
    late = evaluate(tiny(deadlines=(14.15, 50.0)), schedule)
    assert not late.feasible
    assert "u0" in late.violations[0]
    # SLM weights leave at z = 1, and AD alone is then feasible
    ad_only = evaluate(tiny(memory=64 + 88), Schedule(1.0, np.array([AD, AD], dtype=np.int8)))
    assert ad_only.feasible
    assert ad_only.memory_bytes == 152.0


def test_tiny_fixture_file_is_the_hand_instance(tiny_instance: Instance) -> None:
    hand = tiny().replace(description=tiny_instance.description, distance_m=tiny_instance.distance_m)
    assert tiny_instance == hand


# --- the literal twin on random instances ----------------------------------------------


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    if math.isinf(a) or math.isinf(b):
        return a == b
    return math.isclose(a, b, rel_tol=REL, abs_tol=0.0)


@settings(max_examples=300, deadline=None)
@given(small_instances())
def test_derived_quantities_match_literal(inst: Instance) -> None:
    g, ld, theta = inst.server.bits_per_token, inst.server.draft_length, inst.server.bytes_per_param
    for k, u in enumerate(lit.users_of(inst)):
        assert _close(float(inst.upload_s[k]), lit.up(u, g))
        assert _close(float(inst.download_s[k]), lit.down(u, g))
        assert _close(float(inst.accepted_drafts[k]), lit.LA(u, ld))
        assert int(inst.sd_iterations[k]) == lit.N(u, ld)
        assert _close(float(inst.budget_s[k]), lit.Tp(u, g))
    assert inst.llm_weight_bytes == lit.weights(inst.llm, theta)
    assert inst.slm_kv_bytes_per_token == lit.kv(inst.slm, theta)


@settings(max_examples=300, deadline=None)
@given(instances_and_schedules(), st.sampled_from([0.1, 0.3, 0.5, 0.9]))
def test_modes_match_literal(pair: tuple[Instance, Schedule], z: float) -> None:
    inst, schedule = pair
    ad_set = np.flatnonzero(schedule.modes == AD).tolist()
    sd_set = np.flatnonzero(schedule.modes == SD).tolist()
    ad = model.ad_mode(inst, schedule.modes == AD, z)
    sd = model.sd_mode(inst, schedule.modes == SD, z)
    ad_lit, sd_lit = lit.ad_literal(inst, ad_set, z), lit.sd_literal(inst, sd_set, z)
    assert _close(ad.latency_s, ad_lit.latency)
    assert _close(sd.latency_s, sd_lit.latency)
    assert _close(ad.kv_bytes, ad_lit.kv_bytes) or ad.kv_bytes == ad_lit.kv_bytes == 0.0
    assert _close(sd.kv_bytes, sd_lit.kv_bytes) or sd.kv_bytes == sd_lit.kv_bytes == 0.0


@settings(max_examples=300, deadline=None)
@given(instances_and_schedules())
def test_evaluate_matches_literal(pair: tuple[Instance, Schedule]) -> None:
    inst, schedule = pair
    ev = evaluate(inst, schedule)
    verdict = lit.evaluate_literal(inst, schedule.z, schedule.modes.tolist())
    assert ev.served == verdict.served
    assert _close(ev.t_ad, verdict.t_ad)
    assert _close(ev.t_sd, verdict.t_sd)
    assert _close(ev.memory_bytes, verdict.memory)
    # the verdicts agree unless a comparison sits within float noise of its limit
    near = [
        abs(float(c) - float(t) * (1 + lit.REL_TOL)) <= 1e-11 * float(t)
        for c, t in zip(ev.completion_s.tolist(), inst.deadline_s.tolist(), strict=True)
        if not math.isnan(c)
    ]
    near.append(abs(verdict.memory - inst.server.memory_bytes * (1 + lit.REL_TOL)) <= 1e-11 * verdict.memory)
    if not any(near):
        assert ev.feasible == verdict.feasible


@settings(max_examples=100, deadline=None)
@given(instances_and_schedules(), st.sampled_from([0.2, 0.5, 0.8]))
def test_user_contributions_add_up_to_mode_latency(pair: tuple[Instance, Schedule], z: float) -> None:
    """Algorithm 1/2's per-user costs plus passes and upload give the literal latency."""
    inst, schedule = pair
    ad_set = np.flatnonzero(schedule.modes == AD)
    if ad_set.size:
        L1 = float(inst.input_tokens[ad_set].max())
        L2 = int(inst.output_tokens[ad_set].max())
        c = model.ad_user_costs(inst, L1, inst.output_tokens[ad_set], z)
        total = float(inst.upload_s[ad_set].max()) + L2 * inst.llm.beta_s + float(c.sum())
        assert _close(total, lit.ad_literal(inst, ad_set.tolist(), z).latency)
        m = model.ad_user_memory(inst, L1, inst.output_tokens[ad_set]).sum()
        assert _close(float(m), lit.ad_literal(inst, ad_set.tolist(), z).kv_bytes)
    sd_set = np.flatnonzero(schedule.modes == SD)
    if sd_set.size:
        L3 = float(inst.input_tokens[sd_set].max())
        L4 = float(inst.accepted_drafts[sd_set].max())
        n = inst.sd_iterations[sd_set]
        n1, ld = int(n.max()), inst.server.draft_length
        c = model.sd_user_costs(inst, L3, L4, n, z)
        passes = (n1 + 1) * inst.llm.beta_s + n1 * ld * inst.slm.beta_s
        total = float(inst.upload_s[sd_set].max()) + passes + float(c.sum())
        ref = lit.sd_literal(inst, sd_set.tolist(), z)
        assert _close(total, ref.latency)
        assert _close(float(model.sd_user_memory(inst, L3, L4, n).sum()), ref.kv_bytes)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_evaluate_matches_literal_on_generated_instances(data: st.DataObject) -> None:
    """The paper's presets (long prompts, tight memory) through both implementations."""
    inst = data.draw(generated_instances(max_users=6))
    schedule = data.draw(random_schedules(inst))
    ev = evaluate(inst, schedule)
    verdict = lit.evaluate_literal(inst, schedule.z, schedule.modes.tolist())
    assert _close(ev.t_ad, verdict.t_ad)
    assert _close(ev.t_sd, verdict.t_sd)
    assert _close(ev.memory_bytes, verdict.memory)


@settings(max_examples=200, deadline=None)
@given(small_instances(), st.sampled_from([0.1, 0.3, 0.5, 0.9]))
def test_alone_tables_match_each_singleton(inst: Instance, z: float) -> None:
    """``ad_alone`` / ``sd_alone`` give each user's mode cost when served alone."""
    tables = {AD: model.ad_alone(inst, z), SD: model.sd_alone(inst, z)}
    for mode, fn in ((AD, model.ad_mode), (SD, model.sd_mode)):
        latency, kv = tables[mode]
        for u in range(inst.num_users):
            one = fn(inst, np.arange(inst.num_users) == u, z)
            assert latency[u] == pytest.approx(one.latency_s, rel=1e-12)
            assert kv[u] == pytest.approx(one.kv_bytes, rel=1e-12)


@pytest.mark.parametrize("limit", [1.797e308, float(np.finfo(np.float64).max)])
def test_tolerated_never_overflows_to_infinity(limit: float) -> None:
    # a finite limit near the float maximum must not tolerate an infinite value
    assert math.isfinite(model.tolerated(limit))
    assert not model.within(math.inf, limit)
    arr = model.tolerated(np.array([limit, 1.0, math.inf]))
    assert math.isfinite(arr[0])
    assert arr[1] == 1.0 * (1.0 + model.REL_TOL)
    assert math.isinf(arr[2])
    assert not model.within(np.array([math.inf]), np.array([limit]))[0]
