"""The report of an online run folder: SLO attainment against load and deadlines beside the
hindsight bound, one run's timeline, and a table per workload family, from the folder's
``points/`` and ``bounds/`` files alone.

The README holds no timestamp, so the same files give the same bytes; a ``## Findings``
section already in ``RUN_DIR/report/README.md`` is carried over into the rebuilt one.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from balance_opt.files import atomic_write
from balance_opt.online import report_figures as rf

FINDINGS = "## Findings"
RATE_FIGURE, SCALE_FIGURE, TIMELINE_FIGURE = "attainment-vs-rate", "attainment-vs-deadline", "timeline"
# (column, heading, format) of the per-family tables; means over seeds
COLUMNS = (
    ("config", "policy", "s"),
    (rf.RATE, "rate (users/s)", "g"),
    ("seeds", "seeds", "d"),
    ("attainment", "attainment", ".3f"),
    ("share_of_bound", "share of bound", ".3f"),
    ("goodput_per_s", "goodput (users/s)", ".3f"),
    ("dropped_deadline", "dropped: deadline", ".1f"),
    ("dropped_memory", "dropped: memory", ".1f"),
    ("dropped_never_admitted", "dropped: never admitted", ".1f"),
    ("latency_p50_s", "P50 (s)", ".2f"),
    ("latency_p90_s", "P90 (s)", ".2f"),
    ("latency_p99_s", "P99 (s)", ".2f"),
    ("compute_utilisation", "compute util.", ".3f"),
    ("memory_utilisation", "memory util.", ".3f"),
    ("runtime_s", "runtime (s)", ".2f"),
)


def build_online_report(run_dir: Path, command: str) -> Path:
    """Write ``run_dir/report/README.md``, its figures and ``attainment.csv``; return the README."""
    from balance_opt.online.experiment import rows

    out = run_dir / "report"
    readme = out / "README.md"
    findings = old_findings(readme)
    df = pd.DataFrame(rows(run_dir))
    ok = df[df["status"] != "error"].copy() if len(df) else df
    parts = [*introduction(ok, df, command), *findings]
    if len(ok):
        parts += [*figures(ok, run_dir, out), *how_to_read(run_dir), *tables(ok)]
    else:
        _remove_figures(out, ())
    parts += errors(df)
    atomic_write(readme, "\n".join(parts).rstrip("\n") + "\n")
    return readme


def old_findings(readme: Path) -> list[str]:
    """The ``## Findings`` section of an earlier README (to the next ``## `` heading), or none."""
    try:
        lines = readme.read_text().splitlines()
    except OSError:
        return []
    if FINDINGS not in lines:
        return []
    start = lines.index(FINDINGS)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return [*lines[start:end], ""] if lines[end - 1].strip() else lines[start:end]


def introduction(ok: pd.DataFrame, df: pd.DataFrame, command: str) -> list[str]:
    """Title, command and what the run holds."""
    lines = ["# Online serving: SLO attainment against load, beside the hindsight bound", "",
             f"Built by `{command}`", ""]  # fmt: skip
    if not len(ok):
        return [*lines, f"The run folder holds no finished point ({len(df)} error row(s)).", ""]
    families = ok.drop_duplicates(list(rf.SETTINGS))
    kinds = " / ".join(rf.describe(dict(r), rf.SETTINGS) for _, r in families[list(rf.SETTINGS)].iterrows())
    swept = (f"rates {_listed(ok[rf.RATE])} users/s; deadline scales {_listed(ok[rf.SCALE])}; "
             f"seeds {_listed(ok['gen_seed'])}")  # fmt: skip
    seconds = ok["runtime_s"].sum()
    spent = f"{seconds / 60.0:.1f} min" if seconds >= 120 else f"{seconds:.0f} s"
    lines += [
        f"{len(ok)} simulations: {ok['instance'].nunique()} workloads ({kinds}; {swept}) under "
        f"{ok['config'].nunique()} policies ({', '.join(sorted(ok['config'].unique()))}); the "
        f"simulations' own run times sum to {spent}. The model, the policies and every metric: "
        "docs/online.md. Everything below comes from the run folder's `points/` and `bounds/` files "
        "(`results.csv` holds the same rows); the command recomputes whichever of them are missing and "
        "repeats no finished point.",
        "",
    ]
    return lines


def _listed(values: pd.Series) -> str:
    return ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in sorted(set(values)))


def figures(ok: pd.DataFrame, run_dir: Path, out: Path) -> list[str]:
    """Write the figures and ``attainment.csv``; the README lines that show them or say why not."""
    table = rf.attainment_table(ok)
    rf.write_csv(table, out / "attainment.csv")
    lines, made = ["## Attainment", ""], []
    has_bound = (table["series"] == rf.BOUND).any()
    bound = "the dashed black line is the hindsight bound divided by the users" if has_bound else (
        "this run has no hindsight bounds (`--no-bound`)")  # fmt: skip
    for name, x, xlabel, what in (
        (RATE_FIGURE, rf.RATE, "arrival rate (users/s)", "arrival rate"),
        (SCALE_FIGURE, rf.SCALE, "deadline scale (x the preset's deadlines)", "deadline scale"),
    ):
        if rf.plot_against(table, x, xlabel, out / name) is None:
            lines += [f"One {what} only: no figure against {what}.", ""]
            continue
        made.append(name)
        lines += [f"![attainment against {what}]({name}.png)", ""]
    if made:
        lines += [f"Mean over seeds per policy, the band from the lowest to the highest seed; {bound}. "
                  "The numbers: [attainment.csv](attainment.csv).", ""]  # fmt: skip
    lines += timeline(ok, run_dir, out)
    if lines[-2].startswith("!["):
        made.append(TIMELINE_FIGURE)
    _remove_figures(out, made)
    return lines


def _remove_figures(out: Path, made: Any) -> None:
    """Delete the figures an earlier build drew that this one does not (stale data)."""
    for name in {RATE_FIGURE, SCALE_FIGURE, TIMELINE_FIGURE} - set(made):
        (out / f"{name}.png").unlink(missing_ok=True)


def timeline_point(ok: pd.DataFrame) -> pd.Series:
    """The run whose timeline is shown: in the first family (deadline scale 1 first), the first
    seed's highest rate, under ``balance`` if it ran, else the first policy."""
    fam = ok.assign(_off=(ok[rf.SCALE] - 1.0).abs()).sort_values(["_off", *rf.GROUP], kind="stable")
    first = fam.iloc[0]
    fam = fam[(fam[list(rf.GROUP)] == first[list(rf.GROUP)]).all(axis=1)]
    fam = fam[fam["gen_seed"] == fam["gen_seed"].min()]
    fam = fam[fam[rf.RATE] == fam[rf.RATE].max()]
    policy = fam[fam["solver"] == "balance"] if (fam["solver"] == "balance").any() else fam
    return policy.sort_values("config").iloc[0]


def timeline(ok: pd.DataFrame, run_dir: Path, out: Path) -> list[str]:
    """The timeline figure of one run and the line that shows it."""
    row = timeline_point(ok)
    try:
        doc = json.loads((run_dir / row["solution_file"]).read_bytes())
        samples = doc["timeline"]
    except (OSError, ValueError, KeyError):
        return [f"No timeline: `{row['solution_file']}` cannot be read.", ""]
    title = f"{row['instance']} under {row['config']}"
    rf.plot_timeline(samples, title, out / TIMELINE_FIGURE)
    return [
        "## One run over time",
        "",
        f"`{row['instance']}` under `{row['config']}` (served {row['served']} of {row['K']}): the users "
        "waiting (arrived, neither started nor dropped), the memory in use (weights and the running "
        "batches' KV) over the server's `Q`, and the compute shares of the running AD and SD batches.",
        "",
        f"![timeline of one run]({TIMELINE_FIGURE}.png)",
        "",
    ]


def how_to_read(run_dir: Path) -> list[str]:
    """Plain words on the columns and on the bound, with how the run's bounds were obtained."""
    files = sorted((run_dir / "bounds").glob("*.json"))
    docs = [d for p in files if (d := _read(p)) is not None and "bound" in d]
    if docs:
        methods = pd.Series([d["method"] for d in docs]).value_counts().sort_index()
        how = ", ".join(f"{m} {n}" for m, n in methods.items())
        proved = sum(bool(d["proved"]) for d in docs)
        state = (f"Of this run's {len(docs)} bounds, {proved} are proved optima of that packing; by "
                 f"method: {how} (`alone`: the count of users who could each be served alone, where "
                 "compute and memory never cut below it; `milp`: the exact packing; `blocks`: a "
                 "partition bound on it, for many users).")  # fmt: skip
    else:
        state = "This run has no hindsight bounds (`--no-bound`): `share of bound` is empty."
    return [
        "## How to read this",
        "",
        "Each row is a policy at one arrival rate, averaged over the seeds (each seed is another draw of "
        "arrivals, lengths and draft acceptance, the same for every policy). `attainment` is the share of "
        "the arriving users served within their deadline (SLO attainment); `goodput` is served users per "
        "second of simulated time. A user who is not served is dropped for one cause: `deadline` (started, "
        "but its batch ended too late because a length was mispredicted or the acceptance was unlucky), "
        "`memory` (started, but its batch's realized KV cache did not fit) or `never admitted` (never "
        "started before it could no longer make its deadline). P50/P90/P99 are latency percentiles "
        "(arrival to completion) over the served users; `compute util.` is the mean share of compute in "
        "use, `memory util.` the mean memory in use over `Q`; `runtime` is the wall time of the simulation.",
        "",
        "The hindsight bound is the most users that any policy could serve on the same workload, even "
        "one that knew every arrival, length and acceptance draw in advance: it packs the users' "
        "cheapest alone runs into compute and KV memory over their time windows. It is an upper bound "
        "over every policy, not a policy: it ignores that a lane runs one batch at a time and that each "
        "batch pays its forward passes once, so it need not be reachable. `share of bound` is served / "
        f"bound; the dashed line in the figures is bound / users. {state}",
        "",
    ]


def _read(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def point_means(ok: pd.DataFrame) -> pd.DataFrame:
    """Per family, rate and policy: the table's columns averaged over seeds."""
    cols = [c for c, _, _ in COLUMNS[3:]]
    ok = ok.assign(**{c: pd.to_numeric(ok.get(c, math.nan), errors="coerce") for c in cols})
    keys = [*rf.GROUP, rf.RATE, "config"]
    means = ok.groupby(keys, sort=True)[cols].mean()
    return means.join(ok.groupby(keys, sort=True)["instance"].count().rename("seeds")).reset_index()


def tables(ok: pd.DataFrame) -> list[str]:
    """One markdown table per workload family (settings and deadline scale)."""
    means = point_means(ok)
    lines = ["## Per point (means over seeds)", ""]
    for key, g in means.groupby(list(rf.GROUP), sort=True):
        settings = dict(zip(rf.GROUP, key, strict=True))
        lines += [f"### {rf.describe(settings, [*rf.SETTINGS, rf.SCALE])}", "", *markdown(g), ""]
    return lines


def markdown(table: pd.DataFrame) -> list[str]:
    """The table's rows by rate, then policy."""
    rule = "|" + "|".join("---" if c == "config" else "---:" for c, _, _ in COLUMNS) + "|"
    lines = ["| " + " | ".join(h for _, h, _ in COLUMNS) + " |", rule]
    for _, r in table.sort_values([rf.RATE, "config"], kind="stable").iterrows():
        lines.append("| " + " | ".join(cell(r[c], f) for c, _, f in COLUMNS) + " |")
    return lines


def cell(value: Any, spec: str) -> str:
    """``value`` in ``spec``; ``-`` for a missing number."""
    if spec != "s" and (value is None or (isinstance(value, float) and math.isnan(value))):
        return "-"
    return format(int(value) if spec == "d" else value, spec)


def errors(df: pd.DataFrame) -> list[str]:
    """The points that failed, with their messages."""
    if not len(df) or "error" not in df or not (df["status"] == "error").any():
        return []
    lines = ["## Errors", "", "| workload | policy | error |", "|---|---|---|"]
    for _, r in df[df["status"] == "error"].sort_values(["instance", "config"]).iterrows():
        message = str(r["error"]).replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {r['instance']} | {r['config']} | {message} |")
    return [*lines, ""]
