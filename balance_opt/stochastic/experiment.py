"""Nominal against robust schedules under random acceptance, on the Fig. 4 and Fig. 5 sweeps of K.

For every generated instance the builder writes its robust variants (``sd_iterations``
at per-user quantiles, and one batch-level variant), solves every variant with
``balance`` and a reference solver (resumable run folder), simulates each schedule
under the random model and keeps one flat row per (instance, variant, solver). The
report (:mod:`balance_opt.stochastic.report`) reads only that table.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from balance_opt.batch.configs import SolverConfig, make_config
from balance_opt.batch.experiments import Sweep, make_instances
from balance_opt.batch.runner import run_batch, solution_name
from balance_opt.evaluator import SD, Schedule
from balance_opt.io import atomic_write, read_instance, read_solution, write_instance
from balance_opt.stochastic.distribution import robustify
from balance_opt.stochastic.simulate import simulate, summary

if TYPE_CHECKING:
    import pandas as pd

USERS = (20, 30, 40, 50, 60, 70)
PRESETS = ("fig4", "fig5")


@dataclass(frozen=True)
class Variant:
    """How the instance plans SD iterations: nominal, per-user quantile or batch-level."""

    label: str
    quantile: float | None = None  # None: the expected-value N_k of the model
    batch: bool = False  # level q for the whole SD batch (product rule) instead of per user
    reference: bool = True  # also solved by the reference solver


VARIANTS = (
    Variant("nominal"),
    Variant("q0.9", 0.9),
    Variant("q0.95", 0.95),
    Variant("q0.99", 0.99),
    Variant("batch-q0.95", 0.95, batch=True, reference=False),
)


@dataclass
class Settings:
    """What the build runs; ``command`` is quoted in the report."""

    out: Path
    seeds: int = 2
    reference: str = "exact"
    time_limit_s: float = 10.0
    trials: int = 2000
    sim_seed: int = 1
    jobs: int = 1
    users: tuple[int, ...] = USERS
    command: str = ""
    log: Callable[[str], None] = print
    timings: dict[str, float] = field(default_factory=dict)


def variant_path(nominal: Path, variant: Variant) -> Path:
    return nominal if variant.quantile is None else nominal.with_name(f"{nominal.stem}-{variant.label}.json")


def write_variants(nominal: Path, variants: Sequence[Variant]) -> None:
    """The robust instance files of one nominal instance (kept when present: deterministic)."""
    inst = None
    for v in variants:
        path = variant_path(nominal, v)
        if v.quantile is None or path.exists():
            continue
        inst = inst or read_instance(nominal)
        m = batch_size(inst) if v.batch else None
        write_instance(robustify(inst, v.quantile, batch_users=m), path)


def batch_size(inst: Any) -> int:
    """The SD batch a batch-level plan covers: the SD users of balance's nominal schedule."""
    from balance_opt.solvers import get_solver

    res = get_solver("balance").solve(inst)
    return max(1, int((res.schedule.modes == SD).sum()))


def reference_config(st: Settings) -> SolverConfig:
    return make_config(
        st.reference, time_limit_s=st.time_limit_s, name=f"{st.reference}-{st.time_limit_s:g}s"
    )


def solve_all(st: Settings, nominal: list[Path]) -> dict[str, SolverConfig]:
    """Solve every variant with balance and (where the variant asks) the reference."""
    heuristic, ref = make_config("balance"), reference_config(st)
    everything = [variant_path(p, v) for p in nominal for v in VARIANTS]
    referenced = [variant_path(p, v) for p in nominal for v in VARIANTS if v.reference]
    run_dir = st.out / "runs"
    run_batch(everything, [heuristic], run_dir, jobs=st.jobs, progress=False)
    run_batch(referenced, [ref], run_dir, jobs=st.jobs, progress=False)
    return {"balance": heuristic, "reference": ref}


def simulate_row(inst_path: Path, sol_path: Path, st: Settings) -> dict[str, Any]:
    """One schedule, simulated: the nominal promise beside what the trials deliver."""
    inst = read_instance(inst_path)
    sol = read_solution(sol_path, inst)
    schedule = Schedule.from_assignment(inst, sol.z, sol.assignment)
    res = simulate(inst, schedule, st.trials, st.sim_seed)
    out = summary(inst, schedule, res, st.sim_seed)
    out.pop("users")
    return {
        "status": None if sol.status is None else str(sol.status),
        "runtime_s": sol.runtime_s,
        **{k: v for k, v in out.items() if k not in ("trials", "seed", "output_cv")},
    }


def build_rows(st: Settings, nominal: list[Path], configs: dict[str, SolverConfig]) -> list[dict[str, Any]]:
    rows = []
    for path in nominal:
        gen = read_instance(path).generator or {}
        for v in VARIANTS:
            for role, cfg in configs.items():
                if role == "reference" and not v.reference:
                    continue
                inst_path = variant_path(path, v)
                sol = st.out / "runs" / "solutions" / solution_name(inst_path.stem, cfg)
                row = {"preset": gen.get("preset"), "K": gen.get("users"), "seed": gen.get("seed")}
                row.update(variant=v.label, solver=cfg.name, role=role, instance=inst_path.stem)
                rows.append({**row, **simulate_row(inst_path, sol, st)})
    return rows


def run(st: Settings) -> pd.DataFrame:
    """Generate, solve and simulate; returns one row per simulated schedule."""
    import pandas as pd

    start, wall = cpu_seconds(), time.perf_counter()
    nominal: list[Path] = []
    seeds = list(range(1, st.seeds + 1))
    for preset in PRESETS:
        sweep = Sweep(f"{preset}-k", preset, "users", st.users, "K")
        paths = make_instances(sweep, seeds, st.out / "instances" / sweep.name)
        for p in paths:
            write_variants(p, VARIANTS)
        nominal += paths
    st.log(f"{len(nominal)} instances x {len(VARIANTS)} variants; solving")
    configs = solve_all(st, nominal)
    st.log("simulating")
    df = pd.DataFrame(build_rows(st, nominal, configs))
    st.timings.update(cpu_s=cpu_seconds() - start, wall_s=time.perf_counter() - wall)
    record_timing(st)
    return df


def record_timing(st: Settings) -> None:
    """Add this invocation's CPU and wall time to ``runs/timing.json`` (a resumed build's total)."""
    path = st.out / "runs" / "timing.json"
    done = json.loads(path.read_text()) if path.exists() else {}
    total = {
        "invocations": int(done.get("invocations", 0)) + 1,
        "total_cpu_s": float(done.get("total_cpu_s", 0.0)) + st.timings["cpu_s"],
        "total_wall_s": float(done.get("total_wall_s", 0.0)) + st.timings["wall_s"],
    }
    atomic_write(path, json.dumps(total, indent=2) + "\n")
    st.timings.update(total)


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (the solver workers)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system
