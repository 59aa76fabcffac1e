"""What an adversary run leaves in its folder: ``worst.json`` (the instance), ``summary.json``
(what it found: the same bytes for the same settings and evaluation budget) and
``timings.json`` (how long it took, which no rerun repeats)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from balance_opt.adversary.search import Candidate, Outcome, Settings
from balance_opt.evaluator import Schedule
from balance_opt.instance import Instance
from balance_opt.io import atomic_write, dumps, instance_bytes, sha256_bytes

WORST = "worst.json"
SUMMARY = "summary.json"
TIMINGS = "timings.json"


def instance_name(s: Settings) -> str:
    grids = "-free" if s.grids == "free" else ""
    return f"adversary-{s.solver}-{s.against}{grids}-K{s.users}-s{s.seed:04d}"


def worst_instance(s: Settings, best: Candidate) -> Instance:
    """The worst instance, named after the run, with the search's settings as its ``generator``.

    The budget is not recorded: any run with the same settings that reaches ``evaluation``
    writes the same bytes.
    """
    record: dict[str, Any] = {
        "preset": "adversary",
        "solver": s.solver,
        "users": s.users,
        "seed": s.seed,
        "against": s.against,
        "grids": s.grids,
        "min_optimum": s.min_optimum,
        "random_evals": s.random_evals,
        "evaluation": best.evaluation,
    }
    text = (
        f"found by balance-opt adversary: {s.solver} serves {best.served} of the "
        f"{'P2' if s.against == 'p2' else 'P1'} optimum {best.optimum}"
    )
    return best.instance.replace(name=instance_name(s), generator=record, description=text)


def _schedule(inst: Instance, schedule: Schedule) -> dict[str, Any]:
    return {"z": schedule.z, "assignment": schedule.assignment(inst)}


def summary(s: Settings, out: Outcome, inst: Instance | None) -> dict[str, Any]:
    """The ``summary.json`` document: no clock reading, so a reproducible run writes the same bytes."""
    best = out.best
    doc: dict[str, Any] = {
        "solver": s.solver,
        "served": None if best is None else best.served,
        "optimum": None if best is None else best.optimum,
        "ratio": None if best is None else float(round(best.ratio, 6)),
        "ratio_fraction": None if best is None else f"{best.ratio.numerator}/{best.ratio.denominator}",
        "against": s.against,
        "evaluations": out.evaluations,
        "seed": s.seed,
        "users": s.users,
        "grids": s.grids,
        "min_optimum": s.min_optimum,
        "random_evals": s.random_evals,
        "budget_evals": s.budget_evals,
        "budget_s": s.budget_s,
        "stopped_by": out.stopped_by,
        "cut_short": out.cut_short,
        # the same settings and evaluation budget give the same bytes (docs/worst-case.md)
        "reproducible": out.stopped_by == "evaluations" and out.cut_short == 0,
        "improvements": out.improvements,
    }
    if best is not None and inst is not None:
        doc.update(
            instance=WORST,
            instance_sha256=sha256_bytes(instance_bytes(inst)),
            found_at=best.evaluation,
            schedule=_schedule(inst, best.schedule),
            optimum_schedule=_schedule(inst, best.optimum_schedule),
        )
    return doc


def timings(out: Outcome) -> dict[str, Any]:
    """The ``timings.json`` document: the search's wall-clock seconds and evaluations."""
    per_eval = out.seconds / out.evaluations if out.evaluations else None
    return {
        "seconds": round(out.seconds, 3),
        "evaluations": out.evaluations,
        "seconds_per_evaluation": None if per_eval is None else round(per_eval, 6),
    }


def write(s: Settings, out: Outcome, folder: Path) -> list[Path]:
    """Write ``worst.json`` (when a candidate was found), ``summary.json`` and ``timings.json``,
    each atomically."""
    paths = []
    inst = None if out.best is None else worst_instance(s, out.best)
    if inst is not None:
        paths.append(atomic_write(folder / WORST, instance_bytes(inst)))
    paths.append(atomic_write(folder / SUMMARY, dumps(summary(s, out, inst))))
    paths.append(atomic_write(folder / TIMINGS, dumps(timings(out))))
    return paths
