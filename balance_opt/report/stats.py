"""Statistics of a results table: intervals, optima, gaps, runtimes, performance profiles.

Everything here reads only the flat results table (:mod:`balance_opt.batch.table`).
Conventions, stated once and repeated in every report:

- normalized throughput = served / K per row; ``error`` and killed rows serve 0
- a share (normalized throughput) is a mean over the rows (seeds) of a group with a 95%
  Wilson score interval at the effective sample size ``n* = p(1 - p) / v * (z / t)^2``
  (``v`` the squared standard error of the mean, ``t`` Student's quantile), after Korn
  and Graubard (1998): it stays within [0, 1], and away from 0 and 1 it is the Student-t
  interval; no interval from fewer than 2 distinct values (no spread observed)
- an instance's proved optimum = ``served`` of any ``optimal`` row with its sha256, else
  the ``library_optimum`` column (the benchmark library's proved optimum, when the table
  has one); P2's optimum = any row's ``p2_optimum`` for that sha256
- an instance's best bound = the smallest ``bound`` any row proved (MILP rows stopped by
  their time limit still prove one); the bound gap is ``(best_bound - served) / best_bound``
- shifted geometric mean runtime ``exp(mean(log(t + s))) - s`` with shift ``s = 1 ms``
  (heuristics finish in milliseconds, so a 1 s shift as for MILP benchmarks would hide
  them), over rows that are not ``error``
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from balance_opt import crmath
from balance_opt.status import SOLVED, Status

SGM_SHIFT_S = 1e-3
Z975 = 1.959963984540054  # the standard normal's 97.5% quantile

# Two-sided 97.5% quantiles of Student's t for 1..30 degrees of freedom.
_T975 = (
    12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
    2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
    2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
)  # fmt: skip


def t_quantile_975(df: int) -> float:
    """``t_{0.975, df}``: table up to 30, Cornish-Fisher expansion beyond (error < 1e-4)."""
    if df < 1:
        return math.nan
    if df <= len(_T975):
        return _T975[df - 1]
    z = Z975
    z2 = z * z  # products, not pow(): the C library's pow may round differently elsewhere
    z3, z5, z7 = z2 * z, z2 * z2 * z, z2 * z2 * z2 * z
    g1 = (z3 + z) / 4
    g2 = (5 * z5 + 16 * z3 + 3 * z) / 96
    g3 = (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / 384
    return z + g1 / df + g2 / (df * df) + g3 / (df * df * df)


def wilson(p: float, n: float, z: float = Z975) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``p`` observed in ``n`` trials (within [0, 1])."""
    denom = 1.0 + z * z / n
    center = (p + z * z / (2.0 * n)) / denom
    half = z / denom * math.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n))
    return max(0.0, center - half), min(1.0, center + half)


def share_ci(shares: Any) -> tuple[float, float, float]:
    """Mean of per-row shares in [0, 1] and its 95% interval, within [0, 1] (module docstring).

    ``nan`` bounds for fewer than two distinct shares: an interval needs an observed
    spread, so one seed, or rows all alike, claim none.
    """
    x = np.asarray(shares, dtype=float)
    keep = ~np.isnan(x)
    x = x[keep]
    if len(x) == 0:
        return math.nan, math.nan, math.nan
    # math.fsum, not numpy's reductions: the same bits on every CPU
    n = len(x)
    p = math.fsum(x.tolist()) / n
    # no spread, tested exactly (the mean's rounding would leave a tiny variance)
    if n < 2 or x.max() == x.min():
        return p, math.nan, math.nan
    se2 = math.fsum(((x - p) ** 2).tolist()) / (n - 1) / n  # the squared standard error of the mean
    n_eff = p * (1.0 - p) / se2
    ratio = Z975 / t_quantile_975(n - 1)
    n_star = n_eff * ratio * ratio
    if n_star <= 0.0:  # p(1 - p) = 0 with a spread cannot happen; guard the division anyway
        return p, math.nan, math.nan
    lo, hi = wilson(p, n_star)
    return p, min(lo, p), max(hi, p)


def shifted_geomean(values: Any, shift: float = SGM_SHIFT_S) -> float:
    """``exp(mean(log(t + shift))) - shift``, with crmath's log and exp and an fsum: the same
    bits on every CPU (numpy's SIMD log and exp are not)."""
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if len(x) == 0:
        return math.nan
    logs = crmath.apply(crmath.log, x + shift).tolist()
    return crmath.exp(math.fsum(logs) / len(logs)) - shift


def with_derived(df: pd.DataFrame) -> pd.DataFrame:
    """Add ``throughput``, ``optimum``, ``p2_opt``, gaps and ratios (per row)."""
    out = df.copy()
    out["throughput"] = out["served"].astype(float) / out["K"].astype(float)
    optimal = out[out["status"] == Status.OPTIMAL]
    opt = optimal.groupby("instance_sha256")["served"].max()
    out["optimum"] = out["instance_sha256"].map(opt).astype(float)
    if "library_optimum" in out:  # the library's proved optimum of a library instance
        known = pd.to_numeric(out["library_optimum"], errors="coerce").astype(float)
        out["optimum"] = out["optimum"].fillna(known)
    p2 = out.dropna(subset=["p2_optimum"]).groupby("instance_sha256")["p2_optimum"].max()
    out["p2_opt"] = out["instance_sha256"].map(p2).astype(float)
    bounds = out.dropna(subset=["bound"]).groupby("instance_sha256")["bound"].min()
    out["best_bound"] = out["instance_sha256"].map(bounds).astype(float)
    served = out["served"].astype(float)
    out["bound_gap_rel"] = np.where(
        out["best_bound"] > 0, (out["best_bound"] - served) / out["best_bound"], np.nan
    )
    out["gap_abs"] = out["optimum"] - served
    out["gap_rel"] = np.where(out["optimum"] > 0, out["gap_abs"] / out["optimum"], np.nan)
    out["ratio"] = np.where(out["optimum"] > 0, served / out["optimum"], np.nan)
    out["ratio_p2"] = np.where(out["p2_opt"] > 0, served / out["p2_opt"], np.nan)
    out["infeasible"] = (~out["feasible"].fillna(False).astype(bool)) & (out["status"] != Status.ERROR)
    errors = out["error"].astype(object).where(out["error"].notna(), "")  # an all-empty column is float
    out["infeasible"] |= errors.astype(str).str.contains("infeasible")
    return out


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration (columns documented in the module docstring)."""
    d = with_derived(df)
    rows = []
    for config, g in d.groupby("config", sort=True):
        m, lo, hi = share_ci(g["throughput"])
        known = g.dropna(subset=["optimum"])
        known_p2 = g.dropna(subset=["p2_opt"])
        timed = g[g["status"] != Status.ERROR]["runtime_s"]
        rows.append(
            {
                "config": config,
                "solver": ",".join(sorted(set(g["solver"].dropna().astype(str)))),
                "rows": len(g),
                "solved": int(g["status"].isin(SOLVED).sum()),
                "optimal": int((g["status"] == Status.OPTIMAL).sum()),
                "time_limit": int((g["status"] == Status.TIME_LIMIT).sum()),
                "error": int((g["status"] == Status.ERROR).sum()),
                "infeasible": int(g["infeasible"].sum()),
                "throughput_mean": m,
                "throughput_ci_low": lo,
                "throughput_ci_high": hi,
                "with_optimum": len(known),
                "gap_abs_mean": known["gap_abs"].mean() if len(known) else math.nan,
                "gap_abs_max": known["gap_abs"].max() if len(known) else math.nan,
                "gap_rel_mean": known["gap_rel"].mean() if len(known) else math.nan,
                "ratio_min": known["ratio"].min() if len(known) else math.nan,
                "bound_gap_rel_mean": g["bound_gap_rel"].mean(),
                "below_half": int((known["ratio"] < 0.5).sum()) if len(known) else math.nan,
                "with_p2_optimum": len(known_p2),
                "ratio_p2_min": known_p2["ratio_p2"].min() if len(known_p2) else math.nan,
                "below_half_p2": int((known_p2["ratio_p2"] < 0.5).sum()) if len(known_p2) else math.nan,
                "runtime_sgm_s": shifted_geomean(timed),
                "runtime_max_s": float(timed.max()) if len(timed) else math.nan,
            }
        )
    return pd.DataFrame(rows)


def swept_parameters(df: pd.DataFrame) -> list[str]:
    """Generator columns that take more than one numeric value (the sweep axes)."""
    out = []
    for c in sorted(df.columns):
        if not c.startswith("gen_") or c in ("gen_seed", "gen_name"):
            continue
        values = pd.to_numeric(df[c], errors="coerce")
        if values.notna().all() and values.nunique() > 1:
            out.append(c)
    return out


def sweep_slice(df: pd.DataFrame, param: str) -> pd.DataFrame:
    """Rows of the sweep over ``param``: every other generator setting at its most common value."""
    keep = pd.Series(True, index=df.index)
    for c in df.columns:
        if c.startswith("gen_") and c not in (param, "gen_seed", "gen_name") and df[c].nunique() > 1:
            keep &= df[c] == df[c].mode(dropna=True).iloc[0]
    return df[keep]


def sweep_table(df: pd.DataFrame, param: str) -> pd.DataFrame:
    """Mean normalized throughput and its 95% interval (:func:`share_ci`) per (configuration, swept value)."""
    d = with_derived(sweep_slice(df, param))
    d = d.assign(value=pd.to_numeric(d[param]))
    rows = []
    for (config, value), g in d.groupby(["config", "value"], sort=True):
        m, lo, hi = share_ci(g["throughput"])
        rows.append(
            {"config": config, param: value, "n": len(g), "throughput_mean": m, "ci_low": lo, "ci_high": hi}
        )
    return pd.DataFrame(rows)


def performance_profile(df: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Dolan-More runtime ratios: one row per instance, one column per configuration.

    A row that is not ``optimal`` or ``feasible`` counts as unsolved (ratio infinity).
    Only instances every configuration ran are kept.
    """
    t = df.assign(t=np.where(df["status"].isin(SOLVED), df["runtime_s"].astype(float), np.inf))
    wide = t.pivot_table(index="instance_sha256", columns="config", values="t", aggfunc="min").dropna()
    best = wide.replace(np.inf, np.nan).min(axis=1).clip(lower=1e-9)
    ratios = wide.div(best, axis=0).replace(np.nan, np.inf)
    return ratios, list(wide.columns)


def gap_profile(df: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Users short of the best known answer: one row per instance, one column per configuration.

    The best known answer is the proved optimum where there is one, else the most any row
    served feasibly. A row that is not ``optimal`` or ``feasible`` is infinitely short.
    Only instances every configuration ran are kept (as in :func:`performance_profile`).
    """
    d = with_derived(df)
    solved = d["status"].isin(SOLVED)
    d = d.assign(answer=np.where(solved, d["served"].astype(float), -np.inf))
    wide = d.pivot_table(index="instance_sha256", columns="config", values="answer", aggfunc="max").dropna()
    best = wide.max(axis=1)
    optimum = d.groupby("instance_sha256")["optimum"].max().reindex(wide.index)
    best = optimum.fillna(best).clip(lower=best)
    gaps = wide.rsub(best, axis=0).replace(np.nan, np.inf)
    return gaps, list(wide.columns)
