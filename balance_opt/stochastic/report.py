"""Tables, figure and README of the random-acceptance experiment, from its rows alone."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from balance_opt.io import atomic_write
from balance_opt.status import Status

if TYPE_CHECKING:
    import pandas as pd

    from balance_opt.stochastic.experiment import Settings

METRICS = {
    "served": "nominal served",
    "goodput_mean": "goodput mean",
    "goodput_p05": "goodput p05",
    "deadline_miss_rate": "deadline-miss rate",
    "p_all_meet": "P(all on time)",
    "p_sd_within_plan": "P(SD within plan)",
    "p_memory_overflow": "P(memory overflow)",
}
PRESET_TITLES = {
    "fig4": "Fig. 4 setting (T ~ U[0.5, 4] s, LO <= 100)",
    "fig5": "Fig. 5 setting (T ~ U[2, 12] s, LO <= 500)",
}


def order(df: pd.DataFrame) -> list[tuple[str, str]]:
    """(solver, variant) pairs in the build's order."""
    from balance_opt.stochastic.experiment import VARIANTS

    solvers = list(dict.fromkeys(df.sort_values("role")["solver"]))  # balance, then the reference
    have = set(zip(df["solver"], df["variant"], strict=True))
    return [(s, v.label) for s in solvers for v in VARIANTS if (s, v.label) in have]


def summarize(df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Means over seeds (and K unless ``by`` holds it) of every metric."""
    return df.groupby(by, sort=False)[list(METRICS)].mean().reset_index()


def markdown(table: pd.DataFrame, columns: dict[str, str]) -> str:
    head = "| " + " | ".join(columns.values()) + " |"
    rule = "|" + "|".join("---" if i < 2 else "---:" for i in range(len(columns))) + "|"
    lines = [head, rule]
    for _, r in table.iterrows():
        cells = []
        for c in columns:
            v = r[c]
            if isinstance(v, float):
                cells.append(
                    "-"
                    if v != v
                    else (f"{v:.2f}" if c in ("served", "goodput_mean", "goodput_p05") else f"{v:.3f}")
                )
            else:
                cells.append(str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(df: pd.DataFrame, base: Path) -> list[Path]:
    """Per preset against K: goodput relative to the solver's nominal promise, and the share
    of runs that break at least one promise. Colour: plan; solid: balance; dashed: reference."""
    import matplotlib.pyplot as plt

    from balance_opt.report.figures import RC, save

    presets = sorted(df["preset"].unique())
    per_k = summarize(df, ["preset", "solver", "variant", "K"])
    with plt.rc_context(RC):
        fig, axes = plt.subplots(2, len(presets), figsize=(5.0 * len(presets), 7.0), squeeze=False)
    plans = list(dict.fromkeys(v for _, v in order(df)))
    markers = "osD^vx"
    for j, preset in enumerate(presets):
        top, bottom = axes[0][j], axes[1][j]
        d = per_k[per_k["preset"] == preset]
        for solver, variant in order(df):
            g = d[(d["solver"] == solver) & (d["variant"] == variant)].set_index("K")
            promise = d[(d["solver"] == solver) & (d["variant"] == "nominal")].set_index("K")["served"]
            ref = solver != df.loc[df["role"] == "balance", "solver"].iloc[0]
            i = plans.index(variant)
            kw: dict[str, Any] = {
                "color": f"C{i}",
                "marker": markers[i % len(markers)],
                "markersize": 4,
                "linestyle": "--" if ref else "-",
                "markerfacecolor": "none" if ref else f"C{i}",
                "label": f"{solver} {variant}",
            }
            top.plot(g.index, g["goodput_mean"] - promise.reindex(g.index), **kw)
            bottom.plot(g.index, 100.0 * (1.0 - g["p_all_meet"]), **kw)
        top.axhline(0.0, color="0.5", linewidth=0.8)
        top.set_title(PRESET_TITLES.get(preset, preset))
        top.set_ylabel("users on time per run - nominal promise")
        bottom.set_ylabel("runs breaking a promise (%)")
        bottom.set_xlabel("number of users K")
    axes[0][0].legend(fontsize=7)
    return save(fig, base)


def overall_line(df: pd.DataFrame) -> str:
    """One plain sentence over every nominal schedule and its q = 0.95 counterpart."""
    nom = df[df["variant"] == "nominal"]
    rob = df[df["variant"] == "q0.95"]
    broken = 100.0 * (1.0 - nom["p_all_meet"]).mean()
    worst = 100.0 * (1.0 - nom["p_all_meet"]).max()
    short = 100.0 * (1.0 - nom["goodput_mean"].sum() / nom["served"].sum())
    text = (
        f"- Overall: planned on expected values, a run breaks at least one of the schedule's promises "
        f"with probability {broken:.1f}% on average ({worst:.0f}% for the worst schedule), while the "
        f"users lost are only {short:.1f}% of those promised: AD is deterministic, so a miss can only hit "
        "an SD user whose slack is smaller than the spread of its batch's latency."
    )
    if not rob.empty:
        cost = 100.0 * (1.0 - rob["served"].sum() / nom["served"].sum())
        rbroken = 100.0 * (1.0 - rob["p_all_meet"]).mean()
        text += (
            f" Planning every user at its 0.95-quantile promises {cost:.1f}% fewer users and breaks a "
            f"promise in {rbroken:.1f}% of runs."
        )
    return text


def headline(df: pd.DataFrame) -> list[str]:
    """Sentences on the nominal schedules' optimism and the robust ones' price, from the rows."""
    lines = [overall_line(df)] if (df["variant"] == "nominal").any() else []
    for preset in sorted(df["preset"].unique()):
        d = df[df["preset"] == preset]
        for solver in dict.fromkeys(d.sort_values("role")["solver"]):
            nom = d[(d["solver"] == solver) & (d["variant"] == "nominal")]
            rob = d[(d["solver"] == solver) & (d["variant"] == "q0.95")]
            if nom.empty or nom["served"].sum() == 0:
                continue
            short = 100.0 * (1.0 - nom["goodput_mean"].sum() / nom["served"].sum())
            broken = 100.0 * (1.0 - nom["p_all_meet"].mean())
            miss = 100.0 * nom["deadline_miss_rate"].mean()
            text = (
                f"- {preset}, `{solver}`: the nominal schedules promise {nom['served'].mean():.2f} users "
                f"on average and deliver {nom['goodput_mean'].mean():.2f} ({short:.1f}% fewer); a run "
                f"breaks at least one promise with probability {broken:.1f}% on average, and the "
                f"per-user deadline-miss rate is {miss:.2f}%."
            )
            if not rob.empty:
                rmiss = 100.0 * rob["deadline_miss_rate"].mean()
                text += (
                    f" Planned at q = 0.95 it promises {rob['served'].mean():.2f} and delivers "
                    f"{rob['goodput_mean'].mean():.2f} (miss rate {rmiss:.2f}%)."
                )
            lines.append(text)
    return [*lines, *batch_line(df)]


def batch_line(df: pd.DataFrame) -> list[str]:
    """The batch-level plan's claim, checked: P(every SD user within its level) >= q."""
    batch = df[(df["variant"] == "batch-q0.95") & df["p_sd_within_plan"].notna()]
    per_user = df[(df["variant"] == "q0.95") & df["p_sd_within_plan"].notna()]
    if batch.empty:
        return []
    within = batch["p_sd_within_plan"]
    return [
        f"- Batch level (`batch-q0.95`, target 95%): every SD user of the batch stays within its planned "
        f"count in {100.0 * within.min():.1f}% of runs for the worst of its {len(batch)} schedules "
        f"({100.0 * within.mean():.1f}% on average); per-user 0.95 levels achieve "
        f"{100.0 * per_user['p_sd_within_plan'].mean():.1f}% on average."
    ]


def in_order(table: pd.DataFrame, df: pd.DataFrame) -> pd.DataFrame:
    """Rows by preset, K (when present) and the build's (solver, plan) order."""
    rank = {pair: i for i, pair in enumerate(order(df))}
    keys = ["preset", *(["K"] if "K" in table else []), "_rank"]
    pairs = zip(table["solver"], table["variant"], strict=True)
    return table.assign(_rank=[rank[p] for p in pairs]).sort_values(keys, kind="stable").drop(columns="_rank")


def write_report(df: pd.DataFrame, st: Settings) -> Path:
    """results.csv, summary.csv, the figure and README.md under ``st.out``."""
    df = df.sort_values(["preset", "K", "seed", "role", "instance"], kind="stable").reset_index(drop=True)
    atomic_write(st.out / "results.csv", df.to_csv(index=False, float_format="%.6g"))
    overall = summarize(df, ["preset", "solver", "variant"])
    per_k = summarize(df, ["preset", "K", "solver", "variant"])
    atomic_write(st.out / "summary.csv", per_k.to_csv(index=False, float_format="%.6g"))
    plot(df, st.out / "figures" / "goodput-vs-k")
    parts = [
        *_introduction(df, st),
        "## How optimistic the deterministic model is",
        "",
        *headline(df),
        "",
        "## Summary (means over K and seeds)",
        "",
    ]
    cols = {"solver": "solver", "variant": "plan", **METRICS}
    overall, per_k = in_order(overall, df), in_order(per_k, df)
    for preset in sorted(df["preset"].unique()):
        t = overall[overall["preset"] == preset]
        parts += [f"### {PRESET_TITLES.get(preset, preset)}", "", markdown(t, cols), ""]
    parts += ["![goodput and miss rate against K](figures/goodput-vs-k.png)", "", "## Per K", ""]
    for preset in sorted(df["preset"].unique()):
        t = per_k[per_k["preset"] == preset]
        parts += [f"### {PRESET_TITLES.get(preset, preset)}", "", markdown(t, {"K": "K", **cols}), ""]
    parts += [
        "## Rebuilding",
        "",
        "The same command rebuilds everything; the run folder `runs/` is resumed (only missing solves run). "
        "With another reference solver, e.g. an exact one, pass `--reference NAME` (and `--time-limit`).",
        "",
    ]
    path = st.out / "README.md"
    atomic_write(path, "\n".join(parts))
    return path


def _introduction(df: pd.DataFrame, st: Settings) -> list[str]:
    """The README's title, how it was built and its setup section."""
    ref = df[df["role"] == "reference"]
    proved = int((ref["status"] == Status.OPTIMAL).sum())
    label = (
        f"proved optimal in all {proved} solves"
        if proved == len(ref)
        else f"proved optimal in {proved} of {len(ref)} solves, so its rows are *the best schedule found "
        f"by {st.reference} in {st.time_limit_s:g} s*, not optima"
    )
    cpu, wall = st.timings.get("cpu_s", float("nan")), st.timings.get("wall_s", float("nan"))
    total_cpu, total_wall = st.timings.get("total_cpu_s", cpu), st.timings.get("total_wall_s", wall)
    calls = int(st.timings.get("invocations", 1))
    return [
        "# Random draft acceptance: nominal against robust schedules",
        "",
        f"Built by `{st.command}`",
        f"({len(df)} schedules; the solves' own run times sum to {df['runtime_s'].sum() / 60:.1f} min. "
        f"Building took {total_cpu / 60:.1f} min of CPU and {total_wall / 60:.1f} min of wall time over "
        f"{calls} invocation(s), the last {cpu:.0f} s of CPU, on a shared 2-core machine, so the times are "
        "noisy; a rerun resumes `runs/` and repeats no solve.) The tables come from `results.csv` alone.",
        "",
        "## Setup",
        "",
        f"Fig. 4 and Fig. 5 generator settings, K = {', '.join(str(k) for k in sorted(df['K'].unique()))}, "
        f"seeds 1..{st.seeds}. Each instance is planned five ways: `nominal` (the model's expected-value "
        "`N_k`), `q0.9` / `q0.95` / `q0.99` (every user's `sd_iterations` at that quantile of its exact "
        "distribution, `balance-opt robustify --quantile q`) and `batch-q0.95` (the `q^(1/m)`-quantile with "
        "`m` the SD users of `balance`'s nominal schedule, `--batch-users auto`; `balance` only). "
        f"Each plan is solved by `balance` and by the reference `{st.reference}` with a "
        f"{st.time_limit_s:g} s limit "
        f"({label}), and every schedule is simulated "
        f"{st.trials} times (seed {st.sim_seed}) under the random model of docs/stochastic.md.",
        "",
        "Columns: `nominal served` is what the plan promises (the evaluator on the planning instance); "
        "`goodput` counts the users served within their deadline in a run (mean over runs, and the 5% "
        "order statistic); `deadline-miss rate` is the share of promised users who miss; "
        "`P(all on time)` the share of runs that keep every promise; `P(SD within plan)` the share in "
        "which every SD user needs no more iterations than planned. All values are means over seeds and K.",
        "",
    ]
