"""The online report's figures and the numbers they plot (matplotlib, Agg; PNG).

Every figure is drawn from the rows of a run folder (:func:`balance_opt.online.experiment.rows`)
and, for the timeline, from one point file's sampled timeline.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd

from balance_opt.files import atomic_write
from balance_opt.report.figures import RC, _style

# the settings that make one workload family; rate and deadline scale are the figures' axes
SETTINGS = ("gen_preset", "gen_process", "gen_cv", "gen_duration_s", "gen_output_cv", "gen_acceptance")
RATE, SCALE = "gen_rate_per_s", "gen_deadline_scale"
GROUP = (*SETTINGS, SCALE)  # one table, one rate panel
BOUND = "hindsight bound"
STATS = ("seeds", "attainment_mean", "attainment_min", "attainment_max")


def describe(settings: Mapping[str, Any], keys: Sequence[str]) -> str:
    """The settings named by ``keys`` in words, e.g. ``fig4, poisson, deadlines x1``."""
    words = {
        "gen_preset": lambda v: str(v),
        "gen_process": lambda v: f"gamma CV {settings.get('gen_cv', 1.0):g}" if v == "gamma" else str(v),
        "gen_duration_s": lambda v: f"{v:g} s of arrivals",
        "gen_output_cv": lambda v: f"output CV {v:g}",
        "gen_acceptance": lambda v: f"{v} acceptance",
        SCALE: lambda v: f"deadlines x{v:g}",
        RATE: lambda v: f"{v:g} users/s",
    }
    return ", ".join(words[k](settings[k]) for k in keys if k in words)


def varying(table: pd.DataFrame, keys: Sequence[str]) -> list[str]:
    """The keys taking several values in ``table`` (gamma's CV counts as the process)."""

    def varies(k: str) -> bool:
        return table[k].nunique() > 1 or (k == "gen_process" and table["gen_cv"].nunique() > 1)

    return [k for k in keys if k != "gen_cv" and varies(k)]


def attainment_table(ok: pd.DataFrame) -> pd.DataFrame:
    """Per settings, deadline scale, rate and policy: attainment over seeds (count, mean, min,
    max), and per settings, scale and rate the bound's share of the users (series ``BOUND``)."""
    keys = [*GROUP, RATE]
    names = dict(zip(["count", "mean", "min", "max"], STATS, strict=True))
    per = ok.groupby([*keys, "config"], sort=True)["attainment"].agg(list(names)).rename(columns=names)
    b = ok.dropna(subset=["bound"]).drop_duplicates("instance")
    share = b.assign(share=b["bound"].astype(float) / b["K"].astype(float))
    bound = share.groupby(keys, sort=True)["share"].agg(list(names)).rename(columns=names)
    per, bound = per.reset_index(), bound.reset_index()
    table = pd.concat([per, bound.assign(config=BOUND)], ignore_index=True).rename(
        columns={"config": "series"}
    )
    return table.sort_values([*keys, "series"], kind="stable").reset_index(drop=True)


def write_csv(table: pd.DataFrame, path: Path) -> Path:
    """The plotted numbers, settings columns without their ``gen_`` prefix."""
    out = table.rename(columns={c: c.removeprefix("gen_") for c in table.columns})
    return atomic_write(path, out.to_csv(index=False, float_format="%.6g", lineterminator="\n"))


def _log_axis(ax: Any, values: pd.Series) -> None:
    """A log axis labelled at the swept values, when they span a factor of 4 or more."""
    xs = sorted(set(values.tolist()))
    if xs[0] > 0 and xs[-1] / xs[0] >= 4:
        ax.set_xscale("log")
        ax.set_xticks(xs, [f"{x:g}" for x in xs])
        ax.minorticks_off()


def _panel(ax: Any, data: pd.DataFrame, x: str, title: str) -> None:
    """Each policy's mean attainment against ``x`` (min-max band over seeds) and the bound dashed."""
    series = sorted(s for s in data["series"].unique() if s != BOUND)
    for i, s in enumerate(series):
        g = data[data["series"] == s].sort_values(x)
        (line,) = ax.plot(g[x], g["attainment_mean"], label=s, **_style(i, len(series)))
        if (g["seeds"] > 1).any():
            ax.fill_between(g[x], g["attainment_min"], g["attainment_max"], color=line.get_color(),
                            alpha=0.1, linewidth=0, zorder=1)  # fmt: skip
    b = data[data["series"] == BOUND].sort_values(x)
    if len(b):
        # on top of every policy: a policy that meets the bound would hide it
        ax.plot(b[x], b["attainment_mean"], "k--", linewidth=1.2, label="hindsight bound / users", zorder=5)
    _log_axis(ax, data[x])
    ax.set_ylim(-0.02, 1.02)
    if title:
        ax.set_title(title, fontsize=8)


def plot_against(table: pd.DataFrame, x: str, xlabel: str, base: Path) -> Path | None:
    """Attainment against ``x``, one panel per value of the other settings where ``x`` takes
    several values; None (and no file) when it takes one value everywhere."""
    others = [c for c in (*GROUP, RATE) if c != x]
    groups = [(dict(zip(others, k, strict=True)), g) for k, g in table.groupby(others, sort=True)]
    groups = [(k, g) for k, g in groups if g[x].nunique() > 1]
    if not groups:
        return None
    titled = varying(pd.DataFrame([k for k, _ in groups]), others)
    ncols = min(3, len(groups))
    nrows = math.ceil(len(groups) / ncols)
    with plt.rc_context(RC):
        fig, axes = plt.subplots(
            nrows,
            ncols,
            figsize=(4.0 * ncols if ncols > 1 else 5.5, 3.2 * nrows if nrows > 1 else 3.8),
            squeeze=False,
            sharey=True,
        )
        for ax, (key, g) in zip(axes.flat, groups, strict=False):
            _panel(ax, g, x, describe(key, titled))
        for ax in axes.flat[len(groups) :]:
            ax.set_visible(False)
        for ax in axes.flat[max(0, len(groups) - ncols) : len(groups)]:
            ax.set_xlabel(xlabel)
        for ax in axes[:, 0]:
            ax.set_ylabel("SLO attainment (served / users)")
        axes[0][ncols - 1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    return save_png(fig, base)


def plot_timeline(timeline: Mapping[str, Sequence[float]], title: str, base: Path) -> Path:
    """Queue length, memory share and the AD / SD compute shares over one run, stacked."""
    t = timeline["time_s"]
    with plt.rc_context(RC):
        fig, (queue, memory, compute) = plt.subplots(3, 1, figsize=(7.0, 6.0), sharex=True)
        queue.plot(t, timeline["queue"], color="C0", linewidth=1.0, drawstyle="steps-post")
        queue.set_ylabel("waiting users")
        queue.set_title(title, fontsize=8)
        memory.plot(t, timeline["memory_share"], color="C2", linewidth=1.0, drawstyle="steps-post")
        memory.set_ylabel("memory in use / Q")
        memory.set_ylim(0.0, 1.05)
        compute.stackplot(t, timeline["ad_share"], timeline["sd_share"], labels=["AD", "SD"],
                          colors=["C0", "C1"], alpha=0.7, linewidth=0, step="post")  # fmt: skip
        compute.set_ylabel("compute share")
        compute.set_ylim(0.0, 1.05)
        compute.set_xlabel("time (s)")
        compute.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    return save_png(fig, base)


def save_png(fig: Any, base: Path) -> Path:
    """Write ``base.png`` atomically, with no software tag (same figure, same bytes); close it."""
    with plt.rc_context(RC):
        fig.tight_layout()
        buf = io.BytesIO()
        # "tight" takes in the legend outside the axes
        fig.savefig(buf, format="png", dpi=110, metadata={"Software": None}, bbox_inches="tight",
                    pad_inches=0.05)  # fmt: skip
    plt.close(fig)
    return atomic_write(base.with_suffix(".png"), buf.getvalue())
