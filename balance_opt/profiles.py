"""Model and hardware profiles: the architecture numbers and GPU constants of real setups.

A :class:`ModelProfile` holds what docs/model.md section 1 needs of a transformer (layers,
hidden size, head dimension, heads, FFN size), read from the model's ``config.json`` on
its Hugging Face hub page. A :class:`HardwareProfile` holds a GPU's memory capacity,
dense FP16/BF16 tensor peak and memory bandwidth from its NVIDIA datasheet. Together
they give the per-model constants of docs/model.md section 10:

- ``alpha = 1 / (0.5 * peak)`` seconds per FLOP (half of the dense tensor peak),
- ``beta = q / bandwidth`` seconds per forward pass (streaming the weights ``q`` once),

unless a hardware profile states a measured value instead.

Grouped-query attention: docs/model.md counts the K/V projections and the KV cache with all
``H`` heads. ``kv_heads`` is recorded for models that use fewer K/V heads, but the
default model (and :meth:`ModelProfile.language_model`) follows docs/model.md and ignores it.
"""

from __future__ import annotations

from dataclasses import dataclass

from balance_opt.instance import LanguageModel

# Fraction of the dense tensor peak a decoding workload reaches (docs/model.md section 10).
PEAK_FRACTION = 0.5


@dataclass(frozen=True)
class ModelProfile:
    """Architecture of one transformer in the notation of docs/model.md section 1."""

    name: str
    layers: int  # M  (num_hidden_layers)
    hidden: int  # Dm (hidden_size)
    head_dim: int  # Dh (head_dim, else hidden_size / num_attention_heads)
    heads: int  # H  (num_attention_heads)
    ffn: int  # Df (intermediate_size)
    kv_heads: int  # num_key_value_heads (not used by the model of docs/model.md)
    source: str
    vocab: int = 32000  # vocab_size: only `balance-opt profile` uses it (the LM head's cost)

    def weight_bytes(self, bytes_per_param: float = 2.0) -> float:
        """``q`` (13)/(14) of this architecture."""
        return self.language_model(1.0, 0.0).weight_bytes(bytes_per_param)

    def language_model(self, alpha_s_per_flop: float, beta_s: float) -> LanguageModel:
        """The :class:`LanguageModel` record with the given hardware constants."""
        return LanguageModel(
            layers=self.layers,
            hidden=self.hidden,
            head_dim=self.head_dim,
            heads=self.heads,
            ffn=self.ffn,
            alpha_s_per_flop=alpha_s_per_flop,
            beta_s=beta_s,
            name=self.name,
        )


@dataclass(frozen=True)
class HardwareProfile:
    """One GPU: capacity, dense FP16/BF16 tensor peak and memory bandwidth."""

    name: str
    memory_bytes: float  # Q
    peak_flops: float  # dense FP16/BF16 tensor FLOP/s
    bandwidth_bytes_s: float  # memory bandwidth, bytes/s
    source: str
    measured_alpha_s_per_flop: float | None = None  # overrides 1 / (0.5 peak) when given
    measured_bytes_s: float | None = None  # overrides the bandwidth in beta when given

    @property
    def alpha_s_per_flop(self) -> float:
        """Seconds per FLOP: ``1 / (0.5 * peak)`` unless measured."""
        if self.measured_alpha_s_per_flop is not None:
            return self.measured_alpha_s_per_flop
        return 1.0 / (PEAK_FRACTION * self.peak_flops)

    def beta_s(self, weight_bytes: float) -> float:
        """Seconds of one forward pass: the weights streamed once, ``q / bandwidth``."""
        rate = self.measured_bytes_s if self.measured_bytes_s is not None else self.bandwidth_bytes_s
        return weight_bytes / rate

    def language_model(self, model: ModelProfile, bytes_per_param: float = 2.0) -> LanguageModel:
        """``model`` with this GPU's alpha and beta (docs/model.md section 10)."""
        return model.language_model(self.alpha_s_per_flop, self.beta_s(model.weight_bytes(bytes_per_param)))


_HF = "https://huggingface.co/{}/blob/main/config.json"

MODELS: dict[str, ModelProfile] = {
    p.name: p
    for p in (
        # docs/model.md section 10; config.json: hidden_size 4096, num_hidden_layers 32,
        # num_attention_heads 32, num_key_value_heads 32, intermediate_size 11008, vocab_size 32000
        ModelProfile("llama-2-7b", 32, 4096, 128, 32, 11008, 32, _HF.format("meta-llama/Llama-2-7b-hf")),
        # docs/model.md section 10; config.json: hidden_size 2048, num_hidden_layers 22,
        # num_attention_heads 32, num_key_value_heads 4, intermediate_size 5632, vocab_size 32000
        ModelProfile(
            "tinyllama-1.1b", 22, 2048, 64, 32, 5632, 4, _HF.format("TinyLlama/TinyLlama-1.1B-Chat-v1.0")
        ),
        # config.json: hidden_size 4096, num_hidden_layers 32, num_attention_heads 32,
        # num_key_value_heads 8, intermediate_size 14336, vocab_size 128256
        ModelProfile(
            "llama-3-8b", 32, 4096, 128, 32, 14336, 8, _HF.format("meta-llama/Meta-Llama-3-8B"), 128256
        ),
        # config.json: hidden_size 2048, num_hidden_layers 16, num_attention_heads 32,
        # num_key_value_heads 8, intermediate_size 8192, head_dim 64, vocab_size 128256
        ModelProfile(
            "llama-3.2-1b", 16, 2048, 64, 32, 8192, 8, _HF.format("meta-llama/Llama-3.2-1B"), 128256
        ),
        # config.json: hidden_size 3584, num_hidden_layers 28, num_attention_heads 28,
        # num_key_value_heads 4, intermediate_size 18944 (head_dim 3584 / 28 = 128), vocab_size 152064
        ModelProfile(
            "qwen2.5-7b", 28, 3584, 128, 28, 18944, 4, _HF.format("Qwen/Qwen2.5-7B-Instruct"), 152064
        ),
        # config.json: hidden_size 896, num_hidden_layers 24, num_attention_heads 14,
        # num_key_value_heads 2, intermediate_size 4864 (head_dim 896 / 14 = 64), vocab_size 151936
        ModelProfile(
            "qwen2.5-0.5b", 24, 896, 64, 14, 4864, 2, _HF.format("Qwen/Qwen2.5-0.5B-Instruct"), 151936
        ),
    )
}

# Target / draft pairs used in practice: LLM name -> SLM name.
MODEL_PAIRS: dict[str, tuple[str, str]] = {
    "llama2": ("llama-2-7b", "tinyllama-1.1b"),  # the paper's pair
    "llama3": ("llama-3-8b", "llama-3.2-1b"),
    "qwen2.5": ("qwen2.5-7b", "qwen2.5-0.5b"),
}

HARDWARE: dict[str, HardwareProfile] = {
    h.name: h
    for h in (
        # docs/model.md section 10. NVIDIA Ada GPU Architecture whitepaper (RTX 4090):
        # 24 GB GDDR6X, 1008 GB/s, 165.2 TFLOPS dense FP16 tensor with FP32 accumulate.
        HardwareProfile(
            "rtx4090", 24e9, 165.2e12, 1.008e12, "NVIDIA Ada GPU Architecture whitepaper, RTX 4090"
        ),
        # NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM: 80 GB HBM2e, 2039 GB/s,
        # 312 TFLOPS dense FP16/BF16 tensor (624 with sparsity).
        HardwareProfile("a100-80gb", 80e9, 312e12, 2.039e12, "NVIDIA A100 datasheet, A100 80GB SXM"),
        # NVIDIA H100 Tensor Core GPU datasheet, H100 SXM: 80 GB HBM3, 3.35 TB/s,
        # 1979 TFLOPS FP16/BF16 tensor with sparsity, i.e. 989.5 dense.
        HardwareProfile("h100-sxm", 80e9, 989.5e12, 3.35e12, "NVIDIA H100 datasheet, H100 SXM"),
        # NVIDIA H200 Tensor Core GPU datasheet, H200 SXM: 141 GB HBM3e, 4.8 TB/s,
        # 1979 TFLOPS FP16/BF16 tensor with sparsity, i.e. 989.5 dense.
        HardwareProfile("h200", 141e9, 989.5e12, 4.8e12, "NVIDIA H200 datasheet, H200 SXM"),
    )
}


@dataclass(frozen=True)
class FittedProfile:
    """A GPU whose per-model constants were fitted to measurements (or a paper's figure).

    Unlike :class:`HardwareProfile` it holds ``alpha`` and ``beta`` per model, so it only
    knows the models it was fitted for.
    """

    name: str
    memory_bytes: float  # Q
    constants: tuple[tuple[str, float, float], ...]  # (model name, alpha s/FLOP, beta s)
    source: str

    def language_model(self, model: ModelProfile) -> LanguageModel:
        """``model`` with its fitted constants; ValueError for a model not fitted here."""
        for name, alpha, beta in self.constants:
            if name == model.name:
                return model.language_model(alpha, beta)
        fitted = ", ".join(c[0] for c in self.constants)
        raise ValueError(
            f"hardware profile {self.name!r} has constants only for {fitted}, not {model.name!r}"
        )


FITTED: dict[str, FittedProfile] = {
    f.name: f
    for f in (
        # balance_opt.calibration.paper_fig1a (run it to reproduce these numbers): alpha is
        # the rtx4090 datasheet value; beta^L puts AD at 1000 output tokens on 6.5 s, the
        # middle of the top interval of Fig. 1(a)'s 0..7 s axis; beta^S >= 0 is the least-
        # squares fit of the three reductions 40.3 / 39.8 / 37.2 % at acceptance 0.7. It lands
        # on the bound beta^S = 0: even a free SLM pass gives at most 36.5 / 38.7 / 39.1 %.
        FittedProfile(
            "rtx4090-fig1a",
            24e9,
            (
                ("llama-2-7b", 1.2106537530266343e-14, 0.006309391479631962),
                ("tinyllama-1.1b", 1.2106537530266343e-14, 0.0),
            ),
            "BALANCE paper (arXiv 2608.05926) Fig. 1(a), fitted by balance_opt.calibration.paper_fig1a",
        ),
    )
}

DEFAULT_HARDWARE = "rtx4090"
DEFAULT_LLM = "llama-2-7b"
DEFAULT_SLM = "tinyllama-1.1b"


def get_model(name: str) -> ModelProfile:
    """The model profile ``name``; ValueError naming the known ones otherwise."""
    try:
        return MODELS[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; known: {', '.join(MODELS)}") from None


def get_hardware(name: str) -> HardwareProfile:
    """The hardware profile ``name``; ValueError naming the known ones otherwise."""
    try:
        return HARDWARE[name]
    except KeyError:
        known = ", ".join(hardware_names())
        raise ValueError(f"unknown hardware profile {name!r}; known: {known}") from None


def hardware_names() -> list[str]:
    """Every hardware profile name: datasheet ones, then fitted ones."""
    return [*HARDWARE, *FITTED]


def hardware_memory_bytes(name: str) -> float:
    """Capacity ``Q`` of the hardware profile ``name`` (datasheet or fitted)."""
    return FITTED[name].memory_bytes if name in FITTED else get_hardware(name).memory_bytes


def language_model_on(hardware: str, model: str, bytes_per_param: float = 2.0) -> LanguageModel:
    """Model ``model`` with the constants of hardware profile ``hardware`` (datasheet or fitted)."""
    if hardware in FITTED:
        return FITTED[hardware].language_model(get_model(model))
    return get_hardware(hardware).language_model(get_model(model), bytes_per_param)
