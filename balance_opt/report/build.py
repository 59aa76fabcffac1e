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
from balance_opt.status import Status

ABLATIONS = ("balance", "ecra", "ema", "ecrma")
CONVENTIONS = f"""\
How to read the numbers:

- *normalized throughput* is served / K per solve; rows with status `error` (and solves
  killed past their limit) count as serving 0. Means over the instances (seeds) of a group
  carry a 95% Wilson score interval at the effective sample size
  `n* = p (1 - p) / SE^2 x (z / t)^2` (`SE` the standard error of the mean, `z` and `t` the
  normal's and Student's 97.5% quantiles; where the shares do not vary, the group's users
  stand in for `p (1 - p) / SE^2`), after Korn and Graubard (1998): unlike a Student-t
  interval it stays within [0, 1], and away from 0 and 1 it is one.
- an instance's *proved optimum* is `served` of any `optimal` row with the same instance
  sha256 (P1); *P2's optimum* is any row's `p2_optimum` (exhaustive P2 search on the
  same z / lambda grids). Gaps: absolute `opt - served`, relative `(opt - served) / opt`;
  ratio `served / opt`, with the count of solves below 1/2 (Theorem 1's guarantee is
  against P2's optimum; `-` where no optimum was computed). Where no optimum is proved,
  the *gap to the best bound* uses the smallest upper bound any solve proved (a MILP
  stopped by its limit still proves one).
- runtimes: shifted geometric mean `exp(mean(log(t + s))) - s` with `s = {stats.SGM_SHIFT_S * 1000:g} ms`
  over rows that are not `error`; wall-clock seconds of one solve in its own process.
- gaps and ratios to the optimum are over the *with proved opt* solves only.
- *solved* counts `optimal` and `feasible` rows; *infeasible* counts schedules the
  evaluator rejected.
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
            "throughput mean [95% CI]": [
                f"{fmt(m)} [{fmt(lo)}, {fmt(hi)}]"
                for m, lo, hi in zip(
                    s["throughput_mean"], s["throughput_ci_low"], s["throughput_ci_high"], strict=True
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


def _figure(out: Path, name: str, draw: Any, *args: Any) -> str:
    fig, ax = figures.figure()
    draw(*args, ax=ax)
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
    hosts = sorted(set(df["host"].dropna().astype(str))) if "host" in df else []
    versions = sorted(set(df["version"].dropna().astype(str))) if "version" in df else []
    commits = sorted(set(df["commit"].dropna().astype(str))) if "commit" in df else []
    if hosts or versions:
        code = f" (source {', '.join(f'`{c}`' for c in commits)})" if commits else ""
        parts += [
            f"Hosts: {', '.join(hosts) or '-'}; balance-opt version {', '.join(versions) or '-'}{code}.",
            "",
        ]
    parts += [*sections]
    parts += ["## Summary per solver configuration", "", summary_markdown(summary), ""]
    parts += [f"Table: {_write_csv(out, 'summary.csv', summary)}", "", CONVENTIONS]
    parts += bound.bound_section(summary)
    parts += _sweep_sections(df, out)
    parts += _users_sections(df, out)
    if df["config"].nunique() >= 2:
        parts += ["## Performance profile of runtime", ""]
        parts += [_figure(out, "performance-profile", figures.plot_performance_profile, df), ""]
        parts += [
            "Dolan-More profile over the instances every configuration ran: the share solved "
            "(`optimal` or `feasible`) within tau times the fastest configuration's runtime.",
            "",
        ]
    gaps = stats.with_derived(df).dropna(subset=["gap_rel"])
    if len(gaps[gaps["status"] != Status.OPTIMAL]):
        parts += ["## Gaps to the proved optimum", ""]
        parts += [_figure(out, "gap-histogram", figures.plot_gap_histogram, df), ""]
    readme = out / "README.md"
    atomic_write(readme, "\n".join(parts).rstrip() + "\n")
    return readme


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
    parts += [_figure(out, f"sweep-{name}", figures.plot_sweep, df, param), ""]
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
        parts += [_figure(out, f"ablation-{name}", figures.plot_sweep, df, param, present), ""]
    return parts


def _users_sections(df: pd.DataFrame, out: Path) -> list[str]:
    if df["K"].nunique() < 2:
        return []
    parts = ["## Runtime against the number of users", ""]
    parts += [_figure(out, "runtime-vs-users", figures.plot_runtime_vs_users, df), ""]
    d = stats.with_derived(df)
    if d["optimum"].notna().any():
        parts += ["## Normalized throughput against the proved optimum", ""]
        parts += [_figure(out, "throughput-vs-optimum", figures.plot_throughput_vs_optimum, df), ""]
    return parts
