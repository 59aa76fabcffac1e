"""The text of the worst-case report: every number in it is computed from the tables it comes with."""

from __future__ import annotations

from typing import Any

import pandas as pd

GUARANTEE = """\
## What the guarantee needs

Theorem 1's argument (docs/algorithms.md) runs at an optimal pair `(z*, lambda*)` of **P2**,
so it promises `balance >= P2_opt / 2` on any grids; the suite tests exactly that
(`exhaustive-p2`). Against **P1**'s optimum it holds only through the two corner pairs:
when `1` is in both `Z` and `Lambda`, Algorithm 3 visits `(1, 1)`, which serves at least the
optimum's AD users (AD alone at `z = 1` with all free memory is at least as fast and as roomy
as at `z*`); when `0` is in both grids it visits `(0, 0)`, which serves at least the optimum's
SD users. Then `balance >= max(|X*|, |Y*|) >= P1_opt / 2`. The paper's grids
`{0, 0.1, ..., 1}` contain both corners, so the theorem1-tight family's 1/2 is the worst possible
there. Without a corner, nothing bounds `balance / P1_opt` from below: the adversary's
`--grids free` finds (grids drawn as subsets of the paper's) go down to the ratios in the table
above, 0 included when no pair of the grids lets either mode serve anybody that P1 can serve
(docs/worst-case.md explains each case).
"""


def _records(df: pd.DataFrame, column: str) -> list[dict[str, Any]]:
    """The rows with a value in ``column``, smallest first."""
    rows = [{str(k): v for k, v in r.items()} for r in df.to_dict("records") if pd.notna(r.get(column))]
    return sorted(rows, key=lambda r: float(r[column]))


def _family_text(family: pd.DataFrame, all_half: bool) -> str:
    rows = _records(family, "balance_ratio")
    ms = sorted({int(r["m"]) for r in rows})
    seeds = ", ".join(str(s) for s in sorted({int(r["seed"]) for r in rows}))
    if all_half:
        return (
            f"On all {len(rows)} instances (m = {ms[0]}..{ms[-1]}, seeds {seeds}) `balance` serves exactly "
            "`m` users and the optimum serves all `K = 2m`: the ratio is exactly 1/2, the bound of "
            "Theorem 1. Every baseline and ablation also serves `m`."
        )
    lo, hi = rows[0], rows[-1]
    return (
        f"balance's ratio on the {len(rows)} instances ranges from {lo['balance_ratio']:.3f} "
        f"(m = {lo['m']}, seed {lo['seed']}) to {hi['balance_ratio']:.3f}."
    )


def _finds_text(finds: pd.DataFrame) -> str:
    worst: dict[tuple[str, str], dict[str, Any]] = {}
    for r in _records(finds, "ratio P1"):
        worst.setdefault((str(r["solver"]), str(r["grids"])), r)  # the smallest comes first
    lines = [
        f"- `{solver}` ({grids} grids): {int(r['served'])} of {int(r['P1 optimum'])} "
        f"= {r['ratio P1']:.3f} (`{r['instance']}`)"
        for (solver, grids), r in sorted(worst.items())
    ]
    if not lines:
        return ""
    return "Worst ratio against P1's proved optimum per heuristic:\n\n" + "\n".join(lines) + "\n"


def _library_text(ratios: pd.DataFrame) -> str:
    rows = [r for r in _records(ratios, "balance") if r["set"] != "adversarial"]
    if not rows:
        return "(no proved instance with a `balance` value)"
    values = [float(r["balance"]) for r in rows]
    at_opt = 100 * sum(v == 1.0 for v in values) / len(values)
    below = 100 * (1 - sum(values) / len(values))
    w = rows[0]
    return (
        f"Over the {len(rows)} instances of the library (every set but `adversarial`, which is built to "
        f"be bad) whose current files have a proved optimum and a `balance` value, `balance` is at the "
        f"optimum on {at_opt:.1f}%, {below:.2f}% below it on average, and at worst {w['balance']:.3f} "
        f"(`{w['set']}/{w['instance']}`). Instances whose references are not current (a file changed "
        "since its solves) are left out until `balance-opt library refs` has solved them again."
    )


def _family_section(parts: dict[str, Any], family: pd.DataFrame) -> list[str]:
    return [
        "## The theorem1-tight family",
        "",
        _family_text(family, parts["family_all_half"]),
        "",
        parts["family_figure"],
        "",
        "Largest served count over the seeds per `m` (the optimum is `K` on every seed):",
        "",
        parts["family_table"],
        "",
        f"Every instance: {parts['family_csv']}. Written by "
        "`balance-opt generate --preset theorem1-tight --users 2m --seed S`.",
        "",
        "### Where the family stops",
        "",
        "The largest `m` per hardware profile and draft length `LD` (Llama-2-7B with TinyLlama-1.1B; "
        "past it a deadline window closes or the optimum's caches no longer fit; docs/worst-case.md):",
        "",
        parts["sizes_table"],
        "",
        f"Table: {parts['sizes_csv']}.",
        "",
    ]


def readme(parts: dict[str, Any], command: str, family: pd.DataFrame, finds: pd.DataFrame,
           ratios: pd.DataFrame) -> str:  # fmt: skip
    """The report's README.md."""
    lines = [
        "# How tight is Theorem 1's 1/2? The worst case of BALANCE",
        "",
        "Built with:",
        "",
        "```",
        command,
        "```",
        "",
        "Every served count is the evaluator's, every optimum proved (by the evaluator accepting a "
        "schedule that serves everybody, or by the library's exact methods). Why the family works: "
        "docs/worst-case.md.",
        "",
        *_family_section(parts, family),
        "## The adversary's finds",
        "",
        "`balance-opt adversary` runs, stored in `instances/paper/adversarial` with the command that "
        "found each (its README); re-solved here:",
        "",
        parts["finds_table"],
        "",
        _finds_text(finds),
        f"Table: {parts['finds_csv']}.",
        "",
        "## balance / optimum over the library",
        "",
        _library_text(ratios),
        "",
        parts["library_figure"],
        "",
        parts["library_table"],
        "",
        f"Per instance, every heuristic: {parts['library_csv']}.",
        "",
        GUARANTEE,
    ]
    return "\n".join(lines).rstrip() + "\n"
