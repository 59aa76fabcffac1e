"""What a report says about its runs and its columns, so that a reader needs no source.

:func:`what_was_run` states the instances (presets, K, seeds), the configurations (solver,
time limit, options), the machines and the code version, each read from the table;
:data:`SUMMARY_COLUMNS` defines every column of the summary table.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd


def _values(df: pd.DataFrame, column: str) -> list[str]:
    """The distinct values of a column as text, numbers in numeric order."""
    if column not in df:
        return []
    values = df[column].dropna().unique().tolist()
    numeric = pd.to_numeric(pd.Series(values), errors="coerce")
    if len(values) and numeric.notna().all():
        return [f"{v:g}" for v in sorted(numeric)]
    return sorted(map(str, values))


def _ranges(numbers: list[str]) -> str:
    """``10, 11, 12, 20`` as ``10-12, 20`` (integers only; others as given)."""
    try:
        ints = [int(n) for n in numbers]
    except ValueError:
        return ", ".join(numbers)
    parts: list[str] = []
    start = prev = ints[0] if ints else 0
    for n in [*ints[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ", ".join(parts) if ints else "-"


def _options(text: Any) -> dict[str, Any]:
    try:
        doc = json.loads(text) if isinstance(text, str) else {}
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def _config_line(config: str, g: pd.DataFrame) -> str:
    options = _options(g["options"].dropna().iloc[0]) if "options" in g and g["options"].notna().any() else {}
    limit = options.pop("time_limit_s", None)
    options.pop("seed", None)
    shown = ", ".join(f"{k} = {json.dumps(v)}" for k, v in sorted(options.items()))
    solver = ", ".join(sorted(set(g["solver"].dropna().astype(str)))) if "solver" in g else config
    limit_text = "no time limit" if limit is None else f"time limit {limit:g} s"
    return f"- `{config}`: solver `{solver}`, {limit_text}" + (f"; options {shown}" if shown else "")


def what_was_run(df: pd.DataFrame) -> list[str]:
    """Markdown lines: the instances, the configurations, the machines and the code."""
    lines = ["## What was run", ""]
    presets = _values(df, "gen_preset")
    seeds = _values(df, "gen_seed")
    users = _values(df, "K")
    lines.append(
        f"- instances: {df['instance_sha256'].nunique()} (presets {', '.join(presets) or 'not recorded'}; "
        f"K = {_ranges(users)}; seeds {_ranges(seeds) if seeds else 'not recorded'})"
    )
    lines += [_config_line(str(c), g) for c, g in df.groupby("config", sort=True)]
    hosts, versions, commits = _values(df, "host"), _values(df, "version"), _values(df, "commit")
    lines.append(
        f"- machines: {', '.join(hosts) or 'not recorded'}; one solve per process, wall-clock seconds"
    )
    code = f" (source {', '.join(f'`{c}`' for c in commits)})" if commits else ""
    lines += [f"- balance-opt version {', '.join(versions) or 'not recorded'}{code}", ""]
    return lines


SUMMARY_COLUMNS = """\
Columns of the summary (one row per solver configuration; *n* is the number of rows):

- *rows*: solves in the tables; *solved*: rows with status `optimal` or `feasible`;
  *optimal*: rows whose solver proved its schedule optimal (P1); *time limit*: rows stopped
  by the time limit (a killed solve serves nobody); *error*: refused, crashed, or a
  schedule or claim the evaluator rejected; *infeasible*: schedules the evaluator rejected.
- *throughput mean [95% CI] (n)*: mean of served / K over the n rows, with its interval;
  `no interval` where the n rows hold fewer than 2 distinct values (one seed, or every
  row alike): no spread was observed, so none is claimed.
- *with proved opt*: rows whose instance has a proved optimum (from an `optimal` row of
  any configuration, or from the benchmark library's reference when the instance is the
  library's, matched by its sha256); the gap and ratio columns are over these rows only.
- *gap abs mean / max*: optimum - served, in users; *gap rel mean*: (optimum - served) /
  optimum; *ratio min*: the smallest served / optimum, against P1's optimum and against
  P2's (on the same grids); *< 1/2*: rows below Theorem 1's 1/2.
- *gap to best bound, rel mean*: (smallest proved bound - served) / that bound, where
  some row proved a bound.
- *runtime SGM (s)*: shifted geometric mean of the runtimes of rows that are not `error`.
"""
