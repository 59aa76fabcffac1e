"""Plots of a results table (matplotlib, Agg). Each ``plot_*`` draws on ``ax`` (a new one if None).

:func:`save` writes PNG and SVG; the SVG is byte-for-byte deterministic (fixed
``svg.hashsalt``, no date in the metadata).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from balance_opt.io import atomic_write
from balance_opt.report import stats
from balance_opt.status import Status

RC: Any = {
    "svg.hashsalt": "balance-opt",
    "svg.fonttype": "path",
    "figure.figsize": (6.0, 4.0),
    "axes.grid": True,
    "grid.alpha": 0.3,
    "font.size": 9,
}
MARKERS = "osD^v<>ph*x+"
LABELS = {
    "gen_users": "number of users K",
    "gen_deadline_max_s": "maximum deadline Tmax (s)",
    "gen_input_max": "maximum input length LImax (tokens)",
    "gen_output_max": "maximum output length LOmax (tokens)",
}


def label(param: str) -> str:
    return LABELS.get(param, param.removeprefix("gen_"))


def _axes(ax: Any) -> Any:
    if ax is None:
        _, ax = figure()
    return ax


def _style(i: int) -> dict[str, Any]:
    return {"marker": MARKERS[i % len(MARKERS)], "markersize": 4, "linewidth": 1.2}


def plot_sweep(df: pd.DataFrame, param: str, configs: Sequence[str] | None = None, ax: Any = None) -> Any:
    """Normalized throughput against a swept generator parameter (Figs. 4, 5, 7), 95% t-intervals."""
    ax = _axes(ax)
    table = stats.sweep_table(df, param)
    names = [c for c in (configs or sorted(table["config"].unique())) if c in set(table["config"])]
    for i, config in enumerate(names):
        g = table[table["config"] == config]
        (line,) = ax.plot(g[param], g["throughput_mean"], label=config, **_style(i))
        if g["ci_low"].notna().any():
            ax.fill_between(g[param], g["ci_low"], g["ci_high"], color=line.get_color(), alpha=0.12)
    ax.set_xlabel(label(param))
    ax.set_ylabel("normalized throughput (served / K)")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=7)
    return ax


def plot_runtime_vs_users(df: pd.DataFrame, ax: Any = None) -> Any:
    """Median runtime against K, log scale (Fig. 6a)."""
    ax = _axes(ax)
    ok = df[df["status"] != Status.ERROR]
    for i, (config, g) in enumerate(ok.groupby("config", sort=True)):
        med = g.groupby("K")["runtime_s"].median()
        ax.plot(med.index, med.to_numpy(), label=config, **_style(i))
    ax.set_yscale("log")
    ax.set_xlabel("number of users K")
    ax.set_ylabel("runtime (s, median over seeds)")
    ax.legend(fontsize=7)
    return ax


def plot_throughput_vs_optimum(df: pd.DataFrame, ax: Any = None) -> Any:
    """Mean normalized throughput against K beside the proved optimum's (Fig. 6b)."""
    ax = _axes(ax)
    d = stats.with_derived(df).dropna(subset=["optimum"])
    opt = d.drop_duplicates("instance_sha256").assign(t=lambda x: x["optimum"] / x["K"])
    mean_opt = opt.groupby("K")["t"].mean()
    ax.plot(mean_opt.index, mean_opt.to_numpy(), "k--", linewidth=1.5, label="proved optimum (P1)")
    for i, (config, g) in enumerate(d.groupby("config", sort=True)):
        m = g.groupby("K")["throughput"].mean()
        ax.plot(m.index, m.to_numpy(), label=config, **_style(i))
    ax.set_xlabel("number of users K")
    ax.set_ylabel("normalized throughput (served / K)")
    ax.legend(fontsize=7)
    return ax


def plot_performance_profile(df: pd.DataFrame, ax: Any = None) -> Any:
    """Dolan-More profile: share of instances solved within tau x the fastest runtime."""
    ax = _axes(ax)
    ratios, configs = stats.performance_profile(df)
    finite = ratios.to_numpy()[np.isfinite(ratios.to_numpy())]
    top = max(2.0, float(finite.max()) * 1.5) if finite.size else 2.0
    for config in configs:
        r = np.sort(ratios[config].to_numpy())
        r = r[np.isfinite(r)]
        xs = np.concatenate([[1.0], r, [top]])
        ys = np.concatenate([[0.0], np.arange(1, len(r) + 1), [len(r)]]) / max(len(ratios), 1)
        ax.step(xs, ys, where="post", label=config, linewidth=1.2)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("tau (runtime / fastest runtime on the instance)")
    ax.set_ylabel("share of instances solved within tau")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=7)
    return ax


def plot_gap_histogram(df: pd.DataFrame, ax: Any = None) -> Any:
    """Relative gap to the proved optimum, one histogram per non-exact configuration."""
    ax = _axes(ax)
    d = stats.with_derived(df).dropna(subset=["gap_rel"])
    d = d[d["status"] != Status.OPTIMAL]
    bins = np.linspace(0.0, max(0.05, float(d["gap_rel"].max()) if len(d) else 0.05), 21)
    groups = [(c, g["gap_rel"].to_numpy()) for c, g in d.groupby("config", sort=True)]
    if groups:
        ax.hist([g for _, g in groups], bins=bins, label=[c for c, _ in groups])
        ax.legend(fontsize=7)
    ax.set_xlabel("relative gap to the proved optimum ((opt - served) / opt)")
    ax.set_ylabel("instances")
    return ax


def figure() -> tuple[Any, Any]:
    """A new figure and axes with the report's style."""
    with plt.rc_context(RC):
        return plt.subplots()


def figure_pair() -> tuple[Any, tuple[Any, Any]]:
    """A figure with two panels side by side."""
    with plt.rc_context(RC):
        fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.6))
    return fig, (axes[0], axes[1])


def save(fig: Any, base: Path) -> list[Path]:
    """Write ``base.png`` and ``base.svg`` (deterministic, atomically) and close the figure."""
    out = []
    with plt.rc_context(RC):
        fig.tight_layout()
        for ext, meta in (("png", {"Software": None}), ("svg", {"Date": None, "Creator": None})):
            buf = io.BytesIO()
            fig.savefig(buf, format=ext, dpi=120, metadata=meta)
            out.append(atomic_write(base.with_suffix(f".{ext}"), buf.getvalue()))
    plt.close(fig)
    return out
