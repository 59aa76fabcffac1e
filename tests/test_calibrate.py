"""``balance-opt calibrate``: NNLS fit, timings CSV rules, profile files, ``generate --hardware-file``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from balance_opt.calibration.fit import FitError, fit_model, nnls2, row_flops
from balance_opt.calibration.paper_fig1a import PAPER_REDUCTIONS_PCT, fit
from balance_opt.calibration.profile_file import read_profile
from balance_opt.calibration.timings import Timing, timings_csv
from balance_opt.errors import InputError
from balance_opt.generator import generate
from balance_opt.io import read_instance
from balance_opt.model import decode_flops, prefill_flops, verify_flops
from balance_opt.profiles import FITTED, get_model
from tests.test_cli_basic import run

TRUE = {"llm": (1.3e-14, 0.012), "slm": (2.1e-14, 0.0031)}
HEADER = "model,phase,batch,new_tokens,context_tokens,seconds\n"


def synthetic_rows(noise: float, seed: int = 7) -> list[Timing]:
    """Passes of the paper's pair timed by the model itself, with multiplicative noise."""
    rng = np.random.default_rng(seed)
    models = {"llm": get_model("llama-2-7b"), "slm": get_model("tinyllama-1.1b")}
    rows = []
    for key, arch in models.items():
        lm = arch.language_model(*TRUE[key])
        shapes = [("prefill", b, L, 0) for b in (1, 4) for L in (32, 256, 1024)]
        shapes += [("decode", b, 1, c) for b in (1, 8, 32) for c in (100, 1000)]
        shapes += (
            [("verify", b, m, c) for b in (1, 8) for m in (2, 5) for c in (100, 1000)] if key == "llm" else []
        )
        for phase, b, m, c in shapes:
            row = Timing(key, phase, b, m, c, 1.0)
            exact = lm.alpha_s_per_flop * row_flops(lm, row) + lm.beta_s
            rows.append(Timing(key, phase, b, m, c, exact * (1.0 + noise * rng.standard_normal())))
    return rows


def test_row_workloads_follow_the_model_formulas() -> None:
    lm = get_model("llama-2-7b").language_model(1.0, 0.0)
    assert row_flops(lm, Timing("llm", "prefill", 3, 500, 0, 1.0)) == 3 * float(prefill_flops(lm, 500))
    # a decode pass after c cached tokens is step l = 1 after a prompt of c tokens
    assert row_flops(lm, Timing("llm", "decode", 2, 1, 700, 1.0)) == 2 * float(decode_flops(lm, 700, 1))
    assert row_flops(lm, Timing("llm", "verify", 1, 2, 700, 1.0)) == float(verify_flops(lm, 700, 2))
    assert float(verify_flops(lm, 700, 1)) == float(decode_flops(lm, 700, 1))


def test_recovers_known_constants_from_noisy_timings() -> None:
    rows = synthetic_rows(noise=0.02)
    for key in ("llm", "slm"):
        arch = get_model("llama-2-7b" if key == "llm" else "tinyllama-1.1b").language_model(1.0, 0.0)
        got = fit_model(arch, [r for r in rows if r.model == key])
        alpha, beta = TRUE[key]
        assert got.alpha_s_per_flop == pytest.approx(alpha, rel=0.03, abs=0)
        assert got.beta_s == pytest.approx(beta, rel=0.03, abs=0)
        assert max(e.max for e in got.errors.values()) < 0.08  # 2 % noise, 4 sigma
    exact = fit_model(
        get_model("tinyllama-1.1b").language_model(1.0, 0.0),
        [r for r in synthetic_rows(0.0) if r.model == "slm"],
    )
    assert exact.alpha_s_per_flop == pytest.approx(TRUE["slm"][0], rel=1e-9, abs=0)


def brute_force(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """Smallest loss over a fine grid of (a, b) >= 0 (the reference for nnls2)."""
    a, b = np.meshgrid(np.linspace(0, 3, 601), np.linspace(0, 3, 601))
    loss = ((w * (a[..., None] * x + b[..., None] - y)) ** 2).sum(axis=-1)
    return float(loss.min())


@pytest.mark.parametrize(
    "y",
    [
        [1.0, 2.0, 3.0],  # free optimum: a = 1, b = 0... inside
        [0.2, 1.4, 2.6],  # negative intercept: b hits its bound
        [2.0, 1.5, 1.0],  # negative slope: a hits its bound
        [-1.0, -2.0, -3.0],  # both at zero
    ],
)
def test_nnls2_is_the_constrained_optimum(y: list[float]) -> None:
    x, yy, w = np.array([0.0, 1.0, 2.0]), np.array(y), np.array([1.0, 0.5, 2.0])
    a, b = nnls2(x, yy, w)
    assert a >= 0
    assert b >= 0
    loss = float(((w * (a * x + b - yy)) ** 2).sum())
    assert loss <= brute_force(x, yy, w) + 1e-12


def test_a_model_needs_two_distinct_workloads() -> None:
    lm = get_model("llama-2-7b").language_model(1.0, 0.0)
    with pytest.raises(FitError, match="two rows"):
        fit_model(lm, [Timing("llm", "decode", 1, 1, 10, 0.01)] * 3)


def test_calibrate_then_generate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    csv = tmp_path / "t.csv"
    csv.write_text(timings_csv(synthetic_rows(noise=0.01)))
    args = ("calibrate", csv, "--llm", "llama-2-7b", "--slm", "tinyllama-1.1b", "--memory-bytes", "30e9")
    code, _, err = run(capsys, *args, "--out", tmp_path / "p.json", "--plot", tmp_path / "fig")
    assert code == 0, err
    assert (tmp_path / "fig.png").exists()
    doc = json.loads((tmp_path / "p.json").read_text())
    assert set(doc["llm"]["relative_error"]) == {"prefill", "decode", "verify"}
    assert doc["slm"]["alpha_s_per_flop"] == pytest.approx(TRUE["slm"][0], rel=0.03, abs=0)
    assert run(capsys, *args, "--out", tmp_path / "q.json")[0] == 0
    assert (tmp_path / "q.json").read_text() == (tmp_path / "p.json").read_text().replace('"p"', '"q"')
    code, _, err = run(
        capsys, "generate", "--users", "3", "--out", tmp_path, "--hardware-file", tmp_path / "p.json"
    )
    assert code == 0, err
    inst = read_instance(tmp_path / "fig4-K3-s0000.json")
    assert inst.llm.beta_s == doc["llm"]["beta_s"]
    assert inst.slm.alpha_s_per_flop == doc["slm"]["alpha_s_per_flop"]
    assert inst.server.memory_bytes == 30e9
    code, _, err = run(
        capsys, "generate", "--out", tmp_path, "--llm", "qwen2.5-7b", "--hardware-file", tmp_path / "p.json"
    )
    assert code == 2
    assert "differs" in err


@pytest.mark.parametrize(
    ("line", "where"),
    [
        ("gpu,decode,1,1,10,0.01", "row 2, column model: must be one of llm, slm"),
        ("llm,generate,1,1,10,0.01", "row 2, column phase"),
        ("llm,decode,0,1,10,0.01", "row 2, column batch: must be an integer >= 1"),
        ("llm,decode,1,2,10,0.01", "row 2, column new_tokens: must be 1 for a decode row"),
        ("llm,prefill,1,20,10,0.01", "row 2, column context_tokens: must be 0 for a prefill row"),
        ("slm,verify,1,2,10,0.01", "row 2, column model: must be llm for a verify row"),
        ("llm,decode,1,1,-1,0.01", "row 2, column context_tokens: must be an integer >= 0"),
        ("llm,decode,1,1,10,nan", "row 2, column seconds: must be a finite number > 0"),
        ("llm,decode,1,1,10,", "row 2, column seconds"),
    ],
)
def test_bad_rows_name_file_row_column_rule(
    line: str, where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    csv = tmp_path / "bad.csv"
    csv.write_text(HEADER + "llm,decode,1,1,10,0.01\n" + line + "\n")
    code, _, err = run(
        capsys,
        "calibrate",
        csv,
        "--llm",
        "llama-2-7b",
        "--slm",
        "tinyllama-1.1b",
        "--out",
        tmp_path / "p.json",
    )
    assert code == 2
    assert f"{csv}: {where}" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "p.json").exists()


def test_file_level_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    csv = tmp_path / "t.csv"
    csv.write_text("model,phase,seconds\nllm,decode,0.1\n")
    args = ("--llm", "llama-2-7b", "--slm", "tinyllama-1.1b", "--out", tmp_path / "p.json")
    assert "missing column(s) batch, new_tokens, context_tokens" in run(capsys, "calibrate", csv, *args)[2]
    csv.write_text(HEADER + "llm,decode,1,1,10,0.01\nllm,decode,1,1,20,0.02\n")
    code, _, err = run(capsys, "calibrate", csv, *args)
    assert code == 2
    assert "model slm: needs at least two rows" in err
    assert run(capsys, "calibrate", tmp_path / "none.csv", *args)[0] == 2


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"schema": "x"}, "schema: must be 'balance-opt/hardware-profile'"),
        (
            {"llm": {"name": "gpt", "alpha_s_per_flop": 1e-14, "beta_s": 0.01}},
            "llm.name: must be a known model",
        ),
        ({"slm": {"name": "tinyllama-1.1b", "alpha_s_per_flop": 0, "beta_s": 0.01}}, "slm.alpha_s_per_flop"),
        ({"memory_bytes": -1}, "memory_bytes: must be a finite number > 0"),
    ],
)
def test_profile_file_errors(patch: dict[str, object], message: str, tmp_path: Path) -> None:
    doc: dict[str, object] = {
        "schema": "balance-opt/hardware-profile",
        "version": 1,
        "llm": {"name": "llama-2-7b", "alpha_s_per_flop": 1e-14, "beta_s": 0.01},
        "slm": {"name": "tinyllama-1.1b", "alpha_s_per_flop": 1e-14, "beta_s": 0.0},
    }
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    assert read_profile(path).slm.beta_s == 0.0
    path.write_text(json.dumps({**doc, **patch}))
    with pytest.raises(InputError, match=message):
        read_profile(path)


def test_fig1a_profile_is_what_its_fit_gives() -> None:
    got = fit()
    shipped = dict((name, (a, b)) for name, a, b in FITTED["rtx4090-fig1a"].constants)
    assert shipped["llama-2-7b"] == pytest.approx((got.alpha_s_per_flop, got.llm_beta_s), rel=1e-9, abs=0)
    assert shipped["tinyllama-1.1b"] == (got.alpha_s_per_flop, got.slm_beta_s)
    assert got.ad_latency_s[1000] == pytest.approx(6.5)
    assert set(got.reductions_pct) == set(PAPER_REDUCTIONS_PCT)
    inst = generate("fig4", users=3, hardware="rtx4090-fig1a")
    assert inst.llm.beta_s == shipped["llama-2-7b"][1]
    with pytest.raises(ValueError, match="has constants only for"):
        generate("fig4", users=3, hardware="rtx4090-fig1a", llm="qwen2.5-7b")


def test_sensitivity_gains_follow_the_paper_definition() -> None:
    import pandas as pd

    from benchmarks.bench_sensitivity import gains

    df = pd.DataFrame(
        {
            "setting": ["a"] * 4 + ["b"] * 2,
            "solver": ["balance", "ad-only", "balance", "ad-only", "balance", "ad-only"],
            "throughput": [0.6, 0.5, 0.4, 0.3, 0.5, 0.0],
        }
    )
    got = gains(df, ["setting"], ["ad-only"]).set_index("setting")
    assert got.loc["a", "over_ad-only_pct"] == pytest.approx(100.0 * (0.5 / 0.4 - 1.0))  # means over seeds
    assert np.isnan(got.loc["b", "over_ad-only_pct"])  # a baseline serving nobody has no ratio


def test_memory_bound_covers_every_all_ad_and_all_sd_schedule() -> None:
    from balance_opt.evaluator import AD, SD, Schedule, evaluate
    from benchmarks.reproduce_fig1a import memory_bound

    for seed in range(3):
        inst = generate("fig5", users=8, seed=seed)
        bound = memory_bound(inst)
        for z, mode in ((1.0, AD), (0.0, SD)):
            ev = evaluate(inst, Schedule(z, np.full(8, mode, dtype=np.int8)))
            assert ev.ad.kv_bytes + ev.sd.kv_bytes <= bound * (1 + 1e-12)
        assert bound < 2.0 * max(
            evaluate(inst, Schedule(0.0, np.full(8, SD, dtype=np.int8))).sd.kv_bytes, 1.0
        )


def test_measured_constants_are_recorded_and_regenerate() -> None:
    from balance_opt.generator import GeneratorParams, generate_from
    from balance_opt.io import instance_bytes

    inst = generate("fig4", users=4, seed=2, llm_alpha_s_per_flop=2e-14, slm_beta_s=0.0)
    assert inst.llm.alpha_s_per_flop == 2e-14
    assert inst.slm.beta_s == 0.0
    assert inst.llm.beta_s == generate("fig4", users=4, seed=2).llm.beta_s  # the hardware's
    record = dict(inst.generator or {})
    assert record["llm_alpha_s_per_flop"] == 2e-14
    assert "llm_beta_s" not in record  # unset overrides stay out: older files keep their bytes
    assert instance_bytes(generate_from(GeneratorParams.from_record(record))) == instance_bytes(inst)
    with pytest.raises(ValueError, match="slm_alpha_s_per_flop must be > 0"):
        generate("fig4", users=4, slm_alpha_s_per_flop=0.0)


def test_the_sample_timings_are_what_their_script_writes() -> None:
    """examples/timings-synthetic-rtx4090.csv is labelled synthetic, and its script writes exactly it."""
    from benchmarks.sample_timings import PROVENANCE, sample_csv

    path = Path(__file__).resolve().parents[1] / "examples" / "timings-synthetic-rtx4090.csv"
    assert path.read_text() == sample_csv()
    assert PROVENANCE.startswith("synthetic (not measured)")
    assert all(line.endswith(f",{PROVENANCE}") for line in path.read_text().splitlines()[1:])


def test_calibrate_on_the_sample_timings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The sample gives back the datasheet constants it was priced with (within its 5% noise), and
    the profile's source is a command that writes the same profile again."""
    import shlex

    from balance_opt.profiles import language_model_on

    sample = Path(__file__).resolve().parents[1] / "examples" / "timings-synthetic-rtx4090.csv"
    args = ("calibrate", sample, "--llm", "llama-2-7b", "--slm", "tinyllama-1.1b", "--memory-bytes", "24e9")
    code, out, err = run(capsys, *args, "--name", "try-it", "--out", tmp_path / "p.json")
    assert (code, err) == (0, "")
    assert "worst relative error" in out
    doc = json.loads((tmp_path / "p.json").read_text())
    for key, name in (("llm", "llama-2-7b"), ("slm", "tinyllama-1.1b")):
        sheet = language_model_on("rtx4090", name)
        assert doc[key]["alpha_s_per_flop"] == pytest.approx(sheet.alpha_s_per_flop, rel=0.02)
        assert doc[key]["beta_s"] == pytest.approx(sheet.beta_s, rel=0.02)
    assert doc["memory_bytes"] == 24e9
    source = shlex.split(doc["source"])
    assert source[source.index("--memory-bytes") + 1] == "24000000000.0"
    assert source[source.index("--name") + 1] == "try-it"
    assert run(capsys, *source[1:], "--out", tmp_path / "again.json")[0] == 0
    assert (tmp_path / "again.json").read_text() == (tmp_path / "p.json").read_text()
