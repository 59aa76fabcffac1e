"""The adversary: an instance on which one heuristic serves as few users as possible, relative to the optimum.

``search`` runs a random phase over the generator's knobs (:func:`moves.random_instance`),
then a steady-state local search: each step moves (:func:`moves.neighbour`: per-user values,
copies and replacements of users, memory, draft length) one of the :data:`ELITE` worst
instances seen so far, drawn at random, and the child joins them when it is among the worst.
Each candidate is one *evaluation*: the heuristic's schedule and the optimum, both judged by
the evaluator. The optimum is P1's by ``exhaustive`` up to
:data:`EXHAUSTIVE_MAX_USERS` users and by ``exact`` above (a candidate ``exact`` does not prove
within its limit is skipped), or P2's by ``exhaustive-p2`` (``against="p2"``).

A candidate ranks by ``served / optimum``, then by the larger optimum, then by the earlier
evaluation; only candidates whose optimum is at least ``min_optimum`` count. The sequence of
candidates depends on the settings (not the budget) alone, and is the same on any machine, so
the same seed and evaluation budget return the same instance, and a longer run only adds
candidates. A time budget stops the sequence wherever the clock does, which can change the
result; the evaluation that found it (``found_at``) reproduces it as an evaluation budget.
An ``exact`` solve cut short by its time limit (K > 12) breaks this: such a candidate is
skipped, and which ones are depends on the machine's speed (``cut_short`` counts them).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from balance_opt.adversary.moves import neighbour, random_instance
from balance_opt.evaluator import Schedule
from balance_opt.instance import Instance
from balance_opt.solvers import get_solver, heuristic_names
from balance_opt.status import Status, Termination

EXHAUSTIVE_MAX_USERS = 12
P2_MAX_USERS = 12
AGAINST = ("p1", "p2")
GRIDS = ("paper", "free")
ELITE = 8  # the worst instances kept: each local move starts from one of them


@dataclass(frozen=True)
class Settings:
    """One adversary run (the command's flags)."""

    solver: str
    users: int
    seed: int = 0
    budget_s: float | None = None
    budget_evals: int | None = None
    against: str = "p1"
    grids: str = "paper"  # "paper": Z = Lambda = {0, 0.1, ..., 1}; "free": random subsets of it
    min_optimum: int = 3
    # Random instances before local search: a count, not a share of the budget, so that a run
    # is a prefix of every longer run with the same seed (its best is found again with
    # --budget-evals set to the evaluation that found it).
    random_evals: int = 100
    exact_time_limit_s: float = 30.0

    def check(self) -> None:
        """ValueError naming the first setting that cannot run."""
        rules = [
            (f"--solver must be a registered heuristic ({', '.join(heuristic_names())})",
             self.solver in heuristic_names()),
            ("--users must be >= 1", self.users >= 1),
            ("give --budget-s or --budget-evals", self.budget_s is not None or self.budget_evals is not None),
            ("--budget-s must be > 0", self.budget_s is None or self.budget_s > 0),
            ("--budget-evals must be >= 1", self.budget_evals is None or self.budget_evals >= 1),
            (f"--against must be one of {', '.join(AGAINST)}", self.against in AGAINST),
            (f"--grids must be one of {', '.join(GRIDS)}", self.grids in GRIDS),
            ("--min-optimum must be >= 1", self.min_optimum >= 1),
            ("--random-evals must be >= 1", self.random_evals >= 1),
            (f"--against p2 needs --users <= {P2_MAX_USERS} (exhaustive-p2)",
             self.against == "p1" or self.users <= P2_MAX_USERS),
        ]  # fmt: skip
        for rule, ok in rules:
            if not ok:
                raise ValueError(rule)


@dataclass(frozen=True, eq=False)
class Candidate:
    """One evaluated instance: the heuristic's schedule and an optimal one."""

    instance: Instance
    served: int
    optimum: int
    schedule: Schedule
    optimum_schedule: Schedule
    evaluation: int

    @property
    def ratio(self) -> Fraction:
        return Fraction(self.served, self.optimum)

    @property
    def key(self) -> tuple[Fraction, int, int]:
        return (self.ratio, -self.optimum, self.evaluation)


@dataclass
class Outcome:
    """What a search found and what it cost."""

    best: Candidate | None = None
    evaluations: int = 0
    seconds: float = 0.0
    cut_short: int = 0  # candidates whose optimum exact did not prove within its limit
    improvements: list[dict[str, Any]] = field(default_factory=list)
    stopped_by: str = ""  # "evaluations" or "time"


class Referee:
    """Runs the heuristic and the optimum on a candidate, both judged by the evaluator."""

    def __init__(self, s: Settings) -> None:
        self.settings = s
        self.heuristic = get_solver(s.solver)
        if s.against == "p2":
            self.exact, self.limit = get_solver("exhaustive-p2"), None
        elif s.users <= EXHAUSTIVE_MAX_USERS:
            self.exact, self.limit = get_solver("exhaustive"), None
        else:
            self.exact, self.limit = get_solver("exact"), s.exact_time_limit_s

    def served(self, inst: Instance) -> tuple[int, Schedule]:
        """The heuristic's served count (0 when the evaluator rejects its schedule)."""
        res = self.heuristic.solve(inst)
        return (res.served if res.feasible else 0), res.schedule

    def optimum(self, inst: Instance) -> tuple[int, Schedule] | None:
        """The optimum and a schedule reaching it; None when it is not proved."""
        res = self.exact.solve(inst, time_limit=self.limit)
        if self.settings.against == "p2":
            value = res.stats.get("p2_optimum")
            return None if value is None else (int(value), res.schedule)
        if res.termination == Termination.TIME_LIMIT:
            return None
        if res.status != Status.OPTIMAL or res.bound is None:  # never: every empty schedule is feasible
            raise RuntimeError(f"{self.exact.name} did not prove the optimum of {inst.name}: {res.error}")
        return res.bound, res.schedule  # the evaluator confirmed it serves the bound (make_result)


class _Search:
    def __init__(self, s: Settings, tick: Callable[[Outcome], None]) -> None:
        self.s, self.tick = s, tick
        self.rng = np.random.default_rng(s.seed)
        self.referee = Referee(s)
        self.out = Outcome()
        self.elite: list[Candidate] = []
        self.start = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def over(self) -> bool:
        """Whether the budget (evaluations or seconds, whichever ends first) is spent."""
        s = self.s
        if s.budget_evals is not None and self.out.evaluations >= s.budget_evals:
            self.out.stopped_by = "evaluations"
            return True
        if s.budget_s is not None and self.elapsed() >= s.budget_s:
            self.out.stopped_by = "time"
            return True
        return False

    def evaluate(self, inst: Instance) -> Candidate | None:
        """One evaluation; None when the candidate does not count (optimum unknown or too small)."""
        self.out.evaluations += 1
        n = self.out.evaluations
        served, schedule = self.referee.served(inst)
        found = self.referee.optimum(inst)
        cand = None
        if found is None:
            self.out.cut_short += 1
        elif found[0] >= self.s.min_optimum:
            cand = Candidate(inst, served, found[0], schedule, found[1], n)
            self._remember(cand)
        self.tick(self.out)
        return cand

    def _remember(self, c: Candidate) -> None:
        best = self.out.best
        if best is None or c.key < best.key:
            self.out.best = c
            self.out.improvements.append(
                {"evaluation": c.evaluation, "served": c.served, "optimum": c.optimum,
                 "ratio": float(round(c.ratio, 6))}
            )  # fmt: skip
        self.elite = sorted([*self.elite, c], key=lambda e: e.key)[:ELITE]

    def run(self) -> Outcome:
        free = self.s.grids == "free"
        while (self.out.evaluations < self.s.random_evals or self.out.best is None) and not self.over():
            self.evaluate(random_instance(self.rng, self.s.users, free).replace(distance_m=None))
        while self.elite and not self.over():
            parent = self.elite[int(self.rng.integers(len(self.elite)))]
            self.evaluate(neighbour(self.rng, parent.instance, free))
        self.out.seconds = self.elapsed()
        return self.out


def search(s: Settings, tick: Callable[[Outcome], None] = lambda out: None) -> Outcome:
    """Run the adversary (ValueError on bad settings); ``tick`` is called after every evaluation."""
    s.check()
    return _Search(s, tick).run()
