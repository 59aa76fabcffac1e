"""The paper's heuristic experiments under two hardware profiles, and the measurements behind them.

    python -m benchmarks.reproduce_fig1a --out reports/paper-reproduction-fig1a

For the default ``rtx4090`` (datasheet) profile and ``rtx4090-fig1a`` (fitted to the
paper's Fig. 1(a)): Fig. 1's single user, and the sweeps of Figs. 4, 5 and 7 with the
heuristics only (BALANCE, AD-only, SD-only, ECRA, EMA, ECRMA; the gains need no MILP),
seeds 1..N per sweep point, the sweep definitions of ``balance_opt.batch.experiments``.
Writes ``<profile>/<sweep>.csv`` (one row per solve), ``summary.csv`` (every row of the
"ours vs paper" table) and ``measurements.csv`` (per profile and sweep: how much KV memory
the settings can demand and BALANCE uses, its z, the per-pass share of its latency, and
the largest gain any scheduler could show over each baseline).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from balance_opt.batch.experiments import EXPERIMENTS, PAPER_FIG1, PAPER_FIG1_LATENCY_PCT, SWEEPS
from balance_opt.evaluator import AD, SD, Schedule, evaluate
from balance_opt.generator import generate
from balance_opt.instance import Instance
from balance_opt.io import atomic_write
from balance_opt.model import ad_user_memory, sd_user_memory
from benchmarks.bench_sensitivity import solve_rows

PROFILES = ("rtx4090", "rtx4090-fig1a")
SWEEP_ORDER = ("k", "tmax", "limax", "lomax")


def fig1_rows(hardware: str) -> list[list[Any]]:
    """Fig. 1: SD's extra memory and latency reduction (with and without communication)."""
    compute, e2e = [], []
    rows = []
    for lo, paper in PAPER_FIG1.items():
        inst = generate("fig1", output_tokens=lo, hardware=hardware)
        ad = evaluate(inst, Schedule(1.0, np.array([AD], dtype=np.int8)))
        sd = evaluate(inst, Schedule(0.0, np.array([SD], dtype=np.int8)))
        extra = 100.0 * (sd.memory_bytes - ad.memory_bytes) / ad.memory_bytes
        rows.append(["fig1", f"SD's extra memory at LO = {lo}", extra, paper])
        t_ad, t_sd = ad.ad.latency_s - ad.ad.upload_s, sd.sd.latency_s - sd.sd.upload_s  # type: ignore[operator]
        compute.append(100.0 * (t_ad - t_sd) / t_ad)
        c_ad, c_sd = float(ad.completion_s.max()), float(sd.completion_s.max())
        e2e.append(100.0 * (c_ad - c_sd) / c_ad)
    rows.append(["fig1", "SD's average latency reduction (with upload/download)", float(np.mean(e2e)),
                 PAPER_FIG1_LATENCY_PCT])  # fmt: skip
    rows.append(["fig1", "SD's average latency reduction (compute only)", float(np.mean(compute)),
                 PAPER_FIG1_LATENCY_PCT])  # fmt: skip
    return rows


def sweep_instances(sweep_name: str, hardware: str, seeds: int) -> list[tuple[float, Instance]]:
    sweep = SWEEPS[sweep_name]
    return [
        (v, generate(sweep.preset, seed=s, hardware=hardware, **{sweep.param: v}))
        for v in sweep.values
        for s in range(1, seeds + 1)
    ]


def memory_bound(inst: Instance) -> float:
    """Most KV bytes ANY schedule of ``inst`` can use: each user in its dearer mode, padded
    to the instance's longest input and largest accepted-draft count."""
    L = float(inst.input_tokens.max())
    ad = ad_user_memory(inst, L, inst.output_tokens)
    sd = sd_user_memory(inst, L, float(inst.accepted_drafts.max()), inst.sd_iterations)
    return float(np.maximum(ad, sd).sum())


def free_bytes(inst: Instance) -> float:
    """``Q - q^L - q^S``: the KV room when both models are loaded."""
    theta = inst.server.bytes_per_param
    return inst.server.memory_bytes - inst.llm.weight_bytes(theta) - inst.slm.weight_bytes(theta)


def run_sweep(sweep_name: str, hardware: str, seeds: int) -> tuple[pd.DataFrame, dict[str, Any]]:
    solvers = list(dict.fromkeys(s for e in EXPERIMENTS.values() if e.sweep == sweep_name for s in e.solvers))
    rows, bounds = [], []
    for value, inst in sweep_instances(sweep_name, hardware, seeds):
        rows += [{"value": value, **r} for r in solve_rows(inst, solvers)]
        bounds.append(memory_bound(inst) / free_bytes(inst))
    df = pd.DataFrame(rows)
    bal = df[df["solver"] == "balance"]
    mem = {
        "profile": hardware,
        "sweep": sweep_name,
        "max_demand_over_free": max(bounds),
        "balance_max_kv_over_free": float(
            ((bal["kv_ad_bytes"] + bal["kv_sd_bytes"]) / bal["free_bytes"]).max()
        ),
        "balance_max_mode_kv_over_free": float(
            (np.maximum(bal["kv_ad_bytes"], bal["kv_sd_bytes"]) / bal["free_bytes"]).max()
        ),
        "balance_mean_z": float(bal["z"].mean()),
        # share of the modes' latency that is per-pass (beta) time, which z does not scale
        "balance_beta_share": float(
            (bal["ad_fixed_s"] + bal["sd_fixed_s"]).sum()
            / (bal["ad_fixed_s"] + bal["sd_fixed_s"] + bal["ad_compute_s"] + bal["sd_compute_s"]).sum()
        ),
        "balance_sd_share_of_served": float(bal["num_sd"].sum() / max(int(bal["served"].sum()), 1)),
    }
    return df, mem


def sweep_gains(df: pd.DataFrame, baselines: Sequence[str]) -> dict[str, float]:
    """Mean over the sweep's values of ``T_balance / T_baseline - 1`` (in %), as the paper does."""
    wide = df.groupby(["value", "solver"])["throughput"].mean().unstack("solver")
    out = {}
    for b in baselines:
        ratio = (wide["balance"] / wide[b])[wide[b] > 0]
        out[b] = 100.0 * float((ratio - 1.0).mean())
    return out


def ceilings(df: pd.DataFrame, profile: str, sweep_name: str) -> dict[str, Any]:
    """The largest average gain ANY scheduler could show over each baseline: every user served
    (throughput 1) at every point, ``mean(1 / T_baseline - 1)`` in %."""
    wide = df.groupby(["value", "solver"])["throughput"].mean().unstack("solver")
    out: dict[str, Any] = {"profile": profile, "sweep": sweep_name}
    for b in ("ad-only", "sd-only"):
        out[f"ceiling_over_{b}_pct"] = 100.0 * float((1.0 / wide[b] - 1.0).mean())
    return out


def run(out: Path, seeds: int, sweeps: Sequence[str] = SWEEP_ORDER) -> pd.DataFrame:
    summary: list[list[Any]] = []
    memory = []
    for hw in PROFILES:
        rows = fig1_rows(hw)
        for sweep_name in sweeps:
            df, mem = run_sweep(sweep_name, hw, seeds)
            memory.append({**mem, **ceilings(df, hw, sweep_name)})
            atomic_write(
                out / hw / f"{sweep_name}.csv",
                df.to_csv(index=False, lineterminator="\n", float_format="%.6g"),
            )
            for exp in EXPERIMENTS.values():
                if exp.sweep == sweep_name and exp.paper_gains:
                    got = sweep_gains(df, list(exp.paper_gains))
                    rows += [
                        [exp.name, f"BALANCE's average gain over {b}", got[b], p]
                        for b, p in exp.paper_gains.items()
                    ]
            print(f"{hw} {sweep_name}: {len(df)} solves", flush=True)
        summary += [[hw, *r] for r in rows]
    table = pd.DataFrame(summary, columns=["profile", "figure", "quantity", "ours_pct", "paper_pct"])
    wide = table.pivot_table(index=["figure", "quantity"], columns="profile", values="ours_pct", sort=False)
    paper = table.drop_duplicates(["figure", "quantity"]).set_index(["figure", "quantity"])["paper_pct"]
    wide = wide.assign(paper=paper).reset_index()
    atomic_write(out / "summary.csv", wide.to_csv(index=False, lineterminator="\n", float_format="%.2f"))
    mem_df = pd.DataFrame(memory)
    atomic_write(
        out / "measurements.csv", mem_df.to_csv(index=False, lineterminator="\n", float_format="%.4f")
    )
    return wide


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument(
        "--sweeps", default=",".join(SWEEP_ORDER), help="comma-separated subset of k,tmax,limax,lomax"
    )
    args = p.parse_args(argv)
    wide = run(args.out, args.seeds, [s for s in args.sweeps.split(",") if s])
    print(wide.round(1).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
