"""The paper's experiments (Figs. 1, 4-7): sweeps, solves, reports beside the paper's numbers.

Each sweep generates its instances (seeded, docs/model.md section 10), solves them in a run
folder ``OUT/runs/<sweep>`` (resumable: a rerun solves only what is missing) and each
figure's report is built from that run's results table only. Figures that share a
sweep (Fig. 4a and Fig. 7a, Fig. 4b and Fig. 7b) share its solves.

Average gains are computed as the paper states them: at each point of the sweep, the
relative gain of BALANCE's mean normalized throughput over the baseline's,
``T_balance / T_baseline - 1``, averaged over the sweep's points.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from balance_opt.batch.configs import SolverConfig, make_config
from balance_opt.generator import generate
from balance_opt.io import write_instance
from balance_opt.status import SOLVED

DEFAULT_SEEDS = 3
DEFAULT_TIME_LIMIT_S = 300.0  # per solve of the exact reference (`exact` proves fig4 K = 70 in ~25 s)
# Exhaustive search is what Fig. 6 measures: it gets at least this long per solve.
EXHAUSTIVE_TIME_LIMIT_S = 300.0


@dataclass(frozen=True)
class Sweep:
    """One generator parameter varied over values, everything else at a preset's defaults."""

    name: str
    preset: str
    param: str  # GeneratorParams field
    values: tuple[float, ...]
    label: str


SWEEPS = {
    s.name: s
    for s in (
        Sweep("k", "fig4", "users", (20, 30, 40, 50, 60, 70), "K"),
        Sweep("tmax", "fig4", "deadline_max_s", (1, 3, 5, 7, 9, 11, 13), "Tmax (s)"),
        Sweep("limax", "fig5", "input_max", tuple(range(100, 1001, 100)), "LImax"),
        Sweep("lomax", "fig5", "output_max", tuple(range(100, 1001, 100)), "LOmax"),
        Sweep("small-k", "fig4", "users", (10, 11, 12, 13, 14, 15, 16), "K"),
    )
}


@dataclass(frozen=True)
class Experiment:
    """A figure: a sweep, the solvers it compares, and what the paper reports for it."""

    name: str
    title: str
    sweep: str
    solvers: tuple[str, ...]
    paper_gains: dict[str, float] = field(default_factory=dict)  # baseline -> average gain in %
    exact: tuple[str, ...] = ("exact",)
    timing: bool = False  # runtimes are the result: one solve at a time


# the throughput figures: the paper's algorithm, its two single-mode baselines, and balance-plus
THROUGHPUT = ("balance", "ad-only", "sd-only", "balance-plus")

EXPERIMENTS = {
    e.name: e
    for e in (
        Experiment("fig4a", "Fig. 4(a): throughput against K", "k", THROUGHPUT,
                   {"ad-only": 37.9, "sd-only": 33.4}),
        Experiment("fig4b", "Fig. 4(b): throughput against Tmax", "tmax", THROUGHPUT,
                   {"ad-only": 31.5, "sd-only": 27.3}),
        Experiment("fig5a", "Fig. 5(a): throughput against LImax", "limax", THROUGHPUT,
                   {"ad-only": 38.8, "sd-only": 23.9}),
        Experiment("fig5b", "Fig. 5(b): throughput against LOmax", "lomax", THROUGHPUT,
                   {"ad-only": 30.4, "sd-only": 27.3}),
        Experiment("fig6", "Fig. 6: BALANCE against exhaustive search, K = 10..16", "small-k",
                   ("balance", "balance-plus", "exhaustive"), exact=("exact", "exhaustive-p2"), timing=True),
        Experiment("fig7a", "Fig. 7(a): ablations against K", "k", ("balance", "ecra", "ema", "ecrma"),
                   {"ecra": 5.6, "ema": 18.7, "ecrma": 23.7}),
        Experiment("fig7b", "Fig. 7(b): ablations against Tmax", "tmax", ("balance", "ecra", "ema", "ecrma"),
                   {"ecra": 9.0, "ema": 4.9, "ecrma": 18.4}),
    )
}  # fmt: skip
NAMES = ("fig1", *EXPERIMENTS)
PAPER_FIG6 = {"speedup_mean": 5100.0, "speedup_k16": 21800.0, "loss_pct": 0.9}
PAPER_FIG1 = {200: 18.0, 600: 18.3, 1000: 18.6}  # SD's extra memory over AD, %
PAPER_FIG1_LATENCY_PCT = 39.1  # SD's average end-to-end latency reduction


def instance_stem(sweep: Sweep, value: float, seed: int) -> str:
    return f"{sweep.name}-{value:g}-s{seed:04d}"


def make_instances(sweep: Sweep, seeds: Sequence[int], folder: Path) -> list[Path]:
    """Write the sweep's instances (kept when present: generation is deterministic)."""
    paths = []
    for value in sweep.values:
        for seed in seeds:
            stem = instance_stem(sweep, value, seed)
            path = folder / f"{stem}.json"
            if not path.exists():
                overrides: dict[str, Any] = {sweep.param: value, "name": stem}
                write_instance(generate(sweep.preset, seed=seed, **overrides), path)
            paths.append(path)
    return paths


def configs_for(exp: Experiment, time_limit_s: float) -> list[SolverConfig]:
    """The figure's heuristics (no limit) and proving solvers (with a per-solve limit)."""

    def limit(solver: str) -> float:
        return max(time_limit_s, EXHAUSTIVE_TIME_LIMIT_S) if solver.startswith("exhaustive") else time_limit_s

    out = [make_config(s) for s in exp.solvers if not s.startswith("exhaustive")]
    out += [make_config(s, time_limit_s=limit(s)) for s in exp.solvers if s.startswith("exhaustive")]
    out += [make_config(s, time_limit_s=limit(s)) for s in exp.exact]
    return out


def average_gains(sweep_table: Any, param: str, baselines: Sequence[str]) -> dict[str, float]:
    """Mean over the sweep's points of ``T_balance / T_baseline - 1``, in percent."""
    wide = sweep_table.pivot_table(index=param, columns="config", values="throughput_mean")
    out = {}
    for b in baselines:
        if "balance" in wide and b in wide:
            ratio = wide["balance"] / wide[b]
            ratio = ratio[wide[b] > 0]
            out[b] = 100.0 * float((ratio - 1.0).mean()) if len(ratio) else math.nan
    return out


def fig6_numbers(df: Any) -> dict[str, float]:
    """Speedup of BALANCE over exhaustive search (mean of per-K runtime ratios, and at K = 16)
    and the average throughput loss ``(T_exhaustive - T_balance) / T_exhaustive`` over K."""
    ok = df[df["status"].isin(SOLVED)]
    t = ok.pivot_table(index="K", columns="config", values="runtime_s", aggfunc="mean")
    thr = ok.assign(x=ok["served"] / ok["K"]).pivot_table(index="K", columns="config", values="x")
    if "balance" not in t or "exhaustive" not in t:
        return {}
    speed = (t["exhaustive"] / t["balance"]).dropna()
    loss = ((thr["exhaustive"] - thr["balance"]) / thr["exhaustive"]).dropna()
    return {
        "speedup_mean": float(speed.mean()),
        "speedup_k16": float(speed.get(16, math.nan)),
        "loss_pct": 100.0 * float(loss.mean()),
    }


@dataclass
class Settings:
    """How an experiment is run."""

    out: Path
    seeds: int = DEFAULT_SEEDS
    time_limit_s: float = DEFAULT_TIME_LIMIT_S
    jobs: int = 1
    command: str = ""
    log: Callable[[str], None] = print


def solve_experiment(name: str, st: Settings) -> list[str]:
    """Solve one figure's sweep (solves resume from ``OUT/runs``); returns its configurations' names."""
    from balance_opt.batch.runner import run_batch

    exp = EXPERIMENTS[name]
    sweep = SWEEPS[exp.sweep]
    seeds = list(range(1, st.seeds + 1))
    paths = make_instances(sweep, seeds, st.out / "instances" / sweep.name)
    configs = configs_for(exp, st.time_limit_s)
    jobs = 1 if exp.timing else st.jobs
    st.log(f"{name}: {len(paths)} instances x {len(configs)} solvers, jobs={jobs}")
    outcome = run_batch(paths, configs, st.out / "runs" / sweep.name, jobs=jobs)
    st.log(f"{name}: {outcome.solved} solved, {outcome.skipped} already done")
    return [c.name for c in configs]
