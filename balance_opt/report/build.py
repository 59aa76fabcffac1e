"""Write a report folder from results tables: README.md, CSV tables, PNG + SVG figures.

The README renders on a code host: markdown tables and relative image links. The
report is a pure function of the tables (no dates, no paths outside the folder), so
rebuilding it from the same runs gives the same files.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from balance_opt.io import atomic_write
from balance_opt.report import bound, figures, stats
from balance_opt.report.described import SUMMARY_COLUMNS, what_was_run
from balance_opt.status import Status

ABLATIONS = ("balance", "ecra", "ema", "ecrma")
CONVENTIONS = f"""\
How the numbers are computed:

- *normalized throughput* is served / K per solve; rows with status `error` (and solves
  killed past their limit) count as serving 0. A mean over the rows (seeds) of a group
  carries a 95% Wilson score interval at the effective sample size
  `n* = p (1 - p) / SE^2 x (z / t)^2` (`SE` the standard error of the mean, `z` and `t` the
  normal's and Student's 97.5% quantiles), after Korn and Graubard (1998): unlike a
  Student-t interval it stays within [0, 1], and away from 0 and 1 it is one.
- an instance's *proved optimum* is `served` of any `optimal` row with the same instance
  sha256 (P1), else the library's (above, when the instances are the library's); *P2's
  optimum* is any row's `p2_optimum` (exhaustive P2 search on the same z / lambda grids).
  Theorem 1's 1/2 is against P2's optimum; `-` where no optimum was computed. Where no
  optimum is proved, the *gap to the best bound* uses the smallest upper bound any solve
  proved (a MILP stopped by its limit still proves one).
- runtimes: shifted geometric mean `exp(mean(log(t + s))) - s` with `s = {stats.SGM_SHIFT_S * 1000:g} ms`
  over rows that are not `error`; wall-clock seconds of one solve in its own process.
"""


def fmt(value: Any, digits: int = 3) -> str:
    """A table cell: integers as is, floats rounded, missing as '-'."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        if value != 0 and (abs(value) < 10 ** (-digits) or abs(value) >= 1e6):
            return f"{value:.{digits}g}"
        return f"{value:.{digits}f}"
    return str(value)


def count(value: Any) -> str:
    """A count that may be undefined (no optimum to count against): '-' then, never 0."""
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else str(int(value))


def mean_and_interval(mean: float, low: float, high: float, n: int) -> str:
    """``0.900 [0.632, 0.979] (n = 6)``; ``no interval`` where no spread was observed."""
    if isinstance(low, float) and math.isnan(low):
        return f"{fmt(mean)}, no interval (n = {n})"
    return f"{fmt(mean)} [{fmt(low)}, {fmt(high)}] (n = {n})"


def markdown_table(df: pd.DataFrame, digits: int = 3) -> str:
    """A GitHub-flavoured markdown table."""
    head = "| " + " | ".join(map(str, df.columns)) + " |"
    rule = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(fmt(v, digits) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def summary_markdown(summary: pd.DataFrame) -> str:
    """The per-configuration table in a readable width."""
    s = summary
    view = pd.DataFrame(
        {
            "config": s["config"],
            "rows": s["rows"],
            "solved": s["solved"],
            "optimal": s["optimal"],
            "time limit": s["time_limit"],
            "error": s["error"],
            "infeasible": s["infeasible"],
            "throughput mean [95% CI] (n)": [
                mean_and_interval(m, lo, hi, n)
                for m, lo, hi, n in zip(
                    s["throughput_mean"],
                    s["throughput_ci_low"],
                    s["throughput_ci_high"],
                    s["rows"],
                    strict=True,
                )
            ],
            "with proved opt": s["with_optimum"],
            "gap abs mean / max": [
                f"{fmt(a)} / {fmt(b, 0)}" for a, b in zip(s["gap_abs_mean"], s["gap_abs_max"], strict=True)
            ],
            "gap rel mean": s["gap_rel_mean"],
            "ratio min (P1)": s["ratio_min"],
            "< 1/2 (P1)": [count(x) for x in s["below_half"]],
            "ratio min (P2)": s["ratio_p2_min"],
            "< 1/2 (P2)": [count(x) for x in s["below_half_p2"]],
            "gap to best bound, rel mean": s["bound_gap_rel_mean"],
            "runtime SGM (s)": s["runtime_sgm_s"],
        }
    )
    return markdown_table(view)


def _figure(out: Path, name: str, draw: Any, *args: Any, title: str) -> str:
    fig, ax = figures.figure()
    draw(*args, ax=ax)
    ax.set_title(title, fontsize=9)
    figures.save(fig, out / "figures" / name)
    return f"![{name}](figures/{name}.png) ([SVG](figures/{name}.svg))"


def _write_csv(out: Path, name: str, df: pd.DataFrame) -> str:
    atomic_write(out / name, df.to_csv(index=False, lineterminator="\n", float_format="%.6g"))
    return f"[{name}]({name})"


def build_report(
    df: pd.DataFrame,
    out: str | Path,
    *,
    title: str = "Benchmark report",
    command: str | None = None,
    sources: Sequence[str] = (),
    sections: Sequence[str] = (),
) -> Path:
    """Write the report folder ``out``; returns the README path. ``sections``: extra markdown."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    summary = stats.summary(df)
    parts = [f"# {title}", ""]
    if command:
        parts += ["Built with:", "", "```", command, "```", ""]
    n_inst = df["instance_sha256"].nunique()
    parts += [
        f"{len(df)} solves of {n_inst} instances by {df['config'].nunique()} solver configurations"
        + (f", from {', '.join(f'`{s}`' for s in sources)}." if sources else "."),
        "",
    ]
    parts += what_was_run(df)
    parts += [*sections]
    parts += ["## Summary per solver configuration", "", summary_markdown(summary), ""]
    parts += [f"Table: {_write_csv(out, 'summary.csv', summary)}", "", SUMMARY_COLUMNS, CONVENTIONS]
    parts += bound.bound_section(summary)
    parts += _sweep_sections(df, out)
    parts += _users_sections(df, out)
    parts += _profile_sections(df, out)
    gaps = stats.with_derived(df).dropna(subset=["gap_abs"])
    if len(gaps[gaps["status"] != Status.OPTIMAL]):
        parts += ["## Gaps to the proved optimum", ""]
        title = "Gap to the proved optimum (users), solves with a proved optimum"
        parts += [_figure(out, "gap-histogram", figures.plot_gap_histogram, df, title=title), ""]
        parts += ["One bar per configuration and whole number of users short of the optimum.", ""]
    readme = out / "README.md"
    atomic_write(readme, "\n".join(parts).rstrip() + "\n")
    return readme


def _profile_sections(df: pd.DataFrame, out: Path) -> list[str]:
    """Two performance profiles: on runtime, and on the answer's quality (a fast poor answer
    looks best on runtime alone)."""
    if df["config"].nunique() < 2:
        return []
    title = "Performance profile on runtime"
    parts = ["## Performance profiles", ""]
    parts += [_figure(out, "performance-profile", figures.plot_performance_profile, df, title=title), ""]
    parts += [
        "On runtime: Dolan-More profile over the instances every configuration ran, the share solved "
        "(`optimal` or `feasible`) within tau times the fastest configuration's runtime. It ranks "
        "speed alone: read it beside the next one.",
        "",
    ]
    title = "Performance profile on the gap to the best answer"
    parts += [_figure(out, "gap-profile", figures.plot_gap_profile, df, title=title), ""]
    parts += [
        "On quality: the share of those instances where a configuration's feasible schedule is at "
        "most g users short of the best known answer (the proved optimum where there is one, else "
        "the most any configuration served); an unsolved row is never within g.",
        "",
    ]
    return parts


def _sweep_sections(df: pd.DataFrame, out: Path) -> list[str]:
    """One section per swept generator parameter, within each preset (presets differ in many knobs)."""
    presets = sorted(df["gen_preset"].dropna().astype(str).unique()) if "gen_preset" in df else []
    groups = [(p, df[df["gen_preset"] == p]) for p in presets] if len(presets) > 1 else [(None, df)]
    parts: list[str] = []
    for preset, g in groups:
        for param in stats.swept_parameters(g):
            name = param.removeprefix("gen_").replace("_", "-")
            if preset is not None:
                name = f"{preset}-{name}"
            where = "" if preset is None else f" (preset `{preset}`)"
            parts += _one_sweep(g, param, name, where, out)
    return parts


def _one_sweep(df: pd.DataFrame, param: str, name: str, where: str, out: Path) -> list[str]:
    table = stats.sweep_table(df, param)
    parts = [f"## Normalized throughput against {figures.label(param)}{where}", ""]
    title = f"Normalized throughput against {figures.label(param)}{where.replace('`', '')}"
    parts += [_figure(out, f"sweep-{name}", figures.plot_sweep, df, param, title=title), ""]
    wide = table.pivot_table(index=param, columns="config", values="throughput_mean").reset_index()
    parts += [
        markdown_table(wide),
        "",
        f"Table with intervals: {_write_csv(out, f'sweep-{name}.csv', table)}",
        "",
    ]
    present = [c for c in ABLATIONS if c in set(table["config"])]
    if len(present) >= 2 and set(present) != set(table["config"]):
        parts += [f"### Ablations against {figures.label(param)}{where}", ""]
        title = f"Ablations against {figures.label(param)}{where.replace('`', '')}"
        parts += [_figure(out, f"ablation-{name}", figures.plot_sweep, df, param, present, title=title), ""]
    return parts


def _users_sections(df: pd.DataFrame, out: Path) -> list[str]:
    if df["K"].nunique() < 2:
        return []
    parts = ["## Runtime against the number of users", ""]
    title = "Median runtime against K"
    parts += [_figure(out, "runtime-vs-users", figures.plot_runtime_vs_users, df, title=title), ""]
    d = stats.with_derived(df)
    if d["optimum"].notna().any():
        parts += ["## Normalized throughput against the proved optimum", ""]
        title = "Mean normalized throughput beside the proved optimum"
        parts += [
            _figure(out, "throughput-vs-optimum", figures.plot_throughput_vs_optimum, df, title=title),
            "",
        ]
    return parts
