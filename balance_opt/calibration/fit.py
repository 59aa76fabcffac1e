"""Fit ``alpha`` (s/FLOP) and ``beta`` (s/pass) of each model from measured passes.

A row's workload is the model's own FLOP count for its phase (docs/model.md section 3, the
functions of :mod:`balance_opt.model`) times its batch:

- prefill of ``L = new_tokens``: ``G_p(L)``
- decode after ``c = context_tokens`` cached tokens: ``G_a(c, 1)`` (the new token attends
  to ``c + 1`` keys, as step ``l`` after a prompt of ``L`` attends to ``L + l``)
- verify of ``m = new_tokens`` after ``P = context_tokens``: ``G_v(P, m)``

and the model predicts ``seconds = alpha * workload + beta``. The fit minimises the
squared RELATIVE residuals (each row weighted by ``1 / seconds``), so a 5 ms decode
pass counts as much as a 500 ms prefill, subject to ``alpha, beta >= 0``. With two
unknowns the non-negative least-squares problem is solved exactly by checking its
active sets: the free optimum, ``beta = 0``, ``alpha = 0`` (the KKT point is one of them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from balance_opt.calibration.timings import PHASES, Timing
from balance_opt.instance import LanguageModel
from balance_opt.model import decode_flops, prefill_flops, verify_flops


def row_flops(model: LanguageModel, row: Timing) -> float:
    """Workload of one measured pass: the phase's FLOPs per sequence times ``batch``."""
    if row.phase == "prefill":
        per_seq = prefill_flops(model, row.new_tokens)
    elif row.phase == "decode":
        per_seq = decode_flops(model, row.context_tokens, 1)
    else:
        per_seq = verify_flops(model, row.context_tokens, row.new_tokens)
    return row.batch * float(per_seq)


def nnls2(x: NDArray[np.float64], y: NDArray[np.float64], w: NDArray[np.float64]) -> tuple[float, float]:
    """``argmin sum (w (a x + b - y))^2`` over ``a, b >= 0`` (exact, by active sets)."""
    ww = w * w

    def loss(a: float, b: float) -> float:
        return float(np.sum(ww * (a * x + b - y) ** 2))

    sw, sx, sy = float(ww.sum()), float((ww * x).sum()), float((ww * y).sum())
    sxx, sxy = float((ww * x * x).sum()), float((ww * x * y).sum())
    candidates = [(0.0, 0.0), (max(sxy / sxx, 0.0) if sxx > 0 else 0.0, 0.0), (0.0, max(sy / sw, 0.0))]
    det = sw * sxx - sx * sx
    if det > 1e-12 * sw * sxx:  # distinct workloads: the free optimum exists
        a, b = (sw * sxy - sx * sy) / det, (sxx * sy - sx * sxy) / det
        if a >= 0.0 and b >= 0.0:
            candidates.append((a, b))
    return min(candidates, key=lambda ab: loss(*ab))


@dataclass(frozen=True)
class PhaseError:
    """Relative error ``|predicted - measured| / measured`` of one phase's rows."""

    rows: int
    mean: float
    max: float


@dataclass(frozen=True)
class ModelFit:
    """Fitted constants of one model and how well they explain its rows."""

    alpha_s_per_flop: float
    beta_s: float
    rows: int
    errors: dict[str, PhaseError]

    def predict(self, flops: NDArray[np.float64]) -> NDArray[np.float64]:
        return self.alpha_s_per_flop * flops + self.beta_s


class FitError(ValueError):
    """The rows cannot determine both constants (too few or identical workloads)."""


def fit_model(model: LanguageModel, rows: Sequence[Timing]) -> ModelFit:
    """NNLS fit of one model's ``alpha`` and ``beta`` to its rows (all phases together)."""
    flops = np.array([row_flops(model, r) for r in rows], dtype=np.float64)
    seconds = np.array([r.seconds for r in rows], dtype=np.float64)
    if len(rows) < 2 or float(flops.max()) == float(flops.min()):
        raise FitError("needs at least two rows with different workloads")
    # Scale x so the normal equations stay well conditioned (FLOPs ~ 1e9..1e14).
    scale = float(flops.max())
    a, b = nnls2(flops / scale, seconds, 1.0 / seconds)
    fit = ModelFit(a / scale, b, len(rows), {})
    rel = np.abs(fit.predict(flops) - seconds) / seconds
    phases = np.array([r.phase for r in rows])
    errors = {
        p: PhaseError(int((phases == p).sum()), float(rel[phases == p].mean()), float(rel[phases == p].max()))
        for p in PHASES
        if (phases == p).any()
    }
    return ModelFit(fit.alpha_s_per_flop, fit.beta_s, fit.rows, errors)


def fit_models(models: dict[str, LanguageModel], rows: Sequence[Timing]) -> dict[str, ModelFit]:
    """``{"llm": fit, "slm": fit}``; FitError naming the model that cannot be fitted."""
    out = {}
    for key, model in models.items():
        mine = [r for r in rows if r.model == key]
        try:
            out[key] = fit_model(model, mine)
        except FitError as exc:
            raise FitError(f"model {key}: {exc} (has {len(mine)})") from None
    return out


def residual_figure(
    models: dict[str, LanguageModel], rows: Sequence[Timing], fits: dict[str, ModelFit]
) -> Any:
    """Relative residual of every row against its workload, one panel per model."""
    from balance_opt.report import figures

    fig, axes = figures.figure_pair()
    for ax, (key, model) in zip(axes, models.items(), strict=True):
        for i, phase in enumerate(PHASES):
            mine = [r for r in rows if r.model == key and r.phase == phase]
            if not mine:
                continue
            flops = np.array([row_flops(model, r) for r in mine])
            seconds = np.array([r.seconds for r in mine])
            rel = 100.0 * (fits[key].predict(flops) - seconds) / seconds
            ax.scatter(flops, rel, s=10, marker="osD"[i], label=phase)
        ax.axhline(0.0, color="black", linewidth=0.8)
        ax.set_xscale("log")
        ax.set(
            xlabel="workload (FLOPs)", ylabel="fit - measured (% of measured)", title=f"{key}: {model.name}"
        )
        ax.legend(fontsize=7)
    return fig
