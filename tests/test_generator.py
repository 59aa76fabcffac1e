"""The seeded generator and the profiles (docs/model.md section 10)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from balance_opt.cli import main
from balance_opt.evaluator import AD, SD, Schedule, evaluate
from balance_opt.generator import (
    CONSTANT_OVERRIDES,
    PRESETS,
    GeneratorParams,
    generate,
    generate_from,
    preset_params,
)
from balance_opt.io import instance_bytes, instance_from_dict, parse_json, read_instance
from balance_opt.profiles import HARDWARE, MODEL_PAIRS, MODELS, get_hardware, get_model
from tests.strategies import LLAMA2_7B, TINYLLAMA


def test_paper_profiles_are_model_md_section_10() -> None:
    inst = generate("fig4", users=2, seed=0)
    for got, want in ((inst.llm, LLAMA2_7B), (inst.slm, TINYLLAMA)):
        assert got == want  # architecture, alpha = 1/(0.5*165.2e12), beta = q/1.008e12, name
    assert inst.llm.alpha_s_per_flop == 1 / (0.5 * 165.2e12)
    assert inst.llm.beta_s == inst.llm_weight_bytes / 1.008e12
    assert inst.server.memory_bytes == 24e9
    assert inst.server.bytes_per_param == 2.0
    assert inst.server.draft_length == 1
    assert inst.server.bits_per_token == 32.0
    assert inst.server.z_grid == tuple(i / 10 for i in range(11)) == inst.server.lambda_grid


def test_every_profile_is_complete() -> None:
    for m in MODELS.values():
        assert m.source.startswith("https://huggingface.co/")
        assert min(m.layers, m.hidden, m.head_dim, m.heads, m.ffn, m.kv_heads) >= 1
        assert m.heads % m.kv_heads == 0
    for llm, slm in MODEL_PAIRS.values():
        assert get_model(llm).weight_bytes() > get_model(slm).weight_bytes()
    assert {"rtx4090", "a100-80gb", "h100-sxm"} <= set(HARDWARE)
    for hw in HARDWARE.values():
        assert hw.source
        assert hw.alpha_s_per_flop == 1.0 / (0.5 * hw.peak_flops)
        q = get_model("llama-3-8b").weight_bytes(2.0)
        assert hw.language_model(get_model("llama-3-8b")).beta_s == q / hw.bandwidth_bytes_s
    with pytest.raises(ValueError, match="unknown hardware"):
        get_hardware("tpu")


def test_draws_follow_the_documented_order() -> None:
    p = preset_params("fig5", users=9, seed=42)
    inst = generate_from(p)
    rng = np.random.default_rng(42)
    distance = np.maximum(10.0, 250.0 * np.sqrt(rng.random(9)))
    deadline = rng.uniform(2.0, 12.0, 9)
    li = rng.integers(1, 1000, size=9, endpoint=True)
    lo = rng.integers(1, 500, size=9, endpoint=True)
    acc = rng.uniform(0.6, 0.8, 9)
    assert np.array_equal(np.array(inst.distance_m), distance)
    assert np.array_equal(inst.deadline_s, deadline)
    assert np.array_equal(inst.input_tokens, li)
    assert np.array_equal(inst.output_tokens, lo)
    assert np.array_equal(inst.acceptance, acc)


def test_channel_model() -> None:
    inst = generate("fig4", seed=3)
    assert inst.distance_m is not None
    for k, d in enumerate(inst.distance_m):
        assert d is not None
        assert 10.0 <= d <= 250.0
        path_loss = 128.1 + 37.6 * math.log10(d / 1000.0)
        up_snr = 10 ** ((-50.0 - path_loss + 174.0) / 10)
        down_snr = 10 ** ((-29.0 - path_loss + 174.0) / 10)
        assert inst.uplink_spectral_efficiency[k] == pytest.approx(math.log2(1 + up_snr), rel=1e-12)
        assert inst.downlink_spectral_efficiency[k] == pytest.approx(math.log2(1 + down_snr), rel=1e-12)
    assert set(inst.uplink_bandwidth_hz.tolist()) == {1e6}
    assert set(inst.downlink_bandwidth_hz.tolist()) == {2e6}


@pytest.mark.parametrize(
    ("preset", "t", "li", "lo"),
    [("fig4", (0.5, 4.0), (1, 300), (1, 100)), ("fig5", (2.0, 12.0), (1, 1000), (1, 500))],
)
def test_preset_ranges(preset: str, t: tuple[float, float], li: tuple[int, int], lo: tuple[int, int]) -> None:
    inst = generate(preset, users=400, seed=5)
    assert inst.num_users == 400
    assert t[0] <= inst.deadline_s.min() <= inst.deadline_s.max() <= t[1]
    assert li[0] <= inst.input_tokens.min() <= inst.input_tokens.max() <= li[1]
    assert lo[0] <= inst.output_tokens.min() <= inst.output_tokens.max() <= lo[1]
    assert 0.6 <= inst.acceptance.min() <= inst.acceptance.max() <= 0.8
    assert inst.input_tokens.dtype == np.int64
    # not rounded: deadlines keep their full precision
    assert any(round(x, 6) != x for x in inst.deadline_s.tolist())
    assert generate(preset).num_users == 30


def test_same_seed_same_bytes_other_seed_differs() -> None:
    a = instance_bytes(generate("fig4", seed=11))
    assert a == instance_bytes(generate("fig4", seed=11))
    assert a != instance_bytes(generate("fig4", seed=12))


def test_file_records_every_parameter_and_regenerates() -> None:
    inst = generate("fig5", users=7, seed=3, draft_length=3, z_grid=(0.0, 0.5, 1.0))
    record = dict(inst.generator or {})
    # measured-constant overrides are recorded only when set (tests/test_calibrate.py)
    assert {f.name for f in dataclasses.fields(GeneratorParams)} - set(CONSTANT_OVERRIDES) <= set(record)
    assert record["seed"] == 3
    assert record["preset"] == "fig5"
    again = generate_from(GeneratorParams.from_record(record))
    assert instance_bytes(again) == instance_bytes(inst)


def test_overrides_and_errors() -> None:
    inst = generate(
        "fig4",
        users=4,
        seed=0,
        memory_bytes=30e9,
        hardware="a100-80gb",
        llm="qwen2.5-7b",
        slm="qwen2.5-0.5b",
        acceptance=0.75,
        lambda_grid=(0.0, 1.0),
    )
    assert inst.server.memory_bytes == 30e9
    assert inst.llm.name == "qwen2.5-7b"
    assert inst.llm.alpha_s_per_flop == 1 / (0.5 * 312e12)
    assert inst.acceptance.tolist() == [0.75] * 4
    assert inst.server.lambda_grid == (0.0, 1.0)
    assert generate("fig4", hardware="h100-sxm").server.memory_bytes == 80e9
    for bad in (
        {"users": 0},
        {"input_min": 5, "input_max": 4},
        {"acceptance_max": 1.0},
        {"z_grid": (0.5, 0.2)},
        {"z_grid": ()},
        {"memory_bytes": 1.0, "kv_budget_tokens": 1.0},
        {"llm": "gpt-5"},
        {"colour": "red"},
        {"deadline_min_s": math.nan},
    ):
        with pytest.raises(ValueError):  # noqa: PT011 - each message names its own rule
            generate("fig4", **bad)
    with pytest.raises(ValueError, match="unknown preset"):
        generate("fig9")


def test_tight_memory_preset_binds() -> None:
    assert "tight-memory" in PRESETS
    inst = generate("tight-memory", seed=1)
    tokens = 3000.0 * (inst.llm_kv_bytes_per_token + inst.slm_kv_bytes_per_token)
    assert inst.server.memory_bytes == pytest.approx(inst.llm_weight_bytes + inst.slm_weight_bytes + tokens)
    assert generate("tight-memory", memory_bytes=13e9).server.memory_bytes == 13e9
    everyone_ad = evaluate(inst, Schedule(0.5, np.full(inst.num_users, AD, dtype=np.int8)))
    assert any("memory" in v for v in everyone_ad.violations)


@pytest.mark.parametrize(("output_tokens", "percent"), [(200, 18.0), (600, 18.3), (1000, 18.6)])
def test_fig1_sd_needs_more_memory(output_tokens: int, percent: float) -> None:
    """Fig. 1(b): one user, 500 input tokens, SD at z=0 vs AD at z=1 (docs/model.md section 11)."""
    inst = generate("fig1", output_tokens=output_tokens)
    assert inst.num_users == 1
    assert inst.input_tokens.tolist() == [500]
    assert inst.acceptance.tolist() == [0.7]
    ad = evaluate(inst, Schedule(1.0, np.array([AD], dtype=np.int8)))
    sd = evaluate(inst, Schedule(0.0, np.array([SD], dtype=np.int8)))
    assert ad.feasible
    assert sd.feasible
    assert round(100 * (sd.memory_bytes - ad.memory_bytes) / ad.memory_bytes, 1) == percent


def test_cli_count_naming_and_identical_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["generate", "--preset", "fig4", "--users", "12", "--seed", "1", "--count", "3"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert names == ["fig4-K12-s0001.json", "fig4-K12-s0002.json", "fig4-K12-s0003.json"]
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
        inst = read_instance(tmp_path / "a" / name)
        assert inst.name == name.removesuffix(".json")
        seed = int(name[-9:-5])
        assert (tmp_path / "a" / name).read_bytes() == instance_bytes(generate("fig4", users=12, seed=seed))
    out = capsys.readouterr().out.split()
    assert out[0].endswith("fig4-K12-s0001.json")


def test_cli_knobs_reach_the_file(tmp_path: Path) -> None:
    code = main(
        [
            "generate",
            "--preset",
            "fig5",
            "-K",
            "5",
            "--seed",
            "9",
            "--out",
            str(tmp_path),
            "--grid-step",
            "0.25",
            "--lambda-grid",
            "0,0.5,1",
            "--draft-length",
            "4",
            "--output-tokens",
            "7",
            "--input-tokens",
            "3,9",
            "--kv-budget-tokens",
            "100",
            "--uplink-psd",
            "-40",
            "--radius",
            "100",
            "--bits-per-token",
            "16",
        ]
    )
    assert code == 0
    inst = read_instance(tmp_path / "fig5-K5-s0009.json")
    assert inst.server.z_grid == (0.0, 0.25, 0.5, 0.75, 1.0)
    assert inst.server.lambda_grid == (0.0, 0.5, 1.0)
    assert inst.server.draft_length == 4
    assert inst.server.bits_per_token == 16.0
    assert inst.output_tokens.tolist() == [7] * 5
    assert 3 <= inst.input_tokens.min() <= inst.input_tokens.max() <= 9
    assert inst.distance_m is not None
    assert max(d for d in inst.distance_m if d is not None) <= 100.0
    assert inst.generator is not None
    assert inst.generator["uplink_psd_dbm_hz"] == -40.0
    assert inst.generator["kv_budget_tokens"] == 100.0


@settings(max_examples=40, deadline=None)
@given(
    preset=st.sampled_from(sorted(PRESETS)),
    users=st.integers(1, 20),
    seed=st.integers(0, 2**31),
    draft_length=st.integers(1, 5),
    acceptance=st.tuples(st.floats(0.01, 0.98), st.floats(0.0, 0.01)),
    hardware=st.sampled_from(sorted(HARDWARE)),
    pair=st.sampled_from(sorted(MODEL_PAIRS)),
)
def test_any_knobs_give_a_valid_reproducible_file(
    preset: str,
    users: int,
    seed: int,
    draft_length: int,
    acceptance: tuple[float, float],
    hardware: str,
    pair: str,
) -> None:
    llm, slm = MODEL_PAIRS[pair]
    inst = generate(
        preset,
        users=users,
        seed=seed,
        draft_length=draft_length,
        hardware=hardware,
        llm=llm,
        slm=slm,
        acceptance_min=acceptance[0],
        acceptance_max=acceptance[0] + acceptance[1],
    )
    data = instance_bytes(inst)
    back = instance_from_dict(parse_json(data, "gen"), "gen")
    assert back == inst
    assert back.generator is not None
    assert instance_bytes(generate_from(GeneratorParams.from_record(back.generator))) == data
