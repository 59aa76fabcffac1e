"""``balance-opt profile``: random-weight decoders timed on CPU (skipped without PyTorch)."""

from __future__ import annotations

from pathlib import Path

import pytest

from balance_opt.calibration.fit import fit_models
from balance_opt.calibration.timings import read_timings
from balance_opt.calibration.torch_profile import Grid, build_decoder, passes, profile_pair, tiny_arch
from balance_opt.cli import main
from balance_opt.profiles import MODELS

torch = pytest.importorskip("torch")

GRID = Grid(
    batches=(1, 2), prompt_lengths=(8, 32), contexts=(16, 48), verify_tokens=(2, 3), repeats=2, warmup=1
)


def test_cached_passes_equal_one_long_prefill() -> None:
    """Prefill of 12 tokens = prefill of 9, then a verify pass of 2, then a decode pass of 1."""
    arch = tiny_arch()
    model = build_decoder(arch, "cpu", torch.float64)
    ids = torch.randint(0, arch.vocab, (2, 12), generator=torch.Generator().manual_seed(3))
    with torch.inference_mode():
        whole = model(ids, model.new_cache(2, 12), 0)
        cache = model.new_cache(2, 12)
        model(ids[:, :9], cache, 0)
        model(ids[:, 9:11], cache, 9)
        last = model(ids[:, 11:], cache, 11)
    assert torch.allclose(whole, last, rtol=1e-9, atol=1e-9)


def test_grid_covers_every_phase_and_only_the_llm_verifies() -> None:
    llm = list(passes("llm", GRID))
    slm = list(passes("slm", GRID))
    assert {p[0] for p in llm} == {"prefill", "decode", "verify"}
    assert {p[0] for p in slm} == {"prefill", "decode"}
    assert len(llm) == 2 * (2 + 2 + 2 * 2)


def test_profile_writes_a_csv_that_calibrate_fits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    archs = {"llm": tiny_arch("tiny-llm", layers=3), "slm": tiny_arch("tiny-slm", layers=1)}
    rows = profile_pair(archs, GRID)
    assert len(rows) == len(list(passes("llm", GRID))) + len(list(passes("slm", GRID)))
    assert all(r.seconds > 0 for r in rows)
    fits = fit_models({k: a.language_model(1.0, 0.0) for k, a in archs.items()}, rows)
    assert all(f.alpha_s_per_flop >= 0 and f.beta_s >= 0 for f in fits.values())
    # the command, on tiny architectures registered for the test (real ones take minutes on CPU)
    monkeypatch.setitem(MODELS, "tiny-llm", archs["llm"])
    monkeypatch.setitem(MODELS, "tiny-slm", archs["slm"])
    out = tmp_path / "t.csv"
    argv = ["profile", "--llm", "tiny-llm", "--slm", "tiny-slm", "--device", "cpu", "--out", str(out)]
    grid = ["--batches", "1", "--prompt-lengths", "4", "--contexts", "8", "--verify-tokens", "2"]
    assert main([*argv, *grid, "--repeats", "1", "--warmup", "0"]) == 0
    got = read_timings(out)
    assert [(r.model, r.phase) for r in got] == [
        ("llm", "prefill"), ("llm", "decode"), ("llm", "verify"), ("slm", "prefill"), ("slm", "decode")
    ]  # fmt: skip
    assert capsys.readouterr().out.strip() == str(out)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_cuda_without_a_gpu_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profile", "--device", "cuda", "--out", str(tmp_path / "t.csv")]) == 2
    assert "no CUDA device" in capsys.readouterr().err
