"""The policies of the online model (docs/online.md, "Policies") and their registry.

- :class:`SolverPolicy`: any registered static solver, solving each epoch's planning instance.
- :class:`GreedyAdmission`: the serving baselines ``fcfs-*`` and ``edf-*``: users in arrival
  or deadline order, admitted one by one while the schedule stays feasible.
- :func:`make_policy` by name: the six baselines, every registered solver (looked up in the
  solver registry when asked for, so plug-in solvers work), :func:`register_policy`'s names
  and the entry points of the group ``balance_opt.policies`` (name = ``"module:factory"``).
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
from collections.abc import Callable, Mapping
from typing import Any, Literal

import numpy as np

from balance_opt.evaluator import AD, SD, Schedule, on_grid
from balance_opt.instance import Instance
from balance_opt.model import (
    ad_alone,
    ad_mode,
    has_compute,
    sd_alone,
    sd_iteration_seconds_per_user,
    sd_mode,
    sd_prefill_seconds_per_user,
    tolerated,
)
from balance_opt.online.policy import Policy, View
from balance_opt.solvers import get_solver, solver_names

Order = Literal["fcfs", "edf"]
Into = Literal["ad", "sd", "cheaper"]

# The running sums below round differently from the evaluator's own sums (by ~1e-15
# relative); within this relative band of a limit the evaluator's formulas decide, so the
# greedy admits exactly the users that an evaluation of the whole schedule would.
GUARD = 1e-11


class SolverPolicy:
    """A static solver (by its registered name) as a per-epoch policy.

    ``decide`` returns the solver's schedule of the planning instance unchanged: the
    simulator checks every schedule and stops with an error naming the policy when one is
    infeasible, which for a solver is a bug to see, not to hide behind a repaired schedule.
    One case is not a bug: a baseline that fixes its split (``ecra`` and ``ecrma`` at
    ``z = 1/2``) has no schedule when one lane runs and the planning grid is the free lane's
    single value; such a policy then starts nothing until both lanes are idle.
    """

    def __init__(
        self,
        solver: str,
        options: Mapping[str, Any] | None = None,
        time_limit_s: float | None = None,
        seed: int = 0,
    ) -> None:
        self.name = solver
        self.time_limit_s = time_limit_s
        self.seed = seed
        self._solver = get_solver(solver, **dict(options or {}))  # checks the options once

    def decide(self, view: View) -> Schedule:
        """The solver's schedule of ``view.instance``."""
        result = self._solver.solve(view.instance, time_limit=self.time_limit_s, seed=self.seed)
        grid = view.instance.server.z_grid
        if not on_grid(result.schedule.z, grid):  # a split fixed off the free lane's grid
            return Schedule.empty(view.instance.num_users, grid[0])
        return result.schedule


def _split(grid: tuple[float, ...], modes: frozenset[int]) -> float:
    """The greedy's ``z``: the most compute for a lone mode, else the value closest to 1/2.

    Both modes prefer the values that give both compute (ties: the smaller value).
    """
    if modes == {AD}:
        return max(grid)
    if modes == {SD}:
        return min(grid)
    if not modes:
        return grid[0]
    pool = [g for g in grid if 0.0 < g < 1.0] or list(grid)
    return min(pool, key=lambda g: (abs(g - 0.5), g))


class _AdBatch:
    """The AD batch being built, as the sums its latency (17) and KV bytes (15) need.

    The workload of a set at padding ``L1`` is ``M (c (L1 lin + L1^2 att) + S_n lin +
    att (S_n L1 + S_tri))`` with ``n_k = LO_k - 1`` and ``tri_k = n_k (n_k + 1) / 2``: adding a
    user costs O(1) even when it raises ``L1``.
    """

    def __init__(self, inst: Instance, z: float) -> None:
        m = inst.llm
        self.li = inst.input_tokens.astype(np.float64).tolist()
        self.lo = inst.output_tokens.tolist()
        self.up = inst.upload_s.tolist()
        self.z, self.layers = z, m.layers
        self.lin, self.att = float(m.linear_flops_per_token), float(m.attention_flops_per_pair)
        self.alpha, self.beta, self.kv_token = m.alpha_s_per_flop, m.beta_s, inst.llm_kv_bytes_per_token
        # count, L1, L2, max upload, S_n, S_tri, sum LO
        self.state: tuple[int, float, int, float, float, float, float] = (0, 0.0, 0, 0.0, 0.0, 0.0, 0.0)
        self.kv = 0.0

    def trial(self, k: int) -> tuple[Any, float, float]:
        """The state with user ``k`` added, and its latency and KV bytes."""
        c, L1, L2, tau, s_n, s_tri, s_lo = self.state
        n = self.lo[k] - 1.0
        c, L1, L2 = c + 1, max(L1, self.li[k]), max(L2, self.lo[k])
        tau, s_n, s_tri, s_lo = max(tau, self.up[k]), s_n + n, s_tri + n * (n + 1.0) / 2.0, s_lo + self.lo[k]
        work = self.layers * (
            c * (L1 * self.lin + L1 * L1 * self.att) + s_n * self.lin + self.att * (s_n * L1 + s_tri)
        )
        latency = tau + self.alpha * work / self.z + L2 * self.beta
        return (c, L1, L2, tau, s_n, s_tri, s_lo), latency, (c * L1 + s_lo) * self.kv_token

    def add(self, k: int, state: Any, kv: float) -> None:
        self.state, self.kv = state, kv


class _SdBatch:
    """The SD batch being built: its latency (19) and KV bytes (16) from running sums.

    A user with ``N_k`` iterations adds its prefill share and ``cum[N_k]``, the cumulative
    per-iteration seconds at the batch's ``(L3, L4)``; a user raising ``L3`` or ``L4``
    recomputes ``cum`` and re-sums it over the histogram of the members' ``N_k`` (O(N_max)).
    """

    def __init__(self, inst: Instance, z: float) -> None:
        self.inst, self.w = inst, 1.0 - z
        self.li = inst.input_tokens.astype(np.float64).tolist()
        self.la = inst.accepted_drafts.tolist()
        self.n = inst.sd_iterations.tolist()
        self.up = inst.upload_s.tolist()
        self.n_top = int(inst.sd_iterations.max())
        self.hist = np.zeros(self.n_top + 1)  # members per N_k
        self.ld = inst.server.draft_length
        self.kv_s, self.kv_l = inst.slm_kv_bytes_per_token, inst.llm_kv_bytes_per_token
        self.beta_l, self.beta_s = inst.llm.beta_s, inst.slm.beta_s
        # count, L3, L4, max upload, N_max, sum (N_k - 1), #(N_k >= 2), sum cum[N_k], cum, prefill
        self.state: tuple[Any, ...] = (0, -1.0, -1.0, 0.0, 0, 0.0, 0, 0.0, None, 0.0)
        self.kv = 0.0

    def _tables(self, L3: float, L4: float) -> tuple[list[float], float]:
        per_iter = sd_iteration_seconds_per_user(self.inst, L3, L4, self.n_top, self.w)
        return [0.0, *np.cumsum(per_iter).tolist()], sd_prefill_seconds_per_user(self.inst, L3, self.w)

    def trial(self, k: int) -> tuple[Any, float, float]:
        """The state with user ``k`` added, and its latency and KV bytes."""
        c, L3, L4, tau, n_max, s_n1, c2, s_cum, cum, prefill = self.state
        nk = self.n[k]
        if self.li[k] > L3 or self.la[k] > L4:
            L3, L4 = max(L3, self.li[k]), max(L4, self.la[k])
            cum, prefill = self._tables(L3, L4)
            s_cum = float(self.hist @ np.asarray(cum))
        c, n_max, s_n1, c2 = c + 1, max(n_max, nk), s_n1 + (nk - 1), c2 + (nk >= 2)
        tau, s_cum = max(tau, self.up[k]), s_cum + cum[nk]
        fixed = (n_max + 1) * self.beta_l + n_max * self.ld * self.beta_s
        latency = tau + c * prefill + s_cum + fixed
        prefix = c * L3 + (L4 + 1.0) * s_n1 - c2 + c * self.ld  # sum of P_N + LD, see sd_prefix
        kv = prefix * self.kv_s + (prefix + c2) * self.kv_l
        return (c, L3, L4, tau, n_max, s_n1, c2, s_cum, cum, prefill), latency, kv

    def add(self, k: int, state: Any, kv: float) -> None:
        self.state, self.kv = state, kv
        self.hist[self.n[k]] += 1


class _Admission:
    """The schedule being built at one ``z``: feasibility of adding one user to one mode."""

    def __init__(self, inst: Instance, z: float) -> None:
        self.inst, self.z = inst, z
        self.batches: dict[int, _AdBatch | _SdBatch] = {}
        if has_compute(AD, z):
            self.batches[AD] = _AdBatch(inst, z)
        if has_compute(SD, z):
            self.batches[SD] = _SdBatch(inst, z)
        self.tol_deadline = tolerated(inst.deadline_s)
        self.limit = (self.tol_deadline - inst.download_s).tolist()  # latency within it (20), (21c)
        self.down_max = float(inst.download_s.max())
        self.least = {AD: np.inf, SD: np.inf}  # the members' smallest limit, per mode
        self.weights = inst.llm_weight_bytes + inst.slm_weights_at(z)
        self.capacity = tolerated(inst.server.memory_bytes)
        self.modes = np.zeros(inst.num_users, dtype=np.int8)

    def admit(self, k: int, mode: int) -> bool:
        """Put user ``k`` into ``mode`` if the schedule stays feasible; whether it did."""
        batch = self.batches[mode]
        state, latency, kv = batch.trial(k)
        # the mode's latency is common to its members: the smallest limit binds them all
        least = min(self.least[mode], self.limit[k])
        memory = self.weights + kv + sum(b.kv for m, b in self.batches.items() if m != mode)
        near_deadline = abs(latency - least) <= GUARD * (abs(latency) + abs(least) + self.down_max)
        near_memory = abs(memory - self.capacity) <= GUARD * (memory + self.capacity)
        if near_deadline or near_memory:
            ok = self._exact(k, mode)
        else:
            ok = latency <= least and memory <= self.capacity
        if ok:
            batch.add(k, state, kv)
            self.least[mode] = least
            self.modes[k] = mode
        return ok

    def _exact(self, k: int, mode: int) -> bool:
        """The evaluator's own test (its formulas, its order of sums) with user ``k`` in ``mode``."""
        inst = self.inst
        modes = self.modes.copy()
        modes[k] = mode
        ad, sd = ad_mode(inst, modes == AD, self.z), sd_mode(inst, modes == SD, self.z)
        members = modes == mode
        latency = (ad if mode == AD else sd).latency_s
        assert latency is not None  # the mode has a member
        late = latency + inst.download_s[members] > self.tol_deadline[members]
        memory = inst.llm_weight_bytes + inst.slm_weights_at(self.z) + ad.kv_bytes + sd.kv_bytes
        return not late.any() and not memory > self.capacity


class GreedyAdmission:
    """The serving baselines (``fcfs-ad`` ... ``edf-cheaper``, docs/online.md "Policies").

    Users are taken in arrival order (``fcfs``; ties by position) or by remaining deadline
    (``edf``; ties by arrival, then position) and each is admitted into its mode when the
    schedule stays feasible, else skipped. ``into="cheaper"`` tries first the mode in which
    the user alone finishes sooner at the split (AD on a tie), then the other. The split:
    the grid's largest value when only AD can be used, its smallest when only SD can, else
    the value closest to 1/2 among those giving both modes compute (ties: the smaller); one
    lane busy leaves one grid value and only the free lane's mode. A mode without compute at
    the split admits nobody.
    """

    def __init__(self, order: Order, into: Into) -> None:
        if order not in ("fcfs", "edf") or into not in ("ad", "sd", "cheaper"):
            raise ValueError(
                f"order must be 'fcfs' or 'edf' and into 'ad', 'sd' or 'cheaper', got {order!r}, {into!r}"
            )
        self.order, self.into = order, into
        self.name = f"{order}-{into}"

    def decide(self, view: View) -> Schedule:
        """Admit users greedily in the policy's order (see the class)."""
        inst = view.instance
        wanted = {"ad": {AD}, "sd": {SD}, "cheaper": {AD, SD}}[self.into]
        free = {"both": {AD, SD}, "ad": {AD}, "sd": {SD}}[view.lanes]
        z = _split(inst.server.z_grid, frozenset(wanted & free))
        usable = [m for m in sorted(wanted & free) if has_compute(m, z)]
        if not usable:
            return Schedule.empty(inst.num_users, z)
        admission = _Admission(inst, z)
        first = self._first_modes(inst, z, usable)
        for k in self._ordered(view).tolist():
            mode = first[k]
            if not admission.admit(k, mode) and len(usable) == 2:
                admission.admit(k, AD + SD - mode)
        return Schedule(z, admission.modes)

    def _ordered(self, view: View) -> np.ndarray:
        position = np.arange(view.instance.num_users)
        if self.order == "fcfs":
            return np.lexsort((position, view.arrival_s))
        return np.lexsort((position, view.arrival_s, view.instance.deadline_s))

    @staticmethod
    def _first_modes(inst: Instance, z: float, usable: list[int]) -> list[int]:
        """Each user's first mode to try: the only one, or the one it alone finishes sooner in."""
        if len(usable) == 1:
            return [usable[0]] * inst.num_users
        ad_latency, sd_latency = ad_alone(inst, z)[0], sd_alone(inst, z)[0]
        return np.where(ad_latency <= sd_latency, AD, SD).tolist()


# --- the registry ----------------------------------------------------------------------

ENTRY_POINT_GROUP = "balance_opt.policies"
PolicyFactory = Callable[..., Policy]

_FACTORIES: dict[str, PolicyFactory] = {}
_PLUGINS: dict[str, str] = {}  # entry points: name -> "module:factory", imported when made
_discovered: list[bool] = []  # [True] once the entry points were read


def _discover() -> None:
    """Read the entry points of :data:`ENTRY_POINT_GROUP` once; a taken name stays as it is."""
    if _discovered:
        return
    _discovered.append(True)
    taken = set(_FACTORIES) | set(solver_names())
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name not in taken:
            _PLUGINS.setdefault(ep.name, ep.value)


def policy_names() -> list[str]:
    """Every policy name: the registered ones, the plug-ins', then the solvers' (no repeats)."""
    _discover()
    names = [*_FACTORIES, *_PLUGINS, *solver_names()]
    return list(dict.fromkeys(names))


def register_policy(name: str, factory: PolicyFactory, *, replace: bool = False) -> None:
    """Make ``factory(**kwargs)`` the policy ``name``; a taken name is a ValueError unless ``replace``.

    A registered name shadows a solver of the same name.
    """
    if not replace and _FACTORIES.get(name, factory) is not factory:
        raise ValueError(f"policy {name!r} is already registered")
    if not replace and name not in _FACTORIES and name in policy_names():
        raise ValueError(f"policy {name!r} is already a policy (a solver's or a plug-in's)")
    _FACTORIES[name] = factory


def unregister_policy(name: str) -> None:
    """Forget a registered policy (nothing happens for another name; solvers' names stay)."""
    _FACTORIES.pop(name, None)


def make_policy(name: str, /, **kwargs: Any) -> Policy:
    """The policy ``name`` made with ``kwargs``; ValueError listing the known names if unknown."""
    _discover()
    if name in _FACTORIES:
        return _FACTORIES[name](**kwargs)
    if name in _PLUGINS:
        module, _, attr = _PLUGINS[name].partition(":")
        try:
            factory = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise ImportError(
                f"policy {name!r} (entry point of {ENTRY_POINT_GROUP!r}): "
                f"{_PLUGINS[name]!r} cannot be loaded: {exc}"
            ) from exc
        policy: Policy = factory(**kwargs)
        return policy
    if name in solver_names():
        return SolverPolicy(name, **kwargs)
    raise ValueError(f"unknown policy {name!r}; known: {', '.join(policy_names())}")


for _order in ("fcfs", "edf"):
    for _into in ("ad", "sd", "cheaper"):
        register_policy(f"{_order}-{_into}", functools.partial(GreedyAdmission, _order, _into))
