"""The event-driven server of docs/online.md: two lanes, decision epochs, realized batches.

:func:`simulate` runs a policy on a workload. Between epochs only arrivals and batch ends
happen; at an epoch the waiting users who can no longer be served are dropped, the policy
sees the planning instance of the free lanes (:mod:`balance_opt.online.planning`), and the
batches of its schedule start and run as :mod:`balance_opt.online.execution` says.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from balance_opt.evaluator import Schedule, evaluate
from balance_opt.model import AD, NONE, SD, tolerated, within
from balance_opt.online.acceptance import emitted_tokens, user_rng
from balance_opt.online.execution import Run, ad_run, sd_expected_run, sd_random_run
from balance_opt.online.planning import Planner
from balance_opt.online.policy import Lanes, Policy, View
from balance_opt.online.workload import Workload

Epochs = Literal["event", "window"]

# per-user outcomes
WAITING, SERVED, DEADLINE, MEMORY, NEVER_ADMITTED = -1, 0, 1, 2, 3
OUTCOME_NAMES = {SERVED: "served", DEADLINE: "deadline", MEMORY: "memory", NEVER_ADMITTED: "never_admitted"}


class PolicyError(RuntimeError):
    """A policy returned a schedule the planning instance does not allow."""


@dataclass(frozen=True)
class Batch:
    """One started batch, as it ran."""

    mode: int  # AD or SD
    users: NDArray[np.int64]  # workload positions (after evictions)
    start_s: float  # the epoch that started it
    compute_start_s: float  # uploads complete
    end_s: float
    share: float  # its compute share
    reserved_bytes: float  # KV memory held from start to end
    kv_bytes: float  # realized KV footprint
    evicted: int  # users evicted for memory at its start


@dataclass(frozen=True, eq=False)
class OnlineRun:
    """What happened to every user, and every batch and epoch of the run."""

    workload: Workload
    policy: str
    epochs: Epochs
    window_s: float | None
    outcome: NDArray[np.int8]  # SERVED / DEADLINE / MEMORY / NEVER_ADMITTED per user
    mode: NDArray[np.int8]  # NONE / AD / SD: the lane each user started in
    start_s: NDArray[np.float64]  # batch start per user (NaN: never started)
    completion_s: NDArray[np.float64]  # batch end + download (NaN: never started or evicted)
    leave_s: NDArray[np.float64]  # when the user left the queue: started or dropped
    batches: tuple[Batch, ...]
    epoch_s: NDArray[np.float64]  # time of every decision the policy made
    queue: NDArray[np.int64]  # waiting users the policy saw at each decision
    weights_slm_bytes: float

    @property
    def served(self) -> int:
        """Users served within their deadline."""
        return int(np.count_nonzero(self.outcome == SERVED))


@dataclass
class _State:
    """The server between events."""

    time_s: float = 0.0
    waiting: list[int] = field(default_factory=list)
    lanes: dict[int, Batch | None] = field(default_factory=lambda: {AD: None, SD: None})
    z: float | None = None  # the split while a lane runs


def _emissions(workload: Workload) -> Callable[[int], NDArray[np.int64]]:
    """User k's realized emissions, drawn once from its own stream."""
    inst, cache = workload.instance, {}

    def get(k: int) -> NDArray[np.int64]:
        if k not in cache:
            a, lo = float(inst.acceptance[k]), int(inst.output_tokens[k])
            cache[k] = emitted_tokens(a, inst.server.draft_length, lo, user_rng(workload.acceptance_seed, k))
        return cache[k]

    return get


class _Simulation:
    """One run; :func:`simulate` is its entry point."""

    def __init__(self, workload: Workload, policy: Policy, epochs: Epochs, window_s: float | None) -> None:
        self.w, self.policy, self.epochs, self.window_s = workload, policy, epochs, window_s
        self.inst = workload.instance
        self.planner = Planner(workload)
        self.emitted = _emissions(workload)
        k = workload.num_users
        self.outcome = np.full(k, WAITING, dtype=np.int8)
        self.mode = np.zeros(k, dtype=np.int8)
        self.start = np.full(k, np.nan)
        self.completion = np.full(k, np.nan)
        self.leave = np.full(k, np.nan)
        self.batches: list[Batch] = []
        self.epoch_s: list[float] = []
        self.queue: list[int] = []
        self.s = _State()

    # -- events --------------------------------------------------------------------
    def _finish(self, mode: int) -> None:
        batch = self.s.lanes[mode]
        assert batch is not None
        down = self.inst.download_s[batch.users]
        done = batch.end_s + down
        self.completion[batch.users] = done
        met = within(done - self.w.arrival_s[batch.users], self.inst.deadline_s[batch.users])  # (20)
        self.outcome[batch.users] = np.where(met, SERVED, DEADLINE)
        self.s.lanes[mode] = None
        if self.s.lanes[AD] is None and self.s.lanes[SD] is None:
            self.s.z = None

    def _next_end(self) -> tuple[float, int] | None:
        ends = [(b.end_s, m) for m, b in self.s.lanes.items() if b is not None]
        return min(ends) if ends else None

    def _advance(self, until: float, arrived: int) -> int:
        """Process batch ends and arrivals up to ``until`` (ends first at a tie)."""
        k = self.w.num_users
        while True:
            nxt = self._next_end()
            if nxt is not None and nxt[0] <= until:
                self.s.time_s = nxt[0]
                self._finish(nxt[1])
                continue
            break
        while arrived < k and self.w.arrival_s[arrived] <= until:
            self.s.waiting.append(arrived)
            arrived += 1
        self.s.time_s = max(self.s.time_s, until)
        return arrived

    # -- one epoch -----------------------------------------------------------------
    def _drop_hopeless(self) -> None:
        """Drop, as never admitted, the waiting users no batch can serve any more."""
        if not self.s.waiting:
            return
        users = np.array(self.s.waiting, dtype=np.int64)
        hopeless = self.planner.hopeless(users, self.s.time_s)
        self.outcome[users[hopeless]] = NEVER_ADMITTED
        self.leave[users[hopeless]] = self.s.time_s
        self.s.waiting = users[~hopeless].tolist()

    def epoch(self) -> None:
        """Drop the hopeless, ask the policy, start what it chose."""
        self._drop_hopeless()
        free = [m for m in (AD, SD) if self.s.lanes[m] is None]
        if not self.s.waiting or not free:
            return
        lanes: Lanes = "both" if len(free) == 2 else ("ad" if free == [AD] else "sd")
        reserved = sum(b.reserved_bytes for b in self.s.lanes.values() if b is not None)
        users = np.array(self.s.waiting, dtype=np.int64)
        plan = self.planner.instance(users, self.s.time_s, lanes, self.s.z, reserved)
        if plan is None:  # no compute or no memory left for the free lane
            return
        view = View(self.s.time_s, plan, users, self.w.arrival_s[users], lanes)
        schedule = self.policy.decide(view)
        self._check(view, schedule)
        self.epoch_s.append(self.s.time_s)
        self.queue.append(len(users))
        if schedule.served == 0:
            return
        ev = evaluate(plan, schedule)
        z = schedule.z if lanes == "both" else self.s.z
        assert z is not None
        self.s.z = z
        started: set[int] = set()
        for mode, planned in ((AD, ev.ad.kv_bytes), (SD, ev.sd.kv_bytes)):
            chosen = users[schedule.modes == mode]
            if len(chosen):
                self._start(mode, chosen, z, planned)
                started.update(chosen.tolist())
        self.s.waiting = [k for k in self.s.waiting if k not in started]

    def _check(self, view: View, schedule: Schedule) -> None:
        n = view.instance.num_users
        if len(schedule.modes) != n:
            raise PolicyError(
                f"policy {self.policy.name!r} returned {len(schedule.modes)} modes for {n} users"
            )
        if schedule.served and not evaluate(view.instance, schedule).feasible:
            raise PolicyError(
                f"policy {self.policy.name!r} returned a schedule that is not feasible for the planning "
                f"instance at t = {view.time_s!r} s (z = {schedule.z!r}, {schedule.served} users)"
            )

    # -- starting a batch ---------------------------------------------------------
    def _run(self, mode: int, users: NDArray[np.int64], z: float) -> Run:
        if mode == AD:
            return ad_run(self.inst, users, z)
        if self.w.acceptance == "expected":
            return sd_expected_run(self.inst, users, 1.0 - z)
        return sd_random_run(self.inst, users, [self.emitted(int(k)) for k in users], 1.0 - z)

    def _start(self, mode: int, users: NDArray[np.int64], z: float, planned: float) -> None:
        """Start a batch; evict its latest arrivals while its realized KV does not fit."""
        other = self.s.lanes[SD if mode == AD else AD]
        # the evaluator's memory rule (21d), with the other lane's reservation held
        held = self.inst.weights_at(z) + (other.reserved_bytes if other else 0.0)
        cap = tolerated(self.inst.server.memory_bytes)
        run = self._run(mode, users, z)
        kept = users
        while len(kept) and held + run.kv_bytes > cap:
            kept = kept[:-1]  # users are in arrival order: the latest leaves first
            if len(kept):
                run = self._run(mode, kept, z)
        evicted = users[len(kept) :]
        self.outcome[evicted] = MEMORY
        self.mode[users] = mode
        self.start[users] = self.leave[users] = self.s.time_s
        if not len(kept):
            return
        ready = float(np.max(self.w.arrival_s[kept] + self.inst.upload_s[kept]))
        compute_start = max(self.s.time_s, ready)
        share = z if mode == AD else 1.0 - z
        end = compute_start + run.duration_s
        if not math.isfinite(end):
            raise PolicyError(
                f"policy {self.policy.name!r} started a {('', 'AD', 'SD')[mode]} batch without compute"
            )
        self.s.lanes[mode] = Batch(
            mode,
            kept,
            self.s.time_s,
            compute_start,
            end,
            share,
            max(planned, run.kv_bytes),
            run.kv_bytes,
            len(evicted),
        )
        self.batches.append(self.s.lanes[mode])  # type: ignore[arg-type]

    # -- the loop -----------------------------------------------------------------
    def run(self, tick: Callable[[float], None] | None = None) -> OnlineRun:
        arrived = 0
        k = self.w.num_users
        if self.epochs == "event":
            while True:
                candidates = [self.w.arrival_s[arrived]] if arrived < k else []
                nxt = self._next_end()
                if nxt is not None:
                    candidates.append(nxt[0])
                if not candidates:
                    break
                t = float(min(candidates))
                arrived = self._advance(t, arrived)
                self.epoch()
                if tick is not None:
                    tick(t)
        else:
            assert self.window_s is not None
            j = 0
            while arrived < k or self.s.waiting or self._next_end() is not None:
                t = j * self.window_s
                arrived = self._advance(t, arrived)
                self.epoch()
                if tick is not None:
                    tick(t)
                j += 1
                if not self.s.waiting and arrived < k and self._next_end() is None:
                    # idle until the next arrival: skip the empty windows
                    j = max(j, math.ceil(float(self.w.arrival_s[arrived]) / self.window_s))
        left = self.outcome == WAITING
        self.outcome[left] = NEVER_ADMITTED
        self.leave[left] = self.s.time_s
        return self._result()

    def _result(self) -> OnlineRun:
        return OnlineRun(
            self.w,
            self.policy.name,
            self.epochs,
            self.window_s,
            self.outcome,
            self.mode,
            self.start,
            self.completion,
            self.leave,
            tuple(self.batches),
            np.array(self.epoch_s, dtype=np.float64),
            np.array(self.queue, dtype=np.int64),
            self.inst.slm_weight_bytes,
        )


def simulate(
    workload: Workload,
    policy: Policy | str,
    *,
    epochs: Epochs = "event",
    window_s: float = 1.0,
    tick: Callable[[float], None] | None = None,
) -> OnlineRun:
    """Run ``policy`` on ``workload`` (docs/online.md); ``tick(t)`` after every epoch (progress)."""
    if isinstance(policy, str):
        from balance_opt.online.policies import make_policy

        policy = make_policy(policy)
    if epochs not in ("event", "window"):
        raise ValueError(f"epochs must be 'event' or 'window', got {epochs!r}")
    if epochs == "window" and not (math.isfinite(window_s) and window_s > 0.0):
        raise ValueError(f"window_s must be a positive number of seconds, got {window_s!r}")
    sim = _Simulation(workload, policy, epochs, window_s if epochs == "window" else None)
    return sim.run(tick)


__all__ = ["NONE", "OUTCOME_NAMES", "Batch", "OnlineRun", "PolicyError", "simulate"]
