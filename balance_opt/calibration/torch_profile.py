"""Time random-weight decoders built from architecture numbers (``balance-opt profile``).

Timings do not depend on weight values, so nothing is downloaded: each model of
:mod:`balance_opt.profiles` is rebuilt in plain PyTorch as a Llama-style decoder (RMSNorm,
grouped-query attention with ``kv_heads`` K/V heads, SwiGLU FFN, vocabulary head) with a
pre-allocated KV cache, and its prefill, decode and verify passes are timed over a grid
of batch sizes and lengths. The result is the timings CSV ``balance-opt calibrate`` reads.

Each pass is run ``warmup`` times untimed, then ``repeats`` times; the row holds the
median. On CUDA the device is synchronised around each pass.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from balance_opt.calibration.timings import Timing
from balance_opt.profiles import ModelProfile

INSTALL = "pip install 'balance-opt[profile]'  (or: pip install torch)"


def require_torch() -> Any:
    """The ``torch`` module, or ImportError with the install command."""
    try:
        import torch
    except ImportError:
        raise ImportError(f"balance-opt profile needs PyTorch: {INSTALL}") from None
    return torch


@dataclass(frozen=True)
class Grid:
    """What to time: batch sizes, prompt lengths, cached contexts, verified token counts."""

    batches: tuple[int, ...] = (1, 2, 4, 8)
    prompt_lengths: tuple[int, ...] = (32, 128, 512)
    contexts: tuple[int, ...] = (128, 512, 1024)
    verify_tokens: tuple[int, ...] = (2, 4)
    repeats: int = 5
    warmup: int = 2

    @property
    def max_context(self) -> int:
        return max(max(self.prompt_lengths), max(self.contexts) + max(self.verify_tokens, default=1))


def build_decoder(arch: ModelProfile, device: str, dtype: Any) -> Any:
    """A random-weight decoder of ``arch`` (module, eval mode, on ``device``)."""
    torch = require_torch()
    nn, F = torch.nn, torch.nn.functional
    Module: Any = nn.Module
    dh, h, kvh = arch.head_dim, arch.heads, arch.kv_heads

    class Layer(Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm1, self.norm2 = nn.RMSNorm(arch.hidden), nn.RMSNorm(arch.hidden)
            self.q = nn.Linear(arch.hidden, h * dh, bias=False)
            self.kv = nn.Linear(arch.hidden, 2 * kvh * dh, bias=False)
            self.o = nn.Linear(h * dh, arch.hidden, bias=False)
            self.gate_up = nn.Linear(arch.hidden, 2 * arch.ffn, bias=False)
            self.down = nn.Linear(arch.ffn, arch.hidden, bias=False)

        def forward(self, x: Any, cache: Any, pos: int) -> Any:
            b, m, _ = x.shape
            y = self.norm1(x)
            q = self.q(y).view(b, m, h, dh).transpose(1, 2)
            k, v = self.kv(y).view(b, m, 2, kvh, dh).permute(2, 0, 3, 1, 4)
            cache[0, :, :, pos : pos + m] = k  # keys and values of the new tokens
            cache[1, :, :, pos : pos + m] = v
            keys, values = cache[0, :, :, : pos + m], cache[1, :, :, : pos + m]
            # new token i sees the cache and new tokens 0..i
            mask = torch.ones(m, pos + m, dtype=torch.bool, device=x.device).tril(diagonal=pos)
            att = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask, enable_gqa=kvh != h)
            x = x + self.o(att.transpose(1, 2).reshape(b, m, h * dh))
            gate, up = self.gate_up(self.norm2(x)).chunk(2, dim=-1)
            return x + self.down(F.silu(gate) * up)

    class Decoder(Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(arch.vocab, arch.hidden)
            self.layers = nn.ModuleList(Layer() for _ in range(arch.layers))
            self.norm = nn.RMSNorm(arch.hidden)
            self.head = nn.Linear(arch.hidden, arch.vocab, bias=False)

        def new_cache(self, batch: int, length: int) -> Any:
            shape = (arch.layers, 2, batch, kvh, length, dh)
            return torch.zeros(shape, device=device, dtype=dtype)

        def forward(self, ids: Any, cache: Any, pos: int) -> Any:
            x = self.embed(ids)
            for layer, c in zip(self.layers, cache, strict=True):
                x = layer(x, c, pos)
            return self.head(self.norm(x[:, -1:]))  # logits of the last position, as in decoding

    with torch.device(device):
        model = Decoder().to(dtype)
    return model.eval()


def _timer(torch: Any, device: str) -> Callable[[Callable[[], Any]], float]:
    def once(fn: Callable[[], Any]) -> float:
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        return time.perf_counter() - start

    return once


def passes(key: str, grid: Grid) -> Iterator[tuple[str, int, int, int]]:
    """``(phase, batch, new_tokens, context_tokens)`` of every pass to time."""
    for b in grid.batches:
        for L in grid.prompt_lengths:
            yield "prefill", b, L, 0
        for c in grid.contexts:
            yield "decode", b, 1, c
            if key == "llm":  # only the LLM verifies
                for m in grid.verify_tokens:
                    yield "verify", b, m, c


def profile_model(
    key: str, arch: ModelProfile, grid: Grid, device: str, dtype: Any, log: Callable[[str], None]
) -> list[Timing]:
    """Median seconds of every pass of :func:`passes` for one model."""
    torch = require_torch()
    model = build_decoder(arch, device, dtype)
    once = _timer(torch, device)
    rows = []
    with torch.inference_mode():
        for phase, b, m, c in passes(key, grid):
            cache = model.new_cache(b, grid.max_context)
            ids = torch.randint(0, arch.vocab, (b, m), device=device)
            if c:  # fill the cache the pass reads (its values do not matter, only its size)
                cache.normal_()

            def run(ids: Any = ids, cache: Any = cache, c: int = c, model: Any = model) -> Any:
                return model(ids, cache, c)

            for _ in range(grid.warmup):
                once(run)
            seconds = statistics.median(once(run) for _ in range(grid.repeats))
            rows.append(Timing(key, phase, b, m, c, seconds))
            log(f"{key} {arch.name} {phase} batch={b} new={m} context={c}: {1e3 * seconds:.2f} ms")
    return rows


def profile_pair(
    archs: dict[str, ModelProfile],
    grid: Grid,
    device: str = "cpu",
    dtype_name: str = "float32",
    log: Callable[[str], None] = lambda _msg: None,
) -> list[Timing]:
    """Rows of both models (``{"llm": arch, "slm": arch}``), LLM first."""
    torch = require_torch()
    dtype = getattr(torch, dtype_name)
    torch.manual_seed(0)
    rows: list[Timing] = []
    for key in ("llm", "slm"):
        rows += profile_model(key, archs[key], grid, device, dtype, log)
        if device.startswith("cuda"):  # the LLM's memory goes back before the SLM is built
            torch.cuda.empty_cache()
    return rows


def parse_ints(text: str) -> tuple[int, ...]:
    """``"1,2,4"`` -> ``(1, 2, 4)``; ValueError unless every value is an integer >= 1."""
    values = tuple(int(v) for v in text.split(",") if v.strip())
    if not values or min(values) < 1:
        raise ValueError(f"expected comma-separated integers >= 1, got {text!r}")
    return values


def tiny_arch(
    name: str = "tiny", layers: int = 2, hidden: int = 64, heads: int = 4, ffn: int = 128
) -> ModelProfile:
    """A few-layer architecture for tests and smoke runs."""
    return ModelProfile(name, layers, hidden, hidden // heads, heads, ffn, heads, "test", vocab=256)
