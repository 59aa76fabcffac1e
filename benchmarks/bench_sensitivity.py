"""Where the hybrid pays: BALANCE's gains across hardware profiles and beta/alpha ratios.

    python -m benchmarks.bench_sensitivity --out reports/paper-reproduction-fig1a/sensitivity
    python -m benchmarks.bench_sensitivity --quick --out /tmp/sens   # a smoke run

Heuristics only (BALANCE, AD-only, SD-only and the ablations ECRA, EMA, ECRMA), on
Fig. 4's and Fig. 5's default settings (K = 30) and Fig. 4's with K = 70, seeds 1..N.
Two families of settings:

- every shipped hardware profile (datasheet and fitted), models llama-2-7b + tinyllama-1.1b;
- the default rtx4090 profile with both models' ``beta`` scaled by s (alpha unchanged), so
  ``beta / alpha`` moves by the factor s.

Gain over a baseline: mean normalized throughput of BALANCE over the seeds divided by the
baseline's, minus 1. Every schedule is judged by the evaluator. Same seeds -> same bytes.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from balance_opt.generator import generate
from balance_opt.instance import Instance
from balance_opt.io import atomic_write
from balance_opt.profiles import hardware_names, language_model_on
from balance_opt.report import figures
from balance_opt.report.build import markdown_table
from balance_opt.solvers import get_solver

HEURISTICS = ("balance", "ad-only", "sd-only", "ecra", "ema", "ecrma")
BASELINES = HEURISTICS[1:]
BETA_SCALES = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
# (preset, K): Fig. 4's and Fig. 5's defaults, and Fig. 4's heaviest load
CASES = (("fig4", 30), ("fig4", 70), ("fig5", 30))


def solve_rows(inst: Instance, solvers: Sequence[str] = HEURISTICS) -> list[dict[str, Any]]:
    """One flat row per solver: served users, z, lambda and each mode's KV bytes."""
    theta = inst.server.bytes_per_param
    free = inst.server.memory_bytes - inst.llm.weight_bytes(theta) - inst.slm.weight_bytes(theta)
    rows = []
    for name in solvers:
        r = get_solver(name).solve(inst)
        ev = r.evaluation
        rows.append(
            {
                "instance": inst.name,
                "solver": name,
                "K": inst.num_users,
                "served": r.served,
                "throughput": r.served / inst.num_users,
                "feasible": r.feasible,
                "num_ad": ev.num_ad,
                "num_sd": ev.num_sd,
                "z": ev.z,
                "lam": r.lam,
                # latency split: per-FLOP terms (divided by z or 1 - z) and per-pass beta terms
                "ad_compute_s": ev.ad.compute_s,
                "ad_fixed_s": ev.ad.fixed_s,
                "sd_compute_s": ev.sd.compute_s,
                "sd_fixed_s": ev.sd.fixed_s,
                "kv_ad_bytes": ev.ad.kv_bytes,
                "kv_sd_bytes": ev.sd.kv_bytes,
                "free_bytes": free,  # Q - q^L - q^S: what KV can use when both models are loaded
            }
        )
    return rows


def gains(df: pd.DataFrame, by: Sequence[str], baselines: Iterable[str] = BASELINES) -> pd.DataFrame:
    """Per group of ``by``: ``T_balance / T_baseline - 1`` (in %) of mean throughputs."""
    mean = df.groupby([*by, "solver"], sort=False)["throughput"].mean().unstack("solver")
    out = pd.DataFrame(index=mean.index)
    for b in baselines:
        if b in mean:
            ratio = mean["balance"] / mean[b].where(mean[b] > 0)
            out[f"over_{b}_pct"] = 100.0 * (ratio - 1.0)
    out["balance_throughput"] = mean["balance"]
    return out.reset_index()


def settings(quick: bool) -> list[tuple[str, dict[str, Any]]]:
    """``(label, generator overrides)`` of every setting."""
    out = [(hw, {"hardware": hw}) for hw in hardware_names()]
    base = {
        k: language_model_on("rtx4090", m).beta_s
        for k, m in (("llm", "llama-2-7b"), ("slm", "tinyllama-1.1b"))
    }
    for s in (0.0, 1.0, 4.0) if quick else BETA_SCALES:
        label = f"rtx4090 beta x{s:g}"
        out.append((label, {"llm_beta_s": base["llm"] * s, "slm_beta_s": base["slm"] * s}))
    return out


def run(seeds: int, quick: bool, log: Any = print) -> pd.DataFrame:
    rows = []
    for label, overrides in settings(quick):
        for preset, users in CASES[:1] if quick else CASES:
            for seed in range(1, seeds + 1):
                inst = generate(preset, users=10 if quick else users, seed=seed, **overrides)
                case = f"{preset} K={inst.num_users}"
                rows += [{"setting": label, "case": case, "seed": seed, **r} for r in solve_rows(inst)]
        log(f"{label}: done")
    return pd.DataFrame(rows)


def figure(table: pd.DataFrame, path: Path) -> None:
    """Gain over each baseline per setting, one panel per case."""
    import matplotlib.pyplot as plt

    cases = list(dict.fromkeys(table["case"]))
    with plt.rc_context(figures.RC):
        fig, axes = plt.subplots(1, len(cases), figsize=(4.2 * len(cases), 4.0), squeeze=False)
    for ax, case in zip(axes[0], cases, strict=True):
        t = table[table["case"] == case]
        x = range(len(t))
        for i, b in enumerate(BASELINES):
            ax.plot(x, t[f"over_{b}_pct"], marker=figures.MARKERS[i], markersize=4, label=b)
        ax.set_xticks(list(x), t["setting"], rotation=60, ha="right", fontsize=6)
        ax.set(ylabel="BALANCE's gain (%)", title=case)
        ax.legend(fontsize=6)
    figures.save(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="fewer settings, fig4 with K = 10 only")
    args = p.parse_args(argv)
    df = run(args.seeds, args.quick)
    table = gains(df, ["setting", "case"])
    cmd = (
        "python -m benchmarks.bench_sensitivity"
        + (" --quick" if args.quick else "")
        + f" --seeds {args.seeds}"
    )
    atomic_write(args.out / "solves.csv", df.to_csv(index=False, lineterminator="\n", float_format="%.6g"))
    atomic_write(args.out / "gains.csv", table.to_csv(index=False, lineterminator="\n", float_format="%.4g"))
    figure(table, args.out / "figures" / "gains")
    # percentages to 0.1 point, throughput to 0.01: the precision the seeds support
    shown = table.assign(**{c: table[c].map(lambda x: f"{x:.1f}") for c in table if c.endswith("_pct")})
    shown["balance_throughput"] = table["balance_throughput"].map(lambda x: f"{x:.2f}")
    lines = [
        "# BALANCE's gains across hardware profiles and beta/alpha",
        "",
        f"Built with `{cmd} --out {args.out}`; see the docstring of `benchmarks/bench_sensitivity.py`.",
        "",
        "![gains](figures/gains.png)",
        "",
        markdown_table(shown),
        "",
        "Columns `over_<baseline>_pct`: mean normalized throughput of BALANCE over the seeds against the "
        "baseline's, minus 1. Solves: [solves.csv](solves.csv); table: [gains.csv](gains.csv).",
    ]
    atomic_write(args.out / "README.md", "\n".join(lines) + "\n")
    print(args.out / "README.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
