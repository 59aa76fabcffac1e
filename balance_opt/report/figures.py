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
import matplotlib.ticker

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


LINESTYLES = ("-", "--", "-.", ":")


def _style(i: int, n: int) -> dict[str, Any]:
    """Series ``i`` of ``n``: earlier series wider and bigger, later ones drawn on top of them.

    Solvers often coincide (a proving solver and exhaustive search, BALANCE and an
    ablation); with decreasing widths and marker sizes, distinct markers and dash patterns,
    a series on top of another leaves the one below visible around it.
    """
    wide = (n - 1 - i) / max(n - 1, 1)  # 1 for the first series, 0 for the last
    return {
        "marker": MARKERS[i % len(MARKERS)],
        "markersize": 3.5 + 5.0 * wide,
        "linewidth": 1.0 + 2.4 * wide,
        "linestyle": LINESTYLES[i % len(LINESTYLES)],
        "markeredgecolor": "white",
        "markeredgewidth": 0.5,
        "zorder": 2.0 + i / max(n, 1),
    }


def legend(ax: Any) -> None:
    """The legend outside the axes, right of them, so that it covers no point."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=False)


def plot_sweep(df: pd.DataFrame, param: str, configs: Sequence[str] | None = None, ax: Any = None) -> Any:
    """Normalized throughput against a swept generator parameter (Figs. 4, 5, 7), 95% t-intervals."""
    ax = _axes(ax)
    table = stats.sweep_table(df, param)
    names = [c for c in (configs or sorted(table["config"].unique())) if c in set(table["config"])]
    for i, config in enumerate(names):
        g = table[table["config"] == config]
        (line,) = ax.plot(g[param], g["throughput_mean"], label=config, **_style(i, len(names)))
        if g["ci_low"].notna().any():
            ax.fill_between(
                g[param], g["ci_low"], g["ci_high"], color=line.get_color(), alpha=0.08, linewidth=0, zorder=1
            )
    ax.set_xlabel(label(param))
    ax.set_ylabel("normalized throughput (served / K)")
    # the data's range, not all of [0, 1]: close series are told apart
    low, high = ax.get_ylim()
    ax.set_ylim(max(low, -0.02), min(high, 1.02))
    legend(ax)
    return ax


def plot_runtime_vs_users(df: pd.DataFrame, ax: Any = None) -> Any:
    """Median runtime against K, log scale (Fig. 6a)."""
    ax = _axes(ax)
    ok = df[df["status"] != Status.ERROR]
    groups = list(ok.groupby("config", sort=True))
    for i, (config, g) in enumerate(groups):
        med = g.groupby("K")["runtime_s"].median()
        ax.plot(med.index, med.to_numpy(), label=config, **_style(i, len(groups)))
    ax.set_yscale("log")
    ax.set_xlabel("number of users K")
    ax.set_ylabel("runtime (s, median over seeds)")
    legend(ax)
    return ax


def plot_throughput_vs_optimum(df: pd.DataFrame, ax: Any = None) -> Any:
    """Mean normalized throughput against K beside the proved optimum's (Fig. 6b)."""
    ax = _axes(ax)
    d = stats.with_derived(df).dropna(subset=["optimum"])
    opt = d.drop_duplicates("instance_sha256").assign(t=lambda x: x["optimum"] / x["K"])
    mean_opt = opt.groupby("K")["t"].mean()
    # on top of every solver's line: the solvers that reach the optimum would hide it
    ax.plot(mean_opt.index, mean_opt.to_numpy(), "k--", linewidth=1.2, label="proved optimum (P1)", zorder=4)
    groups = list(d.groupby("config", sort=True))
    for i, (config, g) in enumerate(groups):
        m = g.groupby("K")["throughput"].mean()
        ax.plot(m.index, m.to_numpy(), label=config, **_style(i, len(groups)))
    ax.set_xlabel("number of users K")
    ax.set_ylabel("normalized throughput (served / K)")
    legend(ax)
    return ax


def plot_performance_profile(df: pd.DataFrame, ax: Any = None) -> Any:
    """Dolan-More profile: share of instances solved within tau x the fastest runtime."""
    ax = _axes(ax)
    ratios, configs = stats.performance_profile(df)
    finite = ratios.to_numpy()[np.isfinite(ratios.to_numpy())]
    top = max(2.0, float(finite.max()) * 1.5) if finite.size else 2.0
    for i, config in enumerate(configs):
        r = np.sort(ratios[config].to_numpy())
        r = r[np.isfinite(r)]
        xs = np.concatenate([[1.0], r, [top]])
        ys = np.concatenate([[0.0], np.arange(1, len(r) + 1), [len(r)]]) / max(len(ratios), 1)
        style = _style(i, len(configs)) | {"marker": None}  # a step per instance, no markers
        ax.step(xs, ys, where="post", label=config, **style)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("tau (runtime / fastest runtime on the instance)")
    ax.set_ylabel("share of instances solved within tau")
    ax.set_ylim(-0.02, 1.02)
    legend(ax)
    return ax


def plot_gap_histogram(df: pd.DataFrame, ax: Any = None) -> Any:
    """Absolute gap to the proved optimum in users, bars on the whole numbers, one series
    per configuration that does not prove optimality."""
    ax = _axes(ax)
    d = stats.with_derived(df).dropna(subset=["gap_abs"])
    d = d[d["status"] != Status.OPTIMAL]
    top = int(d["gap_abs"].max()) if len(d) else 1
    width = max(1, -(-top // 50))  # whole users per bar, at most about 50 bars
    bins = np.arange(-0.5, max(top, 1) + width + 0.5, width)  # edges halfway between whole numbers
    groups = [(c, g["gap_abs"].to_numpy()) for c, g in d.groupby("config", sort=True)]
    if groups:
        ax.hist([g for _, g in groups], bins=bins, label=[c for c, _ in groups])
        legend(ax)
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.set_xlabel("gap to the proved optimum (users: opt - served)")
    ax.set_ylabel("solves")
    return ax


def plot_gap_profile(df: pd.DataFrame, ax: Any = None) -> Any:
    """Share of instances where each configuration is at most g users short of the best answer."""
    ax = _axes(ax)
    gaps, configs = stats.gap_profile(df)
    finite = gaps.to_numpy()[np.isfinite(gaps.to_numpy())]
    top = max(1.0, float(finite.max()) + 1.0) if finite.size else 1.0
    for i, config in enumerate(configs):
        g = np.sort(gaps[config].to_numpy())
        g = g[np.isfinite(g)]
        xs = np.concatenate([[0.0], g, [top]])
        ys = np.concatenate([[0.0], np.arange(1, len(g) + 1), [len(g)]]) / max(len(gaps), 1)
        style = _style(i, len(configs)) | {"marker": None}
        ax.step(xs, ys, where="post", label=config, **style)
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.set_xlabel("g (users short of the best known answer)")
    ax.set_ylabel("share of instances within g")
    ax.set_ylim(-0.02, 1.02)
    legend(ax)
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
            # "tight" takes in the legend outside the axes
            fig.savefig(buf, format=ext, dpi=120, metadata=meta, bbox_inches="tight", pad_inches=0.05)
            out.append(atomic_write(base.with_suffix(f".{ext}"), buf.getvalue()))
    plt.close(fig)
    return out
