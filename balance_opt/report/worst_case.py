"""The worst-case report (``balance-opt worst-case-report``): how tight Theorem 1's 1/2 is.

Four parts, each computed here by running the solvers and the evaluator, or read from the
library's reference tables:

1. the ``theorem1-tight`` family: every heuristic's served count against the optimum ``K``
   (every user served by the family's schedule, which the evaluator accepts), for ``m`` up to
   the largest the model allows, and that largest ``m`` per draft length and hardware;
2. the adversary's finds stored in the library's ``adversarial`` set: the heuristic each was
   found for, re-solved here, against the proved P1 optimum (and P2's, by ``exhaustive-p2``);
3. ``balance / optimum`` over every proved instance of the library;
4. what the guarantee needs (docs/worst-case.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from balance_opt.evaluator import evaluate
from balance_opt.families import TightParams, largest_m, optimum_schedule, tight_instance
from balance_opt.io import atomic_write, read_instance
from balance_opt.library.reference import HEURISTICS, read_reference
from balance_opt.library.verify import set_folders
from balance_opt.profiles import HARDWARE
from balance_opt.report import figures
from balance_opt.report.build import markdown_table
from balance_opt.solvers import get_solver

FAMILY_M = (*range(1, 11), 15, 20, 25, 30, 40, 50, 60, 70, 80, 90, 95)
FAMILY_SEEDS = (1, 2, 3)
DRAFT_LENGTHS = (1, 2, 4, 6, 8)
P2_MAX_USERS = 12
# Built to be bad: kept out of the library's distribution (shown as a row of its own).
ADVERSARIAL = "adversarial"


def _served(solver: str, inst: Any) -> int:
    res = get_solver(solver).solve(inst)
    return res.served if res.feasible else 0


def family_table(ms: Sequence[int] = FAMILY_M, seeds: Sequence[int] = FAMILY_SEEDS) -> pd.DataFrame:
    """One row per (m, seed): each heuristic's served count, the optimum K, balance's ratio."""
    rows = []
    for m in ms:
        for seed in seeds:
            inst = tight_instance(TightParams(users=2 * m, seed=seed))
            ev = evaluate(inst, optimum_schedule(inst))
            optimum = ev.served if ev.feasible else None  # K: all served, so no bound is needed
            row: dict[str, Any] = {"m": m, "K": 2 * m, "seed": seed, "optimum": optimum}
            row.update({h: _served(h, inst) for h in HEURISTICS})
            row["balance_ratio"] = None if not optimum else row["balance"] / optimum
            rows.append(row)
    return pd.DataFrame(rows)


def largest_m_table() -> pd.DataFrame:
    """The largest m of the family per hardware profile (rows) and draft length (columns)."""
    rows = []
    for hw in sorted(HARDWARE):
        row: dict[str, Any] = {"hardware": hw}
        row.update(
            {f"LD = {ld}": largest_m(TightParams(hardware=hw, draft_length=ld)) for ld in DRAFT_LENGTHS}
        )
        rows.append(row)
    return pd.DataFrame(rows)


def adversary_table(library: Path) -> pd.DataFrame:
    """The adversary's finds of the library's ``adversarial`` set, re-solved."""
    folder = library / "adversarial"
    ref = read_reference(folder)
    rows = []
    for stem, r in sorted(ref.items()):
        inst = read_instance(folder / f"{stem}.json")
        gen = inst.generator or {}
        if gen.get("preset") != "adversary":
            continue
        solver = str(gen["solver"])
        served = _served(solver, inst)
        optimum = int(r["best_known"]) if r["status"] == "optimal" else None
        p2 = None
        if inst.num_users <= P2_MAX_USERS:
            p2 = get_solver("exhaustive-p2").solve(inst).stats.get("p2_optimum")
        rows.append(
            {"instance": stem, "solver": solver, "against": gen.get("against"), "grids": gen.get("grids"),
             "K": inst.num_users, "served": served, "P1 optimum": optimum, "proofs": r.get("proofs"),
             "ratio P1": None if not optimum else served / optimum, "P2 optimum": p2,
             "ratio P2": None if not p2 else served / p2, "balance": r.get("balance")}
        )  # fmt: skip
    return pd.DataFrame(rows)


def library_ratios(library: Path) -> pd.DataFrame:
    """Every heuristic's ``served / optimum`` on every instance of the library with a proved optimum."""
    rows = []
    for folder in set_folders([library]):
        for stem, r in sorted(read_reference(folder).items()):
            if r["status"] != "optimal" or int(r["best_known"]) == 0:
                continue
            row: dict[str, Any] = {"set": folder.name, "instance": stem, "K": int(r["K"]),
                                   "optimum": int(r["best_known"])}  # fmt: skip
            for h in HEURISTICS:
                row[h] = int(r[h]) / row["optimum"] if r.get(h) else None
            rows.append(row)
    return pd.DataFrame(rows)


def library_summary(ratios: pd.DataFrame) -> pd.DataFrame:
    """Per set: instances, and balance's smallest and mean ratio and share at the optimum."""
    out = []
    natural = ratios[ratios["set"] != ADVERSARIAL]
    for name, g in [*ratios.groupby("set", sort=True), (f"all but {ADVERSARIAL}", natural)]:
        b = g["balance"].dropna()
        out.append({"set": name, "proved instances": len(g), "balance min": b.min(), "balance mean": b.mean(),
                    "balance at optimum": (b == 1.0).mean(),
                    **{f"{h} min": g[h].min() for h in HEURISTICS if h != "balance"}})  # fmt: skip
    return pd.DataFrame(out)


def _plot_family(df: pd.DataFrame, ax: Any = None) -> Any:
    worst = df.groupby("m")["balance_ratio"].agg(["min", "max"]).reset_index()
    ax.plot(worst["m"], worst["max"], marker="o", markersize=4, label="balance / optimum (max over seeds)")
    ax.plot(worst["m"], worst["min"], marker="x", markersize=4, linestyle="", label="min over seeds")
    ax.axhline(0.5, color="black", linewidth=0.8, linestyle="--", label="Theorem 1: 1/2")
    ax.set(xlabel="m (K = 2m users)", ylabel="served / P1 optimum", ylim=(0, 1.05))
    ax.legend(loc="upper right")
    return ax


def _plot_library(ratios: pd.DataFrame, ax: Any = None) -> Any:
    values = ratios[ratios["set"] != ADVERSARIAL]["balance"].dropna()
    ax.hist(values, bins=[i / 40 for i in range(18, 41)], color="tab:blue")
    ax.axvline(0.5, color="black", linewidth=0.8, linestyle="--", label="Theorem 1: 1/2")
    ax.set(xlabel=f"balance / proved optimum (P1), every set but {ADVERSARIAL}", ylabel="instances",
           xlim=(0.45, 1.02))  # fmt: skip
    ax.legend(loc="upper left")
    return ax


def _figure(out: Path, name: str, draw: Any, df: pd.DataFrame) -> str:
    fig, ax = figures.figure()
    draw(df, ax=ax)
    figures.save(fig, out / "figures" / name)
    return f"![{name}](figures/{name}.png) ([SVG](figures/{name}.svg))"


def _csv(out: Path, name: str, df: pd.DataFrame) -> str:
    atomic_write(out / name, df.to_csv(index=False, lineterminator="\n", float_format="%.6g"))
    return f"[{name}]({name})"


def build_worst_case_report(out: Path, library: Path, command: str, ms: Sequence[int] = FAMILY_M) -> Path:
    """Write ``out/README.md`` with its tables and figures; returns the README's path."""
    from balance_opt.report.worst_case_text import readme

    family = family_table(ms)
    sizes = largest_m_table()
    finds = adversary_table(library)
    ratios = library_ratios(library)
    summary = library_summary(ratios)
    parts = {
        "family_table": markdown_table(family.groupby("m", as_index=False).agg(
            K=("K", "first"), optimum=("optimum", "min"), balance=("balance", "max"),
            ratio=("balance_ratio", "max"), **{h: (h, "max") for h in HEURISTICS if h != "balance"})),
        "family_csv": _csv(out, "family.csv", family),
        "family_figure": _figure(out, "family-ratio", _plot_family, family),
        "sizes_table": markdown_table(sizes),
        "sizes_csv": _csv(out, "largest-m.csv", sizes),
        "finds_table": markdown_table(finds) if len(finds) else "(no adversary finds in the library yet)",
        "finds_csv": _csv(out, "adversary.csv", finds),
        "library_table": markdown_table(summary),
        "library_csv": _csv(out, "library-ratios.csv", ratios),
        "library_figure": _figure(out, "library-ratios", _plot_library, ratios),
        "family_all_half": bool((family["balance_ratio"] == 0.5).all()),
    }  # fmt: skip
    readme_path = out / "README.md"
    atomic_write(readme_path, readme(parts, command, family, finds, ratios))
    return readme_path
